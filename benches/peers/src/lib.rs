//! Shared helpers for the peer comparison binaries in `src/bin/`.
