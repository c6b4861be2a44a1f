//! `Scheduler::send_after`'s `TimerRef` and `Scheduler::cancel_timer`: a
//! cancelled message is handed back and never delivered nor sent to
//! `on_undelivered`; a cancel racing the firing has exactly one outcome; a
//! stale handle never cancels another timer.

use super::*;
use stepsched::sched::TimerRef;

/// Counts what `on_undelivered` gets.
fn counting(workers: usize) -> (Scheduler<Script>, Arc<AtomicUsize>) {
    let lost = Arc::new(AtomicUsize::new(0));
    let sink = Arc::clone(&lost);
    let scheduler = Scheduler::builder()
        .workers(workers)
        .on_undelivered(move |_, _: Event<Script>| {
            sink.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap();
    (scheduler, lost)
}

#[test]
fn a_cancelled_send_after_is_handed_back_and_never_delivered() {
    let (scheduler, lost) = counting(2);
    let (process, log) = script(|_, _| {});
    let pid = scheduler.submit(process, "idle", ()).unwrap();
    let timer = scheduler
        .send_after(pid, Msg::Text("later"), ms(20))
        .unwrap();
    assert_eq!(timer.pid(), pid);
    assert_eq!(scheduler.cancel_timer(&timer), Some(Msg::Text("later")));
    assert_eq!(scheduler.cancel_timer(&timer), None, "only once");
    // A later timer to the same process fires: the cancelled one, due
    // before it, would have come first.
    scheduler
        .send_after(pid, Msg::Text("after"), ms(40))
        .unwrap();
    wait_until("the later message", || {
        seen(&log).contains(&Seen::Message(Msg::Text("after")))
    });
    assert_eq!(seen(&log), [Seen::Message(Msg::Text("after"))]);
    let report = scheduler.shutdown(Duration::from_secs(10));
    assert_eq!(report.timers_cancelled, 0, "{report:?}");
    assert_eq!(lost.load(Ordering::SeqCst), 0, "not sent to on_undelivered");
}

#[test]
fn a_cancel_after_the_firing_returns_none_and_the_message_is_delivered() {
    let scheduler = scheduler(1);
    let (process, log) = script(|_, _| {});
    let pid = scheduler.submit(process, "idle", ()).unwrap();
    let timer = scheduler
        .send_after(pid, Msg::Text("now"), Duration::ZERO)
        .unwrap();
    wait_until("the message", || {
        seen(&log).contains(&Seen::Message(Msg::Text("now")))
    });
    assert_eq!(scheduler.cancel_timer(&timer), None);
    scheduler.shutdown(Duration::from_secs(10));
}

#[test]
fn a_stale_timer_ref_never_cancels_another_timer() {
    let scheduler = scheduler(1);
    let (process, log) = script(|_, _| {});
    let pid = scheduler.submit(process, "idle", ()).unwrap();
    let fired = scheduler
        .send_after(pid, Msg::Ping(0), Duration::ZERO)
        .unwrap();
    wait_until("the first", || seen(&log).len() == 1);
    // The slab slot the first used is free again: the next timer takes it.
    let pending = scheduler
        .send_after(pid, Msg::Ping(1), Duration::from_secs(3600))
        .unwrap();
    assert_ne!(fired, pending);
    assert_eq!(scheduler.cancel_timer(&fired), None, "stale");
    assert_eq!(scheduler.cancel_timer(&pending), Some(Msg::Ping(1)));
    scheduler.shutdown(Duration::from_secs(10));
}

#[test]
fn a_cancel_racing_the_firing_either_delivers_or_hands_back_exactly_once() {
    const ROUNDS: u64 = if cfg!(miri) { 5 } else { 2_000 };
    let (scheduler, lost) = counting(2);
    let (process, log) = script(|_, _| {});
    let pid = scheduler.submit(process, "sink", ()).unwrap();
    let scheduler = Arc::new(scheduler);
    let (tx, rx) = std::sync::mpsc::channel::<(u64, TimerRef)>();
    let canceller = {
        let scheduler = Arc::clone(&scheduler);
        thread::spawn(move || {
            let mut back = Vec::new();
            for (n, timer) in rx {
                if n % 3 == 0 {
                    thread::yield_now();
                }
                if let Some(message) = scheduler.cancel_timer(&timer) {
                    assert_eq!(message, Msg::Ping(n), "its own message");
                    back.push(n);
                }
            }
            back
        })
    };
    for n in 0..ROUNDS {
        // Delays around one wheel tick (16 µs): some fire before the
        // cancel, some after.
        let delay = Duration::from_micros(n % 40);
        let timer = scheduler.send_after(pid, Msg::Ping(n), delay).unwrap();
        tx.send((n, timer)).unwrap();
    }
    drop(tx);
    let back = canceller.join().unwrap();
    let delivered_or_back = |log: &Log| {
        let mut got: Vec<u64> = seen(log)
            .into_iter()
            .map(|s| match s {
                Seen::Message(Msg::Ping(n)) => n,
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        got.extend(&back);
        got.sort_unstable();
        got
    };
    wait_until("every uncancelled message", || {
        delivered_or_back(&log).len() as u64 >= ROUNDS
    });
    assert_eq!(
        delivered_or_back(&log),
        (0..ROUNDS).collect::<Vec<_>>(),
        "each exactly once: delivered or handed back"
    );
    assert_eq!(lost.load(Ordering::SeqCst), 0);
    let scheduler = Arc::into_inner(scheduler).unwrap();
    scheduler.shutdown(Duration::from_secs(10));
}
