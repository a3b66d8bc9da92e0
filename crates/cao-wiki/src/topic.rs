//! Topic files: one markdown file per memory key (spec 000 "Storage Layout"; spec/reference-facts.md
//! "Topic file").
//!
//! # Format
//! ```text
//! # <key>
//! <!-- id: <id> | scope: <scope> | type: <memory_type> | tags: <csv> -->
//!
//! ## <YYYY-MM-DDTHH:MM:SSZ>
//! <escaped content of entry 1>
//!
//! ## <YYYY-MM-DDTHH:MM:SSZ>
//! <escaped content of entry 2>
//! ```
//! (every file ends with one `\n` after the last content; empty tags render as `tags:  -->`, two spaces).
//!
//! # Writing ([`upsert_text`])
//! - New file: `# <key>\n<header line>\n\n## <ts>\n<escaped content>\n`.
//! - Existing file: keep its title line and its id, rewrite the header line with the new scope, type and tags,
//!   remove every trailing `\n` of the file (newlines only, as the reference does; spaces and `\r` stay), then
//!   append `\n\n## <ts>\n<escaped content>\n`.
//! - An existing file that does not parse is refused ([`WikiError::Corrupt`]) instead of being appended to.
//! - Escaping: see [`crate::escape`]; only whole lines that look like an entry heading or a header comment change.
//!
//! # Reading ([`Topic::parse`])
//! - Line 1 is the title `# <key>`; line 2 is the header comment; both may end in `\r`.
//! - Entry headings are lines that *start* with `## <ts>` (followed by nothing but spaces, tabs, `\r`), searched
//!   from line 3 on. At least one is required.
//! - created_at = the first heading's timestamp, updated_at = the last one's (file order, not sorted).
//! - The last entry's content is the text after its heading line, minus the one final `\n` the writer adds
//!   (a file without that final newline is accepted; its content runs to the end of the file). It is exactly
//!   the content last stored, byte for byte.
//! - An earlier entry's content is the text between its heading line and the next heading, minus the `\n\n`
//!   separator the writer adds (or one `\n` when the entry was empty). Because an upsert removes the file's
//!   trailing newlines first, the trailing newlines of an earlier entry's content are lost; nothing else is.
//! - Text between the header line and the first heading (one blank line in files written here; article text in
//!   files rewritten by the reference's optional LLM compilation) is kept verbatim as the [`Topic::preamble`].
//! - Every entry body is unescaped line by line.
//! - Anything else (empty text, no title, truncated or malformed header, unknown scope or type, no heading, a
//!   heading with an impossible date) is [`WikiError::Corrupt`] with a path-free reason. Parsing never panics.
//!
//! # Divergences from the reference (by design)
//! - The reference finds headings with an *unanchored* search, so a content line such as
//!   `see ## 2020-01-01T00:00:00Z` splits its entry in two when the reference reads it. Here headings are anchored
//!   at line start, and content lines that would look like headings are escaped on write; text in the middle of a
//!   line is written byte for byte like the reference (conformance `wiki_store.json`, "fake heading").
//!   The reference reading a file written here still splits at such mid-line text and shows escaped lines with
//!   their leading `\`.
//! - The reference returns the last entry's content `.strip()`ped on both sides; here it is exact.
//! - The reference takes header fields from the first regex hit anywhere in the file; here the header is line 2.
//! - A reference-written content line that starts with `\` and is otherwise structural-looking loses one `\` when
//!   read here (the reference never escaped).

use crate::MAX_CONTENT_BYTES;
use crate::error::{Result, WikiError, trunc};
use crate::escape::{escape_content, heading_ts, unescape_content};
use cao_core::key::is_valid_key;
use cao_core::time::{format_ts, parse_ts};
use cao_core::{MemoryType, Scope};
use chrono::{DateTime, Utc};

/// The two header lines of a topic file: `# <key>` and
/// `<!-- id: <id> | scope: <scope> | type: <memory_type> | tags: <tags> -->`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicHeader {
    /// The key from the title line (as read; a file written here always has a valid [`cao_core::Key`]).
    pub key: String,
    /// The stable id of the topic (a lowercase hyphenated UUID v4 for files written here).
    pub id: String,
    /// The scope named in the header.
    pub scope: Scope,
    /// The memory type named in the header.
    pub memory_type: MemoryType,
    /// The tags csv as written (already normalised by the writer; may be empty).
    pub tags: String,
}

impl TopicHeader {
    /// The header comment line, without newline:
    /// `<!-- id: <id> | scope: <scope> | type: <memory_type> | tags: <tags> -->`.
    pub fn comment_line(&self) -> String {
        format!(
            "<!-- id: {} | scope: {} | type: {} | tags: {} -->",
            self.id, self.scope, self.memory_type, self.tags
        )
    }

    /// Check that this header can be written and read back unchanged: the key is a valid key
    /// (`^[a-z0-9-]{1,60}$`), the id is 1..=128 of `[A-Za-z0-9._-]`, and the tags contain no `\n`, `\r` or `-->`.
    ///
    /// Errors: [`WikiError::InvalidHeader`] naming the field and value.
    pub fn validate(&self) -> Result<()> {
        if !is_valid_key(&self.key) {
            return Err(WikiError::InvalidHeader(format!(
                "key {:?} does not match ^[a-z0-9-]{{1,60}}$",
                trunc(&self.key)
            )));
        }
        let id_ok = !self.id.is_empty()
            && self.id.len() <= 128
            && self
                .id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !id_ok {
            return Err(WikiError::InvalidHeader(format!(
                "id {:?} must be 1..=128 characters of [A-Za-z0-9._-]",
                trunc(&self.id)
            )));
        }
        validate_tags(&self.tags)
    }
}

/// Check that a tags csv can be stored in a header comment and shown as one table cell: no control character
/// (`char::is_control`: NUL, line breaks, tab, ESC, DEL, the C1 controls) and no `-->`.
///
/// The service calls this (after normalising tags) before any I/O; every header written is checked too. Errors:
/// [`WikiError::InvalidHeader`].
pub fn validate_tags(tags: &str) -> Result<()> {
    if tags.chars().any(char::is_control) || tags.contains("-->") {
        return Err(WikiError::InvalidHeader(format!(
            "tags {:?} must not contain a control character (NUL, line break, tab, escape) or \"-->\"",
            trunc(tags)
        )));
    }
    Ok(())
}

/// One timestamped entry of a topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The heading timestamp (UTC, whole seconds).
    pub timestamp: DateTime<Utc>,
    /// The unescaped content (see the module docs for what is recovered exactly).
    pub content: String,
}

/// A parsed topic file. Invariant: at least one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topic {
    header: TopicHeader,
    preamble: String,
    entries: Vec<Entry>,
}

/// One line of a text: its byte range without the `\n`, and the offset just after its `\n` (or the text end).
struct Line<'a> {
    start: usize,
    text: &'a str,
    next: usize,
}

fn lines(text: &str) -> impl Iterator<Item = Line<'_>> {
    let mut pos = 0;
    text.split_inclusive('\n').map(move |chunk| {
        let start = pos;
        pos += chunk.len();
        Line {
            start,
            text: chunk.strip_suffix('\n').unwrap_or(chunk),
            next: pos,
        }
    })
}

fn parse_header_line(line: &str) -> Result<(String, Scope, MemoryType, String)> {
    let bad = |why: &str| WikiError::corrupt(format!("header comment {:?} {why}", trunc(line)));
    let inner = line
        .strip_prefix("<!-- ")
        .and_then(|s| s.strip_suffix(" -->").or_else(|| s.strip_suffix("-->")))
        .ok_or_else(|| bad("is not a complete `<!-- ... -->` line"))?;
    let mut parts = inner.splitn(4, " | ");
    let mut field = |name: &str| -> Result<&str> {
        let part = parts.next().ok_or_else(|| bad(&format!("has no `{name}` field")))?;
        part.strip_prefix(name)
            .and_then(|v| v.strip_prefix(':'))
            .map(|v| v.strip_prefix(' ').unwrap_or(v))
            .ok_or_else(|| bad(&format!("has no `{name}:` field where expected")))
    };
    let id = field("id")?;
    let scope = field("scope")?;
    let memory_type = field("type")?;
    let tags = field("tags")?;
    if id.is_empty() || id.contains(char::is_whitespace) {
        return Err(bad("has an empty or malformed id"));
    }
    let scope: Scope = scope.trim_end().parse().map_err(|_| bad("names an unknown scope"))?;
    let memory_type: MemoryType = memory_type
        .trim_end()
        .parse()
        .map_err(|_| bad("names an unknown type"))?;
    Ok((id.to_owned(), scope, memory_type, tags.to_owned()))
}

impl Topic {
    /// Build a topic from parts (preamble = one blank line, as written here).
    ///
    /// Errors: [`WikiError::Corrupt`] when `entries` is empty (a topic has at least one entry).
    pub fn new(header: TopicHeader, entries: Vec<Entry>) -> Result<Topic> {
        if entries.is_empty() {
            return Err(WikiError::corrupt("a topic needs at least one entry"));
        }
        Ok(Topic {
            header,
            preamble: "\n".to_owned(),
            entries,
        })
    }

    /// Parse topic-file bytes: like [`Topic::parse`], but first requires valid UTF-8.
    ///
    /// Errors: [`WikiError::Corrupt`] ("not valid UTF-8 at byte N") or any error of [`Topic::parse`].
    pub fn parse_bytes(bytes: &[u8]) -> Result<Topic> {
        let text = std::str::from_utf8(bytes)
            .map_err(|e| WikiError::corrupt(format!("not valid UTF-8 at byte {}", e.valid_up_to())))?;
        Topic::parse(text)
    }

    /// Parse the text of a topic file (rules in the module docs). Never panics.
    ///
    /// Errors: [`WikiError::Corrupt`] with a path-free reason when the text is not a topic file.
    pub fn parse(text: &str) -> Result<Topic> {
        let mut it = lines(text);
        let title = it.next().map(|l| l.text).unwrap_or("");
        let key = title
            .trim_end_matches('\r')
            .strip_prefix("# ")
            .filter(|k| !k.trim().is_empty())
            .ok_or_else(|| WikiError::corrupt(format!("first line {:?} is not a `# <key>` title", trunc(title))))?;
        let header_line = it
            .next()
            .ok_or_else(|| WikiError::corrupt("truncated: the header comment line is missing"))?;
        let (id, scope, memory_type, tags) = parse_header_line(header_line.text.trim_end_matches('\r'))?;
        let header = TopicHeader {
            key: key.to_owned(),
            id,
            scope,
            memory_type,
            tags,
        };
        let body_start = header_line.next;

        // (heading line start, offset after the heading line, timestamp text)
        let headings: Vec<(usize, usize, &str)> = it
            .filter_map(|l| heading_ts(l.text).map(|ts| (l.start, l.next, ts)))
            .collect();
        if headings.is_empty() {
            return Err(WikiError::corrupt("no `## <YYYY-MM-DDTHH:MM:SSZ>` entry heading"));
        }
        let preamble = text.get(body_start..headings[0].0).unwrap_or("").to_owned();
        let mut entries = Vec::with_capacity(headings.len());
        for (i, &(_, body_from, ts)) in headings.iter().enumerate() {
            let timestamp = parse_ts(ts)
                .ok_or_else(|| WikiError::corrupt(format!("entry heading has an impossible timestamp {ts:?}")))?;
            let is_last = i + 1 == headings.len();
            let body_to = if is_last { text.len() } else { headings[i + 1].0 };
            let body = text.get(body_from.min(body_to)..body_to).unwrap_or("");
            let body = if is_last {
                body.strip_suffix('\n').unwrap_or(body)
            } else {
                body.strip_suffix("\n\n")
                    .or_else(|| body.strip_suffix('\n'))
                    .unwrap_or(body)
            };
            entries.push(Entry {
                timestamp,
                content: unescape_content(body).into_owned(),
            });
        }
        Ok(Topic {
            header,
            preamble,
            entries,
        })
    }

    /// The header (title key, id, scope, type, tags).
    pub fn header(&self) -> &TopicHeader {
        &self.header
    }

    /// Text between the header comment line and the first heading, verbatim (`"\n"` in files written here).
    pub fn preamble(&self) -> &str {
        &self.preamble
    }

    /// All entries in file order (never empty).
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Number of entries (>= 1).
    pub fn entry_count(&self) -> usize {
        self.entries.len()
    }

    /// The current content: the last entry's content, exactly as last stored.
    pub fn current_content(&self) -> &str {
        self.entries.last().map(|e| e.content.as_str()).unwrap_or("")
    }

    /// created_at: the first entry's timestamp.
    pub fn created_at(&self) -> DateTime<Utc> {
        self.entries.first().map(|e| e.timestamp).unwrap_or_default()
    }

    /// updated_at: the last entry's timestamp.
    pub fn updated_at(&self) -> DateTime<Utc> {
        self.entries.last().map(|e| e.timestamp).unwrap_or_default()
    }

    /// Render the topic as the sequence of upserts that produced it would have written it:
    /// title, header comment, preamble, then each entry appended with the upsert rule.
    ///
    /// `Topic::parse(&t.render())` equals `t` except that trailing newlines of non-last entries are dropped (as an
    /// upsert drops them) and a CRLF title/header line becomes LF. For text written only by [`upsert_text`],
    /// `Topic::parse(text)?.render() == text`.
    pub fn render(&self) -> String {
        let mut out = format!(
            "# {}\n{}\n{}",
            self.header.key,
            self.header.comment_line(),
            self.preamble
        );
        for e in &self.entries {
            append_section(&mut out, e.timestamp, &e.content);
        }
        out
    }
}

/// The upsert rule: drop the trailing `\n`s of `out`, then append `\n\n## <ts>\n<escaped content>\n`.
fn append_section(out: &mut String, ts: DateTime<Utc>, content: &str) {
    let kept = out.trim_end_matches('\n').len();
    out.truncate(kept);
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str("## ");
    out.push_str(&format_ts(ts));
    out.push('\n');
    out.push_str(&escape_content(content));
    out.push('\n');
}

/// Compute the new text of a topic file after storing `content` at `ts` (rules in the module docs).
///
/// - `existing = None`: a new file with `header` (its id is used).
/// - `existing = Some(text)`: `text` must parse; its title line and id are kept, its header line is replaced
///   with `header`'s scope, type and tags, and the entry is appended.
///
/// Content may be empty or whitespace only (it round-trips); the service rejects empty content itself.
///
/// Errors: [`WikiError::ContentTooLarge`] above [`MAX_CONTENT_BYTES`]; [`WikiError::InvalidHeader`] when
/// `header` cannot be written ([`TopicHeader::validate`]); [`WikiError::Corrupt`] when `existing` does not parse.
pub fn upsert_text(existing: Option<&str>, header: &TopicHeader, ts: DateTime<Utc>, content: &str) -> Result<String> {
    if content.len() > MAX_CONTENT_BYTES {
        return Err(WikiError::ContentTooLarge {
            len: content.len(),
            max: MAX_CONTENT_BYTES,
        });
    }
    header.validate()?;
    let mut out = match existing {
        None => format!("# {}\n{}\n", header.key, header.comment_line()),
        Some(text) => {
            let old = Topic::parse(text)?;
            let new_header = TopicHeader {
                id: old.header.id.clone(),
                ..header.clone()
            };
            // Replace line 2 (the header comment), keeping a trailing `\r` if the file used CRLF.
            let mut it = lines(text);
            let _title = it.next();
            let line = it
                .next()
                .ok_or_else(|| WikiError::corrupt("truncated: the header comment line is missing"))?;
            let cr = if line.text.ends_with('\r') { "\r" } else { "" };
            let mut s = String::with_capacity(text.len() + content.len() + 64);
            s.push_str(text.get(..line.start).unwrap_or(""));
            s.push_str(&new_header.comment_line());
            s.push_str(cr);
            s.push_str(text.get(line.start + line.text.len()..).unwrap_or(""));
            s
        }
    };
    append_section(&mut out, ts, content);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> DateTime<Utc> {
        parse_ts(s).expect("valid test timestamp")
    }

    fn header() -> TopicHeader {
        TopicHeader {
            key: "k".into(),
            id: "0f8e2a6c-1111-4222-8333-444455556666".into(),
            scope: Scope::Project,
            memory_type: MemoryType::Feedback,
            tags: "a,b".into(),
        }
    }

    #[test]
    fn new_file_bytes() {
        let t = upsert_text(None, &header(), ts("2026-04-16T10:30:00Z"), "hello").expect("writes");
        assert_eq!(
            t,
            "# k\n<!-- id: 0f8e2a6c-1111-4222-8333-444455556666 | scope: project | type: feedback | tags: a,b -->\n\n## 2026-04-16T10:30:00Z\nhello\n"
        );
    }

    #[test]
    fn update_keeps_id_rewrites_header_strips_only_newlines() {
        let first = upsert_text(None, &header(), ts("2026-04-16T10:30:00Z"), "one  \n\n").expect("writes");
        let h2 = TopicHeader {
            id: "other".into(),
            memory_type: MemoryType::User,
            tags: String::new(),
            ..header()
        };
        let t = upsert_text(Some(&first), &h2, ts("2026-04-17T10:30:00Z"), "two").expect("writes");
        assert_eq!(
            t,
            "# k\n<!-- id: 0f8e2a6c-1111-4222-8333-444455556666 | scope: project | type: user | tags:  -->\n\n## 2026-04-16T10:30:00Z\none  \n\n## 2026-04-17T10:30:00Z\ntwo\n"
        );
        let p = Topic::parse(&t).expect("parses");
        assert_eq!(p.entry_count(), 2);
        assert_eq!(p.entries()[0].content, "one  ");
        assert_eq!(p.current_content(), "two");
        assert_eq!(p.header().tags, "");
        assert_eq!(p.header().memory_type, MemoryType::User);
        assert_eq!(p.created_at(), ts("2026-04-16T10:30:00Z"));
        assert_eq!(p.updated_at(), ts("2026-04-17T10:30:00Z"));
        assert_eq!(p.render(), t);
    }

    #[test]
    fn parses_reference_spec_example_and_crlf() {
        let t = "# testing-framework\n<!-- id: abc123 | scope: project | type: feedback | tags: testing,pytest -->\n\n## 2026-04-16T10:30:00Z\nAlways use pytest for testing in this project. Do not use unittest.\n";
        let p = Topic::parse(t).expect("parses");
        assert_eq!(p.header().key, "testing-framework");
        assert_eq!(p.header().id, "abc123");
        assert_eq!(p.header().tags, "testing,pytest");
        assert_eq!(
            p.current_content(),
            "Always use pytest for testing in this project. Do not use unittest."
        );
        let crlf = t.replace('\n', "\r\n");
        let p = Topic::parse(&crlf).expect("CRLF parses");
        assert_eq!(p.header().key, "testing-framework");
        assert_eq!(p.header().tags, "testing,pytest");
        assert_eq!(
            p.current_content(),
            "Always use pytest for testing in this project. Do not use unittest.\r"
        );
    }

    #[test]
    fn corrupt_inputs_are_errors() {
        let good = upsert_text(None, &header(), ts("2026-04-16T10:30:00Z"), "x").expect("writes");
        let cases = [
            String::new(),
            "\n".into(),
            "garbage".into(),
            "# k".into(),
            "# k\n".into(),
            "# k\n<!-- id: x | scope: project | type: feedback | tags: a".into(),
            "# k\n<!-- id: x | scope: nowhere | type: feedback | tags: a -->\n\n## 2026-04-16T10:30:00Z\nx\n".into(),
            "# k\n<!-- id: x | scope: project | type: bogus | tags: a -->\n\n## 2026-04-16T10:30:00Z\nx\n".into(),
            "# k\n<!-- id: x | scope: project | type: feedback | tags: a -->\n\nno heading\n".into(),
            "# k\n<!-- id: x | scope: project | type: feedback | tags: a -->\n\n## 2026-13-16T10:30:00Z\nx\n".into(),
            "# k\n<!-- id: x | scope: project | type: feedback | tags: a -->\n\n x ## 2026-04-16T10:30:00Z\n".into(),
            String::from_utf8_lossy(b"\xff\xfe# k\n\x80\x81").into_owned(),
            good[..good.find("## ").expect("has heading")].to_owned(),
        ];
        for c in cases {
            match Topic::parse(&c) {
                Err(WikiError::Corrupt { reason }) => assert!(!reason.contains('/'), "path-free reason: {reason}"),
                other => panic!("{c:?} should be corrupt, got {other:?}"),
            }
        }
        assert!(matches!(
            Topic::parse_bytes(b"# k\n\xff"),
            Err(WikiError::Corrupt { .. })
        ));
        // Upserting onto a corrupt file is refused.
        assert!(matches!(
            upsert_text(Some("garbage"), &header(), ts("2026-04-16T10:30:00Z"), "x"),
            Err(WikiError::Corrupt { .. })
        ));
    }

    #[test]
    fn every_truncation_parses_or_is_corrupt() {
        let a = upsert_text(
            None,
            &header(),
            ts("2026-04-16T10:30:00Z"),
            "first\n## 2020-01-01T00:00:00Z",
        )
        .expect("writes");
        let b = upsert_text(Some(&a), &header(), ts("2026-04-17T10:30:00Z"), "second ünï").expect("writes");
        let first_heading = b.find("\n## ").expect("heading") + 1;
        for cut in (0..=b.len()).filter(|&i| b.is_char_boundary(i)) {
            let r = Topic::parse(&b[..cut]);
            if cut < first_heading + "## 2026-04-16T10:30:00Z".len() {
                assert!(
                    matches!(r, Err(WikiError::Corrupt { .. })),
                    "cut {cut} should be corrupt: {r:?}"
                );
            } else {
                let t = r.expect("a cut after the first heading still parses");
                assert_eq!(t.header().id, header().id);
            }
        }
    }

    #[test]
    fn header_validation() {
        let bad_tags = TopicHeader {
            tags: "a\nb".into(),
            ..header()
        };
        assert!(matches!(bad_tags.validate(), Err(WikiError::InvalidHeader(_))));
        let bad_tags = TopicHeader {
            tags: "a-->".into(),
            ..header()
        };
        assert!(matches!(bad_tags.validate(), Err(WikiError::InvalidHeader(_))));
        let bad_key = TopicHeader {
            key: "../x".into(),
            ..header()
        };
        assert!(matches!(
            upsert_text(None, &bad_key, ts("2026-04-16T10:30:00Z"), "x"),
            Err(WikiError::InvalidHeader(_))
        ));
        let bad_id = TopicHeader {
            id: "a b".into(),
            ..header()
        };
        assert!(bad_id.validate().is_err());
        let big = "x".repeat(MAX_CONTENT_BYTES + 1);
        assert!(matches!(
            upsert_text(None, &header(), ts("2026-04-16T10:30:00Z"), &big),
            Err(WikiError::ContentTooLarge { .. })
        ));
        assert!(upsert_text(None, &header(), ts("2026-04-16T10:30:00Z"), &big[1..]).is_ok());
    }

    #[test]
    fn preamble_text_is_kept() {
        let t = "# k\n<!-- id: x | scope: global | type: user | tags: a -->\n\nSome compiled prose.\n\n## 2026-04-16T10:30:00Z\nc\n";
        let p = Topic::parse(t).expect("parses");
        assert_eq!(p.preamble(), "\nSome compiled prose.\n\n");
        assert_eq!(p.render(), t);
    }
}

#[cfg(test)]
mod fuzz_regressions {
    use super::*;

    /// fuzz/crashes/wiki_topic/crash-f508…: a file not written by upserts whose first entry's text ends in a
    /// newline before the `\n\n` separator. Rendering drops that newline, as an upsert would have (the contract of
    /// [`Topic::render`]); every other byte of every entry survives, and a second render is a fixed point.
    #[test]
    fn render_drops_only_the_trailing_newlines_of_earlier_entries() {
        let data = include_bytes!("../../../fuzz/crashes/wiki_topic/crash-f508955b9255c94b9122bf1dd70e532cef15b843");
        let topic = Topic::parse_bytes(&data[1..]).expect("parses");
        assert!(
            topic.entries()[0].content.ends_with("# current-task\n"),
            "the input's shape"
        );
        let rendered = topic.render();
        let again = Topic::parse(&rendered).expect("a rendered topic parses");
        assert_eq!(again.entry_count(), topic.entry_count());
        let last = topic.entry_count() - 1;
        for (i, (a, b)) in again.entries().iter().zip(topic.entries()).enumerate() {
            assert_eq!(a.timestamp, b.timestamp);
            let want = if i == last {
                b.content.as_str()
            } else {
                b.content.trim_end_matches('\n')
            };
            assert_eq!(a.content, want, "entry {i}");
        }
        assert_eq!(again.header(), topic.header());
        assert_eq!(again.render(), rendered, "render is a fixed point after one round");
    }
}
