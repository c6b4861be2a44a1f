//! loom models of the process table (`src/sched/core/table.rs`) on its own code:
//! the pages and the tagged Treiber free list of `src/sched/core/slab.rs`, and
//! each slot's state word (`src/process/state/`), whose generation tells
//! a slot's incarnations apart. A slot is handed out to one holder at a
//! time and never lost; a stale PID never reaches the slot's next process.
//!
//! The slot here is the table's in miniature: the state word, the free-list
//! link, and a body that only the holder may touch (a loom `UnsafeCell`, so
//! two holders at once fail the model as a data race, besides `activate`'s
//! own check that the slot it is given is free). Under loom the first page
//! holds two slots, so the models also allocate pages, and race to.
//!
//! Run (a few seconds in release, at 3 preemptions):
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p stepsched-loom-tests --release --test table
//! ```
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicU32, Ordering};
use loom::sync::Arc;
use loom::thread;
use stepsched::__internals::{AfterStep, FreeList, Notify, Pages, Park, Start, StateWord, Wake};
use stepsched::process::Lifecycle;

/// A process slot in miniature (`table::Slot`).
struct Slot {
    state: StateWord,
    next_free: AtomicU32,
    /// The process: written by whoever holds the slot.
    body: UnsafeCell<u32>,
    index: u32,
}

impl Slot {
    fn new(index: u32) -> Self {
        Slot {
            state: StateWord::new(),
            next_free: AtomicU32::new(0),
            body: UnsafeCell::new(0),
            index,
        }
    }
}

/// The table in miniature (`table::Table`): pages, free list, fresh counter.
struct Table {
    pages: Pages<Slot>,
    free: FreeList,
    fresh: AtomicU32,
}

impl Table {
    fn new() -> Arc<Table> {
        Arc::new(Table {
            pages: Pages::new(),
            free: FreeList::new(),
            fresh: AtomicU32::new(0),
        })
    }

    fn slot(&self, index: u32) -> &Slot {
        self.pages.get(index).expect("handed-out slots have pages")
    }

    /// `Table::insert`: a free slot (from the free list, else a fresh
    /// index, allocating its page), holding `process`, made Ready. Returns
    /// the slot and the generation of the new PID.
    fn insert(&self, process: u32) -> (&Slot, u32) {
        let next = |i| &self.slot(i).next_free;
        let slot = match self.free.pop(next) {
            Some(index) => self.slot(index),
            None => self.fresh(),
        };
        Self::fill(slot, process);
        if let Some(generation) = slot.state.try_activate() {
            return (slot, generation);
        }
        // `insert_elsewhere`: a late sender is sweeping it; it goes back to
        // the free list, and a fresh slot takes the process.
        Self::fill(slot, 0);
        self.free.push_chain(&[slot.index], next);
        let fresh = self.fresh();
        Self::fill(fresh, process);
        let generation = fresh
            .state
            .try_activate()
            .expect("a fresh slot is never swept");
        (fresh, generation)
    }

    /// `Table::fresh_slot`.
    fn fresh(&self) -> &Slot {
        // Relaxed, as in `Table::insert`: only uniqueness matters.
        let index = self.fresh.fetch_add(1, Ordering::Relaxed);
        self.pages.page(index, Slot::new)
    }

    /// `Table::fill`: the slot is free and ours until `try_activate`
    /// publishes it.
    fn fill(slot: &Slot, process: u32) {
        slot.body.with_mut(|body| {
            // SAFETY: no one else holds the slot (what the model checks).
            unsafe { *body = process }
        });
    }

    /// The worker's close of the process it holds, and `Table::remove`
    /// (with the worker's cache spilled at once: one-slot chains).
    fn close(&self, slot: &Slot) {
        slot.state.complete();
        slot.body.with_mut(|body| {
            // SAFETY: we hold the slot (Complete, not yet freed).
            unsafe { *body = 0 }
        });
        // `Local::free_slot`: a late mark (a notify after `complete`)
        // means a drain again; this model's slots have no mailbox.
        while slot.state.free().is_err() {}
        self.free
            .push_chain(&[slot.index], |i| &self.slot(i).next_free);
    }

    /// Runs a Ready process's step (a holder reads the body) and closes it.
    fn run_and_close(&self, slot: &Slot, process: u32) {
        assert_eq!(slot.state.start(), Start::Step { last: false });
        // SAFETY: we hold the slot (Running).
        assert_eq!(slot.body.with(|body| unsafe { *body }), process);
        self.close(slot);
    }
}

/// Two processes are started, run and closed, so their slots 0 and 1 are on
/// the free list (0 on top). Then two threads take and free slots at once:
/// one takes a slot, runs its process and closes it; the other takes two,
/// closes the first and keeps the second. That is the ABA shape: the first
/// thread can read the top (0, next 1), be preempted while the second pops
/// 0 and 1 and pushes 0 back, and then find 0 on top again. No slot is held
/// by two threads at once (loom's race check on the body, `activate`'s
/// assertion), and afterwards every slot is either held or on the free list,
/// once (none lost, none handed out twice).
///
/// Kills: the tag removed (no bump in `FreeList::pop` nor `push_chain`):
/// the stale CAS installs slot 1, which the other thread holds, and the
/// drain finds it on the free list while Ready. (Removing only `pop`'s bump
/// survives: an ABA needs a push, which bumps the tag.) The Release CAS in
/// `push_chain` made Relaxed: a loom race on the body of a reused slot. The
/// Acquire load of the head in `pop` made Relaxed: the model fails, by
/// loom's branch limit.
#[test]
fn two_threads_taking_and_freeing_slots_hand_each_out_once() {
    loom::model(|| {
        let table = Table::new();
        let (a, _) = table.insert(1);
        let (b, _) = table.insert(2);
        assert_eq!((a.index, b.index), (0, 1), "fresh indices, first page");
        table.run_and_close(b, 2);
        table.run_and_close(a, 1);

        let one = {
            let table = Arc::clone(&table);
            thread::spawn(move || {
                let (slot, _) = table.insert(10);
                table.run_and_close(slot, 10);
            })
        };
        let held = {
            let table = Arc::clone(&table);
            thread::spawn(move || {
                let (first, _) = table.insert(20);
                let (second, _) = table.insert(21);
                table.run_and_close(first, 20);
                second.index
            })
        };
        one.join().unwrap();
        let held = held.join().unwrap();

        let held_slot = table.slot(held);
        assert_eq!(held_slot.state.load().lifecycle(), Lifecycle::Ready);
        // SAFETY: every other thread has joined.
        assert_eq!(held_slot.body.with(|body| unsafe { *body }), 21);
        let mut free = Vec::new();
        while let Some(index) = table.free.pop(|i| &table.slot(i).next_free) {
            assert_eq!(table.slot(index).state.load().lifecycle(), Lifecycle::Free);
            free.push(index);
        }
        let mut all = free.clone();
        all.push(held);
        all.sort_unstable();
        let fresh = table.fresh.load(Ordering::Relaxed);
        assert_eq!(
            all,
            (0..fresh).collect::<Vec<_>>(),
            "free {free:?}, held {held}"
        );
    });
}

/// A sender holds the PID of a process. It looks the
/// slot up as `Shared::deliver` does (`get`, generation and lifecycle check)
/// and notifies, while the process's last step runs on a worker that then
/// closes it, frees the slot, takes it back from the free list for a new
/// process and runs that one to Idle. The old PID
/// never reaches the new process: the sender is refused (generation or
/// lifecycle), or its notify says `Finished`/`Stale`, or `Sweep` (the slot
/// freed: it holds the mailbox, and an insert meanwhile passes the slot
/// over for a fresh one), or it reached the old process while it still
/// ran (`Nothing`: a bit for the old step); it never
/// schedules the new process, and the new process is left Idle with no bit.
///
/// Kills: `StateWord::free` not bumping the generation (the stale notify
/// schedules the new process).
#[test]
fn stale_pid_racing_free_and_reuse_never_reaches_the_new_process() {
    loom::model(|| {
        let table = Table::new();
        let (slot, old) = table.insert(1);
        assert_eq!(slot.state.start(), Start::Step { last: false });
        let index = slot.index;
        let sender = {
            let table = Arc::clone(&table);
            thread::spawn(move || {
                // `Shared::deliver`'s checks before the push.
                let slot = table.pages.get(index)?;
                let now = slot.state.load();
                if now.generation() != old
                    || matches!(now.lifecycle(), Lifecycle::Free | Lifecycle::Complete)
                {
                    return None;
                }
                let told = slot.state.notify(old, Wake::Message);
                if told == Notify::Sweep {
                    // Freed since: the late sender's sweep (nothing to pop).
                    while !slot.state.end_sweep() {}
                }
                Some(told)
            })
        };
        // The worker: the old process's step ends it; then a new process
        // takes the slot (or, while the sender sweeps it, a fresh one) and
        // runs to Idle.
        table.close(slot);
        let (new_slot, new) = table.insert(2);
        if new_slot.index != index {
            let verdict = sender.join().unwrap();
            assert_eq!(verdict, Some(Notify::Sweep), "passed over, not swept");
            return;
        }
        assert_ne!(new, old);
        assert_eq!(new_slot.state.start(), Start::Step { last: false });
        assert_eq!(new_slot.state.end_step(Park::Idle), AfterStep::Parked);

        let verdict = sender.join().unwrap();
        assert_ne!(
            verdict,
            Some(Notify::Schedule),
            "old PID woke the new process"
        );
        let state = new_slot.state.load();
        assert_eq!(state.lifecycle(), Lifecycle::Idle);
        assert_eq!(state.generation(), new);
        assert!(!state.is_messaged() && !state.is_woken());
    });
}

/// The first page is full (two live processes), so two threads creating a
/// process at once both take fresh indices on the second page, and both
/// find it missing: each allocates it, one CAS wins, the loser frees its
/// copy and uses the winner's. Each thread's process is in a slot of the
/// one page that stays, which the other thread initialised when it won.
///
/// Kills: the Release CAS that publishes a page in `Pages::page`, or the
/// Acquire load in `Pages::get`, made Relaxed (the loser writes a slot
/// whose initialisation it does not see: a loom race).
#[test]
fn two_threads_allocating_the_same_page_share_the_winners() {
    loom::model(|| {
        let table = Table::new();
        let (a, _) = table.insert(1);
        let (b, _) = table.insert(2);
        assert_eq!((a.index, b.index), (0, 1));
        let creators: Vec<_> = [10, 20]
            .into_iter()
            .map(|process| {
                let table = Arc::clone(&table);
                thread::spawn(move || {
                    let (slot, _) = table.insert(process);
                    assert!(slot.index >= 2, "fresh index on the second page");
                    assert_eq!(slot.state.start(), Start::Step { last: false });
                    // SAFETY: we hold the slot (Running).
                    assert_eq!(slot.body.with(|body| unsafe { *body }), process);
                    assert_eq!(slot.state.end_step(Park::Idle), AfterStep::Parked);
                    slot.index
                })
            })
            .collect();
        let mut used: Vec<u32> = creators.into_iter().map(|c| c.join().unwrap()).collect();
        used.sort_unstable();
        assert_eq!(used, [2, 3]);
        for index in used {
            assert_eq!(table.slot(index).state.load().lifecycle(), Lifecycle::Idle);
        }
    });
}
