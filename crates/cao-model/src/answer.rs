//! Cleaning untrusted model output: terminal escape sequences and control characters out, size capped.
//!
//! The escape-sequence grammar is `vte`'s (the parser of the Alacritty terminal): CSI (colours, cursor moves),
//! OSC (titles, hyperlinks), DCS/SOS/PM/APC strings and plain ESC sequences are recognised and dropped whole,
//! whether their introducer is 7-bit (`ESC [`) or 8-bit. Of the remaining text, printable characters are kept, and
//! so are newline and tab; every other C0/C1 control character, DEL, and the bidirectional embedding, override and
//! isolate characters (U+202A..=U+202E, U+2066..=U+2069, which can make text display differently from what it
//! is) are dropped. A carriage return not followed by a newline starts its line over (the text a spinner or a
//! progress line redrew is dropped, as a terminal would show it). Invalid UTF-8 becomes U+FFFD.

/// Clean `raw` and cut it to at most `max_bytes` bytes.
///
/// Steps: drop escape sequences and control characters (module docs), trim whitespace at both ends, cut at the
/// last UTF-8 character boundary at or below `max_bytes` and trim the cut end again. Returns the text and whether
/// it was cut.
pub fn clean_answer(raw: &[u8], max_bytes: usize) -> (String, bool) {
    let text = strip_terminal_noise(raw);
    let trimmed = text.trim();
    if trimmed.len() <= max_bytes {
        return (trimmed.to_owned(), false);
    }
    let cut = &trimmed[..trimmed.floor_char_boundary(max_bytes)];
    (cut.trim_end().to_owned(), true)
}

/// A one-line excerpt of untrusted text for an error message: cleaned, newlines and tabs turned into spaces,
/// passed through the secret gate's redaction, cut to at most `max_bytes` bytes (with `...` when cut).
pub fn one_line_excerpt(raw: &[u8], max_bytes: usize) -> String {
    let (text, _) = clean_answer(raw, max_bytes.saturating_mul(4));
    let flat: String = text
        .split(['\n', '\t'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let safe = cao_core::secret::redact(&flat);
    if safe.len() <= max_bytes {
        return safe;
    }
    let keep = safe.floor_char_boundary(max_bytes.saturating_sub(3));
    format!("{}...", safe[..keep].trim_end())
}

/// `raw` without escape sequences and control characters (newline and tab kept).
fn strip_terminal_noise(raw: &[u8]) -> String {
    let mut parser = vte::Parser::new();
    let mut keep = Keep {
        out: String::with_capacity(raw.len()),
        line_start: 0,
        carriage_return: false,
    };
    parser.advance(&mut keep, &c1_as_escapes(raw));
    keep.out
}

/// Rewrite each UTF-8 encoded C1 control (U+0080..=U+009F, bytes `C2 80..=9F`) as its 7-bit equivalent
/// `ESC (c - 0x40)`, so the parser recognises 8-bit introducers such as U+009B (CSI) and U+009D (OSC) and drops
/// the whole sequence, not just the introducer.
fn c1_as_escapes(raw: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let is_c1 = |w: &[u8]| w[0] == 0xC2 && (0x80..=0x9F).contains(&w[1]);
    if !raw.windows(2).any(is_c1) {
        return std::borrow::Cow::Borrowed(raw);
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if i + 1 < raw.len() && is_c1(&raw[i..i + 2]) {
            out.push(0x1B);
            out.push(raw[i + 1] - 0x40);
            i += 2;
        } else {
            out.push(raw[i]);
            i += 1;
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The `vte` performer that keeps text and drops everything else. A carriage return that is not followed by a
/// newline starts the current line over, as a terminal shows a spinner or progress line that redraws itself.
struct Keep {
    out: String,
    /// Byte offset where the current line starts in `out`.
    line_start: usize,
    /// A carriage return was seen on this line and no text since.
    carriage_return: bool,
}

impl Keep {
    fn push(&mut self, c: char) {
        if self.carriage_return {
            self.out.truncate(self.line_start);
            self.carriage_return = false;
        }
        self.out.push(c);
    }
}

impl vte::Perform for Keep {
    fn print(&mut self, c: char) {
        if !dropped(c) {
            self.push(c);
        }
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' => {
                self.carriage_return = false;
                self.out.push('\n');
                self.line_start = self.out.len();
            }
            b'\t' => self.push('\t'),
            b'\r' => self.carriage_return = true,
            _ => {}
        }
    }
}

/// Characters dropped even outside escape sequences: controls (C0, DEL, C1) and bidi embedding/override/isolate.
fn dropped(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn escape_sequences_and_controls_are_removed() {
        let raw =
            b"\x1b[1;32mDone\x1b[0m: \x1b]0;title\x07ok\r\n\ttab\x1b[2K\x08\x00 \xe2\x80\xaeevil\x1bPdcs\x1b\\ end\x7f";
        let (text, cut) = clean_answer(raw, 1000);
        assert_eq!(text, "Done: ok\n\ttab evil end");
        assert!(!cut);
        let (text, _) = clean_answer("spinner \u{9b}31mred\u{9b}0m text".as_bytes(), 100);
        assert_eq!(text, "spinner red text", "8-bit CSI");
        let (text, _) = clean_answer("a\u{9d}8;;http://x\u{9c}link\u{9d}8;;\u{9c} b".as_bytes(), 100);
        assert_eq!(text, "alink b", "8-bit OSC hyperlink");
        let (text, _) = clean_answer(b"raw \x9b31mbyte", 100);
        assert!(!text.contains('\u{9b}'), "{text:?}");
        let (text, _) = clean_answer(b"50%\r 75%\r100%\nline two\r\nend\r", 100);
        assert_eq!(text, "100%\nline two\nend", "redrawn lines keep their last state");
        let (text, _) = clean_answer(b"bad \xff utf8", 100);
        assert_eq!(text, "bad \u{FFFD} utf8");
    }

    #[test]
    fn cut_at_a_char_boundary_and_trimmed() {
        let (text, cut) = clean_answer("  héllo wörld  ".as_bytes(), 2);
        assert_eq!((text.as_str(), cut), ("h", true));
        let (text, cut) = clean_answer("ab cd".as_bytes(), 3);
        assert_eq!((text.as_str(), cut), ("ab", true));
        let (text, cut) = clean_answer("  exact  ".as_bytes(), 5);
        assert_eq!((text.as_str(), cut), ("exact", false));
        assert_eq!(clean_answer(b"\x1b[0m \n ", 10), (String::new(), false));
    }

    #[test]
    fn excerpts_are_one_redacted_line() {
        let e = one_line_excerpt(b"{\"error\":\n  \"bad\tkey AKIAIOSFODNN7EXAMPLE\"}", 200);
        assert!(!e.contains('\n') && !e.contains('\t'), "{e}");
        assert!(!e.contains("AKIAIOSFODNN7EXAMPLE"), "{e}");
        let e = one_line_excerpt("é".repeat(100).as_bytes(), 11);
        assert_eq!(e, "éééé...");
    }

    proptest! {
        #[test]
        fn cleaned_text_is_bounded_and_free_of_controls(raw in proptest::collection::vec(any::<u8>(), 0..600),
                                                        max in 0usize..300) {
            let (text, cut) = clean_answer(&raw, max);
            prop_assert!(text.len() <= max);
            prop_assert!(text.chars().all(|c| c == '\n' || c == '\t' || !dropped(c)));
            prop_assert_eq!(text.trim(), text.as_str());
            if !cut {
                prop_assert_eq!(text, clean_answer(&raw, usize::MAX).0);
            }
        }
    }
}
