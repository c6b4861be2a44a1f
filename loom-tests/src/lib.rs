//! loom models of `stepsched`'s concurrency protocols live in `tests/`.
//!
//! Run them with:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p stepsched-loom-tests --release
//! ```
//!
//! Without `--cfg loom` every model compiles to nothing.
