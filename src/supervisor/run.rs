//! [`Supervisor`]: the process, a state machine over its children's ends,
//! its stop timers and its restart intensity.

use super::spec::{Shutdown, Strategy, SupervisorSpec};
use crate::process::{Cancel, Event, ExitReason, Kind, Pid, Process, Status, StepOutput, Summary};
use std::collections::VecDeque;
use std::time::Instant;

/// The reason a supervisor ends with when its restart intensity is
/// exceeded (OTP's `reached_max_restart_intensity`), as an
/// [`ExitReason::Exit`].
pub const REACHED_MAX_RESTART_INTENSITY: &str = "reached_max_restart_intensity";

/// The reason a supervisor ends with when a child fails its first start
/// (its `init` failed, or the scheduler refused it), as an
/// [`ExitReason::Exit`].
pub const FAILED_TO_START_CHILD: &str = "failed_to_start_child";

/// A supervisor process: a [kind](crate::process::Kind) of the embedder's
/// `P` whose input is a [`SupervisorSpec`] (see the
/// [module docs](super) for how it works and an example).
pub struct Supervisor<P: Process> {
    spec: Option<SupervisorSpec<P>>,
    /// Each child's PID while it runs.
    pids: Vec<Option<Pid>>,
    /// Children never started again (temporary, or transient ended
    /// normally).
    gone: Vec<bool>,
    started: bool,
    /// Its own exit is sent: nothing more to do.
    exited: bool,
    /// When each restart within the period happened, oldest first (on the
    /// scheduler's clock, `StepOutput::now`).
    restarts: VecDeque<Instant>,
    /// The scheduler's time at the current step's start.
    now: Option<Instant>,
    /// Children to stop, next first (reverse start order).
    stop_queue: VecDeque<usize>,
    /// The child being stopped: its index, PID and kill timer's tag.
    stopping: Option<(usize, Pid, u64)>,
    /// What comes once the stops are done.
    then: Then,
    /// Children to start, in start order.
    to_start: Vec<usize>,
    /// Ends of children that needed a decision while a stop was under way.
    deferred: VecDeque<(usize, ExitReason)>,
    next_tag: u64,
}

/// What a supervisor does once its stop queue is empty.
enum Then {
    Nothing,
    /// Start these children (a strategy's restart).
    Start(Vec<usize>),
    /// End itself with this reason.
    End(ExitReason),
}

impl<P: Process> Default for Supervisor<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: Process> Supervisor<P> {
    /// A supervisor to start with its spec, as a kind:
    /// `submit_kind(Supervisor::new(), spec)`.
    pub fn new() -> Self {
        Supervisor {
            spec: None,
            pids: Vec::new(),
            gone: Vec::new(),
            started: false,
            exited: false,
            restarts: VecDeque::new(),
            now: None,
            stop_queue: VecDeque::new(),
            stopping: None,
            then: Then::Nothing,
            to_start: Vec::new(),
            deferred: VecDeque::new(),
            next_tag: 0,
        }
    }

    fn spec(&self) -> &SupervisorSpec<P> {
        self.spec
            .as_ref()
            .expect("a supervisor's init sets its spec")
    }

    fn ending(&self) -> bool {
        matches!(self.then, Then::End(_))
    }

    fn in_stop_phase(&self) -> bool {
        self.stopping.is_some()
            || !self.stop_queue.is_empty()
            || !matches!(self.then, Then::Nothing)
    }

    /// The running children, in reverse start order.
    fn running_reversed(&self, keep: impl Fn(usize) -> bool) -> VecDeque<usize> {
        (0..self.pids.len())
            .rev()
            .filter(|&j| self.pids[j].is_some() && keep(j))
            .collect()
    }

    /// A child ended (its link's exit, trapped).
    fn child_ended(&mut self, i: usize, reason: ExitReason) {
        self.pids[i] = None;
        if matches!(self.stopping, Some((j, _, _)) if j == i) {
            self.stopping = None;
            return;
        }
        if let Some(at) = self.stop_queue.iter().position(|&j| j == i) {
            self.stop_queue.remove(at);
            return;
        }
        if self.ending() {
            return;
        }
        if self.in_stop_phase() {
            self.deferred.push_back((i, reason));
        } else {
            self.failed(i, reason);
        }
    }

    /// A child ended on its own: restart what its spec and the strategy
    /// say, if the intensity allows.
    fn failed(&mut self, i: usize, reason: ExitReason) {
        let spec = &self.spec().children[i];
        if !spec.restart.restarts(&reason) {
            self.gone[i] = true;
            return;
        }
        if !self.count_restart() {
            return;
        }
        let n = self.pids.len();
        let (stop, start): (VecDeque<usize>, Vec<usize>) = match self.spec().strategy {
            Strategy::OneForOne => (VecDeque::new(), vec![i]),
            Strategy::OneForAll => (self.running_reversed(|_| true), (0..n).collect()),
            Strategy::RestForOne => (self.running_reversed(|j| j > i), (i..n).collect()),
        };
        self.stop_queue = stop;
        self.then = Then::Start(start);
    }

    /// Counts a restart; `false` (and the supervisor ending) if it exceeds
    /// the intensity.
    fn count_restart(&mut self) -> bool {
        let now = self.now.unwrap_or_else(Instant::now);
        let period = self.spec().period;
        while (self.restarts.front()).is_some_and(|&t| now.duration_since(t) >= period) {
            self.restarts.pop_front();
        }
        self.restarts.push_back(now);
        if self.restarts.len() > self.spec().max_restarts as usize {
            self.end(ExitReason::Exit(Summary::new(
                REACHED_MAX_RESTART_INTENSITY,
            )));
            return false;
        }
        true
    }

    /// Stops every child, in reverse start order, then ends with `reason`
    /// (the first reason, if already ending).
    fn end(&mut self, reason: ExitReason) {
        if self.ending() {
            return;
        }
        let stopping = self.stopping.map(|(j, _, _)| j);
        self.stop_queue = self.running_reversed(|j| Some(j) != stopping);
        self.then = Then::End(reason);
        self.to_start.clear();
        self.deferred.clear();
    }

    /// Goes as far as it can: the next stop, or the starts and the
    /// deferred decisions once the stops are done, or its own end.
    fn drive(&mut self, out: &mut StepOutput<'_, P>) {
        loop {
            if self.stopping.is_some() || self.exited {
                return;
            }
            if let Some(j) = self.stop_queue.pop_front() {
                self.stop(j, out);
                continue;
            }
            match core::mem::replace(&mut self.then, Then::Nothing) {
                Then::Nothing => {}
                Then::Start(list) => self.to_start.extend(list),
                Then::End(reason) => {
                    // Ends by its own exit, which it must not trap; its
                    // links (its own supervisor) are told `reason`.
                    out.trap_exits(false);
                    out.exit(out.pid(), reason);
                    self.exited = true;
                    self.then = Then::End(ExitReason::Done); // stays ending
                    return;
                }
            }
            if !self.start(out) {
                continue; // now ending: stop the children started
            }
            match self.deferred.pop_front() {
                Some((i, reason)) => self.failed(i, reason),
                None => return,
            }
        }
    }

    /// Stops child `j`, if it runs, as its spec says.
    fn stop(&mut self, j: usize, out: &mut StepOutput<'_, P>) {
        let Some(pid) = self.pids[j] else { return };
        let tag = self.next_tag;
        self.next_tag += 1;
        match self.spec().children[j].shutdown {
            Shutdown::BrutalKill => out.kill(pid),
            Shutdown::Timeout(after) => {
                out.exit(pid, ExitReason::Shutdown);
                out.wake_after(tag, after);
            }
            Shutdown::Infinity => out.exit(pid, ExitReason::Shutdown),
        }
        self.stopping = Some((j, pid, tag));
    }

    /// Starts the children waiting to start, in start order; each is
    /// linked in the step that spawns it, so its end cannot be missed. A
    /// child already running is never started twice. `false` if the
    /// supervisor is now ending (a first start failed, or a failed
    /// restart exceeded the intensity).
    fn start(&mut self, out: &mut StepOutput<'_, P>) -> bool {
        if self.to_start.is_empty() {
            return true;
        }
        let mut list = core::mem::take(&mut self.to_start);
        list.sort_unstable();
        list.dedup();
        let first = !self.started;
        let mut retry = Vec::new();
        for i in list {
            if self.pids[i].is_some() || self.gone[i] {
                continue;
            }
            let child = &self.spec().children[i];
            let (process, method, input) = (child.start)();
            match out.spawn_with(process, method, input, child.options.clone()) {
                Ok(pid) => {
                    out.link(pid);
                    self.pids[i] = Some(pid);
                }
                Err(_) if first => {
                    self.end(ExitReason::Exit(Summary::new(FAILED_TO_START_CHILD)));
                    return false;
                }
                // A failed restart counts as one, and is tried again in
                // the next step.
                Err(_) => {
                    if !self.count_restart() {
                        return false;
                    }
                    retry.push(i);
                }
            }
        }
        self.started = true;
        if !retry.is_empty() {
            self.to_start = retry;
            out.set_status(Status::Continue);
        }
        true
    }
}

impl<P: Process> Kind<P> for Supervisor<P> {
    type Input = SupervisorSpec<P>;

    fn init(&mut self, spec: SupervisorSpec<P>) -> Result<(), P::Error> {
        let n = spec.children.len();
        self.pids = vec![None; n];
        self.gone = vec![false; n];
        self.to_start = (0..n).collect();
        self.spec = Some(spec);
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<P>>,
        out: &mut StepOutput<'_, P>,
    ) -> Result<(), P::Error> {
        if !self.started && !self.ending() {
            out.trap_exits(true);
        }
        self.now = Some(out.now());
        for event in events.drain(..) {
            match event {
                Event::Down { pid, reason } => {
                    match self.pids.iter().position(|&p| p == Some(pid)) {
                        Some(i) => self.child_ended(i, reason),
                        // Not a child: its parent's exit (or anyone's), a
                        // stop request unless normal.
                        None if !reason.is_normal() && pid != out.pid() => self.end(reason),
                        None => {}
                    }
                }
                Event::Timer { tag } => {
                    if let Some((_, pid, t)) = self.stopping {
                        if t == tag {
                            out.kill(pid); // its time is up
                        }
                    }
                }
                Event::Cancel(Cancel::Shutdown) => self.end(ExitReason::Shutdown),
                _ => {}
            }
        }
        self.drive(out);
        if self.spec().children.is_empty() {
            self.started = true;
        }
        Ok(())
    }
}
