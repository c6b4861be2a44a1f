//! Two OS processes, each a scheduler (a node), over a local nats-server:
//!
//! 1. a ping-pong: a process on node 1 finds node 2's `ponger` by its
//!    registered name, then calls it 1,000 times (`StepOutput::call`
//!    across nodes);
//! 2. a supervisor on node 1 whose child runs on node 2: it asks node 2's
//!    `spawner` (by name) for a child, monitors it, and when the child
//!    fails, asks for another;
//! 3. node 2's OS process killed: the supervisor's monitor of its child
//!    fires with `NoConnection`, once.
//!
//! ```text
//! cargo run -p stepsched-nats --example cluster      # needs nats-server on PATH
//! ```
//!
//! The example starts the server (127.0.0.1, a free port) and runs node 2
//! as a second copy of itself (`CLUSTER_NODE2=<url>`), which says `READY`
//! once its names are registered and runs until it is killed.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use stepsched::process::{Event, ExitReason, NoCommand, NodeId, Pid, Process, ReplyTo, StepOutput};
use stepsched::sched::Scheduler;
use stepsched_nats::{Json, LocalServer, NatsTransport, Options};

#[derive(Debug, Serialize, Deserialize)]
enum Msg {
    /// To a name: answer `Here` with your PID to the PID.
    Hello(#[serde(with = "stepsched_nats::pid")] Pid),
    Here(#[serde(with = "stepsched_nats::pid")] Pid),
    /// A call's request: answered `Answer(n)`.
    Ask(u64, #[serde(with = "stepsched_nats::reply_to")] ReplyTo),
    Answer(u64),
    /// Find node 2's `ponger`, call it `n` times, tell `report` `Done`.
    Play {
        n: u64,
        #[serde(with = "stepsched_nats::pid")]
        report: Pid,
    },
    Done(u64),
    /// To the `spawner`: start a child, tell the PID `Started`.
    Start(#[serde(with = "stepsched_nats::pid")] Pid),
    Started(#[serde(with = "stepsched_nats::pid")] Pid),
    /// Keep a child running on node 2, telling `report` of each.
    Supervise(#[serde(with = "stepsched_nats::pid")] Pid),
    /// To a child: fail.
    Crash,
    /// What a supervisor tells its outside receiver: a `Down`.
    Down(String),
}

/// Node 2's ponger and spawner; node 1's pinger and supervisor; a child.
#[derive(Default)]
struct Player {
    /// The pinger's game: the ponger, the calls to make, where to report.
    game: Option<(Pid, u64, Pid)>,
    /// The supervisor's outside receiver and its child.
    report: Option<Pid>,
    child: Option<Pid>,
}

const NODE2: NodeId = match NodeId::new(2) {
    Some(node) => node,
    None => unreachable!(),
};

impl Process for Player {
    type Input = ();
    type Message = Msg;
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = &'static str;

    fn init(&mut self, _: &str, _: ()) -> Result<(), Self::Error> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), Self::Error> {
        let me = out.pid();
        let ask = |n| move |reply_to| Msg::Ask(n, reply_to);
        for event in events.drain(..) {
            match event {
                // The ponger and the spawner.
                Event::Message(Msg::Hello(from)) => out.send(from, Msg::Here(me)),
                Event::Message(Msg::Ask(n, reply_to)) => out.reply(reply_to, Msg::Answer(n)),
                Event::Message(Msg::Start(supervisor)) => {
                    let child = out
                        .spawn(Player::default(), "child", ())
                        .map_err(|_| "no room")?;
                    out.send(supervisor, Msg::Started(child));
                }
                Event::Message(Msg::Crash) => return Err("told to crash"),
                // The pinger.
                Event::Message(Msg::Play { n, report }) => {
                    self.game = Some((Pid::OUTSIDE, n, report));
                    out.send_named(NODE2, "ponger", Msg::Hello(me));
                }
                Event::Message(Msg::Here(ponger)) => {
                    if let Some((_, n, report)) = self.game {
                        self.game = Some((ponger, n, report));
                        out.call(ponger, 1, ask(1), Duration::from_secs(10));
                    }
                }
                Event::Reply { tag, result } => {
                    let Some((ponger, n, report)) = self.game else {
                        continue;
                    };
                    match result {
                        Ok(Msg::Answer(k)) if k == tag && k < n => {
                            out.call(ponger, k + 1, ask(k + 1), Duration::from_secs(10));
                        }
                        Ok(Msg::Answer(k)) if k == tag => out.send(report, Msg::Done(k)),
                        other => {
                            let why = format!("call {tag}: {:?}", other.err());
                            out.send(report, Msg::Down(why));
                        }
                    }
                }
                // The supervisor.
                Event::Message(Msg::Supervise(report)) => {
                    self.report = Some(report);
                    out.send_named(NODE2, "spawner", Msg::Start(me));
                }
                Event::Message(Msg::Started(child)) => {
                    self.child = Some(child);
                    out.monitor(child);
                    if let Some(report) = self.report {
                        out.send(report, Msg::Started(child));
                    }
                }
                Event::Down { pid, reason } if Some(pid) == self.child => {
                    if let Some(report) = self.report {
                        out.send(report, Msg::Down(format!("{pid}: {reason:?}")));
                    }
                    if reason != ExitReason::NoConnection {
                        // One for one: a child that ended is replaced.
                        out.send_named(NODE2, "spawner", Msg::Start(me));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

fn start(url: &str, node: NodeId) -> std::io::Result<(Scheduler<Player>, NatsTransport)> {
    let transport = NatsTransport::connect(url, node, Options::default())?;
    let scheduler = Scheduler::<Player>::builder()
        .workers(1)
        .node(node)
        .transport(transport.clone())
        .codec(Json)
        .build()?;
    Ok((scheduler, transport))
}

/// Node 2: a ponger and a spawner, registered, until killed.
fn node2(url: &str) -> std::io::Result<()> {
    let (scheduler, transport) = start(url, NODE2)?;
    if !transport.wait_for(NodeId::new(1).expect("1"), Duration::from_secs(10)) {
        return Err(std::io::Error::other("node 1 was never heard"));
    }
    for name in ["ponger", "spawner"] {
        let pid = (scheduler.submit(Player::default(), name, ()))
            .unwrap_or_else(|_| panic!("{name} submitted"));
        scheduler.register(name, pid).expect("the name is free");
    }
    println!("READY");
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
    let (a, transport) = start(&server.url(), NodeId::new(1).expect("1"))?;
    let mut child = Command::new(std::env::current_exe()?)
        .env("CLUSTER_NODE2", server.url())
        .stdout(Stdio::piped())
        .spawn()?;
    let ready = BufReader::new(child.stdout.take().expect("piped"))
        .lines()
        .any(|l| l.is_ok_and(|l| l == "READY"));
    assert!(ready, "node 2 registers its names");
    assert!(transport.wait_for(NODE2, Duration::from_secs(10)));
    println!("node 2 (OS process {}) is up", child.id());
    let report = a.mailbox().expect("a receiver");
    let next = || report.recv_timeout(Duration::from_secs(60));

    // 1. The ping-pong: calls from node 1 to node 2's `ponger`.
    let pinger = a
        .submit(Player::default(), "pinger", ())
        .expect("submitted");
    let n = 1_000;
    let started = Instant::now();
    let play = Msg::Play {
        n,
        report: report.pid(),
    };
    a.send(pinger, play).expect("sent");
    match next() {
        Ok(Msg::Done(k)) => println!(
            "ping-pong: {k} calls {pinger} -> node 2's \"ponger\", {:.1} µs each",
            started.elapsed().as_secs_f64() * 1e6 / k as f64
        ),
        other => panic!("the game did not end: {other:?}"),
    }

    // 2. A supervisor on node 1, its child on node 2, crashed twice.
    let supervisor = a
        .submit(Player::default(), "supervisor", ())
        .expect("submitted");
    a.send(supervisor, Msg::Supervise(report.pid()))
        .expect("sent");
    let mut child_pid = match next() {
        Ok(Msg::Started(pid)) => pid,
        other => panic!("no child: {other:?}"),
    };
    println!("supervisor {supervisor} started child {child_pid} on node 2");
    for _ in 0..2 {
        a.send(child_pid, Msg::Crash).expect("sent");
        match next() {
            Ok(Msg::Down(why)) => println!("  child ended: {why}"),
            other => panic!("no Down: {other:?}"),
        }
        child_pid = match next() {
            Ok(Msg::Started(pid)) => pid,
            other => panic!("no restart: {other:?}"),
        };
        println!("  restarted as {child_pid} on node 2");
    }

    // 3. Node 2 killed: the supervisor's monitor fires with NoConnection.
    child.kill()?;
    child.wait()?;
    let killed = Instant::now();
    match next() {
        Ok(Msg::Down(why)) => println!(
            "node 2 killed: the supervisor was told after {} ms: Down {why}",
            killed.elapsed().as_millis()
        ),
        other => panic!("no Down: {other:?}"),
    }
    assert!(
        report.recv_timeout(Duration::from_millis(500)).is_err(),
        "told once, and no restart on a node gone"
    );
    Ok(())
}
