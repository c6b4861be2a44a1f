//! Installs a subscriber layer that keeps every span and event of the
//! `stepsched` target, runs a few steps, and checks what it got.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use stepsched::process::{Event, NoCommand, Process, Status, StepOutput};
use stepsched::sched::Scheduler;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

/// Runs `n` steps, then ends.
struct Steps(u32);

impl Process for Steps {
    type Input = ();
    type Message = ();
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = ();
    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }
    fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
        self.0 -= 1;
        if self.0 == 0 {
            out.done(());
        } else {
            out.set_status(Status::Continue);
        }
        Ok(())
    }
}

type Fields = HashMap<String, String>;

#[derive(Default)]
struct Seen {
    /// Spans by id: name and fields (as recorded so far).
    spans: HashMap<u64, (String, Fields)>,
    /// Ids of closed spans, in order.
    closed: Vec<u64>,
    /// Events: message and fields.
    events: Vec<Fields>,
}

struct Keep(Arc<Mutex<Seen>>);

struct Fill<'a>(&'a mut Fields);

impl Visit for Fill<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
}

impl<S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>> Layer<S>
    for Keep
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
        let mut fields = Fields::new();
        attrs.record(&mut Fill(&mut fields));
        let name = attrs.metadata().name().to_owned();
        self.0
            .lock()
            .unwrap()
            .spans
            .insert(id.into_u64(), (name, fields));
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut seen = self.0.lock().unwrap();
        if let Some((_, fields)) = seen.spans.get_mut(&id.into_u64()) {
            values.record(&mut Fill(fields));
        }
    }
    fn on_close(&self, id: Id, _: Context<'_, S>) {
        self.0.lock().unwrap().closed.push(id.into_u64());
    }
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let mut fields = Fields::new();
        event.record(&mut Fill(&mut fields));
        self.0.lock().unwrap().events.push(fields);
    }
}

#[test]
fn steps_are_spans_with_pid_worker_and_status_and_ends_are_events() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let subscriber = tracing_subscriber::registry().with(Keep(Arc::clone(&seen)));
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber of this test");

    let scheduler = stepsched_tracing::instrument(Scheduler::<Steps>::builder())
        .workers(2)
        .build()
        .unwrap();
    let handle = scheduler.submit_joinable(Steps(3), "steps", ()).unwrap();
    let pid = handle.pid();
    handle
        .join_timeout(Duration::from_secs(10))
        .expect("ends")
        .unwrap();
    assert!(!scheduler.shutdown(Duration::from_secs(10)).timed_out);

    let seen = seen.lock().unwrap();
    let mut steps: Vec<(&u64, &Fields)> = seen
        .spans
        .iter()
        .filter(|(_, (name, _))| name == "step")
        .map(|(id, (_, fields))| (id, fields))
        .collect();
    steps.sort_by_key(|(id, _)| seen.closed.iter().position(|c| c == *id));
    assert_eq!(steps.len(), 3, "one span per step");
    let statuses: Vec<&str> = steps.iter().map(|(_, f)| f["status"].as_str()).collect();
    assert_eq!(statuses, ["continue", "continue", "done"]);
    for (id, fields) in &steps {
        assert!(seen.closed.contains(id), "every step span is closed");
        assert_eq!(fields["pid"], pid.into_raw().to_string());
        assert!(fields["worker"] == "0" || fields["worker"] == "1");
        assert_eq!(fields["events"], "0");
        assert!(fields.contains_key("duration_ns"));
    }
    let ends: Vec<&Fields> = seen
        .events
        .iter()
        .filter(|e| e.get("message").map(String::as_str) == Some("process ended"))
        .collect();
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0]["pid"], pid.into_raw().to_string());
    assert_eq!(ends[0]["outcome"], "ok");
}
