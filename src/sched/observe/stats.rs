//! Counters each worker keeps about itself, and the [`Stats`] snapshot.

pub(crate) use crate::sched::observe::counter::Counter;
use crate::sched::observe::histogram::Histogram;
use crate::sched::observe::kind_counts::KindStats;
use crate::sync::AtomicU64;
use core::fmt;
use std::time::Duration;

/// Counters written by one worker only and read by anyone.
///
/// Single writer, so an increment is a Relaxed load and store, not an RMW:
/// counting costs a worker nothing it would notice.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) steps: Counter,
    pub(crate) steal_attempts: Counter,
    pub(crate) steals: Counter,
    pub(crate) stolen: Counter,
    pub(crate) global_takes: Counter,
    pub(crate) inject_takes: Counter,
    pub(crate) spins: Counter,
    pub(crate) parks: Counter,
    pub(crate) parks_cancelled: Counter,
    pub(crate) wakeups: Counter,
    /// Timers this worker fired, fired late, and cancelled ([`TimerStats`]).
    pub(crate) timers_fired: Counter,
    pub(crate) timers_late: Counter,
    pub(crate) timers_cancelled: Counter,
    /// Nanoseconds spent in steps, if latency figures are recorded.
    pub(crate) busy_nanos: Counter,
}

impl Counters {
    pub(crate) fn snapshot(&self, local_queue: usize) -> WorkerStats {
        WorkerStats {
            steps: self.steps.get(),
            steal_attempts: self.steal_attempts.get(),
            steals: self.steals.get(),
            stolen: self.stolen.get(),
            global_takes: self.global_takes.get(),
            inject_takes: self.inject_takes.get(),
            spins: self.spins.get(),
            parks: self.parks.get(),
            parks_cancelled: self.parks_cancelled.get(),
            wakeups: self.wakeups.get(),
            busy: Duration::from_nanos(self.busy_nanos.get()),
            local_queue,
        }
    }
}

/// One worker's counters, as read by [`Scheduler::stats`](crate::sched::Scheduler::stats).
///
/// Non-exhaustive: counters may be added in a minor release, so it is read
/// field by field (or compared with a value from `Default`), not built or
/// destructured whole outside this crate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerStats {
    /// Steps run.
    pub steps: u64,
    /// Times it looked into another worker's queues.
    pub steal_attempts: u64,
    /// Steal attempts that took something.
    pub steals: u64,
    /// Processes taken by those steals.
    pub stolen: u64,
    /// Batches taken from the global queue.
    pub global_takes: u64,
    /// Batches taken from its own inject queue.
    pub inject_takes: u64,
    /// Idle rounds spent spinning or yielding.
    pub spins: u64,
    /// Times it parked.
    pub parks: u64,
    /// Times it went to park but withdrew, because the re-check after
    /// registering as a sleeper saw work it had not been able to take: a
    /// queue that is not empty but whose next push is half done, a token
    /// held by another taker, or another worker's queue it may not steal
    /// from (it is not a spinner). Each counts as an idle round (the worker
    /// yields its thread; see `src/sched/worker/README.md`), so this grows slowly
    /// even while a producer is stalled mid-push.
    pub parks_cancelled: u64,
    /// Times it was woken from a park.
    pub wakeups: u64,
    /// Processes in its local deque when read.
    pub local_queue: usize,
    /// Time spent in steps (the calls of `Process::step`; not the handlers,
    /// hooks and closes the worker runs around them), if the builder asked
    /// for latency figures
    /// ([`Builder::record_latency`](crate::sched::Builder::record_latency)),
    /// else zero. Busy time over wall time is the worker's utilisation.
    pub busy: Duration,
}

/// The blocking pool's counts, as read by
/// [`Scheduler::stats`](crate::sched::Scheduler::stats) (see
/// [`Builder::blocking_handler`](crate::sched::Builder::blocking_handler)). The
/// four are read together, under the pool's lock.
///
/// Non-exhaustive: counts may be added in a minor release (see
/// [`WorkerStats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlockingStats {
    /// Pool threads alive (busy, idle, or starting).
    pub threads: usize,
    /// Threads running a blocking handler.
    pub busy: usize,
    /// Commands waiting for a thread.
    pub queued: usize,
    /// Commands completed with
    /// [`CommandError::Cancelled`](crate::process::CommandError::Cancelled)
    /// by shutdown, without running.
    pub cancelled: usize,
}

/// A snapshot of the scheduler's counters. Each number is exact for its own
/// counter; they are not read at one instant.
///
/// Non-exhaustive: counters may be added in a minor release (see
/// [`WorkerStats`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// One entry per worker, by index.
    pub workers: Vec<WorkerStats>,
    /// Live processes (submitted or spawned, not yet closed).
    pub live: usize,
    /// Processes submitted from outside.
    pub submitted: u64,
    /// Processes that ended, by any way.
    pub completed: u64,
    /// Events that reached no process (target finished or stale).
    pub undelivered: u64,
    /// Completions whose tag the process was not waiting for.
    pub unknown_tags: u64,
    /// Panics raised by the embedder's hooks (`on_complete`,
    /// `on_undelivered`, `on_park`, `on_unpark`, `on_thread_start`,
    /// `on_thread_stop`) and contained by the scheduler. A panicking hook
    /// does not end the process it ran for nor its worker; its call is
    /// abandoned and counted here, and the scheduler prints nothing (the
    /// panic hook of `std` reports the panic as usual).
    pub hook_panics: u64,
    /// Panics of the scheduler's own code on a worker (an internal
    /// assertion: a bug of the scheduler, never of user code, whose panics
    /// are the process's outcome or a hook panic). Zero unless the
    /// scheduler has a bug. Such a panic does not kill the worker: it is
    /// caught around the task the worker ran, and the worker goes on with
    /// its queues intact. The process it held is closed with
    /// [`ProcessError::Panicked`](crate::process::ProcessError::Panicked)
    /// (a message that names the scheduler), so its joiner, monitors and
    /// links are told; the events its step was given and the messages it
    /// sent then go to `on_undelivered`. A task whose process was not
    /// Ready (queued twice) is not run, and counted here too, with a line
    /// on standard error. Also in [`ShutdownReport::worker_panics`](crate::sched::ShutdownReport::worker_panics).
    pub worker_panics: u64,
    /// Mailbox nodes allocated for messages sent from outside the workers
    /// ([`Scheduler::send`](crate::sched::Scheduler::send) and its kin). Such a
    /// message takes a node the workers freed (kept for outside senders
    /// in a depot) if one is free at once, and a new one only if not: once
    /// warm, a steady stream of outside sends allocates few. (Completions
    /// and cancels from outside always take a new node, and are not
    /// counted: `src/sched/core/depot.rs` says why.)
    pub outside_node_allocations: u64,
    /// Calls across nodes waiting for their reply, their refusal or their
    /// timeout (0 without a transport): each is answered
    /// `ReplyError::NodeDown` if its callee's node goes, and forgotten
    /// when its caller ends.
    pub remote_calls_waiting: usize,
    /// Process slots retired at their last generation (`u32::MAX`): each
    /// was reused 2^32 times, and is never reused again, so that no PID is
    /// issued twice.
    pub retired_slots: u64,
    /// Whether the global queue held work when read.
    pub global_queue_nonempty: bool,
    /// Workers spinning when read.
    pub spinning: usize,
    /// Workers parked when read.
    pub sleeping: usize,
    /// The blocking pool.
    pub blocking: BlockingStats,
    /// Timers, summed over the workers.
    pub timers: TimerStats,
    /// One entry per worker, by index, if the builder asked for latency
    /// figures ([`Builder::record_latency`](crate::sched::Builder::record_latency));
    /// empty otherwise. [`step_latency`](Stats::step_latency) and
    /// [`schedule_latency`](Stats::schedule_latency) merge them.
    pub latency: Vec<WorkerLatency>,
    /// One entry per kind of the process type
    /// ([`Process::KINDS`](crate::process::Process::KINDS)), in its order,
    /// if the builder asked for them
    /// ([`Builder::count_kinds`](crate::sched::Builder::count_kinds));
    /// empty otherwise.
    pub kinds: Vec<KindStats>,
}

/// One worker's latency histograms, in nanoseconds, as read by
/// [`Scheduler::stats`](crate::sched::Scheduler::stats) (see
/// [`Builder::record_latency`](crate::sched::Builder::record_latency)).
/// Each is read while the worker may record: a histogram's sum may be
/// ahead of or behind its buckets by the steps run meanwhile, and its
/// count is always its buckets' sum.
///
/// Non-exhaustive: histograms may be added in a minor release (see
/// [`WorkerStats`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerLatency {
    /// How long each step ran (the call of `Process::step`).
    pub step: Histogram,
    /// From the moment each stepped process was made Ready (created,
    /// woken by a message, a completion, a timer or a terminate, or
    /// requeued by its own `Continue`, which stamps the end of that step)
    /// to the start of its step. The Ready stamp is taken by whoever made
    /// the process Ready, on its thread's clock reading, so it includes the
    /// queueing and the search, not the sender's own work.
    pub schedule: Histogram,
}

impl Stats {
    /// Every worker's step-latency histogram, merged (empty if latency
    /// figures are not recorded).
    pub fn step_latency(&self) -> Histogram {
        let mut all = Histogram::new();
        for w in &self.latency {
            all.merge(&w.step);
        }
        all
    }

    /// Every worker's schedule-latency histogram, merged (empty if latency
    /// figures are not recorded).
    pub fn schedule_latency(&self) -> Histogram {
        let mut all = Histogram::new();
        for w in &self.latency {
            all.merge(&w.schedule);
        }
        all
    }

    /// The sum of every worker's counters.
    pub fn total(&self) -> WorkerStats {
        self.workers
            .iter()
            .fold(WorkerStats::default(), |a, w| WorkerStats {
                steps: a.steps + w.steps,
                steal_attempts: a.steal_attempts + w.steal_attempts,
                steals: a.steals + w.steals,
                stolen: a.stolen + w.stolen,
                global_takes: a.global_takes + w.global_takes,
                inject_takes: a.inject_takes + w.inject_takes,
                spins: a.spins + w.spins,
                parks: a.parks + w.parks,
                parks_cancelled: a.parks_cancelled + w.parks_cancelled,
                wakeups: a.wakeups + w.wakeups,
                busy: a.busy + w.busy,
                local_queue: a.local_queue + w.local_queue,
            })
    }
}

impl fmt::Display for Stats {
    /// A table, one row per worker and a total.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:>7} {:>10} {:>9} {:>8} {:>8} {:>8} {:>8} {:>9} {:>7} {:>9} {:>8} {:>6}",
            "worker",
            "steps",
            "attempts",
            "steals",
            "stolen",
            "global",
            "inject",
            "spins",
            "parks",
            "cancelled",
            "wakeups",
            "queue"
        )?;
        let total = self.total();
        let rows = self
            .workers
            .iter()
            .enumerate()
            .map(|(i, w)| (i.to_string(), w));
        for (name, w) in rows.chain(core::iter::once(("total".to_owned(), &total))) {
            writeln!(
                f,
                "{:>7} {:>10} {:>9} {:>8} {:>8} {:>8} {:>8} {:>9} {:>7} {:>9} {:>8} {:>6}",
                name,
                w.steps,
                w.steal_attempts,
                w.steals,
                w.stolen,
                w.global_takes,
                w.inject_takes,
                w.spins,
                w.parks,
                w.parks_cancelled,
                w.wakeups,
                w.local_queue
            )?;
        }
        writeln!(
            f,
            "blocking pool: threads {}  busy {}  queued {}  cancelled {}",
            self.blocking.threads,
            self.blocking.busy,
            self.blocking.queued,
            self.blocking.cancelled
        )?;
        write!(
            f,
            "live {}  submitted {}  completed {}  undelivered {}  unknown tags {}  hook panics {}  spinning {}  sleeping {}",
            self.live,
            self.submitted,
            self.completed,
            self.undelivered,
            self.unknown_tags,
            self.hook_panics,
            self.spinning,
            self.sleeping
        )?;
        write!(
            f,
            "  timers fired {}  late {}  cancelled {}  outside node allocations {}",
            self.timers.fired,
            self.timers.late,
            self.timers.cancelled,
            self.outside_node_allocations
        )
    }
}

/// Timer counts, as read by [`Scheduler::stats`](crate::sched::Scheduler::stats).
///
/// Non-exhaustive: counts may be added in a minor release (see
/// [`WorkerStats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TimerStats {
    /// Timers fired (`wake_after`/`wake_at`, command timeouts and
    /// `send_after`), whether or not their event was still wanted.
    pub fired: u64,
    /// Of those, the ones fired more than 1 ms after their deadline
    /// (`LATE_NANOS` in `src/sched/timer/mod.rs`).
    pub late: u64,
    /// Timers cancelled before they fired: by `cancel_timer`, by the
    /// completion that beat a command's timeout, by a timer re-armed with
    /// its tag, or because their process ended.
    pub cancelled: u64,
}

impl TimerStats {
    pub(crate) fn sum<'a>(counters: impl Iterator<Item = &'a Counters>) -> Self {
        counters.fold(TimerStats::default(), |t, c| TimerStats {
            fired: t.fired + c.timers_fired.get(),
            late: t.late + c.timers_late.get(),
            cancelled: t.cancelled + c.timers_cancelled.get(),
        })
    }
}

/// The scheduler's own counts, beside the workers' [`Counters`]: each a
/// statistic read by [`Scheduler::stats`](crate::sched::Scheduler::stats)
/// and the shutdown report, with no ordering role.
#[derive(Debug, Default)]
pub(crate) struct Totals {
    pub(crate) submitted: AtomicU64,
    pub(crate) undelivered: AtomicU64,
    pub(crate) unknown_tags: AtomicU64,
    /// Processes closed by shutdown's force.
    pub(crate) forced: AtomicU64,
    /// Internal panics contained on the workers (`worker/contain.rs`).
    pub(crate) worker_panics: AtomicU64,
}
