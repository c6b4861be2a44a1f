//! The process under test. Each step books the events it gets and checks
//! what the docs promise about them (one `Down` per monitor or link, none
//! after a `demonitor` or `unlink`, no `Timer` after `cancel_timer` nor
//! before its deadline, one completion per command), then at random
//! sends, floods, replies, yields commands (inline, later, blocking, with
//! timeouts), sets and cancels timers, monitors, links, traps exits,
//! spawns, and ends (done, failed, panicked).
//!
//! A *watcher* traps exits from its first step and does not end, not even
//! on `Cancel::Shutdown`, while it waits for the `Down` of a monitor or
//! link it set: so a lost `Down` shows as a process that never ends. It
//! waits only for plain processes and for watchers older than itself (no
//! two wait for each other), and only watchers link watchers never (so
//! every `Down` a watcher gets is one it asked for).

use super::*;

#[path = "watch.rs"]
mod watch;
use watch::Watch;

/// What a process yields.
#[derive(Debug)]
pub(crate) enum Cmd {
    /// Completed by the handler on the worker.
    Inline,
    /// Completed later by the helper thread (or dropped).
    Later,
    /// Run on the blocking pool: sleeps, then completes (or panics).
    Block { micros: u64, panic: bool },
}

impl Command for Cmd {
    fn kind(&self) -> &'static str {
        match self {
            Cmd::Inline => "inline",
            Cmd::Later => "later",
            Cmd::Block { .. } => "block",
        }
    }
}

/// The input of `init`.
pub(crate) struct Spec {
    pub(crate) who: Who,
    pub(crate) seed: u64,
    pub(crate) fail_init: bool,
    pub(crate) plan: Plan,
}

/// A process's script, beside its random choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Random steps.
    Random,
    /// Fails within its first three steps.
    Fail,
    /// Links this process (a sibling that fails soon) in its first step
    /// and ends `Done` soon after: the sibling's exit races that end (their
    /// parent monitors it, and checks the `Down`'s reason).
    LinkThenEnd(Option<Pid>),
}

/// A timer, as its process sees it.
#[derive(Debug, Clone, Copy)]
struct Timer {
    not_before: Instant,
    rearmed: bool,
}

pub(crate) struct Actor {
    round: Arc<Round>,
    serial: u64,
    who: Who,
    rng: Rng,
    budget: u32,
    steps: u32,
    stopping: bool,
    trapping: bool,
    ever_trapped: bool,
    next_tag: u64,
    pending: Set<u64>,
    next_timer: u64,
    timers: Map<u64, Timer>,
    cancelled: Set<u64>,
    /// What each timer tag went through, for a finding's detail.
    timer_log: Map<u64, String>,
    monitors: Map<Pid, Watch>,
    links: Map<Pid, Watch>,
    owed: Vec<Pid>,
    plan: Plan,
    /// Watchers this linker linked (never unlinked).
    linked_watchers: Set<Pid>,
    /// A watcher's `Down`s of links it has not heard of yet.
    early: Set<Pid>,
    /// The links a linker made to this watcher.
    foreign_links: Set<Pid>,
    /// Its PID, known from its first step on.
    me: Option<Pid>,
}

impl Actor {
    pub(crate) fn new(round: &Arc<Round>) -> Self {
        Actor {
            round: Arc::clone(round),
            serial: round.processes.alloc(),
            who: Who::Plain,
            rng: Rng::new(0),
            budget: 0,
            steps: 0,
            stopping: false,
            trapping: false,
            ever_trapped: false,
            next_tag: 0,
            pending: Set::default(),
            next_timer: 0,
            timers: Map::default(),
            cancelled: Set::default(),
            timer_log: Map::default(),
            monitors: Map::default(),
            links: Map::default(),
            owed: Vec::new(),
            plan: Plan::Random,
            linked_watchers: Set::default(),
            early: Set::default(),
            foreign_links: Set::default(),
            me: None,
        }
    }

    pub(crate) fn serial(&self) -> u64 {
        self.serial
    }

    fn send(&self, out: &mut StepOutput<'_, Self>, to: Pid, body: Body) {
        let message = Msg::new(&self.round, to, body);
        message.accepted();
        out.send(to, message);
        self.round.op();
    }

    fn log(&mut self, tag: u64, what: &str) {
        let log = self.timer_log.entry(tag).or_default();
        log.push_str(&format!(" {what}@{}", self.steps));
    }

    fn on_timer(&mut self, me: Pid, tag: u64, now: Instant) {
        self.log(tag, "fired");
        let log = self.timer_log[&tag].clone();
        let round = &self.round;
        match self.timers.remove(&tag) {
            Some(timer) if now < timer.not_before => {
                let early = timer.not_before - now;
                let (check, defect) = if timer.rearmed {
                    (Check::TimerAfterCancel, Some(Defect::CarriedPastCancel))
                } else {
                    (Check::BadTimer, None)
                };
                let what = if timer.rearmed { " (re-armed)" } else { "" };
                round.find(
                    check,
                    defect,
                    format!("{me}: timer {tag}{what} fired {early:?} early:{log}"),
                );
            }
            Some(_) => {}
            None if self.cancelled.contains(&tag) => round.find(
                Check::TimerAfterCancel,
                Some(Defect::CarriedPastCancel),
                format!(
                    "{me}: timer {tag} fired after the step that cancelled it (events per step {}):{log}",
                    round.cfg.events_per_step
                ),
            ),
            // A second event of a re-armed timer: the first deadline's,
            // which the re-arm did not cover.
            None if log.contains("rearm") => round.find(
                Check::TimerAfterCancel,
                Some(Defect::CarriedPastCancel),
                format!(
                    "{me}: re-armed timer {tag} fired twice (events per step {}):{log}",
                    round.cfg.events_per_step
                ),
            ),
            None => round.find(
                Check::BadTimer,
                None,
                format!("{me}: timer {tag} fired twice or was never set:{log}"),
            ),
        }
    }

    fn on_completion(&mut self, me: Pid, tag: u64, result: Result<u64, CommandError>) {
        let round = &self.round;
        if let Ok(id) = &result {
            round.replies.mark(*id, RECEIVED);
        }
        if !self.pending.remove(&tag) {
            round.find(
                Check::BadCompletion,
                None,
                format!("{me}: completion of tag {tag}, which is not pending"),
            );
        }
        match result {
            Ok(_)
            | Err(CommandError::TimedOut)
            | Err(CommandError::Dropped)
            | Err(CommandError::Cancelled)
            | Err(CommandError::Panicked(_)) => {}
            // A fault the simulation injected (`simulated.rs`).
            Err(CommandError::Failed(_)) if round.sim.get().is_some_and(|s| s.faults) => {}
            Err(e) => round.find(
                Check::BadCompletion,
                None,
                format!("{me}: tag {tag} completed with {e}"),
            ),
        }
    }

    fn on_message(&mut self, message: Msg, out: &mut StepOutput<'_, Self>) {
        match message.settle(RECEIVED) {
            Body::Request(reply_to) => match self.rng.below(10) {
                0 => {}                        // no reply: the call times out
                1 => self.owed.push(reply_to), // a later step replies
                _ => self.send(out, reply_to, Body::Data),
            },
            Body::LinkedBy(from) => self.linked_by(from),
            Body::Data => {}
        }
    }

    /// A target for a message: registered, or a guess.
    fn target(&mut self) -> Option<Pid> {
        if self.rng.chance(60) {
            Some(self.round.registry.guess(&mut self.rng))
        } else {
            self.round.registry.pick(&mut self.rng).map(|t| t.pid)
        }
    }

    fn sends(&mut self, out: &mut StepOutput<'_, Self>) {
        for to in std::mem::take(&mut self.owed) {
            self.send(out, to, Body::Data);
        }
        for _ in 0..self.rng.below(3) {
            if let Some(to) = self.target() {
                let body = if self.rng.chance(200) {
                    Body::Request(out.pid())
                } else {
                    Body::Data
                };
                self.send(out, to, body);
            }
        }
        // A flood: more than a step takes, so events are carried.
        if self.rng.chance(40) {
            if let Some(to) = self.target() {
                for _ in 0..2 * self.round.cfg.events_per_step + 2 {
                    self.send(out, to, Body::Data);
                }
            }
        }
    }

    fn commands(&mut self, out: &mut StepOutput<'_, Self>) {
        let rng = &mut self.rng;
        if self.pending.len() >= 3 || !rng.chance(200) {
            return;
        }
        let tag = self.next_tag;
        self.next_tag += 1;
        let command = match rng.below(6) {
            0..=2 => Cmd::Inline,
            3..=4 => Cmd::Later,
            _ => Cmd::Block {
                micros: rng.below(300),
                panic: rng.chance(50),
            },
        };
        if rng.chance(300) {
            let timeout = if rng.chance(50) {
                self.round.never()
            } else {
                Duration::from_micros(rng.below(2_000))
            };
            out.yield_command_timeout(tag, command, timeout);
        } else {
            out.yield_command(tag, command);
        }
        self.pending.insert(tag);
        self.round.op();
    }

    fn timers(&mut self, out: &mut StepOutput<'_, Self>, now: Instant) {
        if self.rng.chance(150) {
            let tag = self.next_timer;
            self.next_timer += 1;
            let not_before = if self.rng.chance(30) {
                let never = self.round.never();
                out.wake_after(tag, never);
                (now.checked_add(never)).unwrap_or(now + Duration::from_secs(1 << 30))
            } else if self.rng.chance(200) {
                let at = now + Duration::from_micros(self.rng.below(2_000));
                // No `Instant` of the virtual clock is public: under the
                // simulation the same deadline is set from now.
                if self.round.simulated() {
                    out.wake_after(tag, at - now);
                } else {
                    out.wake_at(tag, at);
                }
                at
            } else {
                let after = Duration::from_micros(self.rng.below(3_000));
                out.wake_after(tag, after);
                now + after
            };
            self.timers.insert(
                tag,
                Timer {
                    not_before,
                    rearmed: false,
                },
            );
            self.log(tag, "set");
            self.round.op();
        }
        let pending: Vec<u64> = self.timers.keys().copied().collect();
        if pending.is_empty() {
            return;
        }
        let tag = *self.rng.pick(&pending);
        if self.rng.chance(150) {
            self.log(tag, "cancel");
            out.cancel_timer(tag);
            self.timers.remove(&tag);
            self.cancelled.insert(tag);
            self.round.op();
        } else if self.rng.chance(50) {
            self.log(tag, "rearm");
            let after = Duration::from_micros(self.rng.below(3_000));
            // Taken after the call: the deadline is at least this far off.
            let not_before = self.round.now() + after;
            out.wake_after(tag, after);
            self.timers.insert(
                tag,
                Timer {
                    not_before,
                    rearmed: true,
                },
            );
            self.round.op();
        }
    }

    /// Now and then a plain process starts a child that fails soon and a
    /// `Plan::LinkThenEnd` child that links it, and monitors the second
    /// (the first runs next on this worker, the second may be stolen).
    fn pair(&mut self, out: &mut StepOutput<'_, Self>) {
        let round = Arc::clone(&self.round);
        let room = round.live() + 2 < round.cfg.live_cap;
        if self.who != Who::Plain || !room || !self.rng.chance(30) {
            return;
        }
        let mut partner = None;
        for plan in [Plan::Fail, Plan::LinkThenEnd(partner)] {
            let plan = match plan {
                Plan::LinkThenEnd(_) => Plan::LinkThenEnd(partner),
                other => other,
            };
            let child = Actor::new(&round);
            let serial = child.serial;
            let (who, seed, fail_init) = (Who::Plain, self.rng.next(), false);
            let spec = Spec {
                who,
                seed,
                fail_init,
                plan,
            };
            let result = out.spawn(child, "lc", spec);
            match (&result, plan) {
                (Ok(pid), Plan::Fail) => partner = Some(*pid),
                (Ok(pid), _) => {
                    out.monitor(*pid);
                    self.monitors.insert(*pid, Watch::Active { wait: false });
                }
                _ => {}
            }
            round.op();
            started(&round, serial, who, result);
        }
    }

    fn spawn(&mut self, out: &mut StepOutput<'_, Self>) {
        let round = Arc::clone(&self.round);
        if round.live() >= round.cfg.live_cap || !self.rng.chance(50) {
            return;
        }
        let child = Actor::new(&round);
        let serial = child.serial;
        let who = if self.rng.chance(350) {
            Who::Watcher
        } else {
            Who::Plain
        };
        let spec = Spec {
            who,
            seed: self.rng.next(),
            fail_init: self.rng.chance(20),
            plan: Plan::Random,
        };
        let result = match self.rng.below(4) {
            0 => out.spawn_with(child, "lc", spec, SpawnOptions::new().mailbox_capacity(2)),
            1 => out.spawn_with(child, "lc", spec, SpawnOptions::new().unbounded_mailbox()),
            _ => out.spawn(child, "lc", spec),
        };
        round.op();
        started(&round, serial, who, result);
    }
}

impl Process for Actor {
    type Input = Spec;
    type Message = Msg;
    type Command = Cmd;
    type Reply = u64;
    type Output = u64;
    type Error = String;

    fn init(&mut self, _: &str, spec: Spec) -> Result<(), String> {
        if spec.fail_init {
            return Err("deliberate init failure".to_owned());
        }
        self.who = spec.who;
        self.plan = spec.plan;
        self.rng = Rng::new(spec.seed);
        self.budget = match self.plan {
            Plan::Random => 1 + self.rng.below(40) as u32,
            Plan::Fail => 1 + self.rng.below(3) as u32,
            Plan::LinkThenEnd(_) => 2 + self.rng.below(3) as u32,
        };
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        let me = out.pid();
        self.me = Some(me);
        let now = self.round.now();
        self.steps += 1;
        let mut cancel = None;
        // Now and then the last message stays in the vector: the next step
        // gets it first (or `on_undelivered`, if this one ends).
        let keep = match events.last() {
            Some(Event::Message(_)) if self.rng.chance(50) => events.pop(),
            _ => None,
        };
        for event in events.drain(..) {
            match event {
                Event::Message(message) => self.on_message(message, out),
                Event::Completion { tag, result } => self.on_completion(me, tag, result),
                Event::Cancel(why) => cancel = Some(why),
                Event::Refused { message, .. } => {
                    message.settle(REFUSED);
                }
                Event::Down { pid, reason } => self.on_down(me, pid, reason),
                Event::Timer { tag } => self.on_timer(me, tag, now),
                other => self.round.find(
                    Check::Api,
                    None,
                    format!("{me}: unexpected event {other:?}"),
                ),
            }
        }
        events.extend(keep);
        match cancel {
            Some(Cancel::Terminate) => {
                out.done(self.serial); // the last step, whatever it returns
                return Ok(());
            }
            // Shutdown, and any other reason (`Cancel` is non-exhaustive):
            // finish in time.
            Some(_) => self.stopping = true,
            None => {}
        }
        if self.steps == 1 && self.who == Who::Watcher {
            out.trap_exits(true);
            self.trapping = true;
            self.ever_trapped = true;
            // Only now may others find it to link (see `watch.rs`).
            let (pid, who, serial) = (me, Who::Watcher, self.serial);
            self.round.registry.push(Target { pid, who, serial });
        }
        if self.stopping {
            if self.who == Who::Watcher && self.waiting() {
                out.set_status(Status::Idle);
            } else {
                out.done(self.serial);
            }
            return Ok(());
        }
        match self.plan {
            Plan::Random => {}
            // The plans end after 1 to 3 steps (or 2 to 4), continuing
            // meanwhile, so the ends fall at varied times on either side.
            Plan::Fail if self.steps as u64 >= self.budget as u64 => {
                return Err("deliberate failure".to_owned())
            }
            Plan::LinkThenEnd(partner) if self.steps == 1 => {
                if let Some(pid) = partner {
                    out.link(pid);
                    self.links.insert(pid, Watch::Active { wait: false });
                }
                out.set_status(Status::Continue);
                return Ok(());
            }
            Plan::LinkThenEnd(_) if self.steps >= self.budget => {
                // A slow last step, so that the child's exit (stolen by
                // another worker) lands while it runs.
                let spin = Duration::from_micros(self.rng.below(200));
                while !self.round.simulated() && now.elapsed() < spin {
                    std::hint::spin_loop();
                }
                out.done(self.serial);
                return Ok(());
            }
            Plan::Fail | Plan::LinkThenEnd(_) => {
                out.set_status(Status::Continue);
                return Ok(());
            }
        }
        self.sends(out);
        self.commands(out);
        self.pair(out);
        self.timers(out, now);
        self.watches(out);
        self.spawn(out);
        self.budget = self.budget.saturating_sub(1);
        if self.who == Who::Plain {
            if self.rng.chance(15) {
                return Err("deliberate failure".to_owned());
            }
            if self.rng.chance(10) {
                panic!("{DELIBERATE}");
            }
        }
        let ends = self.budget == 0 && !(self.who == Who::Watcher && self.waiting());
        if ends {
            out.done(self.serial);
        } else if !self.pending.is_empty() && self.rng.chance(500) {
            out.set_status(Status::Wait);
        } else if self.rng.chance(300) {
            out.set_status(Status::Continue);
        } else {
            if self.timers.is_empty() && self.pending.is_empty() {
                // Something to wake it, so that processes keep ending.
                let tag = self.next_timer;
                self.next_timer += 1;
                let after = Duration::from_micros(self.rng.below(2_000));
                out.wake_after(tag, after);
                let (not_before, rearmed) = (now + after, false);
                self.timers.insert(
                    tag,
                    Timer {
                        not_before,
                        rearmed,
                    },
                );
                self.log(tag, "set");
            }
            out.set_status(Status::Idle);
        }
        Ok(())
    }

    fn close(&mut self) {
        self.round.processes.mark(self.serial, RECEIVED);
        let waits: Vec<Wait> = (self.monitors.iter())
            .filter(|(_, w)| matches!(w, Watch::Active { wait: true }))
            .map(|(p, _)| Wait::Monitor(*p))
            .chain(
                (self.links.iter())
                    .filter(|(_, w)| matches!(w, Watch::Active { wait: true }))
                    .map(|(p, _)| Wait::Link(*p, self.foreign_links.contains(p))),
            )
            .collect();
        if let (Some(me), false) = (self.me, waits.is_empty()) {
            self.round.waits.lock().unwrap().insert(me, waits);
        }
    }
}
