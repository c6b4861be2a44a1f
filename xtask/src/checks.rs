//! Which checks can observe a mutant in which file, and how they are run.
//!
//! [`MAP`] is the one table from source files to checks. A check is
//!
//! - `loom:<file>`: the loom models in `loom-tests/tests/<file>.rs` (or
//!   `<file>/main.rs` and its modules), built with `RUSTFLAGS="--cfg loom"`
//!   in release and run with `LOOM_MAX_PREEMPTIONS=3` (unless set), target
//!   dir `target/loom` (CONTRIBUTING.md's loom command's, so that loom itself is
//!   built once);
//! - `test:<file>`: the integration tests `tests/<file>.rs` (or
//!   `tests/<file>/main.rs` and its modules) in release, target dir
//!   `target` (the plain release builds'): for the scheduler code loom
//!   does not build, these are the stress and protocol tests that can see a
//!   lost wakeup, a lost process or a hang;
//! - `miri:<file>`: `cargo +nightly miri test --test <file>` over seeds
//!   0..8 (only with `--miri`; slow), target dir `target/mutate/miri`;
//!   `miri:lib=<filter>` runs the library's unit tests matching `<filter>`
//!   instead (`--lib <filter>`), for tests that need the crate's internals;
//!   `miri:<file>=<filter>` only the tests of `<file>` matching `<filter>`.
//!
//! Each test binary is built once per mutant (`cargo test --no-run`); then
//! its tests run one at a time (`--exact`), the ones that killed earlier
//! mutants first, and the first failure kills the mutant (fail-fast). A
//! check that runs past its timeout also kills it: a hang is a detected
//! bug, and the verdict says `timeout`.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Source files (exact paths, or directories ending in `/`) and the checks
/// that run for a mutant in them. The first matching row wins, so files come
/// before their directory.
pub const MAP: &[(&str, &[&str])] = &[
    // The deque is loom-built: its models check exactly-once delivery with
    // items whose contents are loom cells (causality errors).
    ("src/deque/", &["loom:deque"]),
    // The node pool: loom builds only its live count (mailbox nodes stay
    // boxed under loom); `loom:pool` frees a block while two threads free
    // its nodes and its carver retires it (kills the Release and the
    // Acquire fence).
    ("src/mpsc/pool.rs", &["loom:pool"]),
    // Its spare blocks: `loom:pool` hands a block from its freer to a
    // taker (kills `Spares::put`'s Release and `take`'s Acquire).
    ("src/mpsc/pool/", &["loom:pool"]),
    // The MPSC queue and its users (mailbox, global queue) are loom-built.
    // `loom:drain`: the shutdown drain pops a mailbox that the close popped
    // on another thread while a late sender pushes (kills the link's
    // Release and `take_next`'s Acquire).
    (
        "src/mpsc/",
        &[
            "loom:mpsc",
            "loom:mailbox",
            "loom:global_queue",
            "loom:drain",
        ],
    ),
    // `loom:dump`: the dump's first read of the state word (`load`'s Acquire);
    // `loom:bound`: `touch`, the meeting of a waiting sender and a holder;
    // `loom:drain`: deliveries racing the close and the shutdown drain;
    // `loom:links`: `claim`, a worker handing a signal to a parking process;
    // `loom:registry`: `touch` and `complete`, a register racing the end.
    (
        "src/process/state/",
        &[
            "loom:state",
            "loom:handoff",
            "loom:dump",
            "loom:bound",
            "loom:drain",
            "loom:links",
            "loom:registry",
        ],
    ),
    // `output.rs` reads the monitor's preemption request.
    (
        "src/process/",
        &["test:sched_monitor", "test:sched_messages"],
    ),
    (
        "src/sched/core/idle.rs",
        &["loom:idle", "test:sched_parking"],
    ),
    // A slot's name flag: the register's and the close's halves of the
    // race with the end (loom-built).
    (
        "src/sched/core/name_flag.rs",
        &["loom:registry", "test:sched_registry"],
    ),
    // The process table's pages and free list are loom-built.
    ("src/sched/core/slab.rs", &["loom:table"]),
    // The phase word is loom-built (the Dekker pair with `create`;
    // `loom:drain`: deliveries racing EXITING and the stranded-events drain).
    (
        "src/sched/core/phase.rs",
        &["loom:phase", "loom:drain", "test:sched_shutdown_races"],
    ),
    (
        "src/sched/core/global.rs",
        &["loom:global_queue", "test:global_queue"],
    ),
    // The dump's figures and its read of a slot are loom-built
    // (`loom:drain`: the queued counts across the shutdown drain).
    (
        "src/sched/observe/figures.rs",
        &["loom:dump", "loom:drain", "test:sched_dump"],
    ),
    // Monitors and links: their bookkeeping is loom-built; the one ordering
    // (the dump's Relaxed counts) is a figure, checked by the tests.
    (
        "src/sched/links/mod.rs",
        &["loom:links", "test:sched_links"],
    ),
    // Bounded mailboxes: the count and the room pair are loom-built.
    ("src/sched/bound.rs", &["loom:bound", "test:sched_bounded"]),
    // Not built under loom: the scheduler's integration tests in release.
    (
        "src/sched/core/table.rs",
        &[
            "test:sched_commands",
            "test:sched_completion",
            "test:sched_terminate",
            "test:sched_dump",
        ],
    ),
    (
        "src/sched/shared.rs",
        &[
            "test:sched_shutdown_races",
            "test:sched_hooks",
            "test:sched_shutdown",
            "test:sched_errors",
            "test:sched_messages",
        ],
    ),
    // Delivery, and the core's part of the shared state.
    (
        "src/sched/shared/",
        &[
            "test:sched_shutdown_races",
            "test:sched_hooks",
            "test:sched_shutdown",
            "test:sched_errors",
            "test:sched_messages",
        ],
    ),
    (
        "src/sched/core/shared.rs",
        &[
            "test:sched_shutdown_races",
            "test:sched_hooks",
            "test:sched_shutdown",
            "test:sched_errors",
            "test:sched_messages",
        ],
    ),
    (
        "src/sched/shutdown/",
        &["test:sched_shutdown", "test:sched_shutdown_races"],
    ),
    // Other nodes: frames out and in over an in-memory transport.
    ("src/sched/remote/", &["test:remote", "test:sched_links"]),
    ("src/sched/observe/ring.rs", &["test:sched_trace"]),
    (
        "src/sched/observe/api.rs",
        &["test:sched_dump", "test:sched_messages", "test:sched_trace"],
    ),
    (
        "src/sched/outside/",
        &["test:sched_outside", "test:sched_completion"],
    ),
    (
        "src/sched/scheduler.rs",
        &[
            "test:sched_shutdown",
            "test:sched_errors",
            "test:sched_dump",
        ],
    ),
    (
        "src/sched/worker/mod.rs",
        &[
            "test:sched_messages",
            "test:sched_completion",
            "test:sched_fairness",
            "test:sched_parking",
            "test:sched_terminate",
        ],
    ),
    ("src/sched/worker/timers.rs", &["test:sched_timers"]),
    (
        "src/sched/worker/",
        &[
            "test:sched_messages",
            "test:sched_completion",
            "test:sched_fairness",
            "test:sched_parking",
            "test:sched_terminate",
            "test:sched_dump",
        ],
    ),
    // Timers: the wheel and its `next` word are loom-built (the parking
    // Dekker pair with inserts, cancel racing fire, end of process, slot
    // reuse); the worker's side is not.
    ("src/sched/timer/", &["loom:timers", "test:sched_timers"]),
    // The monitor's seqlock is loom-built (the monitor itself is not).
    (
        "src/sched/observe/watch.rs",
        &["loom:watch", "test:sched_monitor"],
    ),
    ("src/sched/observe/monitor.rs", &["test:sched_monitor"]),
    ("src/sched/core/clock.rs", &["test:sched_monitor"]),
    ("src/sched/observe/dump.rs", &["test:sched_dump"]),
    (
        "src/sched/observe/stats.rs",
        &["test:sched_dump", "test:sched_messages"],
    ),
    ("src/sched/observe/trace.rs", &["test:sched_trace"]),
    ("src/sched/commands/handler.rs", &["test:sched_errors"]),
    (
        "src/sched/outside/join.rs",
        &["test:sched_shutdown", "test:sched_completion"],
    ),
    (
        "src/sched/",
        &[
            "test:sched_messages",
            "test:sched_shutdown",
            "test:sched_parking",
        ],
    ),
];

/// The checks for a mutant in `file` (empty if no row matches).
pub fn checks_for(file: &str, miri: bool) -> Vec<String> {
    let row = MAP.iter().find(|(pat, _)| {
        if pat.ends_with('/') {
            file.starts_with(pat)
        } else {
            file == *pat
        }
    });
    let mut out: Vec<String> = row.map_or(Vec::new(), |(_, c)| {
        c.iter().map(|s| s.to_string()).collect()
    });
    if miri && file.starts_with("src/deque/") {
        // Weak-memory tests: what loom's null-filled slots hide (a thief
        // reading a slot unordered before its CAS fails), Miri reports as
        // uninitialised memory.
        out.push("miri:deque_weak_memory".into());
    }
    if miri && file == "src/sched/core/table.rs" {
        // Weak memory over shutdown: the report's counts are read after
        // `live()` reached zero, which only the closed counts' Release and
        // Acquire order (x86 never shows it; Miri does). The unit test of
        // that pair alone: the shutdown tests that showed it (those
        // asserting the report's counts, `shutdown_c`) stopped doing so
        // once the wait was woken by a parking worker, whose wake-up orders
        // the two by itself in most runs (`sched/stopping.rs`).
        out.push("miri:lib=table::tests::whoever".into());
    }
    if miri && file.starts_with("src/mpsc/") {
        // Unit tests: `put_spare_orders_the_previous_owners_writes_before_the_free`
        // hands two blocks to the spare slot from two threads, a free that
        // loom never reaches (its claims never put a block back).
        out.push("miri:lib=mpsc::tests".into());
    }
    out
}

/// The outcome of one mutant's checks.
#[derive(Debug)]
pub enum Outcome {
    /// Every check passed.
    Passed,
    /// `check` (with the test that failed) failed; `detail` is its panic.
    Failed { check: String, detail: String },
    /// The build failed: the mutant is invalid.
    BuildError(String),
}

/// Runs checks in the scratch tree; remembers test lists and which tests kill.
pub struct Runner {
    pub tree: PathBuf,
    /// `<root>/target/mutate`.
    pub out: PathBuf,
    /// Per-check timeouts; `None` means the defaults (loom 600 s, tests 300 s,
    /// Miri 1800 s).
    pub timeout: Option<Duration>,
    pub verbose: bool,
    tests: HashMap<String, Vec<String>>,
    kills: HashMap<String, usize>,
}

/// Seconds spent building and checking, for the results file.
#[derive(Default, Debug, Clone, Copy)]
pub struct Times {
    pub build: f64,
    pub check: f64,
}

impl Runner {
    pub fn new(tree: PathBuf, out: PathBuf, timeout: Option<Duration>, verbose: bool) -> Runner {
        Runner {
            tree,
            out,
            timeout,
            verbose,
            tests: HashMap::new(),
            kills: HashMap::new(),
        }
    }

    fn timeout_for(&self, check: &str) -> Duration {
        self.timeout
            .unwrap_or(Duration::from_secs(match kind(check).0 {
                "loom" => 600,
                "miri" => 1800,
                _ => 300,
            }))
    }

    /// Builds and runs `checks` in order, stopping at the first failure.
    pub fn run(&mut self, checks: &[String], times: &mut Times) -> Outcome {
        let mut built: HashMap<String, PathBuf> = HashMap::new();
        for check in checks {
            let (k, file) = kind(check);
            if k == "miri" {
                let start = Instant::now();
                let out = self.miri(file, self.timeout_for(check));
                times.check += start.elapsed().as_secs_f64();
                match out {
                    Outcome::Passed => continue,
                    other => return other,
                }
            }
            if !built.contains_key(check) {
                // Build every remaining check of the same kind in one cargo run.
                let same: Vec<&str> = checks
                    .iter()
                    .filter(|c| kind(c).0 == k)
                    .map(|c| kind(c).1)
                    .collect();
                let start = Instant::now();
                let result = self.build(k, &same);
                times.build += start.elapsed().as_secs_f64();
                match result {
                    Ok(exes) => {
                        for (name, exe) in exes {
                            built.insert(format!("{k}:{name}"), exe);
                        }
                    }
                    Err(e) => return Outcome::BuildError(e),
                }
            }
            let Some(exe) = built.get(check).cloned() else {
                return Outcome::BuildError(format!("cargo built no test binary for {check}"));
            };
            let start = Instant::now();
            let out = self.run_binary(check, &exe);
            times.check += start.elapsed().as_secs_f64();
            if let Outcome::Failed { .. } = out {
                return out;
            }
        }
        Outcome::Passed
    }

    /// `cargo test --no-run` for the test files of one kind; their binaries.
    fn build(&self, k: &str, files: &[&str]) -> Result<Vec<(String, PathBuf)>, String> {
        let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cmd.current_dir(&self.tree).args([
            "test",
            "--release",
            "--no-run",
            "--message-format=json-render-diagnostics",
        ]);
        // The repository's own target directories (`out` is
        // `<root>/target/mutate`): the scratch tree's crates build apart
        // from the repository's (cargo keys a path package by its path), but
        // their dependencies (loom and its own) are the ones the loom step
        // already built.
        let target = self.out.parent().unwrap_or(&self.out);
        if k == "loom" {
            cmd.args(["-p", "stepsched-loom-tests"])
                .env("RUSTFLAGS", "--cfg loom")
                .env("CARGO_TARGET_DIR", target.join("loom"));
        } else {
            cmd.args(["-p", "stepsched"])
                .env("CARGO_TARGET_DIR", target);
        }
        for f in files {
            cmd.args(["--test", f]);
        }
        let output = cmd
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run cargo: {e}"))?;
        if !output.status.success() {
            let err = String::from_utf8_lossy(&output.stderr);
            let first: Vec<&str> = err
                .lines()
                .filter(|l| l.starts_with("error"))
                .take(2)
                .collect();
            return Err(first.join(" | "));
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        let mut exes = Vec::new();
        for line in stdout.lines() {
            if !line.contains("\"reason\":\"compiler-artifact\"") {
                continue;
            }
            let (Some(exe), Some(name)) = (
                json_str(line, "\"executable\":\""),
                line.find("\"target\":{")
                    .and_then(|at| json_str(&line[at..], "\"name\":\"")),
            ) else {
                continue;
            };
            exes.push((name, PathBuf::from(exe)));
        }
        Ok(exes)
    }

    /// The test names in a binary (cached: they do not change per mutant).
    fn list(&mut self, check: &str, exe: &Path) -> Vec<String> {
        if let Some(t) = self.tests.get(check) {
            return t.clone();
        }
        let out = Command::new(exe)
            .args(["--list", "--format", "terse"])
            .current_dir(&self.tree)
            .output();
        let names: Vec<String> = out
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .filter_map(|l| l.strip_suffix(": test"))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        self.tests.insert(check.to_string(), names.clone());
        names
    }

    /// Runs a binary's tests one at a time; the first failure kills.
    fn run_binary(&mut self, check: &str, exe: &Path) -> Outcome {
        let mut tests = self.list(check, exe);
        // Tests that killed before go first (stable sort keeps file order).
        tests.sort_by_key(|t| std::cmp::Reverse(self.kills.get(&format!("{check}::{t}")).copied()));
        let deadline = Instant::now() + self.timeout_for(check);
        let log = self.out.join("last-check.log");
        for test in tests {
            let mut cmd = Command::new(exe);
            cmd.args(["--exact", &test, "--test-threads=1"])
                .current_dir(&self.tree)
                .stdin(Stdio::null());
            if kind(check).0 == "loom" && std::env::var_os("LOOM_MAX_PREEMPTIONS").is_none() {
                cmd.env("LOOM_MAX_PREEMPTIONS", "3");
            }
            if self.verbose {
                eprintln!("      {check}::{test}");
            }
            let result = run_logged(&mut cmd, &log, deadline, false);
            let name = format!("{check}::{test}");
            match result {
                Ok(true) => {}
                Ok(false) => {
                    *self.kills.entry(name.clone()).or_default() += 1;
                    return Outcome::Failed {
                        check: name,
                        detail: panic_line(&log),
                    };
                }
                Err(()) => {
                    *self.kills.entry(name.clone()).or_default() += 1;
                    let secs = self.timeout_for(check).as_secs();
                    return Outcome::Failed {
                        check: format!("{name} [timeout {secs}s]"),
                        detail: "hang: the check ran past its timeout".into(),
                    };
                }
            }
        }
        Outcome::Passed
    }

    /// `cargo +nightly miri test` over what [`miri_target`] names, in its
    /// own process group so that a timeout kills the interpreter too.
    fn miri(&self, file: &str, timeout: Duration) -> Outcome {
        let target = miri_target(file);
        let mut cmd = Command::new("cargo");
        cmd.current_dir(&self.tree)
            .args(["+nightly", "miri", "test", "-p", "stepsched"])
            .args(target)
            // Several seeds: weak-memory outcomes are drawn at random.
            .env(
                "MIRIFLAGS",
                "-Zmiri-strict-provenance -Zmiri-many-seeds=0..8",
            )
            .env("CARGO_TARGET_DIR", self.out.join("miri"))
            .stdin(Stdio::null());
        let log = self.out.join("last-check.log");
        match run_logged(&mut cmd, &log, Instant::now() + timeout, true) {
            Ok(true) => Outcome::Passed,
            Ok(false) => {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                if text.contains("error: could not compile") {
                    Outcome::BuildError(format!("miri:{file}: could not compile"))
                } else {
                    Outcome::Failed {
                        check: format!("miri:{file}"),
                        detail: panic_line(&log),
                    }
                }
            }
            Err(()) => Outcome::Failed {
                check: format!("miri:{file} [timeout {}s]", timeout.as_secs()),
                detail: "hang: the check ran past its timeout".into(),
            },
        }
    }
}

/// The arguments that pick what a `miri:` check runs: `--test <file>`;
/// `--lib <filter>` for `lib=<filter>`; `--test <file> <filter>` for
/// `<file>=<filter>`.
pub fn miri_target(file: &str) -> Vec<&str> {
    match file.split_once('=') {
        Some(("lib", filter)) => vec!["--lib", filter],
        Some((test, filter)) => vec!["--test", test, filter],
        None => vec!["--test", file],
    }
}

/// `("loom", "deque")` from `"loom:deque"`.
pub fn kind(check: &str) -> (&str, &str) {
    check.split_once(':').unwrap_or(("test", check))
}

/// Runs `cmd` with stdout and stderr to `log`; `Ok(success)`, or `Err(())`
/// if it was killed at `deadline`.
fn run_logged(cmd: &mut Command, log: &Path, deadline: Instant, group: bool) -> Result<bool, ()> {
    let file = File::create(log).expect("cannot create the check log");
    let err = file.try_clone().expect("cannot clone the check log");
    cmd.stdout(file).stderr(err);
    if group {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child: Child = match cmd.spawn() {
        Ok(c) => c,
        Err(_) => return Ok(false),
    };
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status.success()),
            Ok(None) if Instant::now() >= deadline => {
                if group {
                    // Kill the whole group (cargo and what it started).
                    let _ = Command::new("kill")
                        .args(["-KILL", "--", &format!("-{}", child.id())])
                        .status();
                }
                let _ = child.kill();
                let _ = child.wait();
                return Err(());
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(_) => return Ok(false),
        }
    }
}

/// The first panic message in a test log, on one line.
fn panic_line(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        if l.contains("panicked at") || l.starts_with("error: Undefined Behavior") {
            let next = lines.get(i + 1).copied().unwrap_or("");
            let s = format!("{} {}", l.trim(), next.trim());
            return s.chars().take(300).collect();
        }
    }
    lines
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map_or(String::new(), |l| l.chars().take(300).collect())
}

/// The JSON string value after `prefix` in `line` (no escapes in paths).
fn json_str(line: &str, prefix: &str) -> Option<String> {
    let at = line.find(prefix)? + prefix.len();
    let end = line[at..].find('"')?;
    Some(line[at..at + end].replace("\\\\", "\\"))
}

#[cfg(test)]
mod tests;
