//! The handle's part of the registry: [`Scheduler::register`],
//! [`whereis`](Scheduler::whereis), [`unregister`](Scheduler::unregister)
//! and [`registered`](Scheduler::registered).

use crate::process::{Name, Pid, Process, RegisterError};
use crate::sched::Scheduler;

impl<P: Process> Scheduler<P> {
    /// Registers `name` for the live process `pid` (Erlang's
    /// `register/2`). The name is removed when the process ends, however it
    /// ends, before its monitors, links, joiner and `on_complete` hook are
    /// told: whoever learns of the end may register the name again. A
    /// process holds at most one name; a name names one process.
    ///
    /// A register racing the process's end either fails with
    /// [`RegisterError::NoSuchProcess`] or is removed by that end: no name
    /// is ever left pointing at an ended process, and a stale PID never
    /// resolves to a later process of its slot. (A process still stuck in
    /// a step when [`shutdown`](Scheduler::shutdown) gives up on it has not
    /// ended: it keeps its name.)
    ///
    /// ```
    /// # use stepsched::process::{Event, NoCommand, Process, StepOutput};
    /// # struct Room;
    /// # impl Process for Room {
    /// #     type Input = (); type Message = (); type Command = NoCommand;
    /// #     type Reply = (); type Output = (); type Error = ();
    /// #     fn init(&mut self, _: &str, _: ()) -> Result<(), ()> { Ok(()) }
    /// #     fn step(&mut self, _: &mut Vec<Event<Self>>, _: &mut StepOutput<'_, Self>) -> Result<(), ()> { Ok(()) }
    /// # }
    /// use stepsched::process::RegisterError;
    /// use stepsched::sched::Scheduler;
    ///
    /// let scheduler = Scheduler::builder().workers(1).build()?;
    /// let room = scheduler.submit(Room, "", ()).map_err(|_| "refused").unwrap();
    /// let other = scheduler.submit(Room, "", ()).map_err(|_| "refused").unwrap();
    /// scheduler.register(format!("room-{}", 42), room).unwrap();
    /// assert_eq!(scheduler.whereis("room-42"), Some(room));
    /// assert!(matches!(
    ///     scheduler.register("room-42", other),
    ///     Err(RegisterError::NameTaken { holder, .. }) if holder == room
    /// ));
    /// assert_eq!(scheduler.unregister("room-42"), Some(room));
    /// assert_eq!(scheduler.whereis("room-42"), None);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`RegisterError::NameTaken`] (naming the holder) if a live process
    /// holds `name`; [`RegisterError::AlreadyNamed`] if `pid` has a name;
    /// [`RegisterError::NoSuchProcess`] if `pid` is unknown, ended or
    /// stale; [`RegisterError::ShuttingDown`] once shutdown began.
    pub fn register(&self, name: impl Into<Name>, pid: Pid) -> Result<(), RegisterError> {
        self.shared.register(name.into(), pid)
    }

    /// The process registered as `name`, if any (Erlang's `whereis/1`).
    /// Allocates nothing; takes the registry's lock for one map lookup.
    /// As in Erlang, the process may end right after the answer: a send to
    /// it then fails as a send to any ended process does.
    pub fn whereis(&self, name: &str) -> Option<Pid> {
        self.shared.whereis(name)
    }

    /// Removes `name`, returning the process it named, or `None` if no
    /// process held it (Erlang's `unregister/1`, which fails instead). The
    /// process goes on, unnamed; it may be registered again.
    pub fn unregister(&self, name: &str) -> Option<Pid> {
        self.shared.unregister(name)
    }

    /// Every name and its process, in no particular order: a copy, taken
    /// under the registry's lock (one clone of each name's `Arc`).
    pub fn registered(&self) -> Vec<(Name, Pid)> {
        let map = self.shared.registry.lock();
        map.by_name
            .iter()
            .map(|(name, &pid)| (name.clone(), pid))
            .collect()
    }
}
