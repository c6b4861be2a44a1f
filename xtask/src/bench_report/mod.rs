//! `cargo xtask bench-report`: runs the peer scenarios (`benches/peers/`)
//! and writes docs/benchmarks.md, one table of the current figures with the
//! machine they ran on and how they were taken.
//!
//! The pure parts are apart, each tested on fixed input: [`parse`] reads a
//! program's output into samples, [`render`] makes the medians, the table
//! and the document. This file runs the programs and gathers the facts
//! about the machine. A peer whose toolchain is missing (Go, Erlang) or
//! whose program fails is reported as "not measured", never fatal; a
//! failure of the Rust programs, which measure stepsched itself, is.

mod parse;
mod render;
mod scenarios;
#[cfg(test)]
mod tests;

use parse::Sample;
use scenarios::{Scenario, Source};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub const HELP: &str = "\
cargo xtask bench-report: run the peer scenarios and write docs/benchmarks.md.

Builds benches/peers (release), runs the scheduler scenarios (stepsched and
tokio, benches/peers/src/bin/scheduler.rs) once with ROUNDS timed rounds
each, and the monitor and link scenarios (benches/peers/src/bin/links.rs,
then benches/peers/go/links.go with `go`, then benches/peers/erlang/links.erl
with `erlc`/`erl`) ROUNDS times, taking each figure's median. Every program
runs with the same GLIBC_TUNABLES. A peer that cannot run (`go` or `erl`
missing: apt-get install golang-go erlang-base) is reported as not measured.
With the defaults it takes about 2 minutes on 2 cores, the build apart.

USAGE:
  cargo xtask bench-report [--rounds N] [--scale F] [--scenarios A,B] [--out PATH]

OPTIONS:
  --rounds N        timed rounds per scenario and system (default 5)
  --scale F         multiplies the Rust benches' sizes (SCALE of the scheduler
                    bin; the links bin's pairs and samples), default 1
  --scenarios A,B   only these rows: spawn_many, chained_spawn, yield_many,
                    ping_pong, fan_out_fan_in, idle_process, wake_up_p50,
                    wake_up_p99, apart, down_p50, down_p99, chain; or the
                    groups scheduler, resources, wake_up, links, down
  --out PATH        where to write (default docs/benchmarks.md)
";

/// The allocator settings every program runs with: no trimming and no
/// mmap'd chunks below 32 MiB, so that no system pays for glibc giving
/// memory back in the middle of a timed round.
pub const TUNABLES: &str =
    "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296";

/// `--option value` pairs, parsed.
#[derive(Debug, PartialEq)]
struct Options {
    rounds: usize,
    scale: f64,
    scenarios: Option<String>,
    out: Option<PathBuf>,
}

fn options(mut it: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut o = Options {
        rounds: 5,
        scale: 1.0,
        scenarios: None,
        out: None,
    };
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "-h" | "--help" => return Err(String::new()),
            "--rounds" => {
                o.rounds = value("--rounds")?
                    .parse()
                    .map_err(|e| format!("--rounds: {e}"))?;
                if o.rounds == 0 {
                    return Err("--rounds: at least 1".into());
                }
            }
            "--scale" => {
                o.scale = value("--scale")?
                    .parse()
                    .map_err(|e| format!("--scale: {e}"))?;
                if !(o.scale > 0.0 && o.scale.is_finite()) {
                    return Err("--scale: a positive number".into());
                }
            }
            "--scenarios" => o.scenarios = Some(value("--scenarios")?),
            "--out" => o.out = Some(value("--out")?.into()),
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    Ok(o)
}

/// The command line that reproduces a run with `o`.
fn command_line(o: &Options) -> String {
    let mut c = String::from("cargo xtask bench-report");
    if o.rounds != 5 {
        c.push_str(&format!(" --rounds {}", o.rounds));
    }
    if o.scale != 1.0 {
        c.push_str(&format!(" --scale {}", o.scale));
    }
    if let Some(s) = &o.scenarios {
        c.push_str(&format!(" --scenarios {s}"));
    }
    if let Some(out) = &o.out {
        c.push_str(&format!(" --out {}", out.display()));
    }
    c
}

/// Runs the command: `args` are the words after `bench-report`. Exit
/// status 0, 1 on a failure of the build or of a Rust program, 2 on a
/// usage error.
pub fn main(root: &Path, args: impl Iterator<Item = String>) -> u8 {
    let o = match options(args) {
        Ok(o) => o,
        Err(e) if e.is_empty() => {
            print!("{HELP}");
            return 0;
        }
        Err(e) => {
            eprintln!("xtask bench-report: {e}\n\n{HELP}");
            return 2;
        }
    };
    let selected = match scenarios::select(
        o.scenarios
            .as_deref()
            .unwrap_or("scheduler,resources,links"),
    ) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("xtask bench-report: {e}");
            return 2;
        }
    };
    match run(root, &o, &selected) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("xtask bench-report: {e}");
            1
        }
    }
}

fn run(root: &Path, o: &Options, selected: &[&'static Scenario]) -> Result<(), String> {
    let started = Instant::now();
    let wants = |source| selected.iter().any(|s| s.source == source);
    let wanted = |key: &str| selected.iter().any(|s| s.key == key);
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let scratch = target.join("bench-report");
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;

    let mut build = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    build
        .current_dir(root)
        .args(["build", "--release", "-p", "stepsched-peers"]);
    if wants(Source::Scheduler) {
        build.args(["--bin", "scheduler"]);
    }
    if wants(Source::Links) {
        build.args(["--bin", "links"]);
    }
    eprintln!("bench-report: building the peer benches");
    let status = build.status().map_err(|e| format!("cargo build: {e}"))?;
    if !status.success() {
        return Err(format!("building benches/peers failed ({status})"));
    }
    let bin = |name: &str| target.join("release").join(name);

    let mut samples: Vec<Sample> = Vec::new();
    let mut not_measured: Vec<String> = Vec::new();
    let mut round_trip = None;
    if wants(Source::Scheduler) {
        let rows: Vec<&str> = scenarios::SCHEDULER_ROWS
            .iter()
            .copied()
            .filter(|k| wanted(k))
            .collect();
        let list = if rows.is_empty() {
            "none".to_string()
        } else {
            rows.join(",")
        };
        eprintln!(
            "bench-report: the scheduler scenarios ({list}), {} rounds",
            o.rounds
        );
        let out = output(
            Command::new(bin("scheduler"))
                .env("SCALE", o.scale.to_string())
                .env("ROUNDS", o.rounds.to_string())
                .env("SCENARIOS", list),
            "the scheduler bench",
        )?;
        round_trip = out
            .lines()
            .find_map(|l| l.strip_prefix("cross-core round trip: "))
            .and_then(|r| r.split(" (").next())
            .map(str::to_string);
        samples.extend(parse::scheduler(&out));
    }
    if wants(Source::Links) {
        let peers = Peers::prepare(root, &scratch, &mut not_measured);
        let mut words = vec![
            ((1_000_000.0 * o.scale).round().max(1.0) as u64).to_string(),
            ((20_000.0 * o.scale).round().max(100.0) as u64).to_string(),
            "20".to_string(),
        ];
        for (key, word) in [
            ("apart", "apart"),
            ("down_p50", "down"),
            ("down_p99", "down"),
            ("chain", "chain"),
        ] {
            if wanted(key) && !words.iter().any(|w| w == word) {
                words.push(word.into());
            }
        }
        for round in 1..=o.rounds {
            eprintln!(
                "bench-report: monitors and links, round {round} of {}",
                o.rounds
            );
            let out = output(Command::new(bin("links")).args(&words), "the links bench")?;
            samples.extend(parse::links(&out));
            peers.round(&mut samples, &mut not_measured);
        }
    }

    let mut machine = machine(root);
    if let Some(rt) = round_trip {
        machine.push((
            "cross-core round trip (two threads handing one atomic back and forth)".into(),
            rt,
        ));
    }
    not_measured.dedup();
    let ran_on = ran_on(&machine);
    let ctx = render::Context {
        command: command_line(o),
        date: shell(&["date", "-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_else(|| "(no date)".into()),
        took: took(started.elapsed()),
        rounds: o.rounds,
        scale: o.scale,
        tunables: TUNABLES.into(),
        machine,
        not_measured,
        ran_on,
    };
    let rows = render::rows(selected, &samples);
    let doc = render::document(&ctx, &rows);
    let out = root.join(o.out.clone().unwrap_or_else(|| "docs/benchmarks.md".into()));
    std::fs::write(&out, &doc).map_err(|e| format!("{}: {e}", out.display()))?;
    print!("{}", render::table(&rows));
    // The README's table follows docs/benchmarks.md, and only a full run.
    if o.out.is_none() && o.scenarios.is_none() {
        let path = root.join("README.md");
        let readme = std::fs::read_to_string(&path).map_err(|e| format!("README.md: {e}"))?;
        match render::splice(&readme, &render::ratio_table(&rows, &ctx.ran_on)) {
            Some(new) => std::fs::write(&path, new).map_err(|e| format!("README.md: {e}"))?,
            None => eprintln!("bench-report: README.md has no table markers; left as it is"),
        }
    } else {
        eprintln!("bench-report: a partial run (--scenarios or --out): README.md left as it is");
    }
    eprintln!("bench-report: wrote {} ({})", out.display(), ctx.took);
    Ok(())
}

/// The Go and BEAM programs, built once, run once a round.
struct Peers {
    go: Option<PathBuf>,
    beam: Option<PathBuf>,
}

impl Peers {
    fn prepare(root: &Path, scratch: &Path, not_measured: &mut Vec<String>) -> Peers {
        let go_bin = scratch.join("links-go");
        let go = match output(
            Command::new("go")
                .arg("build")
                .arg("-o")
                .arg(&go_bin)
                .arg(root.join("benches/peers/go/links.go")),
            "go build",
        ) {
            Ok(_) => Some(go_bin),
            Err(e) => {
                not_measured.push(format!("Go: {e} (apt-get install golang-go)"));
                None
            }
        };
        let beam = match output(
            Command::new("erlc")
                .arg("-o")
                .arg(scratch)
                .arg(root.join("benches/peers/erlang/links.erl")),
            "erlc",
        ) {
            Ok(_) => Some(scratch.to_path_buf()),
            Err(e) => {
                not_measured.push(format!("BEAM: {e} (apt-get install erlang-base)"));
                None
            }
        };
        Peers { go, beam }
    }

    fn round(&self, samples: &mut Vec<Sample>, not_measured: &mut Vec<String>) {
        if let Some(go) = &self.go {
            match output(Command::new(go).env("GOMAXPROCS", "2"), "Go's links") {
                Ok(out) => samples.extend(parse::go(&out)),
                Err(e) => not_measured.push(format!("Go, in a round: {e}")),
            }
        }
        if let Some(dir) = &self.beam {
            let run = Command::new("erl")
                .args(["-noshell", "+S", "2", "-pa"])
                .arg(dir)
                .args(["-s", "links", "main", "-s", "init", "stop"])
                .output();
            match run {
                Ok(r) if r.status.success() => {
                    let out = String::from_utf8_lossy(&r.stdout);
                    eprint!("{out}");
                    samples.extend(parse::beam(&out));
                }
                Ok(r) => {
                    not_measured.push(format!("BEAM, in a round: erl exited with {}", r.status))
                }
                Err(e) => not_measured.push(format!("BEAM, in a round: erl: {e}")),
            }
        }
    }
}

/// Runs `cmd` with [`TUNABLES`] and returns its standard output (echoed to
/// stderr as progress), or why it failed.
fn output(cmd: &mut Command, what: &str) -> Result<String, String> {
    cmd.env("GLIBC_TUNABLES", TUNABLES);
    let r = cmd.output().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            format!("`{}` not found", cmd.get_program().to_string_lossy())
        }
        _ => format!("{what}: {e}"),
    })?;
    let out = String::from_utf8_lossy(&r.stdout).into_owned();
    eprint!("{out}");
    if !r.status.success() {
        let err = String::from_utf8_lossy(&r.stderr);
        let tail: Vec<&str> = err.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!(
            "{what} exited with {} ({})",
            r.status,
            tail.join(" / ")
        ));
    }
    Ok(out)
}

/// A command's first line of output, if it ran and succeeded.
fn shell(argv: &[&str]) -> Option<String> {
    let r = Command::new(argv[0]).args(&argv[1..]).output().ok()?;
    if !r.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&r.stdout);
    text.lines()
        .next()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
}

/// `5 min 12 s`.
fn took(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 {
        format!("{} min {} s", s / 60, s % 60)
    } else {
        format!("{s} s")
    }
}

/// `Measured on 2 CPUs (AMD EPYC), Debian ...; rustc 1.95.0, tokio ...`:
/// the README's line, without the date (docs/benchmarks.md has it) and
/// with each toolchain's version alone.
fn ran_on(machine: &[(String, String)]) -> String {
    let get = |prefix: &str| {
        machine
            .iter()
            .find(|(name, _)| name.starts_with(prefix))
            .map(|(_, value)| value.as_str())
            .unwrap_or("?")
    };
    let rustc: Vec<&str> = get("rustc").split_whitespace().take(2).collect();
    let go = get("Go")
        .split_whitespace()
        .find_map(|w| w.strip_prefix("go1"))
        .map_or_else(|| format!("Go {}", get("Go")), |v| format!("Go 1{v}"));
    format!(
        "Measured on {} CPUs ({}), {}; {}, tokio {}, {go}, Erlang/OTP {}.",
        get("CPUs"),
        get("CPU model"),
        get("OS"),
        rustc.join(" "),
        get("tokio"),
        get("Erlang"),
    )
}

/// The machine and the toolchains, as `name: value` lines.
fn machine(root: &Path) -> Vec<(String, String)> {
    let mut m = Vec::new();
    let cpus = shell(&["nproc"]).unwrap_or_else(|| "?".into());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown (no /proc/cpuinfo)".into());
    m.push(("CPUs (`nproc`)".into(), cpus));
    m.push(("CPU model (/proc/cpuinfo)".into(), model));
    let os = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|r| {
            r.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_string())
        })
        .unwrap_or_else(|| std::env::consts::OS.into());
    let kernel = shell(&["uname", "-sr"]).unwrap_or_default();
    m.push((
        "OS".into(),
        format!("{os}, {kernel}").trim_end_matches(", ").into(),
    ));
    m.push((
        "rustc".into(),
        shell(&["rustc", "--version"]).unwrap_or_else(|| "?".into()),
    ));
    m.push((
        "tokio".into(),
        locked_version(root, "tokio").unwrap_or_else(|| "?".into()),
    ));
    m.push((
        "Go".into(),
        shell(&["go", "version"]).unwrap_or_else(|| "not installed".into()),
    ));
    m.push((
        "Erlang/OTP".into(),
        shell(&[
            "erl",
            "-noshell",
            "-eval",
            "io:format(\"~s~n\", [erlang:system_info(otp_release)]), halt().",
        ])
        .unwrap_or_else(|| "not installed".into()),
    ));
    m
}

/// The version of `package` in Cargo.lock.
fn locked_version(root: &Path, package: &str) -> Option<String> {
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).ok()?;
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == format!("name = \"{package}\"") {
            return lines
                .next()?
                .strip_prefix("version = ")
                .map(|v| v.trim_matches('"').to_string());
        }
    }
    None
}
