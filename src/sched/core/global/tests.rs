use super::*;
use std::cell::Cell;
use std::rc::Rc;

#[test]
fn batch_is_one_plus_sixteen_in_fifo_order() {
    let global = GlobalQueue::new();
    (0..40).for_each(|i| global.push(i));
    let mut local = Vec::new();
    assert_eq!(
        global.take_batch(|i| local.push(i)),
        Take::Taken {
            first: 0,
            moved: 16
        }
    );
    assert_eq!(local, (1..17).collect::<Vec<_>>());
    local.clear();
    assert_eq!(
        global.take_batch(|i| local.push(i)),
        Take::Taken {
            first: 17,
            moved: 16
        }
    );
    assert_eq!(local, (18..34).collect::<Vec<_>>());
    local.clear();
    assert_eq!(
        global.take_batch(|i| local.push(i)),
        Take::Taken {
            first: 34,
            moved: 5
        }
    );
    assert_eq!(local, (35..40).collect::<Vec<_>>());
    assert_eq!(global.take_batch(|_| panic!("empty")), Take::Empty);
}

#[test]
fn busy_when_the_token_is_held() {
    let global = GlobalQueue::new();
    (0..3).for_each(|i| global.push(i));
    let mut seen = Vec::new();
    let outcome = global.take_batch(|_| {
        // A second consumer arriving mid-take must not wait.
        seen.push(global.take_one());
    });
    assert_eq!(outcome, Take::Taken { first: 0, moved: 2 });
    // While item 2 is still queued the token is the obstacle; once the
    // holder has popped everything the cheap emptiness check answers.
    assert_eq!(seen, [Take::Busy, Take::Empty]);
    assert!(global.is_empty());
}

#[test]
fn mid_link_is_reported_not_empty() {
    let global = GlobalQueue::new();
    let pending = global.queue.push_mid_link(5);
    assert!(!global.is_empty());
    assert_eq!(global.take_one(), Take::Inconsistent);
    pending.link();
    assert_eq!(global.take_one(), Take::Taken { first: 5, moved: 0 });
}

#[test]
fn panicking_sink_releases_the_token() {
    let global = GlobalQueue::new();
    (0..5).for_each(|i| global.push(i));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        global.take_batch(|i| assert_ne!(i, 2, "sink fails on 2"))
    }));
    assert!(result.is_err());
    // Items 0 (the unwound `first`), 1 and 2 are gone; 3 and 4 remain.
    let mut rest = Vec::new();
    assert_eq!(
        global.take_batch(|i| rest.push(i)),
        Take::Taken { first: 3, moved: 1 }
    );
    assert_eq!(rest, [4]);
}

#[test]
fn drop_drops_remaining_items_once() {
    struct Counted(Rc<Cell<usize>>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }
    let drops = Rc::new(Cell::new(0));
    let global = GlobalQueue::new();
    (0..20).for_each(|_| global.push(Counted(Rc::clone(&drops))));
    let mut local = Vec::new();
    let first = global.take_batch(|c| local.push(c)).first();
    assert_eq!(drops.get(), 0);
    drop(global);
    assert_eq!(drops.get(), 3);
    drop((first, local));
    assert_eq!(drops.get(), 20);
}

#[test]
fn two_consumers_take_each_item_once() {
    use std::sync::Arc;
    let n: usize = if cfg!(miri) { 60 } else { 20_000 };
    let global = Arc::new(GlobalQueue::new());
    let producer = {
        let global = Arc::clone(&global);
        std::thread::spawn(move || (0..n).for_each(|i| global.push(i)))
    };
    let consumers: Vec<_> = (0..2)
        .map(|_| {
            let global = Arc::clone(&global);
            std::thread::spawn(move || {
                let mut got = Vec::new();
                let mut idle = 0;
                while idle < 1000 {
                    let mut batch = Vec::new();
                    match global.take_batch(|i| batch.push(i)) {
                        Take::Taken { first, .. } => {
                            idle = 0;
                            got.push(first);
                            got.extend(batch);
                        }
                        _ => {
                            idle += 1;
                            std::thread::yield_now();
                        }
                    }
                }
                got
            })
        })
        .collect();
    producer.join().unwrap();
    let mut all: Vec<usize> = consumers
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    // Whatever the consumers' idle cut-off left behind.
    while let Some(i) = global.take_one().first() {
        all.push(i);
    }
    all.sort_unstable();
    assert_eq!(all, (0..n).collect::<Vec<_>>());
}
