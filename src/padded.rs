//! [`CachePadded`]: keeps a hot atomic on a cache line of its own.

use core::ops::Deref;

/// Pads and aligns `T` to 128 bytes, so that two values written by different
/// threads never share a cache line (false sharing).
///
/// 128 rather than 64: on current x86_64 parts the L2 spatial prefetcher pulls
/// cache lines in adjacent pairs, and Apple's and some Arm cores use 128-byte
/// lines outright. The cost is a few bytes per queue, paid once.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct CachePadded<T>(pub(crate) T);

impl<T> Deref for CachePadded<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        &self.0
    }
}
