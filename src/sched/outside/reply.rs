//! [`Scheduler::reply`]: answering a process's call from outside a step.

use crate::process::state::Wake;
use crate::process::{Event, Process, ReplyTo};
use crate::sched::scheduler::Scheduler;
use crate::sched::shared::Refusal;

impl<P: Process> Scheduler<P> {
    /// Answers the call that `reply_to` names, from any thread (a handler,
    /// an embedder): as [`StepOutput::reply`](crate::process::StepOutput::reply)
    /// does from a step. The caller gets
    /// `Event::Reply { tag, result: Ok(message) }` if its call still waits;
    /// a reply to a call that has timed out or been answered already, or
    /// whose caller has ended, goes to `on_undelivered`
    /// ([`Builder::on_undelivered`](crate::sched::Builder::on_undelivered)).
    /// A caller on another node gets it across its transport
    /// (`sched::remote`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use stepsched::process::{Event, NoCommand, Pid, Process, ReplyTo, StepOutput};
    /// use stepsched::sched::Scheduler;
    /// use std::sync::mpsc;
    ///
    /// /// Calls the embedder (through a channel), ends with the answer.
    /// struct Asker(mpsc::Sender<ReplyTo>);
    ///
    /// impl Process for Asker {
    ///     type Input = ();
    ///     type Message = u64;
    ///     type Command = NoCommand;
    ///     type Reply = ();
    ///     type Output = u64;
    ///     type Error = ();
    ///
    ///     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> {
    ///         Ok(())
    ///     }
    ///
    ///     fn step(&mut self, events: &mut Vec<Event<Self>>, out: &mut StepOutput<'_, Self>) -> Result<(), ()> {
    ///         if events.is_empty() {
    ///             // A call to itself, whose request it never sees answered:
    ///             // the embedder answers through the token instead.
    ///             let me = out.pid();
    ///             let asked = self.0.clone();
    ///             out.call(me, 1, |reply_to| { asked.send(reply_to).unwrap(); 0 }, Duration::MAX);
    ///         }
    ///         for event in events.drain(..) {
    ///             if let Event::Reply { tag: 1, result: Ok(n) } = event {
    ///                 out.done(n);
    ///             }
    ///         }
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let scheduler = Scheduler::builder().workers(1).build().unwrap();
    /// let (tx, rx) = mpsc::channel();
    /// let asker = scheduler.submit_joinable(Asker(tx), "asker", ()).unwrap();
    /// let reply_to = rx.recv().unwrap();
    /// scheduler.reply(reply_to, 42);
    /// assert_eq!(asker.join(), Ok(42));
    /// ```
    pub fn reply(&self, reply_to: ReplyTo, message: P::Message) {
        let event = Event::Reply {
            tag: reply_to.id(),
            result: Ok(message),
        };
        let shared = &*self.shared;
        let to = reply_to.pid();
        match shared.deliver_remote(to, event, Wake::Completion) {
            Ok(_) => {}
            // The caller is on another node (`remote/calls.rs`).
            Err((
                Refusal::Remote,
                Event::Reply {
                    tag: id,
                    result: Ok(message),
                },
            )) => {
                if let Err(message) = shared.forward_reply(shared.outside_pid(), to, id, message) {
                    shared.undelivered(
                        to,
                        Event::Reply {
                            tag: id,
                            result: Ok(message),
                        },
                    );
                }
            }
            Err((_, event)) => shared.undelivered(to, event),
        }
    }
}
