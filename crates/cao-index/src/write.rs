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

/// Most terms of each neighbouring memory's text that a row's context field takes (the start of that text).
pub const NEIGHBOUR_TERMS_MAX: usize = 100;

/// How many memories on each side of a row (created just before it, and just after it, in the same scope and scope
/// id) lend their text to its context field: two, so a memory's context covers the exchange around it
/// (docs/decisions/0009-lexical-ranking.md: leave-one-conversation-out on LoCoMo chose 2 over 1 and 3).
pub const NEIGHBOUR_WINDOW: usize = 2;

/// The content field of a row's lexical document: the indexed terms ([`cao_core::text::index_terms`]: reference
/// tokens without stop words, stemmed) of its content, joined by single spaces.
pub fn content_field(content: &str) -> String {
    join_terms(cao_core::text::index_terms(content))
}

/// The own part of a row's context field: the indexed terms of its key, its tags and the day it was stored
/// (`updated_at` as `8 May 2023`), joined by single spaces (stored in the `meta` column).
pub fn meta_field(key: &str, tags: &str, stored: DateTime<Utc>) -> String {
    let day = stored.format("%-d %B %Y").to_string();
    join_terms(
        [key, tags, day.as_str()]
            .into_iter()
            .flat_map(cao_core::text::index_terms),
    )
}

/// The neighbours' part of a row's context field: the first [`NEIGHBOUR_TERMS_MAX`] indexed terms of each of its
/// neighbours' content (`neighbours`: the up to [`NEIGHBOUR_WINDOW`] memories created just before it and the up to
/// [`NEIGHBOUR_WINDOW`] created just after it in the same scope and scope id, before ones first, each side nearest
/// first), stored in the `near` column (docs/decisions/0009-lexical-ranking.md).
pub fn near_field(neighbours: &[&str]) -> String {
    join_terms(
        neighbours
            .iter()
            .flat_map(|n| cao_core::text::index_terms(n).take(NEIGHBOUR_TERMS_MAX)),
    )
}

fn join_terms(terms: impl Iterator<Item = String>) -> String {
    let mut out = String::new();
    for t in terms {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&t);
    }
    out
}

/// The substring-search document of a row: `lowercase(key + " " + tags + " " + content)`.
pub fn trigram_body(key: &str, tags: &str, content: &str) -> String {
    format!("{key} {tags} {content}").to_lowercase()
}

/// What a row's search entries are made of.
pub(crate) struct SearchText<'a> {
    pub key: &'a str,
    pub tags: &'a str,
    pub content: &'a str,
    pub stored: DateTime<Utc>,
    /// Contents of the memories around this one in the same scope and scope id (see [`near_field`]).
    pub neighbours: Vec<&'a str>,
    /// A vault row: its substring document is its content alone (see `search::metadata_haystack`).
    pub vault: bool,
}

/// Add a row's documents to both FTS tables under `search_rowid` and count them in the term statistics (the
/// context field's length is `meta` + `near`).
pub(crate) fn index_search(tx: &Connection, search_rowid: i64, text: &SearchText<'_>) -> rusqlite::Result<()> {
    index_search_with(tx, search_rowid, text, None, None).map(|_| ())
}

/// The term statistics a batch of newly indexed documents adds (`cao_search_stats` and `cao_search_terms`),
/// summed in memory and written once per batch ([`StatsDelta::flush`]) instead of one statement per document and
/// distinct term: a batch of 256 documents shares most of its terms.
#[derive(Debug, Default)]
pub(crate) struct StatsDelta {
    docs: i64,
    tokens: i64,
    context_tokens: i64,
    /// Documents added per term.
    df: std::collections::HashMap<String, i64>,
}

impl StatsDelta {
    /// Write the summed statistics: the same rows as adding each document's on its own.
    ///
    /// Errors: SQLite errors.
    pub(crate) fn flush(self, tx: &Connection) -> rusqlite::Result<()> {
        if self.docs == 0 {
            return Ok(());
        }
        tx.prepare_cached(
            "UPDATE cao_search_stats SET docs = docs + ?1, tokens = tokens + ?2, context_tokens = context_tokens + ?3
             WHERE id = 1",
        )?
        .execute([self.docs, self.tokens, self.context_tokens])?;
        let mut add = tx.prepare_cached(
            "INSERT INTO cao_search_terms (term, df) VALUES (?1, ?2) ON CONFLICT (term) DO UPDATE SET df = df + ?2",
        )?;
        for (term, n) in &self.df {
            add.execute(params![term, n])?;
        }
        Ok(())
    }
}

/// [`index_search`], with the context field's neighbour part given (`near`, as [`near_field`] of `text.neighbours`
/// would make it) instead of computed when `Some`, and the term statistics added to `deferred` (written by the
/// caller) when given; returns the content field.
fn index_search_with(
    tx: &Connection,
    search_rowid: i64,
    text: &SearchText<'_>,
    near: Option<&str>,
    deferred: Option<&mut StatsDelta>,
) -> rusqlite::Result<String> {
    let body = content_field(text.content);
    let meta = meta_field(text.key, text.tags, text.stored);
    let near = near.map_or_else(|| near_field(&text.neighbours), str::to_owned);
    tx.prepare_cached("INSERT INTO cao_memory_fts (rowid, body, meta, near) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![search_rowid, body, meta, near])?;
    let substring_doc = if text.vault {
        text.content.to_lowercase()
    } else {
        trigram_body(text.key, text.tags, text.content)
    };
    tx.prepare_cached("INSERT INTO cao_memory_trigram (rowid, body) VALUES (?1, ?2)")?
        .execute(params![search_rowid, substring_doc])?;
    if let Some(d) = deferred {
        d.docs += 1;
        d.tokens += body_tokens(&body);
        d.context_tokens += body_tokens(&meta) + body_tokens(&near);
        for term in distinct_terms(&[&body, &meta, &near]) {
            match d.df.get_mut(term) {
                Some(n) => *n += 1,
                None => {
                    d.df.insert(term.to_owned(), 1);
                }
            }
        }
        return Ok(body);
    }
    tx.prepare_cached(
        "UPDATE cao_search_stats SET docs = docs + 1, tokens = tokens + ?1, context_tokens = context_tokens + ?2
         WHERE id = 1",
    )?
    .execute([body_tokens(&body), body_tokens(&meta) + body_tokens(&near)])?;
    let mut add = tx.prepare_cached(
        "INSERT INTO cao_search_terms (term, df) VALUES (?1, 1) ON CONFLICT (term) DO UPDATE SET df = df + 1",
    )?;
    for term in distinct_terms(&[&body, &meta, &near]) {
        add.execute([term])?;
    }
    Ok(body)
}

/// The distinct terms of a lexical document (every column).
pub fn distinct_terms<'a>(columns: &[&'a str]) -> std::collections::BTreeSet<&'a str> {
    columns
        .iter()
        .flat_map(|c| c.split(' '))
        .filter(|t| !t.is_empty())
        .collect()
}

/// Number of terms of one field of a lexical document (single-space separated).
pub fn body_tokens(body: &str) -> i64 {
    i64::try_from(body.split(' ').filter(|t| !t.is_empty()).count()).unwrap_or(i64::MAX)
}

/// Remove a row's documents from both FTS tables and uncount them.
pub(crate) fn unindex_search(tx: &Connection, search_rowid: i64) -> rusqlite::Result<()> {
    let columns: Option<(String, String, String)> = tx
        .prepare_cached("SELECT body, meta, near FROM cao_memory_fts WHERE rowid = ?1")?
        .query_row([search_rowid], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    tx.prepare_cached("DELETE FROM cao_memory_fts WHERE rowid = ?1")?
        .execute([search_rowid])?;
    tx.prepare_cached("DELETE FROM cao_memory_trigram WHERE rowid = ?1")?
        .execute([search_rowid])?;
    if let Some((body, meta, near)) = columns {
        tx.prepare_cached(
            "UPDATE cao_search_stats SET docs = max(docs - 1, 0), tokens = max(tokens - ?1, 0),
                 context_tokens = max(context_tokens - ?2, 0)
             WHERE id = 1",
        )?
        .execute([body_tokens(&body), body_tokens(&meta) + body_tokens(&near)])?;
        let mut sub = tx.prepare_cached("UPDATE cao_search_terms SET df = df - 1 WHERE term = ?1")?;
        let mut drop_zero = tx.prepare_cached("DELETE FROM cao_search_terms WHERE term = ?1 AND df <= 0")?;
        for term in distinct_terms(&[&body, &meta, &near]) {
            sub.execute([term])?;
            drop_zero.execute([term])?;
        }
    }
    Ok(())
}

/// Where a row stands in its scope's creation order: `(scope, scope_id, created_at, rowid)` as stored (`created_at`
/// is whole seconds, so the insertion order, `memory_metadata`'s rowid, orders the rows of one second).
struct Position {
    scope: String,
    scope_id: Option<String>,
    created_at: Option<String>,
    /// `memory_metadata`'s rowid: the insertion order.
    seq: i64,
    key: String,
}

/// The neighbour lookups of [`neighbours`], with the window as a literal: a bound `LIMIT` makes SQLite plan the
/// statement again at every execution (`search::limit_sql`).
static NEIGHBOURS_BEFORE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT id, search_rowid, content FROM memory_metadata
         WHERE scope = ?1 AND scope_id IS ?2 AND source_kind = 'native' AND (created_at, rowid) < (?3, ?4)
         ORDER BY created_at DESC, rowid DESC LIMIT {NEIGHBOUR_WINDOW}"
    )
});
/// See [`NEIGHBOURS_BEFORE`].
static NEIGHBOURS_AFTER: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT id, search_rowid, content FROM memory_metadata
         WHERE scope = ?1 AND scope_id IS ?2 AND source_kind = 'native' AND (created_at, rowid) > (?3, ?4)
         ORDER BY created_at ASC, rowid ASC LIMIT {NEIGHBOUR_WINDOW}"
    )
});

/// The neighbour relation: a row's neighbours are the up to [`NEIGHBOUR_WINDOW`] native rows of the same scope and
/// scope id created just before it and the up to [`NEIGHBOUR_WINDOW`] created just after it (`created_at`, then
/// insertion order: rows stored within one second keep the order they were stored in); their content joins the row's context field. Rows without `created_at` have none and are none.
/// `(id, search_rowid, content)` of the rows on `side` of `pos`, nearest first.
fn neighbours(tx: &Connection, pos: &Position, side: Side) -> rusqlite::Result<Vec<(String, Option<i64>, String)>> {
    if pos.created_at.is_none() {
        return Ok(Vec::new());
    }
    let sql = match side {
        Side::Before => NEIGHBOURS_BEFORE.as_str(),
        Side::After => NEIGHBOURS_AFTER.as_str(),
    };
    tx.prepare_cached(sql)?
        .query_map(params![pos.scope, pos.scope_id, pos.created_at, pos.seq], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get::<_, Option<String>>(2)?.unwrap_or_default()))
        })?
        .collect()
}

/// The contents of the neighbours of `pos` (see [`near_field`] for the order).
fn neighbour_texts(tx: &Connection, pos: &Position) -> rusqlite::Result<Vec<String>> {
    let mut out: Vec<String> = neighbours(tx, pos, Side::Before)?.into_iter().map(|n| n.2).collect();
    out.extend(neighbours(tx, pos, Side::After)?.into_iter().map(|n| n.2));
    Ok(out)
}

/// Which neighbour.
#[derive(Debug, Clone, Copy)]
enum Side {
    Before,
    After,
}

/// The stored position of row `id`.
fn position(tx: &Connection, id: &str) -> rusqlite::Result<Option<Position>> {
    tx.prepare_cached("SELECT scope, scope_id, created_at, \"key\", rowid FROM memory_metadata WHERE id = ?1")?
        .query_row([id], |r| {
            Ok(Position {
                scope: r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                scope_id: r.get(1)?,
                created_at: r.get(2)?,
                seq: r.get(4)?,
                key: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
            })
        })
        .optional()
}

/// Add the search entries of row `id` under `search_rowid`, from its stored key, tags, content, `updated_at` and its
/// neighbour's content (the row must have no entries yet).
fn index_row(tx: &Connection, id: &str, search_rowid: i64) -> rusqlite::Result<()> {
    let Some(pos) = position(tx, id)? else { return Ok(()) };
    let (tags, content, updated_at) = stored_text(tx, id)?;
    let around = neighbour_texts(tx, &pos)?;
    let text = SearchText {
        key: &pos.key,
        tags: &tags,
        content: &content,
        stored: updated_at,
        neighbours: around.iter().map(String::as_str).collect(),
        vault: false,
    };
    index_search(tx, search_rowid, &text)
}

/// `(tags, content, updated_at)` of row `id`.
fn stored_text(tx: &Connection, id: &str) -> rusqlite::Result<(String, String, DateTime<Utc>)> {
    tx.prepare_cached("SELECT tags, content, updated_at FROM memory_metadata WHERE id = ?1")?
        .query_row([id], |r| {
            Ok((
                r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                crate::row::ts_column(r, 2)?,
            ))
        })
}

/// Re-index the indexed rows within [`NEIGHBOUR_WINDOW`] before and after `pos` in creation order (a neighbour's
/// text changed, or which rows are their neighbours did).
fn refresh_neighbours(tx: &Connection, pos: &Position) -> rusqlite::Result<()> {
    for side in [Side::Before, Side::After] {
        for (id, s, _) in neighbours(tx, pos, side)? {
            if let Some(s) = s {
                reindex_near(tx, &id, s)?;
            }
        }
    }
    Ok(())
}

/// Re-index row `id` (search rowid `search_rowid`) after its neighbours changed. Only its `near` column can differ
/// (its own key, tags, content and day are as indexed), so the trigram document is left alone, the stored `near`
/// (not in FTS5's inverted index) is updated only when it changed, and only the terms that entered or left the document change their document
/// frequency: the same statistics as removing and adding the whole row, at a fraction of the writes (a store
/// re-indexes its neighbour every time). A row without search entries is indexed whole.
fn reindex_near(tx: &Connection, id: &str, search_rowid: i64) -> rusqlite::Result<()> {
    let old: Option<(String, String, String)> = tx
        .prepare_cached("SELECT body, meta, near FROM cao_memory_fts WHERE rowid = ?1")?
        .query_row([search_rowid], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    let Some((body, meta, old_near)) = old else {
        unindex_search(tx, search_rowid)?;
        return index_row(tx, id, search_rowid);
    };
    let Some(pos) = position(tx, id)? else {
        return Ok(());
    };
    let around = neighbour_texts(tx, &pos)?;
    let near = near_field(&around.iter().map(String::as_str).collect::<Vec<_>>());
    if near == old_near {
        return Ok(());
    }
    // `near` is not in FTS5's inverted index (migration 14), so this changes the stored document only.
    tx.prepare_cached("UPDATE cao_memory_fts SET near = ?2 WHERE rowid = ?1")?
        .execute(params![search_rowid, near])?;
    tx.prepare_cached("UPDATE cao_search_stats SET context_tokens = max(context_tokens - ?1 + ?2, 0) WHERE id = 1")?
        .execute([body_tokens(&old_near), body_tokens(&near)])?;
    let before = distinct_terms(&[&body, &meta, &old_near]);
    let after = distinct_terms(&[&body, &meta, &near]);
    let mut add = tx.prepare_cached(
        "INSERT INTO cao_search_terms (term, df) VALUES (?1, 1) ON CONFLICT (term) DO UPDATE SET df = df + 1",
    )?;
    for term in after.difference(&before) {
        add.execute([term])?;
    }
    let mut sub = tx.prepare_cached("UPDATE cao_search_terms SET df = df - 1 WHERE term = ?1")?;
    let mut drop_zero = tx.prepare_cached("DELETE FROM cao_search_terms WHERE term = ?1 AND df <= 0")?;
    for term in before.difference(&after) {
        sub.execute([term])?;
        drop_zero.execute([term])?;
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
            let s = update_existing(tx, row, &id, search_rowid, slot)?;
            index_row(tx, &id, s)?;
            if let Some(pos) = position(tx, &id)? {
                refresh_neighbours(tx, &pos)?;
            }
            UpsertOutcome { id, created: false }
        }
        None => {
            let s = insert_new(tx, row, slot)?;
            index_row(tx, &row.id, s)?;
            if let Some(pos) = position(tx, &row.id)? {
                refresh_neighbours(tx, &pos)?;
            }
            UpsertOutcome {
                id: row.id.clone(),
                created: true,
            }
        }
    };
    dirty::mark(tx, row.container().as_str())?;
    Ok(outcome)
}

/// Update the metadata row `id` (search rowid `search_rowid`) of an existing identity to `row` and remove its
/// search entries (the caller indexes it again): its vector is invalidated when the content changed (touched when
/// only the type did), and it keeps its search rowid when that lies in `slot`, else gets a new one there. Returns
/// the search rowid to index it under.
fn update_existing(tx: &Connection, row: &MemoryRow, id: &str, search_rowid: Option<i64>, slot: i64) -> Result<i64> {
    let (old_content, old_type): (String, String) = tx
        .prepare_cached("SELECT content, memory_type FROM memory_metadata WHERE id = ?1")?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    if old_content != row.content {
        crate::vectors::invalidate_in(tx, id)?;
    } else if old_type != row.memory_type.as_str() {
        crate::vectors::touch_in(tx, id)?;
    }
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
    Ok(s)
}

/// Insert the metadata row of a new identity (no search entries yet) under a search rowid allocated in `slot`;
/// returns that rowid.
fn insert_new(tx: &Connection, row: &MemoryRow, slot: i64) -> Result<i64> {
    if row.id.is_empty() {
        return Err(IndexError::Invalid(format!(
            "empty row id for new memory {:?}",
            row.key.as_str()
        )));
    }
    let key = row.key.as_str();
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
    Ok(s)
}

/// [`upsert_in`] for many rows (none twice): the same final rows, search entries and term statistics as upserting
/// them one by one, with each row's search entries written once and the term statistics summed over the batch
/// ([`StatsDelta`]). Every metadata row is inserted or updated first (an existing identity's old search entries
/// removed), then each is indexed with its final neighbours, then the rows outside the batch whose neighbours
/// changed get their context field refreshed, once each. Upserting one by one would index each row with the
/// neighbours of the moment and re-index each of its four neighbours at every upsert (the cost of a first open of
/// a home the reference wrote, whose rows exist but were never indexed). `None` (nothing written) when a row
/// appears twice: the caller upserts one by one.
///
/// Errors: as [`upsert_in`].
pub(crate) fn upsert_many_in(tx: &Transaction<'_>, rows: &[&MemoryRow]) -> Result<Option<Vec<UpsertOutcome>>> {
    let mut seen = std::collections::HashSet::with_capacity(rows.len());
    if !rows
        .iter()
        .all(|row| seen.insert((row.scope, row.scope_id.as_deref(), row.key.as_str())))
    {
        return Ok(None);
    }
    let mut placed = Vec::with_capacity(rows.len());
    let mut outcomes = Vec::with_capacity(rows.len());
    for row in rows {
        let part = partition::ensure(tx, row.scope, row.scope_id.as_deref())?;
        let slot = partition::slot(part, row.memory_type);
        match find_identity(tx, row.scope, row.scope_id.as_deref(), row.key.as_str())? {
            Some((id, search_rowid)) => {
                let s = update_existing(tx, row, &id, search_rowid, slot)?;
                placed.push((id.clone(), s));
                outcomes.push(UpsertOutcome { id, created: false });
            }
            None => {
                let s = insert_new(tx, row, slot)?;
                placed.push((row.id.clone(), s));
                outcomes.push(UpsertOutcome {
                    id: row.id.clone(),
                    created: true,
                });
            }
        }
        dirty::mark(tx, row.container().as_str())?;
    }
    let batch: std::collections::HashSet<&str> = placed.iter().map(|(id, _)| id.as_str()).collect();
    let mut outside = std::collections::BTreeMap::new();
    let mut stats = StatsDelta::default();
    // The first NEIGHBOUR_TERMS_MAX indexed terms of each row met, by id: each text is stemmed once for the batch
    // instead of once as the row and once more for each of its four neighbours.
    let mut lead_terms: std::collections::HashMap<String, Vec<String>> = std::collections::HashMap::new();
    for (id, s) in &placed {
        let Some(pos) = position(tx, id)? else { continue };
        let (tags, content, updated_at) = stored_text(tx, id)?;
        let mut near_terms: Vec<String> = Vec::new();
        for side in [Side::Before, Side::After] {
            for (n, ns, text) in neighbours(tx, &pos, side)? {
                let terms = lead_terms
                    .entry(n.clone())
                    .or_insert_with(|| cao_core::text::index_terms(&text).take(NEIGHBOUR_TERMS_MAX).collect());
                near_terms.extend(terms.iter().cloned());
                if let Some(ns) = ns
                    && !batch.contains(n.as_str())
                {
                    outside.insert(n, ns);
                }
            }
        }
        let text = SearchText {
            key: &pos.key,
            tags: &tags,
            content: &content,
            stored: updated_at,
            neighbours: Vec::new(),
            vault: false,
        };
        let body = index_search_with(tx, *s, &text, Some(&near_terms.join(" ")), Some(&mut stats))?;
        lead_terms.entry(id.clone()).or_insert_with(|| {
            body.split(' ')
                .filter(|t| !t.is_empty())
                .take(NEIGHBOUR_TERMS_MAX)
                .map(str::to_owned)
                .collect()
        });
    }
    stats.flush(tx)?;
    for (id, s) in outside {
        reindex_near(tx, &id, s)?;
    }
    Ok(Some(outcomes))
}

/// The body of [`Index::delete`] inside an open write transaction: whether a row existed. The deleted key is
/// also dropped from the `related_keys` of the rows of its scope and scope id that name it
/// ([`drop_related_key_in`]), in the same transaction.
pub(crate) fn delete_in(tx: &Connection, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<bool> {
    let Some((id, search_rowid)) = find_identity(tx, scope, scope_id, key.as_str())? else {
        return Ok(false);
    };
    delete_row(tx, &id, search_rowid, true)?;
    drop_related_key_in(tx, scope, scope_id, key.as_str())?;
    dirty::mark(tx, Container::of(scope, scope_id).as_str())?;
    Ok(true)
}

/// Remove `key` from the `related_keys` csv of every row of `scope`/`scope_id` naming it, once no row of that
/// scope and scope id has the key any more (a related key names a memory of the same scope and scope id, spec
/// reference-facts "Compiler"; one naming a missing memory is a lint `stale_claim`). The csv keeps the order of
/// the other keys; a csv left empty becomes `""` ("computed, none found"), never NULL. Returns how many rows
/// changed. One statement over the container's rows (`idx_memory_scope`); only the rows naming the key are
/// written.
///
/// Errors: SQLite errors.
pub(crate) fn drop_related_key_in(tx: &Connection, scope: Scope, scope_id: Option<&str>, key: &str) -> Result<usize> {
    Ok(tx
        .prepare_cached(
            "UPDATE memory_metadata
             SET related_keys = trim(replace(',' || related_keys || ',', ',' || ?1 || ',', ','), ',')
             WHERE scope = ?2 AND scope_id IS ?3 AND related_keys IS NOT NULL
               AND instr(',' || related_keys || ',', ',' || ?1 || ',') > 0
               AND NOT EXISTS (SELECT 1 FROM memory_metadata m
                               WHERE m.\"key\" = ?1 AND m.scope = ?2 AND m.scope_id IS ?3)",
        )?
        .execute(params![key, scope.as_str(), scope_id])?)
}

/// The body of [`Index::set_related_keys`] inside an open write transaction (the length check included).
pub(crate) fn set_related_keys_in(
    tx: &Connection,
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
    let n = tx
        .prepare_cached(
            "UPDATE memory_metadata SET related_keys = ?1
             WHERE \"key\" = ?2 AND scope = ?3 AND scope_id IS ?4 AND source_kind = 'native'",
        )?
        .execute(params![related_keys, key.as_str(), scope.as_str(), scope_id])?;
    Ok(n > 0)
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
                // The whole scope goes: no neighbour is left to refresh.
                delete_row(tx, id, *search_rowid, false)?;
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
        self.write(|tx| set_related_keys_in(tx, scope, scope_id, key, related_keys))
    }

    /// Set `related_keys` of many native rows in one transaction (a bulk writer's related-memory pass), each
    /// `(memory, updated_at, value)` only while the row is still at that `updated_at`: a row stored again meanwhile
    /// keeps its value (its own pass sets it). Returns how many rows changed.
    ///
    /// Errors: [`IndexError::Invalid`] when a value is 1024 bytes or longer (nothing written);
    /// [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn set_related_keys_many(&self, items: &[(MemoryRef, DateTime<Utc>, String)]) -> Result<usize> {
        if let Some((m, _, v)) = items.iter().find(|(_, _, v)| v.len() >= 1024) {
            return Err(IndexError::Invalid(format!(
                "related_keys of {:?} is {} bytes; the limit is 1023",
                m.key.as_str(),
                v.len()
            )));
        }
        self.write(|tx| {
            let mut stmt = tx.prepare_cached(
                "UPDATE memory_metadata SET related_keys = ?1
                 WHERE \"key\" = ?2 AND scope = ?3 AND scope_id IS ?4 AND source_kind = 'native' AND updated_at = ?5
                     AND related_keys IS NOT ?1",
            )?;
            let mut n = 0;
            for (m, at, value) in items {
                n += stmt.execute(params![
                    value,
                    m.key.as_str(),
                    m.scope.as_str(),
                    m.scope_id(),
                    format_db_ts(*at)
                ])?;
            }
            Ok(n)
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

    /// Re-tokenise every native row from its stored `key`, `tags`, `content` and `updated_at` into fresh FTS
    /// tables (renumbering every `search_rowid`, and indexing rows that lacked one, such as rows only the reference
    /// wrote; rows with an unknown scope or type stay unindexed), each with its neighbours' content (the rows created
    /// just before and after it in its scope and scope id). One transaction; returns the number of rows indexed. Used by repair.
    /// Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn rebuild_search_index(&self) -> Result<usize> {
        self.write(|tx| rebuild_in(tx, Rebuild::Every))
    }
}

/// Which rows [`rebuild_in`] indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rebuild {
    /// Every native row of a known scope and type.
    Every,
    /// Only the rows that were indexed before (a schema change of the search tables; rows only the reference wrote
    /// stay unindexed until repaired).
    Indexed,
}

/// The body of [`Index::rebuild_search_index`] inside an open write transaction (also run, with
/// [`Rebuild::Indexed`], by the migration that introduced the two-field lexical document).
pub(crate) fn rebuild_in(tx: &Connection, which: Rebuild) -> Result<usize> {
    let filter = match which {
        Rebuild::Every => "",
        Rebuild::Indexed => " AND search_rowid IS NOT NULL",
    };
    let rows: Vec<StoredText> = tx
        .prepare(&format!(
            "SELECT id, \"key\", tags, content, scope, scope_id, memory_type, updated_at, created_at, source_kind
             FROM memory_metadata WHERE source_kind IN ('native', 'vault'){filter} ORDER BY rowid"
        ))?
        .query_map([], |r| {
            let text =
                |i: usize| -> rusqlite::Result<String> { Ok(r.get::<_, Option<String>>(i)?.unwrap_or_default()) };
            Ok(StoredText {
                id: text(0)?,
                key: text(1)?,
                tags: text(2)?,
                content: text(3)?,
                scope: text(4)?,
                scope_id: r.get(5)?,
                memory_type: text(6)?,
                updated_at: crate::row::ts_column(r, 7)?,
                created_at: r.get(8)?,
                vault: text(9)? == "vault",
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    tx.execute_batch(
        "DELETE FROM cao_memory_fts;
         INSERT INTO cao_memory_trigram (cao_memory_trigram) VALUES ('delete-all');
         UPDATE cao_search_stats SET docs = 0, tokens = 0, context_tokens = 0 WHERE id = 1;
         DELETE FROM cao_search_terms;
         UPDATE memory_metadata SET search_rowid = NULL WHERE search_rowid IS NOT NULL;
         DELETE FROM cao_search_partitions;",
    )?;
    // Neighbours: the rows within NEIGHBOUR_WINDOW before and after each one in its (scope, scope_id) by
    // (created_at, rowid), as stored (`rows` is in rowid order and the sort is stable); rows without a created_at
    // have none and are none (the SQL comparison of `neighbours` with NULL).
    // Vault rows have no neighbours and are none.
    let mut order: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].created_at.is_some() && !rows[i].vault)
        .collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&rows[a], &rows[b]);
        (&x.scope, &x.scope_id, &x.created_at).cmp(&(&y.scope, &y.scope_id, &y.created_at))
    });
    let same_stream = |a: usize, b: usize| rows[a].scope == rows[b].scope && rows[a].scope_id == rows[b].scope_id;
    let mut around: Vec<Vec<&str>> = vec![Vec::new(); rows.len()];
    for (p, &i) in order.iter().enumerate() {
        let before = (1..=NEIGHBOUR_WINDOW)
            .map_while(|d| p.checked_sub(d).map(|q| order[q]))
            .take_while(|&j| same_stream(i, j));
        let after = (1..=NEIGHBOUR_WINDOW)
            .map_while(|d| order.get(p + d).copied())
            .take_while(|&j| same_stream(i, j));
        around[i] = before.chain(after).map(|j| rows[j].content.as_str()).collect();
    }
    let mut indexed = 0;
    let mut stats = StatsDelta::default();
    for (i, r) in rows.iter().enumerate() {
        // Rows whose scope or type we do not know stay unindexed (see `Index::invalid_rows`).
        let (Ok(scope), Ok(memory_type)) = (r.scope.parse::<Scope>(), r.memory_type.parse::<MemoryType>()) else {
            continue;
        };
        let part = if r.vault {
            partition::ensure_vault(tx, scope, r.scope_id.as_deref())?
        } else {
            partition::ensure(tx, scope, r.scope_id.as_deref())?
        };
        let s = partition::allocate(tx, partition::slot(part, memory_type))?;
        tx.prepare_cached("UPDATE memory_metadata SET search_rowid = ?1 WHERE id = ?2")?
            .execute(params![s, r.id])?;
        let text = SearchText {
            key: &r.key,
            tags: &r.tags,
            content: &r.content,
            stored: r.updated_at,
            neighbours: std::mem::take(&mut around[i]),
            vault: r.vault,
        };
        index_search_with(tx, s, &text, None, Some(&mut stats))?;
        indexed += 1;
    }
    stats.flush(tx)?;
    Ok(indexed)
}

/// A stored row as read for a rebuild.
struct StoredText {
    id: String,
    key: String,
    tags: String,
    content: String,
    scope: String,
    scope_id: Option<String>,
    memory_type: String,
    updated_at: DateTime<Utc>,
    created_at: Option<String>,
    /// A vault row (`source_kind = 'vault'`).
    vault: bool,
}

/// Delete row `id` and its search entries; with `refresh`, re-index the rows whose neighbour it was.
fn delete_row(tx: &Connection, id: &str, search_rowid: Option<i64>, refresh: bool) -> rusqlite::Result<()> {
    let pos = if refresh { position(tx, id)? } else { None };
    if let Some(s) = search_rowid {
        unindex_search(tx, s)?;
    }
    tx.prepare_cached("DELETE FROM memory_metadata WHERE id = ?1")?
        .execute([id])?;
    crate::vectors::remove_in(tx, id)?;
    if let Some(pos) = pos {
        refresh_neighbours(tx, &pos)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_use_stemmed_reference_tokens_without_stop_words() {
        assert_eq!(content_field("Use the PyTest_fixtures!"), "use pytest fixtur");
        let at = chrono::TimeZone::with_ymd_and_hms(&Utc, 2023, 5, 8, 13, 56, 0)
            .single()
            .expect("valid");
        assert_eq!(
            meta_field("prefer-pytest", "testing,python", at),
            "prefer pytest test python 8 may 2023"
        );
        assert_eq!(near_field(&["We painted a sunrise", "Lovely!"]), "paint sunris love");
        let long = "word ".repeat(NEIGHBOUR_TERMS_MAX + 10);
        assert_eq!(body_tokens(&meta_field("k", "", at)), 4);
        assert_eq!(
            body_tokens(&near_field(&[&long, &long, &long])),
            3 * NEIGHBOUR_TERMS_MAX as i64
        );
        assert_eq!(trigram_body("k", "", "ÄB c"), "k  äb c");
    }

    #[test]
    fn the_neighbour_lookup_is_planned_once() {
        let d = tempfile::tempdir().expect("tempdir");
        let path = d.path().join("x.db");
        drop(crate::Index::open(&path).expect("open"));
        let conn = Connection::open(&path).expect("raw");
        for i in 0..5 {
            let pos = Position {
                scope: "project".to_owned(),
                scope_id: Some("p".to_owned()),
                created_at: Some(format!("2026-01-0{} 00:00:00", i + 1)),
                seq: i,
                key: format!("k{i}"),
            };
            neighbours(&conn, &pos, Side::Before).expect("before");
            neighbours(&conn, &pos, Side::After).expect("after");
        }
        for side in [NEIGHBOURS_BEFORE.as_str(), NEIGHBOURS_AFTER.as_str()] {
            let stmt = conn.prepare_cached(side).expect("cached");
            assert_eq!(stmt.get_status(rusqlite::StatementStatus::RePrepare), 0, "{side}");
            assert_eq!(
                stmt.get_status(rusqlite::StatementStatus::Run),
                5,
                "the cached statement ran: {side}"
            );
        }
    }
}
