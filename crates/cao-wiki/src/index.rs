//! `index.md`: the human-readable index of one container (spec/reference-facts.md "index.md"; conformance
//! `wiki_store.json`).
//!
//! ```text
//! # CAO Memory Index
//! <!-- Updated: <YYYY-MM-DDTHH:MM:SSZ> -->
//!
//!
//! ## <scope>
//! - [<key>](<rel path>) — type:<memory_type> tags:<csv> ~<N>tok updated:<YYYY-MM-DDTHH:MM:SSZ>
//! ```
//! Bytes: `# CAO Memory Index\n<!-- Updated: <ts> -->\n\n`, then per non-empty section `\n## <scope>\n` followed
//! by one `\n`-terminated line per row. The separator before `type:` is an em dash (U+2014).
//!
//! The index is a pure function of the rows: sections in the fixed order global, project, session, agent,
//! federated (only non-empty ones); rows newest `updated_at` first, ties by key, then scope id.
//!
//! Divergence from the reference: the reference edits index.md in place, so its sections appear in the order each
//! scope was first written to the container, a section header stays after its last row is forgotten, and rows
//! are in most-recently-written order. Here index.md is regenerated from the rows (deterministic; repairable).
//! Both parse identically (sections are found by exact `## <scope>` line match). Control characters `\n`/`\r`
//! in tags are rendered as spaces so that one row stays one line.

use crate::error::{Result, WikiError};
use crate::fsio::IndexLock;
use crate::layout::WikiLayout;
use cao_core::fs::atomic_write;
use cao_core::time::format_ts;
use cao_core::{Key, MemoryType, Scope};
use chrono::{DateTime, Utc};
use std::path::PathBuf;

/// Section order of index.md.
pub const INDEX_SECTION_ORDER: [Scope; 5] = [
    Scope::Global,
    Scope::Project,
    Scope::Session,
    Scope::Agent,
    Scope::Federated,
];

/// One memory as listed in index.md.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexRow {
    /// Scope (selects the section).
    pub scope: Scope,
    /// Scope id (project id, session name, agent profile; `None` for global/federated).
    pub scope_id: Option<String>,
    /// Key.
    pub key: Key,
    /// Memory type.
    pub memory_type: MemoryType,
    /// Tags csv.
    pub tags: String,
    /// `~<N>tok`: [`words_token_estimate`] of the current content.
    pub token_estimate: usize,
    /// Last entry timestamp (rendered with second precision).
    pub updated_at: DateTime<Utc>,
}

impl IndexRow {
    /// The link target relative to the wiki dir: `<scope>/<scope_id>/<key>.md` for session/agent with an id,
    /// `<scope>/<key>.md` otherwise (the reference's rule).
    pub fn rel_path(&self) -> String {
        match (&self.scope, &self.scope_id) {
            (Scope::Session | Scope::Agent, Some(id)) if !id.is_empty() => {
                format!("{}/{id}/{}.md", self.scope, self.key)
            }
            _ => format!("{}/{}.md", self.scope, self.key),
        }
    }
}

/// Python's `str.isspace` (what the reference's `content.split()` splits on): Rust's Unicode White_Space plus
/// U+001C..=U+001F.
fn py_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// The index.md token estimate: `int(len(content.split()) * 1.3)` — whitespace-separated words (Python's
/// notion of whitespace) times 1.3, truncated. Source: spec/reference-facts.md "index.md".
pub fn words_token_estimate(content: &str) -> usize {
    let words = content.split(py_isspace).filter(|w| !w.is_empty()).count();
    (words as f64 * 1.3) as usize
}

/// Render a container's index.md from its rows (format in the module docs). `now` fills `<!-- Updated: -->`.
pub fn render_index(rows: &[IndexRow], now: DateTime<Utc>) -> String {
    let mut out = format!("# CAO Memory Index\n<!-- Updated: {} -->\n\n", format_ts(now));
    for scope in INDEX_SECTION_ORDER {
        let mut section: Vec<&IndexRow> = rows.iter().filter(|r| r.scope == scope).collect();
        if section.is_empty() {
            continue;
        }
        section.sort_by(|a, b| {
            b.updated_at
                .cmp(&a.updated_at)
                .then_with(|| a.key.cmp(&b.key))
                .then_with(|| a.scope_id.cmp(&b.scope_id))
        });
        out.push_str("\n## ");
        out.push_str(scope.as_str());
        out.push('\n');
        for r in section {
            let tags = r.tags.replace(['\n', '\r'], " ");
            out.push_str(&format!(
                "- [{}]({}) \u{2014} type:{} tags:{} ~{}tok updated:{}\n",
                r.key,
                r.rel_path(),
                r.memory_type,
                tags,
                r.token_estimate,
                format_ts(r.updated_at)
            ));
        }
    }
    out
}

impl WikiLayout {
    /// Rewrite `<container>/wiki/index.md` from `rows` under its [`IndexLock`], atomically. Returns its path.
    ///
    /// Every row must belong to `container` (its [`WikiLayout::container_name`]) and have a valid scope id.
    ///
    /// Errors: [`WikiError::InvalidContainer`], [`WikiError::InvalidScopeId`], [`WikiError::RowOutsideContainer`]
    /// (nothing written), [`WikiError::PathEscape`], [`WikiError::Io`].
    pub fn write_index(&self, container: &str, rows: &[IndexRow], now: DateTime<Utc>) -> Result<PathBuf> {
        let path = self.index_path(container)?;
        for r in rows {
            let row_container = self.container_name(r.scope, r.scope_id.as_deref())?;
            if row_container != container {
                return Err(WikiError::RowOutsideContainer {
                    key: r.key.to_string(),
                    scope: r.scope,
                    scope_id: r.scope_id.clone(),
                    row_container: row_container.into_string(),
                    container: container.to_owned(),
                });
            }
        }
        let text = render_index(rows, now);
        let dir = self.wiki_dir(container)?;
        self.prepare_dir(&dir)?;
        let _lock = IndexLock::acquire(&path).map_err(|e| WikiError::io("lock", &path, e))?;
        atomic_write(&path, text.as_bytes()).map_err(|e| WikiError::io("write", &path, e))?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cao_core::time::parse_ts;

    fn row(scope: Scope, id: Option<&str>, key: &str, ts: &str) -> IndexRow {
        IndexRow {
            scope,
            scope_id: id.map(str::to_owned),
            key: Key::parse_strict(key).expect("valid key"),
            memory_type: MemoryType::Project,
            tags: "t".into(),
            token_estimate: 3,
            updated_at: parse_ts(ts).expect("valid ts"),
        }
    }

    #[test]
    fn token_estimate_matches_python_split() {
        assert_eq!(
            words_token_estimate("Always use pytest for testing in this project"),
            10
        );
        assert_eq!(words_token_estimate(""), 0);
        assert_eq!(words_token_estimate("   "), 0);
        assert_eq!(words_token_estimate("a\u{1f}b\u{a0}c\u{3000}d"), 5);
        assert_eq!(words_token_estimate("a\u{200b}b"), 1);
    }

    #[test]
    fn sections_in_fixed_order_rows_newest_first() {
        let rows = [
            row(Scope::Agent, Some("reviewer"), "z", "2026-01-01T00:00:00Z"),
            row(Scope::Session, Some("s1"), "b", "2026-01-01T00:00:00Z"),
            row(Scope::Global, None, "old", "2026-01-01T00:00:00Z"),
            row(Scope::Global, None, "new", "2026-01-02T00:00:00Z"),
            row(Scope::Global, None, "a-tie", "2026-01-01T00:00:00Z"),
        ];
        let now = parse_ts("2026-01-03T00:00:00Z").expect("valid ts");
        assert_eq!(
            render_index(&rows, now),
            "# CAO Memory Index\n<!-- Updated: 2026-01-03T00:00:00Z -->\n\n\
             \n## global\n\
             - [new](global/new.md) — type:project tags:t ~3tok updated:2026-01-02T00:00:00Z\n\
             - [a-tie](global/a-tie.md) — type:project tags:t ~3tok updated:2026-01-01T00:00:00Z\n\
             - [old](global/old.md) — type:project tags:t ~3tok updated:2026-01-01T00:00:00Z\n\
             \n## session\n\
             - [b](session/s1/b.md) — type:project tags:t ~3tok updated:2026-01-01T00:00:00Z\n\
             \n## agent\n\
             - [z](agent/reviewer/z.md) — type:project tags:t ~3tok updated:2026-01-01T00:00:00Z\n"
        );
        assert_eq!(
            render_index(&[], now),
            "# CAO Memory Index\n<!-- Updated: 2026-01-03T00:00:00Z -->\n\n"
        );
    }

    #[test]
    fn write_index_rejects_foreign_rows() {
        let d = tempfile::tempdir().expect("tempdir");
        let l = WikiLayout::new(d.path().join("memory"));
        let now = parse_ts("2026-01-03T00:00:00Z").expect("valid ts");
        let r = l.write_index("p1", &[row(Scope::Global, None, "k", "2026-01-01T00:00:00Z")], now);
        assert!(matches!(r, Err(WikiError::RowOutsideContainer { .. })));
        assert!(!d.path().join("memory").exists(), "nothing written");
        let p = l
            .write_index("global", &[row(Scope::Global, None, "k", "2026-01-01T00:00:00Z")], now)
            .expect("ok");
        assert!(std::fs::read_to_string(p).expect("read").contains("[k](global/k.md)"));
    }
}
