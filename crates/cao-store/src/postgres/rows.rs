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

/// How many columns [`ROW_COLUMNS`] selects.
const ROW_COLUMN_COUNT: usize = 19;

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

/// The term statistics a write changes (`cao_search_stats` and each term's document frequency), summed in memory
/// and applied at the end of the write ([`Delta::apply`], two statements) instead of one statement per document
/// and neighbour. The sums are the same as applying each change at once: every change is an addition, and a term
/// whose frequency ends at 0 or below is deleted either way.
#[derive(Default)]
pub(crate) struct Delta {
    docs: i64,
    tokens: i64,
    context_tokens: i64,
    df: std::collections::BTreeMap<String, i64>,
}

impl Delta {
    /// Count document `(body, meta, near)` in (`sign` 1) or out (`sign` -1).
    fn doc(&mut self, sign: i64, body: &str, meta: &str, near: &str) {
        self.docs += sign;
        self.tokens += sign * body_tokens(body);
        self.context_tokens += sign * (body_tokens(meta) + body_tokens(near));
        for t in distinct_terms(&[body, meta, near]) {
            *self.df.entry(t.to_owned()).or_default() += sign;
        }
    }

    /// A document's `near` field changed from `old` to `new` (`body` and `meta` unchanged): only the terms that
    /// entered or left the document change their frequency.
    fn near(&mut self, body: &str, meta: &str, old: &str, new: &str) {
        self.context_tokens += body_tokens(new) - body_tokens(old);
        let before = distinct_terms(&[body, meta, old]);
        let after = distinct_terms(&[body, meta, new]);
        for t in after.difference(&before) {
            *self.df.entry((*t).to_owned()).or_default() += 1;
        }
        for t in before.difference(&after) {
            *self.df.entry((*t).to_owned()).or_default() -= 1;
        }
    }

    /// Add `other`'s changes to these.
    pub(crate) fn merge(&mut self, other: Delta) {
        self.docs += other.docs;
        self.tokens += other.tokens;
        self.context_tokens += other.context_tokens;
        for (t, n) in other.df {
            *self.df.entry(t).or_default() += n;
        }
    }

    /// Apply the sums: the statistics row and every changed frequency in one statement, then the terms no document
    /// holds any more deleted.
    pub(crate) fn apply(self, sql: &mut Sql<'_>) -> Result<()> {
        let (mut terms, mut counts, mut gone) = (Vec::new(), Vec::new(), Vec::new());
        for (t, n) in self.df {
            if n != 0 {
                if n < 0 {
                    gone.push(t.clone());
                }
                terms.push(t);
                counts.push(n);
            }
        }
        if self.docs == 0 && self.tokens == 0 && self.context_tokens == 0 && terms.is_empty() {
            return Ok(());
        }
        sql.exec(
            "WITH stats AS (
                 UPDATE cao_search_stats SET docs = greatest(docs + $1, 0), tokens = greatest(tokens + $2, 0),
                     context_tokens = greatest(context_tokens + $3, 0)
                 WHERE id = 1)
             INSERT INTO cao_search_terms (term, df) SELECT t, n FROM unnest($4::text[], $5::bigint[]) AS u(t, n)
             ON CONFLICT (term) DO UPDATE SET df = cao_search_terms.df + excluded.df",
            &[&self.docs, &self.tokens, &self.context_tokens, &terms, &counts],
        )?;
        if !gone.is_empty() {
            sql.exec(
                "DELETE FROM cao_search_terms WHERE term = ANY($1::text[]) AND df <= 0",
                &[&gone],
            )?;
        }
        Ok(())
    }
}

/// Add a row's document under `search_rowid` (document and postings in one statement) and count it in `delta`.
fn index_search(sql: &mut Sql<'_>, search_rowid: i64, text: &SearchText<'_>, delta: &mut Delta) -> Result<()> {
    let body = content_field(text.content);
    let meta = meta_field(text.key, text.tags, text.stored);
    let near = near_field(&text.neighbours);
    let haystack = trigram_body(text.key, text.tags, text.content);
    let own = own_terms(&body, &meta);
    sql.exec(
        "WITH doc AS (
             INSERT INTO cao_search_docs (search_rowid, body, meta, near, haystack) VALUES ($1, $2, $3, $4, $5))
         INSERT INTO cao_search_postings (term, search_rowid) SELECT t, $1 FROM unnest($6::text[]) AS t",
        &[&search_rowid, &body, &meta, &near, &haystack, &own],
    )?;
    delta.doc(1, &body, &meta, &near);
    Ok(())
}

/// Remove a row's document and its postings (one statement) and uncount it in `delta`.
fn unindex_search(sql: &mut Sql<'_>, search_rowid: i64, delta: &mut Delta) -> Result<()> {
    let old = sql.opt(
        "WITH postings AS (DELETE FROM cao_search_postings WHERE search_rowid = $1)
         DELETE FROM cao_search_docs WHERE search_rowid = $1 RETURNING body, meta, near",
        &[&search_rowid],
    )?;
    if let Some(r) = old {
        let (body, meta, near): (String, String, String) = (col(&r, 0)?, col(&r, 1)?, col(&r, 2)?);
        delta.doc(-1, &body, &meta, &near);
    }
    Ok(())
}

/// Where a row stands in its scope's creation order.
struct Position {
    scope: String,
    scope_id: String,
    created_at: Option<String>,
    seq: i64,
}

/// A native row near a written one in its scope's creation order, with its stored document.
struct Near {
    id: String,
    search_rowid: Option<i64>,
    content: String,
    /// `(body, meta, near)`; `None` when the row has no document.
    doc: Option<(String, String, String)>,
}

/// The native rows within `2 * NEIGHBOUR_WINDOW` before and after `pos` in its scope and scope id (creation time,
/// then insertion order), in that order, with their documents, in one statement: what the neighbours of `pos` and
/// their own neighbours are made of. `(before, after)`, each nearest first.
fn window(sql: &mut Sql<'_>, pos: &Position) -> Result<(Vec<Near>, Vec<Near>)> {
    let Some(created) = &pos.created_at else {
        return Ok((Vec::new(), Vec::new()));
    };
    let reach = 2 * NEIGHBOUR_WINDOW as i64;
    let rows = sql.query(
        "(SELECT 0 AS side, m.created_at, m.seq, m.id, m.search_rowid, m.content, d.body, d.meta, d.near
          FROM memory_metadata m LEFT JOIN cao_search_docs d ON d.search_rowid = m.search_rowid
          WHERE m.scope = $1 AND m.scope_id = $2 AND m.source_kind = 'native' AND (m.created_at, m.seq) < ($3, $4)
          ORDER BY m.created_at DESC, m.seq DESC LIMIT $5)
         UNION ALL
         (SELECT 1 AS side, m.created_at, m.seq, m.id, m.search_rowid, m.content, d.body, d.meta, d.near
          FROM memory_metadata m LEFT JOIN cao_search_docs d ON d.search_rowid = m.search_rowid
          WHERE m.scope = $1 AND m.scope_id = $2 AND m.source_kind = 'native' AND (m.created_at, m.seq) > ($3, $4)
          ORDER BY m.created_at ASC, m.seq ASC LIMIT $5)",
        &[&pos.scope, &pos.scope_id, created, &pos.seq, &reach],
    )?;
    let mut before: Vec<(String, i64, Near)> = Vec::new();
    let mut after: Vec<(String, i64, Near)> = Vec::new();
    for r in &rows {
        let side: i32 = col(r, 0)?;
        let doc = match (
            col::<Option<String>>(r, 6)?,
            col::<Option<String>>(r, 7)?,
            col::<Option<String>>(r, 8)?,
        ) {
            (Some(b), Some(m), Some(n)) => Some((b, m, n)),
            _ => None,
        };
        let near = Near {
            id: col(r, 3)?,
            search_rowid: col(r, 4)?,
            content: col::<Option<String>>(r, 5)?.unwrap_or_default(),
            doc,
        };
        let at = (
            col::<Option<String>>(r, 1)?.unwrap_or_default(),
            col::<i64>(r, 2)?,
            near,
        );
        if side == 0 { before.push(at) } else { after.push(at) }
    }
    // Nearest first on each side (byte order of the `COLLATE "C"` times, then insertion order).
    before.sort_by(|a, b| (&b.0, b.1).cmp(&(&a.0, a.1)));
    after.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    Ok((
        before.into_iter().map(|n| n.2).collect(),
        after.into_iter().map(|n| n.2).collect(),
    ))
}

/// The neighbour texts of the row at `i` in `line` (the rows of one scope in creation order): up to
/// [`NEIGHBOUR_WINDOW`] before it, nearest first, then up to [`NEIGHBOUR_WINDOW`] after it, nearest first.
fn around<'a>(line: &[&'a str], i: usize) -> Vec<&'a str> {
    let before = (1..=NEIGHBOUR_WINDOW).filter_map(|d| i.checked_sub(d).map(|j| line[j]));
    let after = (1..=NEIGHBOUR_WINDOW).filter_map(|d| line.get(i + d).copied());
    before.chain(after).collect()
}

/// Index a written row and re-index its neighbours (the embedded index's `index_row` and `refresh_neighbours`):
/// `center` is the written row (its search rowid and search text; `None` after a delete, where `pos` is where the
/// deleted row stood). One statement reads the window of rows around `pos`; the written row's document is added
/// ([`index_search`]) and every neighbour whose `near` field changed is updated in one statement; the statistics go
/// to `delta`.
fn index_around(
    sql: &mut Sql<'_>,
    pos: &Position,
    center: Option<(i64, &str, &str, &str, DateTime<Utc>)>,
    delta: &mut Delta,
) -> Result<()> {
    let (before, after) = window(sql, pos)?;
    // The scope's rows in creation order, the written row (if any) at `c`.
    let mut line: Vec<&str> = before.iter().rev().map(|n| n.content.as_str()).collect();
    let c = line.len();
    if let Some((_, _, _, content, _)) = center {
        line.push(content);
    }
    let first_after = line.len();
    line.extend(after.iter().map(|n| n.content.as_str()));
    if let Some((search_rowid, key, tags, content, stored)) = center {
        let text = SearchText {
            key,
            tags,
            content,
            stored,
            neighbours: around(&line, c),
        };
        index_search(sql, search_rowid, &text, delta)?;
    }
    let mut changed_rowids: Vec<i64> = Vec::new();
    let mut changed_near: Vec<String> = Vec::new();
    let nearest = before
        .iter()
        .take(NEIGHBOUR_WINDOW)
        .enumerate()
        .map(|(d, n)| (c - 1 - d, n))
        .chain(
            after
                .iter()
                .take(NEIGHBOUR_WINDOW)
                .enumerate()
                .map(|(d, n)| (first_after + d, n)),
        );
    let mut missing: Vec<(String, i64)> = Vec::new();
    for (i, n) in nearest {
        let Some(search_rowid) = n.search_rowid else { continue };
        let Some((body, meta, old_near)) = &n.doc else {
            missing.push((n.id.clone(), search_rowid));
            continue;
        };
        let near = near_field(&around(&line, i));
        if near != *old_near {
            delta.near(body, meta, old_near, &near);
            changed_rowids.push(search_rowid);
            changed_near.push(near);
        }
    }
    if !changed_rowids.is_empty() {
        sql.exec(
            "UPDATE cao_search_docs d SET near = u.near FROM unnest($1::bigint[], $2::text[]) AS u(s, near)
             WHERE d.search_rowid = u.s",
            &[&changed_rowids, &changed_near],
        )?;
    }
    // A neighbour with a search rowid but no document (an interrupted repair): indexed whole from its row.
    for (id, search_rowid) in missing {
        unindex_search(sql, search_rowid, delta)?;
        index_row(sql, &id, search_rowid, delta)?;
    }
    Ok(())
}

/// The contents of the up to [`NEIGHBOUR_WINDOW`] native rows before `pos` in its scope and scope id (creation
/// time, then insertion order), nearest first, then of the up to [`NEIGHBOUR_WINDOW`] after it, nearest first.
fn neighbour_texts(sql: &mut Sql<'_>, pos: &Position) -> Result<Vec<String>> {
    let (before, after) = window(sql, pos)?;
    Ok(before
        .into_iter()
        .take(NEIGHBOUR_WINDOW)
        .chain(after.into_iter().take(NEIGHBOUR_WINDOW))
        .map(|n| n.content)
        .collect())
}

/// Add the document of row `id` under `search_rowid` from its stored fields and its neighbours (a row whose
/// document is missing).
fn index_row(sql: &mut Sql<'_>, id: &str, search_rowid: i64, delta: &mut Delta) -> Result<()> {
    let Some(r) = sql.opt(
        "SELECT scope, scope_id, created_at, seq, \"key\", tags, content, updated_at FROM memory_metadata WHERE id = $1",
        &[&id],
    )?
    else {
        return Ok(());
    };
    let pos = Position {
        scope: col(&r, 0)?,
        scope_id: col(&r, 1)?,
        created_at: col(&r, 2)?,
        seq: col(&r, 3)?,
    };
    let key: String = col(&r, 4)?;
    let tags: String = col::<Option<String>>(&r, 5)?.unwrap_or_default();
    let content: String = col::<Option<String>>(&r, 6)?.unwrap_or_default();
    let updated_at = col::<Option<String>>(&r, 7)?
        .as_deref()
        .and_then(parse_db_ts)
        .unwrap_or(DateTime::UNIX_EPOCH);
    let around = neighbour_texts(sql, &pos)?;
    let text = SearchText {
        key: &key,
        tags: &tags,
        content: &content,
        stored: updated_at,
        neighbours: around.iter().map(String::as_str).collect(),
    };
    index_search(sql, search_rowid, &text, delta)
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

/// The stored state of a memory identity that a write starts from: its row (when it decodes), its topic text, and
/// what the index keeps beside them. One statement ([`current`]).
pub(crate) struct Current {
    /// The decoded row (`None` when it holds values this version cannot represent; the identity still exists).
    pub(crate) row: Option<MemoryRow>,
    /// The topic text (`''` when none was stored).
    pub(crate) topic: String,
    identity: Identity,
}

/// What an update needs of the stored row: id, search rowid, content and type.
pub(crate) struct Identity {
    id: String,
    search_rowid: Option<i64>,
    content: String,
    memory_type: String,
}

/// The native row `(scope, scope_id, key)` with its topic text and search rowid, in one statement.
pub(crate) fn current(sql: &mut Sql<'_>, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<Option<Current>> {
    let text = format!(
        "SELECT {ROW_COLUMNS}, m.topic, m.search_rowid FROM memory_metadata m
         WHERE m.\"key\" = $1 AND m.scope = $2 AND m.scope_id = $3 AND m.source_kind = 'native'"
    );
    let Some(r) = sql.opt(&text, &[&key.as_str(), &scope.as_str(), &sid(scope_id)])? else {
        return Ok(None);
    };
    let n = ROW_COLUMN_COUNT;
    Ok(Some(Current {
        row: decode_row(&r, 0)?,
        topic: col(&r, n)?,
        identity: Identity {
            id: col(&r, 0)?,
            search_rowid: col(&r, n + 1)?,
            content: col::<Option<String>>(&r, 17)?.unwrap_or_default(),
            memory_type: col(&r, 2)?,
        },
    }))
}

/// Insert or update the native row of `row`'s identity with its topic text, and re-index it and its neighbours (the
/// embedded index's `upsert_in`: on update the id, creation time and access state are kept, `last_compiled_at` and
/// `related_keys` only overwritten when `Some`).
pub(crate) fn upsert_in(sql: &mut Sql<'_>, row: &MemoryRow, topic: &str) -> Result<Upserted> {
    let existing = current(sql, row.scope, row.scope_id.as_deref(), &row.key)?;
    let mut delta = Delta::default();
    let out = upsert_known(sql, row, topic, existing.map(|c| c.identity), &mut delta)?;
    delta.apply(sql)?;
    Ok(out)
}

/// [`upsert_in`] when the caller has read the identity's stored state ([`current`], in this transaction), the
/// statistics changes added to `delta` for the caller to apply ([`Delta::apply`]) before anything in the
/// transaction reads the statistics.
pub(crate) fn upsert_current(
    sql: &mut Sql<'_>,
    row: &MemoryRow,
    topic: &str,
    existing: Option<Current>,
    delta: &mut Delta,
) -> Result<Upserted> {
    upsert_known(sql, row, topic, existing.map(|c| c.identity), delta)
}

/// The partition of `(scope, scope_id)` (allocated when missing) and the next search rowid of its `memory_type`
/// slot: one statement when the partition exists.
fn slot_rowid(sql: &mut Sql<'_>, scope: Scope, scope_id: Option<&str>, memory_type: MemoryType) -> Result<i64> {
    let key = scope_id_key(scope_id);
    let found = sql.opt(
        "SELECT p.id, (SELECT max(m.search_rowid) FROM memory_metadata m
             WHERE m.search_rowid BETWEEN ((p.id * 4 + $3) << 32) AND (((p.id * 4 + $3) << 32) | 4294967295))
         FROM cao_search_partitions p WHERE p.scope = $1 AND p.scope_id_key = $2",
        // `slot(0, t)` is the type's index within a partition's four slots.
        &[&scope.as_str(), &key, &slot(0, memory_type)],
    )?;
    let (part, max) = match found {
        Some(r) => (col::<i64>(&r, 0)?, col::<Option<i64>>(&r, 1)?),
        None => {
            let part = partition(sql, scope, scope_id)?;
            (part, None)
        }
    };
    let slot = slot(part, memory_type);
    next_in_slot(slot, max).ok_or_else(|| StoreError::Invalid(format!("search rowids of slot {slot} are exhausted")))
}

fn upsert_known(
    sql: &mut Sql<'_>,
    row: &MemoryRow,
    topic: &str,
    existing: Option<Identity>,
    delta: &mut Delta,
) -> Result<Upserted> {
    check_related_keys(row.key.as_str(), row.related_keys.as_deref())?;
    let out = match existing {
        Some(Identity {
            id,
            search_rowid,
            content: old_content,
            memory_type: old_type,
        }) => {
            if old_content != row.content {
                vector_invalidate(sql, &id)?;
            } else if old_type != row.memory_type.as_str() {
                vector_touch(sql, &id)?;
            }
            if let Some(s) = search_rowid {
                unindex_search(sql, s, delta)?;
            }
            let slot = slot(partition(sql, row.scope, row.scope_id.as_deref())?, row.memory_type);
            let s = match search_rowid {
                Some(s) if slot_of(s) == slot => s,
                _ => allocate(sql, slot)?,
            };
            let compiled = row.last_compiled_at.map(format_db_ts);
            let updated_at = format_db_ts(row.updated_at);
            let r = sql.one(
                "UPDATE memory_metadata SET memory_type = $1, tags = $2, file_path = $3, source_provider = $4,
                     source_terminal_id = $5, token_estimate = $6, updated_at = $7,
                     last_compiled_at = coalesce($8, last_compiled_at),
                     related_keys = coalesce($9, related_keys), content = $10, entry_count = $11,
                     search_rowid = $12, topic = $14
                 WHERE id = $13
                 RETURNING scope, scope_id, created_at, seq, \"key\", tags, content, updated_at",
                &[
                    &row.memory_type.as_str(),
                    &row.tags,
                    &row.file_path,
                    &row.source_provider,
                    &row.source_terminal_id,
                    &row.token_estimate,
                    &updated_at,
                    &compiled,
                    &row.related_keys,
                    &row.content,
                    &row.entry_count,
                    &s,
                    &id,
                    &topic,
                ],
            )?;
            let pos = Position {
                scope: col(&r, 0)?,
                scope_id: col(&r, 1)?,
                created_at: col(&r, 2)?,
                seq: col(&r, 3)?,
            };
            let (key, tags): (String, String) = (col(&r, 4)?, col::<Option<String>>(&r, 5)?.unwrap_or_default());
            let content: String = col::<Option<String>>(&r, 6)?.unwrap_or_default();
            let stored = col::<Option<String>>(&r, 7)?
                .as_deref()
                .and_then(parse_db_ts)
                .unwrap_or(DateTime::UNIX_EPOCH);
            index_around(sql, &pos, Some((s, &key, &tags, &content, stored)), delta)?;
            Upserted { id }
        }
        None => {
            let s = slot_rowid(sql, row.scope, row.scope_id.as_deref(), row.memory_type)?;
            let seq = insert_new(sql, row, s, topic)?;
            let pos = Position {
                scope: row.scope.as_str().to_owned(),
                scope_id: sid(row.scope_id.as_deref()).to_owned(),
                created_at: Some(format_db_ts(row.created_at)),
                seq,
            };
            let stored = parse_db_ts(&format_db_ts(row.updated_at)).unwrap_or(DateTime::UNIX_EPOCH);
            index_around(
                sql,
                &pos,
                Some((s, row.key.as_str(), &row.tags, &row.content, stored)),
                delta,
            )?;
            Upserted { id: row.id.clone() }
        }
    };
    Ok(out)
}

/// Insert the row of a new identity under search rowid `s`; returns its insertion order (`seq`).
fn insert_new(sql: &mut Sql<'_>, row: &MemoryRow, s: i64, topic: &str) -> Result<i64> {
    if row.id.is_empty() {
        return Err(StoreError::Invalid(format!(
            "empty row id for new memory {:?}",
            row.key.as_str()
        )));
    }
    let r = sql.one(
        "INSERT INTO memory_metadata (id, \"key\", memory_type, scope, scope_id, source_kind, file_path, tags,
             source_provider, source_terminal_id, token_estimate, created_at, updated_at, access_count,
             last_accessed_at, last_compiled_at, related_keys, content, entry_count, search_rowid, topic)
         VALUES ($1, $2, $3, $4, $5, 'native', $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
         RETURNING seq",
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
    col(&r, 0)
}

/// Delete the native row `(scope, scope_id, key)`, its document and vector, re-index its neighbours and drop the key
/// from the `related_keys` of its scope's rows. Whether a row existed.
pub(crate) fn delete_in(sql: &mut Sql<'_>, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<bool> {
    let Some(r) = sql.opt(
        "DELETE FROM memory_metadata
         WHERE \"key\" = $1 AND scope = $2 AND scope_id = $3 AND source_kind = 'native'
         RETURNING id, search_rowid, scope, scope_id, created_at, seq",
        &[&key.as_str(), &scope.as_str(), &sid(scope_id)],
    )?
    else {
        return Ok(false);
    };
    let (id, search_rowid): (String, Option<i64>) = (col(&r, 0)?, col(&r, 1)?);
    let pos = Position {
        scope: col(&r, 2)?,
        scope_id: col(&r, 3)?,
        created_at: col(&r, 4)?,
        seq: col(&r, 5)?,
    };
    let mut delta = Delta::default();
    if let Some(s) = search_rowid {
        unindex_search(sql, s, &mut delta)?;
    }
    vector_remove(sql, &id)?;
    index_around(sql, &pos, None, &mut delta)?;
    delta.apply(sql)?;
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
    let mut delta = Delta::default();
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
        index_search(sql, s, &text, &mut delta)?;
        indexed += 1;
    }
    delta.apply(sql)?;
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
    let ids: Vec<String> = unique.iter().map(|id| (*id).to_owned()).collect();
    let mut due_ids: Vec<String> = Vec::new();
    for r in sql.query(
        "SELECT id, last_accessed_at FROM memory_metadata WHERE id = ANY($1::text[])",
        &[&ids],
    )? {
        let last: Option<String> = col(&r, 1)?;
        let due = match last.as_deref() {
            None => true,
            Some(text) => match parse_db_ts(text) {
                Some(t) => (now - t).num_milliseconds() >= interval,
                None => false,
            },
        };
        if due {
            due_ids.push(col(&r, 0)?);
        }
    }
    if due_ids.is_empty() {
        return Ok(0);
    }
    let changed = sql.exec(
        "UPDATE memory_metadata SET access_count = access_count + 1, last_accessed_at = $2 WHERE id = ANY($1::text[])",
        &[&due_ids, &now_secs],
    )?;
    Ok(usize::try_from(changed).unwrap_or(usize::MAX))
}

/// The number the store's change marks count: indexed documents.
pub(crate) fn docs(sql: &mut Sql<'_>) -> Result<u64> {
    let r = sql.one("SELECT docs FROM cao_search_stats WHERE id = 1", &[])?;
    Ok(super::db::small(col(&r, 0)?))
}
