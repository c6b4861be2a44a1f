//! A subscriber for the tests: the registry and a layer that keeps every
//! span (name, fields, parent, the thread it opened on, whether it closed)
//! and every event, installed once per test binary as the global default
//! (the workers' threads use it). Tests take [`capture`] first: it
//! serialises them and clears what the last one saw.

#![allow(dead_code)] // each test binary uses its own part

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

pub type Fields = HashMap<String, String>;

/// One span, in the order spans were opened.
#[derive(Debug, Clone)]
pub struct SpanSeen {
    pub name: String,
    pub fields: Fields,
    /// The index (in [`Seen::spans`]) of its parent.
    pub parent: Option<usize>,
    /// The name of the thread it was opened on.
    pub thread: String,
    pub closed: bool,
}

/// One event.
#[derive(Debug, Clone)]
pub struct EventSeen {
    pub fields: Fields,
    /// The index (in [`Seen::spans`]) of the span it is in.
    pub parent: Option<usize>,
}

#[derive(Default)]
pub struct Seen {
    pub spans: Vec<SpanSeen>,
    pub events: Vec<EventSeen>,
    /// Open spans' ids (the registry reuses a closed span's id) to their
    /// index in `spans`.
    open: HashMap<u64, usize>,
}

impl Seen {
    /// The spans named `name`, with their indices.
    pub fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = (usize, &'a SpanSeen)> {
        self.spans
            .iter()
            .enumerate()
            .filter(move |(_, s)| s.name == name)
    }

    /// The events whose message is `message`.
    pub fn events_of<'a>(&'a self, message: &'a str) -> impl Iterator<Item = &'a EventSeen> {
        self.events
            .iter()
            .filter(move |e| e.fields.get("message").map(String::as_str) == Some(message))
    }

    /// The `process` span of `pid` (raw), which must be the only one.
    pub fn process(&self, pid: u64) -> (usize, &SpanSeen) {
        let mut found = self
            .named("process")
            .filter(|(_, s)| s.fields["pid"] == pid.to_string());
        let first = found.next().expect("a process span for the pid");
        assert!(found.next().is_none(), "one process span per pid");
        first
    }
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

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Keep {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::new();
        attrs.record(&mut Fill(&mut fields));
        let parent = ctx
            .span(id)
            .and_then(|span| span.parent())
            .map(|parent| parent.id().into_u64());
        let mut seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let parent = parent.and_then(|p| seen.open.get(&p).copied());
        let index = seen.spans.len();
        seen.spans.push(SpanSeen {
            name: attrs.metadata().name().to_owned(),
            fields,
            parent,
            thread: std::thread::current()
                .name()
                .unwrap_or("<unnamed>")
                .to_owned(),
            closed: false,
        });
        seen.open.insert(id.into_u64(), index);
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&index) = seen.open.get(&id.into_u64()) {
            values.record(&mut Fill(&mut seen.spans[index].fields));
        }
    }
    fn on_close(&self, id: Id, _: Context<'_, S>) {
        let mut seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // A span of an earlier test, cleared while open, is not kept.
        if let Some(index) = seen.open.remove(&id.into_u64()) {
            seen.spans[index].closed = true;
        }
    }
    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::new();
        event.record(&mut Fill(&mut fields));
        let parent = ctx.event_span(event).map(|span| span.id().into_u64());
        let mut seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let parent = parent.and_then(|p| seen.open.get(&p).copied());
        seen.events.push(EventSeen { fields, parent });
    }
}

/// Serialises the tests of a binary: they share the global subscriber.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Installs the subscriber (once), waits for the other tests of this
/// binary, and clears what it saw. Hold the guard for the whole test.
pub fn capture() -> (MutexGuard<'static, ()>, Captured) {
    static SEEN: OnceLock<Arc<Mutex<Seen>>> = OnceLock::new();
    let guard = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let seen = SEEN.get_or_init(|| {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let subscriber = tracing_subscriber::registry().with(Keep(Arc::clone(&seen)));
        tracing::subscriber::set_global_default(subscriber).expect("the only global subscriber");
        seen
    });
    {
        let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.spans.clear();
        seen.events.clear();
        seen.open.clear();
    }
    (guard, Captured(Arc::clone(seen)))
}

/// What the layer keeps.
pub struct Captured(Arc<Mutex<Seen>>);

impl Captured {
    /// What the layer has seen so far (a failed test's poison ignored).
    pub fn lock(&self) -> MutexGuard<'_, Seen> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
