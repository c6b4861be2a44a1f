//! A flood, and the memory it leaves behind.
//!
//! ```text
//! cargo run --release --example flood            # 5,000,000 messages, RSS checked
//! cargo run --release --example flood -- 1000000 # another count
//! cargo run --release --example flood -- 5000000 lax trim
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
//! 16 MiB above the first figure, or if the RSS is (the target, with glibc's
//! malloc under its default settings): buffers and caches must give
//! back what a burst took. RSS is read from `/proc/self/statm` (Linux; 0
//! elsewhere). Mailbox nodes come from the crate's own blocks, mapped
//! outside malloc (`src/mpsc/pool.rs`), so the held figure leaves them out
//! and the RSS counts them.
//!
//! # Why mailbox nodes do not come from malloc
//!
//! With glibc's malloc under its default settings, nodes that are each a
//! `malloc` of their sender's keep the RSS at its height after a flood,
//! although the crate gives everything back (the example prints where the
//! memory is: `rss by mapping`, from `/proc/self/smaps`, and glibc's
//! `mallinfo`):
//!
//! - A send from outside takes a node from the scheduler's depot when it
//!   has one and otherwise allocates it, so in a flood, whose mailbox grows
//!   to millions of nodes, the sender threads would allocate them, in their
//!   own *thread arenas* (the anonymous mappings glibc reserves 64 MiB at a
//!   time), and the workers would free them there.
//! - Freed, they are 64-byte chunks in those arenas' fast bins. Fast-bin
//!   chunks are never merged or returned until something consolidates the
//!   arena: a large request or a free of 64 KiB or more made *in that
//!   arena*, or `malloc_trim`. After the flood no thread allocates there
//!   (the senders have exited or gone quiet), so nothing does.
//! - `malloc_trim(0)` (the `trim` argument, after the idle second)
//!   consolidates every arena and releases the whole pages of free chunks
//!   in its bins, but it never trims the *top chunk* of a thread arena (the
//!   free space above the arena's highest chunk in use), so a resident tail
//!   stays in each sender arena. Only one arena
//!   (`GLIBC_TUNABLES=glibc.malloc.arena_max=1`) and the trim would bring
//!   the RSS back.
//!
//! So no call of the crate's could give that memory back. The crate carves
//! mailbox nodes from 16 KiB blocks of its own instead, which it maps with
//! `mmap` and unmaps as soon as their last node is freed, whatever thread
//! carved them (`src/mpsc/pool.rs`). After the flood the RSS is back to
//! within a few MiB of its first figure with glibc's defaults, no trim and
//! no tunable. What is left is the blocks still pinned by a node in use:
//! the workers' node caches (up to 16,384 nodes each) and the depot
//! (4,096) keep nodes of many blocks, and one kept node keeps its block;
//! once the scheduler has shut down (the workers' caches freed) less
//! remains. Larger blocks would pin more memory for the same kept nodes.
//!
//! # Arguments
//!
//! After the message count: `lax` prints the RSS without checking it (the
//! check needs Linux); `trim` calls `malloc_trim(0)` after the idle second
//! (glibc only; the crate's own blocks leave it little to do). `strict`,
//! the check, is the default and may be given explicitly.

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

/// glibc's allocator statistics, summed over its arenas: bytes in use,
/// free, and free in fast bins (the `int` fields of `mallinfo`, which
/// every glibc has; they wrap above 2 GiB).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn mallinfo_mib() -> Option<(f64, f64, f64)> {
    #[repr(C)]
    struct MallInfo {
        arena: std::ffi::c_int,
        ordblks: std::ffi::c_int,
        smblks: std::ffi::c_int,
        hblks: std::ffi::c_int,
        hblkhd: std::ffi::c_int,
        usmblks: std::ffi::c_int,
        fsmblks: std::ffi::c_int,
        uordblks: std::ffi::c_int,
        fordblks: std::ffi::c_int,
        keepcost: std::ffi::c_int,
    }
    extern "C" {
        fn mallinfo() -> MallInfo;
    }
    // SAFETY: glibc's `mallinfo` takes nothing and returns the struct by
    // value (the layout above is glibc's `struct mallinfo`); it locks each
    // arena in turn and may be called from any thread.
    let info = unsafe { mallinfo() };
    let mib = |bytes: std::ffi::c_int| bytes as u32 as f64 / (1024.0 * 1024.0);
    Some((mib(info.uordblks), mib(info.fordblks), mib(info.fsmblks)))
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn mallinfo_mib() -> Option<(f64, f64, f64)> {
    None
}

/// Resident MiB by kind of mapping, from `/proc/self/smaps`: the main
/// heap (`[heap]`), glibc's thread arenas (anonymous mappings that start
/// on a 64 MiB boundary, where glibc places them), other anonymous
/// mappings (thread stacks, large allocations) and files.
fn rss_by_mapping() -> Option<[f64; 4]> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut kb = [0u64; 4];
    let mut kind = 3;
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let first = fields.next().unwrap_or("");
        if let Some((start, _)) = first.split_once('-') {
            let Ok(start) = u64::from_str_radix(start, 16) else {
                continue;
            };
            let path = fields.nth(4);
            kind = match path {
                Some("[heap]") => 0,
                None if start % (64 << 20) == 0 => 1,
                None => 2,
                Some(_) => 3,
            };
        } else if first == "Rss:" {
            kb[kind] += fields.next().and_then(|k| k.parse().ok()).unwrap_or(0);
        }
    }
    Some(kb.map(|k| k as f64 / 1024.0))
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
    let flags: Vec<String> = std::env::args().skip(2).collect();
    let trim = flags.iter().any(|a| a == "trim");
    let strict = !flags.iter().any(|a| a == "lax");
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
    let trimmed = trim.then(|| {
        let started = Instant::now();
        malloc_trim();
        started.elapsed()
    });
    let (after, held_after) = (rss_mib(), held_mib());
    let (mapped, malloc) = (rss_by_mapping(), mallinfo_mib());
    let report = scheduler.shutdown(Duration::from_secs(1));
    let after_shutdown = rss_mib();

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
    println!(
        "rss after shutdown (every node cache freed): {after_shutdown:.1} MiB ({:+.1} MiB)",
        after_shutdown - before
    );
    if let Some([heap, arenas, anon, files]) = mapped {
        println!(
            "rss by mapping after: main heap {heap:.1} MiB, thread arenas {arenas:.1} MiB, \
             other anonymous {anon:.1} MiB, files {files:.1} MiB"
        );
    }
    if let Some((used, free, fast)) = malloc {
        println!(
            "malloc after: {used:.1} MiB in use, {free:.1} MiB free ({fast:.1} MiB in fast bins)"
        );
    }
    if let Some(took) = trimmed {
        println!("malloc_trim(0) took {:.1} ms", took.as_secs_f64() * 1e3);
    }
    println!("shutdown: {report:?}");
    assert!(
        held_after - held_before <= 16.0,
        "stepsched still holds {:.1} MiB more than before the flood",
        held_after - held_before
    );
    assert!(
        !strict || after - before <= 16.0,
        "RSS is {:.1} MiB above its first figure (see the module docs)",
        after - before
    );
}
