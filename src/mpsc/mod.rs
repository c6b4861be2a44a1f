//! Intrusive multi-producer single-consumer queue (Vyukov). Being written.
