//! Texts: how an entry reads as a line, a placeholder and a reminder row; how a view line is rendered; the view's
//! byte accounting.
//!
//! Formats (spec 001 "The view", "When the view changes"):
//! - an entry's text for its line ([`entry_source`]): `note <name>: <text>` (text whole, newlines kept),
//!   `delete <name>`, or `note <name>: (purged)` after a purge;
//! - an entry line not written yet ([`placeholder`]): `(not summarized yet) note <name>: <first line>`;
//! - a reminder row ([`reminder_row`]): `- <id>+1 note <name>: <first line>`;
//! - a view line ([`view_line`]): `<id>+<n>|<text>` with every control character (newlines included) turned into a
//!   space and every `<memory` / `</memory` in the text defused to `‹memory` / `‹/memory`, so untrusted memory text
//!   cannot close or open the view's tags;
//! - the view: `<memory>\n`, each line followed by `\n`, then `</memory>` (no newline after it). Its size is the
//!   byte length of exactly that text: [`VIEW_OVERHEAD`] plus each line's bytes plus one per line.
//!
//! `<name>` is the memory's key when it lives in the container's own scope (global memories in `global`, federated
//! in `federated`, a project's in its project container), else `<scope>/<scope_id>/<key>` (session and agent
//! memories in `global`), as [`memory_name`] builds it.

use crate::address::Address;
use cao_core::{Key, Scope};
use cao_model::extractive::{SUMMARY_LINE_MAX_BYTES, extract_entry};
use cao_store::{EntryKind, EntryRow};

/// The most bytes of text a line holds (spec 001: each line is at most 512 bytes).
pub const LINE_MAX_BYTES: usize = SUMMARY_LINE_MAX_BYTES;

/// The most bytes the rendered view takes, tags and newlines included (spec 001: at most 32 KiB).
pub const VIEW_MAX_BYTES: usize = 32 * 1024;

/// The view's opening tag.
pub const OPEN_TAG: &str = "<memory>";

/// The view's closing tag.
pub const CLOSE_TAG: &str = "</memory>";

/// Bytes of the view outside its lines: the opening tag and its newline, and the closing tag.
pub const VIEW_OVERHEAD: usize = OPEN_TAG.len() + 1 + CLOSE_TAG.len();

/// What joins two child lines kept word for word in their parent line (the view shows it as a space).
pub const PAIR_SEPARATOR: &str = "\n";

/// Prefix of an entry line not written yet.
pub const NOT_SUMMARIZED: &str = "(not summarized yet) ";

/// Writer recorded for a line kept word for word.
pub const WRITER_VERBATIM: &str = "verbatim";

/// Writer recorded for a line cut by the extractive rule ([`cao_model::extractive`]): no model was configured, or
/// the model failed permanently for this line.
pub const WRITER_EXTRACTIVE: &str = "extractive";

/// The name of a memory in its container (module docs).
pub fn memory_name(container: &str, scope: Scope, scope_id: Option<&str>, key: &Key) -> String {
    let home = match scope {
        Scope::Global => container == GLOBAL_CONTAINER,
        Scope::Federated => container == FEDERATED_CONTAINER,
        Scope::Project => {
            scope_id == Some(container) && container != GLOBAL_CONTAINER && container != FEDERATED_CONTAINER
        }
        Scope::Session | Scope::Agent => false,
    };
    match (home, scope_id) {
        (true, _) => key.as_str().to_owned(),
        (false, Some(id)) => format!("{}/{id}/{}", scope.as_str(), key.as_str()),
        (false, None) => format!("{}/{}", scope.as_str(), key.as_str()),
    }
}

/// The container of global, session and agent memories (the wiki layout's rule, as `cao_core::Container::of`).
const GLOBAL_CONTAINER: &str = "global";

/// The container of federated memories.
const FEDERATED_CONTAINER: &str = "federated";

/// The name of an entry's memory in its container.
pub fn entry_name(entry: &EntryRow) -> String {
    memory_name(&entry.container, entry.scope, entry.scope_id.as_deref(), &entry.key)
}

/// The first line of a memory's text that has content, without leading `#` marks and surrounding whitespace
/// (the note's first heading, or its first sentence when it has no heading); `""` for a blank text.
pub fn first_line(text: &str) -> &str {
    text.lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

/// The text an entry's line is made from: `note <name>: <text>`, `delete <name>`, or `note <name>: (purged)`.
pub fn entry_source(entry: &EntryRow) -> String {
    let name = entry_name(entry);
    match (entry.kind, entry.purged) {
        (EntryKind::Delete, _) => format!("delete {name}"),
        (EntryKind::Note, true) => format!("note {name}: (purged)"),
        (EntryKind::Note, false) => format!("note {name}: {}", entry.text),
    }
}

/// The short form of an entry: `note <name>: <first line>`, `delete <name>`, or `note <name>: (purged)`; cut to
/// [`LINE_MAX_BYTES`] by the extractive rule.
pub fn entry_head(entry: &EntryRow) -> String {
    let name = entry_name(entry);
    let head = match (entry.kind, entry.purged) {
        (EntryKind::Delete, _) => format!("delete {name}"),
        (EntryKind::Note, true) => format!("note {name}: (purged)"),
        (EntryKind::Note, false) => format!("note {name}: {}", first_line(&entry.text)),
    };
    extract_entry(&head, LINE_MAX_BYTES).text
}

/// The text a view shows for an entry line not written yet: `(not summarized yet) ` + [`entry_head`].
pub fn placeholder(entry: &EntryRow) -> String {
    format!("{NOT_SUMMARIZED}{}", entry_head(entry))
}

/// A `# Memory updated` reminder row: `- <id>+1 ` + [`entry_head`].
pub fn reminder_row(entry: &EntryRow) -> String {
    format!("- {}+1 {}", entry.id, entry_head(entry))
}

/// A line's text as the view shows it: every unsafe character ([`cao_core::display::is_unsafe`]: control characters,
/// newlines and tabs included, bidi overrides and isolates, U+2028/2029) becomes a space, and `<memory` /
/// `</memory` (any ASCII case) become `‹memory` / `‹/memory`.
pub fn view_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, c) in text.char_indices() {
        if cao_core::display::is_unsafe(c) {
            out.push(' ');
        } else if c == '<' && opens_tag(&text[i + 1..]) {
            out.push('‹');
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether the text after a `<` would make it a view tag (`memory` or `/memory`, any ASCII case).
fn opens_tag(rest: &str) -> bool {
    let rest = rest.strip_prefix('/').unwrap_or(rest);
    rest.get(..6).is_some_and(|w| w.eq_ignore_ascii_case("memory"))
}

/// A rendered view line: `<id>+<n>|<view_text(text)>` (no newline).
pub fn view_line(address: Address, text: &str) -> String {
    format!("{address}|{}", view_text(text))
}

/// Bytes a view line takes in the view: its rendered length plus its newline.
pub fn line_bytes(address: Address, text: &str) -> u64 {
    (view_line(address, text).len() + 1) as u64
}

/// The first line of a view that leaves out its `left_out` oldest entries.
pub fn omission_notice(left_out: u64) -> String {
    if left_out == 1 {
        "(the oldest entry is left out until its summary is written; memory_search finds it)".to_owned()
    } else {
        format!("({left_out} oldest entries are left out until their summaries are written; memory_search finds them)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cao_store::JournalWriter;
    use chrono::DateTime;

    fn entry(container: &str, kind: EntryKind, scope: Scope, scope_id: Option<&str>, text: &str) -> EntryRow {
        EntryRow {
            container: container.into(),
            id: 7,
            kind,
            scope,
            scope_id: scope_id.map(str::to_owned),
            key: Key::parse_strict("flaky-tests").expect("key"),
            text: text.into(),
            writer: JournalWriter::default(),
            at: DateTime::UNIX_EPOCH,
            purged: false,
            next: None,
        }
    }

    #[test]
    fn entries_read_as_the_spec_shows_them() {
        let e = entry(
            "p1",
            EntryKind::Note,
            Scope::Project,
            Some("p1"),
            "# Flaky tests\n\nRetry twice.",
        );
        assert_eq!(entry_source(&e), "note flaky-tests: # Flaky tests\n\nRetry twice.");
        assert_eq!(placeholder(&e), "(not summarized yet) note flaky-tests: Flaky tests");
        assert_eq!(reminder_row(&e), "- 7+1 note flaky-tests: Flaky tests");
        let d = entry("p1", EntryKind::Delete, Scope::Project, Some("p1"), "");
        assert_eq!(
            (entry_source(&d), placeholder(&d)),
            (
                "delete flaky-tests".into(),
                "(not summarized yet) delete flaky-tests".into()
            )
        );
        let mut p = e.clone();
        p.purged = true;
        p.text.clear();
        assert_eq!(entry_source(&p), "note flaky-tests: (purged)");
        let s = entry("global", EntryKind::Note, Scope::Session, Some("s-1"), "x");
        assert_eq!(entry_name(&s), "session/s-1/flaky-tests");
        assert_eq!(
            entry_name(&entry("global", EntryKind::Note, Scope::Global, None, "x")),
            "flaky-tests"
        );
        assert_eq!(
            entry_name(&entry("global", EntryKind::Note, Scope::Project, Some("global"), "x")),
            "project/global/flaky-tests",
            "a project named global shares the container but not the names"
        );
        assert_eq!(first_line("\n  \n## Heading  \nbody"), "Heading");
        assert_eq!(first_line(""), "");
        let long = entry("p1", EntryKind::Note, Scope::Project, Some("p1"), &"word ".repeat(300));
        assert!(entry_head(&long).len() <= LINE_MAX_BYTES);
    }

    #[test]
    fn view_lines_are_one_line_and_cannot_close_the_tags() {
        let a = Address::new(546, 2).expect("address");
        assert_eq!(view_line(a, "a\nb\r\tc\u{2028}d"), "546+2|a b  c d");
        assert_eq!(
            view_line(a, "x</memory>y<MEMORY>z</Memory"),
            "546+2|x‹/memory>y‹MEMORY>z‹/Memory"
        );
        assert_eq!(view_line(a, "a < b <mem"), "546+2|a < b <mem");
        assert_eq!(line_bytes(a, "abc"), "546+2|abc\n".len() as u64);
        assert_eq!(VIEW_OVERHEAD, "<memory>\n</memory>".len());
    }
}
