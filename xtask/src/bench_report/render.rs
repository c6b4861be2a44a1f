//! From figures to docs/benchmarks.md (pure: no clock, no files, no
//! processes): the medians, the table and the text around it.

use super::parse::Sample;
use super::scenarios::{Scenario, Source, System, Unit};

/// A peer's cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// The median of its samples.
    Value(f64),
    /// It has a program for the scenario, but no figure came back.
    NotMeasured,
    /// It has no program for the scenario.
    NoProgram,
}

/// One row of the table.
#[derive(Debug)]
pub struct Row {
    pub scenario: &'static Scenario,
    /// stepsched's median, if it was measured.
    pub ours: Option<f64>,
    /// tokio, Go, the BEAM ([`System::PEERS`]).
    pub peers: [Cell; 3],
}

/// The median of `system`'s samples of `key` (the lower middle one of an
/// even count, as the benches take theirs).
pub fn median(samples: &[Sample], key: &str, system: System) -> Option<f64> {
    let mut v: Vec<f64> = samples
        .iter()
        .filter(|s| s.scenario == key && s.system == system)
        .map(|s| s.value)
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[(v.len() - 1) / 2])
}

/// The table's rows for `selected`, from every round's samples.
pub fn rows(selected: &[&'static Scenario], samples: &[Sample]) -> Vec<Row> {
    selected
        .iter()
        .map(|&scenario| Row {
            scenario,
            ours: median(samples, scenario.key, System::Stepsched),
            peers: System::PEERS.map(|peer| {
                if !scenario.peers.contains(&peer) {
                    Cell::NoProgram
                } else {
                    match median(samples, scenario.key, peer) {
                        Some(v) => Cell::Value(v),
                        None => Cell::NotMeasured,
                    }
                }
            }),
        })
        .collect()
}

/// A figure in its unit, with about four significant digits.
pub fn figure(value: f64, unit: Unit) -> String {
    match unit {
        Unit::Bytes => format!("{value:.0} B"),
        Unit::Nanos if value >= 1e6 => format!("{:.2} ms", value / 1e6),
        Unit::Nanos if value >= 1e3 => format!("{:.2} µs", value / 1e3),
        Unit::Nanos => format!("{value:.1} ns"),
    }
}

/// The table: one row per scenario; a peer's cell holds its median and, in
/// parentheses, peer / stepsched (above 1: stepsched faster or smaller).
pub fn table(rows: &[Row]) -> String {
    let names: Vec<&str> = System::PEERS.iter().map(|p| p.name()).collect();
    let mut t = format!(
        "| scenario | one op | {} | {} |\n|---|---|---:|---:|---:|---:|\n",
        System::Stepsched.name(),
        names.join(" | ")
    );
    for row in rows {
        let unit = row.scenario.unit;
        let ours = match row.ours {
            Some(v) => figure(v, unit),
            None => "not measured".into(),
        };
        let cells: Vec<String> = row
            .peers
            .iter()
            .map(|cell| match (cell, row.ours) {
                (Cell::Value(v), Some(o)) if o > 0.0 => {
                    format!("{} ({:.2}x)", figure(*v, unit), v / o)
                }
                (Cell::Value(v), _) => figure(*v, unit),
                (Cell::NotMeasured, _) => "not measured".into(),
                (Cell::NoProgram, _) => "-".into(),
            })
            .collect();
        t.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            row.scenario.key,
            row.scenario.op,
            ours,
            cells.join(" | ")
        ));
    }
    t
}

/// The README's copy of the table is kept between these two lines, which
/// the command rewrites (see [`splice`]).
pub const README_BEGIN: &str =
    "<!-- bench-report: begin. Written by `cargo xtask bench-report` from docs/benchmarks.md; do not edit. -->";
/// See [`README_BEGIN`].
pub const README_END: &str = "<!-- bench-report: end -->";

/// Rows the README leaves out: `wake_up_p99` is one percentile of one
/// measurement, which a single stall of the machine moves by orders of
/// magnitude; docs/benchmarks.md keeps it.
const NOT_IN_README: &[&str] = &["wake_up_p99"];

/// The README's table: each peer's ratio only, then where it ran.
pub fn ratio_table(rows: &[Row], ran_on: &str) -> String {
    let names: Vec<String> = System::PEERS
        .iter()
        .map(|p| format!("{} / stepsched", p.name()))
        .collect();
    let mut t = format!(
        "| scenario | one op | {} |\n|---|---|---:|---:|---:|\n",
        names.join(" | ")
    );
    for row in rows
        .iter()
        .filter(|r| !NOT_IN_README.contains(&r.scenario.key))
    {
        let cells: Vec<String> = row
            .peers
            .iter()
            .map(|cell| match (cell, row.ours) {
                (Cell::Value(v), Some(o)) if o > 0.0 => format!("{:.2}x", v / o),
                (Cell::Value(_), _) | (Cell::NotMeasured, _) => "not measured".into(),
                (Cell::NoProgram, _) => "-".into(),
            })
            .collect();
        t.push_str(&format!(
            "| `{}` | {} | {} |\n",
            row.scenario.key,
            row.scenario.op,
            cells.join(" | ")
        ));
    }
    t.push_str(&format!("\n{ran_on}\n"));
    t
}

/// `readme` with what lies between [`README_BEGIN`] and [`README_END`]
/// replaced by `block`; `None` if the markers are not there, in order.
pub fn splice(readme: &str, block: &str) -> Option<String> {
    let begin = readme.find(README_BEGIN)? + README_BEGIN.len();
    let end = begin + readme[begin..].find(README_END)?;
    Some(format!("{}\n{}{}", &readme[..begin], block, &readme[end..]))
}

/// Where and how the figures were taken: the document's other parts.
pub struct Context {
    /// The command that reproduces the run.
    pub command: String,
    /// `YYYY-MM-DD HH:MM UTC`.
    pub date: String,
    /// How long the whole command took, written out (`5 min 12 s`).
    pub took: String,
    pub rounds: usize,
    pub scale: f64,
    /// `GLIBC_TUNABLES` as every program ran with it.
    pub tunables: String,
    /// `name: value` lines about the machine and the toolchains.
    pub machine: Vec<(String, String)>,
    /// Why a peer, or a program, gave no figures.
    pub not_measured: Vec<String>,
    /// One sentence: when and on what the figures were taken (for the
    /// README).
    pub ran_on: String,
}

/// `n`, or `n x scale` when the sizes were scaled.
fn scaled(n: &str, scale: f64) -> String {
    if scale == 1.0 {
        n.to_string()
    } else {
        format!("{n} x {scale}")
    }
}

/// The whole of docs/benchmarks.md.
pub fn document(ctx: &Context, rows: &[Row]) -> String {
    let mut d = String::new();
    d.push_str(&format!(
        "<!-- Generated by `{}`. Do not edit by hand: run the command again. -->\n\n",
        ctx.command
    ));
    d.push_str("# stepsched beside tokio, Go and the BEAM\n\n");
    d.push_str(&format!(
        "Generated by `{}` on {} (the run took {}). Every figure is a median \
         (see [How the figures are taken](#how-the-figures-are-taken)); lower is \
         better. In a peer's cell, in parentheses: peer / stepsched, so above 1 \
         means stepsched is faster (or smaller). `-`: the peer has no program for \
         that scenario.\n\n",
        ctx.command, ctx.date, ctx.took
    ));
    d.push_str(&table(rows));
    d.push_str("\n## The machine\n\n");
    for (name, value) in &ctx.machine {
        d.push_str(&format!("- {name}: {value}\n"));
    }
    d.push_str(
        "\nEach system runs with two worker threads (tokio `worker_threads(2)`, \
         `GOMAXPROCS=2`, `erl +S 2`). On a machine shared with other work, \
         figures move by 10% or more from run to run, and those that pass data \
         between cores (`fan_out_fan_in` most) with where the host puts the two \
         CPUs: compare systems within one report, not across reports.\n",
    );
    d.push_str("\n## How the figures are taken\n\n");
    d.push_str(&format!(
        "- Every program runs with the same allocator settings: \
         `GLIBC_TUNABLES={}`.\n",
        ctx.tunables
    ));
    let ran = |source| rows.iter().any(|r| r.scenario.source == source);
    let timed = match ctx.rounds {
        1 => "1 timed round".to_string(),
        n => format!("{n} timed rounds"),
    };
    if ran(Source::Scheduler) {
        d.push_str(&format!(
            "- The scheduler scenarios (`benches/peers/src/bin/scheduler.rs`, \
             `SCALE={}`, `ROUNDS={}`): each scenario builds each system once, runs \
             one untimed warm-up round, then {timed}, the systems \
             alternating round by round so that a drift of the machine hits both; \
             the figure is the median round divided by its operations. Every \
             scenario checks its result, so a broken run cannot look fast.\n",
            ctx.scale, ctx.rounds
        ));
        d.push_str(
            "- `idle_process` and `wake_up_*` come from the same program's resource \
         figures, measured once: the RSS growth over 100,000 idle processes \
         (tokio: tasks each waiting on its own channel) in a fresh child \
         process, and the percentiles of the latency from an outside send to \
         the start of the receiving step with both workers parked (1,000 \
         samples at scale 1, 100 at least).\n",
        );
    }
    if ran(Source::Links) {
        d.push_str(&format!(
            "- The monitor and link scenarios (`benches/peers/src/bin/links.rs`, \
         `benches/peers/go/links.go`, `benches/peers/erlang/links.erl`): {}, \
         each running the Rust program (stepsched, then tokio), then \
         Go, then the BEAM; a figure is the median over the rounds. Within a \
         round, `apart` is the mean over {} pairs (the BEAM: 1,000,000 \
         `monitor` + `demonitor` pairs); `down_*` are percentiles of {} \
         samples (Go and the BEAM: 20,000), each window holding one clock read \
         on every side; `chain` is the median of 20 chains.\n",
            match ctx.rounds {
                1 => "1 round".to_string(),
                n => format!("{n} rounds"),
            },
            scaled("1,000,000", ctx.scale),
            scaled("20,000", ctx.scale)
        ));
        d.push_str(
            "- What each scenario does on each system is in the doc comment of its \
         program. tokio and Go have no monitors or links: in `down` a \
         `JoinHandle` awaited (tokio) or a done channel (Go) stands in, and in \
         `chain` each task or goroutine waits for the previous one's end by \
         hand.\n",
        );
    }
    if !ctx.not_measured.is_empty() {
        d.push_str("\nNot measured in this run:\n\n");
        for why in &ctx.not_measured {
            d.push_str(&format!("- {why}\n"));
        }
    }
    d
}
