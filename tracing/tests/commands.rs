//! Runs handlers wrapped by `Instrumentation::traced`, inline and on the
//! blocking pool, under a subscriber that keeps every span (`support`),
//! and checks each run's `command` span: its fields, its parent (the
//! yielder's `process` span) and the thread it ran on.

mod support;

use std::time::Duration;
use stepsched::process::{Command, Event, Pid, Process, Status, StepOutput};
use stepsched::sched::{Builder, Completer, Scheduler};
use stepsched_tracing::Instrumentation;
use support::{capture, SpanSeen};

/// Asks the handler of `kind` for the name of the thread it runs on.
struct Ask(&'static str);

impl Command for Ask {
    fn kind(&self) -> &'static str {
        self.0
    }
}

/// Yields one [`Ask`] of its kind (tag 7) and ends with the reply.
struct Asker(&'static str);

impl Process for Asker {
    type Input = ();
    type Message = ();
    type Command = Ask;
    type Reply = String;
    type Output = String;
    type Error = String;
    fn init(&mut self, _: &str, _: ()) -> Result<(), String> {
        Ok(())
    }
    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        for event in events.drain(..) {
            if let Event::Completion { result, .. } = event {
                out.done(result.map_err(|e| e.to_string())?);
                return Ok(());
            }
        }
        out.yield_command(7, Ask(self.0));
        out.set_status(Status::Wait);
        Ok(())
    }
}

/// Replies with the name of the thread it runs on.
fn thread_name(_: Ask, completer: Completer<Asker>) {
    let name = std::thread::current()
        .name()
        .unwrap_or("<unnamed>")
        .to_owned();
    let _ = completer.succeed(name);
}

fn scheduler(
    handlers: impl FnOnce(Builder<Asker>, &Instrumentation<Asker>) -> Builder<Asker>,
) -> Scheduler<Asker> {
    let (builder, tracing) = Instrumentation::install(Scheduler::<Asker>::builder().workers(1));
    handlers(builder, &tracing).build().expect("threads start")
}

/// Runs one asker of `kind` to its end; returns its PID and the thread
/// its handler ran on.
fn ask(scheduler: &Scheduler<Asker>, kind: &'static str) -> (Pid, String) {
    let handle = scheduler.submit_joinable(Asker(kind), "ask", ()).unwrap();
    let pid = handle.pid();
    let ran_on = handle
        .join_timeout(Duration::from_secs(10))
        .expect("ends")
        .expect("the handler replies");
    (pid, ran_on)
}

/// The one `command` span, checked against the yielder's `process` span.
fn assert_command(seen: &support::Seen, pid: Pid, kind: &str) -> SpanSeen {
    let (process, _) = seen.process(pid.into_raw());
    let commands: Vec<_> = seen.named("command").map(|(_, s)| s.clone()).collect();
    assert_eq!(commands.len(), 1, "one command span per handler run");
    let command = commands.into_iter().next().unwrap();
    assert_eq!(command.fields["kind"], kind);
    assert_eq!(command.fields["pid"], pid.into_raw().to_string());
    assert_eq!(command.fields["tag"], "7");
    assert_eq!(
        command.parent,
        Some(process),
        "a command nests in its process"
    );
    assert!(command.closed, "closed when the handler returns");
    command
}

#[test]
fn an_inline_command_is_a_span_on_the_worker_inside_its_process_span() {
    let (_one, seen) = capture();
    let scheduler =
        scheduler(|builder, tracing| builder.handler("inline", tracing.traced(thread_name)));
    let (pid, ran_on) = ask(&scheduler, "inline");
    assert!(!scheduler.shutdown(Duration::from_secs(10)).timed_out);
    drop(scheduler);

    let seen = seen.lock();
    let command = assert_command(&seen, pid, "inline");
    assert_eq!(command.thread, ran_on);
    assert_ne!(command.thread, "stepsched-blocking", "on the worker");
}

#[test]
fn a_blocking_command_is_a_span_on_a_pool_thread_inside_its_process_span() {
    let (_one, seen) = capture();
    let scheduler = scheduler(|builder, tracing| {
        builder.blocking_handler("blocking", tracing.traced(thread_name))
    });
    let (pid, ran_on) = ask(&scheduler, "blocking");
    assert!(!scheduler.shutdown(Duration::from_secs(10)).timed_out);
    drop(scheduler);

    let seen = seen.lock();
    let command = assert_command(&seen, pid, "blocking");
    assert_eq!(command.thread, "stepsched-blocking", "on the blocking pool");
    assert_eq!(command.thread, ran_on);
}
