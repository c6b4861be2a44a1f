//! Unit tests of [`Links`]: requests, exits and `Down`s as a process's
//! collection and close apply them.

use super::{Links, Received, Signal};
use crate::process::{ExitReason, Pid};

fn pid(i: u32) -> Pid {
    Pid::new(i, 1)
}

#[test]
fn only_requests_are_kept_for_an_answer() {
    let (w, t) = (pid(1), pid(2));
    assert_eq!(Signal::Monitor(w).owed(), Some(Signal::Monitor(w)));
    assert_eq!(Signal::Link(w).owed(), Some(Signal::Link(w)));
    for signal in [
        Signal::Demonitor(w),
        Signal::Unlink(w),
        Signal::Down(t, ExitReason::Done),
        Signal::exit(t, ExitReason::Terminated),
    ] {
        assert_eq!(signal.owed(), None, "{signal:?}");
        // Nothing owed is nothing answered.
        assert_eq!(super::unanswered(t, signal), None);
    }
}

#[test]
fn a_down_passes_once_and_never_after_a_demonitor() {
    let mut w = Links::default();
    assert!(w.monitor(pid(1), pid(2)).is_some());
    assert!(
        w.monitor(pid(1), pid(2)).is_none(),
        "one monitor per target"
    );
    let down = || Signal::Down(pid(2), ExitReason::Done);
    assert_eq!(w.receive(down()), Received::Down(pid(2), ExitReason::Done));
    assert_eq!(w.receive(down()), Received::Nothing, "a second Down");
    assert!(w.monitor(pid(1), pid(2)).is_some());
    assert!(w.demonitor(pid(1), pid(2)).is_some());
    assert_eq!(w.receive(down()), Received::Nothing, "after demonitor");
    assert_eq!(w.counts(), (0, 0, 0));
}

#[test]
fn an_exit_kills_once_unless_trapped_or_normal() {
    let mut a = Links::default();
    a.link(pid(1), pid(2));
    a.link(pid(1), pid(3));
    let exit = |p, r| Signal::exit(pid(p), r);
    assert_eq!(a.receive(exit(2, ExitReason::Done)), Received::Nothing);
    assert_eq!(a.counts().2, 1, "a normal end unlinks");
    assert_eq!(
        a.receive(exit(3, ExitReason::Terminated)),
        Received::Kill(pid(3))
    );
    assert_eq!(a.killed_by(), Some(pid(3)));
    let mut t = Links::default();
    t.trap_exits(true);
    t.link(pid(1), pid(2));
    assert_eq!(
        t.receive(exit(2, ExitReason::NoProc)),
        Received::Down(pid(2), ExitReason::NoProc)
    );
    assert_eq!(t.receive(exit(2, ExitReason::NoProc)), Received::Nothing);
}

/// An exit drained by a `close` unlinks and ends nothing, trapped or
/// not; requests drained there are recorded.
#[test]
fn an_exit_at_close_only_unlinks() {
    for trap in [false, true] {
        let mut b = Links::default();
        b.trap_exits(trap);
        b.link(pid(1), pid(2));
        b.receive_ending(Signal::exit(pid(2), ExitReason::Terminated));
        b.receive_ending(Signal::Monitor(pid(3)));
        b.receive_ending(Signal::Link(pid(4)));
        assert_eq!(b.killed_by(), None, "trap: {trap}");
        assert_eq!(b.watchers(), [pid(3)]);
        assert_eq!(b.linked(), [pid(4)]);
    }
}

/// A list keeps two PIDs in place and more in a vector, and behaves
/// the same either way.
#[test]
fn pid_lists_spill_and_remove() {
    use super::Pids;
    let mut list = Pids::default();
    for i in 1..=5 {
        assert!(!list.contains(pid(i)));
        list.push(pid(i));
        assert!(list.contains(pid(i)));
        assert_eq!(matches!(list, Pids::Heap(_)), i > 2, "{i}");
    }
    assert!(list.remove(pid(1)) && !list.remove(pid(1)));
    let mut left = list.as_slice().to_vec();
    left.sort();
    assert_eq!(left, [pid(2), pid(3), pid(4), pid(5)]);
    let mut small = Pids::default();
    small.push(pid(1));
    small.push(pid(2));
    assert!(small.remove(pid(1)) && !small.remove(pid(3)));
    assert_eq!(small.as_slice(), [pid(2)]);
    assert!(small.remove(pid(2)) && small.as_slice().is_empty());
}

/// Only a reason with a summary is boxed; every reason comes back out
/// as it went in.
#[test]
fn exit_signals_box_only_a_summary_and_keep_the_reason() {
    use crate::process::Summary;
    let reasons = [
        ExitReason::Done,
        ExitReason::Terminated,
        ExitReason::Shutdown,
        ExitReason::NoProc,
        ExitReason::Linked(pid(7)),
        ExitReason::Failed(Summary::new("e")),
        ExitReason::Panicked(Summary::new("p")),
    ];
    for reason in reasons {
        let signal = Signal::exit(pid(2), reason.clone());
        let boxed = matches!(signal, Signal::Exit(..));
        let summarised = matches!(reason, ExitReason::Failed(_) | ExitReason::Panicked(_));
        assert_eq!(boxed, summarised, "{reason:?}");
        let mut t = Links::default();
        t.trap_exits(true);
        t.link(pid(1), pid(2));
        assert_eq!(t.receive(signal), Received::Down(pid(2), reason));
    }
}

/// A `Down` travels in every process's mailbox node: it must not make
/// the items larger than the events were before monitors existed
/// (a `Completion` with a small reply: 32 bytes on 64-bit targets).
#[test]
#[cfg(all(target_pointer_width = "64", not(loom)))]
fn signals_do_not_grow_the_mailbox_item() {
    use crate::process::{Event, NoCommand, Process, StepOutput};
    use crate::sched::core::table::{Envelope, Item};
    struct Small;
    impl Process for Small {
        type Input = ();
        type Message = u64;
        type Command = NoCommand;
        type Reply = u64;
        type Output = ();
        type Error = ();
        fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
            Ok(())
        }
        fn step(
            &mut self,
            _: &mut Vec<Event<Self>>,
            _: &mut StepOutput<'_, Self>,
        ) -> Result<(), ()> {
            Ok(())
        }
    }
    assert_eq!(core::mem::size_of::<Event<Small>>(), 32);
    assert_eq!(core::mem::size_of::<Item<Small>>(), 32);
    assert_eq!(core::mem::size_of::<Envelope<Small>>(), 40);
    assert_eq!(core::mem::size_of::<Signal>(), 24);
    assert_eq!(core::mem::size_of::<crate::sched::timer::Firing>(), 24);
}

#[test]
fn a_steps_exit_ends_unless_trapped_or_normal_and_a_kill_always() {
    let sent = |p, r| Signal::Sent(pid(p), Box::new(r));
    let stop = || ExitReason::Exit(crate::process::Summary::new("stop"));
    let mut a = Links::default();
    assert_eq!(a.receive(sent(2, ExitReason::Done)), Received::Nothing);
    assert_eq!(a.receive(sent(2, stop())), Received::Kill(pid(2)));
    assert_eq!(a.killed_reason(), Some(stop()));
    assert_eq!(
        a.receive(Signal::Kill(pid(3))),
        Received::Nothing,
        "ends once"
    );
    let mut t = Links::default();
    t.trap_exits(true);
    assert_eq!(t.receive(sent(2, stop())), Received::Down(pid(2), stop()));
    assert_eq!(
        t.receive_handed(sent(2, stop())),
        Err(sent(2, stop())),
        "kept in order"
    );
    assert_eq!(t.receive(Signal::Kill(pid(2))), Received::Kill(pid(2)));
    assert_eq!(t.killed_reason(), Some(ExitReason::Killed));
    let mut e = Links::default();
    e.receive_ending(Signal::Kill(pid(2)));
    e.receive_ending(sent(2, stop()));
    assert_eq!(
        e.killed_by(),
        None,
        "an exit found by close changes nothing"
    );
}
