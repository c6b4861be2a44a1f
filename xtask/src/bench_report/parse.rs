//! Reading the peer benches' output into figures (pure: text in, numbers
//! out), so that a change in a bench's wording fails `cargo test -p xtask`
//! rather than a report quietly missing a row.
//!
//! Every figure is a [`Sample`]: which scenario, which system, and the value
//! in the scenario's unit (nanoseconds, or bytes for `idle_process`).

use super::scenarios::System;

/// One figure read from one run of one program.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// The scenario's key (see [`super::scenarios::SCENARIOS`]).
    pub scenario: &'static str,
    /// The system it measured.
    pub system: System,
    /// Nanoseconds per operation, or bytes for `idle_process`.
    pub value: f64,
}

fn sample(scenario: &'static str, system: System, value: f64) -> Sample {
    Sample {
        scenario,
        system,
        value,
    }
}

/// A duration printed as `<number> <unit>` (`ns`, `µs`, `us`, `ms`, `s`),
/// in nanoseconds.
pub fn duration_ns(number: &str, unit: &str) -> Option<f64> {
    let n: f64 = number.parse().ok()?;
    let scale = match unit {
        "ns" => 1.0,
        "µs" | "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    Some(n * scale)
}

/// The number at the start of `text` (after spaces), and what follows it.
fn leading_number(text: &str) -> Option<(f64, &str)> {
    let text = text.trim_start();
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(text.len());
    let n = text[..end].parse().ok()?;
    Some((n, &text[end..]))
}

/// The number right after the first `label` in `line`.
fn number_after(line: &str, label: &str) -> Option<f64> {
    let at = line.find(label)? + label.len();
    leading_number(&line[at..]).map(|(n, _)| n)
}

/// `p50/p99` right after `label` (as in `stepsched 70/141 (74.8)`).
fn pair_after(line: &str, label: &str) -> Option<(f64, f64)> {
    let at = line.find(label)? + label.len();
    let (p50, rest) = leading_number(&line[at..])?;
    let (p99, _) = leading_number(rest.strip_prefix('/')?)?;
    Some((p50, p99))
}

/// The scheduler bin's scenario rows, and its resource lines:
///
/// ```text
/// ping_pong        200000 round trips     round trip      731.7 ns     346.8 ns     2.11
///   bytes per idle process          353 B   (...; tokio task ...: 1279 B)
///   wake-up latency p50 / p99  19.1 µs / 71.5 µs   (...; tokio: 19.2 µs / 53.2 µs)
/// ```
///
/// A row's columns are the scenario, its size and op (both may hold
/// spaces), tokio's and stepsched's medians (`<number> <unit>`) and the
/// ratio; so the row is read from both ends. With `STEPSCHED_ONLY` the
/// tokio column reads 0: no tokio sample then.
pub fn scheduler(output: &str) -> Vec<Sample> {
    let mut out = Vec::new();
    for line in output.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Some(&first) = words.first() {
            if let Some(key) = super::scenarios::SCHEDULER_ROWS
                .iter()
                .copied()
                .find(|&k| k == first)
            {
                let n = words.len();
                if n < 6 {
                    continue;
                }
                let tokio = duration_ns(words[n - 5], words[n - 4]);
                let ours = duration_ns(words[n - 3], words[n - 2]);
                if let Some(ours) = ours {
                    out.push(sample(key, System::Stepsched, ours));
                }
                if let Some(tokio) = tokio.filter(|&t| t > 0.0) {
                    out.push(sample(key, System::Tokio, tokio));
                }
                continue;
            }
        }
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("bytes per idle process") {
            if let Some((ours, _)) = leading_number(rest) {
                out.push(sample("idle_process", System::Stepsched, ours));
            }
            if let Some(theirs) = rest
                .rsplit_once(": ")
                .and_then(|(_, tail)| leading_number(tail))
            {
                out.push(sample("idle_process", System::Tokio, theirs.0));
            }
        } else if let Some(rest) = trimmed.strip_prefix("wake-up latency p50 / p99") {
            let (ours, theirs) = match rest.split_once("tokio:") {
                Some((ours, theirs)) => (ours, Some(theirs)),
                None => (rest, None),
            };
            let mut push = |text: &str, system| {
                if let Some((p50, p99)) = two_durations(text) {
                    out.push(sample("wake_up_p50", system, p50));
                    out.push(sample("wake_up_p99", system, p99));
                }
            };
            push(ours, System::Stepsched);
            if let Some(theirs) = theirs {
                push(theirs, System::Tokio);
            }
        }
    }
    out
}

/// The first two `<number> <unit>` durations in `text`, in nanoseconds.
fn two_durations(text: &str) -> Option<(f64, f64)> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == '/' || c == '(' || c == ')' || c == ';')
        .filter(|w| !w.is_empty())
        .collect();
    let found: Vec<f64> = words
        .windows(2)
        .filter_map(|w| duration_ns(w[0], w[1]))
        .take(2)
        .collect();
    match found[..] {
        [a, b] => Some((a, b)),
        _ => None,
    }
}

/// The Rust `links` bin run with the shapes `apart down chain`:
///
/// ```text
///   pairs interleaved on two targets (each request sent), ns: stepsched 341.8
/// down latency p50/p99 (mean p10-p90), ns: stepsched 70/141 (74.8)  tokio JoinHandle 120/250 (121.9)  ...
/// chain of 1000 torn down from its head, median ns per process: stepsched 103.6  tokio 244.8  ...
/// ```
pub fn links(output: &str) -> Vec<Sample> {
    let mut out = Vec::new();
    for line in output.lines() {
        if line.contains("pairs interleaved on two targets") {
            if let Some(ours) = number_after(line, "stepsched ") {
                out.push(sample("apart", System::Stepsched, ours));
            }
        } else if line.starts_with("down latency") {
            for (label, system) in [
                ("stepsched ", System::Stepsched),
                ("tokio JoinHandle ", System::Tokio),
            ] {
                if let Some((p50, p99)) = pair_after(line, label) {
                    out.push(sample("down_p50", system, p50));
                    out.push(sample("down_p99", system, p99));
                }
            }
        } else if line.starts_with("chain of") {
            if let Some(ours) = number_after(line, "stepsched ") {
                out.push(sample("chain", System::Stepsched, ours));
            }
            if let Some(theirs) = number_after(line, "tokio ") {
                out.push(sample("chain", System::Tokio, theirs));
            }
        }
    }
    out
}

/// `benches/peers/go/links.go`:
///
/// ```text
/// down latency p50/p99 (mean p10-p90), ns: Go (done channel) 120/220 (125.6)
/// chain of 1000 torn down from its head, median ns per goroutine: Go 762.8
/// ```
pub fn go(output: &str) -> Vec<Sample> {
    let mut out = Vec::new();
    for line in output.lines() {
        if line.starts_with("down latency") {
            if let Some((p50, p99)) = pair_after(line, "Go (done channel) ") {
                out.push(sample("down_p50", System::Go, p50));
                out.push(sample("down_p99", System::Go, p99));
            }
        } else if line.starts_with("chain of") {
            if let Some(n) = number_after(line, ": Go ") {
                out.push(sample("chain", System::Go, n));
            }
        }
    }
    out
}

/// `benches/peers/erlang/links.erl`:
///
/// ```text
/// pair (monitor+demonitor), ns: BEAM 523.6
/// down latency p50/p99 (mean p10-p90), ns: BEAM 882/4005 (925.7)
/// chain of 1000 torn down from its head, median ns per process: BEAM 3622.1
/// ```
///
/// The BEAM's pair sends every request, so it is compared with `apart`.
pub fn beam(output: &str) -> Vec<Sample> {
    let mut out = Vec::new();
    for line in output.lines() {
        if line.starts_with("pair (monitor+demonitor)") {
            if let Some(n) = number_after(line, "BEAM ") {
                out.push(sample("apart", System::Beam, n));
            }
        } else if line.starts_with("down latency") {
            if let Some((p50, p99)) = pair_after(line, "BEAM ") {
                out.push(sample("down_p50", System::Beam, p50));
                out.push(sample("down_p99", System::Beam, p99));
            }
        } else if line.starts_with("chain of") {
            if let Some(n) = number_after(line, "BEAM ") {
                out.push(sample("chain", System::Beam, n));
            }
        }
    }
    out
}
