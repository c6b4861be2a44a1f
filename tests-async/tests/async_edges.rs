//! The async edges inside tokio runtimes, each test in a multi-thread and a
//! current-thread runtime: the async `call` (reply, dropped for the
//! runtime's timeout, the scheduler shutting down meanwhile), `send_async`
//! waiting for room (it completes when the mailbox drains; many senders on
//! a bound of 1 all delivered, each exactly once, in each sender's order),
//! `JoinSet::join_next` (completion order, `None` when empty), and
//! `tokio::select!` dropping the losing future (nothing leaked, nothing
//! lost).
//!
//! ```text
//! cargo test -p stepsched-async-tests
//! ```

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stepsched::process::{Event, NoCommand, Pid, Process, Status, StepOutput};
use stepsched::sched::{CallError, JoinSet, Scheduler, SendError};

/// The liveness guard of every wait: a hang becomes a failure; no timing
/// claim.
const GUARD: Duration = Duration::from_secs(60);

/// What the tests share with their processes.
#[derive(Default)]
struct Board {
    /// `Hold` spins until it opens.
    gate: AtomicBool,
    /// Set by `Hold` once its step runs.
    holding: AtomicBool,
    /// `Silent` requests received.
    silent: AtomicUsize,
    /// Every `Note` received, in order.
    notes: Mutex<Vec<(u32, u32)>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Msg {
    /// Reply `Answer(2n)` to the PID.
    Ask(Pid, u64),
    Answer(u64),
    /// Never answered.
    Silent,
    /// Spin in the step until the board's gate opens.
    Hold,
    /// `(sender, sequence number)`, recorded.
    Note(u32, u32),
    /// End.
    Stop,
}

struct Server(Arc<Board>);

impl Process for Server {
    type Input = ();
    type Message = Msg;
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
        out.set_status(Status::Idle);
        for event in events.drain(..) {
            let message = match event {
                Event::Message(message) => message,
                // Shutdown's cancel: end at once.
                Event::Cancel(_) => Msg::Stop,
                _ => continue,
            };
            match message {
                Msg::Ask(to, n) => out.send(to, Msg::Answer(2 * n)),
                Msg::Silent => {
                    self.0.silent.fetch_add(1, Ordering::SeqCst);
                }
                Msg::Hold => {
                    self.0.holding.store(true, Ordering::SeqCst);
                    while !self.0.gate.load(Ordering::SeqCst) {
                        std::thread::yield_now();
                    }
                }
                Msg::Note(from, n) => self.0.notes.lock().unwrap().push((from, n)),
                Msg::Stop => out.done(()),
                Msg::Answer(_) => {}
            }
        }
        Ok(())
    }
}

fn scheduler(capacity: u32) -> Arc<Scheduler<Server>> {
    let mut builder = Scheduler::builder().workers(2);
    if capacity > 0 {
        builder = builder.mailbox_capacity(capacity);
    }
    Arc::new(builder.build().expect("a scheduler"))
}

/// Waits (yielding to the runtime) until `done`, at most `GUARD`.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let waited = tokio::time::timeout(GUARD, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "never: {what}");
}

/// A server whose step is held (spinning on the board's gate) with its
/// bounded mailbox of 1 full: a send now is refused with `Full` until the
/// gate opens.
async fn held_and_full(s: &Scheduler<Server>, board: &Arc<Board>) -> Pid {
    let pid = s.submit(Server(Arc::clone(board)), "", ()).unwrap();
    s.send(pid, Msg::Hold).unwrap();
    until("the hold's step runs", || {
        board.holding.load(Ordering::SeqCst)
    })
    .await;
    s.send(pid, Msg::Note(0, 0)).expect("the one place");
    assert!(matches!(
        s.send(pid, Msg::Note(0, 1)),
        Err(SendError::Full(_))
    ));
    pid
}

macro_rules! both_runtimes {
    ($($name:ident => $body:ident;)*) => {
        mod multi_thread {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$body().await
                }
            )*
        }
        mod current_thread {
            $(
                #[tokio::test(flavor = "current_thread")]
                async fn $name() {
                    super::$body().await
                }
            )*
        }
    };
}

both_runtimes! {
    an_async_call_gets_its_reply => call_reply;
    an_async_call_dropped_for_a_timeout_frees_its_receiver_slot => call_dropped;
    an_async_call_pending_at_shutdown_ends_with_shut_down => call_shutdown;
    an_async_call_of_a_finished_process_hands_the_request_back => call_refused;
    send_async_completes_when_the_full_mailbox_drains => send_drains;
    send_async_of_many_senders_on_a_bound_of_one_delivers_each_once_in_order => send_many;
    send_async_dropped_by_select_sends_nothing_and_leaves_no_waiter => send_dropped;
    join_next_gives_outcomes_in_completion_order_then_none => join_order;
    join_next_dropped_by_select_loses_no_outcome => join_dropped;
    a_call_dropped_by_select_leaves_live_at_its_count => call_select;
}

async fn call_reply() {
    let s = scheduler(0);
    let server = s.submit(Server(Arc::default()), "", ()).unwrap();
    let before = s.live();
    for n in 0..100 {
        let reply = s.call(server, |me| Msg::Ask(me, n)).await;
        assert_eq!(reply, Ok(Msg::Answer(2 * n)));
    }
    let s2 = Arc::clone(&s);
    let task = tokio::spawn(async move { s2.call(server, |me| Msg::Ask(me, 21)).await });
    assert_eq!(task.await.unwrap(), Ok(Msg::Answer(42)));
    until("the calls' receivers end", || s.live() == before).await;
    assert_eq!(s.shutdown(GUARD).stuck, 0);
}

async fn call_dropped() {
    let s = scheduler(0);
    let board = Arc::new(Board::default());
    let server = s.submit(Server(Arc::clone(&board)), "", ()).unwrap();
    let before = s.live();
    let timed_out =
        tokio::time::timeout(Duration::from_millis(10), s.call(server, |_| Msg::Silent)).await;
    assert!(timed_out.is_err(), "a silent server replied");
    assert_eq!(
        board.silent.load(Ordering::SeqCst),
        1,
        "the request was sent"
    );
    until("the dropped call's receiver ends", || s.live() == before).await;
    assert_eq!(s.shutdown(GUARD).stuck, 0);
}

async fn call_shutdown() {
    let s = scheduler(0);
    let board = Arc::new(Board::default());
    let server = s.submit(Server(Arc::clone(&board)), "", ()).unwrap();
    let s2 = Arc::clone(&s);
    let task = tokio::spawn(async move { s2.call(server, |_| Msg::Silent).await });
    until("the request arrives", || {
        board.silent.load(Ordering::SeqCst) == 1
    })
    .await;
    let report = tokio::task::spawn_blocking({
        let s = Arc::clone(&s);
        move || s.shutdown(GUARD)
    })
    .await
    .unwrap();
    assert_eq!(report.stuck, 0, "{report:?}");
    let ended = tokio::time::timeout(GUARD, task)
        .await
        .expect("the call ended");
    assert_eq!(ended.unwrap(), Err(CallError::ShutDown));
}

async fn call_refused() {
    let s = scheduler(0);
    let server = s.submit_joinable(Server(Arc::default()), "", ()).unwrap();
    let pid = server.pid();
    s.send(pid, Msg::Stop).unwrap();
    assert_eq!(server.await, Ok(()));
    let before = s.live();
    let refused = s.call(pid, |me| Msg::Ask(me, 1)).await;
    match refused {
        Err(CallError::Send(SendError::Finished(Msg::Ask(_, 1)))) => {}
        other => panic!("not handed back: {other:?}"),
    }
    until("the refused call's receiver ends", || s.live() == before).await;
}

async fn send_drains() {
    let s = scheduler(1);
    let board = Arc::new(Board::default());
    let pid = held_and_full(&s, &board).await;
    let s2 = Arc::clone(&s);
    let mut sending = tokio::spawn(async move { s2.send_async(pid, Msg::Note(1, 0)).await });
    // The mailbox stays full while the gate is closed: it cannot complete.
    let early = tokio::time::timeout(Duration::from_millis(20), &mut sending).await;
    assert!(early.is_err(), "completed while the mailbox was full");
    board.gate.store(true, Ordering::SeqCst);
    let sent = tokio::time::timeout(GUARD, sending)
        .await
        .expect("woken by the drain");
    assert_eq!(sent.unwrap(), Ok(()));
    s.send_async(pid, Msg::Stop).await.unwrap();
    assert_eq!(s.shutdown(GUARD).stuck, 0);
    assert_eq!(*board.notes.lock().unwrap(), [(0, 0), (1, 0)]);
}

async fn send_many() {
    const SENDERS: u32 = 8;
    const EACH: u32 = if cfg!(miri) { 5 } else { 300 };
    let s = scheduler(1);
    let board = Arc::new(Board::default());
    let sink = s
        .submit_joinable(Server(Arc::clone(&board)), "", ())
        .unwrap();
    let pid = sink.pid();
    let senders: Vec<_> = (0..SENDERS)
        .map(|from| {
            let s = Arc::clone(&s);
            tokio::spawn(async move {
                for n in 0..EACH {
                    s.send_async(pid, Msg::Note(from, n))
                        .await
                        .expect("room comes");
                }
            })
        })
        .collect();
    for sender in senders {
        tokio::time::timeout(GUARD, sender)
            .await
            .expect("every send completes")
            .unwrap();
    }
    s.send_async(pid, Msg::Stop).await.unwrap();
    assert_eq!(
        tokio::time::timeout(GUARD, sink).await.expect("it ends"),
        Ok(())
    );
    let notes = board.notes.lock().unwrap();
    assert_eq!(notes.len(), (SENDERS * EACH) as usize, "each exactly once");
    for from in 0..SENDERS {
        let mine: Vec<u32> = notes
            .iter()
            .filter(|(f, _)| *f == from)
            .map(|(_, n)| *n)
            .collect();
        assert_eq!(
            mine,
            (0..EACH).collect::<Vec<_>>(),
            "sender {from} out of order"
        );
    }
}

async fn send_dropped() {
    let s = scheduler(1);
    let board = Arc::new(Board::default());
    let pid = held_and_full(&s, &board).await;
    tokio::select! {
        _ = s.send_async(pid, Msg::Note(9, 9)) => panic!("sent into a full mailbox"),
        _ = tokio::time::sleep(Duration::from_millis(10)) => {}
    }
    board.gate.store(true, Ordering::SeqCst);
    // A later sender still gets in, and the dropped message never does.
    s.send_async(pid, Msg::Note(1, 0)).await.unwrap();
    s.send_async(pid, Msg::Stop).await.unwrap();
    assert_eq!(s.shutdown(GUARD).stuck, 0);
    assert_eq!(*board.notes.lock().unwrap(), [(0, 0), (1, 0)]);
}

async fn join_order() {
    let s = scheduler(0);
    let mut set = JoinSet::new();
    assert!(set.join_next().await.is_none(), "an empty set");
    let pids: Vec<Pid> = (0..3)
        .map(|_| {
            s.submit_into(&mut set, Server(Arc::default()), "", ())
                .unwrap()
        })
        .collect();
    for i in [2, 0, 1] {
        s.send(pids[i], Msg::Stop).unwrap();
        let next = tokio::time::timeout(GUARD, set.join_next())
            .await
            .expect("it ended");
        let (pid, outcome) = next.expect("one left");
        assert_eq!((pid, outcome), (pids[i], Ok(())));
    }
    assert!(set.join_next().await.is_none(), "emptied");
    assert!(set.is_empty());
}

async fn join_dropped() {
    let s = scheduler(0);
    let mut set = JoinSet::new();
    let pid = s
        .submit_into(&mut set, Server(Arc::default()), "", ())
        .unwrap();
    tokio::select! {
        _ = set.join_next() => panic!("joined a running process"),
        _ = tokio::time::sleep(Duration::from_millis(10)) => {}
    }
    assert_eq!(set.len(), 1, "the dropped future took nothing");
    s.send(pid, Msg::Stop).unwrap();
    let next = tokio::time::timeout(GUARD, set.join_next())
        .await
        .expect("it ended");
    assert_eq!(next, Some((pid, Ok(()))));
}

async fn call_select() {
    let s = scheduler(0);
    let board = Arc::new(Board::default());
    let server = s.submit(Server(Arc::clone(&board)), "", ()).unwrap();
    let before = s.live();
    for _ in 0..10 {
        tokio::select! {
            reply = s.call(server, |_| Msg::Silent) => panic!("a silent server replied: {reply:?}"),
            _ = tokio::time::sleep(Duration::from_millis(2)) => {}
        }
    }
    until("every dropped call's receiver ends", || s.live() == before).await;
    assert_eq!(s.shutdown(GUARD).stuck, 0);
}
