//! Scheduler tests that need its insides: a submit stopped half way.

use super::*;
use crate::process::{NoCommand, StepOutput};
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::time::{Duration, Instant};

/// On method "hold": its first step waits (busy, on its worker) until the
/// test opens the gate; any process finishes with 7.
struct Gated {
    started: Arc<AtomicUsize>,
    gate: Arc<AtomicBool>,
    hold: bool,
}

impl Process for Gated {
    type Input = ();
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = u32;
    type Error = ();

    fn init(&mut self, method: &str, _: ()) -> Result<(), ()> {
        self.hold = method == "hold";
        Ok(())
    }

    fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
        if self.hold {
            // Release/Acquire (std atomics, test only): the counter is a
            // rendezvous with the test thread, the gate its answer.
            self.started
                .fetch_add(1, std::sync::atomic::Ordering::Release);
            while !self.gate.load(std::sync::atomic::Ordering::Acquire) {
                std::thread::yield_now();
            }
        }
        out.done(7);
        Ok(())
    }
}

/// Polls `done` every millisecond; the 60 s bound turns a hang into a
/// failure and is no timing claim.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// docs/ARCHITECTURE.md, trap 12: a transient state is not work. A
/// producer preempted between its swap and its link
/// leaves the global queue "not empty" to `is_empty` but untakeable
/// (`Take::Inconsistent`). Both workers are awake (they were running the
/// two held steps), so one may spin and the other may not: it goes to park,
/// its re-check sees the queue non-empty and it withdraws. Going straight
/// back to park would be a hot loop through the sleepers lock (hundreds of
/// thousands of cancelled parks in the 50 ms hold; yielding after each
/// withdrawal alone still lets thousands through). A worker yields after
/// each of its first 16 withdrawals in a row; then, finding nothing it can
/// take, it backs off asleep until the producer's notify: 32 in all. The bound asserted is a
/// count, not a time: a slow machine only lowers it. The stalled process
/// must then run once linked: the back-off loses no wakeup.
#[test]
#[cfg_attr(miri, ignore)] // wall-clock hold; Miri would take minutes
fn a_half_done_push_makes_idle_workers_back_off_not_spin_on_the_sleepers_lock() {
    let scheduler = Scheduler::<Gated>::builder().workers(2).build().unwrap();
    let started = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(AtomicBool::new(false));
    let gated = || Gated {
        started: Arc::clone(&started),
        gate: Arc::clone(&gate),
        hold: false,
    };
    // Both workers busy, each in a held step.
    let held: Vec<_> = (0..2)
        .map(|_| scheduler.submit_joinable(gated(), "hold", ()).unwrap())
        .collect();
    wait_for("both held steps", || {
        started.load(std::sync::atomic::Ordering::Acquire) == 2
    });

    // A submit stopped after its claim: the first half of `submit_inner`.
    let shared = &*scheduler.shared;
    let cell = Arc::new(JoinCell::new());
    let joiner = crate::sched::outside::join_set::Joiner::One(Arc::clone(&cell));
    let slot = (shared.create(gated(), "run", (), Some(joiner), &Default::default(), None))
        .unwrap_or_else(|_| panic!("create"));
    let stalled = JoinHandle::new(slot.pid(), cell);
    let pending = shared.core.global.push_mid_link(Task::new(slot));

    let before = scheduler.stats().total().parks_cancelled;
    gate.store(true, std::sync::atomic::Ordering::Release);
    std::thread::sleep(Duration::from_millis(50));
    let cancelled = scheduler.stats().total().parks_cancelled - before;

    // The producer resumes: link, then the wake rule's notify.
    pending.link();
    shared.core.idle.notify_one();
    for handle in held {
        assert_eq!(
            handle.join_timeout(Duration::from_secs(60)).ok(),
            Some(Ok(7))
        );
    }
    let outcome = stalled.join_timeout(Duration::from_secs(60));
    assert_eq!(
        outcome.ok(),
        Some(Ok(7)),
        "the stalled submit runs once linked"
    );
    let report = scheduler.shutdown(Duration::from_secs(60));
    assert_eq!((report.stuck, report.timed_out), (0, false));
    eprintln!("cancelled parks during the 50 ms half-done push: {cancelled}");
    assert!(
        cancelled < 500,
        "{cancelled} cancelled parks in the hold: idle workers loop hot on a half-done push"
    );
}

/// A creator withdraws its process (shutdown began during its `init`)
/// while shutdown, whose scan may have seen it, waits for `live()` to reach
/// zero and then drains every mailbox (`report_stranded`). A `withdraw`
/// that popped the slot's mailbox itself would be a second consumer of one
/// mailbox, and nothing would order its pop before the drain's
/// (`Table::withdraw` gives the live count back with a Relaxed decrement).
/// The two never overlap in time
/// here, but Miri's and TSan's race detectors see the missing
/// happens-before on the mailbox's `tail`: with such a `withdraw`, Miri
/// reports "Data race detected" with seeds 1, 2 and 3 (with seed 0 the
/// withdrawal runs between the scan's push and its notify, whose Acquire
/// load of the state word then orders it; loom's model is the check that
/// never misses). So `withdraw` leaves the
/// mailbox to the drain, which reports the message sent to the withdrawn
/// process once and drops shutdown's own cancel. loom:
/// `loom-tests/tests/drain.rs`, `creator_withdrawing_as_shutdown_drains_leaves_the_mailbox_to_the_drain`.
#[test]
fn a_withdrawn_process_leaves_its_mailbox_to_the_stranded_events_report() {
    let reported = Arc::new(std::sync::Mutex::new(Vec::new()));
    let scheduler = {
        let reported = Arc::clone(&reported);
        Scheduler::<Gated>::builder()
            .workers(1)
            .count_queued_events(true)
            .on_undelivered(move |pid, event| {
                let cancel = matches!(event, Event::Cancel(_));
                reported.lock().unwrap().push((pid, cancel));
            })
            .build()
            .unwrap()
    };
    let shared = Arc::clone(&scheduler.shared);
    let process = Gated {
        started: Arc::new(AtomicUsize::new(0)),
        gate: Arc::new(AtomicBool::new(true)),
        hold: false,
    };
    // A creator past its insert: Ready, queued nowhere.
    let pid = (shared.create(process, "run", (), None, &Default::default(), None))
        .unwrap_or_else(|_| panic!("create"))
        .pid();
    // A sender that guessed the PID.
    assert!(matches!(
        shared.deliver(pid, Event::Message(()), Wake::Message, None),
        Ok(None)
    ));
    let creator = std::thread::spawn(move || {
        // Its `admits` refuses once shutdown has begun. It withdraws after
        // shutdown's scan has counted its cancel (the queued figure), so
        // that the scan saw it and the drain waits for it: what orders the
        // drain after the withdrawal is then the live count's Relaxed
        // decrement, which orders nothing.
        let slot = shared.core.table.get(pid.key()).expect("its slot");
        while slot.counts.queued() < 2 {
            std::thread::yield_now();
        }
        assert!(!shared.core.phase.admits());
        shared.withdraw(slot).is_some()
    });
    let report = scheduler.shutdown(Duration::from_secs(60));
    assert!(creator.join().unwrap(), "the process is handed back");
    assert_eq!((report.stuck, report.timed_out), (0, false));
    assert_eq!(
        *reported.lock().unwrap(),
        vec![(pid, false)],
        "the message reported once, the scheduler's cancel never"
    );
}

/// Yields one command in its first step and waits for it; ends with the
/// number of messages it was given beside the completion.
struct Waiter {
    asked: bool,
}

struct Ask;

impl crate::process::Command for Ask {
    fn kind(&self) -> &'static str {
        "ask"
    }
}

impl Process for Waiter {
    type Input = ();
    type Message = u32;
    type Command = Ask;
    type Reply = ();
    type Output = usize;
    type Error = ();

    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), ()> {
        let completed = (events.iter()).any(|e| matches!(e, Event::Completion { tag: 1, .. }));
        let messages = (events.iter())
            .filter(|e| matches!(e, Event::Message(_)))
            .count();
        events.clear();
        if completed {
            out.done(messages);
        } else {
            if !self.asked {
                self.asked = true;
                out.yield_command(1, Ask);
            }
            out.set_status(crate::process::Status::Wait);
        }
        Ok(())
    }
}

/// A message whose push is mid-link when the completion behind it wakes a
/// waiting process: the drain stops at the message, the step sees nothing
/// and waits again, and the message's notify (after its link) does not
/// wake a Blocked process. The process must still get its completion
/// (rather than wait for ever), with the message beside it, not before it.
#[test]
fn a_completion_behind_a_message_mid_link_reaches_the_waiting_process() {
    let (tx, completer) = std::sync::mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let s = Scheduler::<Waiter>::builder()
        .workers(1)
        .handler("ask", move |_: Ask, done| {
            let _ = tx.lock().unwrap().send(done);
        })
        .build()
        .unwrap();
    let job = s.submit_joinable(Waiter { asked: false }, "", ()).unwrap();
    let pid = job.pid();
    let slot = s.shared.core.table.get(pid.key()).unwrap();
    let done = completer.recv_timeout(Duration::from_secs(60)).unwrap();
    wait_for("the process to wait", || {
        slot.state.load().lifecycle() == crate::process::state::Lifecycle::Blocked
    });
    let mut nodes = crate::mpsc::NodeCache::new();
    let envelope = crate::sched::core::table::Envelope {
        generation: pid.generation(),
        counted: false,
        item: crate::sched::core::table::Item::Event(Event::Message(7)),
    };
    let mid = slot.events.push_mid_link(envelope, &mut nodes);
    done.succeed(()).unwrap();
    // The completion's step runs and sees nothing past the message: its
    // process waits again, Idle (right) or Blocked (the loss).
    wait_for("the completion's step", || {
        let steps = (s.processes().iter())
            .find(|p| p.pid == pid)
            .map_or(0, |p| p.steps);
        let now = slot.state.load().lifecycle();
        use crate::process::state::Lifecycle::{Ready, Running};
        steps >= 2 && now != Running && now != Ready
    });
    mid.link();
    if slot
        .state
        .notify(pid.generation(), crate::process::state::Wake::Message)
        == crate::process::state::Notify::Schedule
    {
        s.shared
            .core
            .schedule_remote(crate::sched::core::table::Task::new(slot));
    }
    let outcome = job.join_timeout(Duration::from_secs(60));
    assert_eq!(outcome.ok(), Some(Ok(1)), "the completion was lost");
    assert_eq!(s.shutdown(Duration::from_secs(60)).stuck, 0);
}
