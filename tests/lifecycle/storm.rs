//! One storm thread: public operations at random against processes in
//! every phase, until the round's shutdown has returned (so a share of
//! them races the shutdown itself). Every message is numbered and booked
//! by how its call went; a refusal that says "shutting down" before the
//! round began its shutdown is a finding.

use super::*;

/// What a thread keeps for the checks after shutdown.
#[derive(Default)]
pub(crate) struct Leftovers {
    pub(crate) joins: Vec<JoinHandle<Actor>>,
    pub(crate) sets: Vec<(JoinSet<Actor>, usize)>,
    pub(crate) receivers: Vec<Receiver<Actor>>,
}

/// How long each of two threads waits in `recv_timeout` on one receiver.
const PAIR_TIMEOUT: Duration = Duration::from_secs(2);

pub(crate) struct Storm<'a> {
    round: &'a Arc<Round>,
    scheduler: &'a Scheduler<Actor>,
    rng: Rng,
    left: Leftovers,
}

impl<'a> Storm<'a> {
    pub(crate) fn new(index: u64, round: &'a Arc<Round>, scheduler: &'a Scheduler<Actor>) -> Self {
        Storm {
            round,
            scheduler,
            rng: Rng::new(round.seed).derive(index + 1),
            left: Leftovers::default(),
        }
    }

    /// Runs operations until `after` is set (the round's shutdown has
    /// returned). With `pair`, first proves two waiters on one receiver.
    pub(crate) fn run(mut self, after: &AtomicBool, pair: Option<&AtomicBool>) -> Leftovers {
        if let Some(done) = pair {
            self.pair();
            done.store(true, Ordering::SeqCst);
        }
        while !after.load(Ordering::SeqCst) {
            self.step();
        }
        self.left
    }

    /// One public operation, at random. Under the simulation
    /// (`simulated.rs`) the calls that would wait for ever there (nothing
    /// drives the scheduler while the only thread waits) are replaced:
    /// `blocking_send_timeout` and `call` by sends (a request's reply then
    /// comes to a receiver), `recv_timeout` by `try_recv`.
    pub(crate) fn step(&mut self) {
        // Near the shutdown and while it runs, receivers are made and
        // dropped in a burst (they race its closes, and terminates).
        if self.round.near.load(Ordering::Relaxed) && self.rng.chance(400) {
            self.mailbox();
            if self.rng.chance(500) {
                self.terminate();
            }
            return;
        }
        let simulated = self.round.simulated();
        match self.rng.below(100) {
            0..=13 => self.submit(),
            14..=37 => self.send(),
            38..=51 if simulated => self.send(),
            38..=44 => self.blocking_send_timeout(),
            45..=51 => self.call(),
            52..=58 => self.mailbox(),
            59..=68 => self.receive(),
            69..=72 => self.terminate(),
            73..=76 => self.send_after(),
            _ => {
                if self.round.complete_due(false, &mut self.rng) == 0 {
                    thread::yield_now();
                }
            }
        }
    }

    /// What this storm keeps for the checks after shutdown.
    pub(crate) fn leftovers(self) -> Leftovers {
        self.left
    }

    /// Whether shutdown had begun, read after a call that said so.
    fn stopping(&self) -> bool {
        self.round.stopping.load(Ordering::SeqCst)
    }

    fn refused_early(&self, what: &str) {
        if !self.stopping() {
            let detail = format!("{what} refused as shutting down before shutdown began");
            self.round.find(Check::Api, None, detail);
        }
    }

    /// A process target (or a guess), and a body: data, or a request whose
    /// reply goes to one of this thread's receivers.
    fn target(&mut self) -> (Pid, Body) {
        let to = match self.round.registry.pick(&mut self.rng) {
            Some(t) if !self.rng.chance(100) => t.pid,
            _ => self.round.registry.guess(&mut self.rng),
        };
        let body = match self.left.receivers.first() {
            Some(r) if self.rng.chance(300) => Body::Request(r.pid()),
            _ => Body::Data,
        };
        (to, body)
    }

    /// Books a send by its result.
    fn sent(&self, id: u64, result: Result<(), SendError<Msg>>, what: &str) {
        self.round.op();
        match result {
            Ok(()) => self.round.messages.mark(id, ACCEPTED),
            Err(e) => {
                if matches!(e, SendError::ShuttingDown(_)) {
                    self.refused_early(what);
                }
                let back = e.into_inner();
                if back.id != id {
                    let detail = format!("{what} of {id} handed back {}", back.id);
                    self.round.find(Check::Api, None, detail);
                }
                back.settle(REFUSED);
            }
        }
    }

    fn submit(&mut self) {
        let round = self.round;
        if round.live() >= round.cfg.live_cap {
            thread::yield_now();
            return;
        }
        let actor = Actor::new(round);
        let serial = actor.serial();
        let who = if self.rng.chance(350) {
            Who::Watcher
        } else {
            Who::Plain
        };
        let spec = Spec {
            who,
            seed: self.rng.next(),
            fail_init: self.rng.chance(20),
            plan: Plan::Random,
        };
        let scheduler = self.scheduler;
        let result = match self.rng.below(6) {
            0 => scheduler.submit_joinable(actor, "lc", spec).map(|h| {
                let pid = h.pid();
                self.left.joins.push(h);
                pid
            }),
            1 => {
                if self.left.sets.is_empty() {
                    self.left.sets.push((JoinSet::new(), 0));
                }
                let (set, count) = &mut self.left.sets[0];
                let result = scheduler.submit_into(set, actor, "lc", spec);
                *count += usize::from(result.is_ok());
                result
            }
            2 => {
                let capacity = 1 + self.rng.below(4) as u32;
                let options = SpawnOptions::new().mailbox_capacity(capacity);
                scheduler.submit_with(actor, "lc", spec, options)
            }
            3 => scheduler.submit_with(actor, "lc", spec, SpawnOptions::new().unbounded_mailbox()),
            _ => scheduler.submit(actor, "lc", spec),
        };
        round.op();
        if let Err(SpawnError::ShuttingDown(_)) = &result {
            self.refused_early("submit");
        }
        started(round, serial, who, result);
    }

    fn send(&mut self) {
        let (to, body) = self.target();
        let message = Msg::new(self.round, to, body);
        let id = message.id;
        let result = self.scheduler.send(to, message);
        self.sent(id, result, "send");
    }

    fn blocking_send_timeout(&mut self) {
        let (to, body) = self.target();
        let timeout = match self.rng.below(8) {
            0 => Duration::MAX,
            1..=3 => Duration::ZERO,
            4..=5 => Duration::from_micros(100),
            _ => Duration::from_millis(1),
        };
        // A full bounded mailbox is what makes it wait: fill it first.
        for _ in 0..self.rng.below(4) {
            let message = Msg::new(self.round, to, Body::Data);
            let id = message.id;
            let result = self.scheduler.send(to, message);
            self.sent(id, result, "send");
        }
        let message = Msg::new(self.round, to, body);
        let id = message.id;
        let scheduler = self.scheduler;
        match catch_unwind(AssertUnwindSafe(|| {
            scheduler.blocking_send_timeout(to, message, timeout)
        })) {
            Ok(result) => self.sent(id, result, "blocking_send_timeout"),
            // The panic hook has filed it; the message unwound with it.
            Err(_) => {
                self.round.skip.lock().unwrap().insert(id);
            }
        }
    }

    fn call(&mut self) {
        let round = self.round;
        let to = match round.registry.pick(&mut self.rng) {
            Some(t) if t.who != Who::Receiver => t.pid,
            _ => return,
        };
        let timeout = match self.rng.below(10) {
            0 if round.cfg.max_waits => Duration::MAX,
            0..=2 => Duration::ZERO,
            3..=4 => Duration::from_micros(200),
            5..=7 => Duration::from_millis(2),
            _ => Duration::from_millis(20),
        };
        let mut request = Some(Msg::new(round, to, Body::Data));
        let id = request.as_ref().map_or(0, |m| m.id);
        let scheduler = self.scheduler;
        let result = catch_unwind(AssertUnwindSafe(|| {
            scheduler.blocking_call(
                to,
                |me| {
                    let mut m = request.take().expect("called once");
                    m.body = Body::Request(me);
                    round.receivers.lock().unwrap().insert(me);
                    m.accepted();
                    m
                },
                timeout,
            )
        }));
        round.op();
        match result {
            Err(_) => {
                round.skip.lock().unwrap().insert(id);
            }
            Ok(Ok(reply)) => {
                reply.settle(RECEIVED);
            }
            Ok(Err(CallError::Send(e))) => {
                if matches!(e, SendError::ShuttingDown(_)) {
                    self.refused_early("call");
                }
                e.into_inner().settle(REFUSED);
            }
            Ok(Err(CallError::Refused(SpawnRefused::ShuttingDown))) => self.refused_early("call"),
            Ok(Err(_)) => {}
        }
        if let Some(m) = request.take() {
            m.settle(REFUSED); // the request was never made
        }
    }

    fn mailbox(&mut self) {
        let round = self.round;
        round.op();
        match self.scheduler.mailbox() {
            Ok(receiver) => {
                let pid = receiver.pid();
                round.receivers.lock().unwrap().insert(pid);
                round.registry.push(Target {
                    pid,
                    who: Who::Receiver,
                    serial: 0,
                });
                self.left.receivers.push(receiver);
                if self.left.receivers.len() > 4 {
                    let old = self.left.receivers.remove(0);
                    let (pid, who, serial) = (old.pid(), Who::Receiver, 0);
                    drop(old); // with whatever it still holds
                    round.ended.push(Target { pid, who, serial });
                }
            }
            Err(SpawnRefused::ShuttingDown) => self.refused_early("mailbox"),
            Err(_) => {}
        }
    }

    fn receive(&mut self) {
        if self.left.receivers.is_empty() {
            return;
        }
        let at = self.rng.below(self.left.receivers.len() as u64) as usize;
        self.round.op();
        match self.rng.below(10) {
            0..=3 => {
                for _ in 0..8 {
                    match self.left.receivers[at].try_recv() {
                        Ok(message) => {
                            message.settle(RECEIVED);
                        }
                        Err(_) => break,
                    }
                }
            }
            4..=6 if self.round.simulated() => {
                if let Ok(message) = self.left.receivers[at].try_recv() {
                    message.settle(RECEIVED);
                }
            }
            4..=6 => {
                let timeout = Duration::from_micros(self.rng.below(300));
                if let Ok(message) = self.left.receivers[at].recv_timeout(timeout) {
                    message.settle(RECEIVED);
                }
            }
            _ => {
                let receiver = self.left.receivers.remove(at);
                let (pid, who, serial) = (receiver.pid(), Who::Receiver, 0);
                drop(receiver); // with whatever it still holds
                self.round.ended.push(Target { pid, who, serial });
            }
        }
    }

    fn terminate(&mut self) {
        let round = self.round;
        let aim = exercise(Defect::MailboxStartRace, round.cfg.long_run);
        let pid = match self.rng.below(3) {
            0 => match round.registry.pick(&mut self.rng) {
                Some(t) => t.pid,
                None => return,
            },
            // The processes or receivers being created in freed slots.
            1 if aim => {
                let mut aimed = round.ended.next_occupants();
                aimed.extend(round.registry.fresh());
                for pid in aimed {
                    round.op();
                    let _ = self.scheduler.terminate(pid);
                }
                return;
            }
            _ if aim => round.registry.guess(&mut self.rng),
            _ => round.registry.stale(&mut self.rng),
        };
        round.op();
        let _ = self.scheduler.terminate(pid);
    }

    fn send_after(&mut self) {
        let (to, body) = self.target();
        let delay = match self.rng.below(10) {
            0 => self.round.never(),
            1..=3 => Duration::ZERO,
            4..=6 => Duration::from_micros(500),
            _ => Duration::from_millis(3),
        };
        let message = Msg::new(self.round, to, body);
        let id = message.id;
        let scheduler = self.scheduler;
        match catch_unwind(AssertUnwindSafe(|| {
            scheduler.send_after(to, message, delay).map(drop)
        })) {
            Ok(result) => self.sent(id, result, "send_after"),
            Err(_) => {
                self.round.skip.lock().unwrap().insert(id);
            }
        }
    }

    /// Two threads wait in `recv_timeout` on one receiver; two messages
    /// are sent to it at once. Each must return soon after its message is
    /// forwarded: a thread that returns a message only when its whole
    /// timeout has passed, long after the other got its own, slept with
    /// a message waiting. (The 2 s are a liveness guard: a forward takes
    /// microseconds.)
    fn pair(&mut self) {
        let round = self.round;
        let Ok(receiver) = self.scheduler.mailbox() else {
            return;
        };
        round.receivers.lock().unwrap().insert(receiver.pid());
        let barrier = Barrier::new(2);
        let wait = || {
            barrier.wait();
            let start = Instant::now();
            let got = receiver.recv_timeout(PAIR_TIMEOUT);
            (got, start.elapsed(), Instant::now())
        };
        let (mine, theirs) = thread::scope(|s| {
            let other = s.spawn(wait);
            barrier.wait();
            // Lets both threads reach their wait (only makes the race
            // likelier; nothing depends on it).
            thread::sleep(Duration::from_millis(1));
            for _ in 0..2 {
                let message = Msg::new(round, receiver.pid(), Body::Data);
                let id = message.id;
                let result = self.scheduler.send(receiver.pid(), message);
                self.sent(id, result, "send");
            }
            let start = Instant::now();
            let got = receiver.recv_timeout(PAIR_TIMEOUT);
            let mine = (got, start.elapsed(), Instant::now());
            (mine, other.join().expect("the second receiving thread"))
        });
        let mut slept = None;
        for (a, b) in [(&mine, &theirs), (&theirs, &mine)] {
            let late = a.0.is_ok() && a.1 >= PAIR_TIMEOUT;
            if late && b.0.is_ok() && a.2 > b.2 + PAIR_TIMEOUT / 2 {
                slept = Some(a.2 - b.2);
            }
        }
        for (got, _, _) in [mine, theirs] {
            if let Ok(message) = got {
                message.settle(RECEIVED);
            }
        }
        if let Some(gap) = slept {
            round.find(
                Check::RecvSlept,
                Some(Defect::RecvNotifyOne),
                format!("recv_timeout({PAIR_TIMEOUT:?}) returned a message only at its deadline, {gap:?} after the other thread got the message sent with it"),
            );
        }
        while let Ok(message) = receiver.try_recv() {
            message.settle(RECEIVED);
        }
        self.left.receivers.push(receiver);
    }
}
