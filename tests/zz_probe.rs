use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use stepsched::process::{Event, NoCommand, Process, StepOutput};
use stepsched::sched::Scheduler;
struct E(Arc<AtomicU64>);
impl Process for E {
    type Input = (); type Message = u64; type Command = NoCommand; type Reply = (); type Output = u64; type Error = ();
    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    fn step(&mut self, ev: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
        for e in ev.drain(..) { if let Event::Message(_) = e { self.0.fetch_add(1, Ordering::SeqCst); out.done(0) } }
        Ok(())
    }
}
#[test]
fn probe() {
    for round in 0..200 {
        let received = Arc::new(AtomicU64::new(0));
        let undelivered = Arc::new(AtomicU64::new(0));
        let u = Arc::clone(&undelivered);
        let s = Arc::new(Scheduler::builder().workers(2).on_undelivered(move |_, e| if let Event::Message(_) = e { u.fetch_add(1, Ordering::SeqCst); }).build().unwrap());
        let pids: Arc<Vec<_>> = Arc::new((0..500).map(|_| s.submit(E(Arc::clone(&received)), "e", ()).unwrap()).collect());
        let senders: Vec<_> = (0..3).map(|_| { let s = Arc::clone(&s); let pids = Arc::clone(&pids); std::thread::spawn(move || {
            let mut ok = 0u64;
            loop { let mut any = false; for p in pids.iter() { if s.send(*p, 1).is_ok() { ok += 1; any = true; } } if !any { break ok; } }
        })}).collect();
        let accepted: u64 = senders.into_iter().map(|t| t.join().unwrap()).sum();
        s.shutdown(Duration::from_secs(1));
        let (r, u) = (received.load(Ordering::SeqCst), undelivered.load(Ordering::SeqCst));
        assert_eq!(accepted, r + u, "round {round}: accepted {accepted} received {r} undelivered {u}");
    }
}
