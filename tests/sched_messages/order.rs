//! Per-sender order: a windowed ping-pong of 100k messages each way (on one
//! worker and on two), bursts from outside threads, a burst and a scatter
//! from one step, and a message to a child spawned in the same step.

use super::*;

/// 100k numbered messages each way between two processes, up to `window`
/// in flight per direction; each side checks the other's numbers arrive
/// strictly consecutively.
fn ping_pong(workers: usize, window: u64) {
    // Miri interprets every instruction: a hundred there.
    const N: u64 = if cfg!(miri) { 100 } else { 100_000 };
    let scheduler = scheduler(workers);
    let b = scheduler
        .submit_joinable(Node::ping_pong(None, N, window), "b", ())
        .unwrap();
    let a = scheduler
        .submit_joinable(Node::ping_pong(Some(b.pid()), N, window), "a", ())
        .unwrap();
    assert_eq!(a.join(), Ok(N), "a received all of b's messages in order");
    assert_eq!(b.join(), Ok(N), "b received all of a's messages in order");
    let stats = scheduler.stats();
    assert_eq!(stats.undelivered, 0);
    // Each side takes at most one step per message received, plus its first.
    assert!(stats.total().steps <= 2 * N + 2, "{stats}");
    scheduler.shutdown(Duration::from_secs(1));
}
#[test]
fn ping_pong_of_100k_messages_each_way_keeps_order_on_two_workers() {
    ping_pong(2, 1);
}
#[test]
fn ping_pong_with_8_messages_in_flight_keeps_order_on_two_workers() {
    ping_pong(2, 8);
}
#[test]
fn ping_pong_with_8_messages_in_flight_keeps_order_on_one_worker() {
    ping_pong(1, 8);
}
#[test]
fn messages_from_each_outside_thread_arrive_in_send_order() {
    const THREADS: u64 = 4;
    const PER_THREAD: u64 = if cfg!(miri) { 25 } else { 25_000 };
    let scheduler = Arc::new(scheduler(2));
    let sink = scheduler
        .submit_joinable(Node::sink(THREADS * PER_THREAD), "sink", ())
        .unwrap();
    let to = sink.pid();
    let senders: Vec<_> = (0..THREADS)
        .map(|stream| {
            let scheduler = Arc::clone(&scheduler);
            thread::spawn(move || {
                for seq in 0..PER_THREAD {
                    let from = Pid::from_raw(0);
                    scheduler.send(to, Msg::Seq { from, stream, seq }).unwrap();
                }
            })
        })
        .collect();
    for sender in senders {
        sender.join().unwrap();
    }
    assert_eq!(sink.join(), Ok(THREADS * PER_THREAD));
    scheduler.shutdown(Duration::from_secs(1));
}
#[test]
fn a_burst_sent_from_one_step_arrives_in_order() {
    const N: u64 = if cfg!(miri) { 50 } else { 20_000 };
    let scheduler = scheduler(2);
    let sink = scheduler
        .submit_joinable(Node::sink(N), "sink", ())
        .unwrap();
    let burst = Node::new(Role::Burst {
        to: sink.pid(),
        n: N,
    });
    let burst = scheduler.submit_joinable(burst, "burst", ()).unwrap();
    assert_eq!(burst.join(), Ok(N));
    assert_eq!(sink.join(), Ok(N));
    scheduler.shutdown(Duration::from_secs(1));
}
/// A step that sends to many processes asks for their lines ahead and a
/// thief for its batch's (`worker/warm.rs`): the hints must change nothing.
#[test]
fn a_scatter_from_one_step_to_many_arrives_in_order_at_each() {
    let (sinks, n) = if cfg!(miri) { (24, 3) } else { (300, 3) };
    let scheduler = scheduler(2);
    let sinks: Vec<_> = (0..sinks)
        .map(|_| {
            scheduler
                .submit_joinable(Node::sink(n), "sink", ())
                .unwrap()
        })
        .collect();
    let to = sinks.iter().map(|sink| sink.pid()).collect();
    let scatter = Node::new(Role::Scatter { to, n });
    let scatter = scheduler.submit_joinable(scatter, "scatter", ()).unwrap();
    assert_eq!(scatter.join(), Ok(n * sinks.len() as u64));
    for sink in sinks {
        assert_eq!(sink.join(), Ok(n));
    }
    scheduler.shutdown(Duration::from_secs(1));
}
#[test]
fn a_step_may_send_to_the_child_it_just_spawned() {
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let scheduler = {
        let outcomes = Arc::clone(&outcomes);
        Scheduler::<Node>::builder()
            .workers(2)
            .on_complete(move |pid, outcome| {
                outcomes.lock().unwrap().push((pid, outcome.clone()));
            })
            .build()
            .unwrap()
    };
    for value in 0..if cfg!(miri) { 10 } else { 100 } {
        let parent = Node::new(Role::SpawnAndSend { value });
        let parent = scheduler.submit_joinable(parent, "parent", ()).unwrap();
        let child = Pid::from_raw(parent.join().unwrap());
        wait_until("the child to finish", || {
            outcomes
                .lock()
                .unwrap()
                .iter()
                .any(|(pid, _)| *pid == child)
        });
        let outcomes = outcomes.lock().unwrap();
        let (_, outcome) = outcomes.iter().find(|(pid, _)| *pid == child).unwrap();
        assert_eq!(*outcome, Ok(value), "the child got its message");
    }
    assert_eq!(scheduler.stats().undelivered, 0);
    scheduler.shutdown(Duration::from_secs(1));
}
