//! Cross-node figures against NATS itself, on one local nats-server:
//!
//! - round trip: a process on node 1 pings one on node 2 and waits for
//!   the pong, against async-nats `request` to a responder on another
//!   connection (the floor: what NATS alone costs for a request/reply);
//! - throughput: a process on node 1 sends M messages to one on node 2,
//!   against one connection publishing M payloads of the same size to a
//!   subscriber on another.
//!
//! Rounds alternate the two systems; printed: the median of the rounds,
//! each round's figures, and the ratio (stepsched / NATS).
//!
//! Then the BEAM row, when `erl` and `erlc` are on PATH: the same two
//! figures for Erlang/OTP distribution between two `erl -sname` nodes on
//! this machine, both `+S 2` (benches/peers/erlang/dist.erl, compiled into
//! a temp dir; node B pongs and counts, node A drives ROUNDS + 1 rounds of
//! TRIPS and MESSAGES, the first a warm-up), and the ratios stepsched /
//! BEAM. It runs after the rounds above, with the NATS server and both
//! schedulers stopped. Without `erl` or `erlc`, one line says it is skipped.
//!
//! ```text
//! cargo run --release -p stepsched-nats --example nats_bench
//! ROUNDS=7 TRIPS=2000 MESSAGES=200000 cargo run --release -p stepsched-nats --example nats_bench
//! ```

use std::sync::mpsc::{channel, Sender};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use stepsched::process::{Event, NoCommand, NodeId, Pid, Process, StepOutput};
use stepsched::sched::remote::{Codec, CodecError};
use stepsched::sched::Scheduler;
use stepsched_nats::{LocalServer, NatsTransport, Options};

/// `Ping(from, n)`, `Pong(n)`, `Go(to, n)` (send n numbers), `Num(n)`,
/// `Count(n, report)` (count n then tell the outside), as 1 + 8 + 8 bytes.
#[derive(Debug, Clone, Copy)]
enum Msg {
    Ping(Pid, u64),
    Pong(u64),
    Go(Pid, u64),
    Num(u64),
    /// Send `n` numbers to the PID, 1,000 a step.
    Flood(Pid, u64),
}

struct Bytes;
impl Codec<Msg> for Bytes {
    fn encode(&self, m: &Msg, into: &mut Vec<u8>) -> Result<(), CodecError> {
        let (tag, a, b) = match *m {
            Msg::Ping(p, n) => (0u8, p.into_raw(), n),
            Msg::Pong(n) => (1, 0, n),
            Msg::Go(p, n) => (2, p.into_raw(), n),
            Msg::Num(n) => (3, 0, n),
            Msg::Flood(p, n) => (4, p.into_raw(), n),
        };
        into.push(tag);
        into.extend_from_slice(&a.to_le_bytes());
        into.extend_from_slice(&b.to_le_bytes());
        Ok(())
    }
    fn decode(&self, bytes: &[u8]) -> Result<Msg, CodecError> {
        if bytes.len() != 17 {
            return Err(CodecError::new("17 bytes"));
        }
        let w = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
        Ok(match bytes[0] {
            0 => Msg::Ping(Pid::from_raw(w(1)), w(9)),
            1 => Msg::Pong(w(9)),
            2 => Msg::Go(Pid::from_raw(w(1)), w(9)),
            3 => Msg::Num(w(9)),
            4 => Msg::Flood(Pid::from_raw(w(1)), w(9)),
            _ => return Err(CodecError::new("tag")),
        })
    }
}

/// Pings until told, pongs, floods, counts; reports to the bench's channel.
struct Player {
    report: Sender<u64>,
    game: Option<(Pid, u64)>,
    expect: u64,
    counted: u64,
}

impl Process for Player {
    type Input = ();
    type Message = Msg;
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = ();
    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }
    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), ()> {
        let me = out.pid();
        for event in events.drain(..) {
            match event {
                Event::Message(Msg::Ping(from, n)) => out.send(from, Msg::Pong(n)),
                // `Go` to a ponger: play n round trips with it.
                Event::Message(Msg::Go(with, n)) if with.node() != me.node() && n > 0 => {
                    self.game = Some((with, n));
                    out.send(with, Msg::Ping(me, 1));
                }
                Event::Message(Msg::Pong(k)) => match self.game {
                    Some((with, n)) if k < n => out.send(with, Msg::Ping(me, k + 1)),
                    _ => drop(self.report.send(k)),
                },
                // `Go(me, n)` to a counter: expect n numbers.
                Event::Message(Msg::Go(_, n)) => {
                    self.expect = n;
                    self.counted = 0;
                }
                Event::Message(Msg::Flood(to, n)) => {
                    let now = n.min(1_000);
                    (0..now).for_each(|k| out.send(to, Msg::Num(k)));
                    if n > now {
                        out.send(me, Msg::Flood(to, n - now));
                    }
                }
                Event::Message(Msg::Num(_)) => {
                    self.counted += 1;
                    if self.counted == self.expect {
                        let _ = self.report.send(self.counted);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    v[v.len() / 2]
}

fn main() -> std::io::Result<()> {
    let rounds = env("ROUNDS", 5) as usize;
    let trips = env("TRIPS", 2_000);
    let messages = env("MESSAGES", 100_000);
    let server = LocalServer::start()?;
    let url = server.url();
    let node = |n| NodeId::new(n).expect("node");
    let start = |n: u8| -> std::io::Result<(Scheduler<Player>, NatsTransport)> {
        let t = NatsTransport::connect(&url, node(n), Options::default())?;
        let s = Scheduler::<Player>::builder()
            .workers(1)
            .node(node(n))
            .transport(t.clone())
            .codec(Bytes)
            .build()?;
        Ok((s, t))
    };
    let (a, ta) = start(1)?;
    let (b, tb) = start(2)?;
    assert!(ta.wait_for(node(2), Duration::from_secs(10)));
    assert!(tb.wait_for(node(1), Duration::from_secs(10)));
    let (tx, rx) = channel();
    let player = |s: &Scheduler<Player>| {
        let p = Player {
            report: tx.clone(),
            game: None,
            expect: 0,
            counted: 0,
        };
        s.submit(p, "player", ()).expect("submitted")
    };
    let (pinger, ponger) = (player(&a), player(&b));
    let counter = player(&b);
    let flooder = player(&a);

    // The floor: NATS request/reply and publish/subscribe, two connections.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let (requester, responder) = rt.block_on(async {
        let requester = async_nats::connect(&url)
            .await
            .map_err(std::io::Error::other)?;
        let responder = async_nats::connect(&url)
            .await
            .map_err(std::io::Error::other)?;
        Ok::<_, std::io::Error>((requester, responder))
    })?;
    let mut echo = rt
        .block_on(responder.subscribe("bench.echo"))
        .map_err(std::io::Error::other)?;
    let replier = responder.clone();
    rt.spawn(async move {
        while let Some(m) = echo.next().await {
            if let Some(reply) = m.reply {
                let _ = replier.publish(reply, m.payload).await;
            }
        }
    });
    let mut sink = rt
        .block_on(responder.subscribe("bench.sink"))
        .map_err(std::io::Error::other)?;
    // The sink counts until an empty payload, the round's end marker (one
    // publisher, one subscriber: NATS keeps their order), and reports how
    // many came (core NATS drops for a subscriber that falls behind).
    let (sink_tx, sink_rx) = channel::<u64>();
    rt.spawn(async move {
        let mut got = 0;
        while let Some(m) = sink.next().await {
            if m.payload.is_empty() {
                let _ = sink_tx.send(got);
                got = 0;
            } else {
                got += 1;
            }
        }
    });
    rt.block_on(async { responder.flush().await })
        .map_err(std::io::Error::other)?;
    let payload = bytes::Bytes::from(vec![7u8; 17 + 21]); // a frame's size

    let (mut rt_ours, mut rt_nats, mut tp_ours, mut tp_nats) = (vec![], vec![], vec![], vec![]);
    for round in 0..=rounds {
        // Round trip, stepsched.
        let started = Instant::now();
        a.send(pinger, Msg::Go(ponger, trips)).expect("sent");
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(120))
                .expect("the game ends"),
            trips
        );
        let ours = started.elapsed().as_secs_f64() * 1e6 / trips as f64;
        // Round trip, NATS.
        let started = Instant::now();
        rt.block_on(async {
            for _ in 0..trips {
                requester
                    .request("bench.echo", payload.clone())
                    .await
                    .expect("replied");
            }
        });
        let nats = started.elapsed().as_secs_f64() * 1e6 / trips as f64;
        // Throughput, stepsched: a flooder on A to the counter on B.
        b.send(counter, Msg::Go(counter, messages)).expect("sent");
        std::thread::sleep(Duration::from_millis(20));
        let started = Instant::now();
        a.send(flooder, Msg::Flood(counter, messages))
            .expect("sent");
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(120))
                .expect("all counted"),
            messages
        );
        let ours_tp = messages as f64 / started.elapsed().as_secs_f64();
        // Throughput, NATS.
        let started = Instant::now();
        rt.block_on(async {
            for _ in 0..messages {
                requester
                    .publish("bench.sink", payload.clone())
                    .await
                    .expect("published");
            }
            let end = bytes::Bytes::new();
            requester
                .publish("bench.sink", end)
                .await
                .expect("published");
            requester.flush().await.expect("flushed");
        });
        let received = (sink_rx.recv_timeout(Duration::from_secs(120))).expect("the end marker");
        let nats_tp = received as f64 / started.elapsed().as_secs_f64();
        if received < messages {
            let dropped = messages - received;
            println!("  (NATS dropped {dropped} of {messages} to its slow subscriber)");
        }
        if round == 0 {
            continue; // warm-up
        }
        println!(
            "round {round}: round trip {ours:.1} µs vs NATS {nats:.1} µs; \
             throughput {:.0}k/s vs NATS {:.0}k/s",
            ours_tp / 1e3,
            nats_tp / 1e3
        );
        rt_ours.push(ours);
        rt_nats.push(nats);
        tp_ours.push(ours_tp);
        tp_nats.push(nats_tp);
    }
    let (ro, rn) = (median(rt_ours), median(rt_nats));
    let (to, tn) = (median(tp_ours), median(tp_nats));
    println!("round trip (median of {rounds}): stepsched {ro:.1} µs, NATS request/reply {rn:.1} µs: {:.2}x", ro / rn);
    println!(
        "throughput (median of {rounds}): stepsched {:.0}k msg/s, NATS publish {:.0}k msg/s: \
         stepsched / NATS {:.2}x (frames batched per destination)",
        to / 1e3,
        tn / 1e3,
        to / tn
    );
    println!("transport A: {:?}", ta.stats());
    drop((a, b, ta, tb));
    rt.shutdown_background();
    drop(server);

    match beam::missing() {
        Some(tool) => println!("BEAM row skipped: `{tool}` is not on PATH (no Erlang/OTP)"),
        None => match beam::run(rounds, trips, messages) {
            Ok(f) => {
                let rt_beam = f.round_trip_ns / 1e3;
                for (i, (r, t)) in f.round_trip.iter().zip(&f.msgs_per_sec).enumerate() {
                    println!(
                        "BEAM round {}: round trip {:.1} µs; throughput {:.0}k/s",
                        i + 1,
                        r / 1e3,
                        t / 1e3
                    );
                }
                println!(
                    "BEAM: node A reached node B {:.0} ms after its start; \
                     {:.1} s in all (erlc, both nodes' start-up, the rounds)",
                    f.connect_ms,
                    f.wall.as_secs_f64()
                );
                println!(
                    "round trip (median of {rounds}): stepsched {ro:.1} µs, BEAM distribution \
                     {rt_beam:.1} µs: stepsched / BEAM {:.2}x (below 1: stepsched faster)",
                    ro / rt_beam
                );
                println!(
                    "throughput (median of {rounds}): stepsched {:.0}k msg/s, BEAM distribution \
                     {:.0}k msg/s: stepsched / BEAM {:.2}x (above 1: stepsched faster)",
                    to / 1e3,
                    f.msgs_per_sec_median / 1e3,
                    to / f.msgs_per_sec_median
                );
            }
            Err(e) => println!("BEAM row failed: {e}"),
        },
    }
    Ok(())
}

mod beam;
