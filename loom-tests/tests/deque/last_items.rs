//! Races over the last items: the owner's `pop` against a thief's `steal` or
//! `steal_half_into`, two thieves against each other, all three at once, and
//! a thief stealing from another thief's deque.

use super::*;

models! {
    /// The owner pops the only item while a thief steals it: exactly one wins.
    fn pop_vs_steal_on_last_item<T>() [Id => pop_vs_steal_on_last_item] {
        let w: Worker<T> = Worker::with_capacity(1);
        push(&w, 0..1);
        let s = w.stealer();
        let thief = thread::spawn(move || steal(&s));
        let mut got = pop(&w);
        got.extend(thief.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 1);
        assert_all_dropped(1);
    }

    /// Two thieves `steal` the only item: exactly one wins.
    fn two_steals_on_last_item<T>() [Id => two_steals_on_last_item] {
        let w: Worker<T> = Worker::with_capacity(1);
        push(&w, 0..1);
        let (s1, s2) = (w.stealer(), w.stealer());
        let t1 = thread::spawn(move || steal(&s1));
        let t2 = thread::spawn(move || steal(&s2));
        let mut got = t1.join().unwrap();
        got.extend(t2.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 1);
        assert_all_dropped(1);
    }

    /// Three items; a thief claims the two oldest with `steal_half_into`
    /// while the owner pops twice, reaching into the claimed range (item 1).
    fn pop_vs_steal_half_into<T>() [Id => pop_vs_steal_half_into] {
        let w: Worker<T> = Worker::with_capacity(2);
        push(&w, 0..3); // grows to 4 before the race
        let s = w.stealer();
        let thief = thread::spawn(move || steal_half(&s));
        let mut got = pop(&w);
        got.extend(pop(&w));
        got.extend(thief.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 3);
        assert_all_dropped(3);
    }

    /// The owner pops its last two items while a thief's `steal_half_into`
    /// claims one of them: each pop must see the claim or fail it.
    fn pop_until_empty_vs_steal_half_into<T>() [Id => pop_until_empty_vs_steal_half_into] {
        let w: Worker<T> = Worker::with_capacity(2);
        push(&w, 0..2);
        let s = w.stealer();
        let thief = thread::spawn(move || steal_half(&s));
        let mut got = drain(&w);
        got.extend(thief.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 2);
        assert_all_dropped(2);
    }

    /// Two thieves `steal_half_into` their own deques from one victim that
    /// holds four items, while the owner pops once: claims never overlap.
    fn two_steal_half_into_race<T>() [Id => two_steal_half_into_race] {
        let w: Worker<T> = Worker::with_capacity(4);
        push(&w, 0..4);
        let (s1, s2) = (w.stealer(), w.stealer());
        let t1 = thread::spawn(move || steal_half(&s1));
        let t2 = thread::spawn(move || steal_half(&s2));
        let mut got = pop(&w);
        got.extend(t1.join().unwrap());
        got.extend(t2.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 4);
        assert_all_dropped(4);
    }

    /// `steal` and `steal_half_into` race each other and the owner's pop
    /// over three items.
    fn steal_vs_steal_half_into_vs_pop<T>() [Id => steal_vs_steal_half_into_vs_pop] {
        let w: Worker<T> = Worker::with_capacity(2);
        push(&w, 0..3);
        let (s1, s2) = (w.stealer(), w.stealer());
        let t1 = thread::spawn(move || steal(&s1));
        let t2 = thread::spawn(move || steal_half(&s2));
        let mut got = pop(&w);
        got.extend(t1.join().unwrap());
        got.extend(t2.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 3);
        assert_all_dropped(3);
    }

    /// Chained stealing: thief A moves a batch into its own deque while
    /// thief B steals from A's deque, so `steal_half_into`'s pushes onto
    /// the destination race a steal from it.
    fn chained_steal_from_a_thiefs_deque<T>() [Id => chained_steal_from_a_thiefs_deque] {
        let w: Worker<T> = Worker::with_capacity(4);
        push(&w, 0..4);
        let s = w.stealer();
        let dest: Worker<T> = Worker::with_capacity(1);
        let dest_stealer = dest.stealer();
        let a = thread::spawn(move || {
            let mut got: Vec<usize> = s.steal_half_into(&dest).success().map(T::redeem).into_iter().collect();
            got.extend(drain(&dest));
            got
        });
        let b = thread::spawn(move || steal(&dest_stealer));
        let mut got = a.join().unwrap();
        got.extend(b.join().unwrap());
        got.extend(drain(&w));
        assert_exactly_once(w, got, 4);
        assert_all_dropped(4);
    }
}
