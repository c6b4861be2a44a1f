//! loom models of the phase word against process creation
//! (`src/sched/core/phase.rs`; docs/ARCHITECTURE.md, trap 8): a process created
//! while
//! shutdown begins is either withdrawn by its creator or seen, Ready, by
//! shutdown's scan; never neither.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!       cargo test -p stepsched-loom-tests --release --test phase`
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use stepsched::__internals::{Phase, StateWord, EXITING, RUNNING, STOPPING};
use stepsched::process::Lifecycle;

/// One creator makes a slot Ready (as `Table::insert` does, `activate`) and
/// asks the phase whether it may queue it, while shutdown raises the phase
/// and scans the slot. Either the creator is refused (and withdraws) or
/// shutdown's scan sees the process live. Removing either SeqCst fence in
/// `phase.rs` fails it: that is the lost process of docs/ARCHITECTURE.md,
/// trap 8 (shutdown reports a clean stop, the creator queues a process
/// nobody runs).
#[test]
fn process_created_as_shutdown_begins_is_withdrawn_or_seen_by_the_scan() {
    loom::model(|| {
        let phase = Arc::new(Phase::new());
        let slot = Arc::new(StateWord::new());
        let creator = {
            let (phase, slot) = (Arc::clone(&phase), Arc::clone(&slot));
            thread::spawn(move || {
                let _generation = slot.activate();
                phase.admits()
            })
        };
        phase.advance(STOPPING);
        let scan_saw_it = slot.load().lifecycle() == Lifecycle::Ready;
        let admitted = creator.join().unwrap();
        assert!(
            !admitted || scan_saw_it,
            "the creator queued a process shutdown's scan did not see"
        );
    });
}

/// Phases only move forward: two advances racing (the shutdown's FORCING
/// or EXITING against a late STOPPING) leave the highest, and a creator
/// that reads any of them is refused.
#[test]
fn racing_advances_keep_the_highest_phase_and_refuse_creators() {
    loom::model(|| {
        let phase = Arc::new(Phase::new());
        let late = {
            let phase = Arc::clone(&phase);
            thread::spawn(move || phase.advance(STOPPING))
        };
        phase.advance(EXITING);
        late.join().unwrap();
        assert_eq!(phase.get(), EXITING);
        assert!(!phase.admits());
        assert_ne!(phase.get(), RUNNING);
    });
}
