//! The memory rows of the PostgreSQL backend: decoding, visibility as SQL, the write path (a row, its lexical
//! document, postings and term statistics, its neighbours' documents, its search rowid in its partition, its vector
//! state) and the row reads (lookups, listings, the recency, usage and metadata pools, counts).
//!
//! Every rule is the embedded index's (cao-index `write.rs`, `search.rs`, `partition.rs`), statement for statement,
//! so both backends hold the same documents, statistics and search rowids for the same sequence of writes, and
//! every order is the same (text columns are `COLLATE "C"`, `''` stands for "no scope id").

use super::db::{Param, Result, Sql, col};
use crate::error::StoreError;
use cao_core::{Key, MemoryType, Scope};
use cao_index::partition::{PARTITION_MAX, next_in_slot, scope_id_key, slot, slot_bounds, slot_of};
use cao_index::{
    ListFilter, MemoryRow, NEIGHBOUR_WINDOW, RecencyCursor, RowColumns, Visibility, body_tokens, content_field,
    decode_columns, distinct_terms, format_db_ts, format_db_ts_secs, meta_field, near_field, parse_db_ts, trigram_body,
};
use chrono::{DateTime, Utc};
use postgres::Row;
use postgres::types::ToSql;

/// Columns selected by every row query, in [`decode_row`] order (`m` is the table alias).
pub(crate) const ROW_COLUMNS: &str = "m.id, m.\"key\", m.memory_type, m.scope, m.scope_id, m.source_kind, \
     m.file_path, m.tags, m.source_provider, m.source_terminal_id, m.token_estimate, m.created_at, m.updated_at, \
     m.access_count, m.last_accessed_at, m.last_compiled_at, m.related_keys, m.content, m.entry_count";

/// Newest first, then key, scope and scope id (the embedded index's recency order).
pub(crate) const RECENCY_ORDER: &str = "m.updated_at DESC, m.\"key\" ASC, m.scope ASC, m.scope_id ASC";
/// The recency order reversed.
const RECENCY_ORDER_REVERSED: &str = "m.updated_at ASC, m.\"key\" DESC, m.scope DESC, m.scope_id DESC";
/// The usage order (spec/reference-facts.md "Ranking").
const USAGE_ORDER: &str = "m.access_count DESC, m.updated_at DESC, m.\"key\" ASC, m.scope ASC, m.scope_id ASC";

/// The stored scope id of `scope_id` (`''` for none).
pub(crate) fn sid(scope_id: Option<&str>) -> &str {
    scope_id.unwrap_or("")
}

/// A stored scope id read back (`''` is none).
pub(crate) fn unsid(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

/// Bound parameters of a statement built piece by piece.
#[derive(Default)]
pub(crate) struct Args(Vec<Box<dyn ToSql + Sync>>);

impl Args {
    /// Bind `v`; its placeholder (`$n`).
    pub(crate) fn push<T: ToSql + Sync + 'static>(&mut self, v: T) -> String {
        self.0.push(Box::new(v));
        format!("${}", self.0.len())
    }

    /// The parameters, for [`Sql::query`].
    pub(crate) fn refs(&self) -> Vec<Param<'_>> {
        self.0.iter().map(|b| &**b as Param<'_>).collect()
    }
}

/// The OR condition over table alias `m` of what `vis` allows (`false` when nothing).
pub(crate) fn vis_sql(vis: &Visibility, args: &mut Args) -> String {
    let parts: Vec<String> = vis
        .slices()
        .map(|(scope, id)| match id {
            None => format!("m.scope = {}", args.push(scope.as_str().to_owned())),
            Some(id) => format!(
                "(m.scope = {} AND m.scope_id = {})",
                args.push(scope.as_str().to_owned()),
                args.push(sid(id).to_owned())
            ),
        })
        .collect();
    if parts.is_empty() {
        "false".to_owned()
    } else {
        format!("({})", parts.join(" OR "))
    }
}

/// ` AND m.memory_type = $n` when a type is given.
pub(crate) fn type_sql(memory_type: Option<MemoryType>, args: &mut Args) -> String {
    match memory_type {
        Some(t) => format!(" AND m.memory_type = {}", args.push(t.as_str().to_owned())),
        None => String::new(),
    }
}

/// The columns of a row selected with [`ROW_COLUMNS`] from column `base`, as cao-index's [`decode_columns`] reads
/// them: the stored `''` scope id is none, and there is no file stamp (no files).
struct PgColumns<'r> {
    r: &'r Row,
    base: usize,
}

impl RowColumns for PgColumns<'_> {
    type Error = StoreError;

    fn text(&self, i: usize) -> Result<Option<String>> {
        match i {
            4 => Ok(col::<Option<String>>(self.r, self.base + 4)?.and_then(unsid)),
            0..=18 => col(self.r, self.base + i),
            _ => Ok(None),
        }
    }

    fn int(&self, i: usize) -> Result<Option<i64>> {
        match i {
            0..=18 => col(self.r, self.base + i),
            _ => Ok(None),
        }
    }
}

/// Decode a row selected with [`ROW_COLUMNS`] from column `base` by cao-index's rules ([`decode_columns`]); `None`
/// when it holds values this version cannot represent (an unknown scope or type, an invalid key), which every read
/// skips as the embedded index does.
pub(crate) fn decode_row(r: &Row, base: usize) -> Result<Option<MemoryRow>> {
    Ok(decode_columns(&PgColumns { r, base })?.ok())
}

/// The decodable rows of a row query.
pub(crate) fn rows_of(sql: &mut Sql<'_>, text: &str, args: &[Param<'_>]) -> Result<Vec<MemoryRow>> {
    let mut out = Vec::new();
    for r in sql.query(text, args)? {
        if let Some(row) = decode_row(&r, 0)? {
            out.push(row);
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------------------------
// Search rowids: cao-index's layout (`cao_index::partition`), `((partition * 4 + type_index) << 32) | seq`.

/// The partition of `(scope, scope_id)`, allocated when missing.
fn partition(sql: &mut Sql<'_>, scope: Scope, scope_id: Option<&str>) -> Result<i64> {
    let key = scope_id_key(scope_id);
    if let Some(r) = sql.opt(
        "SELECT id FROM cao_search_partitions WHERE scope = $1 AND scope_id_key = $2",
        &[&scope.as_str(), &key],
    )? {
        return col(&r, 0);
    }
    let r = sql.one(
        "INSERT INTO cao_search_partitions (id, scope, scope_id_key)
         VALUES ((SELECT coalesce(max(id), 0) + 1 FROM cao_search_partitions), $1, $2) RETURNING id",
        &[&scope.as_str(), &key],
    )?;
    let id: i64 = col(&r, 0)?;
    if id > PARTITION_MAX {
        return Err(StoreError::Invalid(format!(
            "more than {PARTITION_MAX} distinct (scope, scope_id) pairs were ever indexed"
        )));
    }
    Ok(id)
}

/// A new search rowid in `slot`: the slot's largest + 1 (cao-index's [`next_in_slot`]).
fn allocate(sql: &mut Sql<'_>, slot: i64) -> Result<i64> {
    let (lo, hi) = slot_bounds(slot);
    let r = sql.one(
        "SELECT max(search_rowid) FROM memory_metadata WHERE search_rowid BETWEEN $1 AND $2",
        &[&lo, &hi],
    )?;
    next_in_slot(slot, col::<Option<i64>>(&r, 0)?)
        .ok_or_else(|| StoreError::Invalid(format!("search rowids of slot {slot} are exhausted")))
}

// ---------------------------------------------------------------------------------------------------------------
// Lexical documents.

/// What a row's search entries are made of.
struct SearchText<'a> {
    key: &'a str,
    tags: &'a str,
    content: &'a str,
    stored: DateTime<Utc>,
    neighbours: Vec<&'a str>,
}

/// The terms of a document's own text (`body` and `meta`): its postings.
fn own_terms(body: &str, meta: &str) -> Vec<String> {
    distinct_terms(&[body, meta]).into_iter().map(str::to_owned).collect()
}

fn terms_vec(set: std::collections::BTreeSet<&str>) -> Vec<String> {
    set.into_iter().map(str::to_owned).collect()
}

fn df_add(sql: &mut Sql<'_>, terms: Vec<String>) -> Result<()> {
    if !terms.is_empty() {
        sql.exec(
            "INSERT INTO cao_search_terms (term, df) SELECT t, 1 FROM unnest($1::text[]) AS t
             ON CONFLICT (term) DO UPDATE SET df = cao_search_terms.df + 1",
            &[&terms],
        )?;
    }
    Ok(())
}

fn df_sub(sql: &mut Sql<'_>, terms: Vec<String>) -> Result<()> {
    if !terms.is_empty() {
        sql.exec(
            "UPDATE cao_search_terms SET df = df - 1 WHERE term = ANY($1::text[])",
            &[&terms],
        )?;
        sql.exec(
            "DELETE FROM cao_search_terms WHERE term = ANY($1::text[]) AND df <= 0",
            &[&terms],
        )?;
    }
    Ok(())
}

/// Add a row's document under `search_rowid` and count it in the term statistics.
fn index_search(sql: &mut Sql<'_>, search_rowid: i64, text: &SearchText<'_>) -> Result<()> {
    let body = content_field(text.content);
    let meta = meta_field(text.key, text.tags, text.stored);
    let near = near_field(&text.neighbours);
    let haystack = trigram_body(text.key, text.tags, text.content);
    sql.exec(
        "INSERT INTO cao_search_docs (search_rowid, body, meta, near, haystack) VALUES ($1, $2, $3, $4, $5)",
        &[&search_rowid, &body, &meta, &near, &haystack],
    )?;
    let own = own_terms(&body, &meta);
    if !own.is_empty() {
        sql.exec(
            "INSERT INTO cao_search_postings (term, search_rowid) SELECT t, $2 FROM unnest($1::text[]) AS t",
            &[&own, &search_rowid],
        )?;
    }
    sql.exec(
        "UPDATE cao_search_stats SET docs = docs + 1, tokens = tokens + $1, context_tokens = context_tokens + $2
         WHERE id = 1",
        &[&body_tokens(&body), &(body_tokens(&meta) + body_tokens(&near))],
    )?;
    df_add(sql, terms_vec(distinct_terms(&[&body, &meta, &near])))
}

/// Remove a row's document and uncount it.
fn unindex_search(sql: &mut Sql<'_>, search_rowid: i64) -> Result<()> {
    let old = sql.opt(
        "DELETE FROM cao_search_docs WHERE search_rowid = $1 RETURNING body, meta, near",
        &[&search_rowid],
    )?;
    sql.exec(
        "DELETE FROM cao_search_postings WHERE search_rowid = $1",
        &[&search_rowid],
    )?;
    if let Some(r) = old {
        let (body, meta, near): (String, String, String) = (col(&r, 0)?, col(&r, 1)?, col(&r, 2)?);
        sql.exec(
            "UPDATE cao_search_stats SET docs = greatest(docs - 1, 0), tokens = greatest(tokens - $1, 0),
                 context_tokens = greatest(context_tokens - $2, 0)
             WHERE id = 1",
            &[&body_tokens(&body), &(body_tokens(&meta) + body_tokens(&near))],
        )?;
        df_sub(sql, terms_vec(distinct_terms(&[&body, &meta, &near])))?;
    }
    Ok(())
}

/// Where a row stands in its scope's creation order.
struct Position {
    scope: String,
    scope_id: String,
    created_at: Option<String>,
    seq: i64,
    key: String,
}

#[derive(Debug, Clone, Copy)]
enum Side {
    Before,
    After,
}

/// `(id, search_rowid, content)` of the up to [`NEIGHBOUR_WINDOW`] native rows on `side` of `pos` in its scope and
/// scope id (creation time, then insertion order), nearest first.
fn neighbours(sql: &mut Sql<'_>, pos: &Position, side: Side) -> Result<Vec<(String, Option<i64>, String)>> {
    let Some(created) = &pos.created_at else {
        return Ok(Vec::new());
    };
    let window = NEIGHBOUR_WINDOW as i64;
    let text = match side {
        Side::Before => {
            "SELECT id, search_rowid, content FROM memory_metadata
             WHERE scope = $1 AND scope_id = $2 AND source_kind = 'native' AND (created_at, seq) < ($3, $4)
             ORDER BY created_at DESC, seq DESC LIMIT $5"
        }
        Side::After => {
            "SELECT id, search_rowid, content FROM memory_metadata
             WHERE scope = $1 AND scope_id = $2 AND source_kind = 'native' AND (created_at, seq) > ($3, $4)
             ORDER BY created_at ASC, seq ASC LIMIT $5"
        }
    };
    sql.query(text, &[&pos.scope, &pos.scope_id, created, &pos.seq, &window])?
        .iter()
        .map(|r| Ok((col(r, 0)?, col(r, 1)?, col::<Option<String>>(r, 2)?.unwrap_or_default())))
        .collect()
}

fn neighbour_texts(sql: &mut Sql<'_>, pos: &Position) -> Result<Vec<String>> {
    let mut out: Vec<String> = neighbours(sql, pos, Side::Before)?.into_iter().map(|n| n.2).collect();
    out.extend(neighbours(sql, pos, Side::After)?.into_iter().map(|n| n.2));
    Ok(out)
}

fn position(sql: &mut Sql<'_>, id: &str) -> Result<Option<Position>> {
    let Some(r) = sql.opt(
        "SELECT scope, scope_id, created_at, \"key\", seq FROM memory_metadata WHERE id = $1",
        &[&id],
    )?
    else {
        return Ok(None);
    };
    Ok(Some(Position {
        scope: col(&r, 0)?,
        scope_id: col(&r, 1)?,
        created_at: col(&r, 2)?,
        key: col(&r, 3)?,
        seq: col(&r, 4)?,
    }))
}

/// Add the document of row `id` under `search_rowid` from its stored fields and its neighbours.
fn index_row(sql: &mut Sql<'_>, id: &str, search_rowid: i64) -> Result<()> {
    let Some(pos) = position(sql, id)? else { return Ok(()) };
    let r = sql.one(
        "SELECT tags, content, updated_at FROM memory_metadata WHERE id = $1",
        &[&id],
    )?;
    let tags: String = col::<Option<String>>(&r, 0)?.unwrap_or_default();
    let content: String = col::<Option<String>>(&r, 1)?.unwrap_or_default();
    let updated_at = col::<Option<String>>(&r, 2)?
        .as_deref()
        .and_then(parse_db_ts)
        .unwrap_or(DateTime::UNIX_EPOCH);
    let around = neighbour_texts(sql, &pos)?;
    let text = SearchText {
        key: &pos.key,
        tags: &tags,
        content: &content,
        stored: updated_at,
        neighbours: around.iter().map(String::as_str).collect(),
    };
    index_search(sql, search_rowid, &text)
}

/// Re-index the neighbours' `near` fields of the rows around `pos`.
fn refresh_neighbours(sql: &mut Sql<'_>, pos: &Position) -> Result<()> {
    for side in [Side::Before, Side::After] {
        for (id, s, _) in neighbours(sql, pos, side)? {
            if let Some(s) = s {
                reindex_near(sql, &id, s)?;
            }
        }
    }
    Ok(())
}

/// Re-index row `id`'s `near` field after its neighbours changed (only the terms that entered or left the document
/// change their document frequency; the postings, own text only, do not change).
fn reindex_near(sql: &mut Sql<'_>, id: &str, search_rowid: i64) -> Result<()> {
    let old = sql.opt(
        "SELECT body, meta, near FROM cao_search_docs WHERE search_rowid = $1",
        &[&search_rowid],
    )?;
    let Some(old) = old else {
        unindex_search(sql, search_rowid)?;
        return index_row(sql, id, search_rowid);
    };
    let (body, meta, old_near): (String, String, String) = (col(&old, 0)?, col(&old, 1)?, col(&old, 2)?);
    let Some(pos) = position(sql, id)? else {
        return Ok(());
    };
    let around = neighbour_texts(sql, &pos)?;
    let near = near_field(&around.iter().map(String::as_str).collect::<Vec<_>>());
    if near == old_near {
        return Ok(());
    }
    sql.exec(
        "UPDATE cao_search_docs SET near = $2 WHERE search_rowid = $1",
        &[&search_rowid, &near],
    )?;
    sql.exec(
        "UPDATE cao_search_stats SET context_tokens = greatest(context_tokens - $1 + $2, 0) WHERE id = 1",
        &[&body_tokens(&old_near), &body_tokens(&near)],
    )?;
    let before = distinct_terms(&[&body, &meta, &old_near]);
    let after = distinct_terms(&[&body, &meta, &near]);
    df_add(sql, after.difference(&before).map(|t| (*t).to_owned()).collect())?;
    df_sub(sql, before.difference(&after).map(|t| (*t).to_owned()).collect())
}

/// `(id, search_rowid)` of the native row with this identity.
pub(crate) fn find_identity(
    sql: &mut Sql<'_>,
    scope: Scope,
    scope_id: Option<&str>,
    key: &str,
) -> Result<Option<(String, Option<i64>)>> {
    match sql.opt(
        "SELECT id, search_rowid FROM memory_metadata
         WHERE \"key\" = $1 AND scope = $2 AND scope_id = $3 AND source_kind = 'native'",
        &[&key, &scope.as_str(), &sid(scope_id)],
    )? {
        Some(r) => Ok(Some((col(&r, 0)?, col(&r, 1)?))),
        None => Ok(None),
    }
}

/// Reject a `related_keys` value of 1024 bytes or more (the reference's CHECK).
pub(crate) fn check_related_keys(key: &str, related_keys: Option<&str>) -> Result<()> {
    if related_keys.is_some_and(|r| r.len() >= 1024) {
        return Err(StoreError::Invalid(format!(
            "related_keys of {key:?} is {} bytes; the limit is 1023",
            related_keys.map_or(0, str::len)
        )));
    }
    Ok(())
}

/// What an upsert did: the row id and whether it was created.
pub(crate) struct Upserted {
    pub(crate) id: String,
}

/// Insert or update the native row of `row`'s identity with its topic text, and re-index it and its neighbours (the
/// embedded index's `upsert_in`: on update the id, creation time and access state are kept, `last_compiled_at` and
/// `related_keys` only overwritten when `Some`).
pub(crate) fn upsert_in(sql: &mut Sql<'_>, row: &MemoryRow, topic: &str) -> Result<Upserted> {
    check_related_keys(row.key.as_str(), row.related_keys.as_deref())?;
    let existing = find_identity(sql, row.scope, row.scope_id.as_deref(), row.key.as_str())?;
    let part = partition(sql, row.scope, row.scope_id.as_deref())?;
    let slot = slot(part, row.memory_type);
    let out = match existing {
        Some((id, search_rowid)) => {
            let r = sql.one("SELECT content, memory_type FROM memory_metadata WHERE id = $1", &[&id])?;
            let (old_content, old_type): (String, String) = (col(&r, 0)?, col(&r, 1)?);
            if old_content != row.content {
                vector_invalidate(sql, &id)?;
            } else if old_type != row.memory_type.as_str() {
                vector_touch(sql, &id)?;
            }
            if let Some(s) = search_rowid {
                unindex_search(sql, s)?;
            }
            let s = match search_rowid {
                Some(s) if slot_of(s) == slot => s,
                _ => allocate(sql, slot)?,
            };
            let compiled = row.last_compiled_at.map(format_db_ts);
            sql.exec(
                "UPDATE memory_metadata SET memory_type = $1, tags = $2, file_path = $3, source_provider = $4,
                     source_terminal_id = $5, token_estimate = $6, updated_at = $7,
                     last_compiled_at = coalesce($8, last_compiled_at),
                     related_keys = coalesce($9, related_keys), content = $10, entry_count = $11,
                     search_rowid = $12, topic = $14
                 WHERE id = $13",
                &[
                    &row.memory_type.as_str(),
                    &row.tags,
                    &row.file_path,
                    &row.source_provider,
                    &row.source_terminal_id,
                    &row.token_estimate,
                    &format_db_ts(row.updated_at),
                    &compiled,
                    &row.related_keys,
                    &row.content,
                    &row.entry_count,
                    &s,
                    &id,
                    &topic,
                ],
            )?;
            index_row(sql, &id, s)?;
            if let Some(pos) = position(sql, &id)? {
                refresh_neighbours(sql, &pos)?;
            }
            Upserted { id }
        }
        None => {
            let s = insert_new(sql, row, slot, topic)?;
            index_row(sql, &row.id, s)?;
            if let Some(pos) = position(sql, &row.id)? {
                refresh_neighbours(sql, &pos)?;
            }
            Upserted { id: row.id.clone() }
        }
    };
    Ok(out)
}

/// Insert the row of a new identity under a search rowid of `slot`; returns that rowid.
fn insert_new(sql: &mut Sql<'_>, row: &MemoryRow, slot: i64, topic: &str) -> Result<i64> {
    if row.id.is_empty() {
        return Err(StoreError::Invalid(format!(
            "empty row id for new memory {:?}",
            row.key.as_str()
        )));
    }
    let s = allocate(sql, slot)?;
    sql.exec(
        "INSERT INTO memory_metadata (id, \"key\", memory_type, scope, scope_id, source_kind, file_path, tags,
             source_provider, source_terminal_id, token_estimate, created_at, updated_at, access_count,
             last_accessed_at, last_compiled_at, related_keys, content, entry_count, search_rowid, topic)
         VALUES ($1, $2, $3, $4, $5, 'native', $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)",
        &[
            &row.id,
            &row.key.as_str(),
            &row.memory_type.as_str(),
            &row.scope.as_str(),
            &sid(row.scope_id.as_deref()),
            &row.file_path,
            &row.tags,
            &row.source_provider,
            &row.source_terminal_id,
            &row.token_estimate,
            &format_db_ts(row.created_at),
            &format_db_ts(row.updated_at),
            &row.access_count,
            &row.last_accessed_at.map(format_db_ts_secs),
            &row.last_compiled_at.map(format_db_ts),
            &row.related_keys,
            &row.content,
            &row.entry_count,
            &s,
            &topic,
        ],
    )?;
    Ok(s)
}

/// Delete the native row `(scope, scope_id, key)`, its document and vector, re-index its neighbours and drop the key
/// from the `related_keys` of its scope's rows. Whether a row existed.
pub(crate) fn delete_in(sql: &mut Sql<'_>, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<bool> {
    let Some((id, search_rowid)) = find_identity(sql, scope, scope_id, key.as_str())? else {
        return Ok(false);
    };
    let pos = position(sql, &id)?;
    if let Some(s) = search_rowid {
        unindex_search(sql, s)?;
    }
    sql.exec("DELETE FROM memory_metadata WHERE id = $1", &[&id])?;
    vector_remove(sql, &id)?;
    if let Some(pos) = pos {
        refresh_neighbours(sql, &pos)?;
    }
    sql.exec(
        "UPDATE memory_metadata
         SET related_keys = trim(both ',' from replace(',' || related_keys || ',', ',' || $1 || ',', ','))
         WHERE scope = $2 AND scope_id = $3 AND related_keys IS NOT NULL
           AND strpos(',' || related_keys || ',', ',' || $1 || ',') > 0
           AND NOT EXISTS (SELECT 1 FROM memory_metadata x WHERE x.\"key\" = $1 AND x.scope = $2 AND x.scope_id = $3)",
        &[&key.as_str(), &scope.as_str(), &sid(scope_id)],
    )?;
    Ok(true)
}

/// Set `related_keys` of one native row; whether it exists.
pub(crate) fn set_related_keys_in(
    sql: &mut Sql<'_>,
    scope: Scope,
    scope_id: Option<&str>,
    key: &Key,
    related_keys: Option<&str>,
) -> Result<bool> {
    check_related_keys(key.as_str(), related_keys)?;
    Ok(sql.exec(
        "UPDATE memory_metadata SET related_keys = $1
         WHERE \"key\" = $2 AND scope = $3 AND scope_id = $4 AND source_kind = 'native'",
        &[&related_keys, &key.as_str(), &scope.as_str(), &sid(scope_id)],
    )? > 0)
}

/// Re-make every native row's document and search rowid from its stored fields (repair; the embedded index's
/// `rebuild_in`). Returns how many rows were indexed.
pub(crate) fn rebuild_in(sql: &mut Sql<'_>) -> Result<usize> {
    let rows = sql.query(
        "SELECT id, \"key\", tags, content, scope, scope_id, memory_type, updated_at, created_at
         FROM memory_metadata WHERE source_kind = 'native' ORDER BY seq",
        &[],
    )?;
    struct Stored {
        id: String,
        key: String,
        tags: String,
        content: String,
        scope: String,
        scope_id: String,
        memory_type: String,
        updated_at: DateTime<Utc>,
        created_at: Option<String>,
    }
    let rows: Vec<Stored> = rows
        .iter()
        .map(|r| {
            Ok(Stored {
                id: col(r, 0)?,
                key: col(r, 1)?,
                tags: col(r, 2)?,
                content: col(r, 3)?,
                scope: col(r, 4)?,
                scope_id: col(r, 5)?,
                memory_type: col(r, 6)?,
                updated_at: col::<Option<String>>(r, 7)?
                    .as_deref()
                    .and_then(parse_db_ts)
                    .unwrap_or(DateTime::UNIX_EPOCH),
                created_at: col(r, 8)?,
            })
        })
        .collect::<Result<_>>()?;
    sql.batch(
        "DELETE FROM cao_search_docs; DELETE FROM cao_search_postings; DELETE FROM cao_search_terms;
         UPDATE cao_search_stats SET docs = 0, tokens = 0, context_tokens = 0 WHERE id = 1;
         UPDATE memory_metadata SET search_rowid = NULL WHERE search_rowid IS NOT NULL;
         DELETE FROM cao_search_partitions;",
    )?;
    let mut order: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].created_at.is_some()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&rows[a], &rows[b]);
        (&x.scope, &x.scope_id, &x.created_at).cmp(&(&y.scope, &y.scope_id, &y.created_at))
    });
    let same = |a: usize, b: usize| rows[a].scope == rows[b].scope && rows[a].scope_id == rows[b].scope_id;
    let mut around: Vec<Vec<&str>> = vec![Vec::new(); rows.len()];
    for (p, &i) in order.iter().enumerate() {
        let before = (1..=NEIGHBOUR_WINDOW)
            .map_while(|d| p.checked_sub(d).map(|q| order[q]))
            .take_while(|&j| same(i, j));
        let after = (1..=NEIGHBOUR_WINDOW)
            .map_while(|d| order.get(p + d).copied())
            .take_while(|&j| same(i, j));
        around[i] = before.chain(after).map(|j| rows[j].content.as_str()).collect();
    }
    let mut indexed = 0;
    for (i, r) in rows.iter().enumerate() {
        let (Ok(scope), Ok(memory_type)) = (r.scope.parse::<Scope>(), r.memory_type.parse::<MemoryType>()) else {
            continue;
        };
        let part = partition(sql, scope, unsid(r.scope_id.clone()).as_deref())?;
        let s = allocate(sql, slot(part, memory_type))?;
        sql.exec(
            "UPDATE memory_metadata SET search_rowid = $1 WHERE id = $2",
            &[&s, &r.id],
        )?;
        let text = SearchText {
            key: &r.key,
            tags: &r.tags,
            content: &r.content,
            stored: r.updated_at,
            neighbours: std::mem::take(&mut around[i]),
        };
        index_search(sql, s, &text)?;
        indexed += 1;
    }
    Ok(indexed)
}

// ---------------------------------------------------------------------------------------------------------------
// Vector state kept with the rows (cao-index `vectors.rs`).

fn next_vector_seq(sql: &mut Sql<'_>) -> Result<i64> {
    col(
        &sql.one(
            "UPDATE cao_vector_state SET seq = seq + 1 WHERE id = 1 RETURNING seq",
            &[],
        )?,
        0,
    )
}

/// The memory's content changed: its vector no longer applies.
fn vector_invalidate(sql: &mut Sql<'_>, id: &str) -> Result<()> {
    if sql
        .opt(
            "SELECT 1 FROM cao_memory_vectors WHERE memory_id = $1 AND vector IS NOT NULL",
            &[&id],
        )?
        .is_some()
    {
        let seq = next_vector_seq(sql)?;
        sql.exec(
            "UPDATE cao_memory_vectors SET vector = NULL, seq = $2 WHERE memory_id = $1",
            &[&id, &seq],
        )?;
    }
    Ok(())
}

/// The memory's type changed: readers refresh their copy of its vector.
fn vector_touch(sql: &mut Sql<'_>, id: &str) -> Result<()> {
    if sql
        .opt("SELECT 1 FROM cao_memory_vectors WHERE memory_id = $1", &[&id])?
        .is_some()
    {
        let seq = next_vector_seq(sql)?;
        sql.exec(
            "UPDATE cao_memory_vectors SET seq = $2 WHERE memory_id = $1",
            &[&id, &seq],
        )?;
    }
    Ok(())
}

/// The memory is removed: so is its vector.
fn vector_remove(sql: &mut Sql<'_>, id: &str) -> Result<()> {
    if sql.exec("DELETE FROM cao_memory_vectors WHERE memory_id = $1", &[&id])? > 0 {
        sql.exec(
            "UPDATE cao_vector_state SET removals = removals + 1, seq = seq + 1 WHERE id = 1",
            &[],
        )?;
    }
    Ok(())
}

/// Store `vector` of `model` for memory `id` (replacing any).
pub(crate) fn vector_put(sql: &mut Sql<'_>, id: &str, model: &str, vector: &[f32]) -> Result<()> {
    cao_index::check_vector(model, vector).map_err(StoreError::Invalid)?;
    let seq = next_vector_seq(sql)?;
    let bytes = cao_index::encode_vector(vector);
    sql.exec(
        "INSERT INTO cao_memory_vectors (memory_id, model, dim, vector, seq) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (memory_id) DO UPDATE SET model = $2, dim = $3, vector = $4, seq = $5",
        &[&id, &model, &(vector.len() as i64), &bytes, &seq],
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// Reads.

/// The native row `(scope, scope_id, key)`.
pub(crate) fn get(sql: &mut Sql<'_>, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<Option<MemoryRow>> {
    let text = format!(
        "SELECT {ROW_COLUMNS} FROM memory_metadata m
         WHERE m.\"key\" = $1 AND m.scope = $2 AND m.scope_id = $3 AND m.source_kind = 'native'"
    );
    Ok(rows_of(sql, &text, &[&key.as_str(), &scope.as_str(), &sid(scope_id)])?
        .into_iter()
        .next())
}

/// The topic text of the native row `(scope, scope_id, key)`.
pub(crate) fn topic_text(sql: &mut Sql<'_>, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<Option<String>> {
    match sql.opt(
        "SELECT topic FROM memory_metadata
         WHERE \"key\" = $1 AND scope = $2 AND scope_id = $3 AND source_kind = 'native'",
        &[&key.as_str(), &scope.as_str(), &sid(scope_id)],
    )? {
        Some(r) => col(&r, 0),
        None => Ok(None),
    }
}

/// The newest visible native row named `key`.
pub(crate) fn find_key(sql: &mut Sql<'_>, vis: &Visibility, key: &Key) -> Result<Option<MemoryRow>> {
    if vis.is_empty() {
        return Ok(None);
    }
    let mut args = Args::default();
    let k = args.push(key.as_str().to_owned());
    let v = vis_sql(vis, &mut args);
    let text = format!(
        "SELECT {ROW_COLUMNS} FROM memory_metadata m
         WHERE m.\"key\" = {k} AND m.source_kind = 'native' AND {v} ORDER BY {RECENCY_ORDER} LIMIT 1"
    );
    Ok(rows_of(sql, &text, &args.refs())?.into_iter().next())
}

/// Visible native rows in `order`, at most `limit`, optionally past a keyset condition.
fn ordered(
    sql: &mut Sql<'_>,
    vis: &Visibility,
    memory_type: Option<MemoryType>,
    limit: usize,
    order: &str,
    mut args: Args,
    keyset: &str,
) -> Result<Vec<MemoryRow>> {
    if vis.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let v = vis_sql(vis, &mut args);
    let t = type_sql(memory_type, &mut args);
    let lim = args.push(i64::try_from(limit).unwrap_or(i64::MAX));
    let text = format!(
        "SELECT {ROW_COLUMNS} FROM memory_metadata m WHERE {v} AND m.source_kind = 'native'{t}{keyset}
         ORDER BY {order} LIMIT {lim}"
    );
    rows_of(sql, &text, &args.refs())
}

/// The recency pool.
pub(crate) fn recency(
    sql: &mut Sql<'_>,
    vis: &Visibility,
    memory_type: Option<MemoryType>,
    limit: usize,
) -> Result<Vec<MemoryRow>> {
    ordered(sql, vis, memory_type, limit, RECENCY_ORDER, Args::default(), "")
}

/// The recency pool's end, oldest first.
pub(crate) fn recency_last(
    sql: &mut Sql<'_>,
    vis: &Visibility,
    memory_type: Option<MemoryType>,
    limit: usize,
) -> Result<Vec<MemoryRow>> {
    ordered(
        sql,
        vis,
        memory_type,
        limit,
        RECENCY_ORDER_REVERSED,
        Args::default(),
        "",
    )
}

/// The usage pool.
pub(crate) fn usage(
    sql: &mut Sql<'_>,
    vis: &Visibility,
    memory_type: Option<MemoryType>,
    limit: usize,
) -> Result<Vec<MemoryRow>> {
    ordered(sql, vis, memory_type, limit, USAGE_ORDER, Args::default(), "")
}

/// Listing by filter.
pub(crate) fn list(sql: &mut Sql<'_>, filter: &ListFilter) -> Result<Vec<MemoryRow>> {
    let vis = match filter.scope {
        Some(s) => filter.visibility.only_scope(s),
        None => filter.visibility.clone(),
    };
    recency(sql, &vis, filter.memory_type, filter.limit.unwrap_or(usize::MAX >> 1))
}

/// One page of the recency order from a cursor.
pub(crate) fn recency_page(
    sql: &mut Sql<'_>,
    vis: &Visibility,
    memory_type: Option<MemoryType>,
    cursor: &RecencyCursor<'_>,
    limit: usize,
) -> Result<Option<Vec<MemoryRow>>> {
    let Some(p) = sql.opt(
        "SELECT updated_at, \"key\", scope, scope_id FROM memory_metadata
         WHERE scope = $1 AND scope_id = $2 AND \"key\" = $3 AND source_kind = 'native'",
        &[&cursor.scope.as_str(), &sid(cursor.scope_id), &cursor.key.as_str()],
    )?
    else {
        return Ok(None);
    };
    let (u, k, s, i): (Option<String>, String, String, String) = (col(&p, 0)?, col(&p, 1)?, col(&p, 2)?, col(&p, 3)?);
    let mut args = Args::default();
    let (u, k, s, i) = (
        args.push(u.unwrap_or_default()),
        args.push(k),
        args.push(s),
        args.push(i),
    );
    let (keyset, order) = if cursor.before {
        (
            format!(
                " AND m.updated_at >= {u} AND (m.updated_at > {u} OR (m.updated_at = {u} AND (m.\"key\" < {k} OR \
                 (m.\"key\" = {k} AND (m.scope < {s} OR (m.scope = {s} AND m.scope_id < {i}))))))"
            ),
            RECENCY_ORDER_REVERSED,
        )
    } else {
        (
            format!(
                " AND m.updated_at <= {u} AND (m.updated_at < {u} OR (m.updated_at = {u} AND (m.\"key\" > {k} OR \
                 (m.\"key\" = {k} AND (m.scope > {s} OR (m.scope = {s} AND m.scope_id > {i}))))))"
            ),
            RECENCY_ORDER,
        )
    };
    ordered(sql, vis, memory_type, limit, order, args, &keyset).map(Some)
}

/// Distinct lowercase whitespace-separated terms of a metadata query (cao-index `search.rs`).
fn metadata_terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in query
        .to_lowercase()
        .split(|c: char| c.is_whitespace() || c == '\0')
        .filter(|t| !t.is_empty())
    {
        if !out.iter().any(|o| o == t) {
            out.push(t.to_owned());
        }
    }
    out
}

/// The metadata pool: visible indexed rows whose `lowercase(key + " " + tags + " " + content)` holds every term,
/// newest first.
pub(crate) fn metadata(
    sql: &mut Sql<'_>,
    vis: &Visibility,
    memory_type: Option<MemoryType>,
    query: &str,
    limit: usize,
) -> Result<Vec<MemoryRow>> {
    let terms = metadata_terms(query);
    if terms.is_empty() {
        return recency(sql, vis, memory_type, limit);
    }
    if vis.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let mut args = Args::default();
    let v = vis_sql(vis, &mut args);
    let t = type_sql(memory_type, &mut args);
    let mut cond = String::new();
    for term in terms {
        cond.push_str(&format!(" AND strpos(d.haystack, {}) > 0", args.push(term)));
    }
    let lim = args.push(i64::try_from(limit).unwrap_or(i64::MAX));
    let text = format!(
        "SELECT {ROW_COLUMNS} FROM memory_metadata m JOIN cao_search_docs d ON d.search_rowid = m.search_rowid
         WHERE m.source_kind = 'native' AND {v}{t}{cond} ORDER BY {RECENCY_ORDER} LIMIT {lim}"
    );
    rows_of(sql, &text, &args.refs())
}

/// Native rows by id (ids without a row left out).
pub(crate) fn by_ids(sql: &mut Sql<'_>, ids: &[&str]) -> Result<Vec<MemoryRow>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let list: Vec<String> = ids.iter().map(|s| (*s).to_owned()).collect();
    let text = format!(
        "SELECT {ROW_COLUMNS} FROM memory_metadata m WHERE m.id = ANY($1::text[]) AND m.source_kind = 'native'"
    );
    let found = rows_of(sql, &text, &[&list])?;
    let mut out = Vec::with_capacity(found.len());
    for id in ids {
        if let Some(r) = found.iter().find(|r| r.id == *id) {
            out.push(r.clone());
        }
    }
    Ok(out)
}

/// Rows per `(scope, scope_id)`.
pub(crate) fn scope_counts(sql: &mut Sql<'_>) -> Result<Vec<(Scope, Option<String>, u64)>> {
    let mut out = Vec::new();
    for r in sql.query(
        "SELECT scope, scope_id, count(*) FROM memory_metadata WHERE source_kind = 'native'
         GROUP BY scope, scope_id ORDER BY scope, scope_id",
        &[],
    )? {
        let (scope, scope_id, n): (String, String, i64) = (col(&r, 0)?, col(&r, 1)?, col(&r, 2)?);
        if let Ok(scope) = scope.parse::<Scope>() {
            out.push((scope, unsid(scope_id), u64::try_from(n).unwrap_or(0)));
        }
    }
    Ok(out)
}

/// Rows created per day since `since`.
pub(crate) fn created_per_day(
    sql: &mut Sql<'_>,
    scope: Scope,
    scope_id: Option<&str>,
    since: &str,
) -> Result<Vec<(String, u64)>> {
    sql.query(
        "SELECT substr(created_at, 1, 10) AS day, count(*) FROM memory_metadata
         WHERE scope = $1 AND scope_id = $2 AND created_at >= $3 GROUP BY day ORDER BY day",
        &[&scope.as_str(), &sid(scope_id), &since],
    )?
    .iter()
    .map(|r| Ok((col(r, 0)?, u64::try_from(col::<i64>(r, 1)?).unwrap_or(0))))
    .collect()
}

/// Count one access of each due row (the 60-second rule, checked against the stored time). How many changed.
pub(crate) fn record_access(sql: &mut Sql<'_>, ids: &[&str], now: DateTime<Utc>) -> Result<usize> {
    let mut unique: Vec<&str> = ids.to_vec();
    unique.sort_unstable();
    unique.dedup();
    let now_secs = format_db_ts_secs(now);
    let interval = cao_index::ACCESS_MIN_INTERVAL.num_milliseconds();
    let mut changed = 0;
    for id in unique {
        let Some(r) = sql.opt("SELECT last_accessed_at FROM memory_metadata WHERE id = $1", &[&id])? else {
            continue;
        };
        let last: Option<String> = col(&r, 0)?;
        let due = match last.as_deref() {
            None => true,
            Some(text) => match parse_db_ts(text) {
                Some(t) => (now - t).num_milliseconds() >= interval,
                None => false,
            },
        };
        if due {
            changed += sql.exec(
                "UPDATE memory_metadata SET access_count = access_count + 1, last_accessed_at = $2 WHERE id = $1",
                &[&id, &now_secs],
            )?;
        }
    }
    Ok(usize::try_from(changed).unwrap_or(usize::MAX))
}

/// The number the store's change marks count: indexed documents.
pub(crate) fn docs(sql: &mut Sql<'_>) -> Result<u64> {
    let r = sql.one("SELECT docs FROM cao_search_stats WHERE id = 1", &[])?;
    Ok(super::db::small(col(&r, 0)?))
}
