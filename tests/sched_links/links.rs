//! Links: a chain of 1,000 dies from its head; a trapping process
//! survives and sees each exit.

use super::*;

/// A chain of 1,000; of 50 under Miri (1,000 took it 100 s under Stacked
/// Borrows, over 6 min under Tree Borrows): the exit still travels link by
/// link, through steps on both workers.
#[test]
fn a_link_chain_dies_from_its_head() {
    let s = scheduler();
    let log = Arc::new(Log::default());
    let n = if cfg!(miri) { 50 } else { 1000 };
    let chain: Vec<JoinHandle<Node>> = (0..n).map(|_| spawn(&s, &log)).collect();
    for pair in chain.windows(2) {
        s.send(pair[1].pid(), Msg::Link(pair[0].pid())).unwrap();
    }
    wait_until("every link is set", || {
        let dump = s.processes();
        dump.iter().map(|p| p.links as usize).sum::<usize>() == 2 * (n - 1)
    });
    s.send(chain[0].pid(), Msg::Fail).unwrap();
    let mut outcomes = chain.into_iter().map(joined);
    assert!(matches!(
        outcomes.next(),
        Some(Err(ProcessError::Failed(_)))
    ));
    for outcome in outcomes {
        assert!(
            matches!(outcome, Err(ProcessError::Terminated)),
            "{outcome:?}"
        );
    }
    assert_eq!(s.live(), 0);
}

#[test]
fn a_trapping_process_survives_and_sees_each_exit() {
    let s = scheduler();
    let log = Arc::new(Log::default());
    let trapper = spawn(&s, &log);
    s.send(trapper.pid(), Msg::Trap(true)).unwrap();
    let linked: Vec<JoinHandle<Node>> = (0..10).map(|_| spawn(&s, &log)).collect();
    for l in &linked {
        s.send(trapper.pid(), Msg::Link(l.pid())).unwrap();
    }
    wait_until("the links", || info(&s, trapper.pid()).unwrap().links == 10);
    for (i, l) in linked.iter().enumerate() {
        let end = if i % 2 == 0 { Msg::Fail } else { Msg::Finish };
        s.send(l.pid(), end).unwrap();
    }
    wait_until("ten Downs", || log.downs_of(trapper.pid()).len() == 10);
    let failed = (log.downs_of(trapper.pid()).iter())
        .filter(|(_, r)| matches!(r, ExitReason::Failed(_)))
        .count();
    assert_eq!(failed, 5);
    assert_eq!(info(&s, trapper.pid()).unwrap().links, 0);
    s.send(trapper.pid(), Msg::Finish).unwrap();
    assert!(joined(trapper).is_ok(), "the trapper lived on");
}
