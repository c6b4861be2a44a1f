//! Finds the ordering sites of a source file: every `Ordering::X` passed to
//! an atomic operation or a fence, outside `#[cfg(test)]` items.
//!
//! A site knows what operation it orders (load, store, read-modify-write, a
//! compare-exchange's success or failure half, a fence), where its ordering
//! name and its whole call are (for the textual edits), and its *key*:
//!
//! ```text
//! src/deque/worker.rs::Worker::pop::bottom.store#1
//! <file>            ::<impl>::<fn>::<receiver>.<method>[/role]#<n>
//! ```
//!
//! `<impl>` is the type of the enclosing `impl`/`trait` block (omitted at
//! top level), `<fn>` the innermost enclosing `fn`, `<receiver>` the field or
//! variable the method is called on (`_` if it is not a plain name), `role`
//! `ok`/`fail` for a compare-exchange's two orderings (`set`/`fetch` for
//! `fetch_update`), and `n` counts the earlier sites with the same
//! receiver, method and role in the same function. The key does not contain
//! a line number, so it survives edits elsewhere in the file; it changes only
//! when the function, the receiver's name or the order of identical calls in
//! the function changes. `survivors.md`, `relaxed.md` and `--resume` use it.

use crate::lex::{lex, Kind, Token};
use std::collections::HashMap;

/// The five memory orderings, weakest last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ord {
    SeqCst,
    AcqRel,
    Acquire,
    Release,
    Relaxed,
}

impl Ord {
    pub fn parse(s: &str) -> Option<Ord> {
        Some(match s {
            "SeqCst" => Ord::SeqCst,
            "AcqRel" => Ord::AcqRel,
            "Acquire" => Ord::Acquire,
            "Release" => Ord::Release,
            "Relaxed" => Ord::Relaxed,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Ord::SeqCst => "SeqCst",
            Ord::AcqRel => "AcqRel",
            Ord::Acquire => "Acquire",
            Ord::Release => "Release",
            Ord::Relaxed => "Relaxed",
        }
    }
}

/// The operation an ordering belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `load`, and the failure ordering of a compare-exchange (a load).
    Load,
    Store,
    /// `swap`, `fetch_*`, a compare-exchange's success ordering.
    Rmw,
    /// `fence` or `compiler_fence`.
    Fence,
    /// An ordering passed to something else (a helper, a variable): listed,
    /// never mutated.
    Other,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Load => "load",
            Op::Store => "store",
            Op::Rmw => "rmw",
            Op::Fence => "fence",
            Op::Other => "other",
        }
    }
}

/// One ordering argument in the source.
#[derive(Clone, Debug)]
pub struct Site {
    /// Path relative to the repository root, `/`-separated.
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub key: String,
    pub op: Op,
    pub ord: Ord,
    /// The method or function the ordering is passed to.
    pub method: String,
    /// Byte span of the ordering's name (`Relaxed` in `Ordering::Relaxed`).
    pub ord_span: (usize, usize),
    /// Byte span of the whole call, from the method name to its `)`.
    pub call_span: (usize, usize),
    /// A `fetch_add(0, ..)`-style RMW that adds nothing: it may become a load.
    pub zero_rmw: bool,
    /// The source line, trimmed.
    pub line_text: String,
}

/// An open `(`, `[` or `{` while scanning.
struct Frame {
    /// For a call: the callee's name, its token index and the receiver.
    call: Option<(String, usize, String)>,
    /// Token index of the opening bracket.
    open: usize,
    /// Top-level commas seen so far (the current argument's index).
    arg: usize,
    /// Token index of the first top-level comma.
    first_comma: Option<usize>,
    /// Sites whose ordering is a direct argument of this call.
    sites: Vec<usize>,
    /// Whether this `{` opened a scope (fn/impl) to pop at its `}`.
    scope: bool,
}

const RMW: &[&str] = &[
    "swap",
    "fetch_add",
    "fetch_sub",
    "fetch_and",
    "fetch_nand",
    "fetch_or",
    "fetch_xor",
    "fetch_max",
    "fetch_min",
];
/// RMWs that leave the value unchanged when their operand is 0.
const ZERO_RMW: &[&str] = &["fetch_add", "fetch_sub", "fetch_or", "fetch_xor"];
const KEYWORDS: &[&str] = &[
    "if", "while", "match", "return", "for", "in", "let", "loop", "move", "unsafe", "else", "as",
];

/// What the ordering argument `arg` of `method` orders, and its key role.
fn classify(method: &str, arg: usize) -> (Op, &'static str) {
    match (method, arg) {
        ("load", 0) => (Op::Load, ""),
        ("store", 1) => (Op::Store, ""),
        (m, 1) if RMW.contains(&m) => (Op::Rmw, ""),
        ("compare_exchange" | "compare_exchange_weak", 2) => (Op::Rmw, "/ok"),
        ("compare_exchange" | "compare_exchange_weak", 3) => (Op::Load, "/fail"),
        ("fetch_update", 0) => (Op::Rmw, "/set"),
        ("fetch_update", 1) => (Op::Load, "/fetch"),
        ("fence" | "compiler_fence", 0) => (Op::Fence, ""),
        _ => (Op::Other, ""),
    }
}

/// Whether tokens `t[i..]` start `#[cfg(test)]`.
fn is_cfg_test(t: &[Token], i: usize) -> bool {
    let want = ["#", "[", "cfg", "(", "test", ")", "]"];
    t.len() >= i + want.len() && want.iter().enumerate().all(|(k, w)| t[i + k].is(w))
}

/// The token index just past the item that starts at `i` (after its
/// attributes): past its `;`, or past the `}` matching its first `{`.
fn item_end(t: &[Token], mut i: usize) -> usize {
    let mut depth = 0i32;
    while i < t.len() {
        match t[i].text.as_str() {
            "(" | "[" => depth += 1,
            ")" | "]" => depth -= 1,
            ";" if depth == 0 => return i + 1,
            "{" if depth == 0 => {
                let mut braces = 0;
                while i < t.len() {
                    if t[i].is("{") {
                        braces += 1;
                    } else if t[i].is("}") {
                        braces -= 1;
                        if braces == 0 {
                            return i + 1;
                        }
                    }
                    i += 1;
                }
                return i;
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// The type an `impl`/`trait` header starting after token `i` is for: the
/// last name outside angle brackets before `{` or `where`.
fn impl_name(t: &[Token], mut i: usize) -> String {
    let (mut angle, mut name) = (0i32, String::from("_"));
    while i < t.len() && !t[i].is("{") && !t[i].is(";") && !t[i].is("where") {
        match t[i].text.as_str() {
            "<" => angle += 1,
            ">" if !(i > 0 && t[i - 1].is("-")) => angle -= 1,
            _ if angle == 0
                && t[i].kind == Kind::Ident
                && !["for", "dyn", "unsafe", "const", "mut", "impl", "trait"]
                    .contains(&t[i].text.as_str()) =>
            {
                name = t[i].text.clone();
            }
            _ => {}
        }
        i += 1;
    }
    name
}

/// The receiver of a method call whose `.` is at token `dot`: the name just
/// before it, looking through one `[...]` index or into one `(...)`.
fn receiver(t: &[Token], dot: usize) -> String {
    let Some(mut j) = dot.checked_sub(1) else {
        return "_".into();
    };
    if t[j].is("]") {
        let mut depth = 0;
        loop {
            if t[j].is("]") {
                depth += 1;
            } else if t[j].is("[") {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            if j == 0 {
                return "_".into();
            }
            j -= 1;
        }
        j = match j.checked_sub(1) {
            Some(j) => j,
            None => return "_".into(),
        };
    } else if t[j].is(")") {
        j -= 1;
    }
    match t[j].kind {
        Kind::Ident | Kind::Num => t[j].text.clone(),
        _ => "_".into(),
    }
}

fn is_zero(text: &str) -> bool {
    let digits: String = text
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '_')
        .collect();
    !digits.is_empty() && digits.chars().all(|c| c == '0' || c == '_')
}

/// Every ordering site in `src` (the text of `file`).
pub fn scan(file: &str, src: &str) -> Vec<Site> {
    let t = lex(src);
    let lines: Vec<&str> = src.lines().collect();
    let mut sites: Vec<Site> = Vec::new();
    let mut frames: Vec<Frame> = Vec::new();
    let mut scopes: Vec<String> = Vec::new();
    let mut pending: Option<String> = None;
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut i = 0;
    while i < t.len() {
        let tok = &t[i];
        if is_cfg_test(&t, i) {
            i = item_end(&t, i + 7);
            continue;
        }
        match tok.text.as_str() {
            "fn" if t.get(i + 1).is_some_and(|n| n.kind == Kind::Ident) => {
                pending = Some(t[i + 1].text.clone());
            }
            "impl" | "trait" if pending.is_none() && frames.iter().all(|f| f.scope) => {
                pending = Some(impl_name(&t, i + 1));
            }
            ";" if frames.iter().all(|f| f.scope) => pending = None,
            "(" | "[" | "{" => {
                let mut frame = Frame {
                    call: None,
                    open: i,
                    arg: 0,
                    first_comma: None,
                    sites: Vec::new(),
                    scope: false,
                };
                if tok.is("{") {
                    if let Some(name) = pending.take() {
                        scopes.push(name);
                        frame.scope = true;
                    }
                } else if tok.is("(") && i > 0 && t[i - 1].kind == Kind::Ident {
                    let name = &t[i - 1].text;
                    if !KEYWORDS.contains(&name.as_str()) {
                        let recv = if i >= 2 && t[i - 2].is(".") {
                            receiver(&t, i - 2)
                        } else {
                            String::new()
                        };
                        frame.call = Some((name.clone(), i - 1, recv));
                    }
                }
                frames.push(frame);
            }
            ")" | "]" | "}" => {
                if let Some(frame) = frames.pop() {
                    if frame.scope {
                        scopes.pop();
                    }
                    if let Some((name, callee, _)) = &frame.call {
                        let first_end = frame.first_comma.unwrap_or(i);
                        let zero = first_end == frame.open + 2
                            && t[frame.open + 1].kind == Kind::Num
                            && is_zero(&t[frame.open + 1].text)
                            && ZERO_RMW.contains(&name.as_str());
                        for &s in &frame.sites {
                            sites[s].call_span = (t[*callee].start, tok.end);
                            sites[s].zero_rmw = zero && sites[s].op == Op::Rmw;
                        }
                    }
                }
            }
            "," => {
                if let Some(f) = frames.last_mut() {
                    f.arg += 1;
                    f.first_comma.get_or_insert(i);
                }
            }
            "Ordering"
                if t.get(i + 1).is_some_and(|c| c.is(":"))
                    && t.get(i + 2).is_some_and(|c| c.is(":")) =>
            {
                if let Some(ord) = t.get(i + 3).and_then(|n| Ord::parse(&n.text)) {
                    let name = &t[i + 3];
                    let frame = frames.last_mut();
                    let (op, role, method, recv) = match frame
                        .as_ref()
                        .and_then(|f| f.call.as_ref().map(|c| (f.arg, c)))
                    {
                        Some((arg, (method, _, recv))) => {
                            let (op, role) = classify(method, arg);
                            (op, role, method.clone(), recv.clone())
                        }
                        None => (Op::Other, "", "?".to_string(), String::new()),
                    };
                    let scope = if scopes.is_empty() {
                        "<top>".to_string()
                    } else {
                        scopes.join("::")
                    };
                    let call = if recv.is_empty() {
                        format!("{method}{role}")
                    } else {
                        format!("{recv}.{method}{role}")
                    };
                    let base = format!("{file}::{scope}::{call}");
                    let n = counts.entry(base.clone()).or_insert(0);
                    let key = format!("{base}#{n}");
                    *n += 1;
                    if let Some(f) = frame {
                        if f.call.is_some() {
                            f.sites.push(sites.len());
                        }
                    }
                    sites.push(Site {
                        file: file.to_string(),
                        line: name.line,
                        col: name.col,
                        key,
                        op,
                        ord,
                        method,
                        ord_span: (name.start, name.end),
                        call_span: (name.start, name.end),
                        zero_rmw: false,
                        line_text: lines.get(name.line - 1).unwrap_or(&"").trim().to_string(),
                    });
                    i += 4;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    sites
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = r#"
impl<T: Pointer> Worker<T> {
    pub fn pop(&self) -> Option<T> {
        let b = inner.owner.bottom.load(Ordering::Relaxed); // Ordering::SeqCst
        inner.owner.bottom.store(b.wrapping_sub(1), Ordering::Relaxed);
        let top = head.fetch_add(0, Ordering::AcqRel) as u32;
        inner
            .owner
            .bottom
            .store(b, Ordering::Release);
        match (self.0).compare_exchange_weak(s.0, next, Ordering::AcqRel, Ordering::Acquire) {}
        self.pages[page].compare_exchange(a, b, Ordering::Release, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        helper(Ordering::Acquire);
    }
}
fn free(f: impl FnOnce(u32) -> u32) { x.fetch_add(1, Ordering::Relaxed); }
#[cfg(test)]
mod tests { fn t() { a.load(Ordering::SeqCst); } }
"#;

    #[test]
    fn finds_sites_with_keys() {
        let s = scan("f.rs", SRC);
        let got: Vec<(String, Op, Ord)> = s.iter().map(|s| (s.key.clone(), s.op, s.ord)).collect();
        let want = [
            ("f.rs::Worker::pop::bottom.load#0", Op::Load, Ord::Relaxed),
            ("f.rs::Worker::pop::bottom.store#0", Op::Store, Ord::Relaxed),
            ("f.rs::Worker::pop::head.fetch_add#0", Op::Rmw, Ord::AcqRel),
            ("f.rs::Worker::pop::bottom.store#1", Op::Store, Ord::Release),
            (
                "f.rs::Worker::pop::0.compare_exchange_weak/ok#0",
                Op::Rmw,
                Ord::AcqRel,
            ),
            (
                "f.rs::Worker::pop::0.compare_exchange_weak/fail#0",
                Op::Load,
                Ord::Acquire,
            ),
            (
                "f.rs::Worker::pop::pages.compare_exchange/ok#0",
                Op::Rmw,
                Ord::Release,
            ),
            (
                "f.rs::Worker::pop::pages.compare_exchange/fail#0",
                Op::Load,
                Ord::Relaxed,
            ),
            ("f.rs::Worker::pop::fence#0", Op::Fence, Ord::SeqCst),
            ("f.rs::Worker::pop::helper#0", Op::Other, Ord::Acquire),
            ("f.rs::free::x.fetch_add#0", Op::Rmw, Ord::Relaxed),
        ];
        let want: Vec<(String, Op, Ord)> = want
            .iter()
            .map(|(k, o, r)| (k.to_string(), *o, *r))
            .collect();
        assert_eq!(got, want);
        assert!(s[2].zero_rmw && !s[10].zero_rmw);
        assert_eq!(
            &SRC[s[2].call_span.0..s[2].call_span.1],
            "fetch_add(0, Ordering::AcqRel)"
        );
        assert_eq!(
            &SRC[s[8].call_span.0..s[8].call_span.1],
            "fence(Ordering::SeqCst)"
        );
        assert_eq!(&SRC[s[3].ord_span.0..s[3].ord_span.1], "Release");
        assert_eq!(s[3].line, 10);
    }
}
