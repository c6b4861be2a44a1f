//! Backpressure across nodes: a full remote mailbox refuses, as locally.

use super::{Pair, A};
use crate::actor::{Actor, Msg, Seen};
use stepsched::process::SpawnOptions;

/// A process on B with room for 2 waits in a command (so it drains
/// nothing); one on A sends it 5 in a step: 2 are taken, the other 3 come
/// back to the sender as `Refused`, in the order sent.
#[test]
fn a_full_remote_mailbox_refuses_back_to_the_sender_in_order() {
    let pair = Pair::new();
    let sender = pair.actor(A);
    let full = (pair.b)
        .submit_with(
            Actor(pair_tx(&pair)),
            "actor",
            (),
            SpawnOptions::new().mailbox_capacity(2),
        )
        .expect("submitted");
    pair.tell(full, Msg::Hold);
    pair.held.wait_for("the holder waits", 1);
    pair.tell(sender.pid(), Msg::Flood(full, 0, 5));
    for n in 2..5 {
        assert_eq!(
            pair.next(),
            (sender.pid(), Seen::Refused(full, Msg::Num(n)))
        );
    }
    // Let it drain: it sees the two taken, in order.
    pair.held.lock().pop().expect("held").complete(Ok(())).ok();
    assert_eq!(pair.next(), (full, Seen::Num(0)));
    assert_eq!(pair.next(), (full, Seen::Num(1)));
}

fn pair_tx(pair: &Pair) -> std::sync::mpsc::Sender<(stepsched::process::Pid, Seen)> {
    pair.sender()
}
