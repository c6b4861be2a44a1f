//! The five scenarios, each run on stepsched and on tokio: spawn_many,
//! chained_spawn, yield_many, ping_pong, fan_out_fan_in.

use std::sync::Arc;
use std::time::{Duration, Instant};

use stepsched::process::{Event, NoCommand, Pid, Process, StepOutput};
use stepsched::sched::Scheduler;

use crate::workloads::{Fan, FanInput, FanMsg, FanOutput, Latch, Link, Pinger, Yielder};
use crate::{compare, scenario_builder, tokio_runtime};

// ---------------------------------------------------------------------------
// spawn_many

/// Finishes in its first step.
struct Trivial;

impl Process for Trivial {
    type Input = ();
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = ();
    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }
    fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
        out.done(());
        Ok(())
    }
}

pub fn spawn_many(n: u64, rounds: usize) -> (Vec<Duration>, Vec<Duration>) {
    let rt = tokio_runtime();
    let handle = rt.handle().clone();
    let t_latch = Arc::new(Latch::default());
    let s_latch = Arc::new(Latch::default());
    let hook = Arc::clone(&s_latch);
    let scheduler = scenario_builder::<Trivial>()
        .on_complete(move |_, outcome| {
            assert!(outcome.is_ok(), "spawn_many: {outcome:?}");
            hook.hit(1);
        })
        .build()
        .expect("scheduler");
    compare(
        rounds,
        || {
            t_latch.arm(n);
            let start = Instant::now();
            for _ in 0..n {
                let latch = Arc::clone(&t_latch);
                handle.spawn(async move { latch.hit(1) });
            }
            let sum = t_latch.wait("tokio spawn_many");
            let took = start.elapsed();
            assert_eq!(sum, n);
            took
        },
        || {
            s_latch.arm(n);
            let start = Instant::now();
            for _ in 0..n {
                scheduler.submit(Trivial, "trivial", ()).expect("submit");
            }
            let sum = s_latch.wait("stepsched spawn_many");
            let took = start.elapsed();
            assert_eq!(sum, n);
            took
        },
    )
}

// ---------------------------------------------------------------------------
// chained_spawn (processes: `Link`, in `benches/common/workloads.rs`, as are
// `Yielder`, `Pinger`, `Fan` and `Latch`)

fn tokio_chain(latch: Arc<Latch>, left: u64) {
    if left == 0 {
        latch.hit(1);
    } else {
        tokio::spawn(async move { tokio_chain(latch, left - 1) });
    }
}

pub fn chained_spawn(depth: u64, rounds: usize) -> (Vec<Duration>, Vec<Duration>) {
    let rt = tokio_runtime();
    let t_latch = Arc::new(Latch::default());
    let s_latch = Arc::new(Latch::default());
    let hook = Arc::clone(&s_latch);
    let scheduler = scenario_builder::<Link>()
        .on_complete(move |_, outcome| hook.hit(*outcome.as_ref().expect("chained_spawn failed")))
        .build()
        .expect("scheduler");
    compare(
        rounds,
        || {
            t_latch.arm(1);
            let start = Instant::now();
            let latch = Arc::clone(&t_latch);
            rt.spawn(async move { tokio_chain(latch, depth) });
            t_latch.wait("tokio chained_spawn");
            start.elapsed()
        },
        || {
            // Every link completes (the last one may finish on another
            // worker before its ancestors' hooks have run): wait for all.
            s_latch.arm(depth + 1);
            let start = Instant::now();
            scheduler.submit(Link(0), "link", depth).expect("submit");
            let sum = s_latch.wait("stepsched chained_spawn");
            let took = start.elapsed();
            assert_eq!(sum, depth * (depth + 1) / 2, "the sum of the links' depths");
            took
        },
    )
}

// ---------------------------------------------------------------------------
// yield_many

pub fn yield_many(tasks: u64, yields: u64, rounds: usize) -> (Vec<Duration>, Vec<Duration>) {
    let rt = tokio_runtime();
    let handle = rt.handle().clone();
    let t_latch = Arc::new(Latch::default());
    let s_latch = Arc::new(Latch::default());
    let hook = Arc::clone(&s_latch);
    let scheduler = scenario_builder::<Yielder>()
        .on_complete(move |_, outcome| hook.hit(*outcome.as_ref().expect("yield_many failed")))
        .build()
        .expect("scheduler");
    compare(
        rounds,
        || {
            t_latch.arm(tasks);
            let start = Instant::now();
            for _ in 0..tasks {
                let latch = Arc::clone(&t_latch);
                handle.spawn(async move {
                    let mut done = 0;
                    for _ in 0..yields {
                        tokio::task::yield_now().await;
                        done += 1;
                    }
                    latch.hit(done);
                });
            }
            let sum = t_latch.wait("tokio yield_many");
            let took = start.elapsed();
            assert_eq!(sum, tasks * yields);
            took
        },
        || {
            s_latch.arm(tasks);
            let start = Instant::now();
            for _ in 0..tasks {
                let yielder = Yielder::default();
                scheduler.submit(yielder, "yield", yields).expect("submit");
            }
            let sum = s_latch.wait("stepsched yield_many");
            let took = start.elapsed();
            assert_eq!(sum, tasks * yields);
            took
        },
    )
}

// ---------------------------------------------------------------------------
// ping_pong

pub fn pinger_scheduler(latch: &Arc<Latch>) -> Scheduler<Pinger> {
    let hook = Arc::clone(latch);
    scenario_builder::<Pinger>()
        .on_complete(move |_, outcome| hook.hit(*outcome.as_ref().expect("ping_pong failed")))
        .build()
        .expect("scheduler")
}

/// One stepsched ping-pong of `trips` round trips; returns the time from the
/// first send to both processes' end.
pub fn stepsched_ping_pong(scheduler: &Scheduler<Pinger>, latch: &Latch, trips: u64) -> Duration {
    latch.arm(2);
    let a = scheduler.submit(Pinger::default(), "ping", ()).unwrap();
    let b = scheduler.submit(Pinger::default(), "pong", ()).unwrap();
    let start = Instant::now();
    // `a` receives 2R, sends 2R-1 to `b`, ...: 2R messages between them.
    scheduler.send(a, (b, 2 * trips)).unwrap();
    let received = latch.wait("stepsched ping_pong");
    let took = start.elapsed();
    assert_eq!(received, 2 * trips + 1, "the kick from outside + 2R");
    took
}

/// One tokio ping-pong over two unbounded channels.
pub fn tokio_ping_pong(rt: &tokio::runtime::Runtime, latch: &Arc<Latch>, trips: u64) -> Duration {
    use tokio::sync::mpsc::unbounded_channel;
    latch.arm(2);
    let (to_b, mut b_rx) = unbounded_channel::<u64>();
    let (to_a, mut a_rx) = unbounded_channel::<u64>();
    let start = Instant::now();
    let pong = Arc::clone(latch);
    rt.spawn(async move {
        let mut received = 0;
        while let Some(n) = b_rx.recv().await {
            received += 1;
            to_a.send(n).unwrap();
        }
        pong.hit(received);
    });
    let ping = Arc::clone(latch);
    rt.spawn(async move {
        let mut received = 0;
        for i in 0..trips {
            to_b.send(i).unwrap();
            let back = a_rx.recv().await.unwrap();
            assert_eq!(back, i);
            received += 1;
        }
        ping.hit(received);
    });
    let received = latch.wait("tokio ping_pong");
    let took = start.elapsed();
    assert_eq!(received, 2 * trips);
    took
}

pub fn ping_pong(trips: u64, rounds: usize) -> (Vec<Duration>, Vec<Duration>) {
    let rt = tokio_runtime();
    let t_latch = Arc::new(Latch::default());
    let s_latch = Arc::new(Latch::default());
    let scheduler = pinger_scheduler(&s_latch);
    compare(
        rounds,
        || tokio_ping_pong(&rt, &t_latch, trips),
        || stepsched_ping_pong(&scheduler, &s_latch, trips),
    )
}

// ---------------------------------------------------------------------------
// fan_out_fan_in

pub fn fan_out_fan_in(
    workers: u64,
    fan_rounds: u64,
    rounds: usize,
) -> (Vec<Duration>, Vec<Duration>) {
    let rt = tokio_runtime();
    let t_coord = Arc::new(Latch::default());
    let t_workers = Arc::new(Latch::default());
    let s_coord = Arc::new(Latch::default());
    let s_workers = Arc::new(Latch::default());
    let (coord_hook, workers_hook) = (Arc::clone(&s_coord), Arc::clone(&s_workers));
    let scheduler = scenario_builder::<Fan>()
        .on_complete(move |_, outcome| match outcome {
            Ok(FanOutput::Coordinator(n)) => coord_hook.hit(*n),
            Ok(FanOutput::Worker(n)) => workers_hook.hit(*n),
            Err(e) => panic!("fan_out_fan_in: {e}"),
        })
        .build()
        .expect("scheduler");
    let settle = Duration::from_millis(20);
    compare(
        rounds,
        || {
            use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
            t_coord.arm(1);
            t_workers.arm(workers);
            let (reply_tx, mut reply_rx) = unbounded_channel::<u64>();
            let mut txs: Vec<UnboundedSender<u64>> = Vec::with_capacity(workers as usize);
            for _ in 0..workers {
                let (tx, mut rx) = unbounded_channel::<u64>();
                txs.push(tx);
                let reply = reply_tx.clone();
                let done = Arc::clone(&t_workers);
                rt.spawn(async move {
                    let mut served = 0;
                    while let Some(round) = rx.recv().await {
                        served += 1;
                        let _ = reply.send(round);
                    }
                    done.hit(served);
                });
            }
            drop(reply_tx);
            std::thread::sleep(settle); // every worker task waits on recv
            let start = Instant::now();
            let coord = Arc::clone(&t_coord);
            rt.spawn(async move {
                let mut replies = 0;
                for round in 0..fan_rounds {
                    for tx in &txs {
                        tx.send(round).unwrap();
                    }
                    for _ in 0..txs.len() {
                        assert_eq!(reply_rx.recv().await, Some(round));
                        replies += 1;
                    }
                }
                coord.hit(replies);
                // Dropping `txs` here stops the workers (not timed).
            });
            let replies = t_coord.wait("tokio fan_out_fan_in");
            let took = start.elapsed();
            assert_eq!(replies, workers * fan_rounds);
            assert_eq!(t_workers.wait("tokio fan workers"), workers * fan_rounds);
            took
        },
        || {
            s_coord.arm(1);
            s_workers.arm(workers);
            let pids: Arc<[Pid]> = (0..workers)
                .map(|_| scheduler.submit(Fan::Worker { served: 0 }, "worker", FanInput::Worker))
                .collect::<Result<_, _>>()
                .expect("submit");
            std::thread::sleep(settle); // every worker has run its first step
            let start = Instant::now();
            let input = FanInput::Coordinator(Arc::clone(&pids), fan_rounds);
            scheduler
                .submit(Fan::Worker { served: 0 }, "coordinator", input)
                .expect("submit");
            let replies = s_coord.wait("stepsched fan_out_fan_in");
            let took = start.elapsed();
            assert_eq!(replies, workers * fan_rounds);
            for &pid in pids.iter() {
                scheduler.send(pid, FanMsg::Stop).expect("worker alive");
            }
            assert_eq!(
                s_workers.wait("stepsched fan workers"),
                workers * fan_rounds
            );
            took
        },
    )
}
