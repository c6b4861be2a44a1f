//! The builder's command handlers: registered by kind, run on the worker
//! that dispatched the command or on the blocking pool, and the pool's
//! settings.

use super::Builder;
use crate::process::Process;
use crate::sched::commands::handler::{Completer, Handler};
use std::sync::Arc;
use std::time::Duration;

impl<P: Process> Builder<P> {
    /// Registers `handler` for commands of `kind`. It runs on the worker
    /// right after the step that yielded the command, and must not block:
    /// register a handler that blocks with
    /// [`blocking_handler`](Builder::blocking_handler), or hand slow work to
    /// another thread and complete from there. A later registration for the
    /// same kind, of either sort, replaces this one.
    pub fn handler(
        mut self,
        kind: &'static str,
        handler: impl Fn(P::Command, Completer<P>) + Send + Sync + 'static,
    ) -> Self {
        self.handlers
            .insert(kind, Handler::Inline(Box::new(handler)));
        self
    }

    /// Registers `handler` for commands of `kind`, to run on the blocking
    /// pool: threads apart from the workers, so a handler that blocks (a
    /// file read, a database call, a synchronous host function) holds no
    /// worker. The worker that dispatches the command only queues it and
    /// goes on with other processes. Same signature and completion contract
    /// as [`handler`](Builder::handler): complete through the
    /// [`Completer`], from the handler or any other thread, now or later; a
    /// completer dropped without completing delivers
    /// [`CommandError::Dropped`](crate::process::CommandError::Dropped).
    ///
    /// Threads start on demand (a command arrives and none is idle), up to
    /// [`max_blocking_threads`](Builder::max_blocking_threads); beyond that
    /// commands wait in FIFO order. Idle threads exit after
    /// [`blocking_keep_alive`](Builder::blocking_keep_alive).
    ///
    /// A panic in the handler is contained: the thread goes on, and the
    /// command, if the handler still held its completer, completes with
    /// [`CommandError::Panicked`](crate::process::CommandError::Panicked)
    /// and the panic's message. (A panicking handler on a worker ends its
    /// process; here the process is elsewhere, so it gets the error and
    /// decides.) At shutdown, commands still queued complete with
    /// [`CommandError::Cancelled`](crate::process::CommandError::Cancelled);
    /// running ones are waited for until the shutdown's timeout, then
    /// abandoned (see [`ShutdownReport`](crate::sched::ShutdownReport)). `stats()`
    /// shows the pool in [`Stats::blocking`](crate::sched::Stats::blocking).
    ///
    /// ```
    /// use std::time::Duration;
    /// use stepsched::process::{Command, Event, Process, Status, StepOutput};
    /// use stepsched::sched::Scheduler;
    ///
    /// /// Reads a file without holding a worker.
    /// struct ReadFile(&'static str);
    /// impl Command for ReadFile {
    ///     fn kind(&self) -> &'static str { "read_file" }
    /// }
    ///
    /// /// Asks for one file and finishes with its length.
    /// struct Reader;
    /// impl Process for Reader {
    ///     type Input = ();
    ///     type Message = ();
    ///     type Command = ReadFile;
    ///     type Reply = usize;
    ///     type Output = usize;
    ///     type Error = String;
    ///     fn init(&mut self, _: &str, _: ()) -> Result<(), String> { Ok(()) }
    ///     fn step(&mut self, events: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>)
    ///         -> Result<(), String>
    ///     {
    ///         for event in events.drain(..) {
    ///             if let Event::Completion { result, .. } = event {
    ///                 out.done(result.map_err(|e| e.to_string())?);
    ///                 return Ok(());
    ///             }
    ///         }
    ///         out.yield_command(1, ReadFile("Cargo.toml"));
    ///         out.set_status(Status::Wait);
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let scheduler = Scheduler::<Reader>::builder()
    ///     .workers(2)
    ///     .blocking_handler("read_file", |ReadFile(path), completer| {
    ///         // Stands in for `std::fs::read(path)`: it blocks this pool
    ///         // thread only, never a worker.
    ///         std::thread::sleep(Duration::from_millis(20));
    ///         let _ = completer.succeed(path.len());
    ///     })
    ///     .max_blocking_threads(64)
    ///     .blocking_keep_alive(Duration::from_secs(5))
    ///     .build()?;
    /// let reader = scheduler.submit_joinable(Reader, "read", ()).unwrap();
    /// assert_eq!(reader.join(), Ok("Cargo.toml".len()));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn blocking_handler(
        mut self,
        kind: &'static str,
        handler: impl Fn(P::Command, Completer<P>) + Send + Sync + 'static,
    ) -> Self {
        self.handlers
            .insert(kind, Handler::Blocking(Arc::new(handler)));
        self
    }

    /// The most threads the blocking pool runs at once (default
    /// [`DEFAULT_MAX_BLOCKING_THREADS`](crate::sched::DEFAULT_MAX_BLOCKING_THREADS),
    /// 512, tokio's); commands beyond it wait in FIFO order. Must be at
    /// least 1: [`build`](Builder::build) refuses 0. `usize::MAX` is taken:
    /// no limit (a thread for every command that finds none idle).
    pub fn max_blocking_threads(mut self, threads: usize) -> Self {
        self.max_blocking_threads = threads;
        self
    }

    /// How long an idle blocking-pool thread waits for a command before it
    /// exits (default
    /// [`DEFAULT_BLOCKING_KEEP_ALIVE`](crate::sched::DEFAULT_BLOCKING_KEEP_ALIVE),
    /// 10 s, tokio's). Any duration is taken: `Duration::ZERO` lets a
    /// thread exit as soon as it finds no command waiting (the next command
    /// starts a new one), and `Duration::MAX` keeps idle threads until
    /// shutdown.
    pub fn blocking_keep_alive(mut self, keep_alive: Duration) -> Self {
        self.blocking_keep_alive = keep_alive;
        self
    }
}
