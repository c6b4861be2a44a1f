//! The bytes of a batch of frames on a node's subject.
//!
//! A NATS message carries one or more frames, each:
//!
//! ```text
//! kind: u8 | from: u64 LE | to: u64 LE | len: u32 LE | body: len bytes
//! ```
//!
//! `from` and `to` are `Pid::into_raw`. The body is the codec's bytes for
//! a message (`Message`, `Refused`), an exit reason for `Down`, `Exit` and
//! `ExitSent` (below), the call's id (u64 LE) then the codec's bytes for
//! `Call` and `Reply`, the id, a reason byte (`CallRefusal`: 0 no such
//! process, 1 finished, 2 full, 3 shutting down) then the request's bytes
//! for `CallRefused`, the name's length (u16 LE), its UTF-8 then the
//! codec's bytes for `Named`, and empty for the rest.
//!
//! An exit reason is a tag byte, then for `Failed`, `Panicked` and `Exit`
//! the summary's UTF-8, for `Linked` the PID (u64 LE). A reason this
//! crate does not know (`ExitReason` is non-exhaustive) crosses as
//! `Exit` with its `Display` text.

use stepsched::process::{ExitReason, Pid, Summary};
use stepsched::sched::remote::{CallRefusal, Frame, FrameKind};

/// Why bytes are not a batch of frames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError(pub &'static str);

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "malformed frame: {}", self.0)
    }
}

impl std::error::Error for WireError {}

const HEADER: usize = 1 + 8 + 8 + 4;

/// Appends `frame`'s bytes to `out`.
pub fn encode(frame: &Frame, out: &mut Vec<u8>) {
    let (tag, body): (u8, Option<&[u8]>) = match &frame.kind {
        FrameKind::Message(bytes) => (0, Some(bytes)),
        FrameKind::Refused(bytes) => (1, Some(bytes)),
        FrameKind::Monitor => (2, None),
        FrameKind::Demonitor => (3, None),
        FrameKind::Link => (4, None),
        FrameKind::Unlink => (5, None),
        FrameKind::Down(_) => (6, None),
        FrameKind::Exit(_) => (7, None),
        FrameKind::ExitSent(_) => (8, None),
        FrameKind::Kill => (9, None),
        FrameKind::Call { .. } => (10, None),
        FrameKind::Reply { .. } => (11, None),
        FrameKind::CallRefused { .. } => (12, None),
        FrameKind::Named { .. } => (13, None),
        // A kind this crate does not know: sent as nothing it could
        // misread. (The core's enum is non-exhaustive.)
        _ => return,
    };
    out.push(tag);
    out.extend_from_slice(&frame.from.into_raw().to_le_bytes());
    out.extend_from_slice(&frame.to.into_raw().to_le_bytes());
    let len_at = out.len();
    out.extend_from_slice(&[0; 4]);
    match (&frame.kind, body) {
        (_, Some(bytes)) => out.extend_from_slice(bytes),
        (FrameKind::Down(r) | FrameKind::Exit(r) | FrameKind::ExitSent(r), None) => {
            encode_reason(r, out)
        }
        (
            FrameKind::Call { id, request: bytes } | FrameKind::Reply { id, message: bytes },
            None,
        ) => {
            out.extend_from_slice(&id.to_le_bytes());
            out.extend_from_slice(bytes);
        }
        (FrameKind::Named { name, message }, None) => {
            // A name longer than a u16 cannot be registered usefully;
            // it is cut at a char boundary rather than misframed.
            let mut end = name.len().min(u16::MAX as usize);
            while !name.is_char_boundary(end) {
                end -= 1;
            }
            out.extend_from_slice(&(end as u16).to_le_bytes());
            out.extend_from_slice(&name.as_bytes()[..end]);
            out.extend_from_slice(message);
        }
        (FrameKind::CallRefused { id, why, request }, None) => {
            out.extend_from_slice(&id.to_le_bytes());
            out.push(match why {
                CallRefusal::NoSuchProcess => 0,
                CallRefusal::Finished => 1,
                CallRefusal::Full => 2,
                _ => 3,
            });
            out.extend_from_slice(request);
        }
        _ => {}
    }
    let len = (out.len() - len_at - 4) as u32;
    out[len_at..len_at + 4].copy_from_slice(&len.to_le_bytes());
}

/// The frames in `bytes`, in order.
pub fn decode(mut bytes: &[u8]) -> Result<Vec<Frame>, WireError> {
    let mut frames = Vec::new();
    while !bytes.is_empty() {
        if bytes.len() < HEADER {
            return Err(WireError("truncated header"));
        }
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
        let tag = bytes[0];
        let from = Pid::from_raw(word(1));
        let to = Pid::from_raw(word(9));
        let len = u32::from_le_bytes(bytes[17..21].try_into().expect("4")) as usize;
        let body = bytes
            .get(HEADER..HEADER + len)
            .ok_or(WireError("truncated body"))?;
        let kind = match tag {
            0 => FrameKind::Message(body.to_vec()),
            1 => FrameKind::Refused(body.to_vec()),
            2 => FrameKind::Monitor,
            3 => FrameKind::Demonitor,
            4 => FrameKind::Link,
            5 => FrameKind::Unlink,
            6 => FrameKind::Down(decode_reason(body)?),
            7 => FrameKind::Exit(decode_reason(body)?),
            8 => FrameKind::ExitSent(decode_reason(body)?),
            9 => FrameKind::Kill,
            10 => {
                let (id, request) = call_id(body)?;
                let request = request.to_vec();
                FrameKind::Call { id, request }
            }
            11 => {
                let (id, message) = call_id(body)?;
                let message = message.to_vec();
                FrameKind::Reply { id, message }
            }
            12 => {
                let (id, rest) = call_id(body)?;
                let (&why, request) = rest.split_first().ok_or(WireError("refusal"))?;
                let why = match why {
                    0 => CallRefusal::NoSuchProcess,
                    1 => CallRefusal::Finished,
                    2 => CallRefusal::Full,
                    3 => CallRefusal::ShuttingDown,
                    _ => return Err(WireError("unknown refusal")),
                };
                let request = request.to_vec();
                FrameKind::CallRefused { id, why, request }
            }
            13 => {
                let (len, rest) = body.split_at_checked(2).ok_or(WireError("name length"))?;
                let len = u16::from_le_bytes(len.try_into().expect("2")) as usize;
                let (name, message) = rest.split_at_checked(len).ok_or(WireError("name"))?;
                let name = std::str::from_utf8(name).map_err(|_| WireError("name not UTF-8"))?;
                FrameKind::Named {
                    name: name.to_string(),
                    message: message.to_vec(),
                }
            }
            _ => return Err(WireError("unknown kind")),
        };
        frames.push(Frame { from, to, kind });
        bytes = &bytes[HEADER + len..];
    }
    Ok(frames)
}

/// A call's id, and the bytes after it.
fn call_id(body: &[u8]) -> Result<(u64, &[u8]), WireError> {
    let (id, rest) = body.split_at_checked(8).ok_or(WireError("call id"))?;
    Ok((u64::from_le_bytes(id.try_into().expect("8")), rest))
}

fn encode_reason(reason: &ExitReason, out: &mut Vec<u8>) {
    let text = |out: &mut Vec<u8>, tag: u8, s: &str| {
        out.push(tag);
        out.extend_from_slice(s.as_bytes());
    };
    match reason {
        ExitReason::Done => out.push(0),
        ExitReason::Failed(s) => text(out, 1, s.as_str()),
        ExitReason::Panicked(s) => text(out, 2, s.as_str()),
        ExitReason::Terminated => out.push(3),
        ExitReason::Linked(pid) => {
            out.push(4);
            out.extend_from_slice(&pid.into_raw().to_le_bytes());
        }
        ExitReason::Shutdown => out.push(5),
        ExitReason::NoProc => out.push(6),
        ExitReason::Killed => out.push(7),
        ExitReason::Exit(s) => text(out, 8, s.as_str()),
        ExitReason::NoConnection => out.push(9),
        other => text(out, 8, &other.to_string()),
    }
}

fn decode_reason(body: &[u8]) -> Result<ExitReason, WireError> {
    let (&tag, rest) = body.split_first().ok_or(WireError("empty reason"))?;
    let text = || {
        std::str::from_utf8(rest)
            .map(Summary::new)
            .map_err(|_| WireError("reason not UTF-8"))
    };
    Ok(match tag {
        0 => ExitReason::Done,
        1 => ExitReason::Failed(text()?),
        2 => ExitReason::Panicked(text()?),
        3 => ExitReason::Terminated,
        4 => {
            let raw = rest.try_into().map_err(|_| WireError("linked pid"))?;
            ExitReason::Linked(Pid::from_raw(u64::from_le_bytes(raw)))
        }
        5 => ExitReason::Shutdown,
        6 => ExitReason::NoProc,
        7 => ExitReason::Killed,
        8 => ExitReason::Exit(text()?),
        9 => ExitReason::NoConnection,
        _ => return Err(WireError("unknown reason")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind and reason crosses unchanged, several frames to a batch.
    #[test]
    fn frames_round_trip_in_a_batch() {
        let (a, b) = (Pid::from_raw(0x1_0100_0003), Pid::from_raw(0x2_0200_0009));
        let reasons = [
            ExitReason::Done,
            ExitReason::Failed(Summary::new("bad")),
            ExitReason::Panicked(Summary::new("boom")),
            ExitReason::Terminated,
            ExitReason::Linked(a),
            ExitReason::Shutdown,
            ExitReason::NoProc,
            ExitReason::Killed,
            ExitReason::Exit(Summary::new("mine")),
            ExitReason::NoConnection,
        ];
        let mut kinds = vec![
            FrameKind::Message(vec![1, 2, 3]),
            FrameKind::Refused(vec![]),
            FrameKind::Monitor,
            FrameKind::Demonitor,
            FrameKind::Link,
            FrameKind::Unlink,
            FrameKind::Kill,
            FrameKind::Call {
                id: 7,
                request: vec![4, 5],
            },
            FrameKind::Reply {
                id: u64::MAX,
                message: vec![],
            },
            FrameKind::Named {
                name: "spawner-é".into(),
                message: vec![8, 9],
            },
        ];
        for why in [
            CallRefusal::NoSuchProcess,
            CallRefusal::Finished,
            CallRefusal::Full,
            CallRefusal::ShuttingDown,
        ] {
            kinds.push(FrameKind::CallRefused {
                id: 9,
                why,
                request: vec![6],
            });
        }
        for r in reasons {
            kinds.push(FrameKind::Down(r.clone()));
            kinds.push(FrameKind::Exit(r.clone()));
            kinds.push(FrameKind::ExitSent(r));
        }
        let frames: Vec<Frame> = kinds
            .into_iter()
            .map(|kind| Frame {
                from: a,
                to: b,
                kind,
            })
            .collect();
        let mut bytes = Vec::new();
        for f in &frames {
            encode(f, &mut bytes);
        }
        assert_eq!(decode(&bytes).unwrap(), frames);
        assert!(
            decode(&bytes[..bytes.len() - 1]).is_err(),
            "a cut batch is refused"
        );
    }
}
