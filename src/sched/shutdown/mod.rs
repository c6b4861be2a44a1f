//! Shutdown: the phases a scheduler goes through when it stops, and the
//! thread that waits for the processes to end.

pub(crate) mod stopping;
