//! The process's monitors and links: which it set, which `Down`s it
//! waits for, and the checks on each `Down` it gets (one per monitor or
//! link, none after the step that removed it).
//!
//! Who links whom, so that a watcher knows every `Down` it is owed: a
//! watcher monitors and links only plain processes of even serial (and
//! monitors watchers and receivers); a plain process of odd serial (a
//! *linker*) may link a watcher, and then tells it so in a message of the
//! same step (`Body::LinkedBy`) and never unlinks it. A watcher that hears
//! of such a link waits for its `Down` like for its own: one that an exit
//! overtook (the linker ended before the watcher took the link request)
//! never comes. No process both monitors and links one target (a `Down`
//! does not say which it answers). Watchers enter the registry only in their first step,
//! which turns their trap on, so no link reaches one that does not trap.

use super::*;

/// A monitor or link, as its holder sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Watch {
    /// Set; `wait`: its `Down` must come before this process ends.
    Active { wait: bool },
    /// Its `Down` came.
    Down,
    /// Demonitored or unlinked: no `Down` may come after.
    Cancelled,
}

impl Actor {
    /// Whether a `Down` this process waits for has not come yet.
    pub(super) fn waiting(&self) -> bool {
        let open = |w: &Watch| matches!(w, Watch::Active { wait: true });
        self.monitors.values().any(open) || self.links.values().any(open)
    }

    /// Whether a `Down` about `target` must come before this one ends.
    fn waits_for(&self, target: &Target) -> bool {
        match target.who {
            Who::Plain => true,
            Who::Watcher => target.serial < self.serial,
            Who::Receiver => false,
        }
    }

    /// Whether this process may link watchers.
    fn linker(&self) -> bool {
        self.who == Who::Plain && self.serial % 2 == 1
    }

    /// A watcher hears that `from` linked it.
    pub(super) fn linked_by(&mut self, from: Pid) {
        if self.who != Who::Watcher || self.early.remove(&from) {
            return; // its `Down` came already
        }
        let wait = exercise(Defect::ExitOvertakesLink, self.round.cfg.long_run);
        self.links.entry(from).or_insert(Watch::Active { wait });
        self.foreign_links.insert(from);
    }

    pub(super) fn on_down(&mut self, me: Pid, pid: Pid, reason: ExitReason) {
        let round = &self.round;
        let strict = self.who == Who::Watcher || !self.ever_trapped;
        round.downs.lock().unwrap().push((me, pid, reason.clone()));
        if let Some(w @ Watch::Active { .. }) = self.monitors.get_mut(&pid) {
            *w = Watch::Down;
            return;
        }
        if let Some(w @ Watch::Active { .. }) = self.links.get_mut(&pid) {
            *w = Watch::Down;
            return;
        }
        let defect = Some(Defect::CarriedPastCancel);
        if self.monitors.get(&pid) == Some(&Watch::Cancelled) && strict {
            let detail = format!("{me} got Down({pid}, {reason}) after the step that demonitored it (events per step {})", round.cfg.events_per_step);
            round.find(Check::DownAfterDemonitor, defect, detail);
        } else if self.links.get(&pid) == Some(&Watch::Cancelled) && self.who == Who::Watcher {
            let detail = format!("{me} got Down({pid}, {reason}) after the step that unlinked it (events per step {})", round.cfg.events_per_step);
            round.find(Check::DownAfterUnlink, defect, detail);
        } else if self.who == Who::Watcher && !self.links.contains_key(&pid) {
            // A linker's, ahead of its message (see the module docs).
            self.early.insert(pid);
        } else if strict {
            let detail = format!(
                "{me} got Down({pid}, {reason}) with no monitor or link waiting for it (monitor {:?}, link {:?})",
                self.monitors.get(&pid),
                self.links.get(&pid)
            );
            round.find(Check::ExtraDown, None, detail);
        }
    }

    pub(super) fn watches(&mut self, out: &mut StepOutput<'_, Self>) {
        let me = out.pid();
        let round = Arc::clone(&self.round);
        if self.rng.chance(150) {
            let target = if self.rng.chance(100) && self.who != Who::Watcher {
                let pid = round.registry.guess(&mut self.rng);
                Some((pid, false))
            } else {
                round
                    .registry
                    .pick(&mut self.rng)
                    .map(|t| (t.pid, self.waits_for(&t)))
            };
            let linker = |t: &Target| t.who == Who::Plain && t.serial % 2 == 1;
            let target = match target {
                Some((pid, _)) if self.who == Who::Watcher => round
                    .registry
                    .find(pid)
                    .filter(|t| !linker(t))
                    .map(|t| (pid, self.waits_for(&t))),
                other => other,
            };
            if let Some((pid, wait)) = target {
                // Never a monitor and a link of one target: a `Down` does
                // not say which of the two it is for.
                let linked = self.links.contains_key(&pid) || self.foreign_links.contains(&pid);
                if pid != me && !self.monitors.contains_key(&pid) && !linked {
                    out.monitor(pid);
                    let wait = wait && self.who == Who::Watcher;
                    self.monitors.insert(pid, Watch::Active { wait });
                    round.op();
                }
            }
        }
        if self.rng.chance(80) {
            let active: Vec<Pid> = (self.monitors.iter())
                .filter(|(_, w)| matches!(w, Watch::Active { .. }))
                .map(|(p, _)| *p)
                .collect();
            if !active.is_empty() {
                let pid = *self.rng.pick(&active);
                out.demonitor(pid);
                self.monitors.insert(pid, Watch::Cancelled);
                round.op();
            }
        }
        // Links (see the module docs for who links whom).
        let linking = match self.who {
            Who::Watcher => self.steps > 1 && self.rng.chance(250),
            _ => self.rng.chance(120),
        };
        let target = round.registry.pick(&mut self.rng).filter(|_| linking);
        if let Some(target) = target.filter(|t| t.pid != me) {
            let fresh = !self.links.contains_key(&target.pid)
                && !self.linked_watchers.contains(&target.pid)
                && !self.monitors.contains_key(&target.pid);
            match (self.who, target.who) {
                (Who::Watcher, Who::Plain) if target.serial % 2 == 0 && fresh => {
                    out.link(target.pid);
                    let wait = Watch::Active { wait: true };
                    self.links.insert(target.pid, wait);
                    round.op();
                }
                (Who::Plain, Who::Plain) if fresh => {
                    out.link(target.pid);
                    let wait = Watch::Active { wait: false };
                    self.links.insert(target.pid, wait);
                    round.op();
                }
                (Who::Plain, Who::Watcher) if self.linker() && fresh => {
                    out.link(target.pid);
                    self.send(out, target.pid, Body::LinkedBy(me));
                    self.linked_watchers.insert(target.pid);
                    round.op();
                }
                _ => {}
            }
        }
        if self.rng.chance(40) {
            let active: Vec<Pid> = (self.links.iter())
                .filter(|(_, w)| matches!(w, Watch::Active { .. }))
                .map(|(p, _)| *p)
                .collect();
            if !active.is_empty() {
                let pid = *self.rng.pick(&active);
                out.unlink(pid);
                self.links.insert(pid, Watch::Cancelled);
                round.op();
            }
        }
        if self.who == Who::Plain && self.rng.chance(30) {
            self.trapping = !self.trapping;
            self.ever_trapped |= self.trapping;
            out.trap_exits(self.trapping);
            round.op();
        }
    }
}
