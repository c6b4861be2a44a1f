//! Calls across nodes: the reply, a refused request handed back, the
//! timeout, and `NodeDown` when the callee's node goes.

use super::{Pair, A, B};
use crate::actor::{Actor, Msg, Seen};
use std::time::Duration;
use stepsched::process::{Pid, SpawnOptions};

/// The message that makes a process on A call `to`.
fn call(to: Pid, n: u64, later: bool, timeout_ms: u64) -> Msg {
    Msg::Call {
        to,
        n,
        later,
        timeout_ms,
    }
}

/// A minute: a liveness guard, not a timing claim.
const LONG: u64 = 60_000;

/// A step on A calls a process on B: the request crosses, B's reply comes
/// back as the caller's one `Event::Reply` with its tag; then the same
/// with the reply made from outside B's steps (`Scheduler::reply`).
#[test]
fn a_call_across_nodes_gets_its_reply() {
    let pair = Pair::new();
    let (caller, callee) = (pair.actor(A), pair.actor(B));
    pair.tell(caller.pid(), call(callee.pid(), 21, false, LONG));
    assert_eq!(
        pair.next(),
        (caller.pid(), Seen::Reply(21, Ok(Msg::Num(42))))
    );
    pair.tell(caller.pid(), call(callee.pid(), 5, true, LONG));
    let (at, seen) = pair.next();
    let Seen::Deferred(5, reply_to) = seen else {
        panic!("the deferred request, not {seen:?}");
    };
    assert_eq!((at, reply_to.pid()), (callee.pid(), caller.pid()));
    pair.b.reply(reply_to, Msg::Num(7));
    assert_eq!(pair.next(), (caller.pid(), Seen::Reply(5, Ok(Msg::Num(7)))));
    assert_eq!(pair.quiet_for(50), None, "one reply per call");
    assert!(pair.undelivered.lock().unwrap().is_empty());
}

/// A request B refuses comes back with its reason and the request: to a
/// process that has ended (`NoSuchProcess` or `Finished`, as locally), and
/// to a full bounded mailbox (`Full`).
#[test]
fn a_request_the_callee_node_refuses_is_handed_back() {
    let pair = Pair::new();
    let caller = pair.actor(A);
    let gone = pair.actor(B);
    let gone_pid = gone.pid();
    pair.tell(gone_pid, Msg::Stop);
    assert_eq!(gone.join(), Ok(()));
    pair.tell(caller.pid(), call(gone_pid, 1, false, LONG));
    let (at, seen) = pair.next();
    assert_eq!(at, caller.pid());
    let Seen::Reply(1, Err((why, Some(Msg::Ask(1, reply_to))))) = seen else {
        panic!("a refusal with the request, not {seen:?}");
    };
    assert!(why == "NoSuchProcess(..)" || why == "Finished(..)", "{why}");
    assert_eq!(reply_to.pid(), caller.pid());

    let full = (pair.b)
        .submit_with(
            Actor(pair.sender()),
            "actor",
            (),
            SpawnOptions::new().mailbox_capacity(1),
        )
        .expect("submitted");
    pair.tell(full, Msg::Hold);
    pair.held.wait_for("the holder waits", 1);
    pair.tell(full, Msg::Num(0)); // its one place
    pair.tell(caller.pid(), call(full, 2, false, LONG));
    let (at, seen) = pair.next();
    assert_eq!(at, caller.pid());
    assert!(
        matches!(&seen, Seen::Reply(2, Err((why, Some(Msg::Ask(2, _))))) if why == "Full(..)"),
        "{seen:?}"
    );
    pair.held.lock().pop().expect("held").complete(Ok(())).ok();
    assert_eq!(pair.next(), (full, Seen::Num(0)));
}

/// A call waiting on B when B goes gets `NodeDown`, once; its timeout,
/// cancelled, adds nothing. A call to B once it is gone is refused at
/// once with `NoConnection`, the request handed back.
#[test]
fn a_callee_node_gone_answers_a_waiting_call_node_down_once() {
    let pair = Pair::new();
    let (caller, callee) = (pair.actor(A), pair.actor(B));
    pair.tell(caller.pid(), call(callee.pid(), 3, true, 300));
    assert!(matches!(pair.next(), (at, Seen::Deferred(3, _)) if at == callee.pid()));
    pair.net.cut(B);
    assert_eq!(
        pair.next(),
        (caller.pid(), Seen::Reply(3, Err(("NodeDown".into(), None))))
    );
    // Past the call's timeout: it was answered, so nothing more comes.
    assert_eq!(pair.quiet_for(600), None, "exactly once");
    pair.tell(caller.pid(), call(callee.pid(), 4, false, LONG));
    let (at, seen) = pair.next();
    assert_eq!(at, caller.pid());
    assert!(
        matches!(&seen, Seen::Reply(4, Err((why, Some(Msg::Ask(4, _))))) if why == "NoConnection(..)"),
        "{seen:?}"
    );
}

/// A call to B that times out is answered `TimedOut`, once: the reply
/// that comes after the timeout is stale, reported by A's
/// `on_undelivered`, never lost; and B going later tells a timed-out call
/// nothing more.
#[test]
fn a_timed_out_call_across_nodes_is_told_once_and_its_late_reply_reported() {
    let pair = Pair::new();
    let (caller, callee) = (pair.actor(A), pair.actor(B));
    let timed_out = |n| {
        pair.tell(caller.pid(), call(callee.pid(), n, true, 20));
        let (_, seen) = pair.next();
        let Seen::Deferred(m, reply_to) = seen else {
            panic!("the deferred request, not {seen:?}");
        };
        assert_eq!(m, n);
        assert_eq!(
            pair.next(),
            (caller.pid(), Seen::Reply(n, Err(("TimedOut".into(), None))))
        );
        reply_to
    };
    let reply_to = timed_out(6);
    pair.b.reply(reply_to, Msg::Num(60));
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while pair.undelivered.lock().unwrap().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the stale reply is reported"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        pair.undelivered.lock().unwrap()[..],
        [(A, caller.pid(), Msg::Num(60))]
    );
    assert_eq!(pair.a.stats().unknown_tags, 1, "the stale reply");
    let _unanswered = timed_out(7);
    pair.net.cut(B);
    // Behind anything the cut put in the caller's mailbox:
    pair.tell(caller.pid(), Msg::Num(1));
    assert_eq!(pair.next(), (caller.pid(), Seen::Num(1)));
    assert_eq!(
        pair.a.stats().unknown_tags,
        1,
        "no NodeDown for a call timed out"
    );
}

/// From outside: `Scheduler::blocking_call` from A to a process on B gets
/// the reply B's process sends back to the receiver's PID.
#[test]
fn an_outside_call_across_nodes_gets_its_reply() {
    let pair = Pair::new();
    let callee = pair.actor(B);
    let reply = pair.a.blocking_call(
        callee.pid(),
        |me| Msg::Flood(me, 8, 9),
        Duration::from_secs(60),
    );
    assert_eq!(reply, Ok(Msg::Num(8)));
}

/// A caller that ends with a call across nodes waiting takes the call
/// with it: none is left waiting (`Stats::remote_calls_waiting`), so the
/// callee's node going later owes it nothing.
#[test]
fn a_caller_that_ends_with_a_call_waiting_leaves_no_call_behind() {
    let pair = Pair::new();
    let (caller, callee) = (pair.actor(A), pair.actor(B));
    pair.tell(caller.pid(), call(callee.pid(), 8, true, LONG));
    assert!(matches!(pair.next(), (at, Seen::Deferred(8, _)) if at == callee.pid()));
    assert_eq!(pair.a.stats().remote_calls_waiting, 1, "the call waits");
    pair.tell(caller.pid(), Msg::Stop);
    caller.join().expect("the caller ends");
    assert_eq!(pair.a.stats().remote_calls_waiting, 0, "none left behind");
    pair.net.cut(B);
    assert_eq!(pair.quiet_for(100), None);
    assert_eq!(pair.a.stats().remote_calls_waiting, 0);
}
