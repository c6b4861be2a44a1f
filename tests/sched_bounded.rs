//! Proves bounded mailboxes: a slow process with capacity 1,000 flooded by
//! an outside sender (retrying on `Full`) and by processes (retrying on
//! `Event::Refused`) receives every accepted message exactly once and in
//! each sender's order, and every refused one went back to its sender;
//! `blocking_send_timeout` parks until a drain makes room, or hands the message
//! back, or learns at once that the process ended; completions, cancels and
//! terminates are never refused; a process closed with messages queued
//! gives their places back to its slot; per-process options override the
//! builder's default; a 0 capacity is refused.
//!
//! ```text
//! cargo test --test sched_bounded
//! cargo test --release --test sched_bounded
//! ```

mod common;
use common::Held;

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use stepsched::process::{Command, Event, Pid, Process, SpawnOptions, Status, StepOutput};
use stepsched::sched::{Scheduler, SendError};

/// Outside attempts: 10M natively in release, fewer in debug and Miri.
const ATTEMPTS: u64 = if cfg!(miri) {
    1_000
} else if cfg!(debug_assertions) {
    1_000_000
} else {
    10_000_000
};
/// Messages each in-scheduler sender gets through.
const FROM_STEPS: u64 = if cfg!(miri) { 200 } else { 20_000 };
/// The sink's capacity: below what the two senders send while it holds
/// (under Miri too), so that steps' sends are refused.
const CAPACITY: u32 = if cfg!(miri) { 50 } else { 1_000 };
/// Messages a sender sends a step. Small under Miri: while the mailbox is
/// full, a sender's steps send bursts that all come back refused, and Miri
/// interprets each.
const BURST: u64 = if cfg!(miri) { 10 } else { 500 };
/// The stream of the message that tells the sink how many to expect.
const CONTROL: u64 = 3;

#[derive(Debug)]
struct Hold;
impl Command for Hold {
    fn kind(&self) -> &'static str {
        "hold"
    }
}

type Msg = (u64, u64);

enum Role {
    /// Receives `(stream, seq)`, each stream in order from 0, slowly,
    /// until `total` have come; ends with the count.
    /// Its first step waits on a command, so that the senders find its
    /// mailbox full before it drains anything.
    Sink {
        next: Vec<u64>,
        total: u64,
        received: u64,
        started: bool,
    },
    /// Sends `n` numbered messages of `stream` to `to`, `burst` a step,
    /// resending what comes back refused, in order; ends with the refusals
    /// (also counted in `refusals`).
    Sender {
        to: Pid,
        stream: u64,
        n: u64,
        sent: u64,
        refused: u64,
        burst: u64,
        refusals: Arc<AtomicU64>,
    },
    /// Sends `(0, 1)` to `(0, count)` to `to` in its first step and goes
    /// Idle; records the numbers that come back refused, and ends.
    Burst {
        to: Pid,
        count: u64,
        back: Arc<std::sync::Mutex<Vec<u64>>>,
        sent: bool,
    },
    /// Yields a command and waits; counts what it gets; ends at a message
    /// `u64::MAX`.
    Holder { seen: Arc<AtomicU64> },
    /// Spawns a `Holder` with a mailbox of `capacity` in its first step,
    /// leaves its PID in `child`, and ends.
    Spawner {
        capacity: u32,
        child: Arc<Mutex<Option<Pid>>>,
    },
}

struct Node(Role);

impl Process for Node {
    type Input = ();
    type Message = Msg;
    type Command = Hold;
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
        match &mut self.0 {
            Role::Sink {
                next,
                total,
                received,
                started,
            } => {
                if !*started {
                    *started = true;
                    out.yield_command(0, Hold);
                    out.set_status(Status::Wait);
                    return Ok(());
                }
                for event in events.drain(..) {
                    if let Event::Completion { .. } = event {
                        continue;
                    }
                    let Event::Message((stream, seq)) = event else {
                        return Err(format!("unexpected {event:?}"));
                    };
                    if stream == CONTROL {
                        *total = seq;
                        continue;
                    }
                    let expected = &mut next[stream as usize];
                    if seq != *expected {
                        return Err(format!("stream {stream}: {seq}, expected {expected}"));
                    }
                    *expected += 1;
                    *received += 1;
                    // Slow: the senders outrun it.
                    black_box((0..50u64).fold(seq, |a, b| a.rotate_left(7) ^ b));
                }
                if *received == *total {
                    out.done(*received);
                } else {
                    out.set_status(Status::Idle);
                }
            }
            Role::Sender {
                to,
                stream,
                n,
                sent,
                refused,
                burst,
                refusals,
            } => {
                // Refused messages come back in the order they were sent:
                // the first refused is the oldest unsent, so resume there.
                let mut first_refused = None;
                for event in events.drain(..) {
                    match event {
                        Event::Refused {
                            to: target,
                            message: (s, seq),
                        } => {
                            assert_eq!((target, s), (*to, *stream));
                            *refused += 1;
                            refusals.fetch_add(1, Ordering::Relaxed);
                            first_refused.get_or_insert(seq);
                        }
                        other => return Err(format!("unexpected {other:?}")),
                    }
                }
                if let Some(seq) = first_refused {
                    *sent = seq;
                }
                if *sent == *n && first_refused.is_none() {
                    out.done(*refused);
                    return Ok(());
                }
                let end = (*sent + *burst).min(*n);
                for seq in *sent..end {
                    out.send(*to, (*stream, seq));
                }
                *sent = end;
                // Refusals wake it; otherwise it goes on sending.
                out.set_status(Status::Continue);
            }
            Role::Burst {
                to,
                count,
                back,
                sent,
            } => {
                if !*sent {
                    *sent = true;
                    for seq in 1..=*count {
                        out.send(*to, (0, seq));
                    }
                    out.set_status(Status::Idle);
                    return Ok(());
                }
                for event in events.drain(..) {
                    match event {
                        Event::Refused { to: t, message } if t == *to => {
                            back.lock().unwrap().push(message.1)
                        }
                        other => return Err(format!("unexpected {other:?}")),
                    }
                }
                out.done(0);
            }
            Role::Holder { seen } => {
                for event in events.drain(..) {
                    match event {
                        Event::Message((_, u64::MAX)) | Event::Cancel(_) => {
                            out.done(seen.load(Ordering::Relaxed));
                            return Ok(());
                        }
                        _ => {
                            seen.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                out.yield_command(seen.load(Ordering::Relaxed), Hold);
                out.set_status(Status::Wait);
            }
            Role::Spawner { capacity, child } => {
                let holder = Node(Role::Holder {
                    seen: Arc::new(AtomicU64::new(0)),
                });
                let options = SpawnOptions::new().mailbox_capacity(*capacity);
                let pid = (out.spawn_with(holder, "", (), options))
                    .map_err(|e| format!("spawn refused: {e}"))?;
                *child.lock().unwrap() = Some(pid);
                out.done(0);
            }
        }
        Ok(())
    }
}

#[test]
fn a_flooded_bounded_mailbox_loses_nothing_and_refuses_back_to_the_sender() {
    let held = Held::default();
    let scheduler = Scheduler::builder()
        .workers(2)
        .mailbox_capacity(CAPACITY)
        .handler("hold", held.handler())
        .build()
        .unwrap();
    // Streams: 0 from outside, 1 and 2 from two sender processes.
    let sink = Node(Role::Sink {
        next: vec![0; 3],
        total: u64::MAX,
        received: 0,
        started: false,
    });
    let sink = scheduler.submit_joinable(sink, "", ()).unwrap();
    let to = sink.pid();
    held.wait_for("the sink to hold", 1);
    let refusals = Arc::new(AtomicU64::new(0));
    let senders: Vec<_> = (1..3)
        .map(|stream| {
            let refusals = Arc::clone(&refusals);
            let role = Role::Sender {
                to,
                stream,
                n: FROM_STEPS,
                sent: 0,
                refused: 0,
                burst: BURST,
                refusals,
            };
            scheduler.submit_joinable(Node(role), "", ()).unwrap()
        })
        .collect();
    // The mailbox fills while the sink holds; then it drains, slowly.
    common::wait_until("a step's send to be refused", || {
        refusals.load(Ordering::Relaxed) > 0
    });
    held.lock().pop().unwrap().succeed(()).unwrap();
    let (mut accepted, mut refused) = (0u64, 0u64);
    for _ in 0..ATTEMPTS {
        match scheduler.send(to, (0, accepted)) {
            Ok(()) => accepted += 1,
            Err(SendError::Full(message)) => {
                assert_eq!(message, (0, accepted), "the refused message comes back");
                refused += 1;
            }
            Err(other) => panic!("{other}: the sink ended with {:?}", sink.join()),
        }
    }
    let step_refusals: u64 = senders.into_iter().map(|s| s.join().unwrap()).sum();
    eprintln!(
        "outside: {accepted} accepted, {refused} refused; steps: {step_refusals} refused and resent"
    );
    assert!(
        refused > 0,
        "the flood never filled the mailbox: the test proves nothing"
    );
    assert!(
        step_refusals > 0,
        "no step send was refused: the test proves nothing"
    );
    assert_eq!(accepted + refused, ATTEMPTS);
    // Every sender is done: what was accepted is in the sink's mailbox or
    // taken. The last word waits for room like any outside send may.
    let expected = accepted + 2 * FROM_STEPS;
    scheduler
        .blocking_send_timeout(to, (CONTROL, expected), common::ms(60_000))
        .unwrap();
    assert_eq!(
        sink.join(),
        Ok(expected),
        "every accepted message, once, in order"
    );
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
}

/// A `Holder` with its own capacity, its first command held.
fn holder(
    scheduler: &Scheduler<Node>,
    held: &Held<Node>,
    options: SpawnOptions,
) -> (Pid, Arc<AtomicU64>) {
    let before = held.lock().len();
    let seen = Arc::new(AtomicU64::new(0));
    let node = Node(Role::Holder {
        seen: Arc::clone(&seen),
    });
    let pid = scheduler.submit_with(node, "", (), options).unwrap();
    held.wait_for("the holder's command", before + 1);
    (pid, seen)
}

fn held_scheduler(held: &Held<Node>) -> Scheduler<Node> {
    Scheduler::builder()
        .workers(2)
        .handler("hold", held.handler())
        .build()
        .unwrap()
}

#[test]
fn send_timeout_waits_for_a_drain_or_hands_the_message_back() {
    let held = Held::default();
    let scheduler = held_scheduler(&held);
    let (pid, seen) = holder(&scheduler, &held, SpawnOptions::new().mailbox_capacity(2));
    scheduler.send(pid, (0, 1)).unwrap();
    scheduler.send(pid, (0, 2)).unwrap();
    assert!(matches!(
        scheduler.send(pid, (0, 3)),
        Err(SendError::Full((0, 3)))
    ));
    assert!(matches!(
        scheduler.blocking_send_timeout(pid, (0, 3), common::ms(10)),
        Err(SendError::Full((0, 3)))
    ));
    // A drain makes room: the completion wakes the holder, whose step takes
    // both messages; the waiting sender is woken and gets in.
    thread::scope(|s| {
        s.spawn(|| {
            thread::sleep(common::ms(20));
            held.lock().pop().unwrap().succeed(()).unwrap();
        });
        scheduler
            .blocking_send_timeout(pid, (0, 3), common::ms(60_000))
            .unwrap();
    });
    held.wait_for("the holder's next command", 1);
    common::wait_until("the third message", || seen.load(Ordering::Relaxed) >= 3);
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
}

/// A sender waiting for room in a full mailbox whose process then ends
/// is woken by that end (the `close` that gives the queued message's place
/// back tells waiting senders, as a step's drain does) and told the
/// process finished, not left to its timeout.
#[test]
fn a_sender_waiting_for_room_learns_of_the_end_at_once() {
    let held = Held::default();
    let scheduler = held_scheduler(&held);
    let (pid, _) = holder(&scheduler, &held, SpawnOptions::new().mailbox_capacity(1));
    scheduler.send(pid, (0, 1)).unwrap();
    thread::scope(|s| {
        s.spawn(|| {
            // After the send below has begun to wait (on a slow machine it
            // may find the process gone instead: the test then passes
            // without the wait, never fails a right run).
            thread::sleep(common::ms(20));
            scheduler.terminate(pid).unwrap();
        });
        let timeout = common::ms(60_000);
        let start = std::time::Instant::now();
        match scheduler.blocking_send_timeout(pid, (0, 2), timeout) {
            Err(SendError::Finished((0, 2))) => {}
            other => panic!("expected Finished at the end, got {other:?}"),
        }
        // Left to its timeout, it would also find the process gone: what
        // tells a wake from a timeout is the time. A wake takes far less
        // than half the timeout on any machine (a liveness margin, not a
        // timing goal).
        assert!(
            start.elapsed() < timeout / 2,
            "the sender was not woken by the end, only by its timeout"
        );
    });
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
}

#[test]
fn completions_cancels_and_terminates_are_never_refused() {
    let held = Held::default();
    let scheduler = held_scheduler(&held);
    let (pid, seen) = holder(&scheduler, &held, SpawnOptions::new().mailbox_capacity(1));
    scheduler.send(pid, (0, 1)).unwrap();
    assert!(matches!(
        scheduler.send(pid, (0, 2)),
        Err(SendError::Full(_))
    ));
    // The completion gets in past the full mailbox and wakes it.
    held.lock().pop().unwrap().succeed(()).unwrap();
    held.wait_for("the holder's next command", 1);
    assert_eq!(
        seen.load(Ordering::Relaxed),
        2,
        "the completion and the message"
    );
    scheduler.send(pid, (0, 3)).unwrap();
    assert!(matches!(
        scheduler.send(pid, (0, 4)),
        Err(SendError::Full(_))
    ));
    scheduler.terminate(pid).unwrap();
    common::wait_until("the holder to end", || scheduler.live() == 0);
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
}

/// A process closed with messages still queued in its bounded mailbox
/// gives their places back (its `close` drains them): the places are
/// counted per slot, over its incarnations, so the next process in the
/// slot would otherwise start with less room than its capacity.
#[test]
fn a_closed_process_gives_back_the_places_of_what_it_left_queued() {
    let held = Held::default();
    // One worker: the slot the first holder frees goes to that worker's
    // free cache (last in, first out), from which the spawner's step on
    // the same worker takes it for the second.
    let scheduler = Scheduler::builder()
        .workers(1)
        .handler("hold", held.handler())
        .build()
        .unwrap();
    let (first, _) = holder(&scheduler, &held, SpawnOptions::new().mailbox_capacity(2));
    scheduler.send(first, (0, 1)).unwrap();
    scheduler.send(first, (0, 2)).unwrap();
    // Blocked on its command: terminated, it closes at its start, with
    // both messages still queued.
    scheduler.terminate(first).unwrap();
    common::wait_until("the first holder to end", || scheduler.live() == 0);
    let before = held.lock().len();
    let child = Arc::new(Mutex::new(None));
    let spawner = Node(Role::Spawner {
        capacity: 2,
        child: Arc::clone(&child),
    });
    scheduler.submit(spawner, "", ()).unwrap();
    held.wait_for("the second holder's command", before + 1);
    let second = child.lock().unwrap().expect("spawned");
    assert_eq!(
        second.index(),
        first.index(),
        "the second holder is not in the first one's slot: the test proves nothing"
    );
    scheduler.send(second, (0, 1)).unwrap();
    scheduler.send(second, (0, 2)).unwrap();
    assert!(matches!(
        scheduler.send(second, (0, 3)),
        Err(SendError::Full(_))
    ));
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
}

#[test]
fn refused_messages_come_back_to_the_step_in_order_and_later_ones_are_held_back() {
    // 5 sends take the step's usual loop; 40, the one that looks ahead
    // (more than 8 sends: `worker/warm.rs`).
    for count in [5, 40] {
        let held = Held::default();
        let scheduler = held_scheduler(&held);
        let (to, _) = holder(&scheduler, &held, SpawnOptions::new().mailbox_capacity(2));
        let back = Arc::new(std::sync::Mutex::new(Vec::new()));
        let burst = Node(Role::Burst {
            to,
            count,
            back: Arc::clone(&back),
            sent: false,
        });
        let burst = scheduler.submit_joinable(burst, "", ()).unwrap();
        // Idle after sending, it is woken by the refusals, and ends.
        common::joined(burst).unwrap();
        assert_eq!(*back.lock().unwrap(), (3..=count).collect::<Vec<_>>());
        assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
    }
}

#[test]
fn options_override_the_builders_default_and_zero_is_refused() {
    let held = Held::default();
    let scheduler = Scheduler::builder()
        .workers(2)
        .mailbox_capacity(1)
        .handler("hold", held.handler())
        .build()
        .unwrap();
    let (bounded, _) = holder(&scheduler, &held, SpawnOptions::new());
    scheduler.send(bounded, (0, 1)).unwrap();
    assert!(matches!(
        scheduler.send(bounded, (0, 2)),
        Err(SendError::Full(_))
    ));
    let (unbounded, _) = holder(&scheduler, &held, SpawnOptions::new().unbounded_mailbox());
    // Far past the builder's capacity of 1 (each send is slow under Miri).
    let n = if cfg!(miri) { 500 } else { 10_000 };
    for seq in 0..n {
        scheduler.send(unbounded, (0, seq)).unwrap();
    }
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);

    let refused = Scheduler::<Node>::builder()
        .mailbox_capacity(0)
        .build()
        .map(drop);
    let error = refused.unwrap_err();
    assert!(error.to_string().contains("mailbox_capacity(0)"), "{error}");
}
