//! Text renderings of service results. Pure functions (no I/O) so the formats are unit-tested byte for byte; the
//! one writer of what they render is [`emit`].
//!
//! Formats follow the reference CLI (notes "h. CLI"): the list table's columns are left-aligned to 30/10/12/20
//! characters and never truncated (a longer key or tag list widens its column for the whole table); times are UTC, `%Y-%m-%d %H:%M` in the table and `%Y-%m-%d %H:%M:%S` in `show`.
//! Fields that end up inside one table row or one `Key:`-style line have control characters escaped, so a stored
//! value can never break the layout or smuggle terminal escape sequences into a listing; `show` prints the content
//! with every control character but line breaks and tabs escaped the same way ([`multi_line`]).

use crate::error::CliError;
use cao_memory::Memory;
use std::fmt::Write as _;
use std::io::Write;

/// Write `text` to `out` and flush. A closed pipe (`cao memory list | head`) is not an error: the reader wanted no
/// more.
///
/// Errors: any other write failure (e.g. disk full when redirected to a file), as a [`CliError::failure`].
pub(crate) fn emit(out: &mut dyn Write, text: &str) -> Result<(), CliError> {
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(CliError::failure(format!("cannot write the output: {e}"))),
    }
}

/// Width of the KEY column when every key fits (the reference CLI's 30).
const KEY_WIDTH: usize = 30;
/// Width of the TAGS column when every tag list fits (the reference CLI's 20).
const TAGS_WIDTH: usize = 20;

/// The table header line for these KEY and TAGS widths (83 characters with the reference's widths).
fn header_with(key_width: usize, tags_width: usize) -> String {
    format!(
        "{:<key_width$} {:<10} {:<12} {:<tags_width$} {}",
        "KEY", "SCOPE", "TYPE", "TAGS", "UPDATED"
    )
}

/// The `list --format table` output: header, a line of `-` as long as the header, one row per memory; or
/// `No memories found.` when `memories` is empty. Always ends with a newline. A row of a memory labelled with a
/// lifecycle status ends with ` [<status>]` (e.g. ` [superseded]`); unlabelled rows are unchanged.
///
/// Columns are the reference's (KEY 30, SCOPE 10, TYPE 12, TAGS 20 characters); a key or tag list longer than its
/// column widens that column for the whole table (header and dashes included), so every row stays aligned and
/// nothing is truncated.
pub(crate) fn list_table(memories: &[Memory]) -> String {
    if memories.is_empty() {
        return "No memories found.\n".to_owned();
    }
    let keys: Vec<String> = memories.iter().map(|m| one_line(&m.key)).collect();
    let tags: Vec<String> = memories.iter().map(|m| one_line(&m.tags)).collect();
    let widest = |cells: &[String], min: usize| cells.iter().map(|c| c.chars().count()).fold(min, usize::max);
    let (key_width, tags_width) = (widest(&keys, KEY_WIDTH), widest(&tags, TAGS_WIDTH));
    let header = header_with(key_width, tags_width);
    let mut out = String::with_capacity((memories.len() + 2) * (header.len() + 1));
    out.push_str(&header);
    out.push('\n');
    out.push_str(&"-".repeat(header.chars().count()));
    out.push('\n');
    for ((m, key), tags) in memories.iter().zip(&keys).zip(&tags) {
        let _ = write!(
            out,
            "{key:<key_width$} {:<10} {:<12} {tags:<tags_width$} {}",
            m.scope.as_str(),
            m.memory_type.as_str(),
            m.updated_at.format("%Y-%m-%d %H:%M")
        );
        if let Some(status) = m.lifecycle_status {
            let _ = write!(out, " [{}]", status.as_str());
        }
        out.push('\n');
    }
    out
}

/// The `show --format text` output: labelled header lines, a blank line, then the content (newline-terminated).
/// A memory labelled with a lifecycle status gets a `Status:` line after `Type:`.
pub(crate) fn show_text(m: &Memory) -> String {
    let tags = if m.tags.is_empty() {
        "(none)".to_owned()
    } else {
        one_line(&m.tags)
    };
    let mut out = String::new();
    let _ = writeln!(out, "Key:     {}", one_line(&m.key));
    let _ = writeln!(out, "Scope:   {}", m.scope.as_str());
    let _ = writeln!(out, "Type:    {}", m.memory_type.as_str());
    if let Some(status) = m.lifecycle_status {
        let _ = writeln!(out, "Status:  {}", status.as_str());
    }
    let _ = writeln!(out, "Tags:    {tags}");
    let _ = writeln!(out, "Created: {}", m.created_at.format("%Y-%m-%d %H:%M:%S"));
    let _ = writeln!(out, "Updated: {}", m.updated_at.format("%Y-%m-%d %H:%M:%S"));
    let _ = writeln!(out, "File:    {}", one_line(&m.file_path));
    out.push('\n');
    let content = multi_line(&m.content);
    out.push_str(&content);
    if !content.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// Pretty JSON of any serialisable value, newline-terminated.
///
/// Errors: serialisation fails (not expected for the service's plain data types); the message names the cause.
pub(crate) fn json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String, String> {
    serde_json::to_string_pretty(value)
        .map(|mut s| {
            s.push('\n');
            s
        })
        .map_err(|e| format!("cannot encode the result as JSON: {e}"))
}

/// `s` on one line: every unsafe character (controls, newline and tab included, bidi overrides and isolates)
/// replaced by its Rust escape (`\n`, `\u{1b}`, `\u{202e}`); the one rule of [`cao_core::display::escape_line`].
pub(crate) fn one_line(s: &str) -> String {
    cao_core::display::escape_line(s).into_owned()
}

/// `s` over several lines: every unsafe character except line feed and tab replaced by its Rust escape (`\r`,
/// `\u{1b}`, `\u{9b}`, `\u{202e}`): text keeps its lines and indentation, but cannot move the cursor, change colours,
/// the window title or the clipboard, overwrite what was printed before it, or reorder itself
/// ([`cao_core::display::escape`]).
pub(crate) fn multi_line(s: &str) -> String {
    cao_core::display::escape(s).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cao_core::{MemoryType, Scope};
    use chrono::{TimeZone, Utc};

    fn mem(key: &str, tags: &str, content: &str) -> Memory {
        Memory {
            id: "id-1".into(),
            key: key.into(),
            content: content.into(),
            memory_type: MemoryType::Feedback,
            scope: Scope::Global,
            scope_id: None,
            tags: tags.into(),
            file_path: "/h/memory/global/wiki/global/k.md".into(),
            created_at: Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).single().expect("valid time"),
            updated_at: Utc
                .with_ymd_and_hms(2026, 11, 29, 18, 38, 26)
                .single()
                .expect("valid time"),
            access_count: 0,
            entry_count: 1,
            is_related: false,
            lifecycle_status: None,
        }
    }

    #[test]
    fn header_matches_the_reference_width() {
        assert_eq!(header_with(KEY_WIDTH, TAGS_WIDTH).len(), 83);
        assert!(
            header_with(KEY_WIDTH, TAGS_WIDTH)
                .starts_with("KEY                            SCOPE      TYPE         TAGS")
        );
    }

    #[test]
    fn table_rows_are_padded_not_truncated() {
        let t = list_table(&[mem("prefer-pytest", "testing,python", "x"), mem("k", "", "y")]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[1], "-".repeat(83));
        assert_eq!(
            lines[2],
            "prefer-pytest                  global     feedback     testing,python       2026-11-29 18:38"
        );
        assert_eq!(lines.len(), 4);
        let long = "k".repeat(40);
        let t = list_table(&[mem("prefer-pytest", "testing,python", "x"), mem(&long, "", "y")]);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[3].starts_with(&format!("{long} global")), "{}", lines[3]);
        assert_eq!(lines.len(), 4);
    }

    #[test]
    fn long_keys_and_tags_widen_their_column_for_every_row() {
        let key = "k".repeat(60);
        let tags = "t".repeat(25);
        let t = list_table(&[
            mem("short", "a", "x"),
            mem(&key, &tags, "y"),
            mem("mid", "\u{1b}[31m", "z"),
        ]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0].len(), 83 + 30 + 5, "{t}");
        assert_eq!(lines[1], "-".repeat(lines[0].len()));
        let scope_at = lines[0].find("SCOPE").expect("SCOPE");
        let updated_at = lines[0].find("UPDATED").expect("UPDATED");
        for row in &lines[2..] {
            assert_eq!(row.find("global"), Some(scope_at), "{t}");
            assert_eq!(row.find("2026-11-29"), Some(updated_at), "{t}");
        }
        assert!(lines[2].starts_with(&format!("short{} global", " ".repeat(55))), "{t}");
        assert!(lines[4].contains("\\u{1b}[31m"), "{t}");
    }

    #[test]
    fn empty_list_says_so() {
        assert_eq!(list_table(&[]), "No memories found.\n");
    }

    #[test]
    fn control_characters_cannot_break_a_row() {
        let t = list_table(&[mem("k", "a\nb,\u{1b}[31m", "x")]);
        assert_eq!(t.lines().count(), 3, "{t}");
        assert!(t.contains("a\\nb,\\u{1b}[31m"), "{t}");
    }

    #[test]
    fn show_labels_times_and_empty_tags() {
        let s = show_text(&mem("k", "", "line one\nline two"));
        assert_eq!(
            s,
            "Key:     k\nScope:   global\nType:    feedback\nTags:    (none)\nCreated: 2026-01-02 03:04:05\n\
             Updated: 2026-11-29 18:38:26\nFile:    /h/memory/global/wiki/global/k.md\n\nline one\nline two\n"
        );
        assert!(show_text(&mem("k", "a,b", "x\n")).ends_with("\nx\n"));
    }

    #[test]
    fn superseded_label_adds_a_status_line_and_a_list_marker() {
        let mut m = mem("old", "", "x");
        m.lifecycle_status = Some(cao_memory::LifecycleStatus::Superseded);
        let s = show_text(&m);
        assert!(s.contains("\nType:    feedback\nStatus:  superseded\nTags:"), "{s}");
        let t = list_table(&[mem("new", "", "y"), m]);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[2].ends_with("2026-11-29 18:38"), "{t}");
        assert!(lines[3].ends_with("2026-11-29 18:38 [superseded]"), "{t}");
    }
}
