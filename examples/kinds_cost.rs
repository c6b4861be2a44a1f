//! What the open form of several kinds costs against the closed one: the
//! same two kinds hosted by an enum that `kinds!` writes and by
//! `Dyn<T>` (each process boxed, each step an indirect call), run
//! alternately, a few rounds each, on 2 workers.
//!
//! - `create`: 200,000 processes submitted from this thread, each done in
//!   its first step (submit, init, one step, close, free): ns per process.
//! - `step`: 1,000 processes that `Continue` 1,000 times: ns per step.
//!
//! ```text
//! cargo run --release --example kinds_cost
//! ```
//!
//! A few seconds in all; on a shared machine expect noise of 10% or more,
//! so compare medians over several runs.

use std::time::{Duration, Instant};

use stepsched::process::{Dyn, Event, Hosts, Kind, NoCommand, Process, Status, StepOutput, Types};
use stepsched::sched::Scheduler;

/// Done in its first step.
struct Once;

/// Continues until it has run `left` steps.
struct Spin {
    left: u32,
}

/// Both kinds run in any host whose output is a `u64` and error `()`.
impl<P: Process<Output = u64, Error = ()>> Kind<P> for Once {
    type Input = ();
    fn init(&mut self, (): ()) -> Result<(), ()> {
        Ok(())
    }
    fn step(&mut self, _: &mut Vec<Event<P>>, out: &mut StepOutput<'_, P>) -> Result<(), ()> {
        out.done(1);
        Ok(())
    }
}

impl<P: Process<Output = u64, Error = ()>> Kind<P> for Spin {
    type Input = u32;
    fn init(&mut self, steps: u32) -> Result<(), ()> {
        self.left = steps;
        Ok(())
    }
    fn step(&mut self, _: &mut Vec<Event<P>>, out: &mut StepOutput<'_, P>) -> Result<(), ()> {
        self.left -= 1;
        if self.left == 0 {
            out.done(0);
        } else {
            out.set_status(Status::Continue);
        }
        Ok(())
    }
}

stepsched::kinds! {
    /// The closed form.
    enum Node {
        /// Done at once.
        Once(Once),
        /// Continues.
        Spin(Spin),
    }
    /// Their inputs.
    enum NodeInput;
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = ();
}

/// The open form's shared types.
struct Open;
impl Types for Open {
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = ();
}

const CREATE: u32 = 200_000;
const SPINNERS: u32 = 1_000;
const STEPS: u32 = 1_000;
const ROUNDS: usize = 7;

/// Runs both scenarios once on a fresh scheduler; returns (ns per
/// process, ns per step).
fn round<P>() -> (f64, f64)
where
    P: Process<Output = u64, Error = ()> + Hosts<Once> + Hosts<Spin>,
{
    let scheduler = Scheduler::<P>::builder().workers(2).build().unwrap();
    let drained = |scheduler: &Scheduler<P>| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while scheduler.live() > 0 {
            assert!(Instant::now() < deadline, "processes did not finish");
            std::thread::sleep(Duration::from_micros(100));
        }
    };
    let start = Instant::now();
    for _ in 0..CREATE {
        assert!(scheduler.submit_kind(Once, ()).is_ok());
    }
    drained(&scheduler);
    let create = start.elapsed().as_nanos() as f64 / f64::from(CREATE);
    let start = Instant::now();
    for _ in 0..SPINNERS {
        assert!(scheduler.submit_kind(Spin { left: 0 }, STEPS).is_ok());
    }
    drained(&scheduler);
    let step = start.elapsed().as_nanos() as f64 / f64::from(SPINNERS * STEPS);
    scheduler.shutdown(Duration::from_secs(1));
    (create, step)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let (mut closed, mut open) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        closed.push(round::<Node>());
        open.push(round::<Dyn<Open>>());
    }
    let column = |rounds: &[(f64, f64)], pick: fn(&(f64, f64)) -> f64| {
        median(rounds.iter().map(pick).collect())
    };
    println!("{ROUNDS} rounds alternating, medians:");
    println!("             enum (kinds!)   Dyn<T>   Dyn / enum");
    for (name, pick) in [
        (
            "create ns",
            (|r: &(f64, f64)| r.0) as fn(&(f64, f64)) -> f64,
        ),
        ("step ns  ", |r: &(f64, f64)| r.1),
    ] {
        let (c, o) = (column(&closed, pick), column(&open, pick));
        println!("{name}    {c:10.1}   {o:8.1}   {:8.2}", o / c);
    }
    println!(
        "size of a process: enum {} bytes, Dyn {} bytes (+ a {}-byte box)",
        std::mem::size_of::<Node>(),
        std::mem::size_of::<Dyn<Open>>(),
        std::mem::size_of::<Spin>(),
    );
}
