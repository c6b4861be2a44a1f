//! Proves message delivery: per-sender order is kept (a windowed ping-pong
//! of 100k messages each way, bursts from outside threads and from a step),
//! a refused message is handed back with the right reason (unknown PID,
//! stale PID whose slot was reused, finished process), a message from a
//! step that reaches no one goes to `on_undelivered`.
//!
//! ```text
//! cargo test --test sched_messages
//! cargo test --release --test sched_messages
//! ```

#[path = "../common/mod.rs"]
mod common;
use common::wait_until;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use stepsched::process::{Event, NoCommand, Pid, Process, StepOutput};
use stepsched::sched::{JoinHandle, Scheduler, SendError, TerminateError};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Msg {
    /// Number `seq` of the stream `stream` (a sender's own counter).
    Seq { from: Pid, stream: u64, seq: u64 },
    /// A plain value.
    Value(u64),
}

/// What a `Node` does.
enum Role {
    /// Sends `n` numbered messages to `peer` (learnt from the first message
    /// if `None`), at most `window` ahead of what it received, and checks
    /// that the peer's numbers arrive consecutively.
    PingPong {
        peer: Option<Pid>,
        n: u64,
        window: u64,
        sent: u64,
        received: u64,
    },
    /// Receives `total` messages from any number of streams and checks each
    /// stream's numbers are consecutive from 0.
    Sink {
        expected: HashMap<u64, u64>,
        total: u64,
        received: u64,
    },
    /// In its first step sends `n` numbered messages to `to`, then ends.
    Burst { to: Pid, n: u64 },
    /// In its first step sends `n` numbered messages to each of `to`, one
    /// to each in turn, then ends.
    Scatter { to: Vec<Pid>, n: u64 },
    /// Finishes with the first value it receives.
    Echo,
    /// Sends `value` to `to` and ends.
    SendOnce { to: Pid, value: u64 },
    /// Spawns an `Echo` child, sends it `value` in the same step, and ends
    /// with the child's raw PID.
    SpawnAndSend { value: u64 },
}

struct Node {
    role: Role,
    messages_seen: Arc<AtomicUsize>,
}

impl Node {
    fn new(role: Role) -> Self {
        Node {
            role,
            messages_seen: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn ping_pong(peer: Option<Pid>, n: u64, window: u64) -> Self {
        Node::new(Role::PingPong {
            peer,
            n,
            window,
            sent: 0,
            received: 0,
        })
    }

    fn sink(total: u64) -> Self {
        Node::new(Role::Sink {
            expected: HashMap::new(),
            total,
            received: 0,
        })
    }
}

impl Process for Node {
    type Input = ();
    type Message = Msg;
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = String;

    fn init(&mut self, _: &str, _: ()) -> Result<(), String> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        let me = out.pid();
        match &mut self.role {
            Role::PingPong {
                peer,
                n,
                window,
                sent,
                received,
            } => {
                for event in events.drain(..) {
                    let Event::Message(Msg::Seq { from, seq, .. }) = event else {
                        return Err(format!("unexpected event {event:?}"));
                    };
                    if seq != *received {
                        return Err(format!("{me}: expected #{received} got #{seq}"));
                    }
                    *received += 1;
                    peer.get_or_insert(from);
                }
                if let Some(to) = *peer {
                    while *sent < *n && *sent < *received + *window {
                        let msg = Msg::Seq {
                            from: me,
                            stream: 0,
                            seq: *sent,
                        };
                        out.send(to, msg);
                        *sent += 1;
                    }
                }
                if *received == *n && *sent == *n {
                    out.done(*received);
                }
            }
            Role::Sink {
                expected,
                total,
                received,
            } => {
                for event in events.drain(..) {
                    let Event::Message(Msg::Seq { stream, seq, .. }) = event else {
                        return Err(format!("unexpected event {event:?}"));
                    };
                    let next = expected.entry(stream).or_insert(0);
                    if seq != *next {
                        return Err(format!("stream {stream}: expected #{next} got #{seq}"));
                    }
                    *next += 1;
                    *received += 1;
                }
                if *received == *total {
                    out.done(*received);
                }
            }
            Role::Burst { to, n } => {
                for seq in 0..*n {
                    let msg = Msg::Seq {
                        from: me,
                        stream: 0,
                        seq,
                    };
                    out.send(*to, msg);
                }
                out.done(*n);
            }
            Role::Scatter { to, n } => {
                for seq in 0..*n {
                    for &sink in to.iter() {
                        let msg = Msg::Seq {
                            from: me,
                            stream: 0,
                            seq,
                        };
                        out.send(sink, msg);
                    }
                }
                out.done(*n * to.len() as u64);
            }
            Role::Echo => {
                for event in events.drain(..) {
                    if let Event::Message(msg) = event {
                        self.messages_seen.fetch_add(1, Ordering::Relaxed);
                        match msg {
                            Msg::Value(v) => out.done(v),
                            other => return Err(format!("unexpected {other:?}")),
                        }
                    }
                }
            }
            Role::SendOnce { to, value } => {
                out.send(*to, Msg::Value(*value));
                out.done(0);
            }
            Role::SpawnAndSend { value } => {
                let child = out
                    .spawn(Node::new(Role::Echo), "echo", ())
                    .map_err(|e| e.to_string())?;
                out.send(child, Msg::Value(*value));
                out.done(child.into_raw());
            }
        }
        Ok(())
    }
}

fn scheduler(workers: usize) -> Scheduler<Node> {
    Scheduler::builder().workers(workers).build().unwrap()
}

/// Submits a joinable `Echo` process.
fn start_echo(scheduler: &Scheduler<Node>) -> JoinHandle<Node> {
    scheduler
        .submit_joinable(Node::new(Role::Echo), "echo", ())
        .unwrap()
}

/// Sends `value` to the `Echo` process `echo`, which must finish with it.
fn finish_echo(scheduler: &Scheduler<Node>, echo: JoinHandle<Node>, value: u64) {
    scheduler.send(echo.pid(), Msg::Value(value)).unwrap();
    assert_eq!(echo.join(), Ok(value));
}

/// Runs an `Echo` process to its end with `value` and waits until its slot
/// is freed; returns its PID, now stale.
fn finished_echo(scheduler: &Scheduler<Node>, value: u64) -> Pid {
    let echo = start_echo(scheduler);
    let pid = echo.pid();
    finish_echo(scheduler, echo, value);
    wait_until("the slot to be freed", || scheduler.live() == 0);
    pid
}

/// A send of `Value(value)` to `pid` is refused as `NoSuchProcess`, with
/// the message handed back.
fn assert_no_such_process(scheduler: &Scheduler<Node>, pid: Pid, value: u64) {
    match scheduler.send(pid, Msg::Value(value)) {
        Err(SendError::NoSuchProcess(m)) => assert_eq!(m, Msg::Value(value)),
        other => panic!("expected NoSuchProcess, got {other:?}"),
    }
}

mod order;
mod refused;
