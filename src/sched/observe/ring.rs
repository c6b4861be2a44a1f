//! A worker's trace ring: the records of one thread, written without a
//! lock or an allocation by the thread that owns it (the tracer's protocol
//! and its cost are in `trace.rs`).

use crate::padded::CachePadded;
use crate::process::Pid;
use crate::sched::observe::ticks::Ticks;
use crate::sync::{Arc, AtomicBool, Ordering};

/// What a trace record says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    Step,
    Steal,
    GlobalTake,
    InjectTake,
    Spin,
    Park,
    Unpark,
    WakeMessage,
    Spawn,
    Complete,
    Exit,
    Submit,
    Send,
    WakeCompletion,
}

impl Kind {
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Step => "step",
            Kind::Steal => "steal",
            Kind::GlobalTake => "global_take",
            Kind::InjectTake => "inject_take",
            Kind::Spin => "spin",
            Kind::Park => "park",
            Kind::Unpark => "unpark",
            Kind::WakeMessage => "wake_by_message",
            Kind::Spawn => "spawn",
            Kind::Complete => "complete",
            Kind::Exit => "exit",
            Kind::Submit => "submit",
            Kind::Send => "send",
            Kind::WakeCompletion => "wake_by_completion",
        }
    }
}

/// One event: 32 bytes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Record {
    /// A [`Ticks`] reading: when it happened (a step: when it began).
    pub(super) at: u64,
    /// A step's end reading; a completion's tag.
    pub(super) extra: u64,
    pub(super) a: u64,
    pub(super) b: u32,
    pub(super) kind: Kind,
}

/// A fixed array of records used as a ring: the oldest are overwritten.
pub(super) struct Records {
    pub(super) records: Box<[Record]>,
    /// Where the next record goes.
    pub(super) next: usize,
    /// Whether `next` has wrapped: the oldest records were overwritten.
    pub(super) wrapped: bool,
}

impl Records {
    /// Room for `capacity` records (at least 1), all allocated now.
    pub(super) fn new(capacity: usize) -> Self {
        let blank = Record {
            at: 0,
            extra: 0,
            a: 0,
            b: 0,
            kind: Kind::Exit,
        };
        Records {
            records: vec![blank; capacity.max(1)].into_boxed_slice(),
            next: 0,
            wrapped: false,
        }
    }

    #[inline]
    pub(super) fn push(&mut self, record: Record) {
        self.records[self.next] = record;
        self.next += 1;
        if self.next == self.records.len() {
            self.next = 0;
            self.wrapped = true;
        }
    }

    /// The records, oldest first.
    pub(super) fn in_order(&self) -> impl Iterator<Item = &Record> {
        let (old, new) = if self.wrapped {
            (&self.records[self.next..], &self.records[..self.next])
        } else {
            (&self.records[..self.next], &self.records[..0])
        };
        old.iter().chain(new)
    }
}

/// One worker's ring of records. Owned and written by that worker only.
///
/// Aligned (and so padded) to 128 bytes like
/// [`CachePadded`](crate::padded::CachePadded): the workers' rings are
/// boxed one after the other at build, and without it one worker's
/// per-event writes (`next`, the step stamps) would share a line with its
/// neighbour's.
#[repr(align(128))]
pub(crate) struct Ring {
    clock: Ticks,
    /// The run-time switch ([`Scheduler::set_tracing`](crate::sched::Scheduler::set_tracing)),
    /// shared by every ring of a scheduler. Written rarely, read per event.
    enabled: Arc<CachePadded<AtomicBool>>,
    pub(super) records: Records,
    /// The current step's begin reading, if the step is being recorded.
    step_begin: Option<u64>,
    /// The end reading of the last step recorded, if the last step was:
    /// the stamp of its effects.
    step_end: Option<u64>,
}

impl Ring {
    /// A ring of `capacity` records (at least 1), all allocated now.
    pub(crate) fn new(
        clock: Ticks,
        capacity: usize,
        enabled: Arc<CachePadded<AtomicBool>>,
    ) -> Self {
        Ring {
            clock,
            enabled,
            records: Records::new(capacity),
            step_begin: None,
            step_end: None,
        }
    }

    #[inline]
    fn on(&self) -> bool {
        // Relaxed: a switch that publishes nothing; pairs with the Relaxed
        // store in `Tracing::set_enabled`, seen at some later event.
        self.enabled.load(Ordering::Relaxed)
    }

    /// Records `kind` with its numbers, stamped now, if tracing is on.
    ///
    /// Never inlined: the call sits behind the worker's `Option` check, and
    /// inlining the clock read and the ring write into the step loop costs
    /// it registers even when tracing is off (tens of instructions a step).
    #[inline(never)]
    pub(crate) fn record(&mut self, kind: Kind, a: u64, b: u32) {
        if self.on() {
            let at = self.clock.now();
            self.records.push(Record {
                at,
                extra: 0,
                a,
                b,
                kind,
            });
        }
    }

    /// Records an effect of the step that just returned (a spawn, a wake,
    /// its ending), stamped with that step's end if it was recorded, else
    /// now.
    #[inline(never)]
    pub(crate) fn record_effect(&mut self, kind: Kind, a: u64) {
        if self.on() {
            let at = match self.step_end {
                Some(end) => end,
                None => self.clock.now(),
            };
            self.records.push(Record {
                at,
                extra: 0,
                a,
                b: 0,
                kind,
            });
        }
    }

    /// Stamps the start of a step, if tracing is on.
    #[inline(never)]
    pub(crate) fn begin_step(&mut self) {
        self.step_begin = if self.on() {
            Some(self.clock.now())
        } else {
            None
        };
    }

    /// Records the step if its begin was stamped, even if tracing was
    /// switched off meanwhile: a step is recorded whole or not at all.
    #[inline(never)]
    pub(crate) fn end_step(&mut self, pid: Pid, status: u32) {
        self.step_end = match self.step_begin.take() {
            Some(begin) => {
                let end = self.clock.now();
                self.records.push(Record {
                    at: begin,
                    extra: end,
                    a: pid.into_raw(),
                    b: status,
                    kind: Kind::Step,
                });
                Some(end)
            }
            None => None,
        };
    }
}

/// The status codes of `Step` records.
pub(crate) mod status {
    pub(crate) const CONTINUE: u32 = 0;
    pub(crate) const WAIT: u32 = 1;
    pub(crate) const IDLE: u32 = 2;
    pub(crate) const DONE: u32 = 3;
    pub(crate) const ERROR: u32 = 4;

    pub(crate) fn name(code: u32) -> &'static str {
        ["continue", "wait", "idle", "done", "error"]
            .get(code as usize)
            .copied()
            .unwrap_or("?")
    }
}
