//! The process the cross-node tests run: it does what its messages say
//! and reports what it sees to the test.

use std::sync::mpsc::Sender;

use std::time::Duration;

use stepsched::process::{Command, Event, ExitReason, NodeId, Pid, Process, ReplyTo, StepOutput};
use stepsched::sched::remote::{Codec, CodecError};

/// What an actor is told to do, or is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Msg {
    /// A number, recorded.
    Num(u64),
    /// Send `Num(from..to)` to the PID, in one step.
    Flood(Pid, u64, u64),
    Monitor(Pid),
    Link(Pid),
    Trap,
    /// End normally.
    Stop,
    /// End with an error.
    Fail,
    /// Wait in a command nobody completes (so messages pile up).
    Hold,
    /// Call the PID with `Ask(n)` (tag `n`), timing out after the
    /// milliseconds; `later`: with `AskLater`, which is not answered.
    Call {
        to: Pid,
        n: u64,
        later: bool,
        timeout_ms: u64,
    },
    /// A call's request: answered with `Num(2 n)`.
    Ask(u64, ReplyTo),
    /// A call's request, reported (`Seen::Deferred`) and not answered.
    AskLater(u64, ReplyTo),
    /// Send `Num(from..to)` to the process named `actor-{name}` on `node`,
    /// in one step.
    Named {
        node: NodeId,
        name: u64,
        from: u64,
        to: u64,
    },
}

/// What an actor saw, with its PID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    Num(u64),
    Down(Pid, ExitReason),
    Refused(Pid, Msg),
    /// A call's reply (tag, then the message, or the error's name and the
    /// request it handed back).
    Reply(u64, Result<Msg, (String, Option<Msg>)>),
    /// An `AskLater` came, with its token.
    Deferred(u64, ReplyTo),
}

pub struct Actor(pub Sender<(Pid, Seen)>);

/// The command an actor holds in.
pub struct Wait;
impl Command for Wait {
    fn kind(&self) -> &'static str {
        "wait"
    }
}

impl Process for Actor {
    type Input = ();
    type Message = Msg;
    type Command = Wait;
    type Reply = ();
    type Output = ();
    type Error = &'static str;

    fn init(&mut self, _: &str, _: ()) -> Result<(), Self::Error> {
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Self>>,
        out: &mut StepOutput<'_, Self>,
    ) -> Result<(), Self::Error> {
        let me = out.pid();
        for event in events.drain(..) {
            let seen = match event {
                Event::Message(Msg::Num(n)) => Seen::Num(n),
                Event::Message(Msg::Flood(to, from, end)) => {
                    for n in from..end {
                        out.send(to, Msg::Num(n));
                    }
                    continue;
                }
                Event::Message(Msg::Monitor(pid)) => {
                    out.monitor(pid);
                    continue;
                }
                Event::Message(Msg::Link(pid)) => {
                    out.link(pid);
                    continue;
                }
                Event::Message(Msg::Trap) => {
                    out.trap_exits(true);
                    continue;
                }
                Event::Message(Msg::Stop) => {
                    out.done(());
                    return Ok(());
                }
                Event::Message(Msg::Fail) => return Err("told to fail"),
                Event::Message(Msg::Hold) => {
                    out.yield_command(1, Wait);
                    continue;
                }
                Event::Message(Msg::Call {
                    to,
                    n,
                    later,
                    timeout_ms,
                }) => {
                    let ask = move |reply_to| match later {
                        false => Msg::Ask(n, reply_to),
                        true => Msg::AskLater(n, reply_to),
                    };
                    out.call(to, n, ask, Duration::from_millis(timeout_ms));
                    continue;
                }
                Event::Message(Msg::Ask(n, reply_to)) => {
                    out.reply(reply_to, Msg::Num(2 * n));
                    continue;
                }
                Event::Message(Msg::AskLater(n, reply_to)) => Seen::Deferred(n, reply_to),
                Event::Message(Msg::Named {
                    node,
                    name,
                    from,
                    to,
                }) => {
                    for n in from..to {
                        out.send_named(node, format!("actor-{name}"), Msg::Num(n));
                    }
                    continue;
                }
                Event::Reply { tag, result } => Seen::Reply(
                    tag,
                    result.map_err(|e| (format!("{e:?}"), e.into_request())),
                ),
                Event::Down { pid, reason } => Seen::Down(pid, reason),
                Event::Refused { to, message } => Seen::Refused(to, message),
                _ => continue,
            };
            let _ = self.0.send((me, seen));
        }
        Ok(())
    }
}

/// The number [`MsgCodec`] panics on.
pub const PANICS: u64 = 666_666;

/// A byte codec for [`Msg`]: a tag, then little-endian words.
pub struct MsgCodec;

impl Codec<Msg> for MsgCodec {
    fn encode(&self, message: &Msg, into: &mut Vec<u8>) -> Result<(), CodecError> {
        // The embedder's code may panic: this number makes it.
        assert!(
            *message != Msg::Num(PANICS),
            "the codec cannot encode {PANICS}"
        );
        let mut put = |tag: u8, words: &[u64]| {
            into.push(tag);
            for w in words {
                into.extend_from_slice(&w.to_le_bytes());
            }
        };
        match *message {
            Msg::Num(n) => put(0, &[n]),
            Msg::Flood(to, from, end) => put(1, &[to.into_raw(), from, end]),
            Msg::Monitor(pid) => put(2, &[pid.into_raw()]),
            Msg::Link(pid) => put(3, &[pid.into_raw()]),
            Msg::Trap => put(4, &[]),
            Msg::Stop => put(5, &[]),
            Msg::Fail => put(6, &[]),
            Msg::Hold => put(7, &[]),
            Msg::Call {
                to,
                n,
                later,
                timeout_ms,
            } => put(8, &[to.into_raw(), n, later as u64, timeout_ms]),
            Msg::Ask(n, r) => put(9, &[n, r.pid().into_raw(), r.id()]),
            Msg::AskLater(n, r) => put(10, &[n, r.pid().into_raw(), r.id()]),
            Msg::Named {
                node,
                name,
                from,
                to,
            } => put(11, &[node.get().into(), name, from, to]),
        }
        Ok(())
    }

    fn decode(&self, bytes: &[u8]) -> Result<Msg, CodecError> {
        let (&tag, rest) = bytes.split_first().ok_or(CodecError::new("empty"))?;
        let word = |i: usize| -> Result<u64, CodecError> {
            let b = rest.get(i * 8..i * 8 + 8).ok_or(CodecError::new("short"))?;
            Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
        };
        let pid = |i| word(i).map(Pid::from_raw);
        Ok(match tag {
            0 => Msg::Num(word(0)?),
            1 => Msg::Flood(pid(0)?, word(1)?, word(2)?),
            2 => Msg::Monitor(pid(0)?),
            3 => Msg::Link(pid(0)?),
            4 => Msg::Trap,
            5 => Msg::Stop,
            6 => Msg::Fail,
            7 => Msg::Hold,
            8 => Msg::Call {
                to: pid(0)?,
                n: word(1)?,
                later: word(2)? != 0,
                timeout_ms: word(3)?,
            },
            9 => Msg::Ask(word(0)?, ReplyTo::from_parts(pid(1)?, word(2)?)),
            10 => Msg::AskLater(word(0)?, ReplyTo::from_parts(pid(1)?, word(2)?)),
            11 => Msg::Named {
                node: u8::try_from(word(0)?)
                    .ok()
                    .and_then(NodeId::new)
                    .ok_or(CodecError::new("node"))?,
                name: word(1)?,
                from: word(2)?,
                to: word(3)?,
            },
            _ => return Err(CodecError::new("unknown tag")),
        })
    }
}
