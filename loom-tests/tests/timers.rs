//! loom models of timers (`src/sched/timer/`): a timer inserted while
//! every worker goes to sleep is never lost; a cancel racing the fire takes
//! the timer exactly once; a re-arm racing the fire is never named by the
//! old firing; a process that ends with a timer pending gets
//! no event and leaks none; a late timer never reaches the next process in
//! its slot.
//!
//! The wheel is the crate's `TimerWheel` (its mutex and its `next` word),
//! the parking the crate's `Idle`, the process the crate's `StateWord` and
//! a `Mailbox`, driven as `worker/timers.rs`, `worker.rs` (`park`) and
//! `Shared::deliver` drive them. Under loom a timed park never times out,
//! so "parks with a deadline that covers the timer" is modelled as the
//! worker seeing the timer in `next` and returning.
//!
//! Run (a few seconds in release):
//!
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!       cargo test -p stepsched-loom-tests --release --test timers`
#![cfg(loom)]

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use stepsched::__internals::{
    AfterStep, Idle, Notify, Park, Start, StateWord, TimerKind, TimerWheel, Wake, NEVER,
};
use stepsched::mpsc::Mailbox;
use stepsched::process::Lifecycle;

/// The worker side of `park` (`worker.rs`): register, fence (in
/// `prepare_park`), then read the wheels' `next`; a pending timer means a
/// park with a deadline (here: return, the timer is covered); none means
/// an indefinite park, which only a notify ends. Returns once covered.
fn worker_parks(idle: &Idle, wheel: &TimerWheel<()>, spinning: bool) {
    let mut spinning = spinning;
    loop {
        idle.prepare_park(0, spinning);
        spinning = false;
        if wheel.next() != NEVER {
            idle.cancel_park(0);
            return;
        }
        idle.park(0);
    }
}

/// The inserter side (`apply_timers`, `send_after`): insert, and if that
/// lowered the wheel's next expiration, notify (the wake rule).
fn insert_timer(idle: &Idle, wheel: &TimerWheel<()>) {
    let (_, lowered) = wheel
        .insert(0, 5, 1, 7, TimerKind::Timer, None)
        .expect("the wheel is open");
    assert!(lowered, "the first timer lowers `next`");
    idle.notify_one();
}

/// A timer inserted while the only worker goes to sleep: the worker either
/// sees it (and parks until its deadline) or is woken by the inserter.
/// Without the inserter's notify, or with the worker reading `next` before
/// its fence, loom finds the worker asleep for good (a deadlock).
#[test]
fn timer_inserted_while_worker_goes_to_sleep() {
    loom::model(|| {
        let idle = Arc::new(Idle::new(1));
        let wheel = Arc::new(TimerWheel::<()>::new());
        let inserter = {
            let (idle, wheel) = (idle.clone(), wheel.clone());
            thread::spawn(move || insert_timer(&idle, &wheel))
        };
        worker_parks(&idle, &wheel, false);
        inserter.join().unwrap();
        assert_eq!(idle.counts(), (0, 0), "the idle counts balance");
    });
}

/// The same with the worker a spinner when it goes to sleep: an inserter
/// that sees it spinning wakes no one, and the spinner's own re-check
/// after its fence must see the timer.
#[test]
fn timer_inserted_while_a_spinner_goes_to_sleep() {
    loom::model(|| {
        let idle = Arc::new(Idle::new(2));
        assert!(idle.try_start_spinning());
        let wheel = Arc::new(TimerWheel::<()>::new());
        let inserter = {
            let (idle, wheel) = (idle.clone(), wheel.clone());
            thread::spawn(move || insert_timer(&idle, &wheel))
        };
        worker_parks(&idle, &wheel, true);
        inserter.join().unwrap();
        assert_eq!(idle.counts(), (0, 0));
    });
}

/// A cancel (the process's worker) racing the fire (another worker, the
/// timer due): exactly one of them takes the entry, and the wheel is empty
/// after.
#[test]
fn cancel_racing_fire_takes_the_timer_exactly_once() {
    loom::model(|| {
        let wheel = Arc::new(TimerWheel::<()>::new());
        let (key, _) = wheel.insert(0, 5, 1, 7, TimerKind::Timer, None).unwrap();
        let firer = {
            let wheel = wheel.clone();
            thread::spawn(move || {
                let (mut fired, mut messages) = (Vec::new(), Vec::new());
                // `try_lock`, as a spinner fires another worker's wheel; a
                // busy lock means nothing fired here.
                let _ = wheel.fire(10, false, &mut fired, &mut messages);
                fired.len()
            })
        };
        let cancelled = usize::from(wheel.cancel(key).is_some());
        let fired = firer.join().unwrap();
        // The firer may have found the lock busy and the cancel then found
        // the timer: both paths leave exactly one owner, or the firer
        // fires on its next look.
        let (mut late, mut messages) = (Vec::new(), Vec::new());
        let _ = wheel.fire(10, true, &mut late, &mut messages);
        assert_eq!(cancelled + fired + late.len(), 1, "taken exactly once");
        assert_eq!(wheel.next(), NEVER);
    });
}

/// A timer re-armed with its tag (its worker: cancel, then insert anew)
/// while another worker fires it: either the cancel takes it and nothing
/// fires, or it fires first, and its firing names the old entry's key,
/// never the new arming's, which the process's record holds, so the
/// holder's check (`Record::armed_as`) drops it and waits for the new one.
#[test]
fn a_re_armed_timer_is_never_named_by_the_old_firing() {
    loom::model(|| {
        let wheel = Arc::new(TimerWheel::<()>::new());
        let (old, _) = wheel.insert(0, 5, 1, 7, TimerKind::Timer, None).unwrap();
        let firer = {
            let wheel = wheel.clone();
            thread::spawn(move || {
                let (mut fired, mut messages) = (Vec::new(), Vec::new());
                wheel.fire(10, true, &mut fired, &mut messages);
                fired
            })
        };
        // The holder's step re-arms tag 7, due at tick 50.
        let cancelled = wheel.cancel(old).is_some();
        let (new, _) = wheel.insert(0, 50, 1, 7, TimerKind::Timer, None).unwrap();
        let fired = firer.join().unwrap();
        assert_ne!(new, old, "a new arming gets a new key");
        match (cancelled, fired.as_slice()) {
            (true, []) => {}
            (false, [firing]) => assert_eq!(firing.key, old, "names the old arming"),
            other => panic!("taken twice or never: {other:?}"),
        }
        let (mut late, mut messages) = (Vec::new(), Vec::new());
        wheel.fire(50, true, &mut late, &mut messages);
        let keys: Vec<_> = late.iter().map(|f| f.key).collect();
        assert_eq!(keys, vec![new], "the new arming fires, named as itself");
    });
}

/// A process slot in miniature: its state word and mailbox, and the
/// delivery `Shared::deliver` makes (check, push, notify).
struct Slot {
    state: StateWord,
    events: Mailbox<u32>,
    /// Events a late deliverer's sweep took (`Shared::sweep`). Relaxed:
    /// read after the joins.
    swept: AtomicUsize,
}

impl Slot {
    /// `Shared::deliver` of a timer's event to generation `generation`:
    /// refused if the slot holds another generation or an ended process;
    /// else pushed (tagged with the generation) and notified.
    fn deliver(&self, generation: u32) -> Option<Notify> {
        let now = self.state.load();
        if now.generation() != generation
            || matches!(now.lifecycle(), Lifecycle::Complete | Lifecycle::Free)
        {
            return None;
        }
        self.events.push(generation);
        let told = self.state.notify(generation, Wake::Completion);
        if told == Notify::Sweep {
            // The slot was freed meanwhile: its mailbox is ours to drain
            // until `end_sweep` finds no late mark (`shared/late.rs`).
            loop {
                // SAFETY: sweeping: the only consumer until `end_sweep`.
                while unsafe { self.events.pop() }.is_some() {
                    self.swept.fetch_add(1, Ordering::Relaxed);
                }
                if self.state.end_sweep() {
                    break;
                }
            }
        }
        Some(told)
    }

    /// `Local::free_slot`: frees the slot, draining again while its word is
    /// marked late; returns what the second drains took.
    fn free_slot(&self) -> usize {
        let mut drained = 0;
        while self.state.free().is_err() {
            // SAFETY: still Complete: the closer is the only consumer.
            while unsafe { self.events.pop() }.is_some() {
                drained += 1;
            }
        }
        drained
    }

    /// `Table::insert`'s activation: it would pass over a slot a late
    /// sender is sweeping; with one slot here, it waits for the sweep.
    fn activate(&self) -> u32 {
        loop {
            match self.state.try_activate() {
                Some(generation) => return generation,
                None => thread::yield_now(),
            }
        }
    }
}

/// A process with a timer pending ends (its worker cancels the timer,
/// completes the process, drains its mailbox, frees the slot) while
/// another worker fires the timer and delivers it. The process is never
/// queued again, and the timer is either cancelled or its event is drained
/// by the close or left (tagged with the old generation) for the slot's
/// next holder to drop: never both, never lost.
#[test]
fn process_ending_with_a_timer_pending_gets_no_event() {
    loom::model(|| {
        let slot = Arc::new(Slot {
            state: StateWord::new(),
            events: Mailbox::new(),
            swept: AtomicUsize::new(0),
        });
        let generation = slot.state.activate();
        assert_eq!(slot.state.start(), Start::Step { last: false });
        let wheel = Arc::new(TimerWheel::<()>::new());
        let pid = u64::from(generation);
        let (key, _) = wheel.insert(0, 5, pid, 7, TimerKind::Timer, None).unwrap();
        let firer = {
            let (slot, wheel) = (slot.clone(), wheel.clone());
            thread::spawn(move || {
                let (mut fired, mut messages) = (Vec::new(), Vec::new());
                wheel.fire(10, true, &mut fired, &mut messages);
                let delivered = fired
                    .iter()
                    .filter_map(|timer| slot.deliver(timer.pid as u32))
                    .collect::<Vec<_>>();
                (fired.len(), delivered)
            })
        };
        // The process's last step ends it: `close` in `worker/step.rs`.
        let cancelled = usize::from(wheel.cancel(key).is_some());
        slot.state.complete();
        let mut drained = 0;
        // SAFETY: this thread holds the process (Complete): the only
        // consumer of its mailbox.
        while unsafe { slot.events.pop() }.is_some() {
            drained += 1;
        }
        drained += slot.free_slot();
        let (fired, delivered) = firer.join().unwrap();
        assert_eq!(cancelled + fired, 1, "cancelled or fired, once");
        assert!(
            !delivered.contains(&Notify::Schedule),
            "a running or ended process is never queued by its timer"
        );
        // SAFETY: both threads are done: the only consumer.
        let mut left = 0;
        while let Some(generation_sent) = unsafe { slot.events.pop() } {
            assert_eq!(generation_sent, generation, "tagged for the old process");
            left += 1;
        }
        let swept = slot.swept.load(Ordering::Relaxed);
        assert_eq!(
            drained + swept + left,
            delivered.len(),
            "no event lost or doubled"
        );
    });
}

/// The slot is reused while a late timer of its old process is delivered:
/// the new process (Idle after its first step) is never woken by it, and
/// anything pushed carries the old generation, which the new holder's
/// `accept` drops.
#[test]
fn late_timer_never_reaches_the_next_process_in_the_slot() {
    loom::model(|| {
        let slot = Arc::new(Slot {
            state: StateWord::new(),
            events: Mailbox::new(),
            swept: AtomicUsize::new(0),
        });
        let old = slot.state.activate();
        assert_eq!(slot.state.start(), Start::Step { last: false });
        assert_eq!(slot.state.end_step(Park::Idle), AfterStep::Parked);
        let firer = {
            let slot = slot.clone();
            thread::spawn(move || slot.deliver(old))
        };
        // The old process is terminated and closed, the slot reused.
        let closed = slot.state.terminate(old);
        let new = if closed == Notify::Schedule {
            assert_eq!(slot.state.start(), Start::Close);
            slot.state.complete();
            let _ = slot.free_slot();
            let new = slot.activate();
            assert_eq!(slot.state.start(), Start::Step { last: false });
            // Its first step: drains old events (dropped by generation).
            // SAFETY: Running: the only consumer.
            while let Some(sent) = unsafe { slot.events.pop() } {
                assert_eq!(sent, old, "only the old process's events");
            }
            assert_eq!(slot.state.end_step(Park::Idle), AfterStep::Parked);
            Some(new)
        } else {
            // The timer woke the old process first; it then runs and ends
            // (not modelled further).
            None
        };
        let delivered = firer.join().unwrap();
        if let Some(new) = new {
            let state = slot.state.load();
            assert_eq!(state.generation(), new);
            if delivered == Some(Notify::Schedule) {
                unreachable!("the close above found the process Idle");
            }
            assert_eq!(
                state.lifecycle(),
                Lifecycle::Idle,
                "the new process is not woken by the old timer"
            );
            // SAFETY: both threads are done: the only consumer.
            while let Some(sent) = unsafe { slot.events.pop() } {
                assert_eq!(sent, old);
            }
        }
    });
}
