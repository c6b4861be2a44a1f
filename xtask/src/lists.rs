//! The results file and the two hand-kept lists beside the tool.
//!
//! - `target/mutate/results.tsv` (or `--out`): one row per mutant, appended
//!   as each finishes, so an interrupted run keeps what it did and
//!   `--resume` skips the keys already recorded.
//! - `docs/proof/survivors.md`: survivors no available checker can observe,
//!   each with its argument. An entry is a list item whose first thing is the
//!   mutant key in backticks: ``- `src/x.rs::T::f::a.load#0:Acquire->Relaxed` — why``.
//! - `docs/proof/relaxed.md`: the second rule's list of `Relaxed` stores and
//!   RMWs. An entry is a list item starting with the site key in backticks;
//!   its text (up to the next item or heading) says `model:` (the loom model
//!   or test in which another thread reads the value and then touches what
//!   it points at), `unshared:` (no other thread loads the word, or what it
//!   loads publishes nothing, and why), or `todo:`.

use std::collections::{HashMap, HashSet};
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::Path;

pub const HEADER: &str = "id\tkey\tverdict\tcheck\tbuild_s\tcheck_s\toriginal\tmutant\tdetail";

/// One results row.
pub struct Row<'a> {
    pub id: &'a str,
    pub key: &'a str,
    pub verdict: &'a str,
    pub check: &'a str,
    pub build: f64,
    pub check_secs: f64,
    pub original: &'a str,
    pub mutant: &'a str,
    pub detail: &'a str,
}

fn clean(s: &str) -> String {
    s.replace(['\t', '\n', '\r'], " ")
}

/// Appends `row` to `path` (writing the header if the file is new).
pub fn append(path: &Path, row: &Row) -> io::Result<()> {
    let new = !path.exists();
    let mut f = OpenOptions::new().create(true).append(true).open(path)?;
    if new {
        writeln!(f, "{HEADER}")?;
    }
    writeln!(
        f,
        "{}\t{}\t{}\t{}\t{:.1}\t{:.1}\t{}\t{}\t{}",
        clean(row.id),
        clean(row.key),
        row.verdict,
        clean(row.check),
        row.build,
        row.check_secs,
        clean(row.original),
        clean(row.mutant),
        clean(row.detail)
    )
}

/// Keys already recorded in a results file, with their verdicts.
pub fn recorded(path: &Path) -> HashMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let mut cols = l.split('\t');
            let _id = cols.next()?;
            Some((cols.next()?.to_string(), cols.next()?.to_string()))
        })
        .collect()
}

/// List entries of a markdown file: (key in backticks, the entry's text).
fn entries(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix("- `") {
            if let Some(end) = rest.find('`') {
                out.push((rest[..end].to_string(), rest[end + 1..].to_string()));
                continue;
            }
        }
        let indented = line.starts_with(' ') || line.starts_with('\t');
        match out.last_mut() {
            Some((_, body)) if indented && !t.is_empty() => {
                body.push(' ');
                body.push_str(t);
            }
            _ => {}
        }
        if t.starts_with('#') || t.starts_with("- ") {
            // A heading or another item ends the current entry's text.
            out.push((String::new(), String::new()));
        }
    }
    // Keys always name a path (`file::fn::…`); other code spans are prose.
    out.retain(|(k, _)| k.contains("::"));
    out
}

/// Mutant keys listed in `survivors.md` (with the arrow written `->` or `→`).
pub fn survivors(path: &Path) -> HashSet<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    entries(&text)
        .into_iter()
        .map(|(k, _)| k.replace('→', "->"))
        .filter(|k| k.contains("->"))
        .collect()
}

/// What `relaxed.md` says about a site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relaxed {
    Model,
    Unshared,
    Todo,
}

/// Site keys in `relaxed.md` with their status.
pub fn relaxed(path: &Path) -> HashMap<String, Relaxed> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    entries(&text)
        .into_iter()
        .filter(|(k, _)| !k.contains("->") && !k.contains('→'))
        .map(|(k, body)| {
            let status = if body.contains("todo:") {
                Relaxed::Todo
            } else if body.contains("model:") {
                Relaxed::Model
            } else if body.contains("unshared:") {
                Relaxed::Unshared
            } else {
                Relaxed::Todo
            };
            (k, status)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_entries() {
        let md = "# S\n\n- `model:` prose, not an entry\n- `a.rs::f::x.load#0:Acquire->Relaxed` — loom has no\n  load buffering.\n- `b.rs::g::y.store#0:Release→Relaxed`\n\n# R\n- `c.rs::h::z.store#0` — model: `deque::pop_vs_steal`\n- `c.rs::h::w.store#0`\n  unshared: owner only\n- `c.rs::h::v.store#0` todo: find one\n";
        let p = std::env::temp_dir().join(format!("xtask-lists-{}.md", std::process::id()));
        std::fs::write(&p, md).unwrap();
        let s = survivors(&p);
        assert!(s.contains("a.rs::f::x.load#0:Acquire->Relaxed"));
        assert!(s.contains("b.rs::g::y.store#0:Release->Relaxed"));
        let r = relaxed(&p);
        assert_eq!(r["c.rs::h::z.store#0"], Relaxed::Model);
        assert_eq!(r["c.rs::h::w.store#0"], Relaxed::Unshared);
        assert_eq!(r["c.rs::h::v.store#0"], Relaxed::Todo);
        assert_eq!(r.len(), 3);
        std::fs::remove_file(&p).unwrap();
    }
}
