//! Outside senders reuse the mailbox nodes the workers free (the depot in
//! `src/sched/shared.rs`): once warm, a stream of sends from a thread that
//! is not a worker allocates far fewer nodes than it sends. Before the
//! depot, every such send allocated one (and a worker freed it).
//!
//! Counted two ways: the scheduler's own count of nodes allocated for
//! outside sends (`Stats::outside_node_allocations`), and every allocation
//! of this test binary (its only test, so no other test's allocations are
//! counted) by a global allocator. The second alone no longer sees nodes
//! on Linux, where the pool maps its blocks with `mmap`, 255 nodes each:
//! with the depot's refill removed the test still passed on it, and fails
//! on the first.
//!
//! ```text
//! cargo test --test sched_outside_nodes
//! ```

mod common;
use common::wait_until;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use stepsched::process::{Event, NoCommand, Process, Status, StepOutput};
use stepsched::sched::Scheduler;

/// The system allocator, counting allocations.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is passed on to `System` unchanged; the count is a
// side effect.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Counts what it receives.
struct Sink {
    received: Arc<AtomicU64>,
}

impl Process for Sink {
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
        let mut n = 0;
        for event in events.drain(..) {
            match event {
                Event::Message(_) => n += 1,
                _ => out.done(()), // the shutdown's cancel
            }
        }
        self.received.fetch_add(n, Ordering::Relaxed);
        if out.status().is_none() {
            out.set_status(Status::Idle);
        }
        Ok(())
    }
}

#[test]
fn a_warm_stream_of_outside_sends_reuses_the_nodes_workers_free() {
    // Steps of at most 16 events: the worker's node cache keeps 256 nodes,
    // so a few hundred messages fill it and it starts giving nodes back.
    let scheduler = Scheduler::builder()
        .workers(1)
        .max_events_per_step(16)
        .build()
        .unwrap();
    let received = Arc::new(AtomicU64::new(0));
    let sink = Sink {
        received: Arc::clone(&received),
    };
    let pid = scheduler.submit(sink, "", ()).unwrap();
    let n = if cfg!(miri) { 600 } else { 20_000 };
    let mut sent = 0;
    let mut send_and_drain = |count: u64| {
        for _ in 0..count {
            scheduler.send(pid, sent).unwrap();
            sent += 1;
            // A burst of 64, then let the sink drain it: the depot is
            // refilled between bursts.
            if sent % 64 == 0 {
                let target = sent;
                wait_until("the sink drains the burst", || {
                    received.load(Ordering::Relaxed) >= target
                });
            }
        }
    };
    send_and_drain(n); // warm: the cache fills, the depot gets nodes
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let nodes_before = scheduler.stats().outside_node_allocations;
    send_and_drain(n);
    let allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
    let nodes = scheduler.stats().outside_node_allocations - nodes_before;
    assert!(
        nodes * 4 < n,
        "{nodes} nodes allocated for {n} sends from outside, once warm"
    );
    assert!(
        allocations * 4 < n,
        "{allocations} allocations for {n} sends from outside, once warm"
    );
    let report = scheduler.shutdown(common::ms(10_000));
    assert!(!report.timed_out, "{report:?}");
}
