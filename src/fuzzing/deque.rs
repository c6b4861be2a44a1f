//! Deque replay engine (being written).
