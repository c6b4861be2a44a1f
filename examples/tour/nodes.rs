//! The process type: one per scheduler, so the tour's roles are kinds of
//! [`Node`], a [`kinds!`](stepsched::kinds) enum, and the crate's
//! [`Supervisor`] is one of them.

use std::hint::black_box;
use std::time::{Duration, Instant};

use stepsched::process::{
    Command, CommandError, Event, ExitReason, Kind, Pid, ReplyTo, Status, StepOutput,
};
use stepsched::supervisor::Supervisor;

use crate::measure::{record, IO_LATENCY, REQUEST_RTT};
use crate::{
    io_fails, spawns_job, thinks, uses_io, work, CALL_TIMEOUT, COUNTER, JOB_STEPS, REQUESTS,
    ROUTERS, ROUTER_NAMES, TALLY_EVERY, WORK,
};

stepsched::kinds! {
    /// Every process in the tour.
    pub enum Node {
        /// Starts the counter and the routers, and stops them in order.
        Sup(Supervisor<Node>),
        /// Makes `REQUESTS` requests, one after another.
        Session(Session),
        /// Answers requests, and reports how many to the counter.
        Router(Router),
        /// Adds up the routers' reports.
        Counter(Counter),
        /// A session's child: computes, then messages its parent.
        Job(Job),
    }
    /// Their inputs.
    pub enum NodeInput;
    type Message = Msg;
    type Command = Cmd;
    type Reply = u64;
    type Output = Tally;
    type Error = String;
}

pub enum Msg {
    /// Session → router: a call's request.
    Request { seq: u32, reply_to: ReplyTo },
    /// Router → session: the call's reply.
    Routed { seq: u32 },
    /// Job → its parent session.
    JobDone { result: u64 },
    /// Router → counter: requests routed since the last tally.
    Tally(u64),
}

pub enum Cmd {
    Cache { key: u64 },
    Io { key: u64, fail: bool },
}

impl Command for Cmd {
    fn kind(&self) -> &'static str {
        match self {
            Cmd::Cache { .. } => "cache",
            Cmd::Io { .. } => "io",
        }
    }
}

/// What a process did, reported as its output; the `on_complete` hook adds
/// them all up.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Processes that finished with an output (each reports 1).
    pub processes: u64,
    pub sessions: u64,
    pub requests: u64,
    pub cache: u64,
    pub io: u64,
    pub io_errors: u64,
    pub jobs: u64,
    pub routed: u64,
    pub counted: u64,
    pub messages: u64,
    /// 1 ms sleeps before a request (timers fired).
    pub sleeps: u64,
}

impl Tally {
    pub fn add(&mut self, o: &Tally) {
        self.processes += o.processes;
        self.sessions += o.sessions;
        self.requests += o.requests;
        self.cache += o.cache;
        self.io += o.io;
        self.io_errors += o.io_errors;
        self.jobs += o.jobs;
        self.routed += o.routed;
        self.counted += o.counted;
        self.messages += o.messages;
        self.sleeps += o.sleeps;
    }
}

/// What a session waits for.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Waiting {
    /// Its first step: nothing yet.
    #[default]
    Start,
    /// The reply to the call for the current request, made at `sent`.
    Reply { sent: Instant },
    /// The completion of the command for the current request.
    Command { io_since: Option<Instant> },
    /// The job it spawned.
    Job,
    /// Its think-time timer, before the next request.
    Think,
}

#[derive(Default)]
pub struct Session {
    id: u32,
    request: u32,
    waiting: Waiting,
    checksum: u64,
    tally: Tally,
}

impl Kind<Node> for Session {
    /// Its number: which requests do what, and which router it calls.
    type Input = u32;

    fn init(&mut self, id: u32) -> Result<(), String> {
        self.id = id;
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Node>>,
        out: &mut StepOutput<'_, Node>,
    ) -> Result<(), String> {
        if self.waiting == Waiting::Start {
            self.call_router(out)?;
        }
        let tag = u64::from(self.request);
        for event in events.drain(..) {
            match (event, self.waiting) {
                (Event::Reply { tag: t, result }, Waiting::Reply { sent }) if t == tag => {
                    match result {
                        Ok(Msg::Routed { seq }) if seq == self.request => {}
                        Ok(_) => return Err(format!("session {}: a wrong reply", self.id)),
                        Err(e) => return Err(format!("session {}: call: {e}", self.id)),
                    }
                    record(&REQUEST_RTT, sent.elapsed());
                    self.checksum ^= work(tag, WORK);
                    self.yield_command(out);
                }
                (Event::Completion { tag: t, result }, Waiting::Command { io_since }) => {
                    if t != tag {
                        return Err(format!("session {}: completion of tag {t}", self.id));
                    }
                    if let Some(since) = io_since {
                        record(&IO_LATENCY, since.elapsed());
                    }
                    match result {
                        Ok(value) => self.checksum ^= value,
                        Err(CommandError::Failed(_)) if io_fails(self.id, self.request) => {
                            self.tally.io_errors += 1;
                        }
                        Err(e) => return Err(format!("session {}: {e}", self.id)),
                    }
                    self.after_command(out)?;
                }
                (Event::Timer { tag: t }, Waiting::Think) if t == tag => self.call_router(out)?,
                (Event::Message(Msg::JobDone { result }), Waiting::Job) => {
                    self.checksum ^= result;
                    self.next_request(out)?;
                }
                (Event::Cancel(why), _) => return Err(format!("session {}: {why:?}", self.id)),
                (event, waiting) => {
                    return Err(format!(
                        "session {}: unexpected {event:?} in {waiting:?}",
                        self.id
                    ));
                }
            }
        }
        if out.status().is_none() {
            out.set_status(match self.waiting {
                Waiting::Command { .. } => Status::Wait,
                _ => Status::Idle,
            });
        }
        Ok(())
    }
}

impl Session {
    /// Calls its router, found by name: the reply, or why there is none,
    /// comes back as one `Event::Reply` tagged with the request's number.
    fn call_router(&mut self, out: &mut StepOutput<'_, Node>) -> Result<(), String> {
        let name = ROUTER_NAMES[(self.id % ROUTERS) as usize];
        let router = out
            .whereis(name)
            .ok_or_else(|| format!("session {}: no process named {name}", self.id))?;
        let seq = self.request;
        let request = |reply_to| Msg::Request { seq, reply_to };
        out.call(router, u64::from(seq), request, CALL_TIMEOUT);
        self.tally.messages += 1;
        self.waiting = Waiting::Reply {
            sent: Instant::now(),
        };
        Ok(())
    }

    fn yield_command(&mut self, out: &mut StepOutput<'_, Node>) {
        let key = u64::from(self.id) << 32 | u64::from(self.request);
        let tag = u64::from(self.request);
        if uses_io(self.id, self.request) {
            self.tally.io += 1;
            let fail = io_fails(self.id, self.request);
            out.yield_command(tag, Cmd::Io { key, fail });
            self.waiting = Waiting::Command {
                io_since: Some(Instant::now()),
            };
        } else {
            self.tally.cache += 1;
            // Inline: the completion is queued before the timeout is set,
            // so it always wins and the timeout is cancelled.
            let command = Cmd::Cache { key };
            out.yield_command_timeout(tag, command, Duration::from_secs(1));
            self.waiting = Waiting::Command { io_since: None };
        }
    }

    fn after_command(&mut self, out: &mut StepOutput<'_, Node>) -> Result<(), String> {
        if !spawns_job(self.id, self.request) {
            return self.next_request(out);
        }
        let job = Job {
            parent: out.pid(),
            left: JOB_STEPS,
            acc: self.checksum,
        };
        out.spawn_kind(job, ())
            .map_err(|e| format!("session {}: spawn: {e}", self.id))?;
        self.tally.jobs += 1;
        self.waiting = Waiting::Job;
        Ok(())
    }

    fn next_request(&mut self, out: &mut StepOutput<'_, Node>) -> Result<(), String> {
        self.tally.requests += 1;
        self.request += 1;
        if self.request == REQUESTS {
            self.tally.sessions = 1;
            self.tally.processes = 1;
            out.done(self.tally);
        } else if thinks(self.id, self.request) {
            self.tally.sleeps += 1;
            out.wake_after(u64::from(self.request), Duration::from_millis(1));
            self.waiting = Waiting::Think;
        } else {
            self.call_router(out)?;
        }
        Ok(())
    }
}

/// Answers the calls made to its name; every `TALLY_EVERY` requests, it
/// tells the counter. Stopped by its supervisor, it sends the rest and ends.
#[derive(Default)]
pub struct Router {
    index: usize,
    started: bool,
    routed: u64,
    messages: u64,
}

impl Kind<Node> for Router {
    /// Its number: its name is `ROUTER_NAMES[index]`.
    type Input = usize;

    fn init(&mut self, index: usize) -> Result<(), String> {
        self.index = index;
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Node>>,
        out: &mut StepOutput<'_, Node>,
    ) -> Result<(), String> {
        if !self.started {
            self.started = true;
            // Trapping, its supervisor's stop (an exit with reason
            // `Shutdown`) comes as an `Event::Down` it can finish on.
            out.trap_exits(true);
        }
        for event in events.drain(..) {
            match event {
                Event::Message(Msg::Request { seq, reply_to }) => {
                    black_box(work(u64::from(seq), WORK));
                    out.reply(reply_to, Msg::Routed { seq });
                    self.routed += 1;
                    self.messages += 1;
                    if self.routed % TALLY_EVERY == 0 {
                        self.tell_counter(TALLY_EVERY, out)?;
                    }
                }
                Event::Down {
                    reason: ExitReason::Shutdown,
                    ..
                } => {
                    self.tell_counter(self.routed % TALLY_EVERY, out)?;
                    out.done(Tally {
                        processes: 1,
                        routed: self.routed,
                        messages: self.messages,
                        ..Tally::default()
                    });
                    return Ok(());
                }
                event => return Err(format!("router: unexpected {event:?}")),
            }
        }
        out.set_status(Status::Idle);
        Ok(())
    }
}

impl Router {
    fn tell_counter(&mut self, n: u64, out: &mut StepOutput<'_, Node>) -> Result<(), String> {
        let counter = out.whereis(COUNTER).ok_or("router: no counter")?;
        out.send(counter, Msg::Tally(n));
        self.messages += 1;
        Ok(())
    }
}

/// Adds up the routers' tallies; stopped by its supervisor (after the
/// routers, which started after it), it ends with the sum.
#[derive(Default)]
pub struct Counter {
    started: bool,
    counted: u64,
}

impl Kind<Node> for Counter {
    type Input = ();

    fn init(&mut self, (): ()) -> Result<(), String> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Node>>,
        out: &mut StepOutput<'_, Node>,
    ) -> Result<(), String> {
        if !self.started {
            self.started = true;
            // Trapping, its supervisor's stop (an exit with reason
            // `Shutdown`) comes as an `Event::Down` it can finish on.
            out.trap_exits(true);
        }
        for event in events.drain(..) {
            match event {
                Event::Message(Msg::Tally(n)) => self.counted += n,
                Event::Down {
                    reason: ExitReason::Shutdown,
                    ..
                } => {
                    out.done(Tally {
                        processes: 1,
                        counted: self.counted,
                        ..Tally::default()
                    });
                    return Ok(());
                }
                event => return Err(format!("counter: unexpected {event:?}")),
            }
        }
        out.set_status(Status::Idle);
        Ok(())
    }
}

/// A child of a session: computes for `JOB_STEPS` steps, then messages its
/// parent the result.
pub struct Job {
    parent: Pid,
    left: u32,
    acc: u64,
}

impl Kind<Node> for Job {
    type Input = ();

    fn init(&mut self, (): ()) -> Result<(), String> {
        Ok(())
    }

    fn step(
        &mut self,
        _: &mut Vec<Event<Node>>,
        out: &mut StepOutput<'_, Node>,
    ) -> Result<(), String> {
        if self.left > 0 {
            self.left -= 1;
            self.acc = work(self.acc, WORK);
            out.set_status(Status::Continue);
        } else {
            out.send(self.parent, Msg::JobDone { result: self.acc });
            out.done(Tally {
                processes: 1,
                messages: 1,
                ..Tally::default()
            });
        }
        Ok(())
    }
}
