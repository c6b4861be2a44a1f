//! What the report measures: each row's scenario, the program that runs it
//! and the peers that have a program for it.

/// A system measured side by side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum System {
    /// This crate.
    Stepsched,
    /// tokio's multi-thread runtime, 2 workers.
    Tokio,
    /// Go, `GOMAXPROCS=2`.
    Go,
    /// Erlang/OTP, two schedulers (`+S 2`).
    Beam,
}

impl System {
    /// The peers, in the table's column order.
    pub const PEERS: [System; 3] = [System::Tokio, System::Go, System::Beam];

    /// The column heading.
    pub fn name(self) -> &'static str {
        match self {
            System::Stepsched => "stepsched",
            System::Tokio => "tokio",
            System::Go => "Go",
            System::Beam => "BEAM",
        }
    }
}

/// Which program measures a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `benches/peers/src/bin/scheduler.rs` (stepsched and tokio).
    Scheduler,
    /// `benches/peers/src/bin/links.rs` (stepsched and tokio), with
    /// `benches/peers/go/links.go` and `benches/peers/erlang/links.erl`.
    Links,
}

/// What a figure counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds per operation (lower is better).
    Nanos,
    /// Bytes (lower is better).
    Bytes,
}

/// One row of the report.
#[derive(Debug)]
pub struct Scenario {
    /// The name `--scenarios` takes and the table shows.
    pub key: &'static str,
    /// One operation, as the figure counts it.
    pub op: &'static str,
    pub source: Source,
    pub unit: Unit,
    /// The peers with a program for it (the rest show "no program").
    pub peers: &'static [System],
}

const TOKIO: &[System] = &[System::Tokio];
const ALL: &[System] = &[System::Tokio, System::Go, System::Beam];

/// Every row, in the table's order.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        key: "spawn_many",
        op: "a task submitted from outside",
        source: Source::Scheduler,
        unit: Unit::Nanos,
        peers: TOKIO,
    },
    Scenario {
        key: "chained_spawn",
        op: "a spawn from a step, in a chain",
        source: Source::Scheduler,
        unit: Unit::Nanos,
        peers: TOKIO,
    },
    Scenario {
        key: "yield_many",
        op: "a yield (1,000 tasks yielding)",
        source: Source::Scheduler,
        unit: Unit::Nanos,
        peers: TOKIO,
    },
    Scenario {
        key: "ping_pong",
        op: "a message round trip between two processes",
        source: Source::Scheduler,
        unit: Unit::Nanos,
        peers: TOKIO,
    },
    Scenario {
        key: "fan_out_fan_in",
        op: "a round: 10,000 requests out, their replies in",
        source: Source::Scheduler,
        unit: Unit::Nanos,
        peers: TOKIO,
    },
    Scenario {
        key: "idle_process",
        op: "memory of an idle process (bytes)",
        source: Source::Scheduler,
        unit: Unit::Bytes,
        peers: TOKIO,
    },
    Scenario {
        key: "wake_up_p50",
        op: "wake-up of a parked scheduler by a message, p50",
        source: Source::Scheduler,
        unit: Unit::Nanos,
        peers: TOKIO,
    },
    Scenario {
        key: "wake_up_p99",
        op: "the same, p99",
        source: Source::Scheduler,
        unit: Unit::Nanos,
        peers: TOKIO,
    },
    Scenario {
        key: "apart",
        op: "a monitor + demonitor pair, each request sent",
        source: Source::Links,
        unit: Unit::Nanos,
        peers: &[System::Beam],
    },
    Scenario {
        key: "down_p50",
        op: "a process's end to its watcher's step, p50",
        source: Source::Links,
        unit: Unit::Nanos,
        peers: ALL,
    },
    Scenario {
        key: "down_p99",
        op: "the same, p99",
        source: Source::Links,
        unit: Unit::Nanos,
        peers: ALL,
    },
    Scenario {
        key: "chain",
        op: "a 1,000-link chain torn down, per process",
        source: Source::Links,
        unit: Unit::Nanos,
        peers: ALL,
    },
];

/// The scheduler bin's five timed scenarios (its `SCENARIOS` names).
pub const SCHEDULER_ROWS: &[&str] = &[
    "spawn_many",
    "chained_spawn",
    "yield_many",
    "ping_pong",
    "fan_out_fan_in",
];

/// Names `--scenarios` takes beside the keys, each for several rows.
const GROUPS: &[(&str, &[&str])] = &[
    ("scheduler", SCHEDULER_ROWS),
    ("resources", &["idle_process", "wake_up_p50", "wake_up_p99"]),
    ("wake_up", &["wake_up_p50", "wake_up_p99"]),
    ("links", &["apart", "down_p50", "down_p99", "chain"]),
    ("down", &["down_p50", "down_p99"]),
];

/// The rows a `--scenarios a,b` list names, in the table's order; an
/// unknown name is an error that lists the known ones.
pub fn select(list: &str) -> Result<Vec<&'static Scenario>, String> {
    let mut keys: Vec<&str> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if let Some((_, members)) = GROUPS.iter().find(|(g, _)| *g == name) {
            keys.extend(members.iter().copied());
        } else if SCENARIOS.iter().any(|s| s.key == name) {
            keys.push(name);
        } else {
            let known: Vec<&str> = SCENARIOS
                .iter()
                .map(|s| s.key)
                .chain(GROUPS.iter().map(|(g, _)| *g))
                .collect();
            return Err(format!(
                "--scenarios: unknown scenario `{name}` (known: {})",
                known.join(", ")
            ));
        }
    }
    if keys.is_empty() {
        return Err("--scenarios: no scenario named".into());
    }
    Ok(SCENARIOS.iter().filter(|s| keys.contains(&s.key)).collect())
}
