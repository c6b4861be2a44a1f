//! Proves the ways an outside thread or task waits for processes: a
//! receiver with its own PID gets the messages processes send it (in each
//! sender's order, also as a future), `call` gets a reply, a dropped
//! receiver refuses later sends and reports what was queued, shutdown
//! disconnects receivers; a `JoinHandle` is a future; a `JoinSet` gives
//! the outcomes of 100k processes; futures are driven by a minimal
//! executor written here (`std::task` only).
//!
//! ```text
//! cargo test --test sched_outside
//! ```

mod common;

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{RecvError, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;

use stepsched::process::{Event, NoCommand, Pid, Process, Status, StepOutput};
use stepsched::sched::{CallError, JoinSet, Scheduler, SendError};

const N: u64 = if cfg!(miri) { 50 } else { 10_000 };
const SET: u64 = if cfg!(miri) { 100 } else { 100_000 };

#[derive(Debug, Clone, PartialEq, Eq)]
enum Msg {
    /// Send `Value(base)`, `Value(base + 1)`, ... `n` of them, to `to`.
    Count { to: Pid, n: u64, base: u64 },
    /// Reply `2 * n` to `to`.
    Double { to: Pid, n: u64 },
    /// A number.
    Value(u64),
    /// Spin in the step until `SPIN_GATE` opens.
    Spin,
    /// End.
    Stop,
}

/// `Msg::Spin`'s gate (only one test spins).
static SPIN_GATE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Serves `Msg`s until `Stop`; as a `Job`, ends with its input.
struct Server;

impl Process for Server {
    type Input = u64;
    type Message = Msg;
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = String;

    fn init(&mut self, method: &str, _: u64) -> Result<(), String> {
        match method {
            "serve" => Ok(()),
            other => Err(format!("no method {other}")),
        }
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        for event in events.drain(..) {
            match event {
                Event::Message(Msg::Count { to, n, base }) => {
                    for i in 0..n {
                        out.send(to, Msg::Value(base + i));
                    }
                }
                Event::Message(Msg::Double { to, n }) => out.send(to, Msg::Value(2 * n)),
                Event::Message(Msg::Spin) => {
                    // Acquire: pairs with the test's Release store.
                    while !SPIN_GATE.load(Ordering::Acquire) {
                        thread::yield_now();
                    }
                }
                Event::Message(Msg::Stop) => {
                    out.done(0);
                    return Ok(());
                }
                _ => {}
            }
        }
        out.set_status(Status::Idle);
        Ok(())
    }
}

/// Ends at once with its input.
struct Job(u64);

impl Process for Job {
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
        _: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        out.done(self.0);
        Ok(())
    }
}

/// The executor: polls `future` on this thread, parking between polls;
/// counts the polls, so a test can tell a woken wait from a busy one.
fn block_on<F: Future>(future: F) -> (F::Output, usize) {
    struct Unpark(thread::Thread, AtomicUsize);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.0.unpark();
        }
    }
    let unpark = Arc::new(Unpark(thread::current(), AtomicUsize::new(0)));
    let waker = Waker::from(Arc::clone(&unpark));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    let mut polls = 0;
    loop {
        polls += 1;
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return (output, polls);
        }
        thread::park_timeout(common::ms(60_000));
        assert!(polls < 10_000_000, "never ready");
    }
}

#[test]
fn a_receiver_gets_what_processes_send_it_in_order() {
    let scheduler = Scheduler::builder().workers(2).build().unwrap();
    let inbox = scheduler.mailbox().unwrap();
    let servers: Vec<Pid> = (0..2)
        .map(|_| scheduler.submit(Server, "serve", 0).unwrap())
        .collect();
    for (stream, &server) in servers.iter().enumerate() {
        let count = Msg::Count {
            to: inbox.pid(),
            n: N,
            base: stream as u64 * N,
        };
        scheduler.send(server, count).unwrap();
    }
    // Two streams, interleaved, each in order and complete.
    let mut next = [0, N];
    for _ in 0..2 * N {
        let Msg::Value(v) = inbox.recv_timeout(common::ms(60_000)).unwrap() else {
            panic!("not a value")
        };
        let stream = (v / N) as usize;
        assert_eq!(v, next[stream], "stream {stream} out of order");
        next[stream] += 1;
    }
    assert_eq!(next, [N, 2 * N]);
    assert_eq!(inbox.try_recv(), Err(TryRecvError::Empty));
    for server in servers {
        scheduler.send(server, Msg::Stop).unwrap();
    }
    drop(inbox);
    common::wait_until("the servers and the receiver to end", || {
        scheduler.live() == 0
    });
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
}

#[test]
fn recv_async_is_woken_not_spun() {
    let scheduler = Scheduler::builder().workers(2).build().unwrap();
    let inbox = scheduler.mailbox().unwrap();
    let server = scheduler.submit(Server, "serve", 0).unwrap();
    let (got, polls) = thread::scope(|s| {
        // The replies are asked for once the receiving task is waiting.
        s.spawn(|| {
            thread::sleep(common::ms(20));
            let count = Msg::Count {
                to: inbox.pid(),
                n: 3,
                base: 0,
            };
            scheduler.send(server, count).unwrap();
        });
        let mut got = Vec::new();
        let mut polls = 0;
        for _ in 0..3 {
            let (message, p) = block_on(inbox.recv_async());
            polls += p;
            got.push(message.unwrap());
        }
        (got, polls)
    });
    assert_eq!(got, vec![Msg::Value(0), Msg::Value(1), Msg::Value(2)]);
    // Woken by the forwarding worker: a handful of polls, not a spin.
    assert!(polls < 100, "{polls} polls");
    scheduler.send(server, Msg::Stop).unwrap();
    drop(inbox);
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
}

#[test]
fn call_gets_the_reply_and_hands_back_a_refused_request() {
    let scheduler = Scheduler::builder().workers(2).build().unwrap();
    let server = scheduler.submit(Server, "serve", 0).unwrap();
    for n in 0..if cfg!(miri) { 20 } else { 100 } {
        let reply =
            scheduler.blocking_call(server, |me| Msg::Double { to: me, n }, common::ms(60_000));
        assert_eq!(reply, Ok(Msg::Value(2 * n)));
    }
    // No reply: a Value is ignored by the server.
    let silent = scheduler.blocking_call(server, |_| Msg::Value(1), common::ms(10));
    assert_eq!(silent, Err(CallError::TimedOut));
    scheduler.send(server, Msg::Stop).unwrap();
    common::wait_until("the server to end", || scheduler.live() == 0);
    let refused =
        scheduler.blocking_call(server, |me| Msg::Double { to: me, n: 1 }, common::ms(10));
    match refused {
        Err(CallError::Send(SendError::Finished(request))) => {
            assert!(matches!(request, Msg::Double { n: 1, .. }))
        }
        other => panic!("{other:?}"),
    }
    common::wait_until("every call's receiver to end", || scheduler.live() == 0);
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
}

#[test]
fn a_dropped_receiver_refuses_later_sends_and_reports_queued_ones() {
    let undelivered = Arc::new(Mutex::new(Vec::<Msg>::new()));
    let seen = Arc::clone(&undelivered);
    let scheduler = Scheduler::<Server>::builder()
        .workers(1)
        .on_undelivered(move |_, event| {
            if let Event::Message(m) = event {
                seen.lock().unwrap().push(m);
            }
        })
        .build()
        .unwrap();
    let inbox = scheduler.mailbox().unwrap();
    let pid = inbox.pid();
    scheduler.send(pid, Msg::Value(1)).unwrap();
    assert_eq!(inbox.recv(), Ok(Msg::Value(1)));
    drop(inbox);
    common::wait_until("the receiver to end", || scheduler.live() == 0);
    match scheduler.send(pid, Msg::Value(2)) {
        Err(SendError::Finished(Msg::Value(2))) => {}
        other => panic!("{other:?}"),
    }
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
    assert!(undelivered.lock().unwrap().is_empty());
}

#[test]
fn shutdown_disconnects_a_receiver_after_what_was_forwarded() {
    let scheduler = Scheduler::<Server>::builder().workers(2).build().unwrap();
    let inbox = scheduler.mailbox().unwrap();
    scheduler.send(inbox.pid(), Msg::Value(7)).unwrap();
    common::wait_until("the value to be forwarded", || {
        scheduler
            .processes()
            .iter()
            .all(|p| p.steps > 0 || p.pid != inbox.pid())
    });
    let report = scheduler.shutdown(common::ms(5_000));
    assert!(!report.timed_out);
    assert_eq!(report.stuck, 0);
    assert_eq!(inbox.recv(), Ok(Msg::Value(7)));
    // With a timeout first, so that a receiver left open fails the test
    // instead of hanging it; then `recv` too, which must not wait.
    assert_eq!(
        inbox.recv_timeout(common::ms(60_000)),
        Err(RecvTimeoutError::Disconnected)
    );
    assert_eq!(inbox.recv(), Err(RecvError));
    assert_eq!(block_on(inbox.recv_async()).0, Err(RecvError));
    assert!(scheduler.mailbox().is_err(), "refused after shutdown");
}

#[test]
fn a_join_handle_is_a_future() {
    let scheduler = Scheduler::builder().workers(2).build().unwrap();
    let server = scheduler.submit_joinable(Server, "serve", 0).unwrap();
    let pid = server.pid();
    let (outcome, polls) = thread::scope(|s| {
        s.spawn(|| {
            thread::sleep(common::ms(20));
            scheduler.send(pid, Msg::Stop).unwrap();
        });
        block_on(server)
    });
    assert_eq!(outcome, Ok(0));
    assert!(polls < 100, "{polls} polls");
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
}

#[test]
fn a_join_set_gives_every_outcome_of_100k_processes() {
    let scheduler = Scheduler::builder().workers(2).build().unwrap();
    let mut set = JoinSet::new();
    for i in 0..SET {
        scheduler.submit_into(&mut set, Job(i), "", ()).unwrap();
    }
    assert_eq!(set.len(), SET as usize);
    let mut seen = vec![false; SET as usize];
    let mut count = 0;
    while let Some((_pid, outcome)) = set.blocking_join_next_timeout(common::ms(60_000)) {
        let i = outcome.unwrap() as usize;
        assert!(!seen[i], "{i} twice");
        seen[i] = true;
        count += 1;
    }
    assert_eq!(count, SET);
    assert!(set.is_empty());
    assert_eq!(
        set.blocking_join_next(),
        None,
        "an empty set does not block"
    );
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
}

#[test]
fn a_join_set_is_polled_from_async_code() {
    let scheduler = Scheduler::builder().workers(2).build().unwrap();
    let mut set = JoinSet::new();
    // Miri interprets every instruction: a hundred there.
    let n: u64 = if cfg!(miri) { 100 } else { 1000 };
    for i in 0..n {
        scheduler.submit_into(&mut set, Job(i), "", ()).unwrap();
    }
    let (sum, _) = block_on(async {
        let mut sum = 0;
        while let Some((_, outcome)) = set.join_next().await {
            sum += outcome.unwrap();
        }
        sum
    });
    assert_eq!(sum, (n - 1) * n / 2);
    // A refused submit is not counted.
    scheduler.shutdown(common::ms(5_000));
    assert!(scheduler.submit_into(&mut set, Job(1), "", ()).is_err());
    assert!(set.is_empty());
}

#[test]
fn a_panicking_waker_does_not_take_a_worker_down() {
    /// A waker whose `wake` panics, on the worker that closes the process.
    struct Bomb;
    impl Wake for Bomb {
        fn wake(self: Arc<Self>) {
            panic!("the executor's waker panicked");
        }
    }
    let scheduler = Scheduler::builder().workers(1).build().unwrap();
    let server = scheduler.submit_joinable(Server, "serve", 0).unwrap();
    let inbox = scheduler.mailbox().unwrap();
    let waker = Waker::from(Arc::new(Bomb));
    let mut cx = Context::from_waker(&waker);
    let mut server = Box::pin(server);
    assert!(server.as_mut().poll(&mut cx).is_pending());
    assert!(inbox.poll_recv(&mut cx).is_pending());
    // Both wakes run on the one worker and panic there.
    let pid = inbox.pid();
    scheduler.send(pid, Msg::Value(1)).unwrap();
    scheduler.send(server.pid(), Msg::Stop).unwrap();
    // The worker lives on: the message was forwarded, the outcome kept.
    assert_eq!(inbox.recv_timeout(common::ms(60_000)), Ok(Msg::Value(1)));
    let (outcome, _) = block_on(server);
    assert_eq!(outcome, Ok(0));
    let after = scheduler.submit_joinable(Server, "serve", 0).unwrap();
    scheduler.send(after.pid(), Msg::Stop).unwrap();
    assert_eq!(common::joined(after), Ok(0), "the worker still steps");
    drop(inbox);
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
}

/// A receiver whose forwarded messages are still in its queue when it is
/// dropped: they go to `on_undelivered` (the promise of `Receiver`'s
/// docs), not down with it. The forward is seen done (the receiver's slot
/// stepped and back Idle) before the drop, so the message is in the queue,
/// not the mailbox.
#[test]
fn a_dropped_receiver_reports_what_its_queue_still_held() {
    let undelivered = Arc::new(Mutex::new(Vec::<Msg>::new()));
    let seen = Arc::clone(&undelivered);
    let scheduler = Scheduler::<Server>::builder()
        .workers(1)
        .on_undelivered(move |_, event| {
            if let Event::Message(m) = event {
                seen.lock().unwrap().push(m);
            }
        })
        .build()
        .unwrap();
    let inbox = scheduler.mailbox().unwrap();
    let pid = inbox.pid();
    scheduler.send(pid, Msg::Value(7)).unwrap();
    common::wait_until("the forward", || {
        scheduler
            .processes()
            .iter()
            .any(|p| p.pid == pid && p.steps >= 1 && p.state == stepsched::process::Lifecycle::Idle)
    });
    drop(inbox);
    common::wait_until("the receiver to end", || scheduler.live() == 0);
    assert_eq!(*undelivered.lock().unwrap(), [Msg::Value(7)]);
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
}

/// Calls that time out while the reply is on its way: every reply the
/// server sent is either the call's answer or given to `on_undelivered`
/// (the promise of `CallError::TimedOut`), whichever side of the drop it
/// lands on: in the receiver's queue, in its mailbox, forwarded after the
/// drop, or refused by a closed slot.
#[test]
#[cfg_attr(
    miri,
    ignore = "a books test of real timeouts around the round trip; the staged tests above run under Miri"
)]
fn a_reply_to_a_timed_out_call_is_answered_or_reported_never_lost() {
    const CALLS: u64 = if cfg!(miri) { 20 } else { 2_000 };
    let reported = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&reported);
    let scheduler = Scheduler::<Server>::builder()
        .workers(2)
        .on_undelivered(move |_, event| {
            if let Event::Message(Msg::Value(_)) = event {
                count.fetch_add(1, Ordering::SeqCst);
            }
        })
        .build()
        .unwrap();
    let server = scheduler.submit(Server, "serve", 0).unwrap();
    let mut answered = 0;
    let mut timed_out = 0;
    for i in 0..CALLS {
        // Timeouts from 0 to ~30 µs: around the round trip, so the reply
        // lands on every side of the drop.
        let timeout = std::time::Duration::from_nanos((i % 64) * 500);
        match scheduler.blocking_call(server, |me| Msg::Double { to: me, n: i }, timeout) {
            Ok(Msg::Value(v)) => {
                assert_eq!(v, 2 * i);
                answered += 1;
            }
            Err(CallError::TimedOut) => timed_out += 1,
            other => panic!("{other:?}"),
        }
    }
    scheduler.send(server, Msg::Stop).unwrap();
    common::wait_until("every reply to be accounted for", || {
        answered + reported.load(Ordering::SeqCst) as u64 >= CALLS
    });
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
    assert_eq!(
        answered + reported.load(Ordering::SeqCst) as u64,
        CALLS,
        "{answered} answered, {timed_out} timed out"
    );
}

/// A receiver dropped while a message for it waits to be forwarded (its
/// slot Ready, queued behind a step that holds the only worker): the drop
/// makes its next step its last, and what that step would forward goes
/// to `on_undelivered` (it went into the queue nobody reads).
#[test]
fn a_receiver_dropped_with_a_forward_pending_reports_the_message() {
    let undelivered = Arc::new(Mutex::new(Vec::<Msg>::new()));
    let seen = Arc::clone(&undelivered);
    let scheduler = Scheduler::<Server>::builder()
        .workers(1)
        .on_undelivered(move |_, event| {
            if let Event::Message(m) = event {
                seen.lock().unwrap().push(m);
            }
        })
        .build()
        .unwrap();
    let server = scheduler.submit(Server, "serve", 0).unwrap();
    let inbox = scheduler.mailbox().unwrap();
    let pid = inbox.pid();
    scheduler.send(server, Msg::Spin).unwrap();
    common::wait_until("the spin", || {
        scheduler
            .processes()
            .iter()
            .any(|p| p.pid == server && p.state == stepsched::process::Lifecycle::Running)
    });
    scheduler.send(pid, Msg::Value(9)).unwrap();
    drop(inbox);
    // Release: pairs with the step's Acquire load.
    SPIN_GATE.store(true, Ordering::Release);
    common::wait_until("the receiver to end", || scheduler.live() == 1);
    assert_eq!(*undelivered.lock().unwrap(), [Msg::Value(9)]);
    scheduler.send(server, Msg::Stop).unwrap();
    assert!(!scheduler.shutdown(common::ms(5_000)).timed_out);
}
