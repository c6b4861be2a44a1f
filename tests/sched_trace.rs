//! The execution tracer: a traced run exports Chrome trace-event JSON that
//! parses back (with the small parser below) into per-worker tracks where
//! every step is one slice with a duration of at least zero on one worker,
//! timestamps never go back, and the event counts equal the scheduler's
//! own `stats()`; submits, sends and waking completions from threads that
//! are not workers appear on the outside track with their PIDs; and
//! recording paused at run time leaves no step half-recorded.
//!
//! ```text
//! cargo test --test sched_trace
//! ```

mod common;
use common::wait_until;

use std::collections::BTreeMap;
use std::sync::{mpsc, Mutex};
use std::thread;
use std::time::Duration;

use stepsched::process::Lifecycle;
use stepsched::process::{Command, Event, Process, StepOutput};
use stepsched::sched::{Completer, Scheduler};

// ---------------------------------------------------------------------------
// A small JSON parser: enough for the exporter's output (objects, arrays,
// strings with simple escapes, numbers, literals).

#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(BTreeMap<String, Json>),
}

impl Json {
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(map) => map.get(key),
            _ => None,
        }
    }
    fn str(&self) -> &str {
        match self {
            Json::Str(s) => s,
            other => panic!("not a string: {other:?}"),
        }
    }
    fn num(&self) -> f64 {
        match self {
            Json::Num(n) => *n,
            other => panic!("not a number: {other:?}"),
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn parse(text: &str) -> Json {
        let mut p = Parser {
            s: text.as_bytes(),
            at: 0,
        };
        let value = p.value();
        p.ws();
        assert_eq!(p.at, p.s.len(), "trailing input after the JSON value");
        value
    }
    fn ws(&mut self) {
        while self.at < self.s.len() && self.s[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }
    fn eat(&mut self, c: u8) {
        self.ws();
        assert_eq!(
            self.s.get(self.at),
            Some(&c),
            "expected {:?} at {}",
            c as char,
            self.at
        );
        self.at += 1;
    }
    fn peek(&mut self) -> u8 {
        self.ws();
        *self.s.get(self.at).expect("unexpected end of JSON")
    }
    fn value(&mut self) -> Json {
        match self.peek() {
            b'{' => {
                self.eat(b'{');
                let mut map = BTreeMap::new();
                if self.peek() == b'}' {
                    self.eat(b'}');
                    return Json::Obj(map);
                }
                loop {
                    let key = self.string();
                    self.eat(b':');
                    assert!(map.insert(key, self.value()).is_none(), "duplicate key");
                    if self.peek() == b',' {
                        self.eat(b',');
                    } else {
                        self.eat(b'}');
                        return Json::Obj(map);
                    }
                }
            }
            b'[' => {
                self.eat(b'[');
                let mut items = Vec::new();
                if self.peek() == b']' {
                    self.eat(b']');
                    return Json::Arr(items);
                }
                loop {
                    items.push(self.value());
                    if self.peek() == b',' {
                        self.eat(b',');
                    } else {
                        self.eat(b']');
                        return Json::Arr(items);
                    }
                }
            }
            b'"' => Json::Str(self.string()),
            b't' | b'f' | b'n' => {
                for (word, value) in [
                    ("true", Json::Bool(true)),
                    ("false", Json::Bool(false)),
                    ("null", Json::Null),
                ] {
                    if self.s[self.at..].starts_with(word.as_bytes()) {
                        self.at += word.len();
                        return value;
                    }
                }
                panic!("bad literal at {}", self.at);
            }
            _ => {
                let start = self.at;
                while self.at < self.s.len() && b"+-.eE0123456789".contains(&self.s[self.at]) {
                    self.at += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.at]).unwrap();
                Json::Num(
                    text.parse()
                        .unwrap_or_else(|_| panic!("bad number {text:?}")),
                )
            }
        }
    }
    fn string(&mut self) -> String {
        self.eat(b'"');
        let mut out = String::new();
        loop {
            let c = self.s[self.at];
            self.at += 1;
            match c {
                b'"' => return out,
                b'\\' => {
                    let e = self.s[self.at];
                    self.at += 1;
                    out.push(match e {
                        b'n' => '\n',
                        b't' => '\t',
                        other => other as char,
                    });
                }
                _ => {
                    // Multi-byte UTF-8: copy the whole character.
                    let start = self.at - 1;
                    let len = match c {
                        0..=0x7f => 1,
                        0xc0..=0xdf => 2,
                        0xe0..=0xef => 3,
                        _ => 4,
                    };
                    self.at = start + len;
                    out.push_str(std::str::from_utf8(&self.s[start..self.at]).unwrap());
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// A mixed workload (ping-pong pairs, yielders, spawn chains): the processes
// of examples/trace.rs.

#[path = "../examples/common/job.rs"]
mod job;
use job::Job;

/// An exported trace, parsed and checked.
struct Tracks {
    /// Per track (workers, then `scheduler`, then `outside`): the number
    /// of events by `ph:name`.
    counts: Vec<BTreeMap<String, u64>>,
    /// The outside track's events: name and args.
    outside: Vec<(String, Json)>,
}

impl Tracks {
    fn count(&self, tid: usize, key: &str) -> u64 {
        self.counts[tid].get(key).copied().unwrap_or(0)
    }

    /// The `pid` argument of each outside event named `name`, in order.
    fn outside_pids(&self, name: &str) -> Vec<String> {
        (self.outside.iter())
            .filter(|(n, _)| n == name)
            .map(|(_, args)| args.get("pid").expect("a pid").str().to_owned())
            .collect()
    }
}

/// A timestamp or duration in µs with three decimals, as whole ns.
fn ns(value: &Json) -> i64 {
    let micros = value.num();
    assert!(micros >= 0.0, "negative time {micros}");
    (micros * 1000.0).round() as i64
}

/// Parses an exported trace and checks its structure: one named track per
/// worker plus `scheduler` and `outside`; per track, timestamps never go
/// back, and each step is one complete (`X`) event with a PID, a status
/// and a duration of at least zero that ends before the track's next
/// event begins (so steps never nest or overlap).
fn check_tracks(json: &[u8], workers: usize) -> Tracks {
    let root = Parser::parse(std::str::from_utf8(json).unwrap());
    let Some(Json::Arr(events)) = root.get("traceEvents") else {
        panic!("no traceEvents array");
    };
    let tracks = workers + 2;
    // Per track: where its last event ended, in ns, and counts by name.
    let mut free_from = vec![0i64; tracks];
    let mut counts: Vec<BTreeMap<String, u64>> = vec![BTreeMap::new(); tracks];
    let mut outside = Vec::new();
    let mut track_names = BTreeMap::new();
    for event in events {
        let ph = event.get("ph").expect("ph").str();
        let tid = event.get("tid").expect("tid").num() as usize;
        assert!(tid < tracks, "tid {tid}");
        let name = event.get("name").expect("name").str().to_owned();
        if ph == "M" {
            let args = event.get("args").expect("metadata args");
            track_names.insert(tid, args.get("name").unwrap().str().to_owned());
            continue;
        }
        let ts = ns(event.get("ts").expect("ts"));
        assert!(
            ts >= free_from[tid],
            "track {tid} goes back, or overlaps a step: {event:?}"
        );
        free_from[tid] = ts;
        *counts[tid].entry(format!("{ph}:{name}")).or_default() += 1;
        match ph {
            "X" => {
                assert!(tid < workers, "steps run on workers");
                let args = event.get("args").expect("step args");
                assert!(args.get("pid").unwrap().str().starts_with('<'));
                assert!(args.get("status").is_some(), "a status");
                free_from[tid] = ts + ns(event.get("dur").expect("a step's duration"));
            }
            "i" => {
                if tid == workers + 1 {
                    let args = event.get("args").expect("outside args").clone();
                    outside.push((name, args));
                }
            }
            other => panic!("unexpected phase {other}"),
        }
    }
    assert_eq!(track_names.len(), tracks);
    assert_eq!(track_names[&workers], "scheduler");
    assert_eq!(track_names[&(workers + 1)], "outside");
    Tracks { counts, outside }
}

#[test]
fn the_exported_trace_parses_back_and_matches_stats() {
    const WORKERS: usize = 2;
    // Miri interprets every instruction: a fifth of the work there, and
    // rings to match.
    const ROUNDS: usize = if cfg!(miri) { 2 } else { 10 };
    let scheduler = Scheduler::<Job>::builder()
        .workers(WORKERS)
        .trace(if cfg!(miri) { 1 << 12 } else { 1 << 18 })
        .build()
        .unwrap();
    let mut jobs = Vec::new();
    let mut sent_to = Vec::new();
    for _ in 0..ROUNDS {
        let a = scheduler.submit_joinable(Job::Ping, "ping", 0).unwrap();
        let b = scheduler.submit_joinable(Job::Ping, "ping", 0).unwrap();
        scheduler.send(a.pid(), (b.pid(), 100)).unwrap();
        sent_to.push(a.pid().to_string());
        jobs.extend([a, b]);
        for _ in 0..10 {
            jobs.push(scheduler.submit_joinable(Job::Ping, "yield", 10).unwrap());
        }
        jobs.push(scheduler.submit_joinable(Job::Ping, "chain", 30).unwrap());
    }
    let submitted: Vec<String> = jobs.iter().map(|j| j.pid().to_string()).collect();
    for job in jobs {
        job.join().unwrap();
    }
    assert!(scheduler.trace().is_none(), "no trace before shutdown");
    let report = scheduler.shutdown(Duration::from_secs(5));
    assert_eq!(report.stuck, 0);
    let stats = scheduler.stats();
    let trace = scheduler.trace().expect("a trace after shutdown");
    assert!(!trace.wrapped(), "the rings were large enough");
    let mut json = Vec::new();
    trace.write_chrome_json(&mut json).unwrap();
    assert!(scheduler.trace().is_none(), "the trace is taken once");

    let tracks = check_tracks(&json, WORKERS);
    let count = |tid: usize, key: &str| tracks.count(tid, key);
    let (mut completes, mut spawns) = (0, 0);
    for (tid, w) in stats.workers.iter().enumerate() {
        assert_eq!(count(tid, "X:step"), w.steps, "steps on worker {tid}");
        assert_eq!(count(tid, "i:steal"), w.steals, "steals on worker {tid}");
        assert_eq!(count(tid, "i:global_take"), w.global_takes, "worker {tid}");
        assert_eq!(count(tid, "i:inject_take"), w.inject_takes, "worker {tid}");
        assert_eq!(count(tid, "i:spin"), w.spins, "spins on worker {tid}");
        assert_eq!(count(tid, "i:park"), w.parks, "parks on worker {tid}");
        assert_eq!(count(tid, "i:unpark"), w.wakeups, "wakeups on worker {tid}");
        assert_eq!(count(tid, "i:exit"), 1, "worker {tid} exits once");
        completes += count(tid, "i:complete");
        spawns += count(tid, "i:spawn");
    }
    assert_eq!(completes, stats.completed, "completions");
    assert_eq!(spawns, ROUNDS as u64 * 30, "each chain spawns 30 children");
    for phase in ["stopping", "exiting", "joined"] {
        assert_eq!(
            count(WORKERS, &format!("i:shutdown: {phase}")),
            1,
            "{phase}"
        );
    }
    // The main thread's submits and sends, on the outside track, in order.
    assert_eq!(stats.submitted, submitted.len() as u64);
    assert_eq!(tracks.outside_pids("submit"), submitted, "submits");
    assert_eq!(tracks.outside_pids("send"), sent_to, "sends");
    for (name, args) in &tracks.outside {
        if name == "send" {
            assert!(matches!(args.get("woke"), Some(Json::Bool(_))), "{args:?}");
        }
    }
    assert_eq!(count(WORKERS + 1, "i:wake_by_completion"), 0, "no commands");
}

// ---------------------------------------------------------------------------
// Completions from a handler's own thread.

/// Asks once and finishes with the answer.
struct Asker {
    asked: bool,
}

/// The one command: answered by a thread of the test.
struct Ask;

impl Command for Ask {
    fn kind(&self) -> &'static str {
        "ask"
    }
}

impl Process for Asker {
    type Input = ();
    type Message = ();
    type Command = Ask;
    type Reply = u64;
    type Output = u64;
    type Error = String;

    fn init(&mut self, _: &str, _: ()) -> Result<(), String> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        if !self.asked {
            self.asked = true;
            // The tag is the PID's index, so the trace can be checked.
            out.yield_command(u64::from(out.pid().index()), Ask);
            return Ok(()); // waits for the completion
        }
        for event in events.drain(..) {
            if let Event::Completion { result, .. } = event {
                out.done(result.map_err(|e| e.to_string())?);
            }
        }
        Ok(())
    }
}

#[test]
fn completions_from_a_handler_thread_that_wake_a_process_are_traced() {
    const ASKERS: usize = 3;
    let (tx, rx) = mpsc::channel::<Completer<Asker>>();
    let tx = Mutex::new(tx);
    let scheduler = Scheduler::<Asker>::builder()
        .workers(2)
        .trace(1 << 12)
        .handler("ask", move |Ask, completer| {
            tx.lock().unwrap().send(completer).unwrap();
        })
        .build()
        .unwrap();
    let jobs: Vec<_> = (0..ASKERS)
        .map(|_| {
            scheduler
                .submit_joinable(Asker { asked: false }, "ask", ())
                .unwrap()
        })
        .collect();
    let mut expected = Vec::new();
    for _ in 0..ASKERS {
        let completer = rx.recv().unwrap();
        let pid = completer.pid();
        // Answer only once the process waits for it (Blocked): then the
        // completion wakes it, rather than landing during its step.
        wait_until("the asker to block", || {
            (scheduler.processes().iter()).any(|p| p.pid == pid && p.state == Lifecycle::Blocked)
        });
        let answerer = thread::spawn(move || completer.succeed(7).unwrap());
        answerer.join().unwrap();
        expected.push((pid.to_string(), u64::from(pid.index())));
    }
    for job in jobs {
        assert_eq!(job.join(), Ok(7));
    }
    scheduler.shutdown(Duration::from_secs(5));
    let mut json = Vec::new();
    scheduler
        .trace()
        .expect("a trace")
        .write_chrome_json(&mut json)
        .unwrap();
    let tracks = check_tracks(&json, 2);
    let woken: Vec<(String, u64)> = (tracks.outside.iter())
        .filter(|(name, _)| name == "wake_by_completion")
        .map(|(_, args)| {
            let pid = args.get("pid").unwrap().str().to_owned();
            (pid, args.get("tag").unwrap().num() as u64)
        })
        .collect();
    assert_eq!(woken, expected, "one wake per completion, with PID and tag");
    let submits = tracks.outside_pids("submit");
    let pids: Vec<String> = expected.iter().map(|(pid, _)| pid.clone()).collect();
    let mut sorted = submits.clone();
    sorted.sort();
    let mut expected_sorted = pids.clone();
    expected_sorted.sort();
    assert_eq!(sorted, expected_sorted, "every asker's submit");
}

#[test]
fn tracing_can_be_paused_at_run_time_and_steps_stay_paired() {
    const WORKERS: usize = 2;
    let scheduler = Scheduler::<Job>::builder()
        .workers(WORKERS)
        .trace(if cfg!(miri) { 1 << 10 } else { 1 << 16 })
        .build()
        .unwrap();
    let run = |yielders: usize| {
        // Miri interprets every instruction: fewer steps there.
        let steps = if cfg!(miri) { 5 } else { 50 };
        let jobs: Vec<_> = (0..yielders)
            .map(|_| {
                scheduler
                    .submit_joinable(Job::Ping, "yield", steps)
                    .unwrap()
            })
            .collect();
        for job in jobs {
            job.join().unwrap();
        }
    };
    assert!(scheduler.set_tracing(false));
    run(20); // not recorded
    assert!(scheduler.set_tracing(true));
    run(20); // recorded
    scheduler.shutdown(Duration::from_secs(5));
    let steps = scheduler.stats().total().steps;
    let mut json = Vec::new();
    let trace = scheduler.trace().expect("a trace");
    trace.write_chrome_json(&mut json).unwrap();
    let tracks = check_tracks(&json, WORKERS);
    let traced: u64 = (0..WORKERS).map(|tid| tracks.count(tid, "X:step")).sum();
    let per_yielder = if cfg!(miri) { 6 } else { 51 };
    assert!(
        traced >= 20 * per_yielder,
        "the resumed half was traced: {traced}"
    );
    assert!(
        traced < steps,
        "the paused half was not: {traced} of {steps}"
    );
}

#[test]
fn tracing_is_off_by_default_and_set_tracing_needs_the_builder() {
    let scheduler = Scheduler::<Job>::builder().workers(1).build().unwrap();
    assert!(!scheduler.set_tracing(true), "no rings to record into");
    scheduler.shutdown(Duration::from_secs(1));
    assert!(scheduler.trace().is_none());
}
