//! Text operations with the exact semantics of the reference's Python string methods, which decide the bytes of
//! a bundle: `str.splitlines()`, `"\n".join(...)`, `str.strip()` / `rstrip()` and `json.dumps` of a string (ASCII
//! only). Each function names the Python operation it reproduces.

use cao_core::text::{is_reference_whitespace, trim_reference_whitespace};

/// Whether `c` ends a line for Python's `str.splitlines()`: `\n`, `\r`, VT, FF, the information separators
/// U+001C..=U+001E, NEL U+0085, LINE SEPARATOR U+2028 and PARAGRAPH SEPARATOR U+2029 (`\r\n` counts as one).
pub fn is_line_boundary(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{1C}' | '\u{1D}' | '\u{1E}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Python `text.splitlines()`: the lines of `text` without their boundaries ([`is_line_boundary`], `\r\n` as
/// one); a final boundary does not start an empty last line, and `""` has no lines.
pub fn splitlines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if is_line_boundary(c) {
            lines.push(&text[start..i]);
            let mut end = i + c.len_utf8();
            if c == '\r'
                && let Some(&(j, '\n')) = chars.peek()
            {
                chars.next();
                end = j + 1;
            }
            start = end;
        }
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// Python `"\n".join(text.splitlines())`: every line boundary becomes `\n` and one final boundary is dropped.
pub fn normalize_lines(text: &str) -> String {
    splitlines(text).join("\n")
}

/// Python `text.strip()` (whitespace as [`cao_core::text::is_reference_whitespace`]).
pub fn strip(text: &str) -> &str {
    trim_reference_whitespace(text)
}

/// Python `text.rstrip()`.
pub fn rstrip(text: &str) -> &str {
    text.trim_end_matches(is_reference_whitespace)
}

/// Python `json.dumps(text)` with its default `ensure_ascii=True`: a double-quoted string where `"` and `\` are
/// escaped, `\n \r \t \b \f` use their short escapes, and every other character outside `' '..='~'` is written as
/// `\uXXXX` (lowercase hex; characters above U+FFFF as a surrogate pair). The result is also a valid YAML
/// double-quoted scalar.
pub fn json_quote_ascii(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitlines_matches_python() {
        // Values from Python 3: repr("...".splitlines()).
        assert_eq!(splitlines(""), Vec::<&str>::new());
        assert_eq!(splitlines("a"), ["a"]);
        assert_eq!(splitlines("a\n"), ["a"]);
        assert_eq!(splitlines("a\n\n"), ["a", ""]);
        assert_eq!(splitlines("\na"), ["", "a"]);
        assert_eq!(
            splitlines("a\r\nb\rc\u{0B}d\u{0C}e\u{1C}f\u{1D}g\u{1E}h\u{85}i\u{2028}j\u{2029}k"),
            ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]
        );
        assert_eq!(splitlines("a\r\r\nb\u{1F}c"), ["a", "", "b\u{1F}c"]);
        assert_eq!(normalize_lines("x\r\ny\r"), "x\ny");
    }

    #[test]
    fn json_quote_matches_python_json_dumps() {
        // Values from Python 3: json.dumps(...).
        assert_eq!(json_quote_ascii("c\"d"), r#""c\"d""#);
        assert_eq!(json_quote_ascii("a\\b\n\t\u{08}\u{0C}\r"), r#""a\\b\n\t\b\f\r""#);
        assert_eq!(json_quote_ascii("\u{01}\u{7F}é"), r#""\u0001\u007f\u00e9""#);
        assert_eq!(json_quote_ascii("\u{1F600}"), r#""\ud83d\ude00""#);
        assert_eq!(json_quote_ascii("a:b #e/"), r#""a:b #e/""#);
    }

    #[test]
    fn strip_uses_python_whitespace() {
        assert_eq!(strip("\u{1C} x \u{A0}"), "x");
        assert_eq!(rstrip(" x \u{3000}\n"), " x");
    }
}
