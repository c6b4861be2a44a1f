//! The pool's unit tests: blocks mapped and freed, counted per thread
//! (`counts`), so tests running beside them do not count.

use super::*;
use crate::mpsc::{Mailbox, NodeCache};
use std::thread;

/// A node pointer handed to another thread, which frees it.
struct Sent(*mut u8);

// SAFETY: the node is owned by whichever thread holds the `Sent`.
unsafe impl Send for Sent {}

/// The class of 64-byte nodes, and how many a block holds.
const C64: usize = 2;

/// Runs `f` on a thread of its own (fresh carvers and counters) and
/// returns its result.
fn on_a_thread<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    thread::scope(|s| s.spawn(f).join().unwrap())
}

#[test]
fn classes_fit_the_node_or_fall_back_to_box() {
    assert_eq!(class_of(8, 8), Some(0));
    assert_eq!(class_of(64, 8), Some(C64));
    assert_eq!(class_of(65, 8), Some(3));
    assert_eq!(class_of(257, 8), None, "too large: boxed");
    assert_eq!(class_of(16, 128), None, "aligned beyond the header: boxed");
    #[repr(align(128))]
    struct Wide(#[allow(dead_code)] u8);
    type Big = crate::mpsc::node::Node<[u8; 300]>;
    assert_eq!(Big::CLASS, None);
    assert_eq!(crate::mpsc::node::Node::<Wide>::CLASS, None);
    assert_eq!(crate::mpsc::node::Node::<u64>::CLASS, Some(0));
    // A mailbox of large items maps no block.
    let counted = on_a_thread(|| {
        let m = Mailbox::new();
        m.push([7u8; 300]);
        // SAFETY: this thread is the only consumer.
        assert_eq!(unsafe { m.pop() }, Some([7u8; 300]));
        drop(m);
        counts::get()
    });
    assert_eq!(counted, (0, 0));
}

/// A block is freed by the free of its last node, not one free before,
/// and the carver moves on to a new block when one is used up.
#[test]
fn a_block_is_freed_exactly_when_its_last_node_is() {
    on_a_thread(|| {
        let n = per_block(C64);
        let first: Vec<_> = (0..n).map(|_| alloc(C64)).collect();
        assert_eq!(counts::get(), (1, 0));
        let next = alloc(C64);
        assert_eq!(counts::get(), (2, 0), "a used-up block is left");
        assert_ne!(header_of(next), header_of(first[0]));
        for (i, &node) in first.iter().enumerate() {
            assert_eq!(counts::get(), (2, 0), "freed early, before node {i}");
            // SAFETY: carved above, freed once.
            unsafe { free(node) };
        }
        assert_eq!(counts::get(), (2, 1), "the last free frees the block");
        // The current block is held by its uncarved nodes.
        // SAFETY: carved above, freed once.
        unsafe { free(next) };
        assert_eq!(counts::get(), (2, 1));
    });
}

/// A thread that exits retires its partly carved block: the block is
/// freed by the free of its last carved node, on another thread.
#[test]
fn thread_exit_retires_a_partly_carved_block() {
    let nodes = on_a_thread(|| {
        let nodes: Vec<_> = (0..3).map(|_| Sent(alloc(C64))).collect();
        assert_eq!(counts::get(), (1, 0));
        nodes
    });
    on_a_thread(move || {
        for (i, node) in nodes.into_iter().enumerate() {
            assert_eq!(counts::get(), (0, 0), "freed early, before node {i}");
            // SAFETY: carved by the exited thread, handed to us.
            unsafe { free(node.0) };
        }
        assert_eq!(counts::get(), (0, 1));
    });
    // A thread whose nodes are all freed before it exits frees its block
    // as it exits.
    let (before, after) = on_a_thread(|| {
        let node = alloc(C64);
        // SAFETY: carved above, freed once.
        unsafe { free(node) };
        let before = counts::get();
        // Retire now, as the thread-local's destructor will.
        CARVERS.with(|c| c.0[C64].retire());
        (before, counts::get())
    });
    assert_eq!((before, after), ((1, 0), (1, 1)));
}

/// Nodes carved by several threads and freed by others, in a mixed
/// order: every block mapped is freed once, after the carvers exit.
#[test]
fn nodes_of_different_threads_free_every_block_once() {
    let threads = 3;
    let each = if cfg!(miri) {
        300
    } else {
        3 * per_block(C64) + 17
    };
    let (nodes, mapped): (Vec<Vec<Sent>>, Vec<usize>) = thread::scope(|s| {
        let carvers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(move || {
                    let nodes: Vec<_> = (0..each).map(|_| Sent(alloc(C64))).collect();
                    (nodes, counts::get().0)
                })
            })
            .collect();
        carvers.into_iter().map(|h| h.join().unwrap()).unzip()
    });
    let mapped: usize = mapped.iter().sum();
    assert_eq!(mapped, threads * each.div_ceil(per_block(C64)));
    // Two freeing threads, each taking every other node of every carver.
    let (mut even, mut odd) = (Vec::new(), Vec::new());
    for (i, node) in nodes.into_iter().flatten().enumerate() {
        if i % 2 == 0 {
            even.push(node)
        } else {
            odd.push(node)
        }
    }
    let unmapped: usize = thread::scope(|s| {
        [even, odd]
            .map(|half| {
                s.spawn(move || {
                    for node in half {
                        // SAFETY: carved by an exited thread, ours now.
                        unsafe { free(node.0) };
                    }
                    counts::get().1
                })
            })
            .map(|h| h.join().unwrap())
            .iter()
            .sum()
    });
    assert_eq!(unmapped, mapped);
}

/// An allocation after this thread's carvers are gone gets a block of
/// its own, which its free gives back.
#[test]
fn a_node_alone_frees_its_block() {
    on_a_thread(|| {
        let node = alloc_alone(C64);
        assert_eq!(counts::get(), (1, 0));
        // SAFETY: carved above, freed once.
        unsafe { free(node) };
        assert_eq!(counts::get(), (1, 1));
    });
}

/// A thread-local destroyed after the carvers allocates and frees
/// mailbox nodes in its destructor: each is served by a block of its
/// own, and every such block is freed.
#[test]
fn nodes_allocated_after_the_carvers_are_gone_free_their_blocks() {
    static SERVED_ALONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    struct Late;
    impl Drop for Late {
        fn drop(&mut self) {
            let gone = CARVERS.try_with(|_| ()).is_err();
            let before = counts::get();
            let m = Mailbox::new();
            let mut cache = NodeCache::with_limit(1);
            (0..3u64).for_each(|i| m.push_with(i, &mut cache));
            // SAFETY: this thread is the only consumer.
            assert_eq!(unsafe { m.pop_with(&mut cache) }, Some(0));
            drop((m, cache));
            let after = counts::get();
            if gone {
                // A failed assert here aborts the test binary.
                assert_eq!((after.0 - before.0, after.1 - before.1), (4, 4));
                SERVED_ALONE.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
    std::thread_local! { static LATE: Late = const { Late }; }
    on_a_thread(|| {
        // Registered before the carvers, so destroyed after them (glibc
        // runs thread-local destructors in reverse order).
        LATE.with(|_| ());
        let node = alloc(C64);
        // SAFETY: carved above, freed once.
        unsafe { free(node) };
    });
    if cfg!(all(target_os = "linux", target_env = "gnu")) {
        assert!(SERVED_ALONE.load(std::sync::atomic::Ordering::Relaxed));
    }
}
