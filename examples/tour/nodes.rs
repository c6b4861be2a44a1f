//! The process type: one per scheduler, so the tour's four roles are
//! variants of [`Node`].

use std::hint::black_box;
use std::time::{Duration, Instant};

use stepsched::process::{Command, CommandError, Event, Pid, Process, Status, StepOutput};

use crate::measure::{IO_LATENCY, REQUEST_RTT, STEP_TIME};
use crate::{
    io_fails, spawns_job, thinks, uses_io, work, JOB_STEPS, REQUESTS, ROUTERS, TALLY_EVERY, WORK,
};

/// Every process in the tour: one type per scheduler, so roles are variants.
pub enum Node {
    Session(Session),
    Router(Router),
    Counter(Counter),
    Job(Job),
}

pub enum Msg {
    /// Session → router. `sent` measures the round trip.
    Request { from: Pid, seq: u32, sent: Instant },
    /// Router → session.
    Reply { seq: u32, sent: Instant },
    /// Job → its parent session.
    JobDone { result: u64 },
    /// Router → counter: requests routed since the last tally.
    Tally(u64),
    /// Router → counter: the last tally; the router has stopped.
    RouterDone(u64),
    /// Main thread → router: stop.
    Stop,
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
    /// Processes that finished (each reports 1).
    pub processes: u64,
    pub sessions: u64,
    pub requests: u64,
    pub cache: u64,
    pub io: u64,
    pub io_errors: u64,
    pub jobs: u64,
    pub job_steps: u64,
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
        self.job_steps += o.job_steps;
        self.routed += o.routed;
        self.counted += o.counted;
        self.messages += o.messages;
        self.sleeps += o.sleeps;
    }
}

impl Process for Node {
    type Input = ();
    type Message = Msg;
    type Command = Cmd;
    type Reply = u64;
    type Output = Tally;
    type Error = String;

    fn init(&mut self, method: &str, (): ()) -> Result<(), String> {
        let role = match self {
            Node::Session(_) => "session",
            Node::Router(_) => "router",
            Node::Counter(_) => "counter",
            Node::Job(_) => "job",
        };
        if method == role {
            Ok(())
        } else {
            Err(format!("a {role} has no method {method:?}"))
        }
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        let start = Instant::now();
        let result = match self {
            Node::Session(s) => s.step(events, out),
            Node::Router(r) => r.step(events, out),
            Node::Counter(c) => c.step(events, out),
            Node::Job(j) => j.step(out),
        };
        STEP_TIME.record(start.elapsed());
        result
    }
}

/// What a session waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waiting {
    /// Its first step: nothing yet.
    Start,
    /// The reply to request `seq`.
    Reply(u32),
    /// The completion of the command for the current request.
    Command { io_since: Option<Instant> },
    /// The job it spawned.
    Job,
    /// Its think-time timer, before the next request.
    Think,
}

pub struct Session {
    id: u32,
    router: Pid,
    request: u32,
    waiting: Waiting,
    checksum: u64,
    tally: Tally,
}

impl Session {
    pub fn new(id: u32, router: Pid) -> Self {
        Session {
            id,
            router,
            request: 0,
            waiting: Waiting::Start,
            checksum: 0,
            tally: Tally::default(),
        }
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Node>>,
        out: &mut StepOutput<'_, Node>,
    ) -> Result<(), String> {
        if self.waiting == Waiting::Start {
            self.send_request(out);
        }
        for event in events.drain(..) {
            match (event, self.waiting) {
                (Event::Message(Msg::Reply { seq, sent }), Waiting::Reply(want)) if seq == want => {
                    REQUEST_RTT.record(sent.elapsed());
                    self.checksum ^= work(u64::from(seq), WORK);
                    self.yield_command(out);
                }
                (Event::Completion { tag, result }, Waiting::Command { io_since }) => {
                    if tag != u64::from(self.request) {
                        return Err(format!("session {}: completion of tag {tag}", self.id));
                    }
                    if let Some(since) = io_since {
                        IO_LATENCY.record(since.elapsed());
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
                (Event::Timer { tag }, Waiting::Think) if tag == u64::from(self.request) => {
                    self.send_request(out);
                }
                (Event::Message(Msg::JobDone { result }), Waiting::Job) => {
                    self.checksum ^= result;
                    self.next_request(out);
                }
                (Event::Cancel(why), _) => return Err(format!("session {}: {why:?}", self.id)),
                (_, waiting) => {
                    return Err(format!(
                        "session {}: unexpected event in {waiting:?}",
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

    fn send_request(&mut self, out: &mut StepOutput<'_, Node>) {
        let seq = self.request;
        let request = Msg::Request {
            from: out.pid(),
            seq,
            sent: Instant::now(),
        };
        out.send(self.router, request);
        self.tally.messages += 1;
        self.waiting = Waiting::Reply(seq);
    }

    fn yield_command(&mut self, out: &mut StepOutput<'_, Node>) {
        let key = u64::from(self.id) << 32 | u64::from(self.request);
        let (command, io_since) = if uses_io(self.id, self.request) {
            self.tally.io += 1;
            let fail = io_fails(self.id, self.request);
            (Cmd::Io { key, fail }, Some(Instant::now()))
        } else {
            self.tally.cache += 1;
            (Cmd::Cache { key }, None)
        };
        let tag = u64::from(self.request);
        match command {
            // Inline: the completion is queued before the timeout is set,
            // so it always wins and the timeout is cancelled.
            Cmd::Cache { .. } => out.yield_command_timeout(tag, command, Duration::from_secs(1)),
            _ => out.yield_command(tag, command),
        }
        self.waiting = Waiting::Command { io_since };
    }

    fn after_command(&mut self, out: &mut StepOutput<'_, Node>) -> Result<(), String> {
        if !spawns_job(self.id, self.request) {
            self.next_request(out);
            return Ok(());
        }
        let job = Job {
            parent: out.pid(),
            left: JOB_STEPS,
            acc: self.checksum,
            steps: 0,
        };
        out.spawn(Node::Job(job), "job", ())
            .map_err(|e| format!("session {}: spawn: {e}", self.id))?;
        self.tally.jobs += 1;
        self.waiting = Waiting::Job;
        Ok(())
    }

    fn next_request(&mut self, out: &mut StepOutput<'_, Node>) {
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
            self.send_request(out);
        }
    }
}

pub struct Router {
    pub counter: Pid,
    pub routed: u64,
    pub messages: u64,
}

impl Router {
    fn step(
        &mut self,
        events: &mut Vec<Event<Node>>,
        out: &mut StepOutput<'_, Node>,
    ) -> Result<(), String> {
        for event in events.drain(..) {
            match event {
                Event::Message(Msg::Request { from, seq, sent }) => {
                    black_box(work(u64::from(seq), WORK));
                    out.send(from, Msg::Reply { seq, sent });
                    self.routed += 1;
                    self.messages += 1;
                    if self.routed % TALLY_EVERY == 0 {
                        out.send(self.counter, Msg::Tally(TALLY_EVERY));
                        self.messages += 1;
                    }
                }
                Event::Message(Msg::Stop) => {
                    out.send(self.counter, Msg::RouterDone(self.routed % TALLY_EVERY));
                    self.messages += 1;
                    let (routed, messages) = (self.routed, self.messages);
                    out.done(Tally {
                        processes: 1,
                        routed,
                        messages,
                        ..Tally::default()
                    });
                    return Ok(());
                }
                _ => return Err("router: unexpected event".to_owned()),
            }
        }
        out.set_status(Status::Idle);
        Ok(())
    }
}

pub struct Counter {
    pub counted: u64,
    pub routers_done: u32,
}

impl Counter {
    fn step(
        &mut self,
        events: &mut Vec<Event<Node>>,
        out: &mut StepOutput<'_, Node>,
    ) -> Result<(), String> {
        for event in events.drain(..) {
            match event {
                Event::Message(Msg::Tally(n)) => self.counted += n,
                Event::Message(Msg::RouterDone(n)) => {
                    self.counted += n;
                    self.routers_done += 1;
                    if self.routers_done == ROUTERS {
                        out.done(Tally {
                            processes: 1,
                            counted: self.counted,
                            ..Tally::default()
                        });
                        return Ok(());
                    }
                }
                _ => return Err("counter: unexpected event".to_owned()),
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
    steps: u64,
}

impl Job {
    fn step(&mut self, out: &mut StepOutput<'_, Node>) -> Result<(), String> {
        self.steps += 1;
        if self.left > 0 {
            self.left -= 1;
            self.acc = work(self.acc, WORK);
            out.set_status(Status::Continue);
        } else {
            out.send(self.parent, Msg::JobDone { result: self.acc });
            out.done(Tally {
                processes: 1,
                job_steps: self.steps,
                messages: 1,
                ..Tally::default()
            });
        }
        Ok(())
    }
}
