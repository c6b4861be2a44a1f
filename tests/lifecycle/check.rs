//! The checks at the end of a round, once shutdown has returned, every
//! receiver has been read to its `RecvError` and every joiner answered:
//! no stray panic, nothing stuck, a long shutdown that every process ended
//! by itself (a watcher that never got a `Down` does not), the books
//! balanced, every `Down`'s reason the outcome of its process, every
//! joiner's outcome `on_complete`'s.

use super::*;

/// A panic the hook recorded: (thread, message, file, line).
pub(crate) type PanicRecord = (String, String, String, u32);

/// Panics that are not deliberate ones, from any thread (but those of
/// [`PANICS_HERE`]).
pub(crate) static PANICS: Mutex<Vec<PanicRecord>> = Mutex::new(Vec::new());

thread_local! {
    /// On a thread that runs simulated rounds (every panic of one is on
    /// the thread that drives it): its panics, kept apart from
    /// [`PANICS`], so that rounds of other tests, which run at the same
    /// time, neither take them nor give theirs.
    pub(crate) static PANICS_HERE: RefCell<Option<Vec<PanicRecord>>> = const { RefCell::new(None) };
}

/// Records a panic: in [`PANICS_HERE`] if this thread keeps its own,
/// else in [`PANICS`]; returns how many that list holds.
pub(crate) fn record(panic: PanicRecord) -> usize {
    let here = PANICS_HERE.try_with(|here| {
        let mut here = here.try_borrow_mut().ok()?;
        let list = here.as_mut()?;
        list.push(panic.clone());
        Some(list.len())
    });
    if let Ok(Some(n)) = here {
        return n;
    }
    let mut panics = PANICS.lock().unwrap_or_else(|e| e.into_inner());
    panics.push(panic);
    panics.len()
}

/// Files the recorded panics as findings.
pub(crate) fn panics(round: &Round) {
    let records = if round.simulated() {
        PANICS_HERE.with(|here| here.borrow_mut().as_mut().map(std::mem::take))
    } else {
        None
    };
    let records = records
        .unwrap_or_else(|| std::mem::take(&mut *PANICS.lock().unwrap_or_else(|e| e.into_inner())));
    for (thread, message, file, line) in records {
        let defect = classify_panic(&message, &file, &thread);
        let detail = format!("thread {thread} panicked at {file}:{line}: {message}");
        round.find(Check::Panic, defect, detail);
    }
}

/// The equivalent outcome of a `Down`'s reason, if it says.
fn reason_end(reason: &ExitReason) -> Option<End> {
    Some(match reason {
        ExitReason::Done => End::Done,
        ExitReason::Failed(_) => End::Failed,
        ExitReason::Panicked(_) => End::Panicked,
        // `Killed`: a crash the simulation injected (its outcome is
        // `Terminated`).
        ExitReason::Terminated | ExitReason::Linked(_) | ExitReason::Killed => End::Terminated,
        ExitReason::Shutdown => End::Shutdown,
        _ => return None, // NoProc: it ended before, or never was
    })
}

/// Runs the checks; returns every finding of the round.
pub(crate) fn check(
    round: &Round,
    report: &ShutdownReport,
    long_shutdown: bool,
    joined: &[(Pid, End)],
    live_after: usize,
) -> Vec<Finding> {
    let outcomes = round.outcomes.lock().unwrap().clone();
    let receivers = round.receivers.lock().unwrap().clone();
    if report.stuck > 0 {
        let detail = format!("shutdown left {} processes stuck: {report:?}", report.stuck);
        round.find(Check::Stuck, None, detail);
    }
    if !report.timed_out && report.forced > 0 {
        let detail = format!(
            "shutdown did not time out, yet reports {} closed by force: {report:?}",
            report.forced
        );
        round.find(Check::Report, Some(Defect::ForcedCountsReceivers), detail);
    }
    if long_shutdown && report.timed_out {
        ended_by_themselves(round, &outcomes, report);
    }
    // The books.
    let dropped = round.dropped.lock().unwrap().clone();
    let skip = round.skip.lock().unwrap().clone();
    let mut lost = skip.clone();
    for (id, to) in dropped {
        if skip.contains(&id) {
            continue;
        }
        lost.insert(id);
        let defect = receivers.contains(&to).then_some(Defect::ReceiverDropLoses);
        let whose = if defect.is_some() {
            "a receiver"
        } else {
            "a process"
        };
        let detail = format!("message {id} to {to} ({whose}) was dropped: delivered nowhere");
        round.find(Check::MessageLost, defect, detail);
    }
    for (ledger, skip) in [
        (&round.messages, &lost),
        (&round.replies, &HashSet::new()),
        (&round.processes, &HashSet::new()),
    ] {
        for line in ledger.check(skip).1 {
            round.find(Check::Books, None, line);
        }
    }
    let started = round.started.load(Ordering::Relaxed);
    let completed = round.completed.load(Ordering::Relaxed);
    if started != completed {
        let detail = format!("{started} processes started, {completed} reported to on_complete");
        round.find(Check::Books, None, detail);
    }
    for (pid, (_, n)) in &outcomes {
        if *n != 1 {
            round.find(
                Check::Books,
                None,
                format!("{pid} reported {n} times to on_complete"),
            );
        }
    }
    if report.stuck == 0 && live_after != 0 {
        let detail = format!("{live_after} processes live after shutdown");
        round.find(Check::Stuck, None, detail);
    }
    if std::env::var_os("LIFECYCLE_VERBOSE").is_some() {
        let mut kinds: HashMap<String, usize> = HashMap::new();
        for (_, _, reason) in round.downs.lock().unwrap().iter() {
            let kind = format!("{reason:?}");
            *kinds
                .entry(kind.split('(').next().unwrap_or("").to_owned())
                .or_default() += 1;
        }
        println!("seed {}: Downs by reason {kinds:?}", round.seed);
    }
    // Each `Down` against the outcome of its process.
    for (watcher, target, reason) in round.downs.lock().unwrap().iter() {
        let Some(expected) = reason_end(reason) else {
            continue;
        };
        match outcomes.get(target) {
            Some((end, _)) if *end == expected => {}
            Some((end, _)) => {
                // `Linked` for a process that ended otherwise: an exit
                // its `close` drained overrode its outcome.
                let defect =
                    matches!(reason, ExitReason::Linked(_)).then_some(Defect::DrainedExitReason);
                let detail =
                    format!("{watcher} got Down({target}, {reason}), but {target} ended {end:?}");
                round.find(Check::DownReason, defect, detail);
            }
            None if receivers.contains(target) => {}
            None => {
                let detail =
                    format!("{watcher} got Down({target}, {reason}) of a process with no outcome");
                round.find(Check::DownReason, None, detail);
            }
        }
    }
    for (pid, end) in joined {
        match outcomes.get(pid) {
            Some((seen, _)) if seen == end => {}
            other => {
                let detail = format!("{pid} joined with {end:?}, on_complete saw {other:?}");
                round.find(Check::Join, None, detail);
            }
        }
    }
    let mut findings = round.findings.lock().unwrap().clone();
    taint(&mut findings);
    findings
}

/// A long shutdown timed out: every process should have ended on its own
/// (they all end on `Cancel::Shutdown`, a watcher once its `Down`s came).
/// Names what the forced ones still waited for.
fn ended_by_themselves(
    round: &Round,
    outcomes: &HashMap<Pid, (End, u32)>,
    report: &ShutdownReport,
) {
    let waits = round.waits.lock().unwrap().clone();
    let mut explained = false;
    for (watcher, waits) in &waits {
        if outcomes.get(watcher).map(|o| o.0) != Some(End::Shutdown) {
            continue;
        }
        for wait in waits {
            let (target, check, defect) = match *wait {
                // A link the other side made: the exit overtook its request.
                Wait::Link(t, true) => (t, Check::LinkDownLost, Some(Defect::ExitOvertakesLink)),
                Wait::Link(t, false) => (t, Check::LinkDownLost, None),
                Wait::Monitor(t) => (t, Check::MonitorDownLost, None),
            };
            // A target closed by the same forced shutdown is a
            // consequence; one that ended by itself should have told.
            match outcomes.get(&target) {
                Some((end, _)) if *end != End::Shutdown => {
                    explained = true;
                    let detail = format!(
                        "{watcher} never got the Down of its {} of {target}, which ended {end:?} (closed by force after the {LONG_SHUTDOWN:?} shutdown timeout)",
                        match wait {
                            Wait::Link(_, true) => "link (made by the other side)",
                            Wait::Link(_, false) => "own link",
                            Wait::Monitor(_) => "monitor",
                        },
                    );
                    round.find(check, defect, detail);
                }
                _ => {}
            }
        }
    }
    if !explained {
        let detail = format!(
            "processes did not end on Cancel::Shutdown within {LONG_SHUTDOWN:?}: {report:?}"
        );
        round.find(Check::NotEnded, None, detail);
    }
}

/// In a round where a known defect killed a thread of the scheduler (a
/// worker's or the pool's panic), lost a `Down` (the rest of the round
/// is then forced) or ran a simulation's clock to its end (its shutdown
/// then drives nothing), the findings it explains (stuck processes, books out of
/// balance, a timed-out shutdown) are its consequences.
fn taint(findings: &mut [Finding]) {
    let cause = findings.iter().find_map(|f| {
        let thread_died = f.check == Check::Panic
            && (f.detail.starts_with("thread lc-worker")
                || f.detail.starts_with("thread stepsched-blocking"));
        let wedges = thread_died || matches!(f.check, Check::LinkDownLost | Check::VirtualClock);
        match f.defect {
            Some(d) if wedges && known(d) => Some(d),
            _ => None,
        }
    });
    let Some(cause) = cause else { return };
    for f in findings.iter_mut() {
        let consequence = matches!(
            f.check,
            Check::Stuck
                | Check::Books
                | Check::NotEnded
                | Check::MessageLost
                | Check::Join
                | Check::RecvAfterShutdown
        );
        if f.defect.is_none() && consequence {
            f.check = Check::Consequence;
            f.detail = format!("(after known {cause:?}) {}", f.detail);
        }
    }
}
