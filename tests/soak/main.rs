//! Soak test: proves that under random load nothing is lost or doubled.
//! Four client threads submit, send, terminate and complete at random
//! against a scheduler of 2 workers for `SOAK_SECS` seconds (default 60),
//! while the processes themselves send messages, yield commands (completed
//! inline, or later from a helper thread after a small random delay), spawn
//! children, fail or panic now and then. At the end the scheduler is shut
//! down and the books must balance:
//!
//! - every message id is either refused at `send` (handed back) or, once
//!   accepted, received by exactly one step or reported exactly once to
//!   `on_undelivered`;
//! - every command reply likewise: handed back by `Completer::complete`, or
//!   received once, or reported once;
//! - every process started is closed exactly once and reported once to
//!   `on_complete`; none is left live or stuck.
//!
//! ```text
//! SOAK_SECS=5 cargo test --release --test soak -- --ignored --nocapture
//! ```

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use stepsched::process::{
    Cancel, Command, CommandError, Event, Pid, Process, ProcessError, SpawnError, Status,
    StepOutput,
};
use stepsched::sched::{CompleteError, Completer, Scheduler, SendError};

/// Live processes the clients and spawning steps aim to stay under.
const LIVE_CAP: usize = 2_000;
/// Client threads.
const CLIENTS: u64 = 4;
/// The panic message of deliberate panics (silenced by the panic hook).
const DELIBERATE: &str = "soak: deliberate panic";

mod books;
mod soaker;

use books::*;
use soaker::*;

fn soak_secs() -> u64 {
    std::env::var("SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60)
}

/// Silences the deliberate panics (this binary holds this one test).
fn quiet_deliberate_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let deliberate = info
            .payload()
            .downcast_ref::<String>()
            .is_some_and(|s| s == DELIBERATE);
        if !deliberate {
            default(info);
        }
    }));
}

fn build(ctx: &Arc<Ctx>) -> Scheduler<Soaker> {
    let (c1, c2, c3) = (Arc::clone(ctx), Arc::clone(ctx), Arc::clone(ctx));
    let c4 = Arc::clone(ctx);
    Scheduler::<Soaker>::builder()
        .workers(2)
        .handler("inline", move |_, completer| {
            let id = c1.replies.alloc();
            c1.completed(id, completer.succeed(id));
        })
        .handler("later", move |_, completer| {
            let delay = Duration::from_micros(c2.replies.next.load(Ordering::Relaxed) % 2_000);
            c2.later
                .lock()
                .unwrap()
                .push_back((Instant::now() + delay, completer));
        })
        .on_undelivered(move |pid, event| match event {
            Event::Message(id) => c3.messages.mark(id, UNDELIVERED),
            Event::Completion { result: Ok(id), .. } => c3.replies.mark(id, UNDELIVERED),
            Event::Completion {
                tag,
                result: Err(e),
            } => c3.fail(format!("{pid}: undelivered error completion {tag}: {e}")),
            Event::Cancel(_) => {}
            other => c3.fail(format!("{pid}: unexpected undelivered {other:?}")),
        })
        .on_complete(move |_, outcome| {
            let kind = match outcome {
                Ok(_) => 0,
                Err(ProcessError::Failed(_)) => 1,
                Err(ProcessError::Panicked(_)) => 2,
                Err(ProcessError::Terminated) => 3,
                Err(ProcessError::Shutdown) => 4,
                // `ProcessError` is non-exhaustive: an end the books do not
                // know fails the soak.
                Err(other) => {
                    return c4.fail(format!("an outcome the books do not know: {other:?}"))
                }
            };
            c4.outcomes[kind].fetch_add(1, Ordering::Relaxed);
            c4.on_complete.fetch_add(1, Ordering::Relaxed);
        })
        .build()
        .unwrap()
}

/// Completes the held completers that are due (all of them if `all`).
fn complete_due(ctx: &Ctx, all: bool, max: usize) -> usize {
    let now = Instant::now();
    let mut done = 0;
    while done < max {
        let next = {
            let mut later = ctx.later.lock().unwrap();
            match later.front() {
                Some((due, _)) if all || *due <= now => later.pop_front(),
                _ => None,
            }
        };
        let Some((_, completer)) = next else { break };
        let id = ctx.replies.alloc();
        ctx.completed(id, completer.succeed(id));
        done += 1;
    }
    done
}

/// One client thread's random operations until `deadline`.
fn client(
    index: u64,
    scheduler: &Scheduler<Soaker>,
    ctx: &Arc<Ctx>,
    deadline: Instant,
) -> Vec<stepsched::sched::JoinHandle<Soaker>> {
    let mut rng = Rng::new(0xC0FFEE + index);
    let mut joinable = Vec::new();
    while Instant::now() < deadline {
        match rng.below(1_000) {
            0..=249 => {
                if ctx.live() >= LIVE_CAP {
                    continue;
                }
                let process = Soaker::new(ctx);
                let serial = process.serial;
                let seed = rng.next();
                let result = if rng.chance(100) {
                    scheduler.submit_joinable(process, "soak", seed).map(|h| {
                        let pid = h.pid();
                        joinable.push(h);
                        pid
                    })
                } else {
                    scheduler.submit(process, "soak", seed)
                };
                match result {
                    Ok(pid) => {
                        ctx.processes.mark(serial, ACCEPTED);
                        ctx.started.fetch_add(1, Ordering::Relaxed);
                        ctx.registry.push(pid);
                    }
                    Err(e) => {
                        let refused_at_capacity = matches!(e, SpawnError::AtCapacity(_));
                        let back = e.into_process().serial;
                        if back != serial || !refused_at_capacity {
                            ctx.fail(format!("submit refused {serial} (got {back} back)"));
                        }
                        ctx.processes.mark(serial, REFUSED);
                    }
                }
            }
            250..=499 => {
                let to = if rng.chance(20) {
                    Pid::from_raw(rng.next())
                } else {
                    match ctx.registry.pick(&mut rng) {
                        Some(pid) => pid,
                        None => continue,
                    }
                };
                let id = ctx.messages.alloc();
                match scheduler.send(to, id) {
                    Ok(()) => ctx.messages.mark(id, ACCEPTED),
                    Err(e) => {
                        if matches!(e, SendError::ShuttingDown(_)) {
                            ctx.fail(format!("send refused as shutting down while running: {e}"));
                        }
                        let back = e.into_inner();
                        if back != id {
                            ctx.fail(format!("send of {id} handed back {back}"));
                        }
                        ctx.messages.mark(id, REFUSED);
                    }
                }
            }
            500..=509 => {
                if let Some(pid) = ctx.registry.pick(&mut rng) {
                    if scheduler.terminate(pid).is_ok() {
                        ctx.terminate_ok.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            _ => {
                if complete_due(ctx, rng.chance(200), 8) == 0 {
                    // Nothing due: let the workers and the helper run.
                    thread::yield_now();
                }
            }
        }
    }
    joinable
}

#[test]
#[ignore = "soak test: SOAK_SECS=5 cargo test --release --test soak -- --ignored"]
fn random_load_from_four_threads_loses_and_doubles_nothing() {
    quiet_deliberate_panics();
    let secs = soak_secs();
    let ctx = Arc::new(Ctx {
        messages: Ledger::new("message"),
        replies: Ledger::new("reply"),
        processes: Ledger::new("process"),
        registry: Registry {
            pids: Mutex::new(Vec::new()),
            cursor: AtomicUsize::new(0),
        },
        later: Mutex::new(VecDeque::new()),
        on_complete: AtomicU64::new(0),
        started: AtomicU64::new(0),
        outcomes: Default::default(),
        terminate_ok: AtomicU64::new(0),
        failures: Mutex::new(Vec::new()),
    });
    let scheduler = Arc::new(build(&ctx));
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);

    let helper_stop = Arc::new(AtomicBool::new(false));
    let helper = {
        let (ctx, stop) = (Arc::clone(&ctx), Arc::clone(&helper_stop));
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if complete_due(&ctx, false, usize::MAX) == 0 {
                    thread::sleep(Duration::from_micros(200));
                }
            }
        })
    };
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (scheduler, ctx) = (Arc::clone(&scheduler), Arc::clone(&ctx));
            thread::spawn(move || client(i, &scheduler, &ctx, deadline))
        })
        .collect();
    let mut joinable = Vec::new();
    for client in clients {
        joinable.extend(client.join().expect("a client thread panicked"));
    }
    let stats_before = scheduler.stats();

    let report = scheduler.shutdown(Duration::from_secs(10));
    helper_stop.store(true, Ordering::Relaxed);
    helper.join().unwrap();
    // Whatever is still held can no longer be delivered: handed back.
    complete_due(&ctx, true, usize::MAX);
    let stats = scheduler.stats();

    for handle in joinable {
        match handle.join_timeout(Duration::from_secs(1)) {
            Ok(Ok(_)) | Ok(Err(_)) => {}
            Err(h) => panic!("joinable {} has no outcome after shutdown", h.pid()),
        }
    }
    let failures = ctx.failures.lock().unwrap().clone();
    let messages = ctx.messages.check(true);
    let replies = ctx.replies.check(true);
    let processes = ctx.processes.check(false);
    let outcomes: Vec<u64> = ctx
        .outcomes
        .iter()
        .map(|o| o.load(Ordering::Relaxed))
        .collect();
    println!(
        "soak {secs} s: processes started {} refused {}; outcomes done/failed/panicked/terminated/shutdown {outcomes:?}; terminate ok {}",
        processes[0],
        processes[3],
        ctx.terminate_ok.load(Ordering::Relaxed)
    );
    println!(
        "messages accepted {} received {} undelivered {} refused {}",
        messages[0], messages[1], messages[2], messages[3]
    );
    println!(
        "replies accepted {} received {} undelivered {} refused {}",
        replies[0], replies[1], replies[2], replies[3]
    );
    println!("{report:?}\nbefore shutdown:\n{stats_before}\nafter:\n{stats}");

    assert!(failures.is_empty(), "failures: {failures:#?}");
    let started_count = ctx.started.load(Ordering::Relaxed);
    assert_eq!(processes[0], started_count);
    assert_eq!(
        processes[1], started_count,
        "every started process closed once"
    );
    assert_eq!(
        ctx.on_complete.load(Ordering::Relaxed),
        started_count,
        "every started process reported to on_complete once"
    );
    assert_eq!(stats.live, 0, "{stats}");
    assert_eq!(report.stuck, 0, "{report:?}");
    assert!(
        !report.timed_out,
        "processes finish on Cancel::Shutdown: {report:?}"
    );
    assert_eq!(report.forced, 0, "{report:?}");
    assert_eq!(stats.unknown_tags, 0);
    assert!(
        started_count > 0 && messages[1] > 0 && replies[1] > 0,
        "the load ran"
    );
}
