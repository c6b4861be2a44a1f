//! Where the forwarding worker leaves a receiver's messages: a queue under a
//! mutex, with a condition variable for blocking receives and a [`Waker`]
//! for async ones.

use crate::sync::{Condvar, Mutex, MutexGuard};
use core::task::Waker;
use std::collections::VecDeque;

/// Where the forwarding worker leaves a receiver's messages.
pub(crate) struct Inbox<M> {
    pub(super) state: Mutex<InboxState<M>>,
    pub(super) ready: Condvar,
}

pub(super) struct InboxState<M> {
    pub(super) queue: VecDeque<M>,
    /// The receiver's slot was closed: nothing more will come.
    pub(super) closed: bool,
    /// The [`Receiver`] was dropped: nobody will read what comes, so a
    /// forward hands it back to be reported (`push_all`).
    pub(super) dropped: bool,
    pub(super) waker: Option<Waker>,
}

impl<M> Inbox<M> {
    pub(super) fn new() -> Self {
        Inbox {
            state: Mutex::new(InboxState {
                queue: VecDeque::new(),
                closed: false,
                dropped: false,
                waker: None,
            }),
            ready: Condvar::new(),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, InboxState<M>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `messages` and wakes the receiver, or, once the [`Receiver`]
    /// was dropped, hands each to `refused` (to be reported undelivered).
    /// Called by the worker that holds the receiver's slot (Running), so
    /// calls never overlap.
    ///
    /// Every thread blocked in a `recv` is woken when more than one
    /// message came (a `Receiver` is `Sync`: two threads may wait on it,
    /// and one wake for two messages left the other asleep with a message
    /// queued).
    pub(crate) fn push_all(&self, messages: impl Iterator<Item = M>, refused: impl FnMut(M)) {
        let (waker, added) = {
            let mut state = self.lock();
            if state.dropped {
                drop(state);
                messages.for_each(refused);
                return;
            }
            let before = state.queue.len();
            state.queue.extend(messages);
            let added = state.queue.len() - before;
            if added == 0 {
                return;
            }
            (state.waker.take(), added)
        };
        if added == 1 {
            self.ready.notify_one();
        } else {
            self.ready.notify_all();
        }
        if let Some(waker) = waker {
            crate::sched::outside::join::wake_contained(waker);
        }
    }

    /// Nothing more will come: wakes the receiver to find out.
    pub(crate) fn close(&self) {
        let waker = {
            let mut state = self.lock();
            state.closed = true;
            state.waker.take()
        };
        self.ready.notify_all();
        if let Some(waker) = waker {
            crate::sched::outside::join::wake_contained(waker);
        }
    }
}
