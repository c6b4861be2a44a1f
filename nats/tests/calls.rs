//! Calls and named sends between two nodes over one `nats-server`
//! (started here on 127.0.0.1 and a free port, stopped at the end).
//!
//! ```text
//! cargo test -p stepsched-nats --test calls     # needs nats-server on PATH
//! ```

use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use stepsched::process::{Event, NoCommand, NodeId, Pid, Process, ReplyTo, StepOutput};
use stepsched::sched::Scheduler;
use stepsched_nats::{Json, LocalServer, NatsTransport, Options};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
enum Msg {
    /// Call the PID with `Ask(n)`, `later`: one it does not answer.
    Call(#[serde(with = "stepsched_nats::pid")] Pid, u64, bool),
    Ask(u64, #[serde(with = "stepsched_nats::reply_to")] ReplyTo),
    AskLater(u64, #[serde(with = "stepsched_nats::reply_to")] ReplyTo),
    /// Send `Num(0..n)` to the name on node 2.
    Named(String, u64),
    Num(u64),
}

/// What a process saw.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Num(u64),
    Reply(u64, Result<Msg, String>),
    Deferred(u64),
}

struct Actor(Sender<(Pid, Seen)>);

const TWO: NodeId = match NodeId::new(2) {
    Some(node) => node,
    None => unreachable!(),
};

impl Process for Actor {
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
            let seen = match event {
                Event::Message(Msg::Call(to, n, later)) => {
                    let ask = move |r| {
                        if later {
                            Msg::AskLater(n, r)
                        } else {
                            Msg::Ask(n, r)
                        }
                    };
                    out.call(to, n, ask, Duration::from_secs(120));
                    continue;
                }
                Event::Message(Msg::Ask(n, reply_to)) => {
                    out.reply(reply_to, Msg::Num(2 * n));
                    continue;
                }
                Event::Message(Msg::AskLater(n, _)) => Seen::Deferred(n),
                Event::Message(Msg::Named(name, n)) => {
                    for k in 0..n {
                        out.send_named(TWO, name.as_str(), Msg::Num(k));
                    }
                    continue;
                }
                Event::Message(Msg::Num(n)) => Seen::Num(n),
                Event::Reply { tag, result } => {
                    Seen::Reply(tag, result.map_err(|e| format!("{e:?}")))
                }
                _ => continue,
            };
            let _ = self.0.send((me, seen));
        }
        Ok(())
    }
}

fn node(n: u8) -> NodeId {
    NodeId::new(n).expect("below 255")
}

fn start(url: &str, n: u8) -> (Scheduler<Actor>, NatsTransport) {
    let options = Options {
        heartbeat: Duration::from_millis(50),
        missed: 5,
        ..Options::default()
    };
    let transport = NatsTransport::connect(url, node(n), options).expect("connects");
    let scheduler = Scheduler::<Actor>::builder()
        .workers(2)
        .node(node(n))
        .transport(transport.clone())
        .codec(Json)
        .build()
        .expect("starts");
    (scheduler, transport)
}

/// The next report, within a minute (a liveness guard, not a timing claim).
fn next(rx: &Receiver<(Pid, Seen)>) -> (Pid, Seen) {
    rx.recv_timeout(Duration::from_secs(60))
        .expect("a report within the minute")
}

/// Over NATS: 200 calls from a step on node 1 to a process on node 2
/// each get their reply; a named send reaches the process the name names
/// on node 2, in order; a call waiting on node 2 when node 2 goes silent
/// is answered `NodeDown`, once.
#[test]
fn calls_and_named_sends_cross_nats_and_a_node_gone_answers_a_waiting_call() {
    let server =
        LocalServer::start().unwrap_or_else(|e| panic!("the NATS tests need nats-server: {e}"));
    let (a, ta) = start(&server.url(), 1);
    let (b, tb) = start(&server.url(), 2);
    assert!(ta.wait_for(node(2), Duration::from_secs(30)), "A hears B");
    assert!(tb.wait_for(node(1), Duration::from_secs(30)), "B hears A");
    let (tx, rx) = channel();
    let caller = a.submit(Actor(tx.clone()), "caller", ()).unwrap();
    let callee = b.submit(Actor(tx.clone()), "callee", ()).unwrap();
    for n in 0..200 {
        a.send(caller, Msg::Call(callee, n, false)).unwrap();
        assert_eq!(next(&rx), (caller, Seen::Reply(n, Ok(Msg::Num(2 * n)))));
    }
    b.register("callee", callee).unwrap();
    a.send(caller, Msg::Named("callee".into(), 100)).unwrap();
    for k in 0..100 {
        assert_eq!(next(&rx), (callee, Seen::Num(k)), "in order, none lost");
    }
    a.send(caller, Msg::Call(callee, 7, true)).unwrap();
    assert_eq!(next(&rx), (callee, Seen::Deferred(7)));
    tb.sever();
    assert_eq!(next(&rx), (caller, Seen::Reply(7, Err("NodeDown".into()))));
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "exactly once"
    );
}
