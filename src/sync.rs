//! The one switch between `std` and `loom` synchronization primitives.
//!
//! Every other module imports atomics, `Arc`, `UnsafeCell` and thread
//! helpers from here, never from `std` directly, so that building with
//! `RUSTFLAGS="--cfg loom"` swaps the whole crate onto loom's model-checked
//! types (see `loom-tests/`). Nothing here changes behaviour in a normal
//! build: the std versions are re-exported as they are, and [`UnsafeCell`]
//! is a thin wrapper that offers loom's closure API (`with`, `with_mut`).

// Each component uses a subset; the switch re-exports the whole set.
#[cfg(not(loom))]
#[allow(unused_imports)]
mod imp {
    pub(crate) use std::hint::spin_loop;
    pub(crate) use std::sync::atomic::{
        fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
    };
    pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard};
    pub(crate) use std::thread;

    /// `std::cell::UnsafeCell` with loom's access API, so the same code
    /// compiles under both. Under loom the closures are checked for
    /// concurrent access; here they compile to a plain pointer.
    #[derive(Debug)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    #[allow(dead_code)]
    impl<T> UnsafeCell<T> {
        pub(crate) const fn new(value: T) -> Self {
            Self(std::cell::UnsafeCell::new(value))
        }

        /// Runs `f` with a shared pointer to the contents.
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        /// Runs `f` with a mutable pointer to the contents.
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }

        /// A raw pointer to the contents. std builds only: for code that
        /// loom does not model (the scheduler's process table).
        pub(crate) fn get(&self) -> *mut T {
            self.0.get()
        }

        /// Consumes the cell and returns its contents.
        pub(crate) fn into_inner(self) -> T {
            self.0.into_inner()
        }
    }
}

#[cfg(loom)]
#[allow(unused_imports)]
mod imp {
    pub(crate) use loom::cell::UnsafeCell;
    pub(crate) use loom::hint::spin_loop;
    pub(crate) use loom::sync::atomic::{
        fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
    };
    pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard};
    pub(crate) use loom::thread;
}

#[allow(unused_imports)]
pub(crate) use imp::*;

/// Asks the CPU to bring the cache line at `p` into this core's cache, in
/// the state a write needs: a hint, not an access (it reads nothing the
/// program sees, cannot fault, and `p` may dangle). For misses that would
/// otherwise come one after the other, each waiting for the last (a step
/// that sends to thousands of processes, a thief about to run the batch it
/// stole: see `src/sched/worker/README.md`, "Prefetching"). x86_64 only
/// (`prefetchw`, or `prefetcht0` where the target lacks it); elsewhere,
/// and under Miri and loom, it does nothing.
#[inline(always)]
pub(crate) fn prefetch_write<T>(p: *const T) {
    #[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
    // SAFETY: a prefetch is a hint: it accesses no memory the program can
    // observe and does not fault, whatever the address.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0};
        _mm_prefetch::<_MM_HINT_ET0>(p.cast::<i8>());
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri), not(loom))))]
    let _ = p;
}
