//! The weakening rules: from each site, the mutants one step weaker.
//!
//! | operation            | from    | to                          |
//! |----------------------|---------|-----------------------------|
//! | load (and CAS fail)  | SeqCst  | Acquire                     |
//! |                      | Acquire | Relaxed                     |
//! | store                | SeqCst  | Release                     |
//! |                      | Release | Relaxed                     |
//! | RMW (and CAS ok)     | SeqCst  | AcqRel                      |
//! |                      | AcqRel  | Acquire, Release            |
//! |                      | Acquire | Relaxed                     |
//! |                      | Release | Relaxed                     |
//! | fence                | SeqCst  | AcqRel, removed             |
//! |                      | AcqRel  | Acquire, Release, removed   |
//! |                      | Acquire, Release | removed            |
//! | `fetch_add(0, o)` (also `fetch_sub`/`fetch_or`/`fetch_xor` of 0) | o | `load(o')` |
//!
//! `o'` is the load-legal weakening of `o`: SeqCst stays SeqCst, AcqRel and
//! Acquire become Acquire, Release and Relaxed become Relaxed.
//!
//! Legality: every mutant is accepted by rustc 1.64 and later. A load (and a
//! compare-exchange's failure ordering, which is a load) never becomes
//! Release or AcqRel, a store never becomes Acquire or AcqRel, and a fence is
//! never made Relaxed (it is removed instead); since Rust 1.64 the failure
//! ordering may be stronger than the success ordering, so weakening either
//! half alone is legal. A mutant that fails to build anyway is recorded as
//! `invalid`, never as killed.

use crate::scan::{Op, Ord, Site};

/// One textual edit of one site.
#[derive(Clone, Debug)]
pub struct Mutant {
    /// Index of the site in the scan.
    pub site: usize,
    /// `file:line:col:from->to`: where it is now (changes when lines move).
    pub id: String,
    /// `site key:from->to`: stable across edits elsewhere (see `scan.rs`).
    pub key: String,
    /// Replace the bytes `span` of the file with `text`.
    pub span: (usize, usize),
    pub text: String,
}

/// The orderings one step weaker than `ord` for an operation `op`.
fn weaker(op: Op, ord: Ord) -> &'static [Ord] {
    use Ord::*;
    match (op, ord) {
        (Op::Load, SeqCst) => &[Acquire],
        (Op::Load, Acquire) => &[Relaxed],
        (Op::Store, SeqCst) => &[Release],
        (Op::Store, Release) => &[Relaxed],
        (Op::Rmw | Op::Fence, SeqCst) => &[AcqRel],
        (Op::Rmw | Op::Fence, AcqRel) => &[Acquire, Release],
        (Op::Rmw, Acquire | Release) => &[Relaxed],
        _ => &[],
    }
}

/// The ordering a load replacing an RMW of ordering `ord` gets.
fn as_load(ord: Ord) -> Ord {
    match ord {
        Ord::SeqCst => Ord::SeqCst,
        Ord::AcqRel | Ord::Acquire => Ord::Acquire,
        Ord::Release | Ord::Relaxed => Ord::Relaxed,
    }
}

/// Every mutant of every site, in site order.
pub fn mutants(sites: &[Site]) -> Vec<Mutant> {
    let mut out = Vec::new();
    for (index, site) in sites.iter().enumerate() {
        let make = |to: String, span: (usize, usize), text: String| {
            let from = site.ord.name().to_string();
            Mutant {
                site: index,
                id: format!("{}:{}:{}:{from}->{to}", site.file, site.line, site.col),
                key: format!("{}:{from}->{to}", site.key),
                span,
                text,
            }
        };
        for &to in weaker(site.op, site.ord) {
            out.push(make(to.name().into(), site.ord_span, to.name().into()));
        }
        if site.op == Op::Fence {
            out.push(make("removed".into(), site.call_span, "()".into()));
        }
        if site.zero_rmw {
            let load = as_load(site.ord).name();
            out.push(make(
                format!("load({load})"),
                site.call_span,
                format!("load(Ordering::{load})"),
            ));
        }
    }
    out
}

/// The text of `src` with mutant `m` applied.
pub fn apply(src: &str, m: &Mutant) -> String {
    let mut s = String::with_capacity(src.len());
    s.push_str(&src[..m.span.0]);
    s.push_str(&m.text);
    s.push_str(&src[m.span.1..]);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::scan;

    #[test]
    fn one_step_weaker() {
        let src = "fn f() { a.fetch_add(0, Ordering::AcqRel); fence(Ordering::SeqCst); \
                   b.load(Ordering::Relaxed); c.store(1, Ordering::SeqCst); }";
        let sites = scan("f.rs", src);
        let ms = mutants(&sites);
        let keys: Vec<&str> = ms.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "f.rs::f::a.fetch_add#0:AcqRel->Acquire",
                "f.rs::f::a.fetch_add#0:AcqRel->Release",
                "f.rs::f::a.fetch_add#0:AcqRel->load(Acquire)",
                "f.rs::f::fence#0:SeqCst->AcqRel",
                "f.rs::f::fence#0:SeqCst->removed",
                "f.rs::f::c.store#0:SeqCst->Release",
            ]
        );
        let loaded = apply(src, &ms[2]);
        assert!(loaded.contains("a.load(Ordering::Acquire);"), "{loaded}");
        let removed = apply(src, &ms[4]);
        assert!(removed.contains(" (); b.load"), "{removed}");
        assert_eq!(ms[0].id, "f.rs:1:35:AcqRel->Acquire");
    }
}
