//! Where a vault row comes from and whether it is still the file on disk (spec/vault-facts.md section 5 "A
//! recalled vault memory": `source_path`, `indexed_at`, `index_freshness`), for recall payloads and the operator
//! views (web UI memory page, inspector).
//!
//! - A vault row's `file_path` is its vault-relative path (what reconcile stores); its note row in `vault_note`
//!   holds the size and modification time (ns) read when it was indexed, and the time of the reconcile that wrote
//!   it (`indexed_at`).
//! - Freshness compares those with the file's current size and mtime, taken by a confined stat: the root and every
//!   directory of the path opened without following links, no byte of the note read
//!   ([`cao_vault::scan::read_note`] with a zero byte budget). `fresh` iff both are equal; `stale` when either
//!   differs, or the file is gone, unreadable or became a link (the served content is the indexed text).
//! - Native rows get `None`; so do vault rows when the vault configuration is off or unavailable, or the store
//!   holds no vault (such rows are not served then anyway).

use crate::vault::{active, settings_of};
use cao_core::{Scope, Settings, SourceKind};
use cao_protocol::IndexFreshness;
use cao_store::{MemoryRow, Store, VaultNoteRow};
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// The vault facts of one vault row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VaultSource {
    /// The vault-relative path of the note (NFC, `/`).
    pub source_path: String,
    /// When the note's row was last written by an applied reconcile; `None` when its note row is gone (the row
    /// was forgotten or de-indexed since the read).
    pub indexed_at: Option<DateTime<Utc>>,
    /// Whether the file is still the one indexed (module docs).
    pub freshness: IndexFreshness,
}

/// Whether a note's current size and mtime (`current`: `(size, mtime_ns)`, `None` when it cannot be stat'ed) are
/// the indexed ones of `note`.
pub fn freshness_of(note: &VaultNoteRow, current: Option<(u64, i64)>) -> IndexFreshness {
    match current {
        Some((size, mtime_ns)) if note.note.size_bytes == Some(size) && note.note.mtime_ns == Some(mtime_ns) => {
            IndexFreshness::Fresh
        }
        _ => IndexFreshness::Stale,
    }
}

/// The [`VaultSource`] of each of `rows` (same order), `None` for native rows (module docs). One indexed lookup
/// per vault row and one confined stat per vault row.
///
/// Errors: none; a lookup that fails leaves the rows' facts out (`None`) and is logged, so a read still answers.
pub fn sources<'a>(
    store: &Store,
    settings: &Settings,
    rows: impl IntoIterator<Item = &'a MemoryRow>,
) -> Vec<Option<VaultSource>> {
    let rows: Vec<&MemoryRow> = rows.into_iter().collect();
    if !rows.iter().any(|r| r.source_kind == SourceKind::Vault) {
        return vec![None; rows.len()];
    }
    match lookup(store, settings, &rows) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(error = %e, "vault note state unavailable: recalled rows carry no freshness");
            vec![None; rows.len()]
        }
    }
}

fn lookup(store: &Store, settings: &Settings, rows: &[&MemoryRow]) -> Result<Vec<Option<VaultSource>>, String> {
    let s = settings_of(store, settings).map_err(|e| e.to_string())?;
    let vault = active(&s).map_err(|e| e.to_string())?;
    let snapshot = store.read().map_err(|e| e.to_string())?;
    if !snapshot.supports_vault() {
        return Ok(vec![None; rows.len()]);
    }
    let identities: Vec<(Scope, Option<&str>, &str)> = rows
        .iter()
        .filter(|r| r.source_kind == SourceKind::Vault)
        .map(|r| (r.scope, r.scope_id.as_deref(), r.key.as_str()))
        .collect();
    let notes = snapshot
        .vault_notes_by_identity(&vault.id, &identities)
        .map_err(|e| e.to_string())?;
    let by_path: HashMap<&str, &VaultNoteRow> = notes.iter().map(|n| (n.note.relpath.as_str(), n)).collect();
    Ok(rows
        .iter()
        .map(|r| {
            if r.source_kind != SourceKind::Vault {
                return None;
            }
            let note = by_path.get(r.file_path.as_str());
            let current = cao_vault::scan::read_note(vault, &r.file_path, 0)
                .ok()
                .map(|(_, stamp)| (stamp.size, stamp.mtime_ns));
            Some(VaultSource {
                source_path: r.file_path.clone(),
                indexed_at: note.and_then(|n| n.last_reconciled_at),
                freshness: note.map_or(IndexFreshness::Stale, |n| freshness_of(n, current)),
            })
        })
        .collect())
}

/// The vault note `key` of `scope` for the operator views (the web UI's memory page): the metadata row of an
/// indexed note of a mapping with `index: true` bound to `scope` and, when given, `scope_id` (the mapping's
/// canonical id; any mapping of the scope without one), with its [`VaultSource`]. `None` when the vault is off,
/// not configured or unavailable, the store holds no vault, or no indexed note has that key. Reads only (no
/// pickup, no access counted), so a note edited since the last reconcile shows as `stale`.
///
/// Errors: store errors reading the row.
pub fn show(
    store: &Store,
    settings: &Settings,
    scope: Scope,
    scope_id: Option<&str>,
    key: &cao_core::Key,
) -> Result<Option<(crate::types::Memory, VaultSource)>, cao_store::MemoryError> {
    let Ok(s) = settings_of(store, settings) else {
        return Ok(None);
    };
    let Ok(vault) = active(&s) else {
        return Ok(None);
    };
    let snapshot = store.read()?;
    if !snapshot.supports_vault() {
        return Ok(None);
    }
    let vis = vault
        .mappings
        .iter()
        .filter(|m| m.index && m.scope.scope() == scope)
        .filter(|m| scope_id.is_none() || m.scope_id.as_deref() == scope_id)
        .fold(cao_store::Visibility::none(), |v, m| {
            v.allow_vault(scope, m.scope_id.as_deref())
        });
    let Some(row) = snapshot.find_key(&vis, key)? else {
        return Ok(None);
    };
    let source = sources(store, settings, [&row]).into_iter().next().flatten();
    Ok(source.map(|source| (crate::types::row_to_memory(&row), source)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(size: Option<u64>, mtime: Option<i64>) -> VaultNoteRow {
        VaultNoteRow {
            note: cao_core::vault::IndexedNote {
                note_uid: "u".into(),
                relpath: "Notes/a.md".into(),
                scope: Scope::Global,
                scope_id: None,
                key: "a".into(),
                status: cao_core::vault::NoteStatus::Indexed,
                managed: false,
                key_source: cao_core::vault::KeySource::Derived,
                key_source_reason: None,
                content_sha256: None,
                frontmatter_sha256: None,
                size_bytes: size,
                mtime_ns: mtime,
            },
            last_reconciled_at: None,
            stamp: None,
        }
    }

    #[test]
    fn fresh_only_when_size_and_mtime_both_match() {
        let n = note(Some(10), Some(1_000));
        assert_eq!(freshness_of(&n, Some((10, 1_000))), IndexFreshness::Fresh);
        assert_eq!(freshness_of(&n, Some((11, 1_000))), IndexFreshness::Stale);
        assert_eq!(freshness_of(&n, Some((10, 1_001))), IndexFreshness::Stale);
        assert_eq!(
            freshness_of(&n, None),
            IndexFreshness::Stale,
            "a vanished file is stale"
        );
        assert_eq!(
            freshness_of(&note(None, None), Some((10, 1_000))),
            IndexFreshness::Stale,
            "nothing indexed to compare with"
        );
    }
}
