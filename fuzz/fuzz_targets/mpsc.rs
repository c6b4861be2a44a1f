//! Replays fuzzer bytes as MPSC and global-queue operations against
//! `VecDeque` models; the engine is `stepsched::fuzzing::mpsc`. Run from the
//! workspace root: `cargo +nightly fuzz run mpsc`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| stepsched::fuzzing::mpsc::replay(data));
