//! The execution tracer: per-worker ring buffers of scheduling events,
//! exported as Chrome trace-event JSON (Perfetto, `chrome://tracing`).
//!
//! Off by default; [`Builder::trace`](crate::sched::Builder::trace) turns it on
//! with a ring of a fixed number of events per worker, and
//! [`Scheduler::set_tracing`](crate::sched::Scheduler::set_tracing) pauses and
//! resumes recording at run time (a Relaxed load of a shared, read-mostly
//! flag per event, paid only when the builder asked for tracing). A step
//! whose begin was stamped is always recorded.
//!
//! # Recording
//!
//! Each worker owns its [`Ring`]: a boxed slice of fixed-size records it
//! writes with plain stores (no atomics, no cross-core traffic, no
//! allocation; when full it overwrites its oldest records). A record is 32
//! bytes: a raw clock reading (see `ticks.rs`: the TSC where it is
//! invariant, else an `Instant`), a [`Kind`] and three
//! numbers. A step is one record: its begin reading is kept in the ring
//! while the step runs, and the record, with the end reading and how the
//! step ended, is written when it returns. Events, each beside the counter
//! of [`Stats`](crate::sched::Stats) that counts it, so the two agree:
//!
//! | kind             | track   | numbers                    | stamp      | counter        |
//! |------------------|---------|----------------------------|------------|----------------|
//! | `Step`           | worker  | PID, end, status           | begin, end | `steps`        |
//! | `Steal`          | worker  | victim, processes          | own        | `steals`       |
//! | `GlobalTake`     | worker  | processes moved            | own        | `global_takes` |
//! | `InjectTake`     | worker  | processes moved            | own        | `inject_takes` |
//! | `Spin`           | worker  | idle round                 | own        | `spins`        |
//! | `Park`           | worker  |                            | own        | `parks`        |
//! | `Unpark`         | worker  |                            | own        | `wakeups`      |
//! | `WakeMessage`    | worker  | PID woken by a step's send | step end   |                |
//! | `Spawn`          | worker  | child PID                  | step end   |                |
//! | `Complete`       | worker  | PID                        | step end¹  | `completed`    |
//! | `Exit`           | worker  |                            | own        |                |
//! | `Submit`         | outside | PID                        | own        | `submitted`    |
//! | `Send`           | outside | PID, whether it woke it    | own        |                |
//! | `WakeCompletion` | outside | PID, tag                   | own        |                |
//!
//! "Step end": a step's spawns, sends and ending are applied right after it
//! returns, and stamped with its end reading rather than a reading of their
//! own, which would cost a clock read each. ¹ A process closed without a
//! step (terminated while queued, or forced at shutdown) gets its own.
//!
//! Threads that are not workers (the embedder's, handlers' own threads)
//! have no ring. Their submits and sends (`Scheduler::submit`,
//! `Scheduler::send`) and the completions that wake a waiting process
//! (`Completer::complete`) are recorded in one *outside* ring behind a
//! mutex, shared by those threads and exported as a track of its own. A
//! worker never takes that lock on its own account: its spawns and sends
//! are in its ring, and a handler that completes on the worker (handlers
//! run right after the step, while the process is still Running) wakes
//! nothing and records nothing. Only a worker that completes *another*,
//! waiting process's command (a completer handed between processes) takes
//! it. So the cost of tracing outside threads falls on those threads: an
//! uncontended lock and a clock read per submit or send. The
//! shutdown phases are recorded by the thread running `shutdown`, in a list
//! of their own.
//!
//! When the builder did not ask for tracing, the worker's
//! `Option<Box<Ring>>` is `None` and each event site costs one predictable
//! branch on a field of the worker; outside threads test
//! `Option<Tracing>` on the shared state.
//!
//! # Export
//!
//! A worker hands its ring back when it exits, so the trace is complete
//! after [`Scheduler::shutdown`](crate::sched::Scheduler::shutdown):
//! [`Scheduler::trace`](crate::sched::Scheduler::trace) takes the second
//! calibration pair (`ticks.rs`) and returns a [`Trace`], and
//! [`Trace::write_chrome_json`] writes the JSON (by hand; the crate has no
//! dependencies): one track per worker (`tid` = worker index), then the
//! `scheduler` track (shutdown phases, `tid` = number of workers) and the
//! `outside` track (`tid` = workers + 1); steps are complete events
//! (`ph: "X"`, with `dur`) named `step`, everything else instant events
//! (`ph: "i"`). Timestamps are nanoseconds since the tracer started,
//! written as microseconds with three decimals. A step of a process that
//! was registered under a name while tracing was on carries the name in its
//! `args` (`"name"`), beside its PID: the tracer keeps each registered
//! PID's name, at most as many as a ring's capacity.

use crate::padded::CachePadded;
use crate::process::{Name, Pid};
use crate::sched::observe::ticks::{Calibration, CalibrationStart, Ticks};
use crate::sync::{Arc, AtomicBool, AtomicU64, Mutex, Ordering};
use std::collections::HashMap;
use std::io::{self, Write};

pub(crate) use super::ring::{status, Kind, Ring};
use super::ring::{Record, Records};

/// A finished trace: every worker's ring, the outside ring and the
/// shutdown phases. Made by [`Scheduler::trace`](crate::sched::Scheduler::trace).
pub struct Trace {
    workers: Vec<Option<Ring>>,
    outside: Records,
    phases: Vec<(u64, &'static str)>,
    calibration: Calibration,
    /// Registered names, by raw PID.
    names: HashMap<u64, Name>,
}

impl Trace {
    /// Whether some ring (a worker's, or the outside threads') filled up
    /// and overwrote its oldest events (that track then covers only the
    /// end of the run).
    pub fn wrapped(&self) -> bool {
        self.outside.wrapped
            || (self.workers.iter()).any(|r| r.as_ref().is_some_and(|r| r.records.wrapped))
    }

    /// Writes the trace in the Chrome trace-event JSON format: open it in
    /// <https://ui.perfetto.dev> or `chrome://tracing`.
    ///
    /// Per track, timestamps never go back and steps never overlap: a
    /// thread that moved to a core whose clock reads slightly behind is
    /// shown at its last time.
    ///
    /// # Errors
    ///
    /// Those of `out`.
    pub fn write_chrome_json(&self, out: &mut impl Write) -> io::Result<()> {
        let scheduler_tid = self.workers.len();
        let outside_tid = scheduler_tid + 1;
        writeln!(out, "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
        let mut first = true;
        let mut sep = |out: &mut dyn Write| -> io::Result<()> {
            if !first {
                writeln!(out, ",")?;
            }
            first = false;
            Ok(())
        };
        for tid in 0..=outside_tid {
            sep(out)?;
            let name = match tid {
                _ if tid == scheduler_tid => "scheduler".to_owned(),
                _ if tid == outside_tid => "outside".to_owned(),
                _ => format!("worker {tid}"),
            };
            write!(
                out,
                "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{tid},\
                 \"args\":{{\"name\":\"{name}\"}}}}"
            )?;
        }
        let tracks = (self.workers.iter().enumerate())
            .filter_map(|(tid, ring)| Some((tid, &ring.as_ref()?.records)))
            .chain([(outside_tid, &self.outside)]);
        for (tid, records) in tracks {
            let mut last = 0;
            for record in records.in_order() {
                let at = last.max(self.calibration.ns(record.at));
                last = at;
                if record.kind == Kind::Step {
                    last = last.max(self.calibration.ns(record.extra));
                }
                sep(out)?;
                write_record(out, tid, at, last - at, record, &self.names)?;
            }
        }
        for &(at, phase) in &self.phases {
            sep(out)?;
            write!(
                out,
                "{{\"name\":\"shutdown: {phase}\",\"cat\":\"shutdown\",\"ph\":\"i\",\"s\":\"g\",\
                 \"pid\":1,\"tid\":{scheduler_tid},\"ts\":{}}}",
                micros(self.calibration.ns(at))
            )?;
        }
        writeln!(out, "\n]}}")
    }
}

impl core::fmt::Debug for Trace {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Trace")
            .field("workers", &self.workers.len())
            .field("wrapped", &self.wrapped())
            .finish_non_exhaustive()
    }
}

/// `,"name":"…"`, the name escaped as a JSON string.
fn name_arg(name: &Name) -> String {
    let mut arg = String::from(",\"name\":\"");
    for c in name.chars() {
        match c {
            '"' => arg.push_str("\\\""),
            '\\' => arg.push_str("\\\\"),
            c if (c as u32) < 0x20 => arg.push_str(&format!("\\u{:04x}", c as u32)),
            c => arg.push(c),
        }
    }
    arg.push('"');
    arg
}

/// Nanoseconds as the microseconds the format counts in.
fn micros(ns: u64) -> String {
    format!("{}.{:03}", ns / 1_000, ns % 1_000)
}

/// Writes `r`, at `at` ns (lasting `dur` ns if a step).
fn write_record(
    out: &mut dyn Write,
    tid: usize,
    at: u64,
    dur: u64,
    r: &Record,
    names: &HashMap<u64, Name>,
) -> io::Result<()> {
    let ts = micros(at);
    let name = r.kind.name();
    let head = format!("\"pid\":1,\"tid\":{tid},\"ts\":{ts}");
    let pid = || Pid::from_raw(r.a);
    match r.kind {
        Kind::Step => write!(
            out,
            "{{\"name\":\"{name}\",\"cat\":\"step\",\"ph\":\"X\",{head},\"dur\":{},\
             \"args\":{{\"pid\":\"{}\",\"status\":\"{}\"{}}}}}",
            micros(dur),
            pid(),
            status::name(r.b),
            names.get(&r.a).map(name_arg).unwrap_or_default()
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
        Kind::WakeMessage | Kind::Spawn | Kind::Complete | Kind::Submit => write!(
            out,
            "{{\"name\":\"{name}\",\"cat\":\"process\",\"ph\":\"i\",\"s\":\"t\",{head},\
             \"args\":{{\"pid\":\"{}\"}}}}",
            pid()
        ),
        Kind::Send => write!(
            out,
            "{{\"name\":\"{name}\",\"cat\":\"process\",\"ph\":\"i\",\"s\":\"t\",{head},\
             \"args\":{{\"pid\":\"{}\",\"woke\":{}}}}}",
            pid(),
            r.b != 0
        ),
        Kind::WakeCompletion => write!(
            out,
            "{{\"name\":\"{name}\",\"cat\":\"process\",\"ph\":\"i\",\"s\":\"t\",{head},\
             \"args\":{{\"pid\":\"{}\",\"tag\":{}}}}}",
            pid(),
            r.extra
        ),
    }
}

/// The tracer's shared part: settings, the outside ring, and where
/// workers leave their rings when they exit. Touched by workers only at
/// start and exit (and see the module docs for the outside ring).
pub(crate) struct Tracing {
    pub(crate) clock: Ticks,
    calibration: CalibrationStart,
    pub(crate) capacity: usize,
    /// Whether anyone records (see `Ring::enabled`). Padded: read by every
    /// worker per event, it must not share a line with anything written.
    pub(crate) enabled: Arc<CachePadded<AtomicBool>>,
    rings: Mutex<Vec<Option<Ring>>>,
    /// Events of threads that are not workers.
    outside: Mutex<Option<Records>>,
    phases: Mutex<Vec<(u64, &'static str)>>,
    /// Registered names, by raw PID (at most `capacity`).
    names: Mutex<HashMap<u64, Name>>,
}

impl Tracing {
    /// `simulated`: a simulation's virtual time, which stamps its records.
    pub(crate) fn new(workers: usize, capacity: usize, simulated: Option<Arc<AtomicU64>>) -> Self {
        let clock = simulated.map_or_else(Ticks::new, Ticks::simulated);
        Tracing {
            calibration: Calibration::start(&clock),
            clock,
            capacity,
            enabled: Arc::new(CachePadded(AtomicBool::new(true))),
            rings: Mutex::new((0..workers).map(|_| None).collect()),
            outside: Mutex::new(Some(Records::new(capacity))),
            phases: Mutex::new(Vec::new()),
            names: Mutex::new(HashMap::new()),
        }
    }

    /// Switches recording on or off, for every worker.
    pub(crate) fn set_enabled(&self, on: bool) {
        // Relaxed: see `Ring::on`.
        self.enabled.store(on, Ordering::Relaxed);
    }

    /// A new ring for a worker, on this tracer's clock and switch.
    pub(crate) fn ring(&self) -> Ring {
        Ring::new(self.clock.clone(), self.capacity, Arc::clone(&self.enabled))
    }

    /// Worker `index`, exiting, leaves its ring.
    pub(crate) fn hand_back(&self, index: usize, ring: Ring) {
        self.rings.lock().unwrap_or_else(|e| e.into_inner())[index] = Some(ring);
    }

    /// Records an event of a thread that is not a worker (or of a worker
    /// waking another worker's process), if tracing is on.
    pub(crate) fn outside(&self, kind: Kind, pid: Pid, extra: u64, b: u32) {
        // Relaxed: see `Ring::on`.
        if !self.enabled.load(Ordering::Relaxed) {
            return;
        }
        let mut outside = self.outside.lock().unwrap_or_else(|e| e.into_inner());
        // Stamped under the lock, so the ring's readings go forward.
        let at = self.clock.now();
        if let Some(records) = outside.as_mut() {
            records.push(Record {
                at,
                extra,
                a: pid.into_raw(),
                b,
                kind,
            });
        }
    }

    /// Records that shutdown reached `phase`.
    pub(crate) fn phase(&self, phase: &'static str) {
        let mut phases = self.phases.lock().unwrap_or_else(|e| e.into_inner());
        phases.push((self.clock.now(), phase));
    }

    /// Records that `pid` was registered as `name`, if recording is on and
    /// fewer than a ring's capacity of names are kept.
    pub(crate) fn name(&self, pid: Pid, name: &Name) {
        // Relaxed: see `Ring::on`.
        if !self.enabled.load(Ordering::Relaxed) {
            return;
        }
        let mut names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        if names.len() < self.capacity {
            names.insert(pid.into_raw(), name.clone());
        }
    }

    /// The trace, once every worker has left its ring; takes it.
    pub(crate) fn take(&self) -> Option<Trace> {
        let mut rings = self.rings.lock().unwrap_or_else(|e| e.into_inner());
        if rings.is_empty() || rings.iter().any(Option::is_none) {
            return None;
        }
        let outside = (self
            .outside
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take())
        .unwrap_or_else(|| Records::new(1));
        let phases = core::mem::take(&mut *self.phases.lock().unwrap_or_else(|e| e.into_inner()));
        Some(Trace {
            workers: core::mem::take(&mut *rings),
            outside,
            phases,
            calibration: self.calibration.finish(),
            names: core::mem::take(&mut *self.names.lock().unwrap_or_else(|e| e.into_inner())),
        })
    }
}
