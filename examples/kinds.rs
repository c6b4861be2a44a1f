//! Three kinds of process in one scheduler: a supervisor starts a room and
//! three tiny stack-machine interpreters; each interpreter joins the room,
//! says a number, listens for the others' and halts with their sum; the
//! room relays, and both report to the supervisor, which ends with what it
//! heard.
//!
//! Each kind is its own type with its own input (`Kind<Node>`); the
//! `kinds!` macro writes the `Node` enum and its `Process` impl; the
//! supervisor spawns the others with `spawn_kind`, which checks each input
//! against its kind at compile time. All kinds share one message type.
//!
//! ```text
//! cargo run --example kinds
//! ```

use std::time::Duration;

use stepsched::process::{Event, Kind, NoCommand, Pid, Status, StepOutput};
use stepsched::sched::Scheduler;

/// Every message, whichever kinds exchange it.
#[derive(Debug)]
enum Msg {
    /// To a room: `Pid` is a member.
    Join(Pid),
    /// To a room: relay `value` to the other members.
    Say { from: Pid, value: i64 },
    /// To an interpreter: a member said `value`.
    Heard { from: Pid, value: i64 },
    /// To a room: `Pid` is done.
    Leave(Pid),
    /// To the supervisor: a child finished, and how.
    Report(String),
}

/// One instruction of the interpreter.
#[derive(Debug, Clone)]
enum Op {
    Push(i64),
    Add,
    Mul,
    /// Pops a value and says it in the room.
    Say,
    /// Waits for `n` values from the room and pushes their sum.
    Listen(usize),
}

/// A stack machine that suspends on `Listen`.
#[derive(Default)]
struct Interp {
    code: Vec<Op>,
    pc: usize,
    stack: Vec<i64>,
    heard: Vec<(Pid, i64)>,
    /// What `Listen` took, for the report.
    transcript: Vec<String>,
    room: Option<Pid>,
    supervisor: Option<Pid>,
    joined: bool,
}

/// What an interpreter starts from.
struct Program {
    code: Vec<Op>,
    room: Pid,
    supervisor: Pid,
}

/// Relays what members say to the other members, once all have joined.
#[derive(Default)]
struct Room {
    expected: usize,
    members: Vec<Pid>,
    /// All `expected` members have joined: relay from now on.
    full: bool,
    held: Vec<(Pid, i64)>,
    relayed: usize,
    supervisor: Option<Pid>,
}

/// Starts a room and `n` interpreters, and gathers their reports.
#[derive(Default)]
struct Supervisor {
    children: usize,
    started: bool,
    reports: Vec<String>,
}

stepsched::kinds! {
    /// The processes this host runs.
    enum Node {
        /// Runs a program.
        Interp(Interp),
        /// Relays between interpreters.
        Room(Room),
        /// Starts the others.
        Sup(Supervisor),
    }
    /// Their inputs: a `Program`, a member count and supervisor, a child count.
    enum NodeInput;
    type Message = Msg;
    type Command = NoCommand;
    type Reply = ();
    type Output = Vec<String>;
    type Error = String;
}

impl Kind<Node> for Interp {
    type Input = Program;

    fn init(&mut self, program: Program) -> Result<(), String> {
        self.code = program.code;
        self.room = Some(program.room);
        self.supervisor = Some(program.supervisor);
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Node>>,
        out: &mut StepOutput<'_, Node>,
    ) -> Result<(), String> {
        let room = self.room.ok_or("no room")?;
        if !self.joined {
            out.send(room, Msg::Join(out.pid()));
            self.joined = true;
        }
        for event in events.drain(..) {
            if let Event::Message(Msg::Heard { from, value }) = event {
                self.heard.push((from, value));
            }
        }
        while let Some(op) = self.code.get(self.pc).cloned() {
            match op {
                Op::Push(n) => self.stack.push(n),
                Op::Add | Op::Mul => {
                    let (b, a) = (self.pop()?, self.pop()?);
                    self.stack
                        .push(if let Op::Add = op { a + b } else { a * b });
                }
                Op::Say => {
                    let (from, value) = (out.pid(), self.pop()?);
                    out.send(room, Msg::Say { from, value });
                }
                Op::Listen(n) if self.heard.len() < n => {
                    out.set_status(Status::Idle); // resume here on a message
                    return Ok(());
                }
                Op::Listen(n) => {
                    let mut sum = 0;
                    for (from, value) in self.heard.drain(..n) {
                        self.transcript.push(format!("{value} from {from}"));
                        sum += value;
                    }
                    self.stack.push(sum);
                }
            }
            self.pc += 1;
        }
        let result = self.pop()?;
        let line = format!(
            "interpreter {} heard {}; halted with {result}",
            out.pid(),
            self.transcript.join(", ")
        );
        out.send(room, Msg::Leave(out.pid()));
        out.send(
            self.supervisor.ok_or("no supervisor")?,
            Msg::Report(line.clone()),
        );
        out.done(vec![line]);
        Ok(())
    }
}

impl Interp {
    fn pop(&mut self) -> Result<i64, String> {
        (self.stack.pop()).ok_or_else(|| format!("stack empty at {}", self.pc))
    }
}

impl Kind<Node> for Room {
    /// How many members to wait for, and whom to report to.
    type Input = (usize, Pid);

    fn init(&mut self, (expected, supervisor): (usize, Pid)) -> Result<(), String> {
        if expected < 2 {
            return Err(format!("a room of {expected} has no one to relay to"));
        }
        self.expected = expected;
        self.supervisor = Some(supervisor);
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Node>>,
        out: &mut StepOutput<'_, Node>,
    ) -> Result<(), String> {
        for event in events.drain(..) {
            match event {
                Event::Message(Msg::Join(pid)) => self.members.push(pid),
                Event::Message(Msg::Say { from, value }) => self.held.push((from, value)),
                Event::Message(Msg::Leave(pid)) => self.members.retain(|&m| m != pid),
                Event::Message(other) => return Err(format!("a room got {other:?}")),
                _ => {}
            }
        }
        self.full |= self.members.len() == self.expected;
        if self.full {
            for (from, value) in self.held.drain(..) {
                for &to in self.members.iter().filter(|&&to| to != from) {
                    out.send(to, Msg::Heard { from, value });
                    self.relayed += 1;
                }
            }
        }
        if self.full && self.members.is_empty() {
            let line = format!(
                "room {} relayed {} messages among {} members",
                out.pid(),
                self.relayed,
                self.expected
            );
            out.send(
                self.supervisor.ok_or("no supervisor")?,
                Msg::Report(line.clone()),
            );
            out.done(vec![line]);
        }
        Ok(())
    }
}

impl Kind<Node> for Supervisor {
    /// How many interpreters to start.
    type Input = usize;

    fn init(&mut self, interpreters: usize) -> Result<(), String> {
        self.children = interpreters;
        Ok(())
    }

    fn step(
        &mut self,
        events: &mut Vec<Event<Node>>,
        out: &mut StepOutput<'_, Node>,
    ) -> Result<(), String> {
        if !self.started {
            self.started = true;
            let me = out.pid();
            let n = self.children;
            // Each spawn's input is the kind's own type: swapping them, say
            // `spawn_kind(Room::default(), program)`, does not compile.
            let room = out.spawn_kind(Room::default(), (n, me));
            let room = room.map_err(|e| e.to_string())?;
            for i in 1..=n as i64 {
                let code = vec![
                    Op::Push(i),
                    Op::Push(10),
                    Op::Mul,
                    Op::Say,           // says 10 * i
                    Op::Listen(n - 1), // hears the others
                    Op::Push(i),
                    Op::Push(10),
                    Op::Mul,
                    Op::Add, // halts with the sum of all that was said
                ];
                let program = Program {
                    code,
                    room,
                    supervisor: me,
                };
                out.spawn_kind(Interp::default(), program)
                    .map_err(|e| e.to_string())?;
            }
            self.reports.push(format!(
                "supervisor {me} started a room and {n} interpreters"
            ));
        }
        for event in events.drain(..) {
            match event {
                Event::Message(Msg::Report(line)) => self.reports.push(line),
                Event::Message(other) => return Err(format!("the supervisor got {other:?}")),
                _ => {}
            }
        }
        if self.reports.len() == self.children + 2 {
            out.done(std::mem::take(&mut self.reports));
        }
        Ok(())
    }
}

fn main() {
    let scheduler = Scheduler::<Node>::builder().workers(2).build().unwrap();
    let sup = scheduler
        .submit_kind_joinable(Supervisor::default(), 3)
        .unwrap();
    match sup.join_timeout(Duration::from_secs(10)) {
        Ok(Ok(lines)) => lines.iter().for_each(|line| println!("{line}")),
        Ok(Err(e)) => panic!("the supervisor ended with {e}"),
        Err(_) => panic!("the supervisor did not finish in 10 s"),
    }
    let report = scheduler.shutdown(Duration::from_secs(1));
    println!("{report:?}");
    assert_eq!(report.stuck, 0);
}
