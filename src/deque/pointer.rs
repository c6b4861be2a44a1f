//! The [`Pointer`] trait: what the deque stores.

use core::ptr::NonNull;

/// An owning pointer that can travel through the deque as one machine word.
///
/// The deque stores every item as the raw pointer this trait produces, in an
/// atomic slot, and turns it back into `Self` exactly once, for whoever wins
/// the item. Storing pointers rather than `T` by value is what lets a thief
/// read a slot it may later lose without a data race
/// (docs/ARCHITECTURE.md, trap 2: racy slot reads).
///
/// Implemented for [`Box<T>`] and [`Arc<T>`](std::sync::Arc).
///
/// # Safety
///
/// An implementation must guarantee that:
/// - `into_raw` returns a pointer that `from_raw` turns back into a value
///   equal in ownership to the original (no double free, no leak);
/// - the pointer stays valid while it is held only in raw form, on any
///   thread (hence the `Send` bound);
/// - the pointer's bits are not modified by the deque and need no tag bits.
///
/// # Examples
///
/// ```
/// use stepsched::deque::Pointer;
///
/// let raw = Box::new(7u32).into_raw();
/// // SAFETY: `raw` came from `Box::into_raw` just above and is used once.
/// let back = unsafe { <Box<u32> as Pointer>::from_raw(raw) };
/// assert_eq!(*back, 7);
/// ```
pub unsafe trait Pointer: Sized + Send {
    /// Gives up ownership and returns the raw, non-null pointer.
    fn into_raw(self) -> NonNull<()>;

    /// Takes ownership back from a pointer made by [`Pointer::into_raw`].
    ///
    /// # Safety
    ///
    /// `p` must come from `into_raw` of the same type, and each such pointer
    /// may be turned back into `Self` at most once.
    unsafe fn from_raw(p: NonNull<()>) -> Self;
}

// SAFETY: `Box::into_raw` never returns null (zero-sized `T` gives a dangling,
// aligned, non-null pointer) and `Box::from_raw` restores the unique owner.
// `Box<T>` is `Send` when `T` is.
unsafe impl<T: Send> Pointer for Box<T> {
    #[inline]
    fn into_raw(self) -> NonNull<()> {
        // SAFETY: `Box::into_raw` returns a non-null pointer (see the impl note).
        unsafe { NonNull::new_unchecked(Box::into_raw(self)).cast() }
    }

    #[inline]
    unsafe fn from_raw(p: NonNull<()>) -> Self {
        // SAFETY: the caller guarantees `p` came from `Box::<T>::into_raw` and
        // is reclaimed only once.
        unsafe { Box::from_raw(p.cast::<T>().as_ptr()) }
    }
}

// SAFETY: `Arc::into_raw` never returns null and `Arc::from_raw` takes back the
// one strong count it gave up. `Arc<T>` is `Send` when `T: Send + Sync`.
unsafe impl<T: Send + Sync> Pointer for std::sync::Arc<T> {
    #[inline]
    fn into_raw(self) -> NonNull<()> {
        // SAFETY: `Arc::into_raw` returns a pointer into a live allocation,
        // which is never null.
        unsafe { NonNull::new_unchecked(std::sync::Arc::into_raw(self) as *mut T).cast() }
    }

    #[inline]
    unsafe fn from_raw(p: NonNull<()>) -> Self {
        // SAFETY: the caller guarantees `p` came from `Arc::<T>::into_raw` and
        // is reclaimed only once, so the strong count it carries is restored.
        unsafe { std::sync::Arc::from_raw(p.cast::<T>().as_ptr()) }
    }
}
