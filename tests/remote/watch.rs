//! Monitors and links across nodes: the real `Down`, the real exit.

use super::{Pair, A, B};
use crate::actor::{Msg, Seen};
use crate::common::joined;
use stepsched::process::{ExitReason, Pid, ProcessError};

/// A on node A monitors B on node B; B's end reaches A as its `Down`,
/// with B's own reason, once.
#[test]
fn a_monitor_of_a_remote_process_gets_its_real_down() {
    let pair = Pair::new();
    let watcher = pair.actor(A);
    let (done, failed) = (pair.actor(B), pair.actor(B));
    pair.tell(watcher.pid(), Msg::Monitor(done.pid()));
    pair.tell(watcher.pid(), Msg::Monitor(failed.pid()));
    // The monitors are registered before the ends: a number sent after
    // them by the same sender arrives after the requests.
    pair.tell(watcher.pid(), Msg::Flood(done.pid(), 7, 8));
    assert_eq!(pair.next(), (done.pid(), Seen::Num(7)));
    pair.tell(done.pid(), Msg::Stop);
    pair.tell(failed.pid(), Msg::Fail);
    let mut downs = vec![pair.next(), pair.next()];
    downs.sort_by_key(|(_, seen)| format!("{seen:?}"));
    assert_eq!(
        downs,
        vec![
            (watcher.pid(), Seen::Down(done.pid(), ExitReason::Done)),
            (
                watcher.pid(),
                Seen::Down(
                    failed.pid(),
                    ExitReason::Failed(stepsched::process::Summary::new("\"told to fail\""))
                )
            ),
        ]
    );
    assert_eq!(pair.quiet_for(50), None, "one Down each");
}

/// A monitor of a remote PID that names no process: `Down` with
/// `NoProc`, from the other node.
#[test]
fn a_monitor_of_a_remote_pid_of_no_process_is_told_noproc() {
    let pair = Pair::new();
    let watcher = pair.actor(A);
    let nobody = Pid::from_raw(u64::from(B.get()) << 24 | 999);
    assert_eq!(nobody.node(), B);
    pair.tell(watcher.pid(), Msg::Monitor(nobody));
    assert_eq!(
        pair.next(),
        (watcher.pid(), Seen::Down(nobody, ExitReason::NoProc))
    );
}

/// Links across nodes, both ways: B's failure ends its link on A (which
/// does not trap), and a trapping one on A is told as a `Down`; A's end
/// reaches a trapping link on B.
#[test]
fn links_across_nodes_carry_exits_both_ways() {
    let pair = Pair::new();
    let (plain, trapping) = (pair.actor(A), pair.actor(A));
    let (failing, watcher_b) = (pair.actor(B), pair.actor(B));
    pair.tell(trapping.pid(), Msg::Trap);
    pair.tell(plain.pid(), Msg::Link(failing.pid()));
    pair.tell(trapping.pid(), Msg::Link(failing.pid()));
    // watcher_b (B) traps and links with `plain` (A): it hears of plain's end.
    pair.tell(watcher_b.pid(), Msg::Trap);
    pair.tell(watcher_b.pid(), Msg::Link(plain.pid()));
    // Settled: a message after each link request, from the same sender.
    pair.tell(plain.pid(), Msg::Flood(failing.pid(), 1, 2));
    pair.tell(trapping.pid(), Msg::Flood(failing.pid(), 2, 3));
    pair.tell(watcher_b.pid(), Msg::Flood(plain.pid(), 3, 4));
    let mut settled: Vec<_> = (0..3).map(|_| pair.next()).collect();
    settled.sort_by_key(|(_, s)| format!("{s:?}"));
    assert_eq!(
        settled,
        vec![
            (failing.pid(), Seen::Num(1)),
            (failing.pid(), Seen::Num(2)),
            (plain.pid(), Seen::Num(3)),
        ]
    );
    let failing_pid = failing.pid();
    pair.tell(failing_pid, Msg::Fail);
    assert_eq!(joined(plain), Err(ProcessError::Terminated));
    let mut told: Vec<_> = (0..2).map(|_| pair.next()).collect();
    told.sort_by_key(|(at, _)| at.node());
    let fail_reason = ExitReason::Failed(stepsched::process::Summary::new("\"told to fail\""));
    assert_eq!(
        told[0],
        (trapping.pid(), Seen::Down(failing_pid, fail_reason))
    );
    assert_eq!(told[1].0, watcher_b.pid());
    assert!(
        matches!(told[1].1, Seen::Down(_, ExitReason::Linked(by)) if by == failing_pid),
        "plain was ended by its link with the failing process: {:?}",
        told[1]
    );
}
