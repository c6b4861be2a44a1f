//! The pure part of the report on fixed input: the benches' output as they
//! print it, read into samples, and the rows and table made from them.

use super::parse::{self, Sample};
use super::render::{self, Cell};
use super::scenarios::{self, System};
use super::{command_line, options, Options};

const SCHEDULER: &str = "\
GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296
STEPSCHED_TRACE=(unset: tracing off)
cross-core round trip: 120 ns (swings ~100 to ~500+ on a shared VM)
stepsched vs tokio multi-thread, 2 workers each; SCALE=0.2, ROUNDS=3 (median of rounds)

scenario         size                   per                tokio    stepsched    ratio
spawn_many       200000 tasks           task            933.7 ns     832.0 ns     1.12
chained_spawn    depth 20000            spawn           171.3 ns      52.0 ns     3.29
yield_many       1000 x 200             yield           189.4 ns      61.9 ns     3.06
ping_pong        200000 round trips     round trip      731.7 ns     346.8 ns     2.11
fan_out_fan_in   10000 x 20 rounds      round          15.970 ms     8.184 ms     1.95

stepsched resources (tokio beside it where the measure applies):
  bytes per idle process          353 B   (RSS growth over 100000 idle processes, each a fresh child process; tokio task waiting on its own unbounded channel: 1279 B)
  allocations per message      0.0000     (ping-pong of 100000 messages after warm-up; tokio unbounded mpsc incl. its 2 tasks and channels: 0.0001)
  wake-up latency p50 / p99  19.1 µs / 71.5 µs   (send from outside to the start of the receiving step, both workers parked, 200 samples; tokio: 19.2 µs / 53.2 µs)
";

const LINKS: &str = "\
cross-core round trip: 3572 ns (swings ~100 to ~500+ on a shared VM)
  pairs interleaved on two targets (each request sent), ns: stepsched 341.8
down latency p50/p99 (mean p10-p90), ns: stepsched 70/141 (74.8)  tokio JoinHandle 120/250 (121.9)  (BEAM anchor 701/902)
  each window holds one clock read: two back-to-back reads differ by 25.5 ns
  net of it (mean p10-p90 - the gap), ns: stepsched 49.3  tokio 96.4
chain of 1000 torn down from its head, median ns per process: stepsched 103.6  tokio 244.8  (BEAM anchor 1,125)
";

const GO: &str = "\
down latency p50/p99 (mean p10-p90), ns: Go (done channel) 120/220 (125.6)
  each window holds one clock read: two back-to-back reads differ by 26.2 ns
chain of 1000 torn down from its head, median ns per goroutine: Go 762.8
";

const BEAM: &str = "\
pair (monitor+demonitor), ns: BEAM 523.6
down latency p50/p99 (mean p10-p90), ns: BEAM 882/4005 (925.7)
  each window holds one clock read: two back-to-back reads differ by 85.0 ns
chain of 1000 torn down from its head, median ns per process: BEAM 3622.1
";

fn value(samples: &[Sample], key: &str, system: System) -> Option<f64> {
    let found: Vec<f64> = samples
        .iter()
        .filter(|s| s.scenario == key && s.system == system)
        // To a thousandth: `8.184 ms` is 8183999.999999999 ns in f64.
        .map(|s| (s.value * 1000.0).round() / 1000.0)
        .collect();
    assert!(found.len() <= 1, "{key} {system:?} read twice: {found:?}");
    found.first().copied()
}

#[test]
fn the_scheduler_bench_is_read_from_both_ends_of_each_row() {
    let s = parse::scheduler(SCHEDULER);
    assert_eq!(value(&s, "spawn_many", System::Stepsched), Some(832.0));
    assert_eq!(value(&s, "spawn_many", System::Tokio), Some(933.7));
    assert_eq!(value(&s, "ping_pong", System::Stepsched), Some(346.8));
    assert_eq!(value(&s, "ping_pong", System::Tokio), Some(731.7));
    assert_eq!(
        value(&s, "fan_out_fan_in", System::Stepsched),
        Some(8_184_000.0)
    );
    assert_eq!(
        value(&s, "fan_out_fan_in", System::Tokio),
        Some(15_970_000.0)
    );
    assert_eq!(value(&s, "idle_process", System::Stepsched), Some(353.0));
    assert_eq!(value(&s, "idle_process", System::Tokio), Some(1279.0));
    assert_eq!(value(&s, "wake_up_p50", System::Stepsched), Some(19_100.0));
    assert_eq!(value(&s, "wake_up_p99", System::Stepsched), Some(71_500.0));
    assert_eq!(value(&s, "wake_up_p50", System::Tokio), Some(19_200.0));
    assert_eq!(value(&s, "wake_up_p99", System::Tokio), Some(53_200.0));
    // Five scenarios and three resource rows, two systems each.
    assert_eq!(s.len(), 16, "{s:#?}");
}

#[test]
fn a_stepsched_only_run_gives_no_tokio_samples() {
    let s = parse::scheduler("yield_many  1000 x 1000  yield  0.0 ns  14.2 ns  0.00\n");
    assert_eq!(s.len(), 1);
    assert_eq!(value(&s, "yield_many", System::Stepsched), Some(14.2));
}

#[test]
fn the_links_programs_are_read_for_each_system() {
    let mut s = parse::links(LINKS);
    s.extend(parse::go(GO));
    s.extend(parse::beam(BEAM));
    assert_eq!(value(&s, "apart", System::Stepsched), Some(341.8));
    assert_eq!(value(&s, "apart", System::Beam), Some(523.6));
    assert_eq!(value(&s, "down_p50", System::Stepsched), Some(70.0));
    assert_eq!(value(&s, "down_p99", System::Stepsched), Some(141.0));
    assert_eq!(value(&s, "down_p50", System::Tokio), Some(120.0));
    assert_eq!(value(&s, "down_p99", System::Tokio), Some(250.0));
    assert_eq!(value(&s, "down_p50", System::Go), Some(120.0));
    assert_eq!(value(&s, "down_p99", System::Go), Some(220.0));
    assert_eq!(value(&s, "down_p50", System::Beam), Some(882.0));
    assert_eq!(value(&s, "down_p99", System::Beam), Some(4005.0));
    assert_eq!(value(&s, "chain", System::Stepsched), Some(103.6));
    assert_eq!(value(&s, "chain", System::Tokio), Some(244.8));
    assert_eq!(value(&s, "chain", System::Go), Some(762.8));
    assert_eq!(value(&s, "chain", System::Beam), Some(3622.1));
    assert_eq!(s.len(), 14, "{s:#?}");
}

#[test]
fn a_figure_is_the_median_over_rounds() {
    let mut s = parse::links(LINKS);
    s.extend(parse::links(&LINKS.replace("103.6", "99.0")));
    s.extend(parse::links(&LINKS.replace("103.6", "150.0")));
    assert_eq!(render::median(&s, "chain", System::Stepsched), Some(103.6));
    // An even count takes the lower middle one.
    s.extend(parse::links(&LINKS.replace("103.6", "1.0")));
    assert_eq!(render::median(&s, "chain", System::Stepsched), Some(99.0));
    assert_eq!(render::median(&s, "chain", System::Go), None);
}

#[test]
fn the_table_has_a_row_per_scenario_with_each_peers_ratio() {
    let selected = scenarios::select("ping_pong,idle_process,chain,apart").unwrap();
    let mut s = parse::scheduler(SCHEDULER);
    s.extend(parse::links(LINKS));
    s.extend(parse::beam(BEAM));
    // Go did not run: its cells read "not measured" where it has a program.
    let rows = render::rows(&selected, &s);
    assert_eq!(rows[3].peers[1], Cell::NotMeasured);
    assert_eq!(rows[0].peers[1], Cell::NoProgram);
    let table = render::table(&rows);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines,
        [
            "| scenario | one op | stepsched | tokio | Go | BEAM |",
            "|---|---|---:|---:|---:|---:|",
            "| `ping_pong` | a message round trip between two processes | 346.8 ns | 731.7 ns (2.11x) | - | - |",
            "| `idle_process` | memory of an idle process (bytes) | 353 B | 1279 B (3.62x) | - | - |",
            "| `apart` | a monitor + demonitor pair, each request sent | 341.8 ns | - | - | 523.6 ns (1.53x) |",
            "| `chain` | a 1,000-link chain torn down, per process | 103.6 ns | 244.8 ns (2.36x) | not measured | 3.62 µs (34.96x) |",
        ]
    );
}

#[test]
fn figures_keep_their_unit() {
    use scenarios::Unit;
    assert_eq!(render::figure(14.25, Unit::Nanos), "14.2 ns");
    assert_eq!(render::figure(1352.0, Unit::Nanos), "1.35 µs");
    assert_eq!(render::figure(19_100.0, Unit::Nanos), "19.10 µs");
    assert_eq!(render::figure(8_184_000.0, Unit::Nanos), "8.18 ms");
    assert_eq!(render::figure(15_970_000.0, Unit::Nanos), "15.97 ms");
    assert_eq!(render::figure(352.6, Unit::Bytes), "353 B");
}

#[test]
fn the_document_says_it_is_generated_and_by_what() {
    let ctx = render::Context {
        command: "cargo xtask bench-report --rounds 3".into(),
        date: "2030-01-01 00:00 UTC".into(),
        took: "4 min 2 s".into(),
        rounds: 3,
        scale: 1.0,
        tunables: super::TUNABLES.into(),
        machine: vec![("CPUs (`nproc`)".into(), "2".into())],
        not_measured: vec!["Go: `go` not found".into()],
        ran_on: "Measured on 2 CPUs.".into(),
    };
    let selected = scenarios::select("down").unwrap();
    let doc = render::document(&ctx, &render::rows(&selected, &parse::links(LINKS)));
    assert!(doc.starts_with(
        "<!-- Generated by `cargo xtask bench-report --rounds 3`. Do not edit by hand"
    ));
    assert!(doc.contains("on 2030-01-01 00:00 UTC (the run took 4 min 2 s)"));
    assert!(doc.contains("| `down_p50` | a process's end to its watcher's step, p50 | 70.0 ns | 120.0 ns (1.71x) | not measured | not measured |"));
    assert!(doc.contains("- CPUs (`nproc`): 2\n"));
    assert!(doc.contains(super::TUNABLES));
    assert!(doc.contains("- Go: `go` not found\n"));
    // Only the programs that ran are described.
    assert!(doc.contains("`benches/peers/erlang/links.erl`): 3 rounds, each running"));
    assert!(!doc.contains("The scheduler scenarios"));
}

#[test]
fn options_and_the_command_that_reproduces_them() {
    let args = |s: &str| options(s.split_whitespace().map(String::from));
    let defaults = args("").unwrap();
    assert_eq!(
        defaults,
        Options {
            rounds: 5,
            scale: 1.0,
            scenarios: None,
            out: None
        }
    );
    assert_eq!(command_line(&defaults), "cargo xtask bench-report");
    let o = args("--rounds 3 --scale 0.5 --scenarios down,chain --out /tmp/b.md").unwrap();
    assert_eq!(
        command_line(&o),
        "cargo xtask bench-report --rounds 3 --scale 0.5 --scenarios down,chain --out /tmp/b.md"
    );
    assert!(args("--rounds 0").is_err());
    assert!(args("--scale -1").is_err());
    assert!(args("--frobnicate").is_err());
    assert!(scenarios::select("down,nonesuch").is_err());
    let keys: Vec<&str> = scenarios::select("chain,scheduler")
        .unwrap()
        .iter()
        .map(|s| s.key)
        .collect();
    assert_eq!(
        keys,
        [
            "spawn_many",
            "chained_spawn",
            "yield_many",
            "ping_pong",
            "fan_out_fan_in",
            "chain"
        ]
    );
}

#[test]
fn the_readme_gets_the_ratios_between_its_markers_and_nothing_else_changes() {
    let selected = scenarios::select("ping_pong,wake_up,chain").unwrap();
    let mut s = parse::scheduler(SCHEDULER);
    s.extend(parse::links(LINKS));
    let block = render::ratio_table(&render::rows(&selected, &s), "Measured on 2030-01-01.");
    assert_eq!(
        block.lines().collect::<Vec<_>>(),
        [
            "| scenario | one op | tokio / stepsched | Go / stepsched | BEAM / stepsched |",
            "|---|---|---:|---:|---:|",
            "| `ping_pong` | a message round trip between two processes | 2.11x | - | - |",
            "| `wake_up_p50` | wake-up of a parked scheduler by a message, p50 | 1.01x | - | - |",
            "| `chain` | a 1,000-link chain torn down, per process | 2.36x | not measured | not measured |",
            "",
            "Measured on 2030-01-01.",
        ]
    );
    let readme = format!(
        "# Title\n\nBefore.\n\n{}\nold table\n{}\n\nAfter.\n",
        render::README_BEGIN,
        render::README_END
    );
    let new = render::splice(&readme, &block).unwrap();
    assert_eq!(
        new,
        format!(
            "# Title\n\nBefore.\n\n{}\n{block}{}\n\nAfter.\n",
            render::README_BEGIN,
            render::README_END
        )
    );
    // Spliced again, the same: the block replaces itself.
    assert_eq!(render::splice(&new, &block).unwrap(), new);
    assert_eq!(render::splice("no markers", &block), None);
}

#[test]
fn the_readme_line_names_the_machine_and_each_version_without_a_date() {
    let machine: Vec<(String, String)> = [
        ("CPUs (`nproc`)", "2"),
        ("CPU model (/proc/cpuinfo)", "AMD EPYC"),
        ("OS", "Debian GNU/Linux 12 (bookworm), Linux 6.1"),
        ("rustc", "rustc 1.95.0 (59807616e 2026-04-14)"),
        ("tokio", "1.54.1"),
        ("Go", "go version go1.19.8 linux/amd64"),
        ("Erlang/OTP", "25"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(
        super::ran_on(&machine),
        "Measured on 2 CPUs (AMD EPYC), Debian GNU/Linux 12 (bookworm), Linux 6.1; \
         rustc 1.95.0, tokio 1.54.1, Go 1.19.8, Erlang/OTP 25."
    );
}
