//! The process under test and what it shares with the hooks, handlers and
//! client threads: on each step it takes its events, marks them in the books,
//! and at random sends, yields commands, spawns, finishes, fails or panics.

use super::books::*;
use super::*;

/// Everything the processes, hooks, handlers and threads share.
pub(crate) struct Ctx {
    pub(crate) messages: Ledger,
    pub(crate) replies: Ledger,
    pub(crate) processes: Ledger,
    pub(crate) registry: Registry,
    /// Completers to complete later: (not before, completer).
    pub(crate) later: Mutex<VecDeque<(Instant, Completer<Soaker>)>>,
    pub(crate) on_complete: AtomicU64,
    pub(crate) started: AtomicU64,
    pub(crate) outcomes: [AtomicU64; 5], // done, failed, panicked, terminated, shutdown
    pub(crate) terminate_ok: AtomicU64,
    pub(crate) failures: Mutex<Vec<String>>,
}

impl Ctx {
    pub(crate) fn fail(&self, what: String) {
        let mut failures = self.failures.lock().unwrap();
        if failures.len() < 20 {
            failures.push(what);
        }
    }

    pub(crate) fn live(&self) -> usize {
        let started = self.started.load(Ordering::Relaxed);
        started.saturating_sub(self.on_complete.load(Ordering::Relaxed)) as usize
    }

    /// Marks a reply id by how `complete` went.
    pub(crate) fn completed(
        &self,
        id: u64,
        result: Result<(), CompleteError<Result<u64, CommandError>>>,
    ) {
        match result {
            Ok(()) => self.replies.mark(id, ACCEPTED),
            Err(e) => match e.into_inner() {
                Ok(back) if back == id => self.replies.mark(id, REFUSED),
                other => self.fail(format!("reply {id} handed back as {other:?}")),
            },
        }
    }
}

#[derive(Debug)]
pub(crate) enum Cmd {
    Inline,
    Later,
}

impl Command for Cmd {
    fn kind(&self) -> &'static str {
        match self {
            Cmd::Inline => "inline",
            Cmd::Later => "later",
        }
    }
}

/// A randomly behaving process.
pub(crate) struct Soaker {
    pub(crate) serial: u64,
    pub(crate) rng: Rng,
    pub(crate) steps_left: u32,
    pub(crate) next_tag: u64,
    pub(crate) pending: Vec<u64>,
    pub(crate) ctx: Arc<Ctx>,
}

impl Soaker {
    pub(crate) fn new(ctx: &Arc<Ctx>) -> Self {
        Soaker {
            serial: ctx.processes.alloc(),
            rng: Rng::new(0),
            steps_left: 0,
            next_tag: 0,
            pending: Vec::new(),
            ctx: Arc::clone(ctx),
        }
    }
}

impl Process for Soaker {
    type Input = u64;
    type Message = u64;
    type Command = Cmd;
    type Reply = u64;
    type Output = u64;
    type Error = String;

    fn init(&mut self, _: &str, seed: u64) -> Result<(), String> {
        self.rng = Rng::new(seed ^ self.serial);
        self.steps_left = 1 + self.rng.below(30) as u32;
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        let ctx = Arc::clone(&self.ctx);
        let mut stop = false;
        for event in events.drain(..) {
            match event {
                Event::Message(id) => ctx.messages.mark(id, RECEIVED),
                Event::Completion { tag, result } => {
                    match self.pending.iter().position(|t| *t == tag) {
                        Some(at) => {
                            self.pending.swap_remove(at);
                        }
                        None => ctx.fail(format!("{}: completion of unknown tag {tag}", out.pid())),
                    }
                    match result {
                        Ok(id) => ctx.replies.mark(id, RECEIVED),
                        Err(e) => ctx.fail(format!("{}: tag {tag} failed: {e}", out.pid())),
                    }
                }
                Event::Cancel(Cancel::Shutdown) => stop = true,
                Event::Cancel(Cancel::Terminate) => {}
                other => ctx.fail(format!("{}: unexpected {other:?}", out.pid())),
            }
        }
        if stop {
            out.done(self.serial);
            return Ok(());
        }
        let rng = &mut self.rng;
        for _ in 0..rng.below(4) {
            if let Some(to) = ctx.registry.pick(rng) {
                let id = ctx.messages.alloc();
                ctx.messages.mark(id, ACCEPTED);
                out.send(to, id);
            }
        }
        if self.pending.len() < 3 && rng.chance(300) {
            let tag = self.next_tag;
            self.next_tag += 1;
            let command = if rng.chance(500) {
                Cmd::Inline
            } else {
                Cmd::Later
            };
            out.yield_command(tag, command);
            self.pending.push(tag);
        }
        if ctx.live() < LIVE_CAP && rng.chance(50) {
            let child = Soaker::new(&ctx);
            let serial = child.serial;
            match out.spawn(child, "soak", rng.next()) {
                Ok(pid) => {
                    ctx.processes.mark(serial, ACCEPTED);
                    ctx.started.fetch_add(1, Ordering::Relaxed);
                    ctx.registry.push(pid);
                }
                Err(e) => {
                    let back = e.into_process().serial;
                    if back != serial {
                        ctx.fail(format!("spawn handed back {back}, not {serial}"));
                    }
                    ctx.processes.mark(serial, REFUSED);
                }
            }
        }
        if rng.chance(3) {
            return Err("deliberate failure".to_owned());
        }
        if rng.chance(2) {
            panic!("{DELIBERATE}");
        }
        self.steps_left = self.steps_left.saturating_sub(1);
        if self.steps_left == 0 && self.pending.is_empty() {
            out.done(self.serial);
        } else if !self.pending.is_empty() && rng.chance(700) {
            out.set_status(Status::Wait);
        } else if rng.chance(600) {
            out.set_status(Status::Idle);
        } else {
            out.set_status(Status::Continue);
        }
        Ok(())
    }

    fn close(&mut self) {
        self.ctx.processes.mark(self.serial, RECEIVED);
    }
}
