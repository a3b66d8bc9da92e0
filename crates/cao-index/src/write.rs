//! Writes: upsert, delete, access counting, search-index rebuild. Each is one `BEGIN IMMEDIATE` transaction.

use crate::row::{MemoryRow, format_db_ts, format_db_ts_secs, opt_ts};
use crate::{Index, IndexError, Result, dirty, partition};
use cao_core::fs::FileStamp;
use cao_core::{Container, Key, MemoryRef, MemoryType, Scope, SourceKind};
use chrono::{DateTime, TimeDelta, Utc};
use rusqlite::{Connection, OptionalExtension, Transaction, params};

/// What [`Index::upsert`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpsertOutcome {
    /// Id of the stored row (the existing id on an update).
    pub id: String,
    /// `true` when a new row was inserted, `false` when an existing identity was updated.
    pub created: bool,
}

/// The BM25 document of a row: the search terms ([`cao_core::text::search_terms`]: reference tokens, stemmed) of
/// `key tags content`, joined by single spaces.
pub(crate) fn fts_body(key: &str, tags: &str, content: &str) -> String {
    let mut out = String::with_capacity(key.len() + tags.len() + content.len() + 2);
    for text in [key, tags, content] {
        for tok in cao_core::text::search_terms(text) {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&tok);
        }
    }
    out
}

/// The substring-search document of a row: `lowercase(key + " " + tags + " " + content)`.
pub(crate) fn trigram_body(key: &str, tags: &str, content: &str) -> String {
    format!("{key} {tags} {content}").to_lowercase()
}

/// Add a row's documents to both FTS tables under `search_rowid` and count it.
fn index_search(tx: &Connection, search_rowid: i64, key: &str, tags: &str, content: &str) -> rusqlite::Result<()> {
    let body = fts_body(key, tags, content);
    let tokens = body_tokens(&body);
    tx.prepare_cached("INSERT INTO cao_memory_fts (rowid, body) VALUES (?1, ?2)")?
        .execute(params![search_rowid, body])?;
    tx.prepare_cached("INSERT INTO cao_memory_trigram (rowid, body) VALUES (?1, ?2)")?
        .execute(params![search_rowid, trigram_body(key, tags, content)])?;
    tx.prepare_cached("UPDATE cao_search_stats SET docs = docs + 1, tokens = tokens + ?1 WHERE id = 1")?
        .execute([tokens])?;
    let mut add = tx.prepare_cached(
        "INSERT INTO cao_search_terms (term, df) VALUES (?1, 1) ON CONFLICT (term) DO UPDATE SET df = df + 1",
    )?;
    for term in distinct_terms(&body) {
        add.execute([term])?;
    }
    Ok(())
}

/// The distinct tokens of a BM25 document.
fn distinct_terms(body: &str) -> std::collections::BTreeSet<&str> {
    body.split(' ').filter(|t| !t.is_empty()).collect()
}

/// Number of tokens of a BM25 document (single-space separated).
pub(crate) fn body_tokens(body: &str) -> i64 {
    i64::try_from(body.split(' ').filter(|t| !t.is_empty()).count()).unwrap_or(i64::MAX)
}

/// Remove a row's documents from both FTS tables and uncount it.
fn unindex_search(tx: &Connection, search_rowid: i64) -> rusqlite::Result<()> {
    let body: Option<String> = tx
        .prepare_cached("SELECT body FROM cao_memory_fts WHERE rowid = ?1")?
        .query_row([search_rowid], |r| r.get(0))
        .optional()?;
    tx.prepare_cached("DELETE FROM cao_memory_fts WHERE rowid = ?1")?
        .execute([search_rowid])?;
    tx.prepare_cached("DELETE FROM cao_memory_trigram WHERE rowid = ?1")?
        .execute([search_rowid])?;
    if let Some(body) = body {
        tx.prepare_cached(
            "UPDATE cao_search_stats SET docs = max(docs - 1, 0), tokens = max(tokens - ?1, 0) WHERE id = 1",
        )?
        .execute([body_tokens(&body)])?;
        let mut sub = tx.prepare_cached("UPDATE cao_search_terms SET df = df - 1 WHERE term = ?1")?;
        let mut drop_zero = tx.prepare_cached("DELETE FROM cao_search_terms WHERE term = ?1 AND df <= 0")?;
        for term in distinct_terms(&body) {
            sub.execute([term])?;
            drop_zero.execute([term])?;
        }
    }
    Ok(())
}

/// `(id, search_rowid)` of the native row with this identity.
fn find_identity(
    tx: &Connection,
    scope: Scope,
    scope_id: Option<&str>,
    key: &str,
) -> rusqlite::Result<Option<(String, Option<i64>)>> {
    tx.prepare_cached(
        "SELECT id, search_rowid FROM memory_metadata
         WHERE \"key\" = ?1 AND scope = ?2 AND scope_id IS ?3 AND source_kind = 'native'",
    )?
    .query_row(params![key, scope.as_str(), scope_id], |r| Ok((r.get(0)?, r.get(1)?)))
    .optional()
}

/// Reject a row whose `related_keys` breaks the reference's CHECK (1024 bytes or longer).
pub(crate) fn check_related_keys(row: &MemoryRow) -> Result<()> {
    if row.related_keys.as_ref().is_some_and(|r| r.len() >= 1024) {
        return Err(IndexError::Invalid(format!(
            "related_keys of {:?} is {} bytes; the limit is 1023",
            row.key.as_str(),
            row.related_keys.as_ref().map_or(0, String::len)
        )));
    }
    Ok(())
}

/// The body of [`Index::upsert`] inside an open write transaction (see there).
pub(crate) fn upsert_in(tx: &Transaction<'_>, row: &MemoryRow) -> Result<UpsertOutcome> {
    let key = row.key.as_str();
    let existing = find_identity(tx, row.scope, row.scope_id.as_deref(), key)?;
    let part = partition::ensure(tx, row.scope, row.scope_id.as_deref())?;
    let slot = partition::slot(part, row.memory_type);
    let outcome = match existing {
        Some((id, search_rowid)) => {
            if let Some(s) = search_rowid {
                unindex_search(tx, s)?;
            }
            let s = match search_rowid {
                Some(s) if partition::slot_of(s) == slot => s,
                _ => partition::allocate(tx, slot)?,
            };
            tx.prepare_cached(
                "UPDATE memory_metadata SET memory_type = ?1, tags = ?2, file_path = ?3, source_provider = ?4,
                         source_terminal_id = ?5, token_estimate = ?6, updated_at = ?7,
                         last_compiled_at = coalesce(?8, last_compiled_at),
                         related_keys = coalesce(?9, related_keys), content = ?10, entry_count = ?11,
                         search_rowid = ?12, file_size = ?14, file_ctime_ns = ?15, file_ino = ?16
                     WHERE id = ?13",
            )?
            .execute(params![
                row.memory_type.as_str(),
                row.tags,
                row.file_path,
                row.source_provider,
                row.source_terminal_id,
                row.token_estimate,
                format_db_ts(row.updated_at),
                opt_ts(row.last_compiled_at, format_db_ts),
                row.related_keys,
                row.content,
                row.entry_count,
                s,
                id,
                row.file_stamp.map(|f| f.size),
                row.file_stamp.map(|f| f.changed_ns),
                row.file_stamp.map(|f| f.inode),
            ])?;
            index_search(tx, s, key, &row.tags, &row.content)?;
            UpsertOutcome { id, created: false }
        }
        None => {
            if row.id.is_empty() {
                return Err(IndexError::Invalid(format!("empty row id for new memory {key:?}")));
            }
            let s = partition::allocate(tx, slot)?;
            tx.prepare_cached(
                "INSERT INTO memory_metadata (id, \"key\", memory_type, scope, scope_id, source_kind, file_path,
                     tags, source_provider, source_terminal_id, token_estimate, created_at, updated_at,
                     access_count, last_accessed_at, last_compiled_at, related_keys, content, entry_count,
                     search_rowid, file_size, file_ctime_ns, file_ino)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20,
                     ?21, ?22, ?23)",
            )?
            .execute(params![
                row.id,
                key,
                row.memory_type.as_str(),
                row.scope.as_str(),
                row.scope_id,
                SourceKind::Native.as_str(),
                row.file_path,
                row.tags,
                row.source_provider,
                row.source_terminal_id,
                row.token_estimate,
                format_db_ts(row.created_at),
                format_db_ts(row.updated_at),
                row.access_count,
                opt_ts(row.last_accessed_at, format_db_ts_secs),
                opt_ts(row.last_compiled_at, format_db_ts),
                row.related_keys,
                row.content,
                row.entry_count,
                s,
                row.file_stamp.map(|f| f.size),
                row.file_stamp.map(|f| f.changed_ns),
                row.file_stamp.map(|f| f.inode),
            ])?;
            index_search(tx, s, key, &row.tags, &row.content)?;
            UpsertOutcome {
                id: row.id.clone(),
                created: true,
            }
        }
    };
    dirty::mark(tx, row.container().as_str())?;
    Ok(outcome)
}

/// The body of [`Index::delete`] inside an open write transaction: whether a row existed.
pub(crate) fn delete_in(tx: &Connection, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<bool> {
    let Some((id, search_rowid)) = find_identity(tx, scope, scope_id, key.as_str())? else {
        return Ok(false);
    };
    delete_row(tx, &id, search_rowid)?;
    dirty::mark(tx, Container::of(scope, scope_id).as_str())?;
    Ok(true)
}

impl Index {
    /// Insert or update the native row with identity `(row.key, row.scope, row.scope_id)` and re-index its text.
    ///
    /// On update the stored `id`, `created_at`, `access_count` and `last_accessed_at` are kept (as the reference's
    /// `_upsert_metadata` does); `last_compiled_at` and `related_keys` are only overwritten when `Some`; every other
    /// field comes from `row`. On insert every field comes from `row` (`source_kind` is always `native`). The row's
    /// wiki container is marked dirty in the same transaction.
    ///
    /// Errors: [`IndexError::Invalid`] when a new row's `id` is empty or `related_keys` is 1024 bytes or longer
    /// (the reference's CHECK); [`IndexError::Sqlite`] / [`IndexError::Pool`] on database failure (nothing written).
    pub fn upsert(&self, row: &MemoryRow) -> Result<UpsertOutcome> {
        check_related_keys(row)?;
        self.write(|tx| upsert_in(tx, row))
    }

    /// [`Index::upsert`] of every row of `rows`, in order, in one transaction (bulk writers: an import commits a
    /// batch of topics at once). Either every row is written or none is. Returns each row's outcome.
    ///
    /// Errors: as [`Index::upsert`] for any row (nothing written).
    pub fn upsert_many(&self, rows: &[MemoryRow]) -> Result<Vec<UpsertOutcome>> {
        for row in rows {
            check_related_keys(row)?;
        }
        self.write(|tx| rows.iter().map(|row| upsert_in(tx, row)).collect())
    }

    /// Record, for each `(memory, stamp)`, that the native row of `memory` agrees with its topic file as it is now
    /// (`stamp`), without changing anything else (no dirty mark, no search re-index), in one transaction. Rows that
    /// do not exist are skipped. Returns how many rows were updated.
    /// Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn set_file_stamps(&self, stamps: &[(MemoryRef, FileStamp)]) -> Result<usize> {
        if stamps.is_empty() {
            return Ok(0);
        }
        self.write(|tx| {
            let mut stmt = tx.prepare_cached(
                "UPDATE memory_metadata SET file_size = ?4, file_ctime_ns = ?5, file_ino = ?6
                 WHERE \"key\" = ?1 AND scope = ?2 AND scope_id IS ?3 AND source_kind = 'native'",
            )?;
            let mut n = 0;
            for (memory, stamp) in stamps {
                n += stmt.execute(params![
                    memory.key.as_str(),
                    memory.scope.as_str(),
                    memory.scope_id(),
                    stamp.size,
                    stamp.changed_ns,
                    stamp.inode
                ])?;
            }
            Ok(n)
        })
    }

    /// Delete the native row `(scope, scope_id, key)` and its search entries; marks its container dirty.
    /// Returns whether a row existed. Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn delete(&self, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<bool> {
        self.write(|tx| delete_in(tx, scope, scope_id, key))
    }

    /// Delete every native row of `scope` whose scope id equals `scope_id` (`None` = rows without a scope id), with
    /// their search entries, in one transaction. Returns the number of rows deleted.
    /// Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn delete_scope(&self, scope: Scope, scope_id: Option<&str>) -> Result<usize> {
        self.write(|tx| {
            let victims: Vec<(String, Option<i64>)> = tx
                .prepare_cached(
                    "SELECT id, search_rowid FROM memory_metadata
                     WHERE scope = ?1 AND scope_id IS ?2 AND source_kind = 'native'",
                )?
                .query_map(params![scope.as_str(), scope_id], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            for (id, search_rowid) in &victims {
                delete_row(tx, id, *search_rowid)?;
            }
            if !victims.is_empty() {
                dirty::mark(tx, Container::of(scope, scope_id).as_str())?;
            }
            Ok(victims.len())
        })
    }

    /// Count one access of each row in `ids`: `access_count += 1` and `last_accessed_at = now` (whole seconds), but
    /// only for rows whose `last_accessed_at` is NULL or at least `min_interval` before `now` (the reference's
    /// 60-second rule; pass [`crate::ACCESS_MIN_INTERVAL`]). One transaction; returns the number of rows changed.
    /// Unknown ids are ignored; a repeated id counts once. Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn record_access(&self, ids: &[&str], now: DateTime<Utc>, min_interval: TimeDelta) -> Result<usize> {
        if ids.is_empty() {
            return Ok(0);
        }
        let mut unique: Vec<&str> = ids.to_vec();
        unique.sort_unstable();
        unique.dedup();
        let now_text = format_db_ts(now);
        let now_secs = format_db_ts_secs(now);
        let interval_ms = min_interval.num_milliseconds();
        self.write(|tx| {
            let mut stmt = tx.prepare_cached(
                "UPDATE memory_metadata SET access_count = access_count + 1, last_accessed_at = ?2
                 WHERE id = ?1 AND (last_accessed_at IS NULL
                     OR round((julianday(?3) - julianday(last_accessed_at)) * 86400000.0) >= ?4)",
            )?;
            let mut changed = 0;
            for id in unique {
                changed += stmt.execute(params![id, now_secs, now_text, interval_ms])?;
            }
            Ok(changed)
        })
    }

    /// Set the `related_keys` csv of the native row `(scope, scope_id, key)` (`None` = NULL, "never computed"; `""` =
    /// computed, none found). Nothing else of the row changes and no search entry is touched. Returns whether the
    /// row exists. One transaction.
    ///
    /// Errors: [`IndexError::Invalid`] when `related_keys` is 1024 bytes or longer (the reference's CHECK; nothing
    /// written); [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn set_related_keys(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        key: &Key,
        related_keys: Option<&str>,
    ) -> Result<bool> {
        if related_keys.is_some_and(|r| r.len() >= 1024) {
            return Err(IndexError::Invalid(format!(
                "related_keys of {:?} is {} bytes; the limit is 1023",
                key.as_str(),
                related_keys.map_or(0, str::len)
            )));
        }
        self.write(|tx| {
            let n = tx
                .prepare_cached(
                    "UPDATE memory_metadata SET related_keys = ?1
                     WHERE \"key\" = ?2 AND scope = ?3 AND scope_id IS ?4 AND source_kind = 'native'",
                )?
                .execute(params![related_keys, key.as_str(), scope.as_str(), scope_id])?;
            Ok(n > 0)
        })
    }

    /// Set the `access_count` of the native row `(scope, scope_id, key)` to 0 (`last_accessed_at` kept). Returns the
    /// count it had, `None` when there is no such row. One transaction.
    ///
    /// Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn reset_access_count(&self, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<Option<i64>> {
        self.write(|tx| {
            let before: Option<i64> = tx
                .prepare_cached(
                    "SELECT access_count FROM memory_metadata
                     WHERE \"key\" = ?1 AND scope = ?2 AND scope_id IS ?3 AND source_kind = 'native'",
                )?
                .query_row(params![key.as_str(), scope.as_str(), scope_id], |r| {
                    r.get::<_, Option<i64>>(0)
                })
                .optional()?
                .map(Option::unwrap_or_default);
            if before.is_some() {
                tx.prepare_cached(
                    "UPDATE memory_metadata SET access_count = 0
                     WHERE \"key\" = ?1 AND scope = ?2 AND scope_id IS ?3 AND source_kind = 'native'",
                )?
                .execute(params![key.as_str(), scope.as_str(), scope_id])?;
            }
            Ok(before)
        })
    }

    /// Re-tokenise every native row from its stored `key`, `tags` and `content` into fresh FTS tables (renumbering
    /// every `search_rowid`, and indexing rows that lacked one, such as rows only the reference wrote; rows with an
    /// unknown scope or type stay unindexed). One transaction; returns the number of rows indexed. Used by repair. Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn rebuild_search_index(&self) -> Result<usize> {
        self.write(|tx| {
            tx.execute_batch(
                "DELETE FROM cao_memory_fts;
                 INSERT INTO cao_memory_trigram (cao_memory_trigram) VALUES ('delete-all');
                 UPDATE cao_search_stats SET docs = 0, tokens = 0 WHERE id = 1;
                 DELETE FROM cao_search_terms;
                 UPDATE memory_metadata SET search_rowid = NULL WHERE search_rowid IS NOT NULL;
                 DELETE FROM cao_search_partitions;",
            )?;
            let rows: Vec<StoredText> = tx
                .prepare(
                    "SELECT id, \"key\", tags, content, scope, scope_id, memory_type FROM memory_metadata
                     WHERE source_kind = 'native' ORDER BY rowid",
                )?
                .query_map([], |r| {
                    let text = |i: usize| -> rusqlite::Result<String> {
                        Ok(r.get::<_, Option<String>>(i)?.unwrap_or_default())
                    };
                    Ok((text(0)?, text(1)?, text(2)?, text(3)?, text(4)?, r.get(5)?, text(6)?))
                })?
                .collect::<rusqlite::Result<_>>()?;
            let mut indexed = 0;
            for (id, key, tags, content, scope, scope_id, memory_type) in &rows {
                // Rows whose scope or type we do not know stay unindexed (see `Index::invalid_rows`).
                let (Ok(scope), Ok(memory_type)) = (scope.parse::<Scope>(), memory_type.parse::<MemoryType>()) else {
                    continue;
                };
                let part = partition::ensure(tx, scope, scope_id.as_deref())?;
                let s = partition::allocate(tx, partition::slot(part, memory_type))?;
                tx.prepare_cached("UPDATE memory_metadata SET search_rowid = ?1 WHERE id = ?2")?
                    .execute(params![s, id])?;
                index_search(tx, s, key, tags, content)?;
                indexed += 1;
            }
            Ok(indexed)
        })
    }
}

/// `(id, key, tags, content, scope, scope_id, memory_type)` of a stored row, as read for a rebuild.
type StoredText = (String, String, String, String, String, Option<String>, String);

fn delete_row(tx: &Connection, id: &str, search_rowid: Option<i64>) -> rusqlite::Result<()> {
    if let Some(s) = search_rowid {
        unindex_search(tx, s)?;
    }
    tx.prepare_cached("DELETE FROM memory_metadata WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_use_stemmed_reference_tokens() {
        assert_eq!(
            fts_body("prefer-pytest", "testing,python", "Use PyTest_fixtures!"),
            "prefer pytest test python use pytest fixtur"
        );
        assert_eq!(trigram_body("k", "", "ÄB c"), "k  äb c");
    }
}
