//! Promises of the `JoinHandle` and `JoinSet` docs that had no test
//! (`docs/proof/promises.md`), each test named for the sentence it holds.
//!
//! ```text
//! cargo test --test promises_join
//! ```

mod common;
use common::wait_until;

use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use stepsched::process::{Event, NoCommand, Pid, Process, Status, StepOutput};
use stepsched::sched::{JoinSet, Scheduler};

/// A waker that does nothing (`Waker::noop` is newer than the crate's
/// `rust-version`).
fn noop_waker() -> Waker {
    struct Noop;
    impl Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }
    Waker::from(Arc::new(Noop))
}

/// An output that counts its drops.
#[derive(Debug)]
struct Token(u64, Arc<AtomicUsize>);

impl Drop for Token {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

/// Idles until it is sent a token, and ends with it.
struct Gate;

impl Process for Gate {
    type Input = ();
    type Message = Token;
    type Command = NoCommand;
    type Reply = ();
    type Output = Token;
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
            if let Event::Message(token) = event {
                out.done(token);
                return Ok(());
            }
        }
        out.set_status(Status::Idle);
        Ok(())
    }
}

/// What `on_complete` was given: each PID, with its token's number.
type Completed = Arc<Mutex<Vec<(Pid, u64)>>>;

/// A scheduler that records what `on_complete` is given.
fn scheduler() -> (Scheduler<Gate>, Completed) {
    let completed = Arc::new(Mutex::new(Vec::new()));
    let hook = Arc::clone(&completed);
    let s = Scheduler::builder()
        .workers(1)
        .on_complete(move |pid, outcome| {
            let value = outcome.as_ref().map_or(u64::MAX, |t: &Token| t.0);
            hook.lock().unwrap().push((pid, value));
        })
        .build()
        .unwrap();
    (s, completed)
}

/// Runs `f` on a thread of its own and waits at most 60 s for it (a
/// liveness guard: a call that should return at once must not hang the
/// test). `Err` if it panicked.
fn guarded<T: Send + 'static>(
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> thread::Result<T> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(panic::catch_unwind(AssertUnwindSafe(f)));
    });
    rx.recv_timeout(common::ms(60_000))
        .unwrap_or_else(|_| panic!("{what} did not return"))
}

/// "Dropping it does not affect the process." (src/sched/outside/join.rs:93)
#[test]
fn a_dropped_join_handle_does_not_affect_its_process() {
    let (s, completed) = scheduler();
    let drops = Arc::new(AtomicUsize::new(0));
    let handle = s.submit_joinable(Gate, "run", ()).unwrap();
    let pid = handle.pid();
    drop(handle);
    s.send(pid, Token(7, Arc::clone(&drops))).unwrap();
    wait_until("the process to end", || s.live() == 0);
    assert_eq!(*completed.lock().unwrap(), [(pid, 7)]);
    wait_until("its unclaimed outcome to be dropped", || {
        drops.load(Ordering::SeqCst) == 1
    });
    s.shutdown(Duration::from_secs(1));
}

/// "# Panics: If the outcome was already taken by polling the handle as a
/// future." (src/sched/outside/join.rs:158), and "# Panics: If polled again after
/// it returned `Ready`." (src/sched/outside/join.rs:222)
#[test]
fn a_join_handle_polled_to_ready_panics_when_joined_or_polled_again() {
    let (s, _) = scheduler();
    let drops = Arc::new(AtomicUsize::new(0));
    let mut handle = s.submit_joinable(Gate, "run", ()).unwrap();
    s.send(handle.pid(), Token(1, Arc::clone(&drops))).unwrap();
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    wait_until("the handle to be ready", || {
        match Pin::new(&mut handle).poll(&mut cx) {
            Poll::Ready(outcome) => {
                assert_eq!(outcome.unwrap().0, 1);
                true
            }
            Poll::Pending => false,
        }
    });
    let again = panic::catch_unwind(AssertUnwindSafe(|| Pin::new(&mut handle).poll(&mut cx)));
    assert!(again.is_err(), "a second poll after Ready panics");
    let joined = guarded("join after a poll took the outcome", move || handle.join());
    assert!(joined.is_err(), "join panics, it does not wait");
    s.shutdown(Duration::from_secs(1));
}

/// "Processes submitted into the set whose outcome has not been taken."
/// (src/sched/outside/join.rs:344); "Whether every outcome has been taken (or none
/// was submitted)." (join.rs:349); "`None` if none has ended since the last
/// one taken." (join.rs:361); "`None` at once if the set is empty."
/// (join.rs:368); "`Ready(None)` if the set is empty" (join.rs:419)
#[test]
fn an_empty_join_set_answers_none_at_once() {
    let (s, _) = scheduler();
    let drops = Arc::new(AtomicUsize::new(0));
    let mut set = JoinSet::<Gate>::new();
    assert_eq!((set.len(), set.is_empty()), (0, true));
    assert!(set.try_join_next().is_none());
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    assert!(matches!(set.poll_join_next(&mut cx), Poll::Ready(None)));
    let (set, next) = guarded("join_next on an empty set", move || {
        let next = set.blocking_join_next().map(|(pid, _)| pid);
        (set, next)
    })
    .unwrap();
    let mut set = set;
    assert_eq!(next, None);

    let pid = s.submit_into(&mut set, Gate, "run", ()).unwrap();
    assert_eq!((set.len(), set.is_empty()), (1, false));
    assert!(set.try_join_next().is_none(), "still running");
    assert!(matches!(set.poll_join_next(&mut cx), Poll::Pending));
    s.send(pid, Token(2, Arc::clone(&drops))).unwrap();
    wait_until("the process to end", || s.live() == 0);
    let (ended, outcome) = set.try_join_next().expect("it ended");
    assert_eq!((ended, outcome.unwrap().0), (pid, 2));
    assert_eq!((set.len(), set.is_empty()), (0, true));
    let (_, next) = guarded("join_next on a set emptied by taking", move || {
        let next = set.blocking_join_next().map(|(pid, _)| pid);
        (set, next)
    })
    .unwrap();
    assert_eq!(next, None);
    s.shutdown(Duration::from_secs(1));
}

/// "Dropping the set does not affect its processes; their outcomes are
/// then dropped as they end." (src/sched/outside/join.rs:284)
#[test]
fn a_dropped_join_set_does_not_affect_its_processes() {
    let (s, completed) = scheduler();
    let drops = Arc::new(AtomicUsize::new(0));
    let mut set = JoinSet::new();
    let a = s.submit_into(&mut set, Gate, "run", ()).unwrap();
    let b = s.submit_into(&mut set, Gate, "run", ()).unwrap();
    drop(set);
    s.send(a, Token(1, Arc::clone(&drops))).unwrap();
    s.send(b, Token(2, Arc::clone(&drops))).unwrap();
    wait_until("both to end", || s.live() == 0);
    let mut ended = completed.lock().unwrap().clone();
    ended.sort_unstable();
    assert_eq!(ended, [(a, 1), (b, 2)]);
    wait_until("both outcomes to be dropped", || {
        drops.load(Ordering::SeqCst) == 2
    });
    s.shutdown(Duration::from_secs(1));
}

/// "their outcomes are then dropped as they end" (src/sched/outside/join.rs:285):
/// the outcome of a process of a dropped set is dropped when it ends, not
/// kept until the last process of the set ends.
#[test]
fn the_outcome_of_a_dropped_sets_process_is_dropped_as_it_ends() {
    let (s, _) = scheduler();
    let drops = Arc::new(AtomicUsize::new(0));
    let mut set = JoinSet::new();
    let first = s.submit_into(&mut set, Gate, "run", ()).unwrap();
    let last = s.submit_into(&mut set, Gate, "run", ()).unwrap();
    drop(set);
    s.send(first, Token(1, Arc::clone(&drops))).unwrap();
    wait_until("the first to end", || s.live() == 1);
    // Bounded by the liveness guard only: the drop comes with the close.
    wait_until("the first outcome to be dropped", || {
        drops.load(Ordering::SeqCst) == 1
    });
    s.send(last, Token(2, Arc::clone(&drops))).unwrap();
    wait_until("the last outcome to be dropped", || {
        drops.load(Ordering::SeqCst) == 2
    });
    s.shutdown(Duration::from_secs(1));
}
