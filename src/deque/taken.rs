//! [`Taken`]: the items of a won steal claim, owned by the thief, between
//! the claim and their hand-over (`Stealer::steal_half_into_with`).

use super::MAX_STEAL;
use core::mem::MaybeUninit;

/// Up to [`MAX_STEAL`] owned items, handed out oldest first. Those not
/// handed out when it drops (a panic of the caller's `look`) are dropped
/// with it, each once.
pub(super) struct Taken<T> {
    /// `items[next..len]` are initialised and not yet handed out.
    items: [MaybeUninit<T>; MAX_STEAL],
    next: usize,
    len: usize,
}

impl<T> Taken<T> {
    pub(super) fn new() -> Self {
        Taken {
            items: [const { MaybeUninit::uninit() }; MAX_STEAL],
            next: 0,
            len: 0,
        }
    }

    /// Adds `item` behind the others. Panics past [`MAX_STEAL`] items (a
    /// claim never holds more).
    pub(super) fn push(&mut self, item: T) {
        self.items[self.len].write(item);
        self.len += 1;
    }

    /// The items not yet handed out, oldest first.
    pub(super) fn as_slice(&self) -> &[T] {
        let live = &self.items[self.next..self.len];
        // SAFETY: `items[next..len]` are initialised (field invariant), and
        // `MaybeUninit<T>` has the layout of `T`.
        unsafe { &*(live as *const [MaybeUninit<T>] as *const [T]) }
    }
}

impl<T> Iterator for Taken<T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        if self.next == self.len {
            return None;
        }
        self.next += 1;
        // SAFETY: initialised and not yet handed out (field invariant); the
        // advanced `next` keeps it from being read or dropped again.
        Some(unsafe { self.items[self.next - 1].assume_init_read() })
    }
}

impl<T> Drop for Taken<T> {
    fn drop(&mut self) {
        for item in &mut self.items[self.next..self.len] {
            // SAFETY: initialised and not handed out (field invariant);
            // dropped once, as `Taken` itself is.
            unsafe { item.assume_init_drop() };
        }
    }
}
