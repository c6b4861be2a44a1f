//! Scheduler internals (being written): the global run queue.
