//! Named sends across nodes: `{Name, Node} ! Message`, the name looked up
//! on the node it names.

use super::{Pair, A, B};
use crate::actor::{Actor, Msg, Seen};
use stepsched::process::{NodeId, SpawnOptions};
use stepsched::sched::SendError;

fn named(node: NodeId, name: u64, from: u64, to: u64) -> Msg {
    Msg::Named {
        node,
        name,
        from,
        to,
    }
}

/// A step on A sends to a name registered on B: the messages reach the
/// process it names, in the order sent; the same to a name on A itself,
/// and from outside.
#[test]
fn a_named_send_resolves_on_the_node_it_names_in_order() {
    let pair = Pair::new();
    let (sender, far, near) = (pair.actor(A), pair.actor(B), pair.actor(A));
    pair.b.register("actor-1", far.pid()).unwrap();
    pair.a.register("actor-2", near.pid()).unwrap();
    pair.tell(sender.pid(), named(B, 1, 0, 5));
    for n in 0..5 {
        assert_eq!(pair.next(), (far.pid(), Seen::Num(n)));
    }
    let crossed = pair.net.messages_sent();
    pair.tell(sender.pid(), named(A, 2, 5, 7));
    for n in 5..7 {
        assert_eq!(pair.next(), (near.pid(), Seen::Num(n)));
    }
    assert_eq!(
        pair.net.messages_sent(),
        crossed,
        "a local name stays local"
    );
    pair.a.send_named(B, "actor-1", Msg::Num(9)).unwrap();
    assert_eq!(pair.next(), (far.pid(), Seen::Num(9)));
    assert!(pair.undelivered.lock().unwrap().is_empty());
}

/// Nothing lost silently: a name that names no process on B is reported
/// by B's `on_undelivered` with B's outside PID; a name on a node cut off,
/// by A's; from outside, the same are `NoSuchProcess` (a local name) and
/// `NoConnection`.
#[test]
fn a_named_send_that_finds_no_process_is_reported_where_it_stops() {
    let pair = Pair::new();
    let sender = pair.actor(A);
    let marker = pair.actor(B);
    pair.tell(sender.pid(), named(B, 3, 0, 1));
    // Behind it, from the same sender to the same node:
    pair.tell(sender.pid(), Msg::Flood(marker.pid(), 1, 2));
    assert_eq!(pair.next(), (marker.pid(), Seen::Num(1)));
    {
        let undelivered = pair.undelivered.lock().unwrap();
        assert_eq!(undelivered.len(), 1, "{undelivered:?}");
        let (node, pid, ref message) = undelivered[0];
        assert_eq!((node, message), (B, &Msg::Num(0)));
        assert!(pid.is_outside() && pid.node() == B, "{pid}");
    }
    assert!(matches!(
        pair.a.send_named(A, "actor-4", Msg::Num(4)),
        Err(SendError::NoSuchProcess(Msg::Num(4)))
    ));
    pair.net.cut(B);
    pair.tell(sender.pid(), named(B, 1, 5, 6));
    pair.tell(sender.pid(), Msg::Flood(sender.pid(), 6, 7));
    assert_eq!(pair.next(), (sender.pid(), Seen::Num(6)));
    {
        let undelivered = pair.undelivered.lock().unwrap();
        assert_eq!(undelivered.len(), 2, "{undelivered:?}");
        let (node, pid, ref message) = undelivered[1];
        assert_eq!((node, message), (A, &Msg::Num(5)));
        assert!(pid.is_outside() && pid.node() == B, "{pid}");
    }
    assert!(matches!(
        pair.a.send_named(B, "actor-1", Msg::Num(7)),
        Err(SendError::NoConnection(Msg::Num(7)))
    ));
}

/// A name on B whose process's bounded mailbox is full refuses back to
/// the sender on A as `Event::Refused`, naming the process it resolved to.
#[test]
fn a_named_send_to_a_full_mailbox_is_refused_back() {
    let pair = Pair::new();
    let sender = pair.actor(A);
    let full = (pair.b)
        .submit_with(
            Actor(pair.sender()),
            "actor",
            (),
            SpawnOptions::new().mailbox_capacity(1).name("actor-5"),
        )
        .expect("submitted");
    pair.tell(full, Msg::Hold);
    pair.held.wait_for("the holder waits", 1);
    pair.tell(sender.pid(), named(B, 5, 0, 3));
    for n in 1..3 {
        assert_eq!(
            pair.next(),
            (sender.pid(), Seen::Refused(full, Msg::Num(n)))
        );
    }
    pair.held.lock().pop().expect("held").complete(Ok(())).ok();
    assert_eq!(pair.next(), (full, Seen::Num(0)));
}
