//! Schedulers on several nodes over one `nats-server` (started here on
//! 127.0.0.1 and a free port, stopped at the end): two in this process,
//! then one in a second OS process that is killed.
//!
//! ```text
//! cargo test -p stepsched-nats --test cluster     # needs nats-server on PATH
//! ```

mod actor;
mod killed;
mod one_process;
mod partition;

use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::Duration;

use actor::{Actor, Seen};
use stepsched::process::{NodeId, Pid};
use stepsched::sched::Scheduler;
use stepsched_nats::{Json, LocalServer, NatsTransport, Options};

pub fn node(n: u8) -> NodeId {
    NodeId::new(n).expect("a node number below 255")
}

/// The server, or a clear failure (never a hang) if it cannot start.
pub fn server() -> LocalServer {
    LocalServer::start().unwrap_or_else(|e| panic!("the NATS tests need nats-server: {e}"))
}

/// Fast heartbeats, so a node killed is declared gone within ~250 ms.
pub fn options() -> Options {
    Options {
        heartbeat: Duration::from_millis(50),
        missed: 5,
        ..Options::default()
    }
}

/// A node's scheduler over `url`, and its transport.
pub fn start(url: &str, n: u8) -> (Scheduler<Actor>, NatsTransport) {
    let transport = NatsTransport::connect(url, node(n), options()).expect("connects");
    let scheduler = Scheduler::<Actor>::builder()
        .workers(2)
        .node(node(n))
        .transport(transport.clone())
        .codec(Json)
        .build()
        .expect("starts");
    (scheduler, transport)
}

/// What actors report: who saw what.
pub type Report = (Pid, Seen);

/// A report channel for actors.
pub fn reports() -> (Sender<Report>, Receiver<Report>) {
    channel()
}

/// The next report, within a minute (a liveness guard, not a timing claim).
pub fn next(rx: &Receiver<Report>) -> Report {
    rx.recv_timeout(Duration::from_secs(60))
        .expect("an actor reports within the minute")
}
