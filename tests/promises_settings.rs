//! Input bounds of the settings (`docs/proof/promises.md`): every count,
//! capacity and `Duration` a `Builder` and `SpawnOptions` (and the deque
//! and node cache) take, at 0, 1 and the type's maximum. 0 is refused by
//! name where the docs say so (`tests/sched_flood.rs::settings_it_cannot_honour_are_refused_by_name`
//! and the others named there; a stack size of 0 and a spawn's mailbox
//! capacity of 0 here); 1 and the maximum either work or are refused with
//! an error naming the setting and its value, and never panic, wedge or
//! lose work.
//!
//! ```text
//! cargo test --test promises_settings
//! ```

mod common;
use common::joined;

use std::io::ErrorKind;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use stepsched::deque::Worker;
use stepsched::mpsc::{Mailbox, NodeCache};
use stepsched::process::{Command, Event, Process, SpawnError, SpawnOptions, StepOutput};
use stepsched::sched::{Builder, Completer, Scheduler};

/// A command for the handler of kind `.0`.
struct Cmd(&'static str);

impl Command for Cmd {
    fn kind(&self) -> &'static str {
        self.0
    }
}

/// Yields a blocking and a plain command, then sends itself `n` messages,
/// and ends with the sum of the replies and the messages once it has all.
struct Round {
    n: u64,
    replies: u64,
    sum: u64,
    seen: u64,
}

impl Process for Round {
    type Input = u64;
    type Message = u64;
    type Command = Cmd;
    type Reply = u64;
    type Output = u64;
    type Error = String;

    fn init(&mut self, _: &str, n: u64) -> Result<(), String> {
        self.n = n;
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        if self.replies == 0 && self.seen == 0 && events.is_empty() {
            out.yield_command(1, Cmd("blocking"));
            out.yield_command(2, Cmd("plain"));
            return Ok(());
        }
        for event in events.drain(..) {
            match event {
                Event::Completion { result, .. } => {
                    self.sum += result.map_err(|e| e.to_string())?;
                    self.replies += 1;
                    if self.replies == 2 {
                        for i in 0..self.n {
                            out.send(out.pid(), i);
                        }
                    }
                }
                Event::Message(i) => {
                    self.sum += i;
                    self.seen += 1;
                }
                Event::Refused { message, .. } => out.send(out.pid(), message),
                _ => {}
            }
        }
        if self.replies == 2 && self.seen == self.n {
            out.done(self.sum);
        }
        Ok(())
    }
}

fn round() -> Round {
    Round {
        n: 0,
        replies: 0,
        sum: 0,
        seen: 0,
    }
}

/// Both handlers: the blocking one answers 10, the plain one 20.
fn with_handlers(b: Builder<Round>) -> Builder<Round> {
    b.blocking_handler("blocking", |_: Cmd, done: Completer<Round>| {
        drop(done.succeed(10));
    })
    .handler("plain", |_: Cmd, done: Completer<Round>| {
        drop(done.succeed(20))
    })
}

/// Runs `f` on a thread of its own and waits at most 60 s for it: a
/// liveness guard for builds and shutdowns that must return.
fn guarded<T: Send + 'static>(
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> thread::Result<T> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(panic::catch_unwind(AssertUnwindSafe(f)));
    });
    rx.recv_timeout(common::ms(60_000))
        .unwrap_or_else(|_| panic!("{what} did not return"))
}

/// Builds, runs two rounds of 3 messages (a blocking and a plain command
/// each) and shuts down, all within the liveness guard.
fn runs(what: &str, builder: Builder<Round>) {
    let what = what.to_owned();
    let label = what.clone();
    guarded(&label, move || {
        let s = with_handlers(builder).build().unwrap();
        let a = s.submit_joinable(round(), "run", 3).unwrap();
        assert_eq!(joined(a), Ok(33), "{what}");
        let b = s.submit_joinable(round(), "run", 3).unwrap();
        assert_eq!(joined(b), Ok(33), "{what}");
        let report = s.shutdown(Duration::from_secs(60));
        assert_eq!(report.forced, 0, "{what}: {report:?}");
    })
    .unwrap();
}

/// "The number of worker threads (at least 1 ...)" (builder.rs:84),
/// "`park_after` must be at least 1" (builder.rs:177), "At least 1"
/// (max_processes, builder.rs:186), "Must be at least 1" (max blocking
/// threads, builder.rs:298), "`events_per_worker` must be at least 1"
/// (builder.rs:423), "at least 1" (max events per step, builder.rs:464;
/// mailbox capacity, builder.rs:499), and an interval of 1 ("1 leaves no
/// tick between checks", builder.rs:165): each at 1 builds and runs.
#[test]
fn every_count_setting_at_one_builds_and_runs() {
    let one = || Scheduler::builder().workers(1);
    runs("workers(1)", one());
    runs("global_queue_interval(1)", one().global_queue_interval(1));
    runs("spin_thresholds(0, 1)", one().spin_thresholds(0, 1));
    runs("spin_thresholds(1, 1)", one().spin_thresholds(1, 1));
    runs("max_processes(1)", one().max_processes(1));
    runs("max_blocking_threads(1)", one().max_blocking_threads(1));
    runs("trace(1)", one().trace(1));
    runs("max_events_per_step(1)", one().max_events_per_step(1));
    runs("mailbox_capacity(1)", one().mailbox_capacity(1));
    runs("everything at 1", {
        one()
            .global_queue_interval(1)
            .spin_thresholds(1, 1)
            .max_processes(1)
            .max_blocking_threads(1)
            .trace(1)
            .max_events_per_step(1)
            .mailbox_capacity(1)
    });
}

/// The same settings at their type's maximum: no limit in effect, so they
/// build and run (`trace` and `workers` allocate per unit at build and are
/// tested below).
#[test]
fn every_count_setting_at_its_maximum_builds_and_runs() {
    let two = || Scheduler::builder().workers(2);
    runs(
        "global_queue_interval(MAX)",
        two().global_queue_interval(u32::MAX),
    );
    runs(
        "spin_thresholds(MAX, MAX)",
        two().spin_thresholds(u32::MAX, u32::MAX),
    );
    runs("max_processes(MAX)", two().max_processes(usize::MAX));
    runs(
        "max_blocking_threads(MAX)",
        two().max_blocking_threads(usize::MAX),
    );
    runs(
        "max_events_per_step(MAX)",
        two().max_events_per_step(usize::MAX),
    );
    runs("mailbox_capacity(MAX)", two().mailbox_capacity(u32::MAX));
}

/// "[`io::ErrorKind::InvalidInput`], naming the setting, for a value the
/// scheduler cannot honour [...] a setting is refused rather than bent to
/// another value. Else the error of a worker thread that cannot be
/// spawned" (src/sched/builder/mod.rs:536): `workers(usize::MAX)` cannot be
/// honoured, and `build` panics ("capacity overflow") instead of
/// returning an error.
#[test]
fn workers_beyond_what_can_be_spawned_is_an_error() {
    let built = guarded("build", || {
        Scheduler::<Round>::builder()
            .workers(usize::MAX)
            .build()
            .map(drop)
            .map_err(|e| e.kind())
    });
    assert!(matches!(built, Ok(Err(_))), "an error, not a panic");
}

/// "a ring of `events_per_worker` records (32 bytes each, allocated at
/// build" (src/sched/builder/mod.rs:409) and "a value the scheduler cannot
/// honour" is refused with `InvalidInput` (builder.rs:536): a ring of
/// `usize::MAX` records cannot be allocated, and `build` panics
/// ("capacity overflow") instead.
#[test]
fn a_trace_ring_that_cannot_be_allocated_is_refused() {
    let built = guarded("build", || {
        Scheduler::<Round>::builder()
            .workers(1)
            .trace(usize::MAX)
            .build()
            .map(drop)
            .map_err(|e| e.kind())
    });
    assert!(
        matches!(
            built,
            Ok(Err(ErrorKind::InvalidInput | ErrorKind::OutOfMemory))
        ),
        "an error, not a panic"
    );
}

/// "How long an idle blocking-pool thread waits for a command before it
/// exits" (src/sched/builder/mod.rs:305), at zero: threads exit as soon as
/// they are idle, and every command still runs.
#[test]
fn blocking_keep_alive_zero_still_runs_every_command() {
    runs(
        "blocking_keep_alive(ZERO)",
        Scheduler::builder()
            .workers(1)
            .blocking_keep_alive(Duration::ZERO),
    );
    runs(
        "blocking_keep_alive(1 ns)",
        Scheduler::builder()
            .workers(1)
            .blocking_keep_alive(Duration::from_nanos(1)),
    );
}

/// `blocking_keep_alive(Duration::MAX)`: idle threads never exit on their
/// own, and the pool still runs commands and shuts down (the longest
/// keep-alive must not wedge the pool).
#[test]
fn blocking_keep_alive_max_runs_commands_and_shuts_down() {
    runs(
        "blocking_keep_alive(MAX)",
        Scheduler::builder()
            .workers(1)
            .blocking_keep_alive(Duration::MAX),
    );
}

/// "wakes every `threshold / 4` (at least 1 ms)" and "The monitor stops
/// (and is joined) at shutdown" (src/sched/builder/mod.rs:353, 371), at a
/// threshold of zero and of `Duration::MAX`.
#[test]
fn a_long_step_monitor_of_zero_or_max_starts_and_stops() {
    for threshold in [Duration::ZERO, Duration::from_nanos(1), Duration::MAX] {
        runs(
            &format!("long_step_monitor({threshold:?})"),
            Scheduler::builder()
                .workers(1)
                .long_step_monitor(threshold, |_| {}),
        );
    }
}

/// "Creates an empty deque whose ring starts with exactly the smallest
/// power of two at least `max(min, 1)` slots." (src/deque/worker.rs:168;
/// 0 and 1 are `tests/deque/growth.rs::with_capacity_rounds_up_to_a_power_of_two`).
/// There is no such power for `usize::MAX`, nor a ring beyond 2^30 slots:
/// the call panics with a message that says so, before allocating.
#[test]
fn a_deque_of_capacity_max_panics_with_a_clear_message() {
    for min in [usize::MAX, (1 << 30) + 1] {
        let made = panic::catch_unwind(|| Worker::<Box<u8>>::with_capacity(min).capacity());
        let panic = made.expect_err("no such ring");
        let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(message.contains("capacity"), "{min}: {message:?}");
    }
}

/// "Creates an empty cache that keeps up to `limit` nodes (0: keeps none,
/// so every push allocates and every pop frees)." (src/mpsc/cache.rs:92);
/// "It keeps at most [`limit`] nodes; a node returned to a full cache is
/// freed." (cache.rs:24)
#[test]
fn node_caches_of_limit_zero_one_and_max_keep_what_they_may() {
    for (limit, kept) in [(0, 0), (1, 1), (usize::MAX, 8)] {
        let mut cache = NodeCache::with_limit(limit);
        assert_eq!((cache.limit(), cache.len()), (limit, 0));
        let mailbox = Mailbox::new();
        (0..8u32).for_each(|i| mailbox.push_with(i, &mut cache));
        let mut got = Vec::new();
        // SAFETY: this thread is the mailbox's only consumer.
        while let Some(i) = unsafe { mailbox.pop_with(&mut cache) } {
            got.push(i);
        }
        assert_eq!(
            got,
            (0..8).collect::<Vec<_>>(),
            "limit {limit}: nothing lost"
        );
        assert_eq!(cache.len(), kept, "limit {limit}");
    }
}

/// Spawns a child with the options its input names in its first step,
/// then ends with what the spawn said. `inited` tells whether its `init`
/// ran.
#[derive(Default)]
struct Parent {
    inited: bool,
    child: Option<SpawnOptions>,
}

impl Process for Parent {
    type Input = Option<SpawnOptions>;
    type Message = ();
    type Command = Cmd;
    type Reply = ();
    type Output = Result<(), (bool, String)>;
    type Error = ();

    fn init(&mut self, _: &str, child: Option<SpawnOptions>) -> Result<(), ()> {
        self.inited = true;
        self.child = child;
        Ok(())
    }

    fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
        let Some(options) = self.child.take() else {
            out.done(Ok(()));
            return Ok(());
        };
        match out.spawn_with(Parent::default(), "child", None, options) {
            Ok(_) => out.done(Ok(())),
            Err(SpawnError::InvalidOptions(child, why)) => {
                out.done(Err((child.inited, why.into())))
            }
            Err(other) => out.done(Err((true, format!("another refusal: {other}")))),
        }
        Ok(())
    }
}

/// "0 is taken here and refused by the spawn, as
/// `Builder::mailbox_capacity(0)` is refused by the build [...] fails with
/// [`SpawnError::InvalidOptions`], naming the setting, and hands the
/// process back without running its `init`" (`SpawnOptions::mailbox_capacity`):
/// from outside and from a step alike, and `u32::MAX` is taken.
#[test]
fn spawn_options_with_a_zero_mailbox_capacity_are_refused_by_the_spawn() {
    let s = Scheduler::<Parent>::builder().workers(1).build().unwrap();
    let zero = SpawnOptions::new().mailbox_capacity(0);
    match s.submit_with(Parent::default(), "run", None, zero.clone()) {
        Err(SpawnError::InvalidOptions(p, why)) => {
            assert!(!p.inited, "handed back before its init");
            assert!(why.contains("mailbox_capacity(0)"), "{why}");
        }
        other => panic!("not refused by name: {other:?}"),
    }
    let parent = s
        .submit_joinable(Parent::default(), "run", Some(zero))
        .unwrap();
    match joined(parent) {
        Ok(Err((inited, why))) => {
            assert!(!inited, "handed back before its init");
            assert!(why.contains("mailbox_capacity(0)"), "{why}");
        }
        other => panic!("a step's spawn not refused by name: {other:?}"),
    }
    let max = SpawnOptions::new().mailbox_capacity(u32::MAX);
    let parent = s
        .submit_joinable(Parent::default(), "run", Some(max))
        .unwrap();
    assert_eq!(joined(parent), Ok(Ok(())));
    // The child it spawned runs and ends by itself.
    common::wait_until("the child to end", || s.live() == 0);
    assert_eq!(s.shutdown(Duration::from_secs(60)).forced, 0);
}

/// "At least 1: [`build`](Builder::build) refuses 0 [...] a size it cannot
/// give (`usize::MAX`, say) fails `build` with the thread spawn's error,
/// naming this setting and its value" (`Builder::stack_size`).
#[test]
fn a_stack_size_of_zero_or_one_the_system_cannot_give_is_refused_by_name() {
    let zero = Scheduler::<Round>::builder()
        .workers(1)
        .stack_size(0)
        .build()
        .map(drop)
        .unwrap_err();
    assert_eq!(zero.kind(), ErrorKind::InvalidInput);
    assert!(zero.to_string().contains("stack_size(0)"), "{zero}");
    let max = guarded("build", || {
        Scheduler::<Round>::builder()
            .workers(1)
            .stack_size(usize::MAX)
            .build()
            .map(drop)
            .map_err(|e| e.to_string())
    })
    .expect("an error, not a panic")
    .unwrap_err();
    assert!(
        max.contains(&format!("stack_size({})", usize::MAX)),
        "{max}"
    );
}

/// "naming the setting and its value, for a value the scheduler cannot
/// honour (0 workers or more than 65,536, [...] a trace ring of 0 events
/// or more than 2^32" (`Builder::build`): the refused value is in the
/// message, not only the setting's name.
#[test]
fn a_setting_refused_as_too_large_is_named_with_its_value() {
    let refused = |b: Builder<Round>| b.build().map(drop).unwrap_err().to_string();
    let workers = refused(Scheduler::builder().workers(65_537));
    assert!(workers.contains("workers(65537)"), "{workers}");
    let trace = refused(Scheduler::builder().workers(1).trace((1 << 32) + 1));
    assert!(trace.contains("trace(4294967297)"), "{trace}");
}
