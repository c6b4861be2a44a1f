//! What the driver can find: the classes of defect its checks are filed
//! under, and the list of those open.
//!
//! Every check files a [`Finding`] under a [`Check`]. A finding fails the
//! run unless its check points to a defect listed in [`KNOWN_DEFECTS`]:
//! those are reported (with the seed) and tolerated, so that the default
//! test passes while they are open. When a fix lands, delete its line from
//! the list: its checks then fail the run again. `LIFECYCLE_STRICT=1`
//! ignores the list (every finding fails).
//!
//! A known defect whose symptom is slow (a wait that only a liveness guard
//! ends) is exercised in the short default run only once it is off the
//! list ([`exercise`]); the long run exercises everything.

use std::fmt;

/// A class of defect the driver's checks look for, by what it would do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Defect {
    /// `mailbox()` racing `terminate` or `shutdown(Duration::ZERO)` would trip
    /// the assert in `StateWord::start` (a worker or the caller panics;
    /// shutdown then reports processes stuck).
    MailboxStartRace,
    /// An exit that overtakes a `link` request would leave a link to a dead
    /// process: the linker (trapping exits) never gets its `Down`.
    ExitOvertakesLink,
    /// An exit drained in `close` would make the `Down`'s reason `Linked` though
    /// the process ended `Done`.
    DrainedExitReason,
    /// A dropped `Receiver` (or a timed-out `call`'s) would lose what is in its
    /// inbox: it reaches neither the caller nor `on_undelivered`.
    ReceiverDropLoses,
    /// `blocking_keep_alive(Duration::MAX)` would kill a pool thread
    /// (`Instant + Duration` overflows) and wedges the pool.
    KeepAliveMax,
    /// `demonitor`/`unlink`/`cancel_timer` would not cover an event already
    /// collected and carried past `max_events_per_step`.
    CarriedPastCancel,
    /// Two threads in `recv_timeout` on one receiver, two messages
    /// forwarded at once: one thread would sleep its whole timeout.
    RecvNotifyOne,
    /// A `Duration::MAX` timeout would panic (`Instant::now() + timeout`).
    DurationMax,
    /// `ShutdownReport::forced` would count the receivers a shutdown's cancel
    /// closed, though nothing was closed by force (`timed_out` is false):
    /// the docs say it counts processes closed after the timeout.
    ForcedCountsReceivers,
    /// Under the simulation, a timer for never (`Duration::MAX`: a
    /// `wake_after`, `send_after` or command timeout) would be the next
    /// event once nothing else can run: the virtual clock would jump to
    /// the end of its range, every later deadline would saturate there,
    /// and a shutdown would drive nothing (every process reported stuck).
    ClockJumpsToNever,
}

/// The defects open today, one a line: while a defect is open its
/// line here lets the default run pass and report it; delete the line when
/// its fix lands, and its checks fail the run again (see the module docs).
pub(crate) const KNOWN_DEFECTS: &[Defect] = &[];

fn strict() -> bool {
    std::env::var("LIFECYCLE_STRICT").is_ok_and(|v| v != "0")
}

/// Whether findings of `defect` are tolerated in this run.
pub(crate) fn known(defect: Defect) -> bool {
    !strict() && KNOWN_DEFECTS.contains(&defect)
}

/// Whether to exercise what triggers `defect` (slow to show while open):
/// always in the long run, in the short one once it is fixed.
pub(crate) fn exercise(defect: Defect, long_run: bool) -> bool {
    long_run || !known(defect)
}

/// What a finding breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Check {
    /// A panic that is not a deliberate one of a process or handler (on a
    /// worker, a pool thread or in a public call).
    Panic,
    /// `ShutdownReport::stuck` is not zero.
    Stuck,
    /// A message was dropped by the scheduler: delivered nowhere.
    MessageLost,
    /// A message, reply or process is not accounted for exactly once.
    Books,
    /// A `Down` after the step that demonitored its target.
    DownAfterDemonitor,
    /// A `Down` (of a link) after the step that unlinked its target.
    DownAfterUnlink,
    /// A `Timer` after the step that cancelled it.
    TimerAfterCancel,
    /// A second `Down` for one monitor or link, or one nobody asked for.
    ExtraDown,
    /// A `Timer` before its deadline, twice, or never set.
    BadTimer,
    /// A completion of a tag not pending, or an unexpected error.
    BadCompletion,
    /// A `Down`'s reason does not match the outcome of its process.
    DownReason,
    /// The `Down` of a link never came (the target ended long before).
    LinkDownLost,
    /// The `Down` of a monitor never came (the target ended long before).
    MonitorDownLost,
    /// A process did not end on its own within a long shutdown's timeout.
    NotEnded,
    /// A join handle got no outcome within the guard, or another outcome
    /// than `on_complete`'s.
    Join,
    /// A receiver's `recv` after shutdown did not end with `RecvError`.
    RecvAfterShutdown,
    /// A thread in `recv_timeout` slept its whole timeout with a message
    /// waiting.
    RecvSlept,
    /// A public call returned what its docs rule out.
    Api,
    /// The `ShutdownReport` contradicts what the round saw.
    Report,
    /// A simulation's virtual clock reached the end of its range.
    VirtualClock,
    /// Consequence of another finding in the round (not counted by itself).
    Consequence,
}

/// One thing a check found.
#[derive(Debug, Clone)]
pub(crate) struct Finding {
    pub(crate) check: Check,
    pub(crate) defect: Option<Defect>,
    pub(crate) detail: String,
}

impl Finding {
    pub(crate) fn new(check: Check, defect: Option<Defect>, detail: String) -> Self {
        Finding {
            check,
            defect,
            detail,
        }
    }

    /// Whether this finding fails the run.
    pub(crate) fn fails(&self) -> bool {
        match (self.check, self.defect) {
            (Check::Consequence, _) => false,
            (_, Some(defect)) => !known(defect),
            (_, None) => true,
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.defect {
            Some(d) if known(d) => write!(f, "[{:?}, known {d:?}] {}", self.check, self.detail),
            Some(d) => write!(f, "[{:?}, {d:?}] {}", self.check, self.detail),
            None => write!(f, "[{:?}] {}", self.check, self.detail),
        }
    }
}

/// The source file (under `src/`) whose `StateWord::start` raises the
/// start race's panic.
const START_PANIC_FILE: &str = "process/state/transitions.rs";

/// The defect a panic's message, location and thread point to.
pub(crate) fn classify_panic(message: &str, file: &str, thread: &str) -> Option<Defect> {
    let overflow = message.contains("overflow when adding duration");
    if file.ends_with(START_PANIC_FILE) && message.contains("not Ready") {
        Some(Defect::MailboxStartRace)
    } else if overflow && thread == "stepsched-blocking" {
        Some(Defect::KeepAliveMax)
    } else if overflow {
        Some(Defect::DurationMax)
    } else {
        None
    }
}

/// The start race is recognised by the file its panic is raised in: that
/// file must exist and raise it, or a start race would be filed under no
/// defect.
#[test]
fn the_start_race_panic_is_classified_by_the_file_that_raises_it() {
    let path = format!("{}/src/{START_PANIC_FILE}", env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let message = "state word: start of a process not Ready";
    assert!(
        source.contains(message),
        "{path} does not raise the start panic"
    );
    assert_eq!(
        classify_panic(message, &path, "stepsched-worker-0"),
        Some(Defect::MailboxStartRace)
    );
}
