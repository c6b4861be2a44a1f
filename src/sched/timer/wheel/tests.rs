use super::{Fired, Key, TimerKind, Wheel, HORIZON};

fn fire(wheel: &mut Wheel, now: u64) -> Vec<u64> {
    let mut out = Vec::new();
    wheel.advance(now, &mut out);
    out.iter().map(|f: &Fired| f.tag).collect()
}

#[test]
fn an_entry_is_36_bytes() {
    assert_eq!(core::mem::size_of::<super::Entry>(), 36);
}

#[test]
#[cfg_attr(miri, ignore = "300,000 advances: minutes under Miri")]
fn entries_fire_at_their_tick_in_deadline_order() {
    let mut wheel = Wheel::new();
    let deadlines = [5u64, 1, 64, 63, 4095, 4096, 300_000, 70, 1];
    for (tag, &d) in deadlines.iter().enumerate() {
        wheel.insert(d, 0, tag as u64, TimerKind::Timer);
    }
    let mut fired = Vec::new();
    let mut last = 0;
    for now in 0..=300_000u64 {
        let tags = fire(&mut wheel, now);
        for tag in tags {
            assert_eq!(deadlines[tag as usize], now, "tag {tag} fired at {now}");
            assert!(deadlines[tag as usize] >= last);
            last = deadlines[tag as usize];
            fired.push(tag);
        }
    }
    assert_eq!(fired, vec![1, 8, 0, 3, 2, 7, 4, 5, 6]);
    assert!(wheel.is_empty());
}

#[test]
fn a_big_jump_fires_everything_due_in_order() {
    let mut wheel = Wheel::new();
    for d in [900u64, 3, 70_000, 64 * 64 * 64 + 5, 12] {
        wheel.insert(d, 0, d, TimerKind::Timer);
    }
    assert_eq!(wheel.next_expiration(), Some(3));
    assert_eq!(
        fire(&mut wheel, 1_000_000),
        vec![3, 12, 900, 70_000, 262_149]
    );
    assert_eq!(wheel.next_expiration(), None);
}

/// `drain` returns at once when `len` is 0, so `len` must count exactly
/// the entries in the lists after cancels, fires and reuse: a drain
/// takes out every pending entry, at every level and past the horizon,
/// and nothing cancelled or fired.
#[test]
fn drain_takes_out_exactly_the_pending_entries() {
    let mut wheel = Wheel::new();
    let mut out = Vec::new();
    wheel.drain(&mut out);
    assert!(out.is_empty(), "a new wheel holds nothing");
    let cancelled = wheel.insert(7, 0, 1, TimerKind::Timer);
    for (tag, d) in [
        (2u64, 3u64),
        (3, 70),
        (4, 5_000),
        (5, 300_000),
        (6, HORIZON * 2),
    ] {
        wheel.insert(d, 0, tag, TimerKind::Timer);
    }
    assert!(wheel.cancel(cancelled).is_some());
    assert_eq!(fire(&mut wheel, 4), vec![2]);
    wheel.insert(9, 4, 7, TimerKind::Timeout); // reuses a freed entry
    wheel.drain(&mut out);
    let mut tags: Vec<u64> = out.iter().map(|f| f.tag).collect();
    tags.sort_unstable();
    assert_eq!(tags, [3, 4, 5, 6, 7]);
    assert!(wheel.is_empty());
    out.clear();
    wheel.drain(&mut out);
    assert!(out.is_empty(), "drained once");
}

#[test]
fn cancel_removes_once_and_stale_keys_do_nothing() {
    let mut wheel = Wheel::new();
    let a = wheel.insert(10, 1, 100, TimerKind::Timer);
    let b = wheel.insert(10, 2, 200, TimerKind::Timeout);
    assert_eq!(wheel.cancel(a).map(|f| f.tag), Some(100));
    assert_eq!(wheel.cancel(a), None);
    // `a`'s entry is reused; the old key must not reach the new timer.
    let c = wheel.insert(20, 3, 300, TimerKind::Timer);
    assert_eq!(wheel.cancel(Key::from_raw(a.into_raw())), None);
    assert_eq!(fire(&mut wheel, 15), vec![200]);
    assert_eq!(wheel.cancel(b), None, "fired already");
    assert_eq!(wheel.len(), 1);
    assert_eq!(wheel.cancel(c).map(|f| f.pid), Some(3));
    assert!(wheel.is_empty());
    assert_eq!(wheel.next_expiration(), None);
}

#[test]
fn a_fired_entry_names_its_arming_and_a_reuse_is_another() {
    let mut wheel = Wheel::new();
    let first = wheel.insert(3, 1, 7, TimerKind::Timer);
    let mut out = Vec::new();
    wheel.advance(3, &mut out);
    assert_eq!(out.iter().map(|f| f.key).collect::<Vec<_>>(), vec![first]);
    // The same entry, re-armed with the same tag: a different key, so
    // the first firing's event cannot pass for the second's.
    let second = wheel.insert(9, 1, 7, TimerKind::Timer);
    assert_eq!(second.index, first.index, "the freed entry is reused");
    assert_ne!(second, first);
    assert_eq!(wheel.cancel(second).map(|f| f.key), Some(second));
}

#[test]
fn past_deadlines_fire_at_the_next_advance() {
    let mut wheel = Wheel::new();
    assert!(fire(&mut wheel, 1000).is_empty());
    wheel.insert(10, 0, 1, TimerKind::Timer);
    assert_eq!(wheel.next_expiration(), Some(1000));
    assert_eq!(fire(&mut wheel, 1000), vec![1]);
}

#[test]
fn deadlines_past_the_horizon_fire_on_time() {
    let mut wheel = Wheel::new();
    let far = HORIZON * 3 + 17;
    wheel.insert(far, 0, 1, TimerKind::Timer);
    let mut now = 0;
    // Jump from expiration to expiration, as a parked worker would.
    while let Some(next) = wheel.next_expiration() {
        assert!(next > now || next == far, "time moves forward");
        now = next;
        let tags = fire(&mut wheel, now);
        if !tags.is_empty() {
            assert_eq!((tags, now), (vec![1], far));
        }
    }
    assert_eq!(now, far);
}

#[test]
fn random_schedule_matches_a_sorted_model() {
    let mut wheel = Wheel::new();
    let mut model: Vec<(u64, u64, Key)> = Vec::new();
    let mut rng = 0x2545_f491_u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut now = 0u64;
    for round in 0..if cfg!(miri) { 1_000 } else { 20_000u64 } {
        match next() % 4 {
            0 | 1 => {
                let d = now + next() % (1 << (next() % 30));
                let key = wheel.insert(d, 0, round, TimerKind::Timer);
                model.push((d, round, key));
            }
            2 if !model.is_empty() => {
                let at = (next() % model.len() as u64) as usize;
                let (_, tag, key) = model.swap_remove(at);
                assert_eq!(wheel.cancel(key).map(|f| f.tag), Some(tag));
            }
            _ => {
                now += next() % 5000;
                let mut out = Vec::new();
                wheel.advance(now, &mut out);
                let mut due: Vec<(u64, u64)> = model
                    .iter()
                    .filter(|(d, _, _)| *d <= now)
                    .map(|&(d, t, _)| (d, t))
                    .collect();
                due.sort();
                model.retain(|(d, _, _)| *d > now);
                let got: Vec<(u64, u64)> = out.iter().map(|f| (f.deadline, f.tag)).collect();
                let mut sorted = got.clone();
                sorted.sort_by_key(|&(d, _)| d);
                assert_eq!(got, sorted, "fired in deadline order");
                sorted.sort();
                assert_eq!(sorted, due);
            }
        }
        assert_eq!(wheel.len(), model.len());
        if let (Some(next), Some(min)) = (wheel.next_expiration(), model.iter().map(|m| m.0).min())
        {
            assert!(next <= min.max(now), "next {next} after earliest {min}");
        }
    }
}
