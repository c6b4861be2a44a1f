//! loom models of the race between a register and the end of the process
//! it names (`src/sched/registry/README.md`, "The race with the end"): no
//! name outlives its process, and a register that races the end either
//! fails or is removed by that end.
//!
//! The two sides run the scheduler's sequence on a real [`StateWord`] and
//! a real [`NameFlag`]: the register, under the registry's lock, is
//! `NameFlag::bind` (set the flag, touch the state word, keep the flag only
//! if the touch read the process live), then the pair's insertion
//! (`Shared::register`); the close is `StateWord::complete`, then
//! `NameFlag::is_set`, and if set the lock, the pair's removal and
//! `NameFlag::clear` (`Local::close`, `Shared::unname`). The map is one
//! `Option` of the named generation under a loom `Mutex`.
//!
//! Weakening the touch's AcqRel (to Acquire: the flag's store is no longer
//! published to `complete`) or `complete`'s CAS (to Release: its load of
//! the flag may miss it) lets the close miss a name that the register then
//! inserts: the model's final check fails.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!       cargo test -p stepsched-loom-tests --release --test registry`
#![cfg(loom)]

use loom::sync::{Arc, Mutex};
use loom::thread;
use stepsched::__internals::{NameFlag, Start, StateWord};

/// A slot in miniature, and the registry's map.
struct World {
    state: StateWord,
    named: NameFlag,
    /// The generation of the process the name is registered for, if any.
    map: Mutex<Option<u32>>,
}

/// A process a worker is stepping (Running), its generation.
fn running() -> (Arc<World>, u32) {
    let w = World {
        state: StateWord::new(),
        named: NameFlag::new(),
        map: Mutex::new(None),
    };
    let generation = w.state.activate();
    assert_eq!(w.state.start(), Start::Step { last: false });
    (Arc::new(w), generation)
}

/// `Shared::register` for `generation`: whether the name was taken.
fn register(w: &World, generation: u32) -> bool {
    let mut map = w.map.lock().unwrap();
    if map.is_some() {
        return false;
    }
    if !w.named.bind(&w.state, generation) {
        return false;
    }
    *map = Some(generation);
    true
}

/// The close of the process: `complete`, then the flag, then the pair.
fn close(w: &World) {
    w.state.complete();
    if w.named.is_set() {
        let mut map = w.map.lock().unwrap();
        *map = None;
        w.named.clear();
    }
}

#[test]
fn a_register_racing_the_end_fails_or_is_removed_by_it() {
    loom::model(|| {
        let (w, generation) = running();
        let registrar = {
            let w = Arc::clone(&w);
            thread::spawn(move || register(&w, generation))
        };
        close(&w);
        let took = registrar.join().unwrap();
        let map = w.map.lock().unwrap();
        assert_eq!(*map, None, "a name outlived its process (taken: {took})");
        assert!(!w.named.is_set(), "the flag was left set with no pair");
    });
}

#[test]
fn two_registers_racing_the_end_leave_no_name() {
    loom::model(|| {
        let (w, generation) = running();
        let registrars: Vec<_> = (0..2)
            .map(|_| {
                let w = Arc::clone(&w);
                thread::spawn(move || register(&w, generation))
            })
            .collect();
        close(&w);
        let took: usize = registrars
            .into_iter()
            .map(|r| usize::from(r.join().unwrap()))
            .sum();
        assert!(took <= 1, "one name, one holder");
        assert_eq!(*w.map.lock().unwrap(), None, "a name outlived its process");
    });
}

#[test]
fn a_register_of_an_ended_process_fails_and_leaves_the_flag_clear() {
    loom::model(|| {
        let (w, generation) = running();
        close(&w);
        assert!(!register(&w, generation));
        assert!(!w.named.is_set());
        assert_eq!(*w.map.lock().unwrap(), None);
    });
}
