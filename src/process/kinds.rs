//! Several kinds of process in one scheduler: [`Kind`], [`Hosts`] and the
//! [`kinds!`](crate::kinds) macro.
//!
//! A [`Scheduler<P>`](crate::sched::Scheduler) runs one process type `P`.
//! An embedder with interpreters, rooms and a supervisor makes `P` an enum
//! of them; written by hand, its `init` matches the `method` string and an
//! `Input` enum against the variant, and a mismatch (a room given an
//! interpreter's input) shows up only at run time. Here instead:
//!
//! - each kind is its own type implementing [`Kind<P>`](Kind): a typed
//!   [`Input`](Kind::Input), and `init`, `step`, `close` like a process;
//! - [`kinds!`](crate::kinds) writes the enum `P`, its `Input` enum, its
//!   [`Process`] impl (each call goes to the variant's kind) and a
//!   [`Hosts<K>`](Hosts) impl per kind;
//! - [`Scheduler::submit_kind`](crate::sched::Scheduler::submit_kind),
//!   [`submit_kind_joinable`](crate::sched::Scheduler::submit_kind_joinable)
//!   and [`StepOutput::spawn_kind`] take a kind and *its* input, so the
//!   compiler checks one against the other.
//!
//! All kinds share the enum's `Message`, `Command`, `Reply`, `Output` and
//! `Error` types. That is how they talk: a [`Pid`](super::Pid) does not say
//! which kind it names, so any process can send to any other, and a handler
//! serves commands whoever yielded them.
//!
//! # Example
//!
//! ```
//! use stepsched::process::{Event, Kind, NoCommand, Pid, StepOutput};
//! use stepsched::sched::Scheduler;
//!
//! /// Adds what it is sent; a zero ends it with the total.
//! struct Counter { total: u64 }
//! /// Forwards what it is sent to a counter, doubled.
//! struct Doubler { to: Option<Pid> }
//!
//! stepsched::kinds! {
//!     /// The processes of this host.
//!     pub enum Node {
//!         /// Adds numbers.
//!         Counter(Counter),
//!         /// Doubles them on the way.
//!         Doubler(Doubler),
//!     }
//!     /// One input per kind.
//!     pub enum NodeInput;
//!     type Message = u64; // shared by every kind
//!     type Command = NoCommand;
//!     type Reply = ();
//!     type Output = u64;
//!     type Error = String;
//! }
//!
//! impl Kind<Node> for Counter {
//!     type Input = u64; // where it starts
//!     fn init(&mut self, start: u64) -> Result<(), String> {
//!         self.total = start;
//!         Ok(())
//!     }
//!     fn step(&mut self, events: &mut Vec<Event<Node>>, out: &mut StepOutput<'_, Node>)
//!         -> Result<(), String>
//!     {
//!         for event in events.drain(..) {
//!             match event {
//!                 Event::Message(0) => out.done(self.total),
//!                 Event::Message(n) => self.total += n,
//!                 _ => {}
//!             }
//!         }
//!         Ok(())
//!     }
//! }
//!
//! impl Kind<Node> for Doubler {
//!     type Input = Pid; // the counter
//!     fn init(&mut self, to: Pid) -> Result<(), String> {
//!         self.to = Some(to);
//!         Ok(())
//!     }
//!     fn step(&mut self, events: &mut Vec<Event<Node>>, out: &mut StepOutput<'_, Node>)
//!         -> Result<(), String>
//!     {
//!         for event in events.drain(..) {
//!             if let (Event::Message(n), Some(to)) = (event, self.to) {
//!                 out.send(to, 2 * n);
//!                 if n == 0 {
//!                     out.done(0);
//!                 }
//!             }
//!         }
//!         Ok(())
//!     }
//! }
//!
//! let scheduler = Scheduler::<Node>::builder().workers(2).build().unwrap();
//! let counter = scheduler.submit_kind_joinable(Counter { total: 0 }, 100).unwrap();
//! let doubler = scheduler.submit_kind(Doubler { to: None }, counter.pid()).unwrap();
//! for n in [1, 2, 3, 0] {
//!     scheduler.send(doubler, n).unwrap();
//! }
//! assert_eq!(counter.join(), Ok(112));
//! scheduler.shutdown(std::time::Duration::from_secs(1));
//! ```
//!
//! Giving a kind another kind's input does not compile:
//!
//! ```compile_fail,E0308
//! # use stepsched::process::{Event, Kind, NoCommand, StepOutput};
//! # use stepsched::sched::Scheduler;
//! struct Room;
//! struct Interp;
//! stepsched::kinds! {
//!     pub enum Node { Room(Room), Interp(Interp) }
//!     pub enum NodeInput;
//!     type Message = ();
//!     type Command = NoCommand;
//!     type Reply = ();
//!     type Output = ();
//!     type Error = ();
//! }
//! impl Kind<Node> for Room {
//!     type Input = u32; // its capacity
//!     fn init(&mut self, _: u32) -> Result<(), ()> { Ok(()) }
//!     fn step(&mut self, _: &mut Vec<Event<Node>>, _: &mut StepOutput<'_, Node>) -> Result<(), ()> { Ok(()) }
//! }
//! impl Kind<Node> for Interp {
//!     type Input = String; // its program
//!     fn init(&mut self, _: String) -> Result<(), ()> { Ok(()) }
//!     fn step(&mut self, _: &mut Vec<Event<Node>>, _: &mut StepOutput<'_, Node>) -> Result<(), ()> { Ok(()) }
//! }
//! let scheduler = Scheduler::<Node>::builder().build().unwrap();
//! scheduler.submit_kind(Room, "print 1".to_string()); // a Room given a program
//! ```
//!
//! # Why this shape
//!
//! - **The kind is the entry point.** A hand-written enum repeats one fact
//!   three times (variant, `method` string, `Input` variant). Here the kind's
//!   type says it once, and [`Kind::init`] takes no `method`: a kind with
//!   several entry points makes its `Input` an enum, which the compiler
//!   checks where a string was not.
//! - **An enum, not `Box<dyn ..>`.** The table stores `P` by value, so an
//!   enum costs no allocation per process and no indirect call per step (the
//!   `match` is a jump on the discriminant); its size is the largest kind's.
//!   The set of kinds is closed, which is what a host that writes them all
//!   has. (`Process` cannot itself be a trait object: its associated types
//!   and by-value `init` input differ per implementor.) An open form was
//!   built and measured, and left out because it costs: `Dyn<T>`, a boxed
//!   `Kind<Dyn<T>>` with its input boxed as `dyn Any` (still checked at
//!   compile time by the typed calls). Against this enum, on 2 workers of a
//!   shared 2-core VM, medians of 7 alternating rounds, four runs: a bare
//!   `Continue` step took 18.3 to 18.6 ns instead of 14.2 to 16.3 (about
//!   3 ns more: the indirect call and the pointer to the kind); creating a
//!   process was within noise (159 to 193 ns against 156 to 219). It is in
//!   this crate's history (the commit "`process::Dyn<T>`: the open, boxed
//!   form", with `examples/kinds_cost.rs` to measure it) if a host ever
//!   needs kinds it cannot list.
//! - **A declarative macro.** Rust has no variadic enums, and a proc-macro
//!   crate would be a dependency. The macro writes only delegation; every
//!   line of behaviour is in the kinds' own impls, where errors point.
//! - **`Hosts<K>` is separate from `Kind<P>`.** The embedder writes
//!   `Kind`; the macro writes `Hosts`, the one place that knows the variant.
//!   `Kind` is generic over `P`, so a library may offer a kind (a supervisor,
//!   a timer) for any host whose types fit, e.g.
//!   `impl<P: Process> Kind<P> for Timer where P::Message: From<Tick>`.
//!
//! The untyped [`Scheduler::submit`](crate::sched::Scheduler::submit)
//! still accepts any `(P, P::Input)` pair: the generated `init` picks the
//! kind by the variant (its `method` is not consulted) and panics on an
//! input of another kind, which the scheduler reports as
//! [`SpawnError::Init`](super::SpawnError::Init) with
//! [`ProcessError::Panicked`](super::ProcessError::Panicked). Use the
//! typed calls and that cannot happen.

use super::{Event, Process, StepOutput};

/// One kind of process hosted by the enum `P` (see the [module docs](self)).
///
/// It is a [`Process`] whose `Input` is its own and whose other types are
/// `P`'s. The scheduler calls it through `P`'s generated [`Process`] impl,
/// with the same guarantees: `init` once on the creating thread, `step` never
/// on two workers at once, `close` exactly once for every started process.
pub trait Kind<P: Process>: Send + 'static {
    /// What this kind starts from: the input of [`init`](Kind::init).
    type Input;

    /// Prepares the process. An error refuses it, as
    /// [`Process::init`] does.
    ///
    /// # Errors
    ///
    /// Handed back to whoever submitted or spawned it; `close` is not
    /// called.
    fn init(&mut self, input: Self::Input) -> Result<(), P::Error>;

    /// Advances the process with its events; the contract of
    /// [`Process::step`].
    ///
    /// # Errors
    ///
    /// Ends the process with
    /// [`ProcessError::Failed`](super::ProcessError::Failed); `close` runs.
    fn step(
        &mut self,
        events: &mut Vec<Event<P>>,
        out: &mut StepOutput<'_, P>,
    ) -> Result<(), P::Error>;

    /// Releases resources: [`Process::close`].
    fn close(&mut self) {}
}

/// `Self`, an enum of kinds, has a variant for the kind `K`: the typed
/// submit and spawn calls use it to wrap a kind and its input. Written by
/// [`kinds!`](crate::kinds), one impl per variant; written by hand, it puts
/// the typed calls in front of an existing enum whose `init` still matches
/// `method` (it receives [`KIND`](Hosts::KIND)).
pub trait Hosts<K: Kind<Self>>: Process {
    /// The variant's name, passed as `method` to [`Process::init`] by the
    /// typed calls (the generated `init` does not read it).
    const KIND: &'static str;

    /// Wraps `kind` and its `input` into this enum's variant and input.
    fn host(kind: K, input: K::Input) -> (Self, Self::Input);
}

/// Writes an enum of process [kinds](crate::process::Kind), its input enum,
/// and their [`Process`](crate::process::Process) and
/// [`Hosts`](crate::process::Hosts) impls.
///
/// ```text
/// kinds! {
///     [attributes] [pub] enum Name { Variant(KindType), ... }
///     [attributes] [pub] enum InputName;
///     type Message = ..; type Command = ..; type Reply = ..;
///     type Output = ..; type Error = ..;
/// }
/// ```
///
/// The five types come in that order. Each variant holds one kind type, and
/// a kind type appears in one variant only (its [`Hosts`](crate::process::Hosts)
/// impl names it). It also writes `From<KindType> for Name` and
/// `Name::kind_name(&self)` (the variant's name, for logs). The enums take
/// no generic parameters. See the [module docs](crate::process::kinds) for
/// an example and why it is built this way.
#[macro_export]
macro_rules! kinds {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident($kind:ty) ),+ $(,)?
        }
        $(#[$imeta:meta])*
        $ivis:vis enum $input:ident;
        type Message = $message:ty;
        type Command = $command:ty;
        type Reply = $reply:ty;
        type Output = $output:ty;
        type Error = $error:ty;
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $( $(#[$vmeta])* $variant($kind), )+
        }

        $(#[$imeta])*
        $ivis enum $input {
            $(
                #[doc = concat!("The input of a `", stringify!($variant), "`.")]
                $variant(<$kind as $crate::process::Kind<$name>>::Input),
            )+
        }

        impl $name {
            /// The name of this process's kind: its variant.
            #[allow(dead_code)]
            $vis fn kind_name(&self) -> &'static str {
                match self {
                    $( $name::$variant(_) => stringify!($variant), )+
                }
            }
        }

        impl $crate::process::Process for $name {
            type Input = $input;
            type Message = $message;
            type Command = $command;
            type Reply = $reply;
            type Output = $output;
            type Error = $error;

            fn init(&mut self, _method: &str, input: $input) -> ::core::result::Result<(), $error> {
                #[allow(unreachable_patterns)]
                match (self, input) {
                    $(
                        ($name::$variant(kind), $input::$variant(input)) => {
                            <$kind as $crate::process::Kind<$name>>::init(kind, input)
                        }
                    )+
                    (process, _) => ::core::panic!(
                        "{}::init: a {} given another kind's input \
                         (submit_kind and spawn_kind check this at compile time)",
                        stringify!($name),
                        process.kind_name(),
                    ),
                }
            }

            fn step(
                &mut self,
                events: &mut ::std::vec::Vec<$crate::process::Event<Self>>,
                out: &mut $crate::process::StepOutput<'_, Self>,
            ) -> ::core::result::Result<(), $error> {
                match self {
                    $(
                        $name::$variant(kind) => {
                            <$kind as $crate::process::Kind<$name>>::step(kind, events, out)
                        }
                    )+
                }
            }

            fn close(&mut self) {
                match self {
                    $(
                        $name::$variant(kind) => {
                            <$kind as $crate::process::Kind<$name>>::close(kind)
                        }
                    )+
                }
            }

            const KINDS: &'static [&'static str] = &[$( stringify!($variant) ),+];

            fn kind_index(&self) -> usize {
                // The variants' positions, as `KINDS` lists them.
                #[allow(non_camel_case_types, dead_code)]
                enum Index { $( $variant ),+ }
                match self {
                    $( $name::$variant(_) => Index::$variant as usize, )+
                }
            }
        }

        $(
            impl $crate::process::Hosts<$kind> for $name {
                const KIND: &'static str = stringify!($variant);

                fn host(
                    kind: $kind,
                    input: <$kind as $crate::process::Kind<$name>>::Input,
                ) -> (Self, $input) {
                    ($name::$variant(kind), $input::$variant(input))
                }
            }

            impl ::core::convert::From<$kind> for $name {
                fn from(kind: $kind) -> Self {
                    $name::$variant(kind)
                }
            }
        )+
    };
}
