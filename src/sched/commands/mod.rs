//! Commands: handlers registered by kind, run on the worker that dispatched
//! the command or on the blocking pool, and how they answer.

pub(crate) mod blocking;
pub(crate) mod handler;
