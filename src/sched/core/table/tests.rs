//! The process table's unit tests: the slot's layout, slot reuse and
//! retirement, and the closed count's ordering.

use super::{Occupant, Table};
use crate::process::{Event, NoCommand, NodeId, Process, StepOutput};

/// A one-word process (the size the slot layout test is about).
pub(crate) struct Nop(#[allow(dead_code)] pub(crate) u64);

impl Process for Nop {
    type Input = ();
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = ();

    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }

    fn step(&mut self, _: &mut Vec<Event<Self>>, _: &mut StepOutput<'_, Self>) -> Result<(), ()> {
        Ok(())
    }
}

/// The layout `Slot`'s docs describe: what deliveries and steps touch
/// in its first line, and three lines in all for a one-word process (`Nop`).
#[test]
fn a_small_processs_slot_is_three_lines_and_its_hot_fields_one() {
    use super::{Figures, Slot};
    use core::mem::{align_of, offset_of, size_of};
    assert_eq!(align_of::<Slot<Nop>>(), 64);
    assert_eq!(size_of::<Slot<Nop>>(), 3 * 64);
    let hot_end = offset_of!(Slot<Nop>, figures) + size_of::<Figures>();
    assert!(hot_end <= 64, "the first line ends at {hot_end}");
    assert!(offset_of!(Slot<Nop>, state) < 64);
    assert!(offset_of!(Slot<Nop>, bound) < 64);
}

#[test]
fn the_counted_flag_fits_in_the_envelopes_padding() {
    use super::Envelope;
    use core::mem::size_of;
    assert_eq!(
        size_of::<Envelope<Nop>>(),
        size_of::<(u32, Event<Nop>)>(),
        "a bounded mailbox's flag made every queued event bigger"
    );
}

#[test]
fn freed_slots_are_reused_with_a_new_generation() {
    let table = Table::<Nop>::new(1, Some(2), NodeId::default());
    let mut cache = super::FreeCache::default();
    let a = table
        .insert(Occupant::Process(Nop(0), None), 0, None, 0)
        .ok()
        .expect("room for a");
    let pid_a = a.pid();
    let b = table
        .insert(Occupant::Process(Nop(0), None), 0, None, 0)
        .ok()
        .expect("room for b");
    assert_ne!(pid_a.index(), b.pid().index());
    assert!(
        table
            .insert(Occupant::Process(Nop(0), None), 0, None, 0)
            .is_err(),
        "limit of 2"
    );
    assert_eq!(
        a.state.start(),
        crate::process::state::Start::Step { last: false }
    );
    a.state.complete();
    table
        .remove(a, 0, &mut cache)
        .expect("nothing pushed after the drain");
    let c = table
        .insert(Occupant::Process(Nop(0), None), 0, Some(&mut cache), 0)
        .ok()
        .expect("a's slot is free again");
    assert_eq!(c.pid().index(), pid_a.index());
    assert_eq!(c.pid().generation(), pid_a.generation() + 1);
    assert_eq!(table.live(), 2);
}

/// docs/ARCHITECTURE.md, trap 11: counters wrap. A slot reused
/// continuously by one worker must not
/// wrap its generation back to one a stale PID carries. It is retired
/// at the last generation and its index is never handed out again.
#[test]
fn a_slot_at_its_last_generation_is_retired_not_reused() {
    use crate::process::state::{Notify, Wake, LAST_GENERATION};
    let table = Table::<Nop>::new(1, None, NodeId::default());
    let mut cache = super::FreeCache::default();
    let first = table
        .insert(Occupant::Process(Nop(0), None), 0, None, 0)
        .ok()
        .expect("room");
    let index = first.pid().index();
    let old_pid = first.pid();
    let _ = first.state.start();
    first.state.complete();
    table
        .remove(first, 0, &mut cache)
        .expect("nothing pushed after the drain");
    table.age_free_slot(index, LAST_GENERATION - 2);
    // Reuse the slot until it reaches its last generation.
    for expected in [LAST_GENERATION - 2, LAST_GENERATION - 1] {
        let slot = table
            .insert(Occupant::Process(Nop(0), None), 0, Some(&mut cache), 0)
            .ok()
            .expect("room");
        assert_eq!(slot.pid().index(), index, "the worker reuses its slot");
        assert_eq!(slot.pid().generation(), expected);
        let _ = slot.state.start();
        slot.state.complete();
        table
            .remove(slot, 0, &mut cache)
            .expect("nothing pushed after the drain");
    }
    assert_eq!(table.retired(), 1);
    let next = table
        .insert(Occupant::Process(Nop(0), None), 0, Some(&mut cache), 0)
        .ok()
        .expect("room");
    assert_ne!(next.pid().index(), index, "a retired slot is not reused");
    let retired = table.get(index).expect("the slot exists");
    assert_eq!(retired.state.load().generation(), LAST_GENERATION);
    assert_eq!(
        retired.state.notify(old_pid.generation(), Wake::Message),
        Notify::Stale
    );
}

/// What `shutdown` relies on when it reads `Shared::forced` after `live()`
/// reached zero (`Scheduler::shutdown`, `close` in `worker/close.rs`): a
/// closer's increment before its `remove` is seen by whoever sees that
/// close counted. The closed count's Release store (`remove`) and Acquire
/// loads (`closed`) order it; x86 never shows the difference, Miri's weak
/// memory does (the mutation run: `closed.store`'s Release weakened to
/// Relaxed, seeds 0 to 7). In the shutdown tests the wait's wake-up by a
/// parking worker (`stopping.rs`) orders the two on its own in most runs:
/// this test takes the wait out.
#[test]
fn whoever_sees_a_close_counted_sees_what_the_closer_did_before() {
    use crate::sync::{AtomicU64, Ordering};
    let table = Table::<Nop>::new(1, None, NodeId::default());
    let forced = AtomicU64::new(0);
    let slot = table
        .insert(Occupant::Process(Nop(0), None), 0, None, 0)
        .ok()
        .expect("room");
    let _ = slot.state.start();
    slot.state.complete();
    std::thread::scope(|s| {
        s.spawn(|| {
            // As `close` does for a process closed by force.
            forced.fetch_add(1, Ordering::Relaxed);
            table
                .remove(slot, 0, &mut super::FreeCache::default())
                .expect("nothing pushed after the drain");
        });
        while table.live() != 0 {
            std::hint::spin_loop();
        }
        assert_eq!(forced.load(Ordering::Relaxed), 1, "the close's increment");
    });
}

/// A node's table issues PIDs of its node, finds them by their key, and
/// finds no slot for a PID of another node, below or above it, with the
/// same slot index (`pid.rs`: the failed lookup is the only remote check),
/// even with a page for that index.
#[test]
fn a_pid_of_another_node_finds_no_slot() {
    let node = NodeId::new(5).expect("a node");
    let table = Table::<Nop>::new(1, None, node);
    let mut slots = Vec::new();
    for _ in 0..100 {
        let slot = table
            .insert(Occupant::Process(Nop(0), None), 0, None, 0)
            .ok()
            .expect("room");
        slots.push(slot.pid());
    }
    let pid = slots[99];
    assert_eq!(pid.node(), node);
    assert!(table.get(pid.key()).is_some());
    for other in [0u8, 4, 6, 254] {
        let foreign = crate::process::Pid::from_raw(
            u64::from(pid.generation()) << 32 | u64::from(other) << 24 | u64::from(pid.index()),
        );
        assert_ne!(foreign.node(), node);
        assert!(table.get(foreign.key()).is_none(), "node {other}");
    }
    assert!(table.get(crate::process::Pid::OUTSIDE.key()).is_none());
    assert_eq!(
        table.slots().count(),
        100,
        "the dump's scan finds each slot"
    );
}
