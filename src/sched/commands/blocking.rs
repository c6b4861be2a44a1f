//! The blocking pool: threads apart from the workers that run the handlers
//! registered with [`Builder::blocking_handler`](crate::sched::Builder::blocking_handler).
//!
//! A handler registered with [`Builder::handler`](crate::sched::Builder::handler)
//! runs on the worker, right after the step that yielded its command; one
//! that blocks (a file read, a database call, a synchronous VM host
//! function) holds that worker and every process queued behind it. A
//! blocking handler is called here instead: the worker's dispatch only
//! pushes the command onto this pool's queue and goes on with its next
//! process. The completion comes back through the same [`Completer`] as
//! from any other thread.
//!
//! # Threads
//!
//! Elastic, like tokio's `spawn_blocking` pool: no thread at build. A
//! command that arrives when no thread is idle starts one, up to
//! `max_blocking_threads` (default 512); beyond that, commands wait in
//! FIFO order and each thread takes the oldest when its handler returns.
//! A thread that stays idle for `blocking_keep_alive` (default 10 s)
//! exits. A dispatch that starts a thread pays the thread's creation (a
//! `clone` syscall, tens of µs) on its worker; that happens only while the
//! pool grows. A dispatch never waits for a handler.
//!
//! # Why a lock
//!
//! The queue is a `VecDeque` under a `Mutex`, and idle threads wait on a
//! `Condvar`: the rest of the crate is lock-free because a step costs
//! ~100 ns, but a blocking handler is slow by nature (it exists because the
//! call blocks, for micro- to milliseconds), so an uncontended lock and a
//! futex wake (a few µs at most) are noise beside it, and the lock keeps
//! the counts below exact. No worker ever waits on it for long: it is held
//! for a few field updates, never across user code.
//!
//! The counts, all under the lock:
//!
//! - `threads`: started and not yet exited (a thread being created counts);
//! - `running`: threads inside a handler;
//! - `idle`: threads waiting for work that no notify has claimed yet;
//! - `notified`: notifies sent and not yet taken by a waiting thread.
//!
//! A waiting thread is counted in `idle` or, once a submit has claimed it,
//! in `notified`: `idle + notified` is the number of waiting threads. A
//! submit that finds `idle > 0` moves one from `idle` to `notified` and
//! signals the condvar; a waking thread that finds `notified > 0` takes
//! one and looks at the queue. Which thread takes the token does not
//! matter (a spurious or timed-out waker may take it before the signalled
//! one, which then waits on as an idle thread); the counts stay true.
//! Every command queued is run: a thread waits only after it saw the queue
//! empty (under the lock), and every push after that either claims a
//! waiting thread, starts one, or finds every thread busy (each looks at
//! the queue again when its handler returns). A thread whose keep-alive
//! passes takes a pending token if there is one (so no claim is lost) and
//! otherwise leaves `idle` and exits.
//!
//! # Panics
//!
//! A panic in a blocking handler is contained, as on a worker, but the
//! process cannot be ended with it as a worker does: the process is not on
//! this thread (it went on when the command was queued, and may be
//! stepping elsewhere). So the command completes instead, with
//! [`CommandError::Panicked`] carrying the panic's message, and the process
//! decides. (That is the completion a worker-side completer dropped by the
//! unwinding delivers too, with a generic message; here the pool takes
//! that drop over to give the real one: see [`defer_panicked`].) A handler
//! that completed before panicking, or handed its completer to another
//! thread, has given its answer already, and nothing more is sent. The
//! thread goes on with the next command.
//!
//! # Shutdown
//!
//! [`Pool::close`] (when shutdown begins): queued commands complete with
//! [`CommandError::Cancelled`] and are counted; commands dispatched from
//! then on are cancelled at once, and counted too. [`Pool::finish`] (after
//! the processes): running handlers are waited for until the shutdown's
//! deadline; those still running then are abandoned (their threads are
//! detached; a completion they make later is refused with
//! [`CompleteError::ShuttingDown`](crate::sched::CompleteError::ShuttingDown)) and
//! counted. Pool threads are never joined: a thread holds only the pool
//! (never the scheduler's shared state, except through the completer of the
//! command it runs), and after its last count it runs no user code.

use crate::process::CommandError;
use crate::sched::observe::stats::BlockingStats;
use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The default of [`Builder::max_blocking_threads`](crate::sched::Builder::max_blocking_threads),
/// tokio's.
pub const DEFAULT_MAX_BLOCKING_THREADS: usize = 512;

/// The default of [`Builder::blocking_keep_alive`](crate::sched::Builder::blocking_keep_alive),
/// tokio's.
pub const DEFAULT_BLOCKING_KEEP_ALIVE: Duration = Duration::from_secs(10);

/// How long [`Pool::finish`] waits, past the deadline, for threads that are
/// in no handler to exit. They run no user code on the way out, so they
/// leave as soon as the OS runs them; the bound only keeps a starved
/// machine from holding `shutdown` (such a thread is then counted as
/// abandoned).
const EXIT_GRACE: Duration = Duration::from_secs(1);

/// The pool's settings, from the builder.
#[derive(Debug, Clone)]
pub(crate) struct PoolConfig {
    /// At least 1 (`Builder::build` refuses 0).
    pub(crate) max_threads: usize,
    pub(crate) keep_alive: Duration,
    /// The workers' stack size, used for pool threads too.
    pub(crate) stack_size: Option<usize>,
    /// A simulation's pool (`simulation/`): no threads; the driver runs
    /// the queued commands ([`Pool::run_simulated`]).
    pub(crate) simulated: bool,
}

/// What the pool runs: one command for a blocking handler (the commands
/// room's job). The pool knows only these two ways to end one.
pub(crate) trait Run: Send + 'static {
    /// Runs the command on this pool thread; contains the handler's panic.
    fn run(self);
    /// Completes the command with `error` without running it.
    fn refuse(self, error: CommandError);
}

/// The pool. See the [module docs](self).
pub(crate) struct Pool<J: Run> {
    state: Mutex<State<J>>,
    /// Idle threads wait here for a command, their keep-alive or the close.
    work: Condvar,
    /// [`Pool::finish`] waits here, once closed, for handlers to return and
    /// threads to exit.
    changed: Condvar,
    config: PoolConfig,
}

/// Everything under the pool's lock (counts: module docs).
struct State<J> {
    queue: VecDeque<J>,
    threads: usize,
    running: usize,
    idle: usize,
    notified: usize,
    /// Set once, by [`Pool::close`].
    closed: bool,
    /// Commands completed with [`CommandError::Cancelled`].
    cancelled: usize,
}

/// What [`Pool::finish`] counted, for the shutdown report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Finished {
    /// Commands completed with [`CommandError::Cancelled`].
    pub(crate) cancelled: usize,
    /// Threads left behind: still in a handler at the deadline.
    pub(crate) abandoned: usize,
}

impl<J: Run> Pool<J> {
    pub(crate) fn new(config: PoolConfig) -> Self {
        Pool {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                threads: 0,
                running: 0,
                idle: 0,
                notified: 0,
                closed: false,
                cancelled: 0,
            }),
            work: Condvar::new(),
            changed: Condvar::new(),
            config,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<J>> {
        // No user code runs under the lock, so it is never poisoned by
        // one; if it were, the counts are still whole (each update is a
        // plain field write).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `job` for a pool thread: claims an idle thread, or starts one
    /// if there are fewer than the maximum, or leaves it for the first
    /// thread that is done. Never waits for a handler. After
    /// [`close`](Pool::close), completes it with
    /// [`CommandError::Cancelled`] instead.
    pub(crate) fn submit(self: &Arc<Self>, job: J) {
        let mut state = self.lock();
        if state.closed {
            state.cancelled += 1;
            drop(state);
            return job.refuse(CommandError::Cancelled);
        }
        state.queue.push_back(job);
        if self.config.simulated {
            return; // the simulation's driver runs it
        }
        if state.idle > 0 {
            state.idle -= 1;
            state.notified += 1;
            drop(state);
            self.work.notify_one();
        } else if state.threads < self.config.max_threads {
            state.threads += 1;
            drop(state);
            if let Err(error) = self.spawn() {
                self.spawn_failed(&error);
            }
        }
        // Else every thread is busy, and the first one done takes it.
    }

    fn spawn(self: &Arc<Self>) -> io::Result<()> {
        let pool = Arc::clone(self);
        let mut thread = std::thread::Builder::new().name("stepsched-blocking".to_owned());
        if let Some(bytes) = self.config.stack_size {
            thread = thread.stack_size(bytes);
        }
        // Detached: see the module docs, "Shutdown".
        thread.spawn(move || pool.serve()).map(drop)
    }

    /// A thread counted in `threads` could not be created. If another
    /// thread lives, it will take the queue; if none does, nothing would,
    /// so the queued commands fail with the reason.
    fn spawn_failed(&self, error: &io::Error) {
        let mut state = self.lock();
        state.threads -= 1;
        if state.closed {
            self.changed.notify_all(); // `finish` may count this thread
        }
        if state.threads > 0 {
            return;
        }
        let stranded: Vec<J> = state.queue.drain(..).collect();
        drop(state);
        for job in stranded {
            let why = format!("no thread could be started for a blocking handler: {error}");
            job.refuse(CommandError::Failed(why.into()));
        }
    }

    /// A pool thread: runs queued commands, oldest first; waits when there
    /// are none; exits after the keep-alive, or once closed and idle.
    fn serve(&self) {
        let mut state = self.lock();
        loop {
            if let Some(job) = state.queue.pop_front() {
                state.running += 1;
                drop(state);
                job.run();
                state = self.lock();
                state.running -= 1;
                if state.closed {
                    self.changed.notify_all();
                }
                continue;
            }
            if state.closed {
                break;
            }
            state.idle += 1;
            let deadline = crate::sched::core::clock::deadline(self.config.keep_alive);
            let claimed = loop {
                if state.notified > 0 {
                    state.notified -= 1;
                    break true;
                }
                let now = Instant::now();
                if state.closed || now >= deadline {
                    state.idle -= 1;
                    break false;
                }
                state = (self.work.wait_timeout(state, deadline - now))
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            };
            if !claimed {
                break;
            }
        }
        state.threads -= 1;
        if state.closed {
            self.changed.notify_all();
        }
    }

    /// How many commands wait in a simulation's pool.
    pub(crate) fn simulated_jobs(&self) -> usize {
        if !self.config.simulated {
            return 0;
        }
        self.lock().queue.len()
    }

    /// Runs the queued command at `pick` (below
    /// [`simulated_jobs`](Pool::simulated_jobs)) on this thread: a
    /// simulation's pool thread, which completes its commands in any order.
    /// `fail`: an injected fault (`Faults::failed_commands`) completes it
    /// with `CommandError::Failed` instead.
    pub(crate) fn run_simulated(&self, pick: usize, fail: bool) {
        let mut state = self.lock();
        let Some(job) = state.queue.remove(pick) else {
            return;
        };
        if fail {
            drop(state);
            let why = "stepsched simulation: an injected fault";
            return job.refuse(CommandError::Failed(why.into()));
        }
        state.running += 1;
        drop(state);
        job.run();
        self.lock().running -= 1;
    }

    /// Shutdown's first half: refuse new commands, cancel the queued ones.
    pub(crate) fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        let queued = core::mem::take(&mut state.queue);
        state.cancelled += queued.len();
        drop(state);
        self.work.notify_all();
        for job in queued {
            job.refuse(CommandError::Cancelled);
        }
    }

    /// Shutdown's second half (after [`close`](Pool::close)): waits until
    /// no handler runs or `deadline` passes, then for the idle threads to
    /// exit; the threads still alive are abandoned.
    pub(crate) fn finish(&self, deadline: Instant) -> Finished {
        let mut state = self.lock();
        debug_assert!(state.closed, "Pool::finish before Pool::close");
        state = self.wait_while(state, deadline, |s| s.running > 0);
        let exit_by = Instant::now() + EXIT_GRACE;
        state = self.wait_while(state, exit_by, |s| s.threads > s.running);
        Finished {
            cancelled: state.cancelled,
            abandoned: state.threads,
        }
    }

    fn wait_while<'a>(
        &'a self,
        mut state: MutexGuard<'a, State<J>>,
        deadline: Instant,
        waiting: impl Fn(&State<J>) -> bool,
    ) -> MutexGuard<'a, State<J>> {
        while waiting(&state) {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            state = (self.changed.wait_timeout(state, deadline - now))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        state
    }

    /// The counts now, for [`Stats`](crate::sched::Stats).
    pub(crate) fn stats(&self) -> BlockingStats {
        let state = self.lock();
        BlockingStats {
            threads: state.threads,
            busy: state.running,
            queued: state.queue.len(),
            cancelled: state.cancelled,
        }
    }
}
