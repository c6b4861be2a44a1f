//! A [`stepsched`] scheduler's [`Stats`] in the text format Prometheus
//! scrapes, through [`prometheus_client`].
//!
//! [`StatsCollector`] is a [`Collector`]: registered in a
//! [`Registry`](prometheus_client::registry::Registry), it takes one
//! [`Stats`] snapshot per scrape (from the closure it was given, usually
//! `move || scheduler.stats()`) and writes:
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `stepsched_steps_total` | counter | `worker` |
//! | `stepsched_steals_total`, `stepsched_stolen_total` | counter | `worker` |
//! | `stepsched_parks_total` | counter | `worker` |
//! | `stepsched_busy_seconds_total` | counter | `worker` |
//! | `stepsched_local_queue` | gauge | `worker` |
//! | `stepsched_live_processes` | gauge | |
//! | `stepsched_submitted_total`, `stepsched_completed_total`, `stepsched_undelivered_total`, `stepsched_hook_panics_total` | counter | |
//! | `stepsched_step_latency_seconds`, `stepsched_schedule_latency_seconds` | histogram | |
//! | `stepsched_kind_live_processes` | gauge | `kind` |
//! | `stepsched_kind_steps_total` | counter | `kind` |
//!
//! The busy time and the histograms are there only if the scheduler
//! records latency figures (`Builder::record_latency(true)`), the per-kind
//! figures only if it counts kinds (`Builder::count_kinds(true)`). A
//! histogram's buckets are the scheduler's own
//! ([`Histogram::buckets`](stepsched::sched::Histogram::buckets)), bounds
//! in seconds, merged over the workers; only buckets that hold values are
//! written, then `+Inf`.
//!
//! ```
//! use prometheus_client::registry::Registry;
//! use std::sync::Arc;
//! use stepsched::process::{Event, NoCommand, Process, StepOutput};
//! use stepsched::sched::Scheduler;
//! use stepsched_metrics::StatsCollector;
//!
//! struct Job;
//! impl Process for Job {
//!     type Input = ();
//!     type Message = ();
//!     type Command = NoCommand;
//!     type Reply = ();
//!     type Output = ();
//!     type Error = ();
//!     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
//!     fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
//!         out.done(());
//!         Ok(())
//!     }
//! }
//!
//! let scheduler = Arc::new(Scheduler::<Job>::builder().workers(1).record_latency(true).build().unwrap());
//! scheduler.submit_joinable(Job, "job", ()).unwrap().join().unwrap();
//!
//! let mut registry = Registry::default();
//! let source = Arc::clone(&scheduler);
//! registry.register_collector(Box::new(StatsCollector::new(move || source.stats())));
//! let mut text = String::new();
//! prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
//! assert!(text.contains("stepsched_steps_total{worker=\"0\"} 1"));
//! assert!(text.contains("stepsched_step_latency_seconds_count 1"));
//! ```

#![deny(missing_docs)]

use core::fmt;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use stepsched::sched::{Histogram, Stats};

/// A [`Collector`] of a scheduler's [`Stats`] (crate docs).
pub struct StatsCollector {
    stats: Box<dyn Fn() -> Stats + Send + Sync>,
}

impl StatsCollector {
    /// A collector that calls `stats` once per scrape; usually
    /// `move || scheduler.stats()` with the scheduler in an `Arc`.
    pub fn new(stats: impl Fn() -> Stats + Send + Sync + 'static) -> Self {
        StatsCollector {
            stats: Box::new(stats),
        }
    }
}

impl fmt::Debug for StatsCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StatsCollector").finish_non_exhaustive()
    }
}

impl Collector for StatsCollector {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        encode_stats(&(self.stats)(), encoder)
    }
}

/// Writes `stats` as the metrics [`StatsCollector`] writes (crate docs):
/// for a [`Collector`] of one's own that adds metrics beside these.
///
/// # Errors
///
/// The encoder's error (a failed write).
pub fn encode_stats(stats: &Stats, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
    let workers = &stats.workers;
    per_worker(
        &mut encoder,
        "stepsched_steps",
        "Steps run.",
        workers.iter().map(|w| w.steps),
    )?;
    per_worker(
        &mut encoder,
        "stepsched_steals",
        "Steal attempts that took something.",
        workers.iter().map(|w| w.steals),
    )?;
    per_worker(
        &mut encoder,
        "stepsched_stolen",
        "Processes taken by steals.",
        workers.iter().map(|w| w.stolen),
    )?;
    per_worker(
        &mut encoder,
        "stepsched_parks",
        "Times the worker parked.",
        workers.iter().map(|w| w.parks),
    )?;
    {
        let mut metric = encoder.encode_descriptor(
            "stepsched_local_queue",
            "Processes in the worker's local deque when read.",
            None,
            MetricType::Gauge,
        )?;
        for (i, w) in workers.iter().enumerate() {
            let labels = [("worker", i.to_string())];
            ConstGauge::new(w.local_queue as i64).encode(metric.encode_family(&labels)?)?;
        }
    }
    if !stats.latency.is_empty() {
        let mut metric = encoder.encode_descriptor(
            "stepsched_busy_seconds",
            "Time the worker spent in steps.",
            None,
            MetricType::Counter,
        )?;
        for (i, w) in workers.iter().enumerate() {
            let labels = [("worker", i.to_string())];
            ConstCounter::new(w.busy.as_secs_f64()).encode(metric.encode_family(&labels)?)?;
        }
    }
    gauge(
        &mut encoder,
        "stepsched_live_processes",
        "Live processes.",
        stats.live as i64,
    )?;
    counter(
        &mut encoder,
        "stepsched_submitted",
        "Processes submitted from outside.",
        stats.submitted,
    )?;
    counter(
        &mut encoder,
        "stepsched_completed",
        "Processes that ended.",
        stats.completed,
    )?;
    counter(
        &mut encoder,
        "stepsched_undelivered",
        "Events that reached no process.",
        stats.undelivered,
    )?;
    counter(
        &mut encoder,
        "stepsched_hook_panics",
        "Panics of the embedder's hooks, contained.",
        stats.hook_panics,
    )?;
    if !stats.latency.is_empty() {
        histogram(
            &mut encoder,
            "stepsched_step_latency_seconds",
            "How long each step ran.",
            &stats.step_latency(),
        )?;
        histogram(
            &mut encoder,
            "stepsched_schedule_latency_seconds",
            "From a process's being made ready to its step's start.",
            &stats.schedule_latency(),
        )?;
    }
    if !stats.kinds.is_empty() {
        {
            let mut metric = encoder.encode_descriptor(
                "stepsched_kind_live_processes",
                "Live processes of each kind.",
                None,
                MetricType::Gauge,
            )?;
            for k in &stats.kinds {
                let labels = [("kind", k.name)];
                ConstGauge::new(k.live as i64).encode(metric.encode_family(&labels)?)?;
            }
        }
        let mut metric = encoder.encode_descriptor(
            "stepsched_kind_steps",
            "Steps run by processes of each kind.",
            None,
            MetricType::Counter,
        )?;
        for k in &stats.kinds {
            let labels = [("kind", k.name)];
            ConstCounter::new(k.steps).encode(metric.encode_family(&labels)?)?;
        }
    }
    Ok(())
}

fn per_worker(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    values: impl Iterator<Item = u64>,
) -> Result<(), fmt::Error> {
    let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (i, v) in values.enumerate() {
        let labels = [("worker", i.to_string())];
        ConstCounter::new(v).encode(metric.encode_family(&labels)?)?;
    }
    Ok(())
}

fn counter(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    v: u64,
) -> Result<(), fmt::Error> {
    ConstCounter::new(v).encode(encoder.encode_descriptor(name, help, None, MetricType::Counter)?)
}

fn gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    v: i64,
) -> Result<(), fmt::Error> {
    ConstGauge::new(v).encode(encoder.encode_descriptor(name, help, None, MetricType::Gauge)?)
}

/// A histogram of nanoseconds, written in seconds.
fn histogram(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    h: &Histogram,
) -> Result<(), fmt::Error> {
    let mut buckets: Vec<(f64, u64)> = h
        .buckets()
        .filter(|&(bound, _)| bound != u64::MAX)
        .map(|(bound, n)| (bound as f64 / 1e9, n))
        .collect();
    let finite: u64 = buckets.iter().map(|&(_, n)| n).sum();
    buckets.push((f64::INFINITY, h.count() - finite));
    let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Histogram)?;
    metric.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
        h.sum() as f64 / 1e9,
        h.count(),
        &buckets,
        None,
    )
}
