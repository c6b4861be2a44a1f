//! A flood, and the memory it leaves behind.
//!
//! ```text
//! cargo run --release --example flood            # 5,000,000 messages
//! cargo run --release --example flood -- 1000000 # another count
//! GLIBC_TUNABLES=glibc.malloc.arena_max=1 cargo run --release --example flood -- 5000000 trim
//! ```
//!
//! Two outside threads send `n` messages in all to one process that does a
//! little work per message, far slower than they send, so its mailbox
//! grows to millions. The process gets them in steps of at most
//! [`Builder::max_events_per_step`](stepsched::sched::Builder::max_events_per_step)
//! (it checks each sender's order), and ends when it has all of them. The
//! example prints what the crate holds from the allocator (a counting
//! global allocator) and the resident set size (RSS), before the flood, at
//! its height, and once everything has drained and the scheduler has been
//! idle for a second, and fails if what the crate holds is then more than
//! 16 MiB above the first figure: buffers and caches must give back what a
//! burst took. Linux only (RSS is read from `/proc/self/statm`).
//!
//! # RSS is the allocator's
//!
//! The crate gives its memory back (held: +0.1 MiB after a 5M flood), but
//! with glibc's malloc the RSS stays at its height (~110 MiB). The
//! mailbox nodes are 64-byte chunks, freed into glibc's fast bins, which
//! are never coalesced until something consolidates them, in the arenas of
//! the sender threads; and `malloc_trim` trims only the main arena's top.
//! Measured here: `malloc_trim(0)` alone gives back a quarter (111 to 85
//! MiB); with one arena (`GLIBC_TUNABLES=glibc.malloc.arena_max=1`) and
//! `malloc_trim(0)` once idle, RSS comes back to within 0.5 MiB of where it
//! started. The `trim` argument makes this example call `malloc_trim(0)`
//! after the idle second (glibc only): an embedder that hosts bursts can
//! do the same from its own idle path, or use an allocator that returns
//! memory by itself.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use stepsched::process::{Event, NoCommand, Process, Status, StepOutput};
use stepsched::sched::Scheduler;

/// The system allocator, counting the bytes it has handed out and not had
/// back.
struct Counting;

static HELD: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is passed on to `System` unchanged; the count is a
// side effect.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        HELD.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        HELD.fetch_sub(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Bytes held from the allocator, in MiB.
fn held_mib() -> f64 {
    HELD.load(Ordering::Relaxed) as f64 / (1024.0 * 1024.0)
}

/// Receives `(sender, seq)` until it has `total`, checking each sender's
/// order; records the largest step it was handed.
struct Sink {
    next: [u64; 2],
    received: u64,
    total: u64,
    largest: Arc<AtomicU64>,
}

impl Process for Sink {
    type Input = ();
    type Message = (usize, u64);
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = String;

    fn init(&mut self, _: &str, _: ()) -> Result<(), String> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), String> {
        self.largest
            .fetch_max(events.len() as u64, Ordering::Relaxed);
        for event in events.drain(..) {
            let Event::Message((from, seq)) = event else {
                return Err(format!("unexpected {event:?}"));
            };
            if seq != self.next[from] {
                return Err(format!("sender {from}: {seq} after {}", self.next[from]));
            }
            self.next[from] += 1;
            self.received += 1;
            // A little work per message: slower than the senders.
            black_box((0..20u64).fold(seq, |a, b| a.rotate_left(5) ^ b));
        }
        if self.received == self.total {
            out.done(self.received);
        } else {
            out.set_status(Status::Idle);
        }
        Ok(())
    }
}

/// Asks glibc's malloc to give free memory back to the system (see the
/// module docs); elsewhere, nothing.
fn malloc_trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: glibc's `malloc_trim` takes a byte count and has no
        // other precondition; it may be called from any thread.
        unsafe { malloc_trim(0) };
    }
}

fn rss_mib() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0.0);
    pages * 4096.0 / (1024.0 * 1024.0)
}

fn main() {
    let total: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("a message count"))
        .unwrap_or(5_000_000);
    let trim = std::env::args().nth(2).is_some_and(|a| a == "trim");
    let scheduler = Scheduler::builder()
        .workers(2)
        .build()
        .expect("threads start");
    let largest = Arc::new(AtomicU64::new(0));
    // Warm up: threads, the table's first page, the allocator's arenas.
    thread::sleep(Duration::from_millis(100));
    let (before, held_before) = (rss_mib(), held_mib());

    let started = Instant::now();
    let sink = Sink {
        next: [0; 2],
        received: 0,
        total,
        largest: Arc::clone(&largest),
    };
    let handle = scheduler.submit_joinable(sink, "", ()).expect("submitted");
    let to = handle.pid();
    let (mut peak, mut held_peak) = (before, held_before);
    thread::scope(|s| {
        for from in 0..2 {
            let scheduler = &scheduler;
            s.spawn(move || {
                let n = total / 2 + (from as u64) * (total % 2);
                for seq in 0..n {
                    scheduler.send(to, (from, seq)).expect("the sink lives");
                }
            });
        }
        while !handle.is_finished() {
            peak = peak.max(rss_mib());
            held_peak = held_peak.max(held_mib());
            thread::sleep(Duration::from_millis(5));
        }
    });
    let received = handle.join().expect("every message, once, in order");
    let elapsed = started.elapsed();
    thread::sleep(Duration::from_secs(1));
    if trim {
        malloc_trim();
    }
    let (after, held_after) = (rss_mib(), held_mib());
    let report = scheduler.shutdown(Duration::from_secs(1));

    println!(
        "flood: {received} messages in {:.2} s ({:.0} ns each), largest step {} events",
        elapsed.as_secs_f64(),
        elapsed.as_nanos() as f64 / received as f64,
        largest.load(Ordering::Relaxed)
    );
    println!(
        "held: {held_before:.2} MiB before, {held_peak:.1} MiB at the height, {held_after:.2} MiB \
         after draining and 1 s idle ({:+.2} MiB)",
        held_after - held_before
    );
    println!(
        "rss:  {before:.1} MiB before, {peak:.1} MiB at the height, {after:.1} MiB after \
         draining and 1 s idle ({:+.1} MiB; see the module docs)",
        after - before
    );
    println!("shutdown: {report:?}");
    assert!(
        held_after - held_before <= 16.0,
        "stepsched still holds {:.1} MiB more than before the flood",
        held_after - held_before
    );
}
