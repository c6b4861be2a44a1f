//! Side-by-side: a call with a timeout from a process, stepsched against
//! ractor (`call_t!`) and OTP (`gen_server:call/3`,
//! `benches/peers/erlang/call.erl`), 2 worker threads (Erlang: `+S 2`).
//!
//! | scenario      | size (SCALE=1)                                        |
//! |---------------|-------------------------------------------------------|
//! | `call`        | 200,000 sequential calls, a caller and a callee, 1 s timeout |
//! | `send_cancel` | 1,000,000 `send_after(60 s)` + cancel, from one thread |
//!
//! Shapes:
//!
//! - `call`: stepsched: a caller process calls a callee with
//!   `StepOutput::call(.., 1 s)`, the callee answers with
//!   `StepOutput::reply`, the caller calls again on each `Event::Reply`;
//!   ractor: a tokio task (the caller) awaits `call_t!(callee, Req, 1000)`
//!   in a loop. Printed: ns per call (round trip), median of `ROUNDS`.
//! - `send_cancel`: stepsched: `Scheduler::send_after` to an idle process,
//!   then `Scheduler::cancel_timer`, from the main thread. Printed: ns per
//!   pair.
//!
//! ```text
//! taskset -c 0,1 cargo run --release -p stepsched-peers --bin call
//! SCALE=0.01 cargo run --release -p stepsched-peers --bin call     # smoke run
//! (cd benches/peers/erlang && erlc call.erl && erl -noshell +S 2 -s call main -s init stop)
//! ```

use std::time::{Duration, Instant};

use stepsched::process::{Event, NoCommand, Pid, Process, ReplyTo, StepOutput};
use stepsched::sched::Scheduler;

const WORKERS: usize = 2;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

enum Msg {
    Req(u64, ReplyTo),
    Ans(u64),
}

enum Node {
    Caller { callee: Pid, left: u64 },
    Callee,
}

impl Process for Node {
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
        match self {
            Node::Callee => {
                for event in events.drain(..) {
                    if let Event::Message(Msg::Req(n, reply_to)) = event {
                        out.reply(reply_to, Msg::Ans(n + 1));
                    }
                }
            }
            Node::Caller { callee, left } => {
                for event in events.drain(..) {
                    match event {
                        Event::Reply {
                            result: Ok(Msg::Ans(n)),
                            ..
                        } => assert_eq!(n, *left + 1),
                        other => panic!("caller: {other:?}"),
                    }
                }
                if *left == 0 {
                    out.done(());
                    return Ok(());
                }
                *left -= 1;
                let n = *left;
                out.call(*callee, 1, |r| Msg::Req(n, r), Duration::from_secs(1));
            }
        }
        Ok(())
    }
}

fn stepsched_call(calls: u64) -> f64 {
    let s: Scheduler<Node> = Scheduler::builder().workers(WORKERS).build().unwrap();
    let callee = s.submit(Node::Callee, "callee", ()).unwrap();
    let start = Instant::now();
    let caller = s
        .submit_joinable(
            Node::Caller {
                callee,
                left: calls,
            },
            "caller",
            (),
        )
        .unwrap();
    caller.join().unwrap();
    let ns = start.elapsed().as_nanos() as f64 / calls as f64;
    s.shutdown(Duration::from_secs(10));
    ns
}

fn stepsched_send_cancel(pairs: u64) -> f64 {
    let s: Scheduler<Node> = Scheduler::builder().workers(WORKERS).build().unwrap();
    let idle = s.submit(Node::Callee, "idle", ()).unwrap();
    let start = Instant::now();
    for n in 0..pairs {
        let timer = s
            .send_after(idle, Msg::Ans(n), Duration::from_secs(60))
            .unwrap();
        assert!(s.cancel_timer(&timer).is_some());
    }
    let ns = start.elapsed().as_nanos() as f64 / pairs as f64;
    s.shutdown(Duration::from_secs(10));
    ns
}

mod peer {
    use ractor::{call_t, Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
    use std::time::Instant;

    pub enum Req {
        Add(u64, RpcReplyPort<u64>),
    }

    pub struct Callee;

    impl Actor for Callee {
        type Msg = Req;
        type State = ();
        type Arguments = ();

        async fn pre_start(&self, _: ActorRef<Req>, _: ()) -> Result<(), ActorProcessingErr> {
            Ok(())
        }

        async fn handle(
            &self,
            _: ActorRef<Req>,
            message: Req,
            _: &mut (),
        ) -> Result<(), ActorProcessingErr> {
            let Req::Add(n, port) = message;
            let _ = port.send(n + 1);
            Ok(())
        }
    }

    pub fn ractor_call(calls: u64) -> f64 {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(super::WORKERS)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let (callee, handle) = Actor::spawn(None, Callee, ()).await.unwrap();
            let start = Instant::now();
            let caller = tokio::spawn({
                let callee = callee.clone();
                async move {
                    for n in 0..calls {
                        let got: u64 = call_t!(callee, Req::Add, 1000, n).unwrap();
                        assert_eq!(got, n + 1);
                    }
                }
            });
            caller.await.unwrap();
            let ns = start.elapsed().as_nanos() as f64 / calls as f64;
            callee.stop(None);
            handle.await.unwrap();
            ns
        })
    }
}

fn main() {
    let scale: f64 = env_or("SCALE", 1.0);
    let rounds: usize = env_or("ROUNDS", 5);
    let only = std::env::var("ONLY").ok();
    let run = |name: &str| only.as_deref().is_none_or(|o| o == name);
    let calls = ((200_000.0 * scale) as u64).max(1);
    let pairs = ((1_000_000.0 * scale) as u64).max(1);
    if run("call") {
        let ours = median((0..rounds).map(|_| stepsched_call(calls)).collect());
        let theirs = median((0..rounds).map(|_| peer::ractor_call(calls)).collect());
        println!("call        stepsched {ours:8.0} ns/call   ractor call_t! {theirs:8.0} ns/call   ratio {:.2}x", theirs / ours);
    }
    if run("send_cancel") {
        let ours = median((0..rounds).map(|_| stepsched_send_cancel(pairs)).collect());
        println!("send_cancel stepsched {ours:8.0} ns/pair");
    }
}
