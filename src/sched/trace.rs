//! The execution tracer: per-worker ring buffers of scheduling events,
//! exported as Chrome trace-event JSON (Perfetto, `chrome://tracing`).
//!
//! Off by default; [`Builder::trace`](super::Builder::trace) turns it on
//! with a ring of a fixed number of events per worker, and
//! [`Scheduler::set_tracing`](super::Scheduler::set_tracing) pauses and
//! resumes recording at run time (a Relaxed load of a shared, read-mostly
//! flag per event, paid only when the builder asked for tracing). A step
//! whose begin was recorded always gets its end.
//!
//! # Recording
//!
//! Each worker owns its [`Ring`]: a boxed slice of fixed-size records it
//! writes with plain stores (no atomics, no cross-core traffic, no
//! allocation; when full it overwrites its oldest records). A record is a
//! timestamp (nanoseconds since the scheduler started, one `Instant` read,
//! ~30 ns on our machine), a [`Kind`] and two numbers. Events, each beside
//! the counter of [`Stats`](super::Stats) that counts it, so the two agree:
//!
//! | kind           | numbers             | counter          |
//! |----------------|---------------------|------------------|
//! | `StepBegin`    | PID                 |                  |
//! | `StepEnd`      | PID, status         | `steps`          |
//! | `Steal`        | victim, processes   | `steals`         |
//! | `GlobalTake`   | processes moved     | `global_takes`   |
//! | `InjectTake`   | processes moved     | `inject_takes`   |
//! | `Spin`         | idle round          | `spins`          |
//! | `Park`         |                     | `parks`          |
//! | `Unpark`       |                     | `wakeups`        |
//! | `WakeMessage`  | PID woken by a send |                  |
//! | `Spawn`        | child PID           |                  |
//! | `Complete`     | PID                 |                  |
//! | `Exit`         |                     |                  |
//!
//! Only workers record: a submit, send or completion from another thread
//! would have to write a shared buffer, which is the cross-core traffic this
//! design avoids; such a process shows up when a worker takes it
//! (`GlobalTake`, `InjectTake`, then its `StepBegin`). Completions come from
//! handlers, which answer from their own threads (or, on the worker, while
//! the process is still Running, which wakes nothing), so there is no
//! wake-by-completion event. The shutdown phases are recorded by the thread
//! running `shutdown`, in a list of their own.
//!
//! When the builder did not ask for tracing, the worker's
//! `Option<Box<Ring>>` is `None` and each event site costs one predictable
//! branch on a field of the worker.
//!
//! # Export
//!
//! A worker hands its ring back when it exits, so the trace is complete
//! after [`Scheduler::shutdown`](super::Scheduler::shutdown):
//! [`Scheduler::trace`](super::Scheduler::trace) returns a [`Trace`], and
//! [`Trace::write_chrome_json`] writes the JSON (by hand; the crate has no
//! dependencies): one track per worker (`tid` = worker index) and one for
//! the scheduler (`tid` = number of workers); steps are `B`/`E` slices named
//! `step`, everything else instant events (`ph: "i"`).

use crate::process::Pid;
use crate::sync::{Arc, AtomicBool, Mutex, Ordering};
use std::io::{self, Write};
use std::time::Instant;

/// What a trace record says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    StepBegin,
    StepEnd,
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
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::StepBegin | Kind::StepEnd => "step",
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
        }
    }
}

/// One event: 24 bytes.
#[derive(Debug, Clone, Copy)]
struct Record {
    /// Nanoseconds since the trace's epoch.
    at: u64,
    a: u64,
    b: u32,
    kind: Kind,
}

/// One worker's ring of records. Owned and written by that worker only.
pub(crate) struct Ring {
    epoch: Instant,
    /// The run-time switch ([`Scheduler::set_tracing`](super::Scheduler::set_tracing)),
    /// shared by every ring of a scheduler. Written rarely, read per event.
    enabled: Arc<AtomicBool>,
    records: Box<[Record]>,
    /// Where the next record goes.
    next: usize,
    /// Whether `next` has wrapped: the oldest records were overwritten.
    wrapped: bool,
    /// Whether the current step's begin was recorded (so its end must be).
    in_step: bool,
}

impl Ring {
    /// A ring of `capacity` records (at least 1), all allocated now.
    pub(crate) fn new(epoch: Instant, capacity: usize, enabled: Arc<AtomicBool>) -> Self {
        let blank = Record {
            at: 0,
            a: 0,
            b: 0,
            kind: Kind::Exit,
        };
        Ring {
            epoch,
            enabled,
            records: vec![blank; capacity.max(1)].into_boxed_slice(),
            next: 0,
            wrapped: false,
            in_step: false,
        }
    }

    /// Records `kind` with its numbers, stamped now, if tracing is on.
    /// Returns whether it did.
    ///
    /// Never inlined: the call sits behind the worker's `Option` check, and
    /// inlining the clock read and the ring write into the step loop costs
    /// it registers even when tracing is off (measured: ~30 instructions a
    /// step more with it inlined).
    #[inline(never)]
    pub(crate) fn record(&mut self, kind: Kind, a: u64, b: u32) -> bool {
        // Relaxed: a switch that publishes nothing; pairs with the Relaxed
        // store in `Tracing::set_enabled`, seen at some later event.
        if !self.enabled.load(Ordering::Relaxed) {
            return false;
        }
        self.write(kind, a, b);
        true
    }

    /// Records the start of a step of `pid`, if tracing is on.
    #[inline(never)]
    pub(crate) fn begin_step(&mut self, pid: Pid) {
        self.in_step = self.record(Kind::StepBegin, pid.into_raw(), 0);
    }

    /// Records the end of the step if its begin was recorded, even if
    /// tracing was switched off meanwhile: every `StepBegin` has its
    /// `StepEnd`.
    #[inline(never)]
    pub(crate) fn end_step(&mut self, pid: Pid, status: u32) {
        if core::mem::take(&mut self.in_step) {
            self.write(Kind::StepEnd, pid.into_raw(), status);
        }
    }

    #[inline]
    fn write(&mut self, kind: Kind, a: u64, b: u32) {
        let at = self.epoch.elapsed().as_nanos() as u64;
        self.records[self.next] = Record { at, a, b, kind };
        self.next += 1;
        if self.next == self.records.len() {
            self.next = 0;
            self.wrapped = true;
        }
    }

    /// The records, oldest first.
    fn in_order(&self) -> impl Iterator<Item = &Record> {
        let (old, new) = if self.wrapped {
            (&self.records[self.next..], &self.records[..self.next])
        } else {
            (&self.records[..self.next], &self.records[..0])
        };
        old.iter().chain(new)
    }
}

/// The status codes of `StepEnd` records.
pub(crate) mod status {
    pub(crate) const CONTINUE: u32 = 0;
    pub(crate) const WAIT: u32 = 1;
    pub(crate) const IDLE: u32 = 2;
    pub(crate) const DONE: u32 = 3;
    pub(crate) const ERROR: u32 = 4;

    pub(super) fn name(code: u32) -> &'static str {
        ["continue", "wait", "idle", "done", "error"]
            .get(code as usize)
            .copied()
            .unwrap_or("?")
    }
}

/// A finished trace: every worker's ring and the shutdown phases. Made by
/// [`Scheduler::trace`](super::Scheduler::trace).
pub struct Trace {
    workers: Vec<Option<Ring>>,
    phases: Vec<(u64, &'static str)>,
    lost: bool,
}

impl Trace {
    pub(crate) fn new(workers: Vec<Option<Ring>>, phases: Vec<(u64, &'static str)>) -> Self {
        let lost = workers
            .iter()
            .any(|r| r.as_ref().is_some_and(|r| r.wrapped));
        Trace {
            workers,
            phases,
            lost,
        }
    }

    /// Whether some worker's ring filled up and overwrote its oldest
    /// events (the trace then covers only the end of the run).
    pub fn wrapped(&self) -> bool {
        self.lost
    }

    /// Writes the trace in the Chrome trace-event JSON format: open it in
    /// <https://ui.perfetto.dev> or `chrome://tracing`.
    ///
    /// Per worker, timestamps never go back: a thread that moved to a core
    /// whose clock reads slightly behind is shown at its last time.
    ///
    /// # Errors
    ///
    /// Those of `out`.
    pub fn write_chrome_json(&self, out: &mut impl Write) -> io::Result<()> {
        let scheduler_tid = self.workers.len();
        writeln!(out, "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
        let mut first = true;
        let mut sep = |out: &mut dyn Write| -> io::Result<()> {
            if !first {
                writeln!(out, ",")?;
            }
            first = false;
            Ok(())
        };
        for tid in 0..=scheduler_tid {
            sep(out)?;
            let name = if tid == scheduler_tid {
                "scheduler".to_owned()
            } else {
                format!("worker {tid}")
            };
            write!(
                out,
                "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{tid},\
                 \"args\":{{\"name\":\"{name}\"}}}}"
            )?;
        }
        for (tid, ring) in self.workers.iter().enumerate() {
            let Some(ring) = ring else { continue };
            let mut last = 0;
            // A wrapped ring may begin inside a step: skip to the first
            // record that is not the end of a step whose begin was lost.
            let mut open = false;
            for record in ring.in_order() {
                match record.kind {
                    Kind::StepEnd if !open => continue,
                    Kind::StepBegin => open = true,
                    Kind::StepEnd => open = false,
                    _ => {}
                }
                last = last.max(record.at);
                sep(out)?;
                write_record(out, tid, last, record)?;
            }
        }
        for &(at, phase) in &self.phases {
            sep(out)?;
            write!(
                out,
                "{{\"name\":\"shutdown: {phase}\",\"cat\":\"shutdown\",\"ph\":\"i\",\"s\":\"g\",\
                 \"pid\":1,\"tid\":{scheduler_tid},\"ts\":{}}}",
                micros(at)
            )?;
        }
        writeln!(out, "\n]}}")
    }
}

impl core::fmt::Debug for Trace {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Trace")
            .field("workers", &self.workers.len())
            .field("wrapped", &self.lost)
            .finish_non_exhaustive()
    }
}

/// Nanoseconds as the microseconds the format counts in.
fn micros(ns: u64) -> String {
    format!("{}.{:03}", ns / 1_000, ns % 1_000)
}

fn write_record(out: &mut dyn Write, tid: usize, at: u64, r: &Record) -> io::Result<()> {
    let ts = micros(at);
    let name = r.kind.name();
    let head = format!("\"pid\":1,\"tid\":{tid},\"ts\":{ts}");
    let pid = || Pid::from_raw(r.a);
    match r.kind {
        Kind::StepBegin => write!(
            out,
            "{{\"name\":\"{name}\",\"cat\":\"step\",\"ph\":\"B\",{head},\
             \"args\":{{\"pid\":\"{}\"}}}}",
            pid()
        ),
        Kind::StepEnd => write!(
            out,
            "{{\"name\":\"{name}\",\"cat\":\"step\",\"ph\":\"E\",{head},\
             \"args\":{{\"status\":\"{}\"}}}}",
            status::name(r.b)
        ),
        Kind::Steal => write!(
            out,
            "{{\"name\":\"{name}\",\"cat\":\"steal\",\"ph\":\"i\",\"s\":\"t\",{head},\
             \"args\":{{\"victim\":{},\"count\":{}}}}}",
            r.a, r.b
        ),
        Kind::GlobalTake | Kind::InjectTake => write!(
            out,
            "{{\"name\":\"{name}\",\"cat\":\"queue\",\"ph\":\"i\",\"s\":\"t\",{head},\
             \"args\":{{\"count\":{}}}}}",
            r.b
        ),
        Kind::Spin => write!(
            out,
            "{{\"name\":\"{name}\",\"cat\":\"idle\",\"ph\":\"i\",\"s\":\"t\",{head},\
             \"args\":{{\"round\":{}}}}}",
            r.b
        ),
        Kind::Park | Kind::Unpark | Kind::Exit => write!(
            out,
            "{{\"name\":\"{name}\",\"cat\":\"idle\",\"ph\":\"i\",\"s\":\"t\",{head}}}"
        ),
        Kind::WakeMessage | Kind::Spawn | Kind::Complete => write!(
            out,
            "{{\"name\":\"{name}\",\"cat\":\"process\",\"ph\":\"i\",\"s\":\"t\",{head},\
             \"args\":{{\"pid\":\"{}\"}}}}",
            pid()
        ),
    }
}

/// The tracer's shared part: settings, and where workers leave their rings
/// when they exit. Touched by workers only at start and exit.
pub(crate) struct Tracing {
    pub(crate) epoch: Instant,
    pub(crate) capacity: usize,
    /// Whether workers record (see `Ring::enabled`).
    pub(crate) enabled: Arc<AtomicBool>,
    rings: Mutex<Vec<Option<Ring>>>,
    phases: Mutex<Vec<(u64, &'static str)>>,
}

impl Tracing {
    pub(crate) fn new(workers: usize, capacity: usize) -> Self {
        Tracing {
            epoch: Instant::now(),
            capacity,
            enabled: Arc::new(AtomicBool::new(true)),
            rings: Mutex::new((0..workers).map(|_| None).collect()),
            phases: Mutex::new(Vec::new()),
        }
    }

    /// Switches recording on or off, for every worker.
    pub(crate) fn set_enabled(&self, on: bool) {
        // Relaxed: see `Ring::record`.
        self.enabled.store(on, Ordering::Relaxed);
    }

    /// Worker `index`, exiting, leaves its ring.
    pub(crate) fn hand_back(&self, index: usize, ring: Ring) {
        self.rings.lock().unwrap_or_else(|e| e.into_inner())[index] = Some(ring);
    }

    /// Records that shutdown reached `phase`.
    pub(crate) fn phase(&self, phase: &'static str) {
        let at = self.epoch.elapsed().as_nanos() as u64;
        self.phases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((at, phase));
    }

    /// The trace, once every worker has left its ring; takes it.
    pub(crate) fn take(&self) -> Option<Trace> {
        let mut rings = self.rings.lock().unwrap_or_else(|e| e.into_inner());
        if rings.is_empty() || rings.iter().any(Option::is_none) {
            return None;
        }
        let phases = core::mem::take(&mut *self.phases.lock().unwrap_or_else(|e| e.into_inner()));
        Some(Trace::new(core::mem::take(&mut *rings), phases))
    }
}
