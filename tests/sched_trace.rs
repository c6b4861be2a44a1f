//! The execution tracer: a traced run exports Chrome trace-event JSON that
//! parses back (with the small parser below) into per-worker tracks where
//! every step has a begin and an end on one worker, timestamps never go
//! back, and the event counts equal the scheduler's own `stats()`; and
//! recording paused at run time leaves no step half-recorded.
//!
//! ```text
//! cargo test --test sched_trace
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use stepsched::process::{Event, NoCommand, Pid, Process, Status, StepOutput};
use stepsched::sched::Scheduler;

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
// A mixed workload: ping-pong pairs, yielders and spawn chains.

enum Job {
    Yield(u32),
    Chain(u32),
    Ping,
}

impl Process for Job {
    type Input = u32;
    type Message = (Pid, u32);
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = String;

    fn init(&mut self, method: &str, n: u32) -> Result<(), String> {
        *self = match method {
            "yield" => Job::Yield(n),
            "chain" => Job::Chain(n),
            _ => Job::Ping,
        };
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        match self {
            Job::Yield(0) => out.done(()),
            Job::Yield(n) => {
                *n -= 1;
                out.set_status(Status::Continue);
            }
            Job::Chain(n) => {
                if *n > 0 {
                    out.spawn(Job::Ping, "chain", *n - 1)
                        .map_err(|e| e.to_string())?;
                }
                out.done(());
            }
            Job::Ping => {
                for event in events.drain(..) {
                    if let Event::Message((from, n)) = event {
                        if n > 0 {
                            out.send(from, (out.pid(), n - 1));
                        }
                        if n <= 1 {
                            out.done(());
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Parses an exported trace and checks its structure: per track,
/// timestamps never go back and steps are `B`/`E` pairs, never nested, all
/// closed; one named track per worker plus `scheduler`. Returns, per track,
/// the number of events by `ph:name`.
fn check_tracks(json: &[u8], workers: usize) -> Vec<BTreeMap<String, u64>> {
    let root = Parser::parse(std::str::from_utf8(json).unwrap());
    let Some(Json::Arr(events)) = root.get("traceEvents") else {
        panic!("no traceEvents array");
    };
    // Per track: the last timestamp, whether a step is open, and counts by
    // event name.
    let mut last_ts = vec![f64::MIN; workers + 1];
    let mut open: Vec<Option<String>> = vec![None; workers];
    let mut counts: Vec<BTreeMap<String, u64>> = vec![BTreeMap::new(); workers + 1];
    let mut track_names = BTreeMap::new();
    for event in events {
        let ph = event.get("ph").expect("ph").str();
        let tid = event.get("tid").expect("tid").num() as usize;
        assert!(tid <= workers, "tid {tid}");
        let name = event.get("name").expect("name").str().to_owned();
        if ph == "M" {
            let args = event.get("args").expect("metadata args");
            track_names.insert(tid, args.get("name").unwrap().str().to_owned());
            continue;
        }
        let ts = event.get("ts").expect("ts").num();
        assert!(
            ts >= last_ts[tid],
            "timestamps go back on track {tid}: {event:?}"
        );
        last_ts[tid] = ts;
        *counts[tid].entry(format!("{ph}:{name}")).or_default() += 1;
        match ph {
            "B" => {
                let pid = event.get("args").unwrap().get("pid").unwrap().str();
                assert!(open[tid].is_none(), "nested step on worker {tid}");
                open[tid] = Some(pid.to_owned());
            }
            "E" => {
                assert!(
                    open[tid].take().is_some(),
                    "end without begin on worker {tid}"
                );
            }
            "i" => {}
            other => panic!("unexpected phase {other}"),
        }
    }
    assert!(open.iter().all(Option::is_none), "every step ended");
    assert_eq!(track_names.len(), workers + 1);
    assert_eq!(track_names[&workers], "scheduler");

    counts
}

#[test]
fn the_exported_trace_parses_back_and_matches_stats() {
    const WORKERS: usize = 2;
    let scheduler = Scheduler::<Job>::builder()
        .workers(WORKERS)
        .trace(1 << 18)
        .build()
        .unwrap();
    let mut jobs = Vec::new();
    for _ in 0..10 {
        let a = scheduler.submit_joinable(Job::Ping, "ping", 0).unwrap();
        let b = scheduler.submit_joinable(Job::Ping, "ping", 0).unwrap();
        scheduler.send(a.pid(), (b.pid(), 100)).unwrap();
        jobs.extend([a, b]);
        for _ in 0..10 {
            jobs.push(scheduler.submit_joinable(Job::Ping, "yield", 10).unwrap());
        }
        jobs.push(scheduler.submit_joinable(Job::Ping, "chain", 30).unwrap());
    }
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

    let counts = check_tracks(&json, WORKERS);
    let count = |tid: usize, key: &str| counts[tid].get(key).copied().unwrap_or(0);
    let mut completes = 0;
    for (tid, w) in stats.workers.iter().enumerate() {
        assert_eq!(count(tid, "B:step"), w.steps, "steps on worker {tid}");
        assert_eq!(count(tid, "E:step"), w.steps, "step ends on worker {tid}");
        assert_eq!(count(tid, "i:steal"), w.steals, "steals on worker {tid}");
        assert_eq!(count(tid, "i:global_take"), w.global_takes, "worker {tid}");
        assert_eq!(count(tid, "i:inject_take"), w.inject_takes, "worker {tid}");
        assert_eq!(count(tid, "i:spin"), w.spins, "spins on worker {tid}");
        assert_eq!(count(tid, "i:park"), w.parks, "parks on worker {tid}");
        assert_eq!(count(tid, "i:unpark"), w.wakeups, "wakeups on worker {tid}");
        assert_eq!(count(tid, "i:exit"), 1, "worker {tid} exits once");
        completes += count(tid, "i:complete");
    }
    assert_eq!(completes, stats.completed, "completions");
    for phase in ["stopping", "exiting", "joined"] {
        assert_eq!(
            count(WORKERS, &format!("i:shutdown: {phase}")),
            1,
            "{phase}"
        );
    }
}

#[test]
fn tracing_can_be_paused_at_run_time_and_steps_stay_paired() {
    const WORKERS: usize = 2;
    let scheduler = Scheduler::<Job>::builder()
        .workers(WORKERS)
        .trace(1 << 16)
        .build()
        .unwrap();
    let run = |yielders: usize| {
        let jobs: Vec<_> = (0..yielders)
            .map(|_| scheduler.submit_joinable(Job::Ping, "yield", 50).unwrap())
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
    let counts = check_tracks(&json, WORKERS);
    let traced: u64 = counts
        .iter()
        .map(|c| c.get("B:step").copied().unwrap_or(0))
        .sum();
    assert!(traced >= 20 * 51, "the resumed half was traced: {traced}");
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
