//! Soak: short ping-pongs started back to back for `SOAK_SECS` seconds
//! (default 60) on 2 workers. Each round submits two processes and kicks
//! one from outside at once, so kicks and the ping-pong's own messages keep
//! landing on processes that are queued for, starting or ending a step.
//! A lost message leaves both processes waiting forever; the round then
//! fails after 10 s with a dump of the processes.
//!
//! It targets a lost wakeup: a notify that only *read* the state word
//! could miss a step that was starting (the
//! notify-writes invariant in `src/process/state/`, and its loom
//! models in `loom-tests/tests/state.rs`); with a read-only notify it
//! stalls within a minute in most runs. It proves nothing by passing; the loom
//! models are the proof. Ignored by default; CI runs it:
//!
//! ```text
//! SOAK_SECS=5 cargo test --release --test soak_ping_pong -- --ignored --nocapture
//! ```

use std::sync::mpsc;
use std::time::{Duration, Instant};

use stepsched::sched::Scheduler;

#[path = "common/pinger.rs"]
mod pinger;
use pinger::Pinger;

/// Round trips per round: long enough for both workers to get involved,
/// short enough for thousands of rounds (each a fresh start) a minute.
const TRIPS: u64 = 20_000;

fn soak_secs() -> u64 {
    std::env::var("SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60)
}

#[test]
#[ignore = "a minute long; CI runs it"]
fn ping_pong_rounds_never_stall() {
    let (done_tx, done) = mpsc::channel();
    let scheduler = Scheduler::<Pinger>::builder()
        .workers(2)
        .on_complete(move |_, outcome| {
            done_tx
                .send(*outcome.as_ref().expect("a pinger failed"))
                .unwrap()
        })
        .build()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(soak_secs());
    let mut rounds = 0u64;
    while Instant::now() < until {
        let a = scheduler.submit(Pinger::default(), "ping", ()).unwrap();
        let b = scheduler.submit(Pinger::default(), "pong", ()).unwrap();
        // `a` receives the kick and then every other message: 2 * TRIPS + 1
        // messages in all, split between the two.
        scheduler.send(a, (b, 2 * TRIPS)).unwrap();
        let mut received = 0;
        for _ in 0..2 {
            match done.recv_timeout(Duration::from_secs(10)) {
                Ok(n) => received += n,
                Err(_) => panic!(
                    "round {rounds} stalled: {:#?}\n{:#?}",
                    scheduler.processes(),
                    scheduler.stats()
                ),
            }
        }
        assert_eq!(received, 2 * TRIPS + 1, "round {rounds}");
        rounds += 1;
    }
    println!("{rounds} rounds of {TRIPS} round trips, none stalled");
    assert!(rounds > 0);
}
