//! Outside receivers: a [`Pid`] for a thread (or an async task) that is not
//! a process, so that processes reply to it with the same `send` they use
//! between themselves; [`Scheduler::call`] (a future) and
//! [`Scheduler::blocking_call`], a request and its reply
//! (`call.rs`); [`Scheduler::send_async`] and
//! [`Scheduler::blocking_send_timeout`], sends that wait for room in a full
//! bounded mailbox (`send.rs`, waiting in `bound.rs`'s `Room`); join
//! handles and join sets (`join.rs`, `join_set.rs`); and
//! [`Scheduler::exit`], OTP's `exit/2` from a thread, sent as
//! [`Pid::OUTSIDE`](crate::process::Pid::OUTSIDE) (`exit.rs`).
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
//!
//! Every wait comes in two forms: a future (`recv_async`, a `JoinHandle`,
//! `JoinSet::join_next`, `call`, `send_async`), which only registers a
//! `std::task` [`Waker`](core::task::Waker) and assumes no runtime, and a
//! blocking method (`recv`, `join`, `blocking_*`), which parks the thread.
//! A blocking wait panics on a worker thread of any scheduler
//! (`on_worker.rs`): the worker would hold itself while what it waits for
//! may need it.

mod call;
mod exit;
mod inbox;
pub(crate) mod join;
pub(crate) mod join_set;
pub(crate) mod on_worker;
mod receiver;
mod reply;
mod send;

pub use call::{Call, CallError};
pub(crate) use inbox::Inbox;
pub use receiver::{Receiver, Recv};
pub use send::SendAsync;
