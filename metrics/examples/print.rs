//! Prints the exposition of a small run: what a scrape of `/metrics`
//! would get.
//!
//! `cargo run -p stepsched-metrics --example print`

use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::time::Duration;
use stepsched::process::{Event, NoCommand, Process, Status, StepOutput};
use stepsched::sched::Scheduler;
use stepsched_metrics::StatsCollector;

/// Runs `n` steps of a little work each, then ends.
struct Work(u32);

impl Process for Work {
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
        let mut x = self.0 as u64;
        for i in 0..1_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
        }
        std::hint::black_box(x);
        self.0 -= 1;
        if self.0 == 0 {
            out.done(());
        } else {
            out.set_status(Status::Continue);
        }
        Ok(())
    }
}

fn main() {
    let scheduler = Arc::new(
        Scheduler::builder()
            .workers(2)
            .record_latency(true)
            .build()
            .expect("threads start"),
    );
    let handles: Vec<_> = (0..100)
        .map(|_| scheduler.submit_joinable(Work(50), "work", ()).unwrap())
        .collect();
    for handle in handles {
        handle
            .join_timeout(Duration::from_secs(10))
            .expect("ends")
            .unwrap();
    }
    let mut registry = Registry::default();
    let source = Arc::clone(&scheduler);
    registry.register_collector(Box::new(StatsCollector::new(move || source.stats())));
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry)
        .expect("a String takes any text");
    print!("{text}");
    scheduler.shutdown(Duration::from_secs(5));
}
