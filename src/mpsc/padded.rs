//! [`CachePadded`]: keeps one side's hot fields off the other side's line.

use core::ops::Deref;

/// Aligns `T` to 128 bytes so that fields written by producers and fields
/// written by the consumer never share a cache line (false sharing would
/// make every pop invalidate the producers' line and the reverse).
///
/// 128 rather than 64: recent x86-64 cores prefetch cache lines in adjacent
/// pairs, so two 64-byte-aligned hot words can still interfere.
#[repr(align(128))]
pub(crate) struct CachePadded<T>(pub(crate) T);

impl<T> Deref for CachePadded<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        &self.0
    }
}
