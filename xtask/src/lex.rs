//! A small Rust lexer: enough to find atomic orderings without being fooled
//! by comments, strings, char literals or lifetimes.
//!
//! It produces identifiers, number literals and single punctuation
//! characters with their byte offsets and 1-based line/column. Comments and
//! string/char literals are skipped (a string becomes one `Lit` token so that
//! argument lists keep their shape). It does not need to understand Rust
//! beyond that: `scan.rs` works on this token stream.

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An identifier or keyword (`r#` raw identifiers included).
    Ident,
    /// A number literal, with any suffix (`0`, `0u64`, `1_000`).
    Num,
    /// A string, byte string or char literal.
    Lit,
    /// One punctuation character.
    Punct,
}

/// One token: its kind, its text, and where it is.
#[derive(Clone, Debug)]
pub struct Token {
    pub kind: Kind,
    pub text: String,
    /// Byte offset of the first byte.
    pub start: usize,
    /// Byte offset one past the last byte.
    pub end: usize,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub col: usize,
}

impl Token {
    pub fn is(&self, text: &str) -> bool {
        self.text == text
    }
}

/// Splits `src` into tokens, skipping comments and whitespace.
pub fn lex(src: &str) -> Vec<Token> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    // Line starts, to turn offsets into line/column.
    let mut line = 1;
    let mut line_start = 0;
    let push = |out: &mut Vec<Token>, kind, start: usize, end: usize, line, line_start| {
        let col = src[line_start..start].chars().count() + 1;
        out.push(Token {
            kind,
            text: src[start..end].to_string(),
            start,
            end,
            line,
            col,
        });
    };
    while i < b.len() {
        let c = b[i];
        // Newlines inside multi-line tokens are counted by `advance`.
        macro_rules! advance_to {
            ($to:expr) => {{
                let to = $to;
                for k in i..to.min(b.len()) {
                    if b[k] == b'\n' {
                        line += 1;
                        line_start = k + 1;
                    }
                }
                i = to.min(b.len());
            }};
        }
        if c == b'\n' {
            line += 1;
            i += 1;
            line_start = i;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            let end = src[i..].find('\n').map_or(b.len(), |n| i + n);
            i = end;
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            // Block comments nest in Rust.
            let mut depth = 0;
            let mut k = i;
            while k < b.len() {
                if b[k] == b'/' && b.get(k + 1) == Some(&b'*') {
                    depth += 1;
                    k += 2;
                } else if b[k] == b'*' && b.get(k + 1) == Some(&b'/') {
                    depth -= 1;
                    k += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    k += 1;
                }
            }
            advance_to!(k);
        } else if let Some(end) = raw_string_end(b, i) {
            let (l, ls) = (line, line_start);
            push(&mut out, Kind::Lit, i, end, l, ls);
            advance_to!(end);
        } else if c == b'"' || (c == b'b' && b.get(i + 1) == Some(&b'"')) {
            let mut k = if c == b'b' { i + 2 } else { i + 1 };
            while k < b.len() && b[k] != b'"' {
                k += if b[k] == b'\\' { 2 } else { 1 };
            }
            let end = (k + 1).min(b.len());
            let (l, ls) = (line, line_start);
            push(&mut out, Kind::Lit, i, end, l, ls);
            advance_to!(end);
        } else if c == b'\'' || (c == b'b' && b.get(i + 1) == Some(&b'\'')) {
            let q = if c == b'b' { i + 1 } else { i };
            if let Some(end) = char_literal_end(src, q) {
                push(&mut out, Kind::Lit, i, end, line, line_start);
                i = end;
            } else {
                // A lifetime or label: `'a`. Emit the quote as punctuation;
                // the name follows as an identifier.
                push(&mut out, Kind::Punct, i, i + 1, line, line_start);
                i += 1;
            }
        } else if c == b'_' || c.is_ascii_alphabetic() || c >= 0x80 {
            let mut k = i;
            if c == b'r' && b.get(i + 1) == Some(&b'#') {
                k += 2;
            }
            while k < b.len() && (b[k] == b'_' || b[k].is_ascii_alphanumeric() || b[k] >= 0x80) {
                k += 1;
            }
            push(&mut out, Kind::Ident, i, k, line, line_start);
            i = k;
        } else if c.is_ascii_digit() {
            let mut k = i;
            while k < b.len() && (b[k] == b'_' || b[k].is_ascii_alphanumeric()) {
                k += 1;
            }
            push(&mut out, Kind::Num, i, k, line, line_start);
            i = k;
        } else {
            let len = src[i..].chars().next().map_or(1, char::len_utf8);
            push(&mut out, Kind::Punct, i, i + len, line, line_start);
            i += len;
        }
    }
    out
}

/// If a raw string (`r"…"`, `r#"…"#`, `br#"…"#`) starts at `i`, its end.
fn raw_string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut k = i;
    if b.get(k) == Some(&b'b') {
        k += 1;
    }
    if b.get(k) != Some(&b'r') {
        return None;
    }
    k += 1;
    let hashes = b[k..].iter().take_while(|&&c| c == b'#').count();
    k += hashes;
    if b.get(k) != Some(&b'"') {
        return None;
    }
    k += 1;
    while k < b.len() {
        if b[k] == b'"'
            && b[k + 1..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == b'#')
                .count()
                == hashes
        {
            return Some(k + 1 + hashes);
        }
        k += 1;
    }
    Some(b.len())
}

/// If a char literal starts at the quote at `q`, its end; `None` for a
/// lifetime (`'a` not followed by a closing quote).
fn char_literal_end(src: &str, q: usize) -> Option<usize> {
    let rest = &src[q + 1..];
    let mut chars = rest.char_indices();
    let (_, first) = chars.next()?;
    if first == '\\' {
        // An escape: runs to the next quote (`'\''` has its quote escaped).
        let after = &rest[1..];
        let skip = after.chars().next()?.len_utf8();
        let close = after[skip..].find('\'')?;
        return Some(q + 1 + 1 + skip + close + 1);
    }
    let (idx, second) = chars.next()?;
    (second == '\'').then_some(q + 1 + idx + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(src: &str) -> Vec<String> {
        lex(src).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn skips_comments_strings_and_lifetimes() {
        let src = "a.load(Ordering::Relaxed) // Ordering::SeqCst\n/* x /* y */ z */ \"Ordering::Acquire\" 'a' '\\'' f::<'a>(r#\"q\"#)";
        let t = texts(src);
        assert_eq!(
            t,
            [
                "a",
                ".",
                "load",
                "(",
                "Ordering",
                ":",
                ":",
                "Relaxed",
                ")",
                "\"Ordering::Acquire\"",
                "'a'",
                "'\\''",
                "f",
                ":",
                ":",
                "<",
                "'",
                "a",
                ">",
                "(",
                "r#\"q\"#",
                ")"
            ]
        );
    }

    #[test]
    fn positions_are_one_based() {
        let t = lex("x\n  y");
        assert_eq!((t[1].line, t[1].col), (2, 3));
    }
}
