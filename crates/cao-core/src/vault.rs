//! The durable vault rows (spec/vault-facts.md section 11 "Database tables"): one `vault_note`, `vault_exclusion`
//! and `vault_note_alias` row as plain data, with the vocabulary of their enumerated columns.
//!
//! These are the one definition of the rows: the reconcile planner of `cao-vault` takes and returns them, and the
//! store reads and writes them (`cao-index`'s vault tables wrap [`IndexedNote`] with the columns only the store
//! keeps: the run time and the listing stamp). A global scope id is `None` here; the store keeps `''`.

use crate::Scope;
use serde::{Deserialize, Serialize};

/// A note's status after a scan or a reconcile (`vault_note.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoteStatus {
    /// Readable, valid, not refused: projected into memory.
    Indexed,
    /// Refused by an error-severity finding (or a hard link).
    Quarantined,
    /// Not read this run (limits, sync artifacts, missing folders, non-regular entries, unstable files).
    Skipped,
    /// A plugin format (Excalidraw), read but not indexed.
    Unsupported,
    /// De-indexed by a forget; the file is kept (set by reconcile, never by a scan).
    Excluded,
}

impl NoteStatus {
    /// Every status, in declaration order.
    pub const ALL: [NoteStatus; 5] = [
        NoteStatus::Indexed,
        NoteStatus::Quarantined,
        NoteStatus::Skipped,
        NoteStatus::Unsupported,
        NoteStatus::Excluded,
    ];

    /// The wire string (the stored spelling).
    pub fn as_str(self) -> &'static str {
        match self {
            NoteStatus::Indexed => "indexed",
            NoteStatus::Quarantined => "quarantined",
            NoteStatus::Skipped => "skipped",
            NoteStatus::Unsupported => "unsupported",
            NoteStatus::Excluded => "excluded",
        }
    }

    /// The status of a stored spelling; `None` for any other string (a row the store leaves out).
    pub fn parse(s: &str) -> Option<NoteStatus> {
        NoteStatus::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// Where a note's key came from (`vault_note.key_source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeySource {
    /// `cao.key` in the note's frontmatter.
    Authored,
    /// Derived from the mapping-relative path.
    Derived,
    /// A collision key given to every note of a colliding group.
    Collision,
}

impl KeySource {
    /// The wire string (the stored spelling).
    pub fn as_str(self) -> &'static str {
        match self {
            KeySource::Authored => "authored",
            KeySource::Derived => "derived",
            KeySource::Collision => "collision",
        }
    }

    /// The key source of a stored spelling: `authored` and `collision` as written, anything else `derived` (the
    /// reference's default; a stored row is never refused for it).
    pub fn parse_lenient(s: &str) -> KeySource {
        match s {
            "authored" => KeySource::Authored,
            "collision" => KeySource::Collision,
            _ => KeySource::Derived,
        }
    }
}

/// A `vault_note` row as the reconcile planner sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedNote {
    /// Vault-relative path (NFC, `/`).
    pub relpath: String,
    /// Scope of the mapping.
    pub scope: Scope,
    /// Scope id of the mapping (`None` for global).
    pub scope_id: Option<String>,
    /// The note's key.
    pub key: String,
    /// Note uid (primary key).
    pub note_uid: String,
    /// Status.
    pub status: NoteStatus,
    /// `cao.managed`.
    pub managed: bool,
    /// Where the key came from.
    pub key_source: KeySource,
    /// `identity-collision` for collision keys (`resolved-identity-collision` once resolved).
    pub key_source_reason: Option<String>,
    /// SHA-256 of the normalised text.
    pub content_sha256: Option<String>,
    /// SHA-256 of the raw frontmatter.
    pub frontmatter_sha256: Option<String>,
    /// Size read, bytes.
    pub size_bytes: Option<u64>,
    /// Modification time read (ns since the Unix epoch).
    pub mtime_ns: Option<i64>,
}

/// A `vault_exclusion` row: an identity forgotten by an operator or agent, kept de-indexed (survives rebuild).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exclusion {
    /// Scope.
    pub scope: Scope,
    /// Scope id (`None` for global).
    pub scope_id: Option<String>,
    /// The forgotten key.
    pub key: String,
    /// The note's path when it was forgotten (or last moved).
    pub last_known_relpath: String,
    /// Its content hash then.
    pub content_sha256: Option<String>,
    /// Its key source.
    pub key_source: KeySource,
    /// Its key source reason.
    pub key_source_reason: Option<String>,
}

/// A `vault_note_alias` row: a former path of a renamed note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteAlias {
    /// The path before the rename.
    pub former_relpath: String,
    /// The note's key.
    pub key: String,
    /// Scope.
    pub scope: Scope,
    /// Scope id (`None` for global).
    pub scope_id: Option<String>,
    /// The content hash that proved the rename.
    pub content_sha256: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_round_trips_through_its_stored_spelling() {
        for s in NoteStatus::ALL {
            assert_eq!(NoteStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(NoteStatus::parse("Indexed"), None);
        assert_eq!(NoteStatus::parse(""), None);
    }

    #[test]
    fn key_sources_parse_with_derived_as_the_default() {
        for k in [KeySource::Authored, KeySource::Derived, KeySource::Collision] {
            assert_eq!(KeySource::parse_lenient(k.as_str()), k);
        }
        assert_eq!(KeySource::parse_lenient("something-else"), KeySource::Derived);
    }
}
