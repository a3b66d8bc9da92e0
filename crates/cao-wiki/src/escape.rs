//! Line escaping of entry content, so that stored content can never be mistaken for file structure.
//!
//! A content line is *structural-looking* when, after removing all of its leading backslashes, it
//! - is an entry heading: `## ` + a `YYYY-MM-DDTHH:MM:SSZ`-shaped timestamp (digits in every digit slot, any
//!   values) followed only by spaces, tabs or carriage returns (see [`heading_ts`]), or
//! - starts with `<!-- id:` (a header comment lookalike).
//!
//! Writing prefixes every structural-looking line with one more `\`; reading removes one `\` from every line that
//! starts with `\` and is structural-looking. This is a bijection on lines (and therefore on content):
//! - a structural-looking line `L` is written as `\L`, which is structural-looking and starts with `\`, so reading
//!   gives `L` back;
//! - any other line is written unchanged and is not touched by reading.
//!
//! Written content therefore never contains a line that [`heading_ts`] accepts (those start with `#`, and every
//! such content line got a leading `\`). Text that is not at the start of a line is never changed.
//! Lines are separated by `\n` only; a `\r` is an ordinary character (a trailing one is tolerated by
//! [`heading_ts`], so it is escaped too).

use std::borrow::Cow;

/// Length of a `YYYY-MM-DDTHH:MM:SSZ` timestamp in bytes.
pub(crate) const TS_LEN: usize = 20;

/// Whether `s` has the shape `DDDD-DD-DDTDD:DD:DDZ` (D = ASCII digit), exactly [`TS_LEN`] bytes.
pub(crate) fn ts_shape(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == TS_LEN
        && b.iter().enumerate().all(|(i, &c)| match i {
            4 | 7 => c == b'-',
            10 => c == b'T',
            13 | 16 => c == b':',
            19 => c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

/// If `line` (without its `\n`) is an entry heading, its timestamp text.
///
/// An entry heading is `## ` + a `DDDD-DD-DDTDD:DD:DDZ`-shaped timestamp (D = ASCII digit) at the very start of the line, followed by nothing but
/// spaces, tabs and carriage returns (tolerated so that files converted to CRLF or edited by hand still parse).
/// The reference writes exactly `## <ts>`.
pub fn heading_ts(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("## ")?;
    let ts = rest.get(..TS_LEN)?;
    let tail = rest.get(TS_LEN..)?;
    (ts_shape(ts) && tail.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r'))).then_some(ts)
}

/// Whether `line` is structural-looking once its leading backslashes are removed (see module docs).
fn structural_after_backslashes(line: &str) -> bool {
    let bare = line.trim_start_matches('\\');
    heading_ts(bare).is_some() || bare.starts_with("<!-- id:")
}

/// Escape one line for writing (see module docs).
fn escape_line(line: &str) -> Cow<'_, str> {
    if structural_after_backslashes(line) {
        Cow::Owned(format!("\\{line}"))
    } else {
        Cow::Borrowed(line)
    }
}

/// Unescape one line read from an entry body (see module docs).
fn unescape_line(line: &str) -> &str {
    match line.strip_prefix('\\') {
        Some(rest) if structural_after_backslashes(line) => rest,
        _ => line,
    }
}

fn map_lines<'a>(content: &'a str, f: impl Fn(&str) -> Cow<'_, str>) -> Cow<'a, str> {
    if content.split('\n').all(|l| matches!(f(l), Cow::Borrowed(_))) {
        return Cow::Borrowed(content);
    }
    let mut out = String::with_capacity(content.len() + 16);
    for (i, line) in content.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&f(line));
    }
    Cow::Owned(out)
}

/// Escape entry content for writing into a topic file: every structural-looking line gets one more leading `\`.
/// Inverse: [`unescape_content`].
pub fn escape_content(content: &str) -> Cow<'_, str> {
    map_lines(content, escape_line)
}

/// Undo [`escape_content`]: every line that starts with `\` and is structural-looking loses one `\`.
pub fn unescape_content(body: &str) -> Cow<'_, str> {
    map_lines(body, |l| {
        let u = unescape_line(l);
        if u.len() == l.len() {
            Cow::Borrowed(l)
        } else {
            Cow::Owned(u.to_owned())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn headings_are_anchored_and_shape_checked() {
        assert_eq!(heading_ts("## 2020-01-01T00:00:00Z"), Some("2020-01-01T00:00:00Z"));
        assert_eq!(heading_ts("## 2020-01-01T00:00:00Z\r"), Some("2020-01-01T00:00:00Z"));
        assert_eq!(heading_ts("## 2020-01-01T00:00:00Z \t"), Some("2020-01-01T00:00:00Z"));
        assert_eq!(heading_ts(" ## 2020-01-01T00:00:00Z"), None);
        assert_eq!(heading_ts("x ## 2020-01-01T00:00:00Z"), None);
        assert_eq!(heading_ts("## 2020-01-01T00:00:00Z text"), None);
        assert_eq!(heading_ts("## 2020-01-01 00:00:00Z"), None);
        assert_eq!(heading_ts("## 2020-01-01T00:00:00"), None);
        assert_eq!(heading_ts("## é020-01-01T00:00:00Z"), None);
    }

    #[test]
    fn escapes_only_line_start_lookalikes() {
        let c = "a ## 2020-01-01T00:00:00Z b\n## 2020-01-01T00:00:00Z\n\\## 2020-01-01T00:00:00Z\n<!-- id: x -->\n\\x";
        assert_eq!(
            escape_content(c),
            "a ## 2020-01-01T00:00:00Z b\n\\## 2020-01-01T00:00:00Z\n\\\\## 2020-01-01T00:00:00Z\n\\<!-- id: x -->\n\\x"
        );
        assert_eq!(unescape_content(&escape_content(c)), c);
        assert!(matches!(escape_content("plain\ntext"), Cow::Borrowed(_)));
    }

    proptest! {
        #[test]
        fn bijective_on_arbitrary_text(s in any::<String>()) {
            let e = escape_content(&s);
            prop_assert_eq!(unescape_content(&e), s.as_str());
        }

        #[test]
        fn bijective_on_lookalike_lines(
            lines in proptest::collection::vec(
                prop_oneof![
                    Just("## 2020-01-01T00:00:00Z".to_owned()),
                    Just("<!-- id: x -->".to_owned()),
                    Just("## 9999-99-99T99:99:99Z\r".to_owned()),
                    "\\\\{0,3}(## 2020-01-01T00:00:00Z|<!-- id:| ## 2020-01-01T00:00:00Z)[ \\r]{0,2}",
                    any::<String>(),
                ],
                0..8,
            )
        ) {
            let s = lines.join("\n");
            let e = escape_content(&s);
            prop_assert!(e.split('\n').all(|l| heading_ts(l).is_none()), "escaped text has a heading: {e:?}");
            prop_assert_eq!(unescape_content(&e), s.as_str());
        }
    }
}
