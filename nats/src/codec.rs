//! A [`Codec`] for `serde` types, and PIDs inside them.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use stepsched::process::Pid;
use stepsched::sched::remote::{Codec, CodecError};

/// Messages as JSON (`serde_json`): any `Serialize + DeserializeOwned`
/// message type crosses nodes. A [`Pid`] inside a message crosses with
/// [`pid`] (`#[serde(with = "stepsched_nats::pid")]`).
///
/// ```
/// use stepsched::sched::remote::Codec;
/// use stepsched_nats::Json;
///
/// let mut bytes = Vec::new();
/// Json.encode(&(1u32, "two".to_string()), &mut bytes).unwrap();
/// let back: (u32, String) = Json.decode(&bytes).unwrap();
/// assert_eq!(back, (1, "two".to_string()));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Json;

impl<M: Serialize + DeserializeOwned + Send + 'static> Codec<M> for Json {
    fn encode(&self, message: &M, into: &mut Vec<u8>) -> Result<(), CodecError> {
        serde_json::to_writer(into, message).map_err(|e| CodecError::new(e.to_string()))
    }

    fn decode(&self, bytes: &[u8]) -> Result<M, CodecError> {
        serde_json::from_slice(bytes).map_err(|e| CodecError::new(e.to_string()))
    }
}

/// `serde` for a [`Pid`] field, as its `u64` ([`Pid::into_raw`]): the
/// node is in it, so a PID sent to another node still names its process.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use stepsched::process::Pid;
///
/// #[derive(Serialize, Deserialize, PartialEq, Debug)]
/// struct Ping {
///     #[serde(with = "stepsched_nats::pid")]
///     reply_to: Pid,
/// }
/// let ping = Ping { reply_to: Pid::from_raw(0x0000_0001_0300_0007) };
/// let json = serde_json::to_string(&ping).unwrap();
/// assert_eq!(serde_json::from_str::<Ping>(&json).unwrap(), ping);
/// ```
pub mod pid {
    use super::*;

    /// Serializes `pid` as its raw `u64`.
    pub fn serialize<S: Serializer>(pid: &Pid, s: S) -> Result<S::Ok, S::Error> {
        pid.into_raw().serialize(s)
    }

    /// Deserializes a PID from its raw `u64`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Pid, D::Error> {
        u64::deserialize(d).map(Pid::from_raw)
    }
}

/// `serde` for a [`ReplyTo`] field (a call's request carries one), as its
/// caller's raw PID and the call's id: the reply finds its caller on the
/// node it came from.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use stepsched::process::{Pid, ReplyTo};
///
/// #[derive(Serialize, Deserialize, PartialEq, Debug)]
/// struct Double {
///     n: u64,
///     #[serde(with = "stepsched_nats::reply_to")]
///     reply_to: ReplyTo,
/// }
/// let ask = Double { n: 21, reply_to: ReplyTo::from_parts(Pid::from_raw(0x0000_0001_0300_0007), 9) };
/// let json = serde_json::to_string(&ask).unwrap();
/// assert_eq!(serde_json::from_str::<Double>(&json).unwrap(), ask);
/// ```
pub mod reply_to {
    use super::*;
    use stepsched::process::ReplyTo;

    /// Serializes `reply_to` as `(raw pid, id)`.
    pub fn serialize<S: Serializer>(reply_to: &ReplyTo, s: S) -> Result<S::Ok, S::Error> {
        (reply_to.pid().into_raw(), reply_to.id()).serialize(s)
    }

    /// Deserializes a `ReplyTo` from `(raw pid, id)`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ReplyTo, D::Error> {
        <(u64, u64)>::deserialize(d).map(|(pid, id)| ReplyTo::from_parts(Pid::from_raw(pid), id))
    }
}
