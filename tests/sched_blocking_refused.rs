//! Proves that every blocking wait of the crate refuses a worker thread:
//! called from a process's step or from a `handler` (both on a worker), it
//! panics with a message naming the method and the thread, whichever
//! scheduler it waits on and whether or not it would have waited; the panic
//! fails only the caller (the process, or the command), and the worker goes
//! on. A `blocking_handler` runs on the blocking pool and may block.
//!
//! ```text
//! cargo test --test sched_blocking_refused
//! ```

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use stepsched::process::{
    Command, Event, NoCommand, Pid, Process, ProcessError, Status, StepOutput,
};
use stepsched::sched::{JoinSet, Scheduler};

const GUARD: Duration = Duration::from_secs(60);
const REFUSED: &str = "Cannot block the current thread from within a stepsched scheduler";

/// Answers `Ask(to, n)` with `Answer(n)`; ends on `Stop` or a cancel.
struct Peer;

#[derive(Debug, Clone, PartialEq, Eq)]
enum PeerMsg {
    Ask(Pid, u32),
    Answer(u32),
    Stop,
}

impl Process for Peer {
    type Input = ();
    type Message = PeerMsg;
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
        out.set_status(Status::Idle);
        for event in events.drain(..) {
            match event {
                Event::Message(PeerMsg::Ask(to, n)) => out.send(to, PeerMsg::Answer(n)),
                Event::Message(PeerMsg::Stop) | Event::Cancel(_) => out.done(()),
                _ => {}
            }
        }
        Ok(())
    }
}

/// The blocking waits, each tried from a step.
#[derive(Debug, Clone, Copy)]
enum Wait {
    BlockingCall,
    BlockingSendTimeout,
    Recv,
    RecvTimeout,
    Join,
    JoinTimeout,
    BlockingJoinNext,
    BlockingJoinNextTimeout,
}

const WAITS: [(Wait, &str); 8] = [
    (Wait::BlockingCall, "Scheduler::blocking_call"),
    (
        Wait::BlockingSendTimeout,
        "Scheduler::blocking_send_timeout",
    ),
    (Wait::Recv, "Receiver::recv"),
    (Wait::RecvTimeout, "Receiver::recv_timeout"),
    (Wait::Join, "JoinHandle::join"),
    (Wait::JoinTimeout, "JoinHandle::join_timeout"),
    (Wait::BlockingJoinNext, "JoinSet::blocking_join_next"),
    (
        Wait::BlockingJoinNextTimeout,
        "JoinSet::blocking_join_next_timeout",
    ),
];

/// Makes the blocking wait `wait` on `peers` (a scheduler of its own) with
/// its server `peer`: each would return at once or soon on an outside thread.
fn block(peers: &Scheduler<Peer>, peer: Pid, wait: Wait) {
    match wait {
        Wait::BlockingCall => {
            let _ = peers.blocking_call(peer, |me| PeerMsg::Ask(me, 1), GUARD);
        }
        Wait::BlockingSendTimeout => {
            let _ = peers.blocking_send_timeout(peer, PeerMsg::Answer(0), Duration::ZERO);
        }
        Wait::Recv => {
            let receiver = peers.mailbox().expect("a receiver");
            peers.send(peer, PeerMsg::Ask(receiver.pid(), 1)).unwrap();
            let _ = receiver.recv();
        }
        Wait::RecvTimeout => {
            let _ = peers
                .mailbox()
                .expect("a receiver")
                .recv_timeout(Duration::ZERO);
        }
        Wait::Join | Wait::JoinTimeout => {
            let handle = peers.submit_joinable(Peer, "", ()).unwrap();
            peers.send(handle.pid(), PeerMsg::Stop).unwrap();
            if matches!(wait, Wait::Join) {
                let _ = handle.join();
            } else {
                let _ = handle.join_timeout(Duration::ZERO);
            }
        }
        Wait::BlockingJoinNext => {
            let _ = JoinSet::<Peer>::new().blocking_join_next();
        }
        Wait::BlockingJoinNextTimeout => {
            let _ = JoinSet::<Peer>::new().blocking_join_next_timeout(Duration::ZERO);
        }
    }
}

/// What the blocker is asked to do.
#[derive(Clone, Copy)]
enum Try {
    /// Make the wait in its step, catching the panic: ends with its message.
    Caught(Wait),
    /// Make the wait in its step and let the panic fail the process.
    Uncaught(Wait),
    /// Yield a command of this kind and end with its completion.
    Command(&'static str),
}

struct Ask(&'static str);

impl Command for Ask {
    fn kind(&self) -> &'static str {
        self.0
    }
}

struct Blocker {
    peers: Arc<Scheduler<Peer>>,
    peer: Pid,
    what: Option<Try>,
}

impl Process for Blocker {
    type Input = Try;
    type Message = ();
    type Command = Ask;
    type Reply = String;
    type Output = String;
    type Error = ();

    fn init(&mut self, _: &str, what: Try) -> Result<(), ()> {
        self.what = Some(what);
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), ()> {
        for event in events.drain(..) {
            if let Event::Completion { result, .. } = event {
                out.done(result.unwrap_or_else(|e| e.to_string()));
                return Ok(());
            }
        }
        match self.what.take() {
            Some(Try::Caught(wait)) => {
                let caught = catch_unwind(AssertUnwindSafe(|| block(&self.peers, self.peer, wait)));
                out.done(match caught {
                    Ok(()) => "returned".to_owned(),
                    Err(panic) => message(panic),
                });
            }
            Some(Try::Uncaught(wait)) => {
                block(&self.peers, self.peer, wait);
                out.done("returned".to_owned());
            }
            Some(Try::Command(kind)) => {
                out.yield_command(1, Ask(kind));
                out.set_status(Status::Wait);
            }
            None => out.set_status(Status::Wait),
        }
        Ok(())
    }
}

fn message(panic: Box<dyn std::any::Any + Send>) -> String {
    match panic.downcast::<String>() {
        Ok(text) => *text,
        Err(panic) => panic
            .downcast::<&str>()
            .map(|t| t.to_string())
            .unwrap_or_default(),
    }
}

/// A one-worker scheduler of blockers (the case that would deadlock),
/// beside a scheduler of peers to wait on, with a handler of each kind
/// that makes a blocking call to a peer.
fn schedulers() -> (Scheduler<Blocker>, Arc<Scheduler<Peer>>, Pid) {
    let peers = Arc::new(Scheduler::builder().workers(1).build().expect("peers"));
    let peer = peers.submit(Peer, "", ()).unwrap();
    let call = move |peers: &Scheduler<Peer>| match peers.blocking_call(
        peer,
        |me| PeerMsg::Ask(me, 7),
        GUARD,
    ) {
        Ok(PeerMsg::Answer(n)) => format!("answer {n}"),
        other => format!("no answer: {other:?}"),
    };
    let (inline, pool) = (Arc::clone(&peers), Arc::clone(&peers));
    let blockers = Scheduler::builder()
        .workers(1)
        .thread_name(|i| format!("blocker-{i}"))
        .handler("inline", move |_, completer| {
            let _ = completer.succeed(call(&inline));
        })
        .blocking_handler("pool", move |_, completer| {
            let _ = completer.succeed(call(&pool));
        })
        .build()
        .expect("blockers");
    (blockers, peers, peer)
}

impl Blocker {
    fn new(peers: &Arc<Scheduler<Peer>>, peer: Pid) -> Self {
        Blocker {
            peers: Arc::clone(peers),
            peer,
            what: None,
        }
    }
}

/// Each blocking wait called from a step panics with the refusal, naming
/// the method and the worker thread, even when it would not have waited
/// (`Duration::ZERO`, an empty set, an ended process) and though it waits
/// on another scheduler; and the one worker goes on to the next process.
#[test]
fn every_blocking_wait_panics_on_a_worker_thread_and_the_worker_goes_on() {
    let (blockers, peers, peer) = schedulers();
    for (wait, name) in WAITS {
        let handle = blockers
            .submit_joinable(Blocker::new(&peers, peer), "", Try::Caught(wait))
            .unwrap();
        let said = handle
            .join_timeout(GUARD)
            .expect("the worker went on")
            .unwrap();
        assert!(said.contains(REFUSED), "{wait:?}: {said}");
        assert!(said.contains(&format!("`{name}`")), "{wait:?}: {said}");
        assert!(said.contains("`blocker-0`"), "{wait:?}: {said}");
    }
    assert_eq!(blockers.shutdown(GUARD).stuck, 0);
    assert_eq!(peers.shutdown(GUARD).stuck, 0);
}

/// The refusal, not caught by the step, fails that process as any panic
/// of a step does, and nothing else: the worker runs the next one.
#[test]
fn a_blocking_wait_refused_in_a_step_fails_only_that_process() {
    let (blockers, peers, peer) = schedulers();
    let failed = blockers
        .submit_joinable(
            Blocker::new(&peers, peer),
            "",
            Try::Uncaught(Wait::BlockingCall),
        )
        .unwrap();
    match failed.join_timeout(GUARD).expect("it ended") {
        Err(ProcessError::Panicked(text)) => assert!(text.contains(REFUSED), "{text}"),
        other => panic!("not failed by the refusal: {other:?}"),
    }
    let next = blockers
        .submit_joinable(
            Blocker::new(&peers, peer),
            "",
            Try::Caught(Wait::BlockingJoinNext),
        )
        .unwrap();
    assert!(next
        .join_timeout(GUARD)
        .expect("the worker went on")
        .unwrap()
        .contains(REFUSED));
    assert_eq!(blockers.shutdown(GUARD).stuck, 0);
    assert_eq!(peers.shutdown(GUARD).stuck, 0);
}

/// A `handler` runs on the worker, so its blocking call is refused (the
/// panic fails the process that yielded the command); a `blocking_handler` runs on the
/// blocking pool, so it may block, and its call gets the reply.
#[test]
fn a_handler_is_refused_a_blocking_wait_but_a_blocking_handler_may_block() {
    let (blockers, peers, peer) = schedulers();
    let inline = blockers
        .submit_joinable(Blocker::new(&peers, peer), "", Try::Command("inline"))
        .unwrap();
    // An inline handler's panic fails the process that yielded the command.
    let said = match inline.join_timeout(GUARD).expect("it ended") {
        Err(ProcessError::Panicked(text)) => text,
        other => panic!("not refused: {other:?}"),
    };
    assert!(said.contains(REFUSED), "{said}");
    assert!(said.contains("`Scheduler::blocking_call`"), "{said}");
    let pool = blockers
        .submit_joinable(Blocker::new(&peers, peer), "", Try::Command("pool"))
        .unwrap();
    assert_eq!(
        pool.join_timeout(GUARD).expect("it ended"),
        Ok("answer 7".to_owned())
    );
    assert_eq!(blockers.shutdown(GUARD).stuck, 0);
    assert_eq!(peers.shutdown(GUARD).stuck, 0);
}
