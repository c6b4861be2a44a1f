//! Two OS processes, each a scheduler (a node), over a local nats-server:
//! a ping-pong between a process on node 1 and one on node 2, then a
//! monitor on node 1 of node 2's process, which fires with `NoConnection`
//! when node 2's OS process is killed.
//!
//! ```text
//! cargo run -p stepsched-nats --example cluster      # needs nats-server on PATH
//! ```
//!
//! The example starts the server (127.0.0.1, a free port) and runs node 2
//! as a second copy of itself (`CLUSTER_NODE2=<url>`), which prints its
//! process's PID and runs until it is killed.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use stepsched::process::{Event, NoCommand, NodeId, Pid, Process, StepOutput};
use stepsched::sched::Scheduler;
use stepsched_nats::{Json, LocalServer, NatsTransport, Options};

#[derive(Debug, Serialize, Deserialize)]
enum Msg {
    /// Answer `Pong(n)` to the PID.
    Ping(#[serde(with = "stepsched_nats::pid")] Pid, u64),
    Pong(u64),
    /// Play `n` round trips with the PID (a ponger), then tell the
    /// outside receiver `report`.
    Play {
        #[serde(with = "stepsched_nats::pid")]
        with: Pid,
        n: u64,
        #[serde(with = "stepsched_nats::pid")]
        report: Pid,
    },
    Watch(
        #[serde(with = "stepsched_nats::pid")] Pid,
        #[serde(with = "stepsched_nats::pid")] Pid,
    ),
    /// What a watcher tells its outside receiver: a `Down`'s reason.
    Down(String),
}

/// Pings, pongs or watches, as told.
#[derive(Default)]
struct Player {
    game: Option<(Pid, u64, Pid)>,
    report: Option<Pid>,
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
        for event in events.drain(..) {
            match event {
                Event::Message(Msg::Ping(from, n)) => out.send(from, Msg::Pong(n)),
                Event::Message(Msg::Play { with, n, report }) => {
                    self.game = Some((with, n, report));
                    let me = out.pid();
                    out.send(with, Msg::Ping(me, 1));
                }
                Event::Message(Msg::Pong(k)) => {
                    let me = out.pid();
                    if let Some((with, n, report)) = self.game {
                        if k < n {
                            out.send(with, Msg::Ping(me, k + 1));
                        } else {
                            out.send(report, Msg::Pong(k));
                        }
                    }
                }
                Event::Message(Msg::Watch(target, report)) => {
                    self.report = Some(report);
                    out.monitor(target);
                }
                Event::Down { pid, reason } => {
                    if let Some(report) = self.report {
                        out.send(report, Msg::Down(format!("{pid}: {reason:?}")));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

fn node(n: u8) -> NodeId {
    NodeId::new(n).expect("below 255")
}

fn start(url: &str, n: u8) -> std::io::Result<(Scheduler<Player>, NatsTransport)> {
    let transport = NatsTransport::connect(url, node(n), Options::default())?;
    let scheduler = Scheduler::<Player>::builder()
        .workers(1)
        .node(node(n))
        .transport(transport.clone())
        .codec(Json)
        .build()?;
    Ok((scheduler, transport))
}

/// Node 2: a ponger, its PID on stdout, until killed.
fn node2(url: &str) -> std::io::Result<()> {
    let (scheduler, transport) = start(url, 2)?;
    if !transport.wait_for(node(1), Duration::from_secs(10)) {
        return Err(std::io::Error::other("node 1 was never heard"));
    }
    let ponger = scheduler
        .submit(Player::default(), "ponger", ())
        .expect("submitted");
    println!("PID {}", ponger.into_raw());
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn main() -> std::io::Result<()> {
    if let Ok(url) = std::env::var("CLUSTER_NODE2") {
        return node2(&url);
    }
    let server = LocalServer::start()?;
    println!("nats-server at {}", server.url());
    let (a, transport) = start(&server.url(), 1)?;
    let mut child = Command::new(std::env::current_exe()?)
        .env("CLUSTER_NODE2", server.url())
        .stdout(Stdio::piped())
        .spawn()?;
    let line = BufReader::new(child.stdout.take().expect("piped"))
        .lines()
        .find_map(|l| {
            l.ok()
                .and_then(|l| l.strip_prefix("PID ").map(str::to_owned))
        })
        .expect("node 2 prints its ponger's PID");
    let ponger = Pid::from_raw(line.parse().expect("a raw PID"));
    assert!(transport.wait_for(node(2), Duration::from_secs(10)));
    println!("node 2 (OS process {}) runs ponger {ponger}", child.id());

    // The ping-pong: a process on node 1 and the ponger on node 2.
    let report = a.mailbox().expect("a receiver");
    let pinger = a
        .submit(Player::default(), "pinger", ())
        .expect("submitted");
    let n = 1_000;
    let started = Instant::now();
    a.send(
        pinger,
        Msg::Play {
            with: ponger,
            n,
            report: report.pid(),
        },
    )
    .expect("sent");
    match report.recv_timeout(Duration::from_secs(60)) {
        Ok(Msg::Pong(k)) => println!(
            "ping-pong: {k} round trips {pinger} <-> {ponger}, {:.1} µs each",
            started.elapsed().as_secs_f64() * 1e6 / k as f64
        ),
        other => panic!("the game did not end: {other:?}"),
    }

    // The monitor: a watcher on node 1, node 2 killed.
    let watcher = a
        .submit(Player::default(), "watcher", ())
        .expect("submitted");
    a.send(watcher, Msg::Watch(ponger, report.pid()))
        .expect("sent");
    std::thread::sleep(Duration::from_millis(100)); // the request crosses first
    child.kill()?;
    child.wait()?;
    let killed = Instant::now();
    match report.recv_timeout(Duration::from_secs(60)) {
        Ok(Msg::Down(why)) => println!(
            "node 2 killed: the watcher's monitor fired after {} ms: Down {why}",
            killed.elapsed().as_millis()
        ),
        other => panic!("no Down: {other:?}"),
    }
    Ok(())
}
