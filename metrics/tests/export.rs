//! Exports a run's stats, parses the text back and checks the values.

use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use stepsched::process::{Event, NoCommand, Process, Status, StepOutput};
use stepsched::sched::Scheduler;
use stepsched_metrics::StatsCollector;

/// Runs `n` steps, then ends.
struct Steps(u32);

impl Process for Steps {
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
        self.0 -= 1;
        if self.0 == 0 {
            out.done(());
        } else {
            out.set_status(Status::Continue);
        }
        Ok(())
    }
}

/// The samples of an exposition: `name{labels}` to value, comments and
/// `# EOF` skipped.
fn parse(text: &str) -> HashMap<String, f64> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| {
            let (key, value) = line.rsplit_once(' ').expect("a sample is `name value`");
            (key.to_owned(), value.parse().expect("a number"))
        })
        .collect()
}

fn export(scheduler: &Arc<Scheduler<Steps>>) -> HashMap<String, f64> {
    let mut registry = Registry::default();
    let source = Arc::clone(scheduler);
    registry.register_collector(Box::new(StatsCollector::new(move || source.stats())));
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(text.ends_with("# EOF\n"), "{text}");
    parse(&text)
}

#[test]
fn the_export_counts_every_step_and_its_histogram_agrees() {
    let scheduler = Arc::new(
        Scheduler::builder()
            .workers(2)
            .record_latency(true)
            .build()
            .unwrap(),
    );
    for _ in 0..5 {
        scheduler
            .submit_joinable(Steps(4), "steps", ())
            .unwrap()
            .join_timeout(Duration::from_secs(10))
            .expect("ends")
            .unwrap();
    }
    let samples = export(&scheduler);
    let steps: f64 = (0..2)
        .map(|w| samples[&format!("stepsched_steps_total{{worker=\"{w}\"}}")])
        .sum();
    assert_eq!(steps, 20.0);
    assert_eq!(samples["stepsched_step_latency_seconds_count"], 20.0);
    assert_eq!(
        samples["stepsched_step_latency_seconds_bucket{le=\"+Inf\"}"],
        20.0
    );
    assert_eq!(samples["stepsched_schedule_latency_seconds_count"], 20.0);
    assert_eq!(samples["stepsched_submitted_total"], 5.0);
    assert_eq!(samples["stepsched_completed_total"], 5.0);
    assert_eq!(samples["stepsched_live_processes"], 0.0);
    // Buckets are cumulative: they never go down, and end at the count.
    let mut buckets: Vec<(f64, f64)> = samples
        .iter()
        .filter_map(|(k, &v)| {
            let le = k
                .strip_prefix("stepsched_step_latency_seconds_bucket{le=\"")?
                .strip_suffix("\"}")?;
            Some((
                if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().unwrap()
                },
                v,
            ))
        })
        .collect();
    buckets.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
    assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "{buckets:?}");
    let busy: f64 = (0..2)
        .map(|w| samples[&format!("stepsched_busy_seconds_total{{worker=\"{w}\"}}")])
        .sum();
    assert!(busy > 0.0);
    assert!((busy - samples["stepsched_step_latency_seconds_sum"]).abs() < 1e-3);
    scheduler.shutdown(Duration::from_secs(10));
}

#[test]
fn without_latency_figures_no_histogram_is_exported() {
    let scheduler = Arc::new(Scheduler::builder().workers(1).build().unwrap());
    scheduler
        .submit_joinable(Steps(2), "steps", ())
        .unwrap()
        .join_timeout(Duration::from_secs(10))
        .expect("ends")
        .unwrap();
    let samples = export(&scheduler);
    assert_eq!(samples["stepsched_steps_total{worker=\"0\"}"], 2.0);
    assert!(!samples
        .keys()
        .any(|k| k.contains("latency") || k.contains("busy")));
    scheduler.shutdown(Duration::from_secs(10));
}
