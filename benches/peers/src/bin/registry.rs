//! Side-by-side: the registry of names. stepsched's
//! `Scheduler::register` + `whereis` + `unregister` of one name for an idle
//! process (ns per triple), and `whereis` alone (ns each), on a scheduler
//! of 2 workers with nothing running; the BEAM's `register/2`,
//! `whereis/1`, `unregister/1` in `benches/peers/erlang/registry.erl`; and
//! ractor's `registry::where_is` of a named actor (with `ractor`: its
//! names are given only at spawn, so only the lookup compares).
//!
//! | scenario        | what one iteration includes                              |
//! |-----------------|----------------------------------------------------------|
//! | `triple`        | register (a `Name` clone: one `Arc` increment), whereis, unregister |
//! | `triple_string` | the same, registering a `&str` (one allocation of the name) |
//! | `whereis`       | one lookup by `&str` of a registered name                |
//! | `ractor_where_is` | `ractor::registry::where_is(String)` (the `String` built before the loop, cloned per call, as its API takes one by value) |
//!
//! ```text
//! cargo run --release -p stepsched-peers --bin registry
//! erlc -o /tmp benches/peers/erlang/registry.erl
//! erl -noshell +S 2 -pa /tmp -s registry main -s init stop
//! ```
//!
//! `ROUNDS` (default 5) timed rounds, after one untimed warm-up round;
//! each prints one line per scenario; `SCALE` multiplies the iterations.

use std::hint::black_box;
use std::time::Instant;

use stepsched::process::{Event, Name, NoCommand, Process, StepOutput};
use stepsched::sched::Scheduler;

/// Idles for ever.
struct Idle;

impl Process for Idle {
    type Input = ();
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = ();

    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }

    fn step(&mut self, _: &mut Vec<Event<Self>>, _: &mut StepOutput<'_, Self>) -> Result<(), ()> {
        Ok(())
    }
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v.parse().unwrap_or(default),
        Err(_) => default,
    }
}

fn ns_per(start: Instant, n: usize) -> f64 {
    start.elapsed().as_nanos() as f64 / n as f64
}

fn round(scheduler: &Scheduler<Idle>, pid: stepsched::process::Pid, scale: f64, print: bool) {
    let triples = ((1_000_000.0 * scale) as usize).max(1);
    let lookups = ((10_000_000.0 * scale) as usize).max(1);
    let name = Name::from("bench_name");

    let start = Instant::now();
    for _ in 0..triples {
        scheduler.register(name.clone(), pid).unwrap();
        assert_eq!(black_box(scheduler.whereis("bench_name")), Some(pid));
        scheduler.unregister("bench_name").unwrap();
    }
    let triple = ns_per(start, triples);

    let start = Instant::now();
    for _ in 0..triples {
        scheduler.register("bench_name", pid).unwrap();
        assert_eq!(black_box(scheduler.whereis("bench_name")), Some(pid));
        scheduler.unregister("bench_name").unwrap();
    }
    let triple_string = ns_per(start, triples);

    scheduler.register(name, pid).unwrap();
    let start = Instant::now();
    for _ in 0..lookups {
        assert_eq!(
            black_box(scheduler.whereis(black_box("bench_name"))),
            Some(pid)
        );
    }
    let whereis = ns_per(start, lookups);
    scheduler.unregister("bench_name").unwrap();
    if print {
        println!(
            "stepsched triple_ns {triple:.1} triple_string_ns {triple_string:.1} whereis_ns {whereis:.2}"
        );
    }
}

fn main() {
    let rounds: usize = env_or("ROUNDS", 5);
    let scale: f64 = env_or("SCALE", 1.0);
    let scheduler = Scheduler::builder().workers(2).build().expect("build");
    let pid = scheduler
        .submit(Idle, "", ())
        .map_err(|_| "refused")
        .unwrap();
    round(&scheduler, pid, scale, false);
    for _ in 0..rounds {
        round(&scheduler, pid, scale, true);
    }
    ractor_rounds(rounds, scale);
}

fn ractor_rounds(rounds: usize, scale: f64) {
    if std::env::var_os("STEPSCHED_ONLY").is_none() {
        ractor_side::rounds(rounds, scale);
    }
}

mod ractor_side {
    use super::ns_per;
    use ractor::{Actor, ActorProcessingErr, ActorRef};
    use std::hint::black_box;
    use std::time::Instant;

    struct Idle;

    impl Actor for Idle {
        type Msg = ();
        type State = ();
        type Arguments = ();

        async fn pre_start(&self, _: ActorRef<()>, _: ()) -> Result<(), ActorProcessingErr> {
            Ok(())
        }
    }

    pub(super) fn rounds(rounds: usize, scale: f64) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio");
        runtime.block_on(async {
            let (actor, handle) = Actor::spawn(Some("bench_name".to_string()), Idle, ())
                .await
                .expect("spawn");
            let lookups = ((10_000_000.0 * scale) as usize).max(1);
            let name = String::from("bench_name");
            for round in 0..=rounds {
                let start = Instant::now();
                for _ in 0..lookups {
                    assert!(
                        black_box(ractor::registry::where_is(black_box(name.clone()))).is_some()
                    );
                }
                let where_is = ns_per(start, lookups);
                if round > 0 {
                    println!("ractor where_is_ns {where_is:.2}");
                }
            }
            actor.stop(None);
            handle.await.expect("join");
        });
    }
}
