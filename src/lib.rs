//! `stepsched`: a lock-free, work-stealing runtime for step-driven processes.
//!
//! (Crate overview is written as the components land.)

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod padded;
mod sync;

pub mod deque;
pub mod mpsc;
pub mod process;
pub mod sched;

#[cfg(any(test, fuzzing))]
#[doc(hidden)]
pub mod fuzzing;
