//! Two nodes in this process over one server.

use super::{next, node, reports, server, start};
use crate::actor::{Actor, Msg, Seen};
use std::time::Duration;
use stepsched::process::ExitReason;
use stepsched::sched::SendError;

/// A floods B in order; A monitors B's actor and gets its real `Down`;
/// B cut off (`sever`, as if its process died), A's monitor of another B
/// process gets `NoConnection` once, and a send to B is refused.
#[test]
fn two_nodes_send_in_order_monitor_and_see_a_node_go() {
    let server = server();
    let (a, ta) = start(&server.url(), 1);
    let (b, tb) = start(&server.url(), 2);
    assert!(ta.wait_for(node(2), Duration::from_secs(30)), "A hears B");
    assert!(tb.wait_for(node(1), Duration::from_secs(30)), "B hears A");
    let (tx, rx) = reports();
    let sender = a.submit(Actor::new(Some(tx.clone())), "a", ()).unwrap();
    let receiver = b.submit(Actor::new(Some(tx.clone())), "b", ()).unwrap();
    let other = b.submit(Actor::new(Some(tx.clone())), "b", ()).unwrap();
    const N: u64 = 5_000;
    for chunk in 0..5 {
        let from = chunk * N / 5;
        a.send(sender, Msg::Flood(receiver, from, from + N / 5))
            .unwrap();
    }
    for n in 0..N {
        assert_eq!(next(&rx), (receiver, Seen::Num(n)), "in order, none lost");
    }
    a.send(sender, Msg::Monitor(receiver)).unwrap();
    a.send(sender, Msg::Monitor(other)).unwrap();
    // Settled: a ping from the same sender after the requests.
    a.send(sender, Msg::Flood(other, 7, 8)).unwrap();
    assert_eq!(next(&rx), (other, Seen::Num(7)));
    b.send(receiver, Msg::Stop).unwrap();
    assert_eq!(next(&rx), (sender, Seen::Down(receiver, ExitReason::Done)));
    // B goes silent, its processes still running there.
    tb.sever();
    assert_eq!(
        next(&rx),
        (sender, Seen::Down(other, ExitReason::NoConnection))
    );
    assert!(rx.recv_timeout(Duration::from_millis(300)).is_err(), "once");
    assert!(matches!(
        a.send(other, Msg::Num(1)),
        Err(SendError::NoConnection(_))
    ));
    assert_eq!(ta.stats().publish_errors, 0);
    assert_eq!(ta.stats().slow_consumer, 0, "nothing dropped by NATS");
    drop(b);
}
