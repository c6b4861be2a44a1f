//! Replay engines for the fuzz targets in `fuzz/` (built with `--cfg fuzzing`,
//! and under `cargo test`, where each engine also runs on generated inputs).
//!
//! Each engine reads the fuzzer's bytes as a sequence of operations, applies
//! them both to the real structure and to a plain `VecDeque` model, and
//! panics on the first difference. The fuzz targets themselves are one line.

pub mod deque;
pub mod mpsc;
