//! MPSC replay engine (being written).
