//! [`Dyn`]: the open, boxed form of several kinds of process in one
//! scheduler (the closed form is [`kinds!`](crate::kinds)).

use super::{Command, Event, Hosts, Kind, Process, StepOutput};
use core::any::{type_name, Any};
use core::fmt;

/// The types every kind of a [`Dyn<T>`](Dyn) host shares: those of
/// [`Process`] but its input, which is each kind's own.
pub trait Types: Send + 'static {
    /// [`Process::Message`].
    type Message: Send + 'static;
    /// [`Process::Command`].
    type Command: Command + Send + 'static;
    /// [`Process::Reply`].
    type Reply: Send + 'static;
    /// [`Process::Output`].
    type Output: Send + 'static;
    /// [`Process::Error`].
    type Error: Send + fmt::Debug + 'static;
}

/// A process of any [`Kind<Dyn<T>>`](Kind), boxed: an open set of process
/// kinds, for when the host cannot list them in one enum (kinds from
/// several crates, plug-ins).
///
/// [`kinds!`](crate::kinds) makes a closed enum of kinds: no allocation per
/// process and a jump per step. `Dyn<T>` is the open form: any type that
/// implements [`Kind<Dyn<T>>`](Kind) runs in a `Scheduler<Dyn<T>>`, with
/// no list to edit. `T` names the types every kind shares ([`Types`]). The
/// typed calls ([`Scheduler::submit_kind`](crate::sched::Scheduler::submit_kind),
/// [`StepOutput::spawn_kind`](super::StepOutput::spawn_kind)) check each
/// input against its kind at compile time, as they do for an enum.
///
/// What it costs, against the enum: a process is a box (one allocation when
/// it is created, and its input is boxed too unless it is zero-sized), and
/// a step is one indirect call. `cargo run --release --example kinds_cost`
/// measures both forms side by side (the README's "Several kinds of
/// process" has figures).
///
/// ```
/// use stepsched::process::{Dyn, Event, Kind, NoCommand, StepOutput, Types};
/// use stepsched::sched::Scheduler;
///
/// /// What every kind of this host shares.
/// struct Host;
/// impl Types for Host {
///     type Message = u64;
///     type Command = NoCommand;
///     type Reply = ();
///     type Output = String;
///     type Error = String;
/// }
///
/// /// Greets by name; may come from another crate.
/// struct Greeter;
/// impl Kind<Dyn<Host>> for Greeter {
///     type Input = &'static str;
///     fn init(&mut self, _: &'static str) -> Result<(), String> { Ok(()) }
///     fn step(&mut self, _: &mut Vec<Event<Dyn<Host>>>, out: &mut StepOutput<'_, Dyn<Host>>)
///         -> Result<(), String>
///     {
///         out.done("hello".to_string());
///         Ok(())
///     }
/// }
///
/// /// Counts to its input.
/// struct Count(u64);
/// impl Kind<Dyn<Host>> for Count {
///     type Input = u64;
///     fn init(&mut self, n: u64) -> Result<(), String> { self.0 = n; Ok(()) }
///     fn step(&mut self, _: &mut Vec<Event<Dyn<Host>>>, out: &mut StepOutput<'_, Dyn<Host>>)
///         -> Result<(), String>
///     {
///         out.done((1..=self.0).map(|i| i.to_string()).collect::<Vec<_>>().join(" "));
///         Ok(())
///     }
/// }
///
/// let scheduler = Scheduler::<Dyn<Host>>::builder().workers(2).build().unwrap();
/// let hello = scheduler.submit_kind_joinable(Greeter, "world").unwrap();
/// let count = scheduler.submit_kind_joinable(Count(0), 3).unwrap();
/// assert_eq!(hello.join(), Ok("hello".to_string()));
/// assert_eq!(count.join(), Ok("1 2 3".to_string()));
/// scheduler.shutdown(std::time::Duration::from_secs(1));
/// ```
///
/// Here too a mismatched input does not compile:
///
/// ```compile_fail,E0308
/// # use stepsched::process::{Dyn, Event, Kind, NoCommand, StepOutput, Types};
/// # use stepsched::sched::Scheduler;
/// # struct Host;
/// # impl Types for Host {
/// #     type Message = (); type Command = NoCommand; type Reply = ();
/// #     type Output = (); type Error = ();
/// # }
/// struct Count;
/// impl Kind<Dyn<Host>> for Count {
///     type Input = u64;
///     fn init(&mut self, _: u64) -> Result<(), ()> { Ok(()) }
///     fn step(&mut self, _: &mut Vec<Event<Dyn<Host>>>, _: &mut StepOutput<'_, Dyn<Host>>)
///         -> Result<(), ()> { Ok(()) }
/// }
/// let scheduler = Scheduler::<Dyn<Host>>::builder().build().unwrap();
/// scheduler.submit_kind(Count, "three");
/// ```
///
/// Made by the typed calls, through its [`Hosts`] impl; a refused one comes
/// back in [`SpawnError`](super::SpawnError), whence
/// [`into_kind`](Dyn::into_kind) takes the kind out.
pub struct Dyn<T: Types>(Box<dyn Erased<T>>);

/// The input of a [`Dyn`] process: its kind's input, boxed.
pub struct DynInput(Box<dyn Any>);

impl<T: Types> Dyn<T> {
    /// The name of this process's kind (its type's, from
    /// [`core::any::type_name`]).
    pub fn kind_name(&self) -> &'static str {
        self.0.kind_name()
    }

    /// The kind, if it is a `K`; else `self` back.
    ///
    /// # Errors
    ///
    /// `self`, if the process is of another kind.
    pub fn into_kind<K: Kind<Self>>(self) -> Result<K, Self> {
        if self.0.as_any().is::<K>() {
            match self.0.into_any().downcast::<K>() {
                Ok(kind) => Ok(*kind),
                Err(_) => unreachable!("Dyn::into_kind: `is` said {}", type_name::<K>()),
            }
        } else {
            Err(self)
        }
    }
}

impl<T: Types> fmt::Debug for Dyn<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Dyn").field(&self.kind_name()).finish()
    }
}

impl fmt::Debug for DynInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DynInput(..)")
    }
}

impl<T: Types> Process for Dyn<T> {
    type Input = DynInput;
    type Message = T::Message;
    type Command = T::Command;
    type Reply = T::Reply;
    type Output = T::Output;
    type Error = T::Error;

    /// Runs the kind's `init` with its input; `method` is not consulted.
    ///
    /// # Panics
    ///
    /// If `input` is another kind's: only the untyped
    /// [`Scheduler::submit`](crate::sched::Scheduler::submit) can pass one,
    /// and the scheduler reports the panic as a refused init.
    fn init(&mut self, _method: &str, input: DynInput) -> Result<(), T::Error> {
        self.0.init(input)
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), T::Error> {
        self.0.step(events, out)
    }

    fn close(&mut self) {
        self.0.close();
    }
}

impl<T: Types, K> Hosts<K> for Dyn<T>
where
    K: Kind<Dyn<T>>,
    K::Input: 'static,
{
    const KIND: &'static str = "Dyn";

    fn host(kind: K, input: K::Input) -> (Self, DynInput) {
        (Dyn(Box::new(kind)), DynInput(Box::new(input)))
    }
}

/// A kind behind a pointer: [`Kind`] with its input erased.
trait Erased<T: Types>: Send {
    fn init(&mut self, input: DynInput) -> Result<(), T::Error>;
    fn step(
        &mut self,
        events: &mut Vec<Event<Dyn<T>>>,
        out: &mut StepOutput<'_, Dyn<T>>,
    ) -> Result<(), T::Error>;
    fn close(&mut self);
    fn kind_name(&self) -> &'static str;
    fn as_any(&self) -> &dyn Any;
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

impl<T: Types, K> Erased<T> for K
where
    K: Kind<Dyn<T>>,
    K::Input: 'static,
{
    fn init(&mut self, input: DynInput) -> Result<(), T::Error> {
        match input.0.downcast::<K::Input>() {
            Ok(input) => Kind::init(self, *input),
            Err(_) => panic!(
                "Dyn::init: a {} given another kind's input \
                 (submit_kind and spawn_kind check this at compile time)",
                type_name::<K>()
            ),
        }
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Dyn<T>>>,
        out: &mut StepOutput<'_, Dyn<T>>,
    ) -> Result<(), T::Error> {
        Kind::step(self, events, out)
    }

    fn close(&mut self) {
        Kind::close(self);
    }

    fn kind_name(&self) -> &'static str {
        type_name::<K>()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}
