//! A supervision tree with `stepsched::supervisor`: the embedder writes its
//! workers, puts `Supervisor<Node>` among its kinds, and describes the
//! children; the supervisor starts them, restarts those that fail, and
//! gives up (stopping the rest, then failing itself) past its restart
//! intensity, as OTP's supervisors do.
//!
//! Workers fail on purpose: `flaky` fails its first incarnations, `doomed`
//! every time. Run: `cargo run --release --example supervisor`.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use stepsched::process::{Event, Kind, NoCommand, Pid, Status, StepOutput};
use stepsched::sched::Scheduler;
use stepsched::supervisor::{ChildSpec, Restart, Strategy, Supervisor, SupervisorSpec};

/// How many workers have finished, in the scenario that runs.
static FINISHED: AtomicUsize = AtomicUsize::new(0);

/// Does `work` steps, then finishes; its first `failures` incarnations
/// fail half-way (shared, so the count lasts over restarts).
struct Worker {
    name: &'static str,
    work: u32,
    done: u32,
    fails: bool,
}

#[derive(Clone)]
struct WorkerArgs {
    name: &'static str,
    work: u32,
    failures: Arc<AtomicU32>,
}

impl Kind<Node> for Worker {
    type Input = WorkerArgs;

    fn init(&mut self, args: WorkerArgs) -> Result<(), String> {
        // Relaxed: a counter of the demo's own; one incarnation at a time
        // touches it (its supervisor never runs two), and publishes nothing.
        let left = args.failures.load(Ordering::Relaxed);
        self.fails = left > 0;
        if self.fails && left != u32::MAX {
            args.failures.store(left - 1, Ordering::Relaxed);
        }
        (self.name, self.work) = (args.name, args.work);
        println!("  {} starts", self.name);
        Ok(())
    }

    fn step(
        &mut self,
        _: &mut Vec<Event<Node>>,
        out: &mut StepOutput<'_, Node>,
    ) -> Result<(), String> {
        self.done += 1;
        if self.fails && self.done == self.work / 2 {
            println!("  {} fails", self.name);
            return Err(format!("{} failed", self.name));
        }
        if self.done == self.work {
            println!("  {} finishes", self.name);
            // Relaxed: a count `main` polls; it publishes nothing.
            FINISHED.fetch_add(1, Ordering::Relaxed);
            out.done(());
        } else {
            out.set_status(Status::Continue);
        }
        Ok(())
    }

    fn close(&mut self) {}
}

/// Tells how the process it monitors ended.
struct Watch;

impl Kind<Node> for Watch {
    type Input = ();

    fn init(&mut self, _: ()) -> Result<(), String> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Node>>,
        out: &mut StepOutput<'_, Node>,
    ) -> Result<(), String> {
        for event in events.drain(..) {
            match event {
                Event::Message(target) => out.monitor(target),
                Event::Down { reason, .. } => {
                    println!("  the supervisor ended: {reason}");
                    out.done(());
                }
                _ => {}
            }
        }
        Ok(())
    }
}

stepsched::kinds! {
    enum Node {
        Sup(Supervisor<Node>),
        Worker(Worker),
        Watch(Watch),
    }
    enum NodeInput;
    type Message = Pid; // a Watch's target
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = String;
}

fn worker(name: &'static str, work: u32, failures: u32) -> ChildSpec<Node> {
    let args = WorkerArgs {
        name,
        work,
        failures: Arc::new(AtomicU32::new(failures)),
    };
    let start = move || {
        let worker = Worker {
            name: "",
            work: 0,
            done: 0,
            fails: false,
        };
        (worker, args.clone())
    };
    ChildSpec::new(name, start).restart(Restart::Transient) // done is done
}

fn main() {
    let scheduler = Scheduler::<Node>::builder().build().expect("a scheduler");
    let scenarios = [
        (
            "one-for-one, a flaky worker fails twice and recovers",
            SupervisorSpec::new(Strategy::OneForOne)
                .child(worker("steady", 20_000, 0))
                .child(worker("flaky", 10_000, 2))
                .child(worker("other", 5_000, 0)),
        ),
        (
            "one-for-one, a doomed worker exceeds 3 restarts in 5 s",
            SupervisorSpec::new(Strategy::OneForOne)
                .intensity(3, Duration::from_secs(5))
                .child(worker("steady", u32::MAX, 0))
                .child(worker("doomed", 1_000, u32::MAX)),
        ),
        (
            "rest-for-one, the first worker fails once: the later ones restart too",
            SupervisorSpec::new(Strategy::RestForOne)
                .child(worker("db", 20_000, 1))
                .child(worker("cache", 100_000, 0))
                .child(worker("web", 100_000, 0)),
        ),
    ];
    for (title, spec) in scenarios {
        println!("{title}:");
        let children = spec.children().len();
        let sup = scheduler
            .submit_kind_joinable(Supervisor::new(), spec)
            .expect("submitted");
        let watch = scheduler
            .submit_kind_joinable(Watch, ())
            .expect("submitted");
        scheduler.send(watch.pid(), sup.pid()).expect("a watch");
        // A supervisor runs until stopped: here, once its workers are done,
        // unless it gave up first.
        while !sup.is_finished() && FINISHED.load(Ordering::Relaxed) < children {
            std::thread::sleep(Duration::from_millis(1));
        }
        FINISHED.store(0, Ordering::Relaxed); // every worker has ended
        let _ = scheduler.terminate(sup.pid());
        let _ = sup.join();
        let _ = watch.join();
        println!();
    }
    let report = scheduler.shutdown(Duration::from_secs(5));
    println!("shutdown: {report:?}");
}
