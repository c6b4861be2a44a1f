//! The server killed and restarted on its port under two nodes: a
//! partition that heals. Each side's monitor of the other's process gets
//! `NoConnection` exactly once, as the connection breaks; a send across while cut off is refused;
//! a stream across keeps its order, and each number it sent was received,
//! handed to `on_undelivered`, or was in flight on the cut connection
//! (core NATS is at most once: one run of them, before the refusals).
//! Once the server is back the nodes hear each other again, with their
//! processes as they were: sends and new monitors work as before.

use super::{next, node, options, reports, server, Report};
use crate::actor::{Actor, Msg, Seen};
use std::collections::BTreeSet;
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;
use stepsched::process::{Event, ExitReason, Pid};
use stepsched::sched::{Scheduler, SendError};
use stepsched_nats::{Json, LocalServer, NatsTransport, Options};

/// A node whose `on_undelivered` reports the numbers it could not send.
/// Its silence limit is far past the test's one-minute guard, so the
/// falls it sees are told by the broken connection itself.
fn start(url: &str, n: u8) -> (Scheduler<Actor>, NatsTransport, Receiver<u64>) {
    let options = Options {
        missed: 100_000,
        ..options()
    };
    let transport = NatsTransport::connect(url, node(n), options).expect("connects");
    let (tx, undelivered) = channel();
    let scheduler = Scheduler::<Actor>::builder()
        .workers(2)
        .node(node(n))
        .transport(transport.clone())
        .codec(Json)
        .on_undelivered(move |_, event| {
            if let Event::Message(Msg::Num(n)) = event {
                let _ = tx.send(n);
            }
        })
        .build()
        .expect("starts");
    (scheduler, transport, undelivered)
}

/// Reports until `until` holds for one (returned), the collector's
/// numbers pushed to `got`, every `Down` to `downs`.
fn collect(
    rx: &Receiver<Report>,
    collector: Pid,
    got: &mut Vec<u64>,
    downs: &mut Vec<Report>,
    until: impl Fn(&Report) -> bool,
) -> Report {
    loop {
        let report = next(rx);
        match report {
            (at, Seen::Num(n)) if at == collector => got.push(n),
            (_, Seen::Down(..)) => downs.push(report.clone()),
            _ => {}
        }
        if until(&report) {
            return report;
        }
    }
}

#[test]
fn a_server_restarted_under_two_nodes_is_a_partition_that_heals() {
    let mut server = server();
    let port = server.port();
    let (a, ta, _) = start(&server.url(), 1);
    let (b, tb, undelivered) = start(&server.url(), 2);
    assert!(ta.wait_for(node(2), Duration::from_secs(30)), "A hears B");
    assert!(tb.wait_for(node(1), Duration::from_secs(30)), "B hears A");
    let (tx, rx) = reports();
    let collector = a.submit(Actor::new(Some(tx.clone())), "c", ()).unwrap();
    let streamer = b.submit(Actor::new(Some(tx.clone())), "s", ()).unwrap();
    // Each monitors the other; a ping from the same sender after each
    // monitor says it was set.
    a.send(collector, Msg::Monitor(streamer)).unwrap();
    a.send(collector, Msg::Ping(streamer, 1)).unwrap();
    b.send(streamer, Msg::Monitor(collector)).unwrap();
    b.send(streamer, Msg::Ping(collector, 1)).unwrap();
    let mut pinged = BTreeSet::new();
    while pinged.len() < 2 {
        match next(&rx) {
            (at, Seen::Num(1)) => pinged.insert(at),
            other => panic!("only the pings: {other:?}"),
        };
    }
    b.send(streamer, Msg::Stream(collector)).unwrap();
    let (mut got, mut downs) = (Vec::new(), Vec::new());
    while got.len() < 200 {
        collect(&rx, collector, &mut got, &mut downs, |_| true);
    }

    server.stop();
    while downs.len() < 2 {
        collect(&rx, collector, &mut got, &mut downs, |_| true);
    }
    let mut seen: Vec<Report> = downs.clone();
    seen.sort_by_key(|(at, _)| at.into_raw());
    let mut expected = vec![
        (collector, Seen::Down(streamer, ExitReason::NoConnection)),
        (streamer, Seen::Down(collector, ExitReason::NoConnection)),
    ];
    expected.sort_by_key(|(at, _)| at.into_raw());
    assert_eq!(seen, expected, "each side told NoConnection");
    assert!(
        matches!(
            a.send(streamer, Msg::Num(0)),
            Err(SendError::NoConnection(_))
        ),
        "a send to a node cut off is refused"
    );
    let cut = got.last().copied().unwrap_or(0);

    let _server = LocalServer::start_on(port).expect("the server restarts on its port");
    assert!(
        ta.wait_for(node(2), Duration::from_secs(60)),
        "A hears B again"
    );
    assert!(
        tb.wait_for(node(1), Duration::from_secs(60)),
        "B hears A again"
    );
    // The stream, refused while cut off, arrives again.
    collect(
        &rx,
        collector,
        &mut got,
        &mut downs,
        |r| matches!(r, (at, Seen::Num(n)) if *at == collector && *n > cut + 100),
    );
    // A new monitor across, set (the ping after it), fires with the
    // streamer's real end, after every number it sent.
    a.send(collector, Msg::Monitor(streamer)).unwrap();
    a.send(collector, Msg::Ping(streamer, 2)).unwrap();
    collect(&rx, collector, &mut got, &mut downs, |r| {
        *r == (streamer, Seen::Num(2))
    });
    b.send(streamer, Msg::Stop).unwrap();
    collect(
        &rx,
        collector,
        &mut got,
        &mut downs,
        |r| matches!(r, (at, Seen::Down(..)) if *at == collector),
    );
    assert_eq!(
        downs[2..],
        [(collector, Seen::Down(streamer, ExitReason::Done))],
        "one Down per monitor: the old ones fired once, the new one at the end"
    );
    assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());

    assert!(got.windows(2).all(|w| w[0] < w[1]), "in order, no repeat");
    let refused: BTreeSet<u64> = undelivered.try_iter().collect();
    let received: BTreeSet<u64> = got.iter().copied().collect();
    assert!(
        received.is_disjoint(&refused),
        "a number refused never arrives"
    );
    let last = *got.last().unwrap();
    let lost: Vec<u64> = (0..=last)
        .filter(|n| !received.contains(n) && !refused.contains(n))
        .collect();
    if let (Some(&first), Some(&end)) = (lost.first(), lost.last()) {
        assert_eq!(lost.len() as u64, end - first + 1, "one run lost: {lost:?}");
        assert!(
            refused.first().is_none_or(|&r| end < r),
            "lost only in flight at the cut, before any refusal"
        );
    }
    eprintln!(
        "partition: {} received, {} refused, {} in flight at the cut",
        received.len(),
        refused.len(),
        lost.len()
    );
}
