//! A Chase-Lev work-stealing deque whose thieves take half in one CAS.
//!
//! Body written below.

mod buffer;
mod pointer;
mod steal;
mod worker;

pub use pointer::Pointer;
pub use steal::Steal;
pub use worker::{Stealer, Worker};

/// The most items one [`Stealer::steal_half_into`] takes.
pub const MAX_STEAL: usize = 32;

#[cfg(test)]
mod tests;
