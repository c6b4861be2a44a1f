//! The async edges of stepsched, tested inside tokio runtimes (multi-thread
//! and current-thread): `Scheduler::call`, `Scheduler::send_async` and
//! `JoinSet::join_next`. The tests are in `tests/`; the core crate's own
//! `cargo test` does not build tokio.
