//! Replays fuzzer bytes as deque operations against a `VecDeque` model; the
//! engine is `stepsched::fuzzing::deque`. Run from the workspace root:
//! `cargo +nightly fuzz run deque`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| stepsched::fuzzing::deque::replay(data));
