//! Command dispatch: handlers registered by kind, and the [`Completer`]
//! through which a handler answers, from any thread, now or later.
//!
//! A handler runs on the worker right after the step that yielded its
//! command, unless it was registered as a blocking handler: then the
//! worker queues the command for the blocking pool (`blocking.rs`) and
//! goes on.

use crate::process::state::Wake;
use crate::process::{panic_message, CommandError, Event, Pid, Process};
use crate::sched::commands::blocking::{Pool, Run};
use crate::sched::error::CompleteError;
use crate::sched::observe::trace::Kind as TraceKind;
use crate::sched::shared::Shared;
use core::cell::Cell;
use core::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// A command handler: takes the command and the completer for its tag.
pub(crate) enum Handler<P: Process> {
    /// Runs on the worker, right after the step that yielded the command.
    Inline(Box<dyn Fn(P::Command, Completer<P>) + Send + Sync>),
    /// Runs on the blocking pool (`blocking.rs`); the worker only queues
    /// the command.
    Blocking(Arc<BlockingFn<P>>),
}

impl<P: Process> Handler<P> {
    /// Hands `command` to the handler: calls it here, or queues it for the
    /// blocking pool (which never waits for a handler).
    #[inline]
    pub(crate) fn dispatch(&self, command: P::Command, completer: Completer<P>) {
        match self {
            Handler::Inline(handler) => handler(command, completer),
            Handler::Blocking(handler) => {
                let pool = Arc::clone(&completer.shared.commands.blocking);
                pool.submit(Job::new(Arc::clone(handler), command, completer));
            }
        }
    }
}

/// The handlers, by command kind. Looked up by a linear scan: schedulers
/// have a handful of kinds, and a scan of a few `&str` beats hashing.
pub(crate) struct Handlers<P: Process> {
    by_kind: Vec<(&'static str, Handler<P>)>,
}

impl<P: Process> Handlers<P> {
    pub(crate) fn new() -> Self {
        Handlers {
            by_kind: Vec::new(),
        }
    }

    /// Registers `handler` for `kind`, replacing an earlier one.
    pub(crate) fn insert(&mut self, kind: &'static str, handler: Handler<P>) {
        self.by_kind.retain(|(k, _)| *k != kind);
        self.by_kind.push((kind, handler));
    }

    pub(crate) fn get(&self, kind: &str) -> Option<&Handler<P>> {
        self.by_kind
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, h)| h)
    }
}

/// Completes one yielded command: hand it to a handler, which calls
/// [`complete`](Completer::complete) (or [`succeed`](Completer::succeed) /
/// [`fail`](Completer::fail)) from any thread, immediately or later.
///
/// A completer dropped without completing delivers
/// [`CommandError::Dropped`], so a process never waits for a reply that
/// cannot come.
///
/// A completer keeps the scheduler's shared state alive (the queues, the
/// process table, the handlers) until it is completed or dropped, also
/// after `shutdown`: completing it then is refused, as for any ended
/// process. So a handler that stores completers somewhere the scheduler
/// itself owns (in its own closure's captured state, say) makes a cycle
/// that frees nothing until it lets them go: complete or drop what you
/// keep, at the latest when the scheduler is shut down.
pub struct Completer<P: Process> {
    shared: Arc<Shared<P>>,
    pid: Pid,
    tag: u64,
    done: bool,
}

/// The completion a [`Completer`] carries.
pub type Completion<P> = Result<<P as Process>::Reply, CommandError>;

impl<P: Process> Completer<P> {
    pub(crate) fn new(shared: Arc<Shared<P>>, pid: Pid, tag: u64) -> Self {
        Completer {
            shared,
            pid,
            tag,
            done: false,
        }
    }

    /// The process that yielded the command.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// The tag the process gave the command.
    pub fn tag(&self) -> u64 {
        self.tag
    }

    /// A completer for the same command that delivers nothing unless it is
    /// completed: the blocking pool keeps one while a handler runs, to
    /// answer for a completer its panic dropped (see `blocking.rs`).
    pub(crate) fn twin(&self) -> Self {
        Completer {
            shared: Arc::clone(&self.shared),
            pid: self.pid,
            tag: self.tag,
            done: true,
        }
    }

    /// Delivers the completion and wakes the process if it waits for it.
    ///
    /// # Errors
    ///
    /// The completion comes back if the process has ended or the scheduler
    /// has stopped. (A process that ends after the completion was queued
    /// reports it through `Builder::on_undelivered`.)
    pub fn complete(mut self, result: Completion<P>) -> Result<(), CompleteError<Completion<P>>> {
        self.done = true;
        self.deliver(result)
    }

    /// Shorthand for `complete(Ok(reply))`.
    ///
    /// # Errors
    ///
    /// As [`Completer::complete`].
    pub fn succeed(self, reply: P::Reply) -> Result<(), CompleteError<Completion<P>>> {
        self.complete(Ok(reply))
    }

    /// Shorthand for `complete(Err(CommandError::Failed(error.into())))`.
    ///
    /// # Errors
    ///
    /// As [`Completer::complete`].
    pub fn fail(
        self,
        error: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Result<(), CompleteError<Completion<P>>> {
        self.complete(Err(CommandError::Failed(error.into())))
    }

    fn deliver(&self, result: Completion<P>) -> Result<(), CompleteError<Completion<P>>> {
        let event = Event::Completion {
            tag: self.tag,
            result,
        };
        match self
            .shared
            .deliver_remote(self.pid, event, Wake::Completion)
        {
            Ok(woke) => {
                if woke {
                    let kind = TraceKind::WakeCompletion;
                    self.shared.trace_outside(kind, self.pid, self.tag, 0);
                }
                Ok(())
            }
            Err((refusal, event)) => {
                let Event::Completion { result, .. } = event else {
                    unreachable!("deliver hands back the event it was given")
                };
                Err(if refusal.is_shutdown() {
                    CompleteError::ShuttingDown(result)
                } else {
                    CompleteError::Finished(result)
                })
            }
        }
    }
}

impl<P: Process> Drop for Completer<P> {
    fn drop(&mut self) {
        if !self.done {
            let error = if std::thread::panicking() {
                if defer_panicked(self.pid, self.tag) {
                    return; // the pool completes it, with the panic's message
                }
                CommandError::Panicked("the handler panicked holding the completer".to_owned())
            } else {
                CommandError::Dropped
            };
            // Nothing to hand back to: a refusal here means the process is
            // gone, and then no one waits for this completion.
            let _ = self.deliver(Err(error));
        }
    }
}

impl<P: Process> fmt::Debug for Completer<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Completer")
            .field("pid", &self.pid)
            .field("tag", &self.tag)
            .finish_non_exhaustive()
    }
}

/// The commands room's part of the shared state.
pub(crate) struct Commands<P: Process> {
    pub(crate) handlers: Handlers<P>,
    /// Runs blocking handlers (`blocking.rs`). Its threads hold this `Arc`,
    /// not the shared state.
    pub(crate) blocking: Arc<Pool<Job<P>>>,
}

/// A blocking handler, shared by the registration and every queued call.
pub(crate) type BlockingFn<P> =
    dyn Fn(<P as Process>::Command, Completer<P>) + Send + Sync + 'static;

/// One command on its way to a blocking handler.
pub(crate) struct Job<P: Process> {
    handler: Arc<BlockingFn<P>>,
    command: P::Command,
    completer: Completer<P>,
}

impl<P: Process> Job<P> {
    pub(crate) fn new(
        handler: Arc<BlockingFn<P>>,
        command: P::Command,
        completer: Completer<P>,
    ) -> Self {
        Job {
            handler,
            command,
            completer,
        }
    }
}

impl<P: Process> Run for Job<P> {
    /// Calls the handler, containing its panic (the blocking pool's docs,
    /// "Panics").
    fn run(self) {
        let Job {
            handler,
            command,
            completer,
        } = self;
        let key = (completer.pid(), completer.tag());
        // Delivers nothing unless completed: used only if the handler
        // panics while it still holds the completer.
        let twin = completer.twin();
        RUNNING.with(|running| running.set(Some(key)));
        let result = catch_unwind(AssertUnwindSafe(move || handler(command, completer)));
        RUNNING.with(|running| running.set(None));
        let deferred = DEFERRED.with(|deferred| deferred.replace(false));
        // Nothing to hand back to if a completion is refused: the process
        // has ended, and no one waits for it.
        match result {
            Err(payload) => {
                let message = panic_message(&*payload);
                drop_contained(payload);
                if deferred {
                    let _ = twin.complete(Err(CommandError::Panicked(message)));
                }
            }
            // The handler caught a panic of its own that dropped the
            // completer: it still must not go unanswered.
            Ok(()) if deferred => {
                let message = "the handler panicked holding the completer".to_owned();
                let _ = twin.complete(Err(CommandError::Panicked(message)));
            }
            Ok(()) => {}
        }
    }

    /// Completes the command with `error` without running it. The command
    /// is dropped first, contained: its `Drop` is the embedder's code, and
    /// this runs on a worker or on the thread shutting down.
    fn refuse(self, error: CommandError) {
        let Job {
            command, completer, ..
        } = self;
        if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(command))) {
            drop_contained(payload);
        }
        let _ = completer.complete(Err(error));
    }
}

/// Drops a panic payload whose own `Drop` may panic (leaking the second).
fn drop_contained(payload: Box<dyn std::any::Any + Send>) {
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        core::mem::forget(again);
    }
}

std::thread_local! {
    /// On a pool thread, while a handler runs: its command's PID and tag.
    static RUNNING: Cell<Option<(Pid, u64)>> = const { Cell::new(None) };
    /// Set by [`defer_panicked`]: the running command's completer was
    /// dropped by a panic's unwinding, and the pool completes it.
    static DEFERRED: Cell<bool> = const { Cell::new(false) };
}

/// Called by a [`Completer`] dropped without completing while its thread
/// panics: whether the pool takes the completion over (true only on the
/// pool thread that runs that very command's handler), so that it can
/// carry the panic's message, which the drop cannot see. Elsewhere (a
/// worker, the embedder's own threads) the completer delivers as usual.
pub(crate) fn defer_panicked(pid: Pid, tag: u64) -> bool {
    let ours = RUNNING
        .try_with(|running| running.get() == Some((pid, tag)))
        .unwrap_or(false);
    if ours {
        DEFERRED.with(|deferred| deferred.set(true));
    }
    ours
}
