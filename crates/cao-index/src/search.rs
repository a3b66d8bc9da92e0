//! Reads: point lookups, listings and the three candidate pools of recall (recency, BM25, metadata substring).

use crate::row::{InvalidRow, MemoryRow, ROW_COLUMNS, decode_row};
use crate::visibility::Visibility;
use crate::write::trigram_body;
use crate::{Index, Result, partition};
use cao_core::{Key, MemoryType, Scope, SourceKind};
use rusqlite::types::Value;
use rusqlite::{Transaction, params_from_iter};

/// Order of every recency listing: newest first, then key, then scope and scope id (a total order).
const RECENCY_ORDER: &str = "m.updated_at DESC, m.\"key\" ASC, m.scope ASC, m.scope_id ASC";

/// Filter of [`Index::list`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// What the caller may read.
    pub visibility: Visibility,
    /// Only this scope (narrows `visibility`).
    pub scope: Option<Scope>,
    /// Only this memory type.
    pub memory_type: Option<MemoryType>,
    /// At most this many rows (`None` = all).
    pub limit: Option<usize>,
}

/// Distinct lowercase whitespace-separated terms of a metadata query (the reference's `query.lower().split()`).
fn metadata_terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    // A NUL separates words too: no stored text holds one, and SQLite would read a query string only up to it.
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

/// An FTS5 string literal: `"` + term with `"` doubled + `"`.
pub(crate) fn fts_quote(term: &str) -> String {
    // SQLite reads the query string as C text: a NUL would end it inside the literal.
    format!("\"{}\"", term.replace('"', "\"\"").replace('\0', " "))
}

/// A row limit as an SQL integer literal. Limits are written into the statement text, not bound: SQLite's planner
/// reads a bound `LIMIT` value and marks the statement to be planned again whenever that parameter is bound, so a
/// bound limit costs a full re-prepare at every execution (see `tests::a_literal_limit_is_prepared_once`).
pub(crate) fn limit_sql(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

pub(crate) fn type_clause(memory_type: Option<MemoryType>, params: &mut Vec<Value>) -> &'static str {
    match memory_type {
        Some(t) => {
            params.push(Value::Text(t.as_str().to_owned()));
            " AND m.memory_type = ?"
        }
        None => "",
    }
}

/// Run a row query (columns [`ROW_COLUMNS`] first, then `extra` more columns read by `tail`) and keep the
/// decodable rows.
fn query_rows<T>(
    tx: &Transaction<'_>,
    sql: &str,
    params: &[Value],
    tail: impl Fn(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Vec<(MemoryRow, T)>> {
    let mut stmt = tx.prepare_cached(sql)?;
    let mut rows = stmt.query(params_from_iter(params))?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        if let Ok(row) = decode_row(r, 0)? {
            out.push((row, tail(r)?));
        }
    }
    Ok(out)
}

pub(crate) fn fetch_by_search_rowid(tx: &Transaction<'_>, search_rowid: i64) -> rusqlite::Result<Option<MemoryRow>> {
    let sql = format!("SELECT {ROW_COLUMNS} FROM memory_metadata m WHERE m.search_rowid = ?1");
    let mut stmt = tx.prepare_cached(&sql)?;
    let mut rows = stmt.query([search_rowid])?;
    match rows.next()? {
        Some(r) => Ok(decode_row(r, 0)?.ok()),
        None => Ok(None),
    }
}

/// Re-check a row found through the search tables against the filters its search rowid encodes (its source kind
/// included: a vault row is visible only through a vault term).
pub(crate) fn visible(row: &MemoryRow, vis: &Visibility, memory_type: Option<MemoryType>) -> bool {
    vis.allows_kind(row.scope, row.scope_id.as_deref(), row.source_kind)
        && memory_type.is_none_or(|t| t == row.memory_type)
}

/// The text the metadata pool's terms are matched in: `lowercase(key + " " + tags + " " + content)` of a native row,
/// `lowercase(content)` of a vault row (the reference matches a vault note's recall body only, spec/vault-facts.md
/// section 5 "Query matching").
pub(crate) fn metadata_haystack(row: &MemoryRow) -> String {
    match row.source_kind {
        SourceKind::Native => trigram_body(row.key.as_str(), &row.tags, &row.content),
        SourceKind::Vault => row.content.to_lowercase(),
    }
}

/// Whether every whitespace-separated term of `query`, lowercased, is a substring of
/// `lowercase(key + " " + tags + " " + content)` of `row` (of a vault row: `lowercase(content)`): the predicate of
/// [`Index::metadata_pool`] (the reference's `_matches_all_terms`). A query without terms matches every row.
pub fn matches_all_terms(query: &str, row: &MemoryRow) -> bool {
    let hay = metadata_haystack(row);
    metadata_terms(query).iter().all(|t| hay.contains(t.as_str()))
}

/// Most rowid ranges queried one by one before one join-filtered query is cheaper.
const MAX_RANGES: usize = 16;

/// How a search restricts itself to the visible rows.
#[derive(Debug, Clone)]
pub(crate) enum Scan {
    /// Everything is visible: no restriction.
    Everything,
    /// These inclusive search-rowid ranges (see `crate::partition`).
    Ranges(Vec<(i64, i64)>),
    /// Too many ranges: join each match to its row and filter there.
    Join,
}

pub(crate) fn scan_plan(
    tx: &Transaction<'_>,
    vis: &Visibility,
    memory_type: Option<MemoryType>,
) -> rusqlite::Result<Scan> {
    if vis.is_all() && memory_type.is_none() && !vis.has_vault() && !partition::any_vault(tx)? {
        return Ok(Scan::Everything);
    }
    let mut ranges = Vec::new();
    for (scope, id) in vis.vault_slices() {
        if let Some(p) = partition::find_vault(tx, scope, id)? {
            ranges.push(partition::range(p, memory_type));
        }
    }
    for (scope, id) in vis.slices() {
        match id {
            Some(scope_id) => {
                if let Some(p) = partition::find(tx, scope, scope_id)? {
                    ranges.push(partition::range(p, memory_type));
                }
            }
            None => {
                let parts = partition::of_scope(tx, scope)?;
                if parts.len() > MAX_RANGES * 4 {
                    return Ok(Scan::Join);
                }
                ranges.extend(parts.into_iter().map(|p| partition::range(p, memory_type)));
            }
        }
    }
    let ranges = partition::merge(ranges);
    Ok(if ranges.len() > MAX_RANGES {
        Scan::Join
    } else {
        Scan::Ranges(ranges)
    })
}

/// Newest-first native rows visible under `vis`, at most `limit`: one index-ordered sub-select per visibility term
/// (each walks `(scope, scope_id, updated_at)` or `(scope, updated_at)` and stops after `limit` rows), merged.
fn recency(
    tx: &Transaction<'_>,
    vis: &Visibility,
    memory_type: Option<MemoryType>,
    limit: usize,
) -> Result<Vec<MemoryRow>> {
    ordered(tx, vis, memory_type, limit, RECENCY_ORDER)
}

/// The usage order of spec/reference-facts.md "Ranking": access_count desc, updated_at desc, key (then identity).
const USAGE_ORDER: &str = "m.access_count DESC, m.updated_at DESC, m.\"key\" ASC, m.scope ASC, m.scope_id ASC";

/// Native rows visible under `vis` in `order`, at most `limit`: one sub-select per visibility term, merged.
fn ordered(
    tx: &Transaction<'_>,
    vis: &Visibility,
    memory_type: Option<MemoryType>,
    limit: usize,
    order: &str,
) -> Result<Vec<MemoryRow>> {
    ordered_from(tx, vis, memory_type, limit, order, None)
}

/// [`ordered`], only the rows on one side of a keyset position: `from` is a condition on `m` (with `?`
/// placeholders) and its parameters, added to every sub-select.
fn ordered_from(
    tx: &Transaction<'_>,
    vis: &Visibility,
    memory_type: Option<MemoryType>,
    limit: usize,
    order: &str,
    from: Option<(&str, &[Value])>,
) -> Result<Vec<MemoryRow>> {
    if vis.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let mut term_params = Vec::new();
    let terms = vis.term_sqls(&mut term_params);
    let mut params = Vec::new();
    let mut parts = Vec::new();
    for (cond, p) in terms.iter().zip(term_params) {
        params.extend(p);
        let ty = type_clause(memory_type, &mut params);
        let keyset = match from {
            Some((sql, values)) => {
                params.extend(values.iter().cloned());
                format!(" AND {sql}")
            }
            None => String::new(),
        };
        let lim = limit_sql(limit);
        parts.push(format!(
            "SELECT r FROM (SELECT m.rowid AS r FROM memory_metadata m
             WHERE {cond}{ty}{keyset} ORDER BY {order} LIMIT {lim})"
        ));
    }
    let lim = limit_sql(limit);
    let sql = format!(
        "SELECT {ROW_COLUMNS} FROM memory_metadata m WHERE m.rowid IN ({}) ORDER BY {order} LIMIT {lim}",
        parts.join(" UNION ALL ")
    );
    Ok(query_rows(tx, &sql, &params, |_| Ok(()))?
        .into_iter()
        .map(|(r, ())| r)
        .collect())
}

/// The recency order reversed (for pages before a position).
const RECENCY_ORDER_REVERSED: &str = "m.updated_at ASC, m.\"key\" DESC, m.scope DESC, m.scope_id DESC";

/// Rows after a position of the recency order (`?` = updated_at, key, scope, scope id or `''`). The leading
/// `updated_at <=` is the range the `(…, updated_at DESC, key)` indexes answer; the rest breaks the ties.
const AFTER_SQL: &str = "m.updated_at <= ?1 AND (m.updated_at < ?1 OR (m.updated_at = ?1 AND (m.\"key\" > ?2 OR \
     (m.\"key\" = ?2 AND (m.scope > ?3 OR (m.scope = ?3 AND coalesce(m.scope_id, '') > ?4))))))";

/// Rows before a position of the recency order (the mirror of [`AFTER_SQL`]).
const BEFORE_SQL: &str = "m.updated_at >= ?1 AND (m.updated_at > ?1 OR (m.updated_at = ?1 AND (m.\"key\" < ?2 OR \
     (m.\"key\" = ?2 AND (m.scope < ?3 OR (m.scope = ?3 AND coalesce(m.scope_id, '') < ?4))))))";

/// A position in the recency order: the native row `(scope, scope_id, key)`, and which side of it a page lies on.
/// Pages read from a position cost what the first page costs, however deep (keyset paging).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecencyCursor<'a> {
    /// The row's scope.
    pub scope: Scope,
    /// The row's scope id (`None` for global and federated).
    pub scope_id: Option<&'a str>,
    /// The row's key.
    pub key: &'a Key,
    /// `false`: the rows after it (the next page, in recency order); `true`: the rows before it (the previous
    /// page, nearest first, so in reverse recency order).
    pub before: bool,
}

impl Index {
    /// One page of the recency pool from a position: at most `limit` visible native rows (of `memory_type` when
    /// given) after `cursor` in recency order, or before it nearest first when `cursor.before`. The position is
    /// read from the cursor's row, so it is exact whatever the stored timestamp's spelling. `Ok(None)` when that
    /// row no longer exists. Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn recency_page(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        cursor: &RecencyCursor<'_>,
        limit: usize,
    ) -> Result<Option<Vec<MemoryRow>>> {
        self.read(|tx| {
            let position = tx
                .prepare_cached(
                    "SELECT updated_at, \"key\", scope, coalesce(scope_id, '') FROM memory_metadata
                     WHERE scope = ?1 AND scope_id IS ?2 AND \"key\" = ?3 AND source_kind = 'native'",
                )?
                .query_row(
                    rusqlite::params![cursor.scope.as_str(), cursor.scope_id, cursor.key.as_str()],
                    |r| Ok([r.get::<_, Value>(0)?, r.get(1)?, r.get(2)?, r.get(3)?]),
                );
            let position = match position {
                Ok(p) => p,
                Err(rusqlite::Error::QueryReturnedNoRows) => return Ok(None),
                Err(e) => return Err(e.into()),
            };
            // The numbered placeholders of the keyset condition become positional ones, bound per sub-select.
            let (sql, order) = if cursor.before {
                (BEFORE_SQL, RECENCY_ORDER_REVERSED)
            } else {
                (AFTER_SQL, RECENCY_ORDER)
            };
            let mut values = Vec::new();
            let mut cond = String::new();
            let mut rest = sql;
            while let Some(at) = rest.find('?') {
                cond.push_str(&rest[..at]);
                cond.push('?');
                let digit = rest.as_bytes().get(at + 1).copied().unwrap_or(b'1');
                let i = usize::from(digit.saturating_sub(b'1')).min(3);
                values.push(position[i].clone());
                rest = rest.get(at + 2..).unwrap_or("");
            }
            cond.push_str(rest);
            ordered_from(tx, vis, memory_type, limit, order, Some((&cond, &values))).map(Some)
        })
    }

    /// Marks that move whenever a memory is added or removed: the number of indexed rows and each journal's entry
    /// count (`(container, N)` by container). Two reads of small tables; a cache of per-scope counts keyed by them
    /// is current for every change made through the tool (each appends a journal entry or changes the row count).
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn change_marks(&self) -> Result<(u64, Vec<(String, u64)>)> {
        self.read(|tx| {
            let docs: i64 = tx
                .prepare_cached("SELECT docs FROM cao_search_stats WHERE id = 1")?
                .query_row([], |r| r.get(0))?;
            let heads = tx
                .prepare_cached("SELECT container, entries FROM cao_journal_meta ORDER BY container")?
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?
                .map(|r| r.map(|(c, n)| (c, u64::try_from(n).unwrap_or(0))))
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok((u64::try_from(docs).unwrap_or(0), heads))
        })
    }

    /// The end of the recency pool: the last `limit` visible native rows (of `memory_type` when given) of the
    /// recency order, the oldest first (the previous page when paging backwards reaches an earlier scope group).
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn recency_pool_last(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        limit: usize,
    ) -> Result<Vec<MemoryRow>> {
        self.read(|tx| ordered(tx, vis, memory_type, limit, RECENCY_ORDER_REVERSED))
    }

    /// Rows of `(scope, scope_id)` created at or after `since` (a stored timestamp, `YYYY-MM-DD …`), counted per
    /// day: `(YYYY-MM-DD, count)` ascending. One range read of the covering index `cao_idx_memory_created`, so its
    /// cost is the rows created since, not the rows held (vault rows, which the index does not tell apart, count
    /// too). Errors: [`crate::IndexError::Sqlite`] /
    /// [`crate::IndexError::Pool`].
    pub fn created_per_day(&self, scope: Scope, scope_id: Option<&str>, since: &str) -> Result<Vec<(String, u64)>> {
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT substr(created_at, 1, 10) AS day, count(*) FROM memory_metadata
                 WHERE scope = ?1 AND scope_id IS ?2 AND created_at >= ?3
                 GROUP BY day ORDER BY day",
            )?;
            let rows = stmt.query_map(rusqlite::params![scope.as_str(), scope_id, since], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (day, n) = row?;
                out.push((day, u64::try_from(n).unwrap_or(0)));
            }
            Ok(out)
        })
    }

    /// The usage pool: at most `limit` visible native rows (of `memory_type` when given) ordered by access_count
    /// desc, updated_at desc, key (spec/reference-facts.md "Ranking", usage order).
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn usage_pool(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        limit: usize,
    ) -> Result<Vec<MemoryRow>> {
        self.read(|tx| ordered(tx, vis, memory_type, limit, USAGE_ORDER))
    }

    /// The newest visible row with this exact key (any scope/scope id allowed by `vis`; a vault row only through a
    /// vault term of `vis`), if any. Uses the `(key, scope, scope_id, source_kind)` unique index. Errors:
    /// [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn find_key(&self, vis: &Visibility, key: &Key) -> Result<Option<MemoryRow>> {
        if vis.is_empty() {
            return Ok(None);
        }
        self.read(|tx| {
            let mut params = vec![Value::Text(key.as_str().to_owned())];
            let vis_sql = vis.sql(&mut params);
            let sql = format!(
                "SELECT {ROW_COLUMNS} FROM memory_metadata m
                 WHERE m.\"key\" = ? AND {vis_sql} ORDER BY {RECENCY_ORDER} LIMIT 1"
            );
            Ok(query_rows(tx, &sql, &params, |_| Ok(()))?
                .into_iter()
                .next()
                .map(|(r, ())| r))
        })
    }

    /// The native row `(scope, scope_id, key)` (`scope_id` `None` = no scope id), if any.
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn get(&self, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<Option<MemoryRow>> {
        self.read(|tx| {
            let sql = format!(
                "SELECT {ROW_COLUMNS} FROM memory_metadata m
                 WHERE m.\"key\" = ?1 AND m.scope = ?2 AND m.scope_id IS ?3 AND m.source_kind = 'native'"
            );
            let params = [
                Value::Text(key.as_str().to_owned()),
                Value::Text(scope.as_str().to_owned()),
                scope_id.map_or(Value::Null, |s| Value::Text(s.to_owned())),
            ];
            Ok(query_rows(tx, &sql, &params, |_| Ok(()))?
                .into_iter()
                .next()
                .map(|(r, ())| r))
        })
    }

    /// Visible native rows newest first (`updated_at` desc, then key), narrowed by the filter's scope and type.
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn list(&self, filter: &ListFilter) -> Result<Vec<MemoryRow>> {
        let vis = match filter.scope {
            Some(s) => filter.visibility.only_scope(s),
            None => filter.visibility.clone(),
        };
        self.read(|tx| recency(tx, &vis, filter.memory_type, filter.limit.unwrap_or(usize::MAX >> 1)))
    }

    /// The recency pool: at most `limit` visible native rows (of `memory_type` when given), `updated_at` desc then
    /// key asc. Indexed or not. Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn recency_pool(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        limit: usize,
    ) -> Result<Vec<MemoryRow>> {
        self.read(|tx| recency(tx, vis, memory_type, limit))
    }

    /// The metadata pool: at most `limit` visible indexed rows (of `memory_type` when given) in which every
    /// whitespace-separated term of `query`, lowercased, is a substring of `lowercase(key + " " + tags + " " +
    /// content)`; newest first (`updated_at` desc, then key). Terms of 3 or more characters find candidates
    /// through the trigram table; every term is then checked on the row itself, so terms shorter than 3 characters
    /// count too (a query of only such terms scans the visible rows). An empty query is the recency pool.
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn metadata_pool(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<MemoryRow>> {
        let terms = metadata_terms(query);
        if terms.is_empty() {
            return self.recency_pool(vis, memory_type, limit);
        }
        if vis.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        self.read(|tx| {
            let long: Vec<&String> = terms.iter().filter(|t| t.chars().count() >= 3).collect();
            let matches = |row: &MemoryRow| {
                let hay = metadata_haystack(row);
                terms.iter().all(|t| hay.contains(t.as_str()))
            };
            let mut out = Vec::new();
            if long.is_empty() {
                // Scan the visible rows newest first.
                let mut params = Vec::new();
                let vis_sql = vis.sql(&mut params);
                let ty = type_clause(memory_type, &mut params);
                let sql = format!(
                    "SELECT {ROW_COLUMNS} FROM memory_metadata m
                     WHERE m.search_rowid IS NOT NULL AND {vis_sql}{ty}
                     ORDER BY {RECENCY_ORDER}"
                );
                let mut stmt = tx.prepare_cached(&sql)?;
                let mut rows = stmt.query(params_from_iter(&params))?;
                while out.len() < limit {
                    let Some(r) = rows.next()? else { break };
                    if let Ok(row) = decode_row(r, 0)?
                        && matches(&row)
                    {
                        out.push(row);
                    }
                }
                return Ok(out);
            }
            let match_expr = Value::Text(long.iter().map(|t| fts_quote(t)).collect::<Vec<_>>().join(" "));
            let mut candidates: Vec<i64> = Vec::new();
            let first = |r: &rusqlite::Row<'_>| r.get::<_, i64>(0);
            match scan_plan(tx, vis, memory_type)? {
                Scan::Everything => {
                    let mut stmt =
                        tx.prepare_cached("SELECT rowid FROM cao_memory_trigram WHERE cao_memory_trigram MATCH ?1")?;
                    candidates.extend(
                        stmt.query_map([&match_expr], first)?
                            .collect::<rusqlite::Result<Vec<_>>>()?,
                    );
                }
                Scan::Ranges(ranges) => {
                    let mut stmt = tx.prepare_cached(
                        "SELECT rowid FROM cao_memory_trigram
                         WHERE cao_memory_trigram MATCH ?1 AND rowid BETWEEN ?2 AND ?3",
                    )?;
                    for (lo, hi) in ranges {
                        let p = [match_expr.clone(), Value::Integer(lo), Value::Integer(hi)];
                        candidates.extend(
                            stmt.query_map(params_from_iter(p), first)?
                                .collect::<rusqlite::Result<Vec<_>>>()?,
                        );
                    }
                }
                Scan::Join => {
                    let mut params = vec![match_expr];
                    let vis_sql = vis.sql(&mut params);
                    let ty = type_clause(memory_type, &mut params);
                    let sql = format!(
                        "SELECT t.rowid FROM cao_memory_trigram t
                         CROSS JOIN memory_metadata m ON m.search_rowid = t.rowid
                         WHERE cao_memory_trigram MATCH ? AND {vis_sql}{ty}"
                    );
                    let mut stmt = tx.prepare_cached(&sql)?;
                    candidates.extend(
                        stmt.query_map(params_from_iter(&params), first)?
                            .collect::<rusqlite::Result<Vec<_>>>()?,
                    );
                }
            }
            if candidates.is_empty() {
                return Ok(out);
            }
            // Newest first among the candidates, then check every term on each row until `limit` match.
            let list = format!(
                "[{}]",
                candidates.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
            );
            let sql = format!(
                "SELECT m.search_rowid FROM memory_metadata m
                 WHERE m.search_rowid IN (SELECT value FROM json_each(?1)) ORDER BY {RECENCY_ORDER}"
            );
            let mut stmt = tx.prepare_cached(&sql)?;
            let mut ordered = stmt.query([list])?;
            while out.len() < limit {
                let Some(r) = ordered.next()? else { break };
                if let Some(row) = fetch_by_search_rowid(tx, r.get(0)?)?
                    && visible(&row, vis, memory_type)
                    && matches(&row)
                {
                    out.push(row);
                }
            }
            Ok(out)
        })
    }

    /// Every native row of a wiki container, for its index.md: `global` = scopes global, session and agent;
    /// `federated` = scope federated; any other name = scope project with that scope id. Ordered by scope, then
    /// newest first, then key. Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn index_rows(&self, container: &str) -> Result<Vec<MemoryRow>> {
        self.read(|tx| {
            let (cond, params): (&str, Vec<Value>) = match container {
                "global" => ("m.scope IN ('global', 'session', 'agent')", vec![]),
                "federated" => ("m.scope = 'federated'", vec![]),
                other => (
                    "m.scope = 'project' AND m.scope_id = ?",
                    vec![Value::Text(other.to_owned())],
                ),
            };
            let sql = format!(
                "SELECT {ROW_COLUMNS} FROM memory_metadata m WHERE {cond} AND m.source_kind = 'native'
                 ORDER BY m.scope ASC, {RECENCY_ORDER}"
            );
            Ok(query_rows(tx, &sql, &params, |_| Ok(()))?
                .into_iter()
                .map(|(r, ())| r)
                .collect())
        })
    }

    /// Every decodable native row, ordered by scope, scope id, key (for repair).
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn all_rows(&self) -> Result<Vec<MemoryRow>> {
        self.read(|tx| {
            let sql = format!(
                "SELECT {ROW_COLUMNS} FROM memory_metadata m WHERE m.source_kind = 'native'
                 ORDER BY m.scope, m.scope_id, m.\"key\""
            );
            Ok(query_rows(tx, &sql, &[], |_| Ok(()))?
                .into_iter()
                .map(|(r, ())| r)
                .collect())
        })
    }

    /// Native rows that cannot be represented as a [`MemoryRow`] (unknown scope or type, invalid key), which every
    /// other read skips. Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn invalid_rows(&self) -> Result<Vec<InvalidRow>> {
        self.read(|tx| {
            let sql =
                format!("SELECT {ROW_COLUMNS} FROM memory_metadata m WHERE m.source_kind = 'native' ORDER BY m.id");
            let mut stmt = tx.prepare(&sql)?;
            let mut rows = stmt.query([])?;
            let mut out = Vec::new();
            while let Some(r) = rows.next()? {
                if let Err(bad) = decode_row(r, 0)? {
                    out.push(bad);
                }
            }
            Ok(out)
        })
    }

    /// Whether there is at least one native row (constant time, unlike [`Index::count`], which scans).
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn has_rows(&self) -> Result<bool> {
        self.read(|tx| {
            Ok(tx.query_row(
                "SELECT EXISTS (SELECT 1 FROM memory_metadata WHERE source_kind = 'native')",
                [],
                |r| r.get::<_, bool>(0),
            )?)
        })
    }

    /// The number of native rows of each `(scope, scope_id)`, ordered by scope then scope id (the containers
    /// overview). Rows with a scope this crate does not know are left out. One grouped pass over
    /// `idx_memory_scope`. Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn scope_counts(&self) -> Result<Vec<(Scope, Option<String>, u64)>> {
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT scope, scope_id, count(*) FROM memory_metadata WHERE source_kind = 'native'
                 GROUP BY scope, scope_id ORDER BY scope, scope_id",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (scope, scope_id, n) = row?;
                if let Ok(scope) = scope.parse::<Scope>() {
                    out.push((scope, scope_id, u64::try_from(n).unwrap_or(0)));
                }
            }
            Ok(out)
        })
    }

    /// Number of rows of every kind (native and vault), counted on the smallest index of the table, so it does not
    /// read the rows themselves. Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn count_all(&self) -> Result<usize> {
        self.read(|tx| {
            let n: i64 = tx.query_row("SELECT count(*) FROM memory_metadata", [], |r| r.get(0))?;
            Ok(usize::try_from(n).unwrap_or(0))
        })
    }

    /// Number of native rows. Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn count(&self) -> Result<usize> {
        self.read(|tx| {
            let n: i64 = tx.query_row(
                "SELECT count(*) FROM memory_metadata WHERE source_kind = 'native'",
                [],
                |r| r.get(0),
            )?;
            Ok(usize::try_from(n).unwrap_or(0))
        })
    }

    /// Number of native rows that are not in the search tables (written only by the reference, or left over from a
    /// table rebuild); repair re-stores them. Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn unindexed_count(&self) -> Result<usize> {
        self.read(|tx| {
            let n: i64 = tx.query_row(
                "SELECT count(*) FROM memory_metadata WHERE source_kind = 'native' AND search_rowid IS NULL",
                [],
                |r| r.get(0),
            )?;
            Ok(usize::try_from(n).unwrap_or(0))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_terms_are_distinct_lowercase_words() {
        assert_eq!(metadata_terms("Foo  foo BAR"), ["foo", "bar"]);
        assert_eq!(fts_quote("a\"b"), "\"a\"\"b\"");
        assert_eq!(metadata_terms("ab\0cd  \0"), ["ab", "cd"]);
        assert_eq!(fts_quote("a\0b"), "\"a b\"");
    }

    /// Why limits are literals ([`limit_sql`]): this SQLite plans a statement with a bound `LIMIT` again at every
    /// execution, and one with a literal limit once.
    #[test]
    fn a_literal_limit_is_prepared_once() {
        let d = tempfile::tempdir().expect("tempdir");
        let path = d.path().join("x.db");
        drop(crate::Index::open(&path).expect("open"));
        let conn = rusqlite::Connection::open(&path).expect("raw");
        let order = "SELECT id FROM memory_metadata WHERE scope = ?1 ORDER BY updated_at DESC LIMIT";
        let reprepared = |sql: &str, bind_limit: bool| {
            let mut stmt = conn.prepare(sql).expect("prepare");
            for i in 0..4_i64 {
                stmt.raw_bind_parameter(1, "project").expect("bind");
                if bind_limit {
                    stmt.raw_bind_parameter(2, i + 1).expect("bind");
                }
                let mut rows = stmt.raw_query();
                while rows.next().expect("step").is_some() {}
            }
            stmt.get_status(rusqlite::StatementStatus::RePrepare)
        };
        assert!(reprepared(&format!("{order} ?2"), true) >= 3, "a bound limit re-plans");
        assert_eq!(reprepared(&format!("{order} {}", limit_sql(4)), false), 0);
    }
}
