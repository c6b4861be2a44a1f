//! A small set of PIDs: a process's monitors, watchers or links.

use crate::process::Pid;

/// How many PIDs a [`Pids`] keeps in place before it moves them to a
/// vector: a link of a chain has two (its neighbours), a watched process
/// one or two watchers, a watcher waiting for a reply one monitor.
const INLINE: usize = 2;

/// A set of PIDs kept as a list (order is not kept): up to [`INLINE`] in
/// place, so that the usual process, which monitors, is watched by or is
/// linked with one or two others, allocates nothing for it beyond the
/// body's extra part; more in a vector (kept once made).
#[derive(Debug)]
pub(super) enum Pids {
    Inline { len: u8, pids: [Pid; INLINE] },
    Heap(Vec<Pid>),
}

impl Default for Pids {
    fn default() -> Pids {
        Pids::Inline {
            len: 0,
            pids: [Pid::new(0, 0); INLINE],
        }
    }
}

impl Pids {
    #[inline]
    pub(super) fn as_slice(&self) -> &[Pid] {
        match self {
            Pids::Inline { len, pids } => &pids[..usize::from(*len)],
            Pids::Heap(list) => list,
        }
    }

    #[inline]
    pub(super) fn len(&self) -> usize {
        match self {
            Pids::Inline { len, .. } => usize::from(*len),
            Pids::Heap(list) => list.len(),
        }
    }

    #[inline]
    pub(super) fn contains(&self, pid: Pid) -> bool {
        self.as_slice().contains(&pid)
    }

    #[inline]
    pub(super) fn push(&mut self, pid: Pid) {
        match self {
            Pids::Inline { len, pids } if usize::from(*len) < INLINE => {
                pids[usize::from(*len)] = pid;
                *len += 1;
            }
            Pids::Inline { pids, .. } => {
                let mut list = Vec::with_capacity(2 * INLINE);
                list.extend_from_slice(pids);
                list.push(pid);
                *self = Pids::Heap(list);
            }
            Pids::Heap(list) => list.push(pid),
        }
    }

    /// Removes `pid`; whether it was there.
    #[inline]
    pub(super) fn remove(&mut self, pid: Pid) -> bool {
        // One match: each arm searches and removes in its own storage.
        match self {
            Pids::Inline { len, pids } => {
                let n = usize::from(*len);
                let Some(at) = pids[..n].iter().position(|p| *p == pid) else {
                    return false;
                };
                pids[at] = pids[n - 1];
                *len -= 1;
            }
            Pids::Heap(list) => {
                let Some(at) = list.iter().position(|p| *p == pid) else {
                    return false;
                };
                list.swap_remove(at);
            }
        }
        true
    }
}
