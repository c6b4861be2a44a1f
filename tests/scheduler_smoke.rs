use std::time::Duration;
use stepsched::process::{Event, NoCommand, Process, Status, StepOutput};
use stepsched::sched::Scheduler;

struct Square(u64);
impl Process for Square {
    type Input = u64;
    type Message = u64;
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = ();
    fn init(&mut self, _: &str, x: u64) -> Result<(), ()> {
        self.0 = x;
        Ok(())
    }
    fn step(&mut self, _: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
        out.done(self.0 * self.0);
        Ok(())
    }
}

#[test]
fn many_processes_complete() {
    let s = Scheduler::builder().workers(2).build().unwrap();
    let handles: Vec<_> = (0..10_000u64)
        .map(|i| s.submit_joinable(Square(0), "sq", i).unwrap())
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        assert_eq!(h.join(), Ok(i as u64 * i as u64));
    }
    let r = s.shutdown(Duration::from_secs(1));
    assert_eq!(r.forced, 0);
    println!("{}", s.stats());
}

struct Pinger {
    peer: Option<stepsched::process::Pid>,
    left: u64,
}
impl Process for Pinger {
    type Input = u64;
    type Message = (stepsched::process::Pid, u64);
    type Command = NoCommand;
    type Reply = ();
    type Output = u64;
    type Error = ();
    fn init(&mut self, _: &str, n: u64) -> Result<(), ()> {
        self.left = n;
        Ok(())
    }
    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), ()> {
        for e in events.drain(..) {
            if let Event::Message((from, n)) = e {
                self.peer = Some(from);
                if n == 0 {
                    out.done(self.left);
                    return Ok(());
                }
                out.send(from, (out.pid(), n - 1));
            }
        }
        out.set_status(Status::Idle);
        Ok(())
    }
}

#[test]
fn ping_pong() {
    let s = Scheduler::builder().workers(2).build().unwrap();
    let a = s
        .submit_joinable(
            Pinger {
                peer: None,
                left: 0,
            },
            "p",
            0,
        )
        .unwrap();
    let b = s
        .submit_joinable(
            Pinger {
                peer: None,
                left: 0,
            },
            "p",
            0,
        )
        .unwrap();
    let t = std::time::Instant::now();
    s.send(a.pid(), (b.pid(), 100_000)).unwrap();
    let ra = a.join_timeout(Duration::from_secs(10));
    println!("100k round trips in {:?}", t.elapsed());
    assert!(ra.is_ok());
    s.shutdown(Duration::from_millis(100));
    println!("{}", s.stats());
}
