//! Faults a simulation injects on demand, drawn from its seed
//! ([`Builder::simulation_faults`](crate::sched::Builder::simulation_faults)).

use std::fmt;
use std::io;

/// The faults a simulation injects, each with its probability; all zero
/// by default. Drawn from the simulation's seed, so a seed that fails
/// replays with the same faults at the same steps.
///
/// ```
/// use stepsched::sched::Faults;
///
/// let faults = Faults::new().crash_per_step(0.001).failed_commands(0.05);
/// assert_eq!(faults.crash_probability(), 0.001);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Faults {
    crash: f64,
    fail: f64,
    spared: Vec<String>,
}

impl Faults {
    /// No faults.
    pub fn new() -> Self {
        Faults::default()
    }

    /// After each step, with probability `p`, one live process chosen
    /// from the seed crashes: it is killed between its steps
    /// ([`ExitReason::Killed`](crate::process::ExitReason::Killed), as
    /// [`StepOutput::kill`](crate::process::StepOutput::kill) from
    /// [`Pid::OUTSIDE`](crate::process::Pid::OUTSIDE): untrappable), so its
    /// monitors get their `Down`, its links their exit, its supervisor its
    /// restart and its joiner `ProcessError::Terminated`. Any live process may be chosen, but one registered
    /// under a [spared](Faults::spare) name.
    pub fn crash_per_step(mut self, p: f64) -> Self {
        self.crash = p;
        self
    }

    /// Never crashes the process registered under `name` (when the crash
    /// is drawn): the root of the system under test, say, whose end would
    /// end the test.
    pub fn spare(mut self, name: impl Into<String>) -> Self {
        self.spared.push(name.into());
        self
    }

    /// Each command a [blocking handler](crate::sched::Builder::blocking_handler)
    /// would run fails instead with probability `p`: its process gets
    /// `CommandError::Failed` ("stepsched simulation: an injected fault")
    /// and the handler does not run.
    pub fn failed_commands(mut self, p: f64) -> Self {
        self.fail = p;
        self
    }

    /// The probability set by [`crash_per_step`](Faults::crash_per_step).
    pub fn crash_probability(&self) -> f64 {
        self.crash
    }

    /// The probability set by [`failed_commands`](Faults::failed_commands).
    pub fn failed_command_probability(&self) -> f64 {
        self.fail
    }

    /// Refuses a probability outside `0..=1` (or NaN), naming it.
    pub(crate) fn check(&self) -> io::Result<()> {
        for (name, p) in [
            ("crash_per_step", self.crash),
            ("failed_commands", self.fail),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("Faults::{name}({p}): a probability is between 0 and 1"),
                ));
            }
        }
        Ok(())
    }

    /// The thresholds a draw of 64 random bits is compared with.
    pub(crate) fn thresholds(&self) -> Thresholds {
        Thresholds {
            crash: threshold(self.crash),
            fail: threshold(self.fail),
            spared: self.spared.clone().into_boxed_slice(),
        }
    }
}

/// `p` as a threshold for a uniform `u64`: a draw below it happens with
/// probability `p` (1 means always, 0 never).
fn threshold(p: f64) -> Option<u64> {
    if p <= 0.0 {
        None
    } else if p >= 1.0 {
        Some(u64::MAX)
    } else {
        Some((p * 18_446_744_073_709_551_616.0) as u64)
    }
}

/// [`Faults`] as the driver draws them; `None`: never (no draw made, so a
/// simulation without faults draws exactly as before).
#[derive(Clone)]
pub(crate) struct Thresholds {
    pub(crate) crash: Option<u64>,
    pub(crate) fail: Option<u64>,
    /// Names whose processes are never crashed.
    pub(crate) spared: Box<[String]>,
}

impl fmt::Debug for Thresholds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Thresholds")
            .field("crash", &self.crash.is_some())
            .field("fail", &self.fail.is_some())
            .finish()
    }
}
