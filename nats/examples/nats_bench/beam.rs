//! The BEAM row: benches/peers/erlang/dist.erl between two `erl -sname`
//! nodes, B (`pong_<pid>`, the ponger and counter) started as a child and
//! A (`ping_<pid>`, the driver) run to completion; A's printed figures.

use std::collections::hash_map::RandomState;
use std::fs::File;
use std::hash::{BuildHasher, Hasher};
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The module's source, carried in the binary so that the example does
/// not depend on its working directory.
const DIST_ERL: &str = include_str!("../../../benches/peers/erlang/dist.erl");

/// Node A's whole run; far beyond what the defaults take.
const RUN_LIMIT: Duration = Duration::from_secs(600);

/// Node A's figures: medians and each timed round's.
pub struct Figures {
    pub round_trip_ns: f64,
    pub round_trip: Vec<f64>,
    pub msgs_per_sec_median: f64,
    pub msgs_per_sec: Vec<f64>,
    /// From node A's start until node B's `pong` answered.
    pub connect_ms: f64,
    /// The whole of [`run`]: compiling, both start-ups, the rounds.
    pub wall: Duration,
}

/// The first of `erl` and `erlc` that is not on PATH, if any.
pub fn missing() -> Option<&'static str> {
    let on_path = |name: &str| {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
    };
    ["erl", "erlc"].into_iter().find(|name| !on_path(name))
}

/// A child killed and reaped when dropped, so that no path out of
/// [`run`] leaves an `erl` node behind.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The temp dir holding dist.erl, its .beam and node B's log; removed
/// when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The short host name that `erl -sname` puts after the `@`.
fn hostname() -> Option<String> {
    let name = Command::new("hostname")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())?;
    let short = name.trim().split('.').next()?;
    (!short.is_empty()).then(|| short.to_owned())
}

/// Reads a child's pipe to its end on a thread, so that neither pipe
/// fills while node A runs.
fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_string(&mut text);
        }
        text
    })
}

/// `beam <name> <median> [rounds <r1> <r2> ...]` from node A's output.
fn figure(out: &str, name: &str) -> Option<(f64, Vec<f64>)> {
    let rest = out.lines().find_map(|l| {
        l.strip_prefix("beam ")?
            .strip_prefix(name)?
            .strip_prefix(' ')
    })?;
    let mut words = rest.split_whitespace();
    let median = words.next()?.parse().ok()?;
    let rounds = match words.next() {
        Some("rounds") => words
            .map(|w| w.parse().ok())
            .collect::<Option<Vec<f64>>>()?,
        None => vec![],
        _ => return None,
    };
    Some((median, rounds))
}

pub fn run(rounds: usize, trips: u64, messages: u64) -> Result<Figures, String> {
    let started = Instant::now();
    let id = std::process::id();
    // Declared first, so dropped last: after both nodes are reaped.
    let dir = TempDir(std::env::temp_dir().join(format!("stepsched-dist-{id}")));
    let at = |e: std::io::Error| format!("{}: {e}", dir.0.display());
    std::fs::create_dir_all(&dir.0).map_err(at)?;
    let source = dir.0.join("dist.erl");
    std::fs::write(&source, DIST_ERL).map_err(at)?;
    let compiled = Command::new("erlc")
        .arg("-o")
        .arg(&dir.0)
        .arg(&source)
        .output()
        .map_err(|e| format!("erlc: {e}"))?;
    if !compiled.status.success() {
        let why = String::from_utf8_lossy(&compiled.stderr);
        return Err(format!(
            "erlc: {}{}",
            String::from_utf8_lossy(&compiled.stdout),
            why
        ));
    }

    // A cookie of this run's own, so that no other node on the machine
    // can connect to these two.
    let cookie = format!(
        "stepsched{:016x}",
        RandomState::new().build_hasher().finish()
    );
    let erl = |name: &str| {
        let mut c = Command::new("erl");
        c.args([
            "-sname",
            name,
            "-setcookie",
            &cookie,
            "-noshell",
            "+S",
            "2",
            "-pa",
        ])
        .arg(&dir.0)
        .current_dir(&dir.0)
        // A failing node writes no erl_crash.dump.
        .env("ERL_CRASH_DUMP_SECONDS", "0");
        c
    };

    let pong = format!("pong_{id}");
    let log_path = dir.0.join("pong.log");
    let log = File::create(&log_path).map_err(at)?;
    let log_err = log.try_clone().map_err(at)?;
    // Node B's standard input is a pipe this process holds: with
    // `stdin`, B halts when it closes, should this process die before
    // reaping B.
    let mut node_b = Reaped(
        erl(&pong)
            .args(["-s", "dist", "pong", "stdin"])
            .stdin(Stdio::piped())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|e| format!("erl (node B): {e}"))?,
    );
    let target = match hostname() {
        Some(host) => format!("{pong}@{host}"),
        None => pong, // dist.erl puts node A's own host after it
    };
    let mut node_a = Reaped(
        erl(&format!("ping_{id}"))
            .args(["-s", "dist", "main", "-s", "init", "stop"])
            .env("ROUNDS", rounds.to_string())
            .env("TRIPS", trips.to_string())
            .env("MESSAGES", messages.to_string())
            .env("PONG_NODE", &target)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("erl (node A): {e}"))?,
    );
    let stdout = drain(node_a.0.stdout.take());
    let stderr = drain(node_a.0.stderr.take());
    let deadline = Instant::now() + RUN_LIMIT;
    let status = loop {
        match node_a.0.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Ok(None) => break Err(format!("node A still running after {RUN_LIMIT:?}")),
            Err(e) => break Err(format!("node A: {e}")),
        }
    };
    drop(node_a); // kills A if it is still running; the pipes then end
    let out = stdout.join().unwrap_or_default();
    let err = stderr.join().unwrap_or_default();
    let b_exited = node_b.0.try_wait().ok().flatten();
    drop(node_b);

    let failed = |why: String| {
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        let b = b_exited.map_or(String::new(), |s| format!("; node B exited early: {s}"));
        format!(
            "{why}{b}; node A (to {target}) printed: {:?}, stderr: {:?}; node B log: {:?}",
            out.trim(),
            err.trim(),
            log.trim()
        )
    };
    let status = status.map_err(&failed)?;
    if !status.success() {
        return Err(failed(format!("node A exited with {status}")));
    }
    let parse = |name| {
        figure(&out, name).ok_or_else(|| failed(format!("no `beam {name}` line from node A")))
    };
    let (connect_ms, _) = parse("connect_ms")?;
    let (round_trip_ns, round_trip) = parse("round_trip_ns")?;
    let (msgs_per_sec_median, msgs_per_sec) = parse("msgs_per_sec")?;
    Ok(Figures {
        round_trip_ns,
        round_trip,
        msgs_per_sec_median,
        msgs_per_sec,
        connect_ms,
        wall: started.elapsed(),
    })
}
