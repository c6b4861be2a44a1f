//! "If it blocks, only this worker waits: it is not yet registered as a
//! sleeper, so no wakeup is sent to it meanwhile" (`Builder::on_park`,
//! src/sched/builder/mod.rs:136): a message sent while the only worker is
//! blocked in its `on_park` hook is not lost: the worker, registering
//! after the hook, sees it and runs its process.

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use stepsched::process::{Event, NoCommand, Process, Status, StepOutput};
use stepsched::sched::Scheduler;

/// Ends with the first message it gets.
struct Echo;

impl Process for Echo {
    type Input = ();
    type Message = u32;
    type Command = NoCommand;
    type Reply = ();
    type Output = u32;
    type Error = ();

    fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), ()> {
        out.set_status(Status::Idle);
        if let Some(Event::Message(n)) = events.drain(..).next() {
            out.done(n);
        }
        Ok(())
    }
}

#[test]
fn a_message_sent_while_the_only_worker_blocks_in_on_park_is_not_lost() {
    // 1: the next park blocks; 2: blocking now; 3: released. The first
    // park comes before anything is submitted (the worker starts idle).
    let stage = Arc::new(AtomicU32::new(1));
    let hook = Arc::clone(&stage);
    let s = Scheduler::<Echo>::builder()
        .workers(1)
        .on_park(move |_| {
            if hook
                .compare_exchange(1, 2, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                // Released by the test, or by this liveness guard (the
                // test then fails on its own wait, not by hanging here).
                let deadline = std::time::Instant::now() + common::ms(60_000);
                while hook.load(Ordering::SeqCst) != 3 && std::time::Instant::now() < deadline {
                    std::thread::yield_now();
                }
            }
        })
        .build()
        .unwrap();
    common::wait_until("the worker to block in on_park", || {
        stage.load(Ordering::SeqCst) == 2
    });
    // Submitted and sent while the only worker blocks: nothing wakes it.
    let job = s.submit_joinable(Echo, "", ()).unwrap();
    s.send(job.pid(), 7).unwrap();
    stage.store(3, Ordering::SeqCst);
    let outcome = job.join_timeout(common::ms(60_000)).ok();
    assert_eq!(outcome, Some(Ok(7)), "the message was lost");
    s.shutdown(common::ms(5_000));
}
