//! Messages that reach no process: refused and handed back with the right
//! reason (a PID never issued, a finished process, a stale PID whose slot now
//! holds a newer process), or, sent from a step, reported to
//! `on_undelivered`; and every message a finishing process accepted is either
//! received or reported.

use super::*;

#[test]
fn send_to_a_pid_never_issued_is_refused_as_no_such_process_with_the_message() {
    let scheduler = scheduler(2);
    let echo = start_echo(&scheduler);
    let live = echo.pid();

    // An index whose table page was never allocated.
    let far = Pid::from_raw(1 << 30);
    match scheduler.send(far, Msg::Value(1)) {
        Err(e @ SendError::NoSuchProcess(_)) => assert_eq!(e.into_inner(), Msg::Value(1)),
        other => panic!("expected NoSuchProcess, got {other:?}"),
    }
    // A live slot, but a generation it has not reached yet.
    let future = Pid::from_raw(u64::from(live.generation() + 5) << 32 | u64::from(live.index()));
    assert_no_such_process(&scheduler, future, 2);
    // An index in an allocated page that no process has used.
    let unused = Pid::from_raw(u64::from(live.index() + 7));
    assert_no_such_process(&scheduler, unused, 3);
    assert_eq!(scheduler.terminate(far), Err(TerminateError::NoSuchProcess));
    assert_eq!(
        scheduler.terminate(future),
        Err(TerminateError::NoSuchProcess)
    );

    // The live process received none of them.
    finish_echo(&scheduler, echo, 9);
    scheduler.shutdown(Duration::from_secs(1));
}
#[test]
fn send_after_the_process_finished_is_refused_as_finished_with_the_message() {
    let scheduler = scheduler(2);
    let pid = finished_echo(&scheduler, 4);
    match scheduler.send(pid, Msg::Value(5)) {
        Err(e @ SendError::Finished(_)) => {
            assert!(e.to_string().contains("finished"), "{e}");
            assert_eq!(e.into_inner(), Msg::Value(5));
        }
        other => panic!("expected Finished, got {other:?}"),
    }
    assert_eq!(scheduler.terminate(pid), Err(TerminateError::Finished));
    scheduler.shutdown(Duration::from_secs(1));
}
#[test]
fn a_stale_pid_never_reaches_the_newer_process_in_its_slot() {
    // One worker: it closes every process, so its cache of freed slots
    // (`FREE_BATCH` = 32 in src/sched/core/table.rs) is the only one.
    let scheduler = scheduler(1);
    let old_pid = finished_echo(&scheduler, 1);

    // Submit idle processes until one reuses the slot. The worker keeps
    // freed slots for its own spawns until it holds more than 64; then it
    // gives the oldest 32 (the old slot among them) to the shared list that
    // submits take from. So every 66 submits finish the idle ones too: the
    // 65th close hands the old slot on, and the next 32 submits reach it.
    let mut idle = Vec::new();
    let mut submitted = 0;
    let reused = loop {
        assert!(submitted < 10_000, "slot {} never reused", old_pid.index());
        if idle.len() == 66 {
            for (i, handle) in idle.drain(..).enumerate() {
                finish_echo(&scheduler, handle, i as u64);
            }
        }
        let node = Node::new(Role::Echo);
        let seen = Arc::clone(&node.messages_seen);
        let handle = scheduler.submit_joinable(node, "echo", ()).unwrap();
        submitted += 1;
        if handle.pid().index() == old_pid.index() {
            break (handle, seen);
        }
        idle.push(handle);
    };
    let (reused, seen) = reused;
    assert_ne!(reused.pid(), old_pid, "a new generation");
    assert_eq!(reused.pid().index(), old_pid.index());

    match scheduler.send(old_pid, Msg::Value(666)) {
        Err(SendError::Finished(m)) => assert_eq!(m, Msg::Value(666)),
        other => panic!("expected Finished for the stale pid, got {other:?}"),
    }
    assert_eq!(scheduler.terminate(old_pid), Err(TerminateError::Finished));
    // The newer process gets only its own message.
    finish_echo(&scheduler, reused, 7);
    assert_eq!(
        seen.load(Ordering::Relaxed),
        1,
        "exactly one message reached it"
    );
    for (i, handle) in idle.into_iter().enumerate() {
        finish_echo(&scheduler, handle, i as u64);
    }
    assert_eq!(scheduler.stats().undelivered, 0);
    scheduler.shutdown(Duration::from_secs(1));
}
#[test]
fn a_message_sent_from_a_step_to_a_finished_process_goes_to_on_undelivered() {
    let undelivered = Arc::new(Mutex::new(Vec::new()));
    let scheduler = {
        let undelivered = Arc::clone(&undelivered);
        Scheduler::<Node>::builder()
            .workers(2)
            .on_undelivered(move |pid, event| {
                let what = match event {
                    Event::Message(m) => format!("{m:?}"),
                    other => format!("{other:?}"),
                };
                undelivered.lock().unwrap().push((pid, what));
            })
            .build()
            .unwrap()
    };
    let target_pid = finished_echo(&scheduler, 1);

    let sender = Node::new(Role::SendOnce {
        to: target_pid,
        value: 31,
    });
    let sender = scheduler.submit_joinable(sender, "send", ()).unwrap();
    assert_eq!(sender.join(), Ok(0));
    wait_until("the undelivered report", || {
        !undelivered.lock().unwrap().is_empty()
    });
    let undelivered = undelivered.lock().unwrap();
    assert_eq!(
        *undelivered,
        vec![(target_pid, format!("{:?}", Msg::Value(31)))]
    );
    assert_eq!(scheduler.stats().undelivered, 1);
    scheduler.shutdown(Duration::from_secs(1));
}
/// Finishes on its first message, counting every message its last step saw.
struct Once {
    received: Arc<AtomicUsize>,
}

impl Process for Once {
    type Input = ();
    type Message = u64;
    type Command = NoCommand;
    type Reply = ();
    type Output = ();
    type Error = ();

    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), ()> {
        for event in events.drain(..) {
            if let Event::Message(_) = event {
                self.received.fetch_add(1, Ordering::SeqCst);
                out.done(());
            }
        }
        Ok(())
    }
}

/// What a storm left: the scheduler, the messages its processes received
/// and those `on_undelivered` saw, and how many sends were accepted.
struct Storm {
    scheduler: Arc<Scheduler<Once>>,
    received: Arc<AtomicUsize>,
    undelivered: Arc<AtomicUsize>,
    accepted: usize,
}

impl Storm {
    /// Received plus reported.
    fn books(&self) -> usize {
        self.received.load(Ordering::SeqCst) + self.undelivered.load(Ordering::SeqCst)
    }
}

/// Three threads send to 500 processes that end on their first message,
/// until every send is refused (every target has ended).
fn storm() -> Storm {
    const PROCESSES: usize = if cfg!(miri) { 10 } else { 500 };
    const SENDERS: usize = 3;
    let received = Arc::new(AtomicUsize::new(0));
    let undelivered = Arc::new(AtomicUsize::new(0));
    let scheduler = {
        let undelivered = Arc::clone(&undelivered);
        Arc::new(
            Scheduler::<Once>::builder()
                .workers(2)
                .on_undelivered(move |_, event| {
                    if let Event::Message(_) = event {
                        undelivered.fetch_add(1, Ordering::SeqCst);
                    }
                })
                .build()
                .unwrap(),
        )
    };
    let pids: Arc<Vec<Pid>> = Arc::new(
        (0..PROCESSES)
            .map(|_| {
                let once = Once {
                    received: Arc::clone(&received),
                };
                scheduler.submit(once, "once", ()).unwrap()
            })
            .collect(),
    );
    let senders: Vec<_> = (0..SENDERS)
        .map(|_| {
            let (scheduler, pids) = (Arc::clone(&scheduler), Arc::clone(&pids));
            thread::spawn(move || {
                let mut accepted = 0;
                loop {
                    let before = accepted;
                    for &pid in pids.iter() {
                        if scheduler.send(pid, 1).is_ok() {
                            accepted += 1;
                        }
                    }
                    if accepted == before {
                        return accepted;
                    }
                }
            })
        })
        .collect();
    let accepted = senders.into_iter().map(|s| s.join().unwrap()).sum();
    Storm {
        scheduler,
        received,
        undelivered,
        accepted,
    }
}

/// A storm of sends to processes as they end, then shutdown: each accepted
/// message was seen by a step or reported to `on_undelivered`, once.
#[test]
fn every_message_accepted_by_a_finishing_process_is_received_or_reported() {
    for round in 0..if cfg!(miri) { 2 } else { 20 } {
        let storm = storm();
        storm.scheduler.shutdown(Duration::from_secs(1));
        let (accepted, books) = (storm.accepted, storm.books());
        assert_eq!(
            accepted,
            books,
            "round {round}: {accepted} accepted, {books} received or reported: {} lost",
            accepted as i64 - books as i64
        );
    }
}

/// As above, but the books are checked before shutdown: a message pushed
/// as its process ended (after its close's drain, or mid-link there) is
/// reported by that close's second drain or by its sender's sweep of the
/// freed slot, not left in the slot for shutdown or the slot's next
/// process (no slot is reused here: nothing is spawned after the 500).
#[test]
fn a_message_racing_its_process_end_is_reported_before_shutdown() {
    for round in 0..if cfg!(miri) { 2 } else { 20 } {
        let storm = storm();
        let accepted = storm.accepted;
        wait_until("every accepted message seen or reported", || {
            storm.scheduler.live() == 0 && storm.books() >= accepted
        });
        assert_eq!(storm.books(), accepted, "round {round}: reported twice");
        storm.scheduler.shutdown(Duration::from_secs(1));
        assert_eq!(
            storm.books(),
            accepted,
            "round {round}: shutdown found more"
        );
    }
}
