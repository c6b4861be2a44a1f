//! Outside receivers: a [`Pid`] for a thread (or an async task) that is not
//! a process, so that processes reply to it with the same `send` they use
//! between themselves; and [`Scheduler::call`], a request and its reply.
//!
//! A receiver occupies a slot of the process table like a process, with an
//! inbox instead of a process in its body. Messages reach it the way they
//! reach any process: pushed into the slot's mailbox, which wakes it (Idle
//! to Ready) through its state word; the worker that takes it does not step
//! anything but moves the messages into the inbox and parks it again. So
//! every guarantee of delivery holds unchanged (generations, the wake
//! protocol, events sent as it ends reported through `on_undelivered`),
//! with no new concurrency protocol: the inbox is a mutex-protected queue
//! with a condition variable and a [`Waker`], taken once per forwarding
//! step and once per receive. The price is a hop through a worker
//! (a forwarding step, tens of nanoseconds once the worker is awake).
//!
//! A receiver counts as a live process ([`Scheduler::live`],
//! [`Scheduler::processes`], `max_processes`). Dropping it ends it like
//! [`Scheduler::terminate`], and nothing sent to it is lost: the messages
//! in its inbox, those a forward brings after the drop and those still in
//! its mailbox when it closes go to `on_undelivered`; later sends are
//! refused ([`SendError::Finished`]). Shutdown ends every
//! receiver; a `recv` then returns what was forwarded, then
//! [`RecvError`]. `on_complete` is not called for receivers.

mod inbox;
pub(crate) mod join;
pub(crate) mod join_set;
mod receiver;
mod reply;

pub(crate) use inbox::Inbox;
pub use receiver::{CallError, Receiver, Recv};
