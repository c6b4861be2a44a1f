//! A Chase-Lev work-stealing deque whose thieves can take half in one CAS.
//!
//! (Module prose is written with the implementation.)

mod pointer;
mod steal;
mod worker;

pub use pointer::Pointer;
pub use steal::Steal;
pub use worker::{Stealer, Worker};

/// The most items one [`Stealer::steal_half_into`] takes.
pub const MAX_STEAL: usize = 32;
