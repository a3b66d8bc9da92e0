//! The one rule for showing untrusted text (memory content, tags, model answers, file names): no character that
//! can drive a terminal or reorder what a reader sees leaves cao raw, on a terminal, in a file an agent or a person
//! reads (`AGENTS.md`, `CLAUDE.md`, steering files), in hook output or on the clipboard.
//!
//! Unsafe characters ([`is_unsafe`]):
//! - every Unicode control character (general category Cc): C0 (`U+0000`..`U+001F`: ESC, BEL, CR, backspace, ...),
//!   DEL and C1 (`U+0080`..`U+009F`, CSI `U+009B` among them), the introducers of every terminal escape sequence
//!   (title changes, OSC 52 clipboard writes, the end of bracketed paste `ESC [201~`, cursor moves, colours);
//! - the bidirectional embeddings, overrides and isolates `U+202A`..`U+202E` and `U+2066`..`U+2069`, which reorder
//!   the text around them (Trojan Source, CVE-2021-42574);
//! - the line and paragraph separators `U+2028`, `U+2029`.
//!
//! How a neutralised character looks:
//! - [`escape`] and [`escape_line`]: as its Rust escape, visible and unambiguous: `\u{1b}` for ESC, `\u{7}` for BEL,
//!   `\r` for CR, `\u{202e}` for RIGHT-TO-LEFT OVERRIDE (`char::escape_default`). [`escape`] keeps line feed, tab
//!   and the CR of a CRLF pair (text shown over several lines: `cao memory show`, the `<cao-memory>` block, provider files, hook output,
//!   the inspector's copy); [`escape_line`] escapes them too (`\n`, `\t`: one-line cells, plans, findings).
//! - [`blank`]: as one space, for text that must keep its length in lines and bytes budgets (the journal view's
//!   lines, the inspector's panes).
//!
//! Everything else passes unchanged (a backslash is not escaped: `\u{1b}` written by a user reads the same as an
//! escaped ESC, which is harmless). Borrowed when nothing changes.

use std::borrow::Cow;

/// The bidirectional formatting characters that reorder text: LRE, RLE, PDF, LRO, RLO (`U+202A`..`U+202E`) and
/// LRI, RLI, FSI, PDI (`U+2066`..`U+2069`).
pub const BIDI_CONTROLS: [char; 9] = [
    '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
];

/// Whether `c` is unsafe to show raw (module docs): a control character, a bidi embedding, override or isolate, or
/// `U+2028` / `U+2029`.
pub fn is_unsafe(c: char) -> bool {
    c.is_control() || BIDI_CONTROLS.contains(&c) || c == '\u{2028}' || c == '\u{2029}'
}

/// `text` with every unsafe character but line feed, tab and the carriage return of a CRLF pair replaced by its
/// escape (module docs; a lone carriage return, which returns the cursor to overwrite a line, is escaped). For text
/// shown over several lines.
pub fn escape(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let keep = |i: usize, c: char| matches!(c, '\n' | '\t') || (c == '\r' && bytes.get(i + 1) == Some(&b'\n'));
    if !text.char_indices().any(|(i, c)| is_unsafe(c) && !keep(i, c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (i, c) in text.char_indices() {
        if is_unsafe(c) && !keep(i, c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` with every unsafe character, line feed and tab included, replaced by its escape (module docs). For text
/// shown on one line.
pub fn escape_line(text: &str) -> Cow<'_, str> {
    replace(text, |_| false, |c, out| out.extend(c.escape_default()))
}

/// `text` with every unsafe character replaced by one space (module docs).
pub fn blank(text: &str) -> Cow<'_, str> {
    replace(text, |_| false, |_, out| out.push(' '))
}

/// `text` with each unsafe character that `keep` does not accept written by `put`.
fn replace(text: &str, keep: impl Fn(char) -> bool, put: impl Fn(char, &mut String)) -> Cow<'_, str> {
    let hit = |c: char| is_unsafe(c) && !keep(c);
    let Some(first) = text.find(hit) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if hit(c) {
            put(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str =
        "a\u{1b}]0;T\u{7}\u{1b}]52;c;eA==\u{7}b\u{1b}[201~\nc\rd\u{8}e\u{9b}f\u{7f}\tg\u{202e}h\u{2066}i\u{2028}j";

    #[test]
    fn multi_line_text_keeps_lines_and_tabs_and_shows_the_rest_as_escapes() {
        assert_eq!(
            escape(HOSTILE),
            "a\\u{1b}]0;T\\u{7}\\u{1b}]52;c;eA==\\u{7}b\\u{1b}[201~\nc\\rd\\u{8}e\\u{9b}f\\u{7f}\tg\\u{202e}h\\u{2066}i\\u{2028}j"
        );
        assert!(!escape(HOSTILE).chars().any(|c| is_unsafe(c) && c != '\n' && c != '\t'));
        assert_eq!(
            escape("a\r\nb\rc"),
            "a\r\nb\\rc",
            "a CRLF pair stays, a lone CR is escaped"
        );
    }

    #[test]
    fn one_line_text_escapes_line_feeds_and_tabs_too() {
        let line = escape_line(HOSTILE);
        assert!(!line.chars().any(is_unsafe), "{line}");
        assert!(line.contains("[201~\\nc") && line.contains("\\tg"), "{line}");
    }

    #[test]
    fn blanking_keeps_one_character_per_unsafe_one() {
        let b = blank("x\u{1b}[2J\u{202e}y\nz");
        assert_eq!(b, "x [2J y z");
    }

    #[test]
    fn every_bidi_control_and_c1_is_unsafe_and_ordinary_text_is_borrowed() {
        for c in BIDI_CONTROLS
            .into_iter()
            .chain(['\u{0}', '\u{80}', '\u{9f}', '\u{2029}'])
        {
            assert!(is_unsafe(c), "U+{:04X}", c as u32);
        }
        for c in ['a', 'é', '\u{200f}', '中', '\u{a0}', '\\'] {
            assert!(!is_unsafe(c), "U+{:04X}", c as u32);
        }
        let plain = "plain text, ünïcode, emoji 🚀\nand a tab\t";
        assert!(matches!(escape(plain), Cow::Borrowed(_)));
        assert!(matches!(blank("no controls"), Cow::Borrowed(_)));
    }
}
