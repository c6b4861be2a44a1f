//! Shutdown: the phases a scheduler goes through when it stops, what
//! [`Scheduler::shutdown`](crate::sched::Scheduler::shutdown) reports, and
//! the thread that waits for the processes to end.

mod stop;
pub(crate) mod stopping;

pub use stop::ShutdownReport;
