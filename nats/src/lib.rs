//! `stepsched` processes on several nodes, over NATS.
//!
//! Each scheduler is a node ([`Builder::node`]) whose
//! [`Transport`](stepsched::sched::remote::Transport) is a
//! [`NatsTransport`]: a send, a monitor, a link or an exit to a process of
//! another node becomes a frame on that node's NATS subject, and comes in
//! there as its local kin would (the semantics are the core's, in
//! [`stepsched::sched::remote`]). Nodes send heartbeats; a node silent for
//! a few intervals is gone, and every monitor and link of its processes is
//! told `NoConnection`. Messages cross through a
//! [`Codec`](stepsched::sched::remote::Codec): [`Json`] for `serde` types
//! (PIDs inside them with [`pid`], a call's [`ReplyTo`](stepsched::process::ReplyTo)
//! with [`reply_to`]).
//!
//! ```no_run
//! use serde::{Deserialize, Serialize};
//! use stepsched::process::{Event, NoCommand, NodeId, Process, StepOutput};
//! use stepsched::sched::Scheduler;
//! use stepsched_nats::{Json, NatsTransport, Options};
//! # #[derive(Serialize, Deserialize)] struct Ping(u64);
//! # struct Echo;
//! # impl Process for Echo {
//! #     type Input = (); type Message = Ping; type Command = NoCommand;
//! #     type Reply = (); type Output = (); type Error = ();
//! #     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
//! #     fn step(&mut self, _: &mut Vec<Event<Self>>, _: &mut StepOutput<'_, Self>) -> Result<(), ()> { Ok(()) }
//! # }
//! let node = NodeId::new(1).unwrap();
//! let transport = NatsTransport::connect("nats://127.0.0.1:4222", node, Options::default())?;
//! let scheduler = Scheduler::<Echo>::builder()
//!     .node(node)
//!     .transport(transport.clone())
//!     .codec(Json)
//!     .build()?;
//! // Before the first send to node 2:
//! transport.wait_for(NodeId::new(2).unwrap(), std::time::Duration::from_secs(5));
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! [`Builder::node`]: stepsched::sched::Builder::node

mod codec;
mod liveness;
mod server;
mod transport;
pub mod wire;

pub use codec::{pid, reply_to, Json};
pub use server::LocalServer;
pub use transport::{NatsTransport, Options, TransportStats};
