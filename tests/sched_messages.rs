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

/// 100k numbered messages each way between two processes, up to `window`
/// in flight per direction; each side checks the other's numbers arrive
/// strictly consecutively.
fn ping_pong(workers: usize, window: u64) {
    // Miri interprets every instruction: a hundred there.
    const N: u64 = if cfg!(miri) { 100 } else { 100_000 };
    let scheduler = scheduler(workers);
    let b = scheduler
        .submit_joinable(Node::ping_pong(None, N, window), "b", ())
        .unwrap();
    let a = scheduler
        .submit_joinable(Node::ping_pong(Some(b.pid()), N, window), "a", ())
        .unwrap();
    assert_eq!(a.join(), Ok(N), "a received all of b's messages in order");
    assert_eq!(b.join(), Ok(N), "b received all of a's messages in order");
    let stats = scheduler.stats();
    assert_eq!(stats.undelivered, 0);
    // Each side takes at most one step per message received, plus its first.
    assert!(stats.total().steps <= 2 * N + 2, "{stats}");
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn ping_pong_of_100k_messages_each_way_keeps_order_on_two_workers() {
    ping_pong(2, 1);
}

#[test]
fn ping_pong_with_8_messages_in_flight_keeps_order_on_two_workers() {
    ping_pong(2, 8);
}

#[test]
fn ping_pong_with_8_messages_in_flight_keeps_order_on_one_worker() {
    ping_pong(1, 8);
}

#[test]
fn messages_from_each_outside_thread_arrive_in_send_order() {
    const THREADS: u64 = 4;
    const PER_THREAD: u64 = if cfg!(miri) { 25 } else { 25_000 };
    let scheduler = Arc::new(scheduler(2));
    let sink = scheduler
        .submit_joinable(Node::sink(THREADS * PER_THREAD), "sink", ())
        .unwrap();
    let to = sink.pid();
    let senders: Vec<_> = (0..THREADS)
        .map(|stream| {
            let scheduler = Arc::clone(&scheduler);
            thread::spawn(move || {
                for seq in 0..PER_THREAD {
                    let from = Pid::from_raw(0);
                    scheduler.send(to, Msg::Seq { from, stream, seq }).unwrap();
                }
            })
        })
        .collect();
    for sender in senders {
        sender.join().unwrap();
    }
    assert_eq!(sink.join(), Ok(THREADS * PER_THREAD));
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn a_burst_sent_from_one_step_arrives_in_order() {
    const N: u64 = if cfg!(miri) { 50 } else { 20_000 };
    let scheduler = scheduler(2);
    let sink = scheduler
        .submit_joinable(Node::sink(N), "sink", ())
        .unwrap();
    let burst = Node::new(Role::Burst {
        to: sink.pid(),
        n: N,
    });
    let burst = scheduler.submit_joinable(burst, "burst", ()).unwrap();
    assert_eq!(burst.join(), Ok(N));
    assert_eq!(sink.join(), Ok(N));
    scheduler.shutdown(Duration::from_secs(1));
}

/// A step that sends to many processes asks for their lines ahead and a
/// thief for its batch's (`worker/warm.rs`): the hints must change nothing.
#[test]
fn a_scatter_from_one_step_to_many_arrives_in_order_at_each() {
    let (sinks, n) = if cfg!(miri) { (24, 3) } else { (300, 3) };
    let scheduler = scheduler(2);
    let sinks: Vec<_> = (0..sinks)
        .map(|_| {
            scheduler
                .submit_joinable(Node::sink(n), "sink", ())
                .unwrap()
        })
        .collect();
    let to = sinks.iter().map(|sink| sink.pid()).collect();
    let scatter = Node::new(Role::Scatter { to, n });
    let scatter = scheduler.submit_joinable(scatter, "scatter", ()).unwrap();
    assert_eq!(scatter.join(), Ok(n * sinks.len() as u64));
    for sink in sinks {
        assert_eq!(sink.join(), Ok(n));
    }
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn send_to_a_pid_never_issued_is_refused_as_no_such_process_with_the_message() {
    let scheduler = scheduler(2);
    let echo = start_echo(&scheduler);
    let live = echo.pid();

    // An index whose table page was never allocated.
    let far = Pid::from_raw(1 << 30);
    match scheduler.send(far, Msg::Value(1)) {
        Err(e @ SendError::NoSuchProcess(_)) => assert_eq!(e.into_inner(), Msg::Value(1)),
        other => panic!("expected NoSuchProcess, got {other:?}"),
    }
    // A live slot, but a generation it has not reached yet.
    let future = Pid::from_raw(u64::from(live.generation() + 5) << 32 | u64::from(live.index()));
    assert_no_such_process(&scheduler, future, 2);
    // An index in an allocated page that no process has used.
    let unused = Pid::from_raw(u64::from(live.index() + 7));
    assert_no_such_process(&scheduler, unused, 3);
    assert_eq!(scheduler.terminate(far), Err(TerminateError::NoSuchProcess));
    assert_eq!(
        scheduler.terminate(future),
        Err(TerminateError::NoSuchProcess)
    );

    // The live process received none of them.
    finish_echo(&scheduler, echo, 9);
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn send_after_the_process_finished_is_refused_as_finished_with_the_message() {
    let scheduler = scheduler(2);
    let pid = finished_echo(&scheduler, 4);
    match scheduler.send(pid, Msg::Value(5)) {
        Err(e @ SendError::Finished(_)) => {
            assert!(e.to_string().contains("finished"), "{e}");
            assert_eq!(e.into_inner(), Msg::Value(5));
        }
        other => panic!("expected Finished, got {other:?}"),
    }
    assert_eq!(scheduler.terminate(pid), Err(TerminateError::Finished));
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn a_stale_pid_never_reaches_the_newer_process_in_its_slot() {
    // One worker: it closes every process, so its cache of freed slots
    // (`FREE_BATCH` = 32 in src/sched/table.rs) is the only one.
    let scheduler = scheduler(1);
    let old_pid = finished_echo(&scheduler, 1);

    // Submit idle processes until one reuses the slot. The worker keeps
    // freed slots for its own spawns until it holds more than 64; then it
    // gives the oldest 32 (the old slot among them) to the shared list that
    // submits take from. So every 66 submits finish the idle ones too: the
    // 65th close hands the old slot on, and the next 32 submits reach it.
    let mut idle = Vec::new();
    let mut submitted = 0;
    let reused = loop {
        assert!(submitted < 10_000, "slot {} never reused", old_pid.index());
        if idle.len() == 66 {
            for (i, handle) in idle.drain(..).enumerate() {
                finish_echo(&scheduler, handle, i as u64);
            }
        }
        let node = Node::new(Role::Echo);
        let seen = Arc::clone(&node.messages_seen);
        let handle = scheduler.submit_joinable(node, "echo", ()).unwrap();
        submitted += 1;
        if handle.pid().index() == old_pid.index() {
            break (handle, seen);
        }
        idle.push(handle);
    };
    let (reused, seen) = reused;
    assert_ne!(reused.pid(), old_pid, "a new generation");
    assert_eq!(reused.pid().index(), old_pid.index());

    match scheduler.send(old_pid, Msg::Value(666)) {
        Err(SendError::Finished(m)) => assert_eq!(m, Msg::Value(666)),
        other => panic!("expected Finished for the stale pid, got {other:?}"),
    }
    assert_eq!(scheduler.terminate(old_pid), Err(TerminateError::Finished));
    // The newer process gets only its own message.
    finish_echo(&scheduler, reused, 7);
    assert_eq!(
        seen.load(Ordering::Relaxed),
        1,
        "exactly one message reached it"
    );
    for (i, handle) in idle.into_iter().enumerate() {
        finish_echo(&scheduler, handle, i as u64);
    }
    assert_eq!(scheduler.stats().undelivered, 0);
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn a_message_sent_from_a_step_to_a_finished_process_goes_to_on_undelivered() {
    let undelivered = Arc::new(Mutex::new(Vec::new()));
    let scheduler = {
        let undelivered = Arc::clone(&undelivered);
        Scheduler::<Node>::builder()
            .workers(2)
            .on_undelivered(move |pid, event| {
                let what = match event {
                    Event::Message(m) => format!("{m:?}"),
                    other => format!("{other:?}"),
                };
                undelivered.lock().unwrap().push((pid, what));
            })
            .build()
            .unwrap()
    };
    let target_pid = finished_echo(&scheduler, 1);

    let sender = Node::new(Role::SendOnce {
        to: target_pid,
        value: 31,
    });
    let sender = scheduler.submit_joinable(sender, "send", ()).unwrap();
    assert_eq!(sender.join(), Ok(0));
    wait_until("the undelivered report", || {
        !undelivered.lock().unwrap().is_empty()
    });
    let undelivered = undelivered.lock().unwrap();
    assert_eq!(
        *undelivered,
        vec![(target_pid, format!("{:?}", Msg::Value(31)))]
    );
    assert_eq!(scheduler.stats().undelivered, 1);
    scheduler.shutdown(Duration::from_secs(1));
}

#[test]
fn a_step_may_send_to_the_child_it_just_spawned() {
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let scheduler = {
        let outcomes = Arc::clone(&outcomes);
        Scheduler::<Node>::builder()
            .workers(2)
            .on_complete(move |pid, outcome| {
                outcomes.lock().unwrap().push((pid, outcome.clone()));
            })
            .build()
            .unwrap()
    };
    for value in 0..if cfg!(miri) { 10 } else { 100 } {
        let parent = Node::new(Role::SpawnAndSend { value });
        let parent = scheduler.submit_joinable(parent, "parent", ()).unwrap();
        let child = Pid::from_raw(parent.join().unwrap());
        wait_until("the child to finish", || {
            outcomes
                .lock()
                .unwrap()
                .iter()
                .any(|(pid, _)| *pid == child)
        });
        let outcomes = outcomes.lock().unwrap();
        let (_, outcome) = outcomes.iter().find(|(pid, _)| *pid == child).unwrap();
        assert_eq!(*outcome, Ok(value), "the child got its message");
    }
    assert_eq!(scheduler.stats().undelivered, 0);
    scheduler.shutdown(Duration::from_secs(1));
}

/// Finishes on its first message, counting every message its last step saw.
struct Once {
    received: Arc<AtomicUsize>,
}

impl Process for Once {
    type Input = ();
    type Message = u64;
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = ();

    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), ()> {
        for event in events.drain(..) {
            if let Event::Message(_) = event {
                self.received.fetch_add(1, Ordering::SeqCst);
                out.done(());
            }
        }
        Ok(())
    }
}

/// Three threads send to 500 processes that end on their first message,
/// until every send is refused; then shutdown. Each accepted message must
/// have been seen by a step or reported to `on_undelivered`.
///
/// Failed before commit 20e09ce in the first round (a few messages of
/// ~100k lost): a message pushed after the closing worker drained the
/// queue stayed in the freed slot, reported only if the slot was reused,
/// and never at shutdown.
#[test]
fn every_message_accepted_by_a_finishing_process_is_received_or_reported() {
    const PROCESSES: usize = if cfg!(miri) { 10 } else { 500 };
    const SENDERS: usize = 3;
    for round in 0..if cfg!(miri) { 2 } else { 20 } {
        let received = Arc::new(AtomicUsize::new(0));
        let undelivered = Arc::new(AtomicUsize::new(0));
        let scheduler = {
            let undelivered = Arc::clone(&undelivered);
            Arc::new(
                Scheduler::<Once>::builder()
                    .workers(2)
                    .on_undelivered(move |_, event| {
                        if let Event::Message(_) = event {
                            undelivered.fetch_add(1, Ordering::SeqCst);
                        }
                    })
                    .build()
                    .unwrap(),
            )
        };
        let pids: Arc<Vec<Pid>> = Arc::new(
            (0..PROCESSES)
                .map(|_| {
                    let once = Once {
                        received: Arc::clone(&received),
                    };
                    scheduler.submit(once, "once", ()).unwrap()
                })
                .collect(),
        );
        let senders: Vec<_> = (0..SENDERS)
            .map(|_| {
                let (scheduler, pids) = (Arc::clone(&scheduler), Arc::clone(&pids));
                thread::spawn(move || {
                    let mut accepted = 0;
                    loop {
                        let before = accepted;
                        for &pid in pids.iter() {
                            if scheduler.send(pid, 1).is_ok() {
                                accepted += 1;
                            }
                        }
                        if accepted == before {
                            return accepted; // every target has ended
                        }
                    }
                })
            })
            .collect();
        let accepted: usize = senders.into_iter().map(|s| s.join().unwrap()).sum();
        scheduler.shutdown(Duration::from_secs(1));
        let (seen, reported) = (
            received.load(Ordering::SeqCst),
            undelivered.load(Ordering::SeqCst),
        );
        assert_eq!(
            accepted,
            seen + reported,
            "round {round}: {accepted} accepted, {seen} received, {reported} reported: {} lost",
            accepted as i64 - (seen + reported) as i64
        );
    }
}
