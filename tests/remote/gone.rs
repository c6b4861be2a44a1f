//! A node gone: `NoConnection` to each monitor and link, once.

use super::{Pair, A, B};
use crate::actor::{Msg, Seen};
use crate::common::joined;
use stepsched::process::{ExitReason, ProcessError};
use stepsched::sched::SendError;

/// Two monitors and a trapping link of a process on B, and a plain link:
/// B cut off, each monitor and the trapping link get one `Down` with
/// `NoConnection`, the plain link is ended; a second report of the same
/// node changes nothing; a monitor set afterwards is answered at once.
#[test]
fn a_node_gone_tells_every_monitor_and_link_noconnection_once() {
    let pair = Pair::new();
    let (m1, m2, trapping, plain) = (pair.actor(A), pair.actor(A), pair.actor(A), pair.actor(A));
    let target = pair.actor(B);
    pair.tell(trapping.pid(), Msg::Trap);
    for watcher in [&m1, &m2] {
        pair.tell(watcher.pid(), Msg::Monitor(target.pid()));
    }
    pair.tell(trapping.pid(), Msg::Link(target.pid()));
    pair.tell(plain.pid(), Msg::Link(target.pid()));
    // Settled: each watcher's number behind its request.
    for (n, w) in [&m1, &m2, &trapping, &plain].iter().enumerate() {
        pair.tell(w.pid(), Msg::Flood(target.pid(), n as u64, n as u64 + 1));
    }
    for _ in 0..4 {
        assert!(matches!(pair.next(), (at, Seen::Num(_)) if at == target.pid()));
    }
    pair.net.cut(B);
    let mut told: Vec<_> = (0..3).map(|_| pair.next()).collect();
    told.sort_by_key(|(at, _)| *at);
    let mut expected: Vec<_> = [&m1, &m2, &trapping]
        .iter()
        .map(|w| (w.pid(), Seen::Down(target.pid(), ExitReason::NoConnection)))
        .collect();
    expected.sort_by_key(|(at, _)| *at);
    assert_eq!(told, expected);
    let plain_pid = plain.pid();
    assert_eq!(joined(plain), Err(ProcessError::Terminated), "{plain_pid}");
    pair.net.report_down_again(B);
    assert_eq!(pair.quiet_for(50), None, "exactly once");
    // Afterwards: a new monitor is answered at once, a send refused.
    pair.tell(m1.pid(), Msg::Monitor(target.pid()));
    assert_eq!(
        pair.next(),
        (m1.pid(), Seen::Down(target.pid(), ExitReason::NoConnection))
    );
    assert!(matches!(
        pair.a.send(target.pid(), Msg::Num(1)),
        Err(SendError::NoConnection(Msg::Num(1)))
    ));
}

/// Nothing lost silently: a message to a process on B that has ended is
/// reported by B's `on_undelivered`; one a step sends to a node cut off,
/// by A's.
#[test]
fn undeliverable_messages_are_reported_where_they_stop() {
    let pair = Pair::new();
    let sender = pair.actor(A);
    let ended = pair.actor(B);
    let ended_pid = ended.pid();
    pair.tell(ended_pid, Msg::Stop);
    joined(ended).expect("stopped");
    pair.tell(sender.pid(), Msg::Flood(ended_pid, 5, 6));
    crate::common::wait_until("B reports the message", || {
        pair.undelivered.lock().unwrap().len() == 1
    });
    assert_eq!(
        pair.undelivered.lock().unwrap()[0],
        (B, ended_pid, Msg::Num(5))
    );
    pair.net.cut(B);
    pair.tell(sender.pid(), Msg::Flood(ended_pid, 6, 7));
    crate::common::wait_until("A reports the message", || {
        pair.undelivered.lock().unwrap().len() == 2
    });
    assert_eq!(
        pair.undelivered.lock().unwrap()[1],
        (A, ended_pid, Msg::Num(6))
    );
}

/// A codec that panics on a message refuses that message (reported by the
/// sending node's `on_undelivered`), and the worker goes on: the next
/// message of the same step crosses.
#[test]
fn a_codec_that_panics_refuses_the_message_and_the_worker_goes_on() {
    let pair = Pair::new();
    let sender = pair.actor(A);
    let receiver = pair.actor(B);
    let panics = crate::actor::PANICS;
    pair.tell(sender.pid(), Msg::Flood(receiver.pid(), panics, panics + 2));
    assert_eq!(pair.next(), (receiver.pid(), Seen::Num(panics + 1)));
    crate::common::wait_until("A reports the message", || {
        pair.undelivered.lock().unwrap().len() == 1
    });
    assert_eq!(
        pair.undelivered.lock().unwrap()[0],
        (A, receiver.pid(), Msg::Num(panics))
    );
}
