//! Messages across nodes: they arrive, in each sender's order.

use super::{Pair, A, B};
use crate::actor::{Msg, Seen};
use std::time::Duration;

/// An actor on A floods one on B in several steps, and an outside sender
/// on A sends too: B's actor sees each sender's numbers in order.
#[test]
fn messages_from_each_sender_arrive_in_the_order_sent() {
    let pair = Pair::new();
    let (x, z) = (pair.actor(A), pair.actor(A));
    let y = pair.actor(B);
    const N: u64 = 2_000;
    for chunk in 0..4 {
        let from = chunk * N / 4;
        pair.tell(x.pid(), Msg::Flood(y.pid(), from, from + N / 4));
    }
    pair.tell(z.pid(), Msg::Flood(y.pid(), 1_000_000, 1_000_000 + N));
    let (mut from_x, mut from_z) = (Vec::new(), Vec::new());
    while from_x.len() + from_z.len() < 2 * N as usize {
        let (at, seen) = pair.next();
        assert_eq!(at, y.pid());
        let Seen::Num(n) = seen else {
            panic!("only numbers: {seen:?}")
        };
        if n >= 1_000_000 {
            from_z.push(n - 1_000_000);
        } else {
            from_x.push(n);
        }
    }
    let expected: Vec<u64> = (0..N).collect();
    assert_eq!(from_x, expected, "x's messages in x's order");
    assert_eq!(from_z, expected, "z's messages in z's order");
}

/// `Scheduler::send` on A to a receiver on B: in order, none lost.
#[test]
fn outside_sends_reach_a_remote_receiver_in_order() {
    let pair = Pair::new();
    let receiver = pair.b.mailbox().expect("a receiver on B");
    for n in 0..500 {
        pair.a.send(receiver.pid(), Msg::Num(n)).expect("carried");
    }
    for n in 0..500 {
        let got = receiver
            .recv_timeout(Duration::from_secs(60))
            .expect("arrives");
        assert_eq!(got, Msg::Num(n));
    }
}
