//! The "Learned Patterns" block of an agent profile (spec 004 "Phase 2 — instruction promotion", "Safety
//! design"; spec/reference-facts.md "Outcomes, lessons, promotion"; cases in
//! `conformance/reference/learned_patterns.json`). Pure: text in, text out; [`crate::profile_file`] reads and
//! writes the file.
//!
//! The block:
//!
//! ```text
//! <!-- cao-learned:begin -->
//! ## Learned Patterns
//! <!-- Maintained by CAO instruction promotion. Edit via `cao memory promote`; manual edits inside this block may be overwritten. -->
//! <!-- lesson: <key> -->
//! - <text>
//! <!-- cao-learned:end -->
//! ```
//!
//! joined with the file's dominant line ending (`\r\n` when the file has more CRLF than bare LF line ends).
//!
//! Rules of [`apply_deltas`]:
//! - Keys match `^[a-z0-9][a-z0-9-]{0,63}$` after trimming; texts are whitespace-collapsed ([`lesson_text`]),
//!   1..=[`MAX_LESSON_CHARS`] characters, without block markers or control characters. Every key and text is
//!   checked before anything is edited; one bad value refuses the whole call.
//! - Removes first (a key not in the block is reported as skipped), then adds: a new key is appended (or skipped
//!   and reported once the block holds [`MAX_LESSONS`]; nothing is ever evicted), an existing key with different
//!   text is updated in place, identical text is a no-op reported as unchanged.
//! - Without an added, updated or removed lesson the text is returned unchanged (the file is not rewritten).
//! - Only the block's byte range changes: the block is the first begin marker and the first end marker after it;
//!   what lies outside is kept byte for byte. Inside, the block is regenerated from its lessons (a lesson's text is
//!   what follows its `<!-- lesson: key -->` marker up to the next one, whitespace-collapsed, one leading `-`
//!   bullet dropped; a marker without text is dropped).
//! - A begin marker without an end marker after it is corruption: only that marker token is dropped (when the
//!   file is rewritten), never user content, and a new block is appended.
//! - The first block is appended after one blank line: to a file ending in a line end, `<eol><block><eol>`; to an
//!   empty file, `<eol><block><eol>`; to a file whose last line has no line end, `<eol><eol><block>` (keeping
//!   the absence of a final line end). Removing the last lesson removes the block and absorbs that seam again, so
//!   adding lessons and then removing them restores the original bytes of any profile without block markers
//!   (property-tested). The reference appends `<eol><block><eol>` in every case and so cannot restore a file
//!   that lacked a final line end (docs/conformance.md).

use crate::error::LearnError;
use cao_core::text::split_words;
use regex::Regex;
use std::sync::LazyLock;

/// The block's first line.
pub const BEGIN_MARKER: &str = "<!-- cao-learned:begin -->";
/// The block's last line.
pub const END_MARKER: &str = "<!-- cao-learned:end -->";
/// The block's heading line.
pub const SECTION_HEADING: &str = "## Learned Patterns";
/// The maintenance comment written after the heading.
pub const MAINTENANCE_COMMENT: &str = "<!-- Maintained by CAO instruction promotion. Edit via `cao memory promote`; manual edits inside this block may be overwritten. -->";
/// Most lessons one profile's block holds (spec 004 "Caps").
pub const MAX_LESSONS: usize = 10;
/// Longest lesson text, in characters after whitespace collapsing (spec 004 "Caps").
pub const MAX_LESSON_CHARS: usize = 400;
/// Longest lesson key.
pub const MAX_KEY_CHARS: usize = 64;

static LESSON_MARKER: LazyLock<Result<Regex, regex::Error>> =
    LazyLock::new(|| Regex::new(r"<!-- lesson: ([a-z0-9][a-z0-9-]{0,63}) -->"));

/// The lesson marker line of `key`.
pub fn lesson_marker(key: &str) -> String {
    format!("<!-- lesson: {key} -->")
}

/// Whether `key` is a valid lesson key: `^[a-z0-9][a-z0-9-]{0,63}$`.
pub fn is_lesson_key(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && key.len() <= MAX_KEY_CHARS
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// `key` trimmed, when it is a valid lesson key.
///
/// Errors: [`LearnError::Lesson`] naming the key.
pub fn lesson_key(key: &str) -> Result<String, LearnError> {
    let k = key.trim();
    if is_lesson_key(k) {
        Ok(k.to_owned())
    } else {
        Err(LearnError::Lesson(format!(
            "lesson key {:?} must be a lowercase slug (a-z, 0-9, '-', not starting with '-'; at most {MAX_KEY_CHARS} characters)",
            k.chars().take(80).collect::<String>()
        )))
    }
}

/// Whether `text` holds a block marker (begin, end or lesson marker), which would let a lesson forge the block's
/// structure. Checked on whitespace-collapsed text as well, so `<!--  cao-learned:end\n-->` is caught.
pub fn has_block_marker(text: &str) -> bool {
    let collapsed = split_words(text).collect::<Vec<_>>().join(" ");
    [text, collapsed.as_str()]
        .iter()
        .any(|t| t.contains(BEGIN_MARKER) || t.contains(END_MARKER) || t.contains("<!-- lesson:"))
}

/// Whether `c` may not appear in a lesson: control characters (other than whitespace, which is collapsed) and the
/// bidirectional embedding, override and isolate controls (text that reads differently than it is).
pub fn is_forbidden_char(c: char) -> bool {
    (c.is_control() && !c.is_whitespace()) || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// A lesson's text as the block stores it: whitespace runs collapsed to one space (Python `" ".join(s.split())`).
///
/// Errors: [`LearnError::Lesson`] when it is empty, longer than [`MAX_LESSON_CHARS`] characters, holds a block
/// marker ([`has_block_marker`]) or a forbidden character ([`is_forbidden_char`]).
pub fn lesson_text(text: &str) -> Result<String, LearnError> {
    let collapsed = split_words(text).collect::<Vec<_>>().join(" ");
    let n = collapsed.chars().count();
    if n == 0 {
        return Err(LearnError::Lesson("lesson text must not be empty".into()));
    }
    if n > MAX_LESSON_CHARS {
        return Err(LearnError::Lesson(format!(
            "lesson text is {n} characters; at most {MAX_LESSON_CHARS} (lessons are 1-2 sentence conclusions: compact it first)"
        )));
    }
    if has_block_marker(&collapsed) {
        return Err(LearnError::Lesson("lesson text must not contain block markers".into()));
    }
    if let Some(c) = collapsed.chars().find(|c| is_forbidden_char(*c)) {
        return Err(LearnError::Lesson(format!(
            "lesson text must not contain control characters (found U+{:04X})",
            u32::from(c)
        )));
    }
    Ok(collapsed)
}

/// A profile's text split around its block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedProfile {
    /// Everything before the block (raw), or the whole text (minus a dropped unclosed begin marker) when there is
    /// no block.
    pub prefix: String,
    /// Everything after the block's end marker (raw); empty without a block.
    pub suffix: String,
    /// The block's lessons, in order: `(key, text)`.
    pub lessons: Vec<(String, String)>,
    /// Whether a complete block was found.
    pub had_block: bool,
    /// Whether an unclosed begin marker was dropped from `prefix`.
    pub dropped_marker: bool,
}

/// Split `content` around its block (see the module documentation).
pub fn parse_profile(content: &str) -> ParsedProfile {
    let mut parsed = ParsedProfile {
        prefix: content.to_owned(),
        suffix: String::new(),
        lessons: Vec::new(),
        had_block: false,
        dropped_marker: false,
    };
    let Some(begin) = content.find(BEGIN_MARKER) else {
        return parsed;
    };
    let body_start = begin + BEGIN_MARKER.len();
    let Some(end) = content[body_start..].find(END_MARKER).map(|i| body_start + i) else {
        parsed.prefix = format!("{}{}", &content[..begin], &content[body_start..]);
        parsed.dropped_marker = true;
        return parsed;
    };
    parsed.had_block = true;
    parsed.prefix = content[..begin].to_owned();
    parsed.suffix = content[end + END_MARKER.len()..].to_owned();
    let body = &content[body_start..end];
    let Ok(re) = LESSON_MARKER.as_ref() else {
        return parsed;
    };
    let found: Vec<_> = re.captures_iter(body).collect();
    for (i, caps) in found.iter().enumerate() {
        let (Some(whole), Some(key)) = (caps.get(0), caps.get(1)) else {
            continue;
        };
        let stop = found
            .get(i + 1)
            .and_then(|next| next.get(0))
            .map_or(body.len(), |m| m.start());
        let collapsed = split_words(&body[whole.end()..stop]).collect::<Vec<_>>().join(" ");
        let text = if let Some(rest) = collapsed.strip_prefix("- ") {
            rest.to_owned()
        } else if let Some(rest) = collapsed.strip_prefix('-') {
            rest.trim_start_matches(cao_core::text::is_reference_whitespace)
                .to_owned()
        } else {
            collapsed
        };
        if !text.is_empty() {
            upsert(&mut parsed.lessons, key.as_str(), text);
        }
    }
    parsed
}

/// The lessons of `content`'s block, in order (empty without a block).
pub fn read_lessons(content: &str) -> Vec<(String, String)> {
    parse_profile(content).lessons
}

/// Set `key` to `text`, in place when present (keeping its position), else at the end.
fn upsert(lessons: &mut Vec<(String, String)>, key: &str, text: String) {
    match lessons.iter_mut().find(|(k, _)| k == key) {
        Some(slot) => slot.1 = text,
        None => lessons.push((key.to_owned(), text)),
    }
}

/// The block for `lessons`, its lines joined with `eol`, without a trailing line end.
pub fn render_block(lessons: &[(String, String)], eol: &str) -> String {
    let mut lines = vec![
        BEGIN_MARKER.to_owned(),
        SECTION_HEADING.to_owned(),
        MAINTENANCE_COMMENT.to_owned(),
    ];
    for (key, text) in lessons {
        lines.push(lesson_marker(key));
        lines.push(format!("- {text}"));
    }
    lines.push(END_MARKER.to_owned());
    lines.join(eol)
}

/// The dominant line ending of `content`: `\r\n` when it has more CRLF than bare LF line ends, else `\n`.
pub fn dominant_eol(content: &str) -> &'static str {
    let crlf = content.matches("\r\n").count();
    let lf = content.matches('\n').count();
    if crlf > lf - crlf { "\r\n" } else { "\n" }
}

/// What [`apply_deltas`] did (or would do), per key, in the order the keys were handled.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeltaReport {
    /// Keys appended to the block.
    pub added: Vec<String>,
    /// Keys whose text changed in place.
    pub updated: Vec<String>,
    /// Keys removed.
    pub removed: Vec<String>,
    /// Removes of keys not in the block, and adds refused because the block holds [`MAX_LESSONS`].
    pub skipped: Vec<String>,
    /// Adds whose text is already the key's text (no-ops).
    pub unchanged: Vec<String>,
}

impl DeltaReport {
    /// Whether the block changes (something added, updated or removed).
    pub fn changes(&self) -> bool {
        !(self.added.is_empty() && self.updated.is_empty() && self.removed.is_empty())
    }
}

/// The result of [`apply_deltas`]: the new text (`None` when nothing changes) and the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edited {
    /// The whole new profile text, or `None` when the block does not change (the file must not be rewritten).
    pub content: Option<String>,
    /// What happened to each key.
    pub report: DeltaReport,
    /// The block's lessons before the edit (`(key, text)`), for showing an update's old text.
    pub before: Vec<(String, String)>,
}

/// Apply itemized deltas to `content` (rules in the module documentation): `add` upserts `(key, text)` pairs (a
/// key given twice keeps its first position and last text), `remove` deletes keys.
///
/// Errors: [`LearnError::Lesson`] for an invalid key or text (checked for every delta before anything is
/// edited).
pub fn apply_deltas(content: &str, add: &[(String, String)], remove: &[String]) -> Result<Edited, LearnError> {
    let mut adds: Vec<(String, String)> = Vec::with_capacity(add.len());
    for (key, text) in add {
        upsert(&mut adds, &lesson_key(key)?, lesson_text(text)?);
    }
    let removes = remove.iter().map(|k| lesson_key(k)).collect::<Result<Vec<_>, _>>()?;

    let parsed = parse_profile(content);
    let before = parsed.lessons.clone();
    let mut lessons = parsed.lessons.clone();
    let mut report = DeltaReport::default();
    for key in removes {
        match lessons.iter().position(|(k, _)| *k == key) {
            Some(i) => {
                lessons.remove(i);
                report.removed.push(key);
            }
            None => report.skipped.push(key),
        }
    }
    for (key, text) in adds {
        match lessons.iter().position(|(k, _)| *k == key) {
            Some(i) if lessons[i].1 == text => report.unchanged.push(key),
            Some(i) => {
                lessons[i].1 = text;
                report.updated.push(key);
            }
            None if lessons.len() >= MAX_LESSONS => report.skipped.push(key),
            None => {
                lessons.push((key.clone(), text));
                report.added.push(key);
            }
        }
    }
    if !report.changes() {
        return Ok(Edited {
            content: None,
            report,
            before,
        });
    }
    let eol = dominant_eol(content);
    let new = if !lessons.is_empty() {
        let block = render_block(&lessons, eol);
        let prefix = &parsed.prefix;
        if parsed.had_block {
            format!("{prefix}{block}{}", parsed.suffix)
        } else if prefix.is_empty() || prefix.ends_with('\n') {
            format!("{prefix}{eol}{block}{eol}")
        } else {
            format!("{prefix}{eol}{eol}{block}")
        }
    } else {
        without_block(&parsed.prefix, &parsed.suffix, eol)
    };
    Ok(Edited {
        content: Some(new),
        report,
        before,
    })
}

/// `prefix + suffix` once the (emptied) block between them is gone, absorbing the seam an append created (see the
/// module documentation); everything else is kept.
fn without_block(prefix: &str, suffix: &str, eol: &str) -> String {
    let blank_before = |p: &str| {
        p.strip_suffix(eol)
            .is_some_and(|rest| rest.is_empty() || rest.ends_with('\n'))
    };
    if let Some(rest) = suffix.strip_prefix(eol) {
        let prefix = if blank_before(prefix) {
            &prefix[..prefix.len() - eol.len()]
        } else {
            prefix
        };
        return format!("{prefix}{rest}");
    }
    if suffix.is_empty()
        && let Some(rest) = prefix.strip_suffix(eol).and_then(|p| p.strip_suffix(eol))
        && !rest.is_empty()
        && !rest.ends_with('\n')
    {
        // The seam of an append to a file without a final line end: `<eol><eol><block>`.
        return rest.to_owned();
    }
    let prefix = if blank_before(prefix) {
        &prefix[..prefix.len() - eol.len()]
    } else {
        prefix
    };
    format!("{prefix}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, t)| ((*k).to_owned(), (*t).to_owned())).collect()
    }

    /// The `learned_block` fuzz finding (fuzz/crashes/learned_block): a profile with two blocks. Only the first is
    /// the block; the second is user text and survives byte for byte. Removing the first block's last lesson removes
    /// that block together with the blank line before it (the seam an append adds); the target had read the second
    /// block's lessons as "lessons remain" and expected the blank line kept.
    #[test]
    fn a_second_block_is_user_text_and_survives_every_edit() {
        let first = "<!-- cao-learned:begin -->\n<!-- lesson: b -->\n- no bullet\n<!-- cao-learned:end -->";
        let tail = "\nOutro\n<!-- cao-learned:begin -->\n<!-- lesson: c -->\n- kept\n<!-- cao-learned:end -->";
        let content = format!("# T\n\nIntro.\n\n{first}{tail}");
        assert_eq!(read_lessons(&content), vec![("b".to_owned(), "no bullet".to_owned())]);

        let updated = apply_deltas(&content, &add(&[("b", "changed")]), &[]).expect("edit");
        let updated = updated.content.expect("a change");
        assert!(
            updated.starts_with("# T\n\nIntro.\n\n<!-- cao-learned:begin -->"),
            "{updated:?}"
        );
        assert!(updated.ends_with(tail), "{updated:?}");

        let removed = apply_deltas(&content, &[], &["b".to_owned()]).expect("edit");
        let removed = removed.content.expect("a change");
        assert_eq!(
            removed,
            format!("# T\n\nIntro.\n{}", &tail[1..]),
            "the block and its seam go, the rest stays"
        );
        assert_eq!(read_lessons(&removed), vec![("c".to_owned(), "kept".to_owned())]);
    }

    #[test]
    fn keys_follow_the_slug_rule() {
        for ok in ["a", "0", "keep-cache", &"k".repeat(64), " padded "] {
            assert!(lesson_key(ok).is_ok(), "{ok:?}");
        }
        for bad in ["", "-a", "A", "a_b", "a b", &"k".repeat(65), "é"] {
            assert!(lesson_key(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn texts_are_collapsed_and_checked() {
        assert_eq!(lesson_text(" a\n\tb  c ").expect("ok"), "a b c");
        assert!(lesson_text(&"x".repeat(400)).is_ok());
        assert!(lesson_text(&"x".repeat(401)).is_err());
        assert!(lesson_text(&"é".repeat(400)).is_ok(), "characters, not bytes");
        for bad in [
            "   ",
            "inject <!-- cao-learned:end --> here",
            "x <!--   cao-learned:begin\n-->",
            "fake <!-- lesson: k --> item",
            "bell \u{7}",
            "rtl \u{202E}txet",
        ] {
            assert!(lesson_text(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn dominant_line_ending() {
        assert_eq!(dominant_eol("a\r\nb\r\n"), "\r\n");
        assert_eq!(dominant_eol("a\r\nb\n"), "\n", "a tie is LF");
        assert_eq!(dominant_eol("no line end"), "\n");
    }

    #[test]
    fn duplicate_markers_keep_the_first_position_and_the_last_text() {
        let content = "<!-- cao-learned:begin -->\n<!-- lesson: a -->\n- one\n<!-- lesson: b -->\n- two\n\
                       <!-- lesson: a -->\n- three\n<!-- lesson: c -->\n<!-- cao-learned:end -->";
        assert_eq!(
            read_lessons(content),
            add(&[("a", "three"), ("b", "two")]),
            "a marker without text is dropped"
        );
    }

    #[test]
    fn unclosed_begin_marker_loses_only_its_token() {
        let content = "# T\n<!-- cao-learned:begin -->\nUser text.\n";
        let e = apply_deltas(content, &add(&[("k", "Lesson.")]), &[]).expect("ok");
        let new = e.content.expect("changed");
        assert!(
            new.starts_with("# T\n\nUser text.\n\n<!-- cao-learned:begin -->\n"),
            "{new:?}"
        );
        assert_eq!(new.matches(BEGIN_MARKER).count(), 1);
        let none = apply_deltas(content, &[], &["k".into()]).expect("ok");
        assert_eq!(
            none.content, None,
            "nothing changes: the file keeps even the stray token"
        );
    }

    #[test]
    fn append_and_remove_restore_files_without_a_final_line_end() {
        for original in [
            "",
            "a",
            "a\n",
            "a\r\nb",
            "a\r",
            "x\r\ny\nz\r\n",
            "\n",
            "a\n\n",
            "t\r\nu\r\nv\n",
        ] {
            let added = apply_deltas(original, &add(&[("k", "Text.")]), &[]).expect("add");
            let with = added.content.expect("changed");
            let removed = apply_deltas(&with, &[], &["k".into()]).expect("remove");
            assert_eq!(removed.content.as_deref(), Some(original), "{original:?} -> {with:?}");
        }
    }

    #[test]
    fn at_the_cap_adds_are_skipped_but_updates_apply() {
        let ten: Vec<(String, String)> = (0..10).map(|i| (format!("k{i}"), format!("t{i}"))).collect();
        let full = apply_deltas("", &ten, &[]).expect("ten").content.expect("changed");
        let e = apply_deltas(&full, &add(&[("k3", "new"), ("extra", "x")]), &[]).expect("ok");
        assert_eq!(e.report.updated, ["k3"]);
        assert_eq!(e.report.skipped, ["extra"]);
        assert_eq!(read_lessons(&e.content.expect("changed")).len(), 10);
        let same = apply_deltas(&full, &add(&[("k1", "t1")]), &[]).expect("ok");
        assert_eq!((same.content, same.report.unchanged), (None, vec!["k1".to_owned()]));
    }

    #[test]
    fn a_bad_delta_refuses_the_whole_call() {
        let e = apply_deltas("x", &add(&[("ok", "fine"), ("bad key", "t")]), &[]);
        assert!(e.is_err());
        assert!(apply_deltas("x", &[], &["-bad".into()]).is_err());
    }
}
