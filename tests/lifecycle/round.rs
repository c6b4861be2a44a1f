//! One round: build a scheduler from the seed, run the storm, shut down in
//! the middle of it, read every receiver to its end, join every joiner,
//! and hand the books to `check.rs`. A watchdog aborts a round that hangs,
//! naming its seed and where it hung.

use super::*;

/// The round's scheduler, to build: its handlers and hooks book everything.
pub(crate) fn builder(round: &Arc<Round>) -> Builder<Actor> {
    let cfg = &round.cfg;
    let (inline, later, block) = (Arc::clone(round), Arc::clone(round), Arc::clone(round));
    let (undelivered, complete) = (Arc::clone(round), Arc::clone(round));
    let mut builder = Scheduler::<Actor>::builder()
        .workers(cfg.workers)
        .thread_name(|i| format!("lc-worker-{i}"))
        .max_events_per_step(cfg.events_per_step)
        .max_blocking_threads(cfg.max_blocking)
        .blocking_keep_alive(cfg.keep_alive)
        .handler("inline", move |_, completer| {
            let id = inline.replies.alloc();
            inline.completed(id, completer.succeed(id));
        })
        .handler("later", move |_, completer| {
            let delay = Duration::from_micros(completer.tag() * 97 % 1_500);
            let mut held = later.later.lock().unwrap();
            held.push_back((later.now() + delay, completer));
        })
        .blocking_handler("block", move |command, completer| {
            block.blocking.fetch_add(1, Ordering::SeqCst);
            // Leaves the count however the handler ends.
            struct Out<'a>(&'a AtomicUsize);
            impl Drop for Out<'_> {
                fn drop(&mut self) {
                    self.0.fetch_sub(1, Ordering::SeqCst);
                }
            }
            let _out = Out(&block.blocking);
            if let Cmd::Block { micros, panic } = command {
                // (Under the simulation it runs on the driving thread, on
                // the virtual clock: a sleep would only slow the round.)
                if !block.simulated() {
                    thread::sleep(Duration::from_micros(micros));
                }
                if panic {
                    std::panic::panic_any(DELIBERATE.to_owned());
                }
            }
            let id = block.replies.alloc();
            block.completed(id, completer.succeed(id));
        })
        .on_undelivered(move |pid, event| match event {
            Event::Message(message) | Event::Refused { message, .. } => {
                message.settle(UNDELIVERED);
            }
            Event::Completion { result: Ok(id), .. } => undelivered.replies.mark(id, UNDELIVERED),
            Event::Completion { .. } => {}
            other => undelivered.find(
                Check::Api,
                None,
                format!("on_undelivered got {other:?} for {pid}, which the docs rule out"),
            ),
        })
        .on_complete(move |pid, outcome| {
            let mut outcomes = complete.outcomes.lock().unwrap();
            let entry = outcomes.entry(pid).or_insert((End::of(outcome), 0));
            entry.1 += 1;
            drop(outcomes);
            complete.completed.fetch_add(1, Ordering::Relaxed);
            let (who, serial) = (Who::Plain, 0);
            complete.ended.push(Target { pid, who, serial });
        });
    if let Some(capacity) = cfg.capacity {
        builder = builder.mailbox_capacity(capacity);
    }
    builder
}

/// Where a round is, for the watchdog's message.
pub(crate) struct Phase(Mutex<&'static str>);

impl Phase {
    pub(crate) fn new(phase: &'static str) -> Self {
        Phase(Mutex::new(phase))
    }

    pub(crate) fn set(&self, phase: &'static str) {
        *self.0.lock().unwrap() = phase;
    }
}

/// Aborts the process if the round does not finish within the guard.
pub(crate) fn watchdog(seed: u64, phase: Arc<Phase>) -> mpsc::Sender<()> {
    let (done, finished) = mpsc::channel::<()>();
    thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(3 * GUARD) {
            let at = *phase.0.lock().unwrap();
            eprintln!(
                "lifecycle: seed {seed} hung in {at}; replay with\n  LIFECYCLE_SEED={seed} cargo test --release --test lifecycle -- --ignored --nocapture"
            );
            std::process::abort();
        }
    });
    done
}

/// Runs round `seed`.
pub(crate) fn run(seed: u64, long_run: bool) -> Ran {
    let cfg = Config::new(seed, long_run);
    let phase = Arc::new(Phase::new("build"));
    let done = watchdog(seed, Arc::clone(&phase));
    let round = Arc::new(Round::new(seed, cfg.clone()));
    let scheduler = Arc::new(builder(&round).build().expect("the scheduler starts"));
    let after = Arc::new(AtomicBool::new(false));
    let pair_done = Arc::new(AtomicBool::new(!cfg.pair));

    phase.set("storm");
    let helper = {
        let (round, after) = (Arc::clone(&round), Arc::clone(&after));
        let mut rng = Rng::new(seed).derive(1_000);
        thread::spawn(move || {
            while !after.load(Ordering::SeqCst) {
                if round.complete_due(false, &mut rng) == 0 {
                    thread::sleep(Duration::from_micros(100));
                }
            }
        })
    };
    let start = Instant::now();
    let threads: Vec<_> = (0..cfg.threads)
        .map(|i| {
            let (round, scheduler) = (Arc::clone(&round), Arc::clone(&scheduler));
            let (after, pair_done) = (Arc::clone(&after), Arc::clone(&pair_done));
            let pair = cfg.pair && i == 0;
            thread::Builder::new()
                .name(format!("lc-op-{i}"))
                .spawn(move || {
                    let storm = Storm::new(i, &round, &scheduler);
                    storm.run(&after, pair.then_some(&*pair_done))
                })
                .expect("a storm thread starts")
        })
        .collect();
    thread::sleep(cfg.storm * 4 / 5);
    round.near.store(true, Ordering::SeqCst);
    thread::sleep(cfg.storm / 5);
    let deadline = Instant::now() + GUARD;
    while !pair_done.load(Ordering::SeqCst) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(1));
    }
    let storm = start.elapsed();
    let ops = round.ops.load(Ordering::Relaxed);

    if std::env::var_os("LIFECYCLE_VERBOSE").is_some() {
        let (started, ended) = (&round.started, &round.completed);
        println!(
            "seed {seed}: {cfg:?}\nstarted {} ended {} before shutdown; {}",
            started.load(Ordering::Relaxed),
            ended.load(Ordering::Relaxed),
            scheduler.stats()
        );
    }
    phase.set("shutdown");
    round.stopping.store(true, Ordering::SeqCst);
    let report = match catch_unwind(AssertUnwindSafe(|| scheduler.shutdown(cfg.shutdown))) {
        Ok(report) => report,
        // Filed by the panic hook; the scheduler still needs its shutdown.
        Err(_) => scheduler.shutdown(LONG_SHUTDOWN),
    };
    after.store(true, Ordering::SeqCst);
    phase.set("joining the storm threads");
    let mut leftovers = Vec::new();
    for thread in threads {
        match thread.join() {
            Ok(left) => leftovers.push(left),
            Err(_) => round.find(Check::Api, None, "a storm thread panicked".to_owned()),
        }
    }
    helper.join().expect("the helper thread");
    // What is still held can no longer be delivered: handed back.
    let mut rng = Rng::new(seed).derive(2_000);
    round.complete_due(true, &mut rng);

    phase.set("receivers after shutdown");
    let timeout = if cfg.max_waits && seed % 2 == 0 {
        Duration::MAX
    } else {
        GUARD
    };
    let mut joined = Vec::new();
    for left in &mut leftovers {
        for receiver in left.receivers.drain(..) {
            loop {
                match catch_unwind(AssertUnwindSafe(|| receiver.recv_timeout(timeout))) {
                    Ok(Ok(message)) => {
                        message.settle(RECEIVED);
                    }
                    Ok(Err(mpsc::RecvTimeoutError::Disconnected)) => break,
                    Ok(Err(mpsc::RecvTimeoutError::Timeout)) => {
                        let detail = format!(
                            "{}: recv after shutdown still waiting after {timeout:?}",
                            receiver.pid()
                        );
                        round.find(Check::RecvAfterShutdown, None, detail);
                        break;
                    }
                    Err(_) => break, // filed by the panic hook
                }
            }
        }
    }
    phase.set("joiners");
    for left in &mut leftovers {
        for handle in left.joins.drain(..) {
            let pid = handle.pid();
            match handle.join_timeout(GUARD) {
                Ok(outcome) => joined.push((pid, End::of(&outcome))),
                Err(handle) => {
                    let detail =
                        format!("{} has no outcome {GUARD:?} after shutdown", handle.pid());
                    round.find(Check::Join, None, detail);
                }
            }
        }
        for (set, count) in left.sets.iter_mut() {
            for _ in 0..*count {
                match set.blocking_join_next_timeout(GUARD) {
                    Some((pid, outcome)) => joined.push((pid, End::of(&outcome))),
                    None => {
                        let detail = format!("a JoinSet gave no outcome {GUARD:?} after shutdown");
                        round.find(Check::Join, None, detail);
                        break;
                    }
                }
            }
        }
    }
    phase.set("blocking handlers");
    let deadline = Instant::now() + GUARD;
    while round.blocking.load(Ordering::SeqCst) != 0 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(1));
    }

    phase.set("checks");
    check::panics(&round);
    let live_after = scheduler.live();
    let long = cfg.shutdown >= LONG_SHUTDOWN;
    let findings = check::check(&round, &report, long, &joined, live_after);
    if std::env::var_os("LIFECYCLE_VERBOSE").is_some() {
        println!("seed {seed}: round took {:?}, {report:?}", start.elapsed());
    }
    drop(scheduler);
    let _ = done.send(());
    Ran {
        findings,
        ops,
        storm,
    }
}
