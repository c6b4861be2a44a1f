//! What the tour measures itself, beside the scheduler's own figures
//! (`Stats::step_latency`, `schedule_latency` and `kinds`): a request's
//! round trip (a call to a router, until the caller's step sees the reply)
//! and an io command's latency (its yield, until the step that sees its
//! completion). Both go into the crate's `Histogram`, which has one writer
//! at a time; the callers run on every worker, so each histogram sits
//! behind a lock, held for one `record`.

use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::Duration;

use stepsched::sched::Histogram;

pub static REQUEST_RTT: LazyLock<Mutex<Histogram>> = LazyLock::new(Mutex::default);
pub static IO_LATENCY: LazyLock<Mutex<Histogram>> = LazyLock::new(Mutex::default);

/// Records `d`, in nanoseconds.
pub fn record(figure: &Mutex<Histogram>, d: Duration) {
    let ns = d.as_nanos().try_into().unwrap_or(u64::MAX);
    // A step that panicked elsewhere cannot have left a `record` half done.
    let mut histogram = figure.lock().unwrap_or_else(PoisonError::into_inner);
    histogram.record(ns);
}

/// A copy of what `figure` holds.
pub fn snapshot(figure: &Mutex<Histogram>) -> Histogram {
    figure
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// One line of the latency table: p50, p90, p99 and max of `h`.
pub fn row(name: &str, h: &Histogram, what: &str) -> String {
    let q = |q| h.quantile(q).map_or("-".to_owned(), fmt_ns);
    format!(
        "  {name:<12} {:>9} {:>9} {:>9} {:>9}  {what} ({} samples)",
        q(0.5),
        q(0.9),
        q(0.99),
        q(1.0),
        h.count()
    )
}

fn fmt_ns(ns: u64) -> String {
    match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=9_999 => format!("{:.2} µs", ns as f64 / 1e3),
        10_000..=999_999 => format!("{:.1} µs", ns as f64 / 1e3),
        _ => format!("{:.1} ms", ns as f64 / 1e6),
    }
}

pub fn rate(n: u64, d: Duration) -> String {
    let per_s = n as f64 / d.as_secs_f64();
    if per_s >= 1e6 {
        format!("{:.2} M/s", per_s / 1e6)
    } else {
        format!("{:.0} k/s", per_s / 1e3)
    }
}
