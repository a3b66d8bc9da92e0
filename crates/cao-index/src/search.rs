//! Reads: point lookups, listings and the three candidate pools of recall (recency, BM25, metadata substring).

use crate::row::{InvalidRow, MemoryRow, ROW_COLUMNS, decode_row};
use crate::visibility::Visibility;
use crate::write::trigram_body;
use crate::{Index, Result, partition};
use cao_core::{Key, MemoryType, Scope, SourceKind};
use rusqlite::types::Value;
use rusqlite::{OptionalExtension, Transaction, params_from_iter};

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

/// Question words and auxiliaries left out of a BM25 query when other terms remain: agents phrase recall queries
/// as questions ("When did we decide to use Kafka?"), and these words carry no topic. Documents keep them.
/// Measured on LoCoMo (`cargo xtask retrieval`): recall@5 +0.03, MRR +0.04 (docs/decisions/0001-fts5-search-index.md).
const QUESTION_WORDS: [&str; 21] = [
    "what", "when", "where", "who", "whom", "whose", "why", "how", "which", "did", "does", "do", "is", "was", "were",
    "are", "has", "have", "had", "would", "could",
];

/// The distinct search terms of `query` in first-occurrence order: the reference's tokens (lowercase runs of
/// `[a-zA-Z0-9]`), stemmed ([`cao_core::text::search_terms`]), without the question words (`QUESTION_WORDS`)
/// unless nothing else is left.
pub fn search_tokens(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in cao_core::text::search_terms(query) {
        if !out.contains(&t) {
            out.push(t);
        }
    }
    let topical: Vec<String> = out.iter().filter(|t| !is_question_word(t)).cloned().collect();
    if topical.is_empty() { out } else { topical }
}

fn is_question_word(term: &str) -> bool {
    static STEMS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
        QUESTION_WORDS
            .iter()
            .flat_map(|w| cao_core::text::search_terms(w))
            .collect()
    });
    STEMS.iter().any(|s| s == term)
}

/// Distinct lowercase whitespace-separated terms of a metadata query (the reference's `query.lower().split()`).
fn metadata_terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in query.to_lowercase().split_whitespace() {
        if !out.iter().any(|o| o == t) {
            out.push(t.to_owned());
        }
    }
    out
}

/// An FTS5 string literal: `"` + term with `"` doubled + `"`.
fn fts_quote(term: &str) -> String {
    format!("\"{}\"", term.replace('"', "\"\""))
}

fn limit_param(limit: usize) -> Value {
    Value::Integer(i64::try_from(limit).unwrap_or(i64::MAX))
}

fn type_clause(memory_type: Option<MemoryType>, params: &mut Vec<Value>) -> &'static str {
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

fn fetch_by_search_rowid(tx: &Transaction<'_>, search_rowid: i64) -> rusqlite::Result<Option<MemoryRow>> {
    let sql = format!("SELECT {ROW_COLUMNS} FROM memory_metadata m WHERE m.search_rowid = ?1");
    let mut stmt = tx.prepare_cached(&sql)?;
    let mut rows = stmt.query([search_rowid])?;
    match rows.next()? {
        Some(r) => Ok(decode_row(r, 0)?.ok()),
        None => Ok(None),
    }
}

/// Re-check a row found through the search tables against the filters its search rowid encodes.
fn visible(row: &MemoryRow, vis: &Visibility, memory_type: Option<MemoryType>) -> bool {
    row.source_kind == SourceKind::Native
        && vis.allows(row.scope, row.scope_id.as_deref())
        && memory_type.is_none_or(|t| t == row.memory_type)
}

/// Corpus size from which tokens in at least half the documents are left out of a multi-token MATCH.
const COMMON_TOKEN_MIN_DOCS: i64 = 1000;

/// FTS5's `bm25()` constants.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Most candidate rows the pruned BM25 path collects through the rarer query tokens (the sum of their document
/// frequencies). Above it the rarest tokens alone are used as the candidate generator.
const PRUNE_MAX_CANDIDATES: i64 = 1000;

/// FTS5's IDF: `ln((N - df + 0.5) / (df + 0.5))`, clamped to 1e-6 when not positive.
fn fts5_idf(docs: i64, df: i64) -> f64 {
    let idf = (((docs - df) as f64 + 0.5) / (df as f64 + 0.5)).ln();
    if idf <= 0.0 { 1e-6 } else { idf }
}

/// `(search_rowid, -bm25())` of the visible rows matching `match_expr`, best first (ties by search rowid), at most
/// `limit` of them (`None` = all).
fn fts_hits(
    tx: &Transaction<'_>,
    plan: &Scan,
    vis: &Visibility,
    memory_type: Option<MemoryType>,
    match_expr: Value,
    limit: Option<usize>,
) -> rusqlite::Result<Vec<(i64, f64)>> {
    let lim = limit.map_or(Value::Integer(-1), limit_param);
    let pair = |r: &rusqlite::Row<'_>| Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?));
    let mut hits: Vec<(i64, f64)> = Vec::new();
    match plan {
        Scan::Everything => {
            let mut stmt = tx.prepare_cached(
                "SELECT rowid, -bm25(cao_memory_fts) AS score FROM cao_memory_fts
                 WHERE cao_memory_fts MATCH ?1 ORDER BY score DESC, rowid ASC LIMIT ?2",
            )?;
            hits.extend(
                stmt.query_map(params_from_iter([&match_expr, &lim]), pair)?
                    .collect::<rusqlite::Result<Vec<_>>>()?,
            );
        }
        Scan::Ranges(ranges) => {
            let mut stmt = tx.prepare_cached(
                "SELECT rowid, -bm25(cao_memory_fts) AS score FROM cao_memory_fts
                 WHERE cao_memory_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3
                 ORDER BY score DESC, rowid ASC LIMIT ?4",
            )?;
            for (lo, hi) in ranges {
                let p = [
                    match_expr.clone(),
                    Value::Integer(*lo),
                    Value::Integer(*hi),
                    lim.clone(),
                ];
                hits.extend(
                    stmt.query_map(params_from_iter(p), pair)?
                        .collect::<rusqlite::Result<Vec<_>>>()?,
                );
            }
        }
        Scan::Join => {
            let mut params = vec![match_expr];
            let vis_sql = vis.sql(&mut params);
            let ty = type_clause(memory_type, &mut params);
            params.push(lim);
            let sql = format!(
                "SELECT cao_memory_fts.rowid, -bm25(cao_memory_fts) AS score
                 FROM cao_memory_fts CROSS JOIN memory_metadata m ON m.search_rowid = cao_memory_fts.rowid
                 WHERE cao_memory_fts MATCH ? AND {vis_sql}{ty}
                 ORDER BY score DESC, cao_memory_fts.rowid ASC LIMIT ?"
            );
            let mut stmt = tx.prepare_cached(&sql)?;
            hits.extend(
                stmt.query_map(params_from_iter(&params), pair)?
                    .collect::<rusqlite::Result<Vec<_>>>()?,
            );
        }
    }
    Ok(hits)
}

/// The BM25 top `limit` without scoring every row that matches a frequent token.
///
/// FTS5's `bm25()` is a sum of one term per query token, each below `idf * (k1 + 1)`. The tokens are split into the
/// rarest ones E (as many as fit in [`PRUNE_MAX_CANDIDATES`] by document frequency, at least one) and the rest R.
/// The candidates are the visible rows that match E; FTS5 scores them on E and the R terms are added here with
/// FTS5's own formula and statistics (row count and token total from `cao_search_stats`, document frequency from
/// `cao_search_terms`, the row's stored token list), so every returned score is the full BM25 score.
///
/// A row that matches none of E scores below `sum over R of idf * (k1 + 1)`. When the `limit`-th candidate scores
/// above that bound the answer is exactly FTS5's; otherwise a row that shares only frequent tokens with the query
/// may be missing from the pool (its score is bounded by the frequent tokens' low IDF). That trade keeps recall at
/// a few milliseconds on 100k memories for long natural-language queries (docs/decisions/0001-fts5-search-index.md).
/// When E matches fewer than `limit` visible rows, E grows by the next rarest token while the document frequencies
/// stay within four times the budget. `None` when E covers every token (the plain query is then as cheap) or
/// still matches fewer than `limit` rows (the frequent tokens must supply the rest; the caller runs the plain
/// query).
fn pruned_top(
    tx: &Transaction<'_>,
    plan: &Scan,
    vis: &Visibility,
    memory_type: Option<MemoryType>,
    tokens: &[(&String, i64)],
    docs: i64,
    limit: usize,
) -> rusqlite::Result<Option<Vec<(i64, f64)>>> {
    let total: i64 = tx
        .prepare_cached("SELECT tokens FROM cao_search_stats WHERE id = 1")?
        .query_row([], |r| r.get(0))?;
    if docs <= 0 || total <= 0 {
        return Ok(None);
    }
    let avgdl = total as f64 / docs as f64;
    let mut sorted = tokens.to_vec();
    sorted.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(b.0)));
    let mut split = 1;
    let mut budget = sorted[0].1;
    while split < sorted.len() && budget + sorted[split].1 <= PRUNE_MAX_CANDIDATES {
        budget += sorted[split].1;
        split += 1;
    }
    // Too few visible candidates: widen the rare set (up to 4x the budget) before giving way to the plain query.
    let found = loop {
        if split == sorted.len() {
            return Ok(None);
        }
        let expr = Value::Text(
            sorted[..split]
                .iter()
                .map(|(t, _)| fts_quote(t))
                .collect::<Vec<_>>()
                .join(" OR "),
        );
        let found = fts_hits(tx, plan, vis, memory_type, expr, None)?;
        if found.len() >= limit {
            break found;
        }
        budget += sorted[split].1;
        if budget > 4 * PRUNE_MAX_CANDIDATES {
            return Ok(None);
        }
        split += 1;
    };
    let rest: Vec<(&str, f64)> = sorted[split..]
        .iter()
        .map(|(t, df)| (t.as_str(), fts5_idf(docs, *df)))
        .collect();
    let mut body_stmt = tx.prepare_cached("SELECT body FROM cao_memory_fts WHERE rowid = ?1")?;
    let mut full = Vec::with_capacity(found.len());
    for (rowid, rare_score) in found {
        let body: String = body_stmt.query_row([rowid], |r| r.get(0))?;
        full.push((rowid, rare_score + bm25_of_body(&body, &rest, avgdl).unwrap_or(0.0)));
    }
    full.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    full.truncate(limit);
    Ok(Some(full))
}

/// The corpus size and the query tokens a BM25 search scores, with their document frequencies: tokens present in
/// the corpus, without those in at least half of it when the corpus has [`COMMON_TOKEN_MIN_DOCS`] documents or more
/// (unless that would leave none). Shared by [`Index::bm25_pool`] and [`Index::bm25_scores`] so their scores agree.
fn chosen_tokens<'t>(tx: &Transaction<'_>, tokens: &'t [String]) -> rusqlite::Result<(i64, Vec<(&'t String, i64)>)> {
    let docs: i64 = tx
        .prepare_cached("SELECT docs FROM cao_search_stats WHERE id = 1")?
        .query_row([], |r| r.get(0))?;
    let mut df_stmt = tx.prepare_cached("SELECT df FROM cao_search_terms WHERE term = ?1")?;
    let mut present = Vec::with_capacity(tokens.len());
    for t in tokens {
        let df: i64 = df_stmt.query_row([t], |r| r.get(0)).optional()?.unwrap_or(0);
        if df > 0 {
            present.push((t, df));
        }
    }
    // Tokens in at least half the corpus: FTS5 clamps their IDF, so they only cost time.
    // Only on corpora big enough for it to matter: on a small one it would make membership depend on chance.
    let informative: Vec<(&String, i64)> = if docs >= COMMON_TOKEN_MIN_DOCS {
        present.iter().copied().filter(|(_, df)| 2 * df < docs).collect()
    } else {
        Vec::new()
    };
    Ok((docs, if informative.is_empty() { present } else { informative }))
}

/// FTS5's `bm25()` (negated: higher = better) of one stored search body (space-separated tokens) for `tokens`
/// (`(token, idf)`), with average document length `avgdl`; `None` when the body contains none of the tokens.
fn bm25_of_body(body: &str, tokens: &[(&str, f64)], avgdl: f64) -> Option<f64> {
    let toks: Vec<&str> = body.split(' ').filter(|t| !t.is_empty()).collect();
    let d = toks.len() as f64;
    let mut score = 0.0;
    let mut matched = false;
    for (t, idf) in tokens {
        let tf = toks.iter().filter(|x| *x == t).count() as f64;
        if tf > 0.0 {
            matched = true;
            score += idf * (tf * (K1 + 1.0)) / (tf + K1 * (1.0 - B + B * d / avgdl));
        }
    }
    matched.then_some(score)
}

/// Whether every whitespace-separated term of `query`, lowercased, is a substring of
/// `lowercase(key + " " + tags + " " + content)` of `row`: the predicate of [`Index::metadata_pool`] (the
/// reference's `_matches_all_terms`). A query without terms matches every row.
pub fn matches_all_terms(query: &str, row: &MemoryRow) -> bool {
    let hay = trigram_body(row.key.as_str(), &row.tags, &row.content);
    metadata_terms(query).iter().all(|t| hay.contains(t.as_str()))
}

/// Most rowid ranges queried one by one before one join-filtered query is cheaper.
const MAX_RANGES: usize = 16;

/// How a search restricts itself to the visible rows.
enum Scan {
    /// Everything is visible: no restriction.
    Everything,
    /// These inclusive search-rowid ranges (see `crate::partition`).
    Ranges(Vec<(i64, i64)>),
    /// Too many ranges: join each match to its row and filter there.
    Join,
}

fn scan_plan(tx: &Transaction<'_>, vis: &Visibility, memory_type: Option<MemoryType>) -> rusqlite::Result<Scan> {
    if vis.is_all() && memory_type.is_none() {
        return Ok(Scan::Everything);
    }
    let mut ranges = Vec::new();
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
        params.push(limit_param(limit));
        parts.push(format!(
            "SELECT r FROM (SELECT m.rowid AS r FROM memory_metadata m
             WHERE {cond} AND m.source_kind = 'native'{ty} ORDER BY {order} LIMIT ?)"
        ));
    }
    params.push(limit_param(limit));
    let sql = format!(
        "SELECT {ROW_COLUMNS} FROM memory_metadata m WHERE m.rowid IN ({}) ORDER BY {order} LIMIT ?",
        parts.join(" UNION ALL ")
    );
    Ok(query_rows(tx, &sql, &params, |_| Ok(()))?
        .into_iter()
        .map(|(r, ())| r)
        .collect())
}

impl Index {
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

    /// The newest visible native row with this exact key (any scope/scope id allowed by `vis`), if any. Uses the
    /// `(key, scope, scope_id, source_kind)` unique index. Errors: [`crate::IndexError::Sqlite`] /
    /// [`crate::IndexError::Pool`].
    pub fn find_key(&self, vis: &Visibility, key: &Key) -> Result<Option<MemoryRow>> {
        if vis.is_empty() {
            return Ok(None);
        }
        self.read(|tx| {
            let mut params = vec![Value::Text(key.as_str().to_owned())];
            let vis_sql = vis.sql(&mut params);
            let sql = format!(
                "SELECT {ROW_COLUMNS} FROM memory_metadata m
                 WHERE m.\"key\" = ? AND m.source_kind = 'native' AND {vis_sql} ORDER BY {RECENCY_ORDER} LIMIT 1"
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

    /// The BM25 pool: at most `limit` visible indexed rows that share at least one token with `query`, with their
    /// raw score (higher = better; `-bm25()` of FTS5, k1 = 1.2, b = 0.75, statistics over the whole indexed
    /// corpus), best first; ties by key, scope, scope id (which of several rows tied at the cut is kept follows
    /// their search rowids).
    ///
    /// The MATCH is an OR of the distinct query tokens ([`search_tokens`]). When the query has several tokens and the
    /// corpus has at least 1 000 documents, those whose document frequency is at least half of it are left out (FTS5 clamps their IDF to 1e-6, so
    /// they change no score, but matching them would score most rows); a query of only such tokens keeps them all.
    /// Tokens absent from the corpus are left out too. No token (or none present) gives an empty pool. With two or
    /// more tokens the candidates are the rows matching the rarer tokens, each scored on every token (see
    /// `pruned_top`: exact unless a row shares only frequent tokens with the query), else one plain FTS5 query.
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn bm25_pool(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<(MemoryRow, f64)>> {
        self.bm25_pool_terms(vis, memory_type, &search_tokens(query), limit)
    }

    /// [`Index::bm25_pool`] of already-made search terms: `tokens` are distinct stemmed terms as
    /// [`search_tokens`] returns them (or as [`cao_core::text::search_terms`] makes them), used as given. The cost
    /// grows with the number of tokens (one document-frequency lookup each), not with the corpus beyond the
    /// pruned candidate set, so callers that build a query from a whole document bound the tokens first.
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn bm25_pool_terms(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        tokens: &[String],
        limit: usize,
    ) -> Result<Vec<(MemoryRow, f64)>> {
        if tokens.is_empty() || vis.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        self.read(|tx| {
            let (docs, present_chosen) = chosen_tokens(tx, tokens)?;
            if present_chosen.is_empty() {
                return Ok(Vec::new());
            }
            let match_expr = Value::Text(
                present_chosen
                    .iter()
                    .map(|(t, _)| fts_quote(t))
                    .collect::<Vec<_>>()
                    .join(" OR "),
            );
            let plan = scan_plan(tx, vis, memory_type)?;
            let pruned = if present_chosen.len() >= 2 {
                pruned_top(tx, &plan, vis, memory_type, &present_chosen, docs, limit)?
            } else {
                None
            };
            let mut hits = match pruned {
                Some(h) => h,
                None => fts_hits(tx, &plan, vis, memory_type, match_expr, Some(limit))?,
            };
            hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            hits.truncate(limit);
            let mut out = Vec::with_capacity(hits.len());
            for (search_rowid, score) in hits {
                if let Some(row) = fetch_by_search_rowid(tx, search_rowid)?
                    && visible(&row, vis, memory_type)
                {
                    out.push((row, score));
                }
            }
            out.sort_by(|(a, sa), (b, sb)| {
                sb.total_cmp(sa)
                    .then_with(|| (&a.key, a.scope, &a.scope_id).cmp(&(&b.key, b.scope, &b.scope_id)))
            });
            Ok(out)
        })
    }

    /// A BM25 pool whose cost is bounded whatever the corpus size, for callers that need a good match, not the
    /// exact BM25 top (the related-memory pass). `tokens` are distinct stemmed terms as for
    /// [`Index::bm25_pool_terms`]; those present in the corpus are taken rarest first (document frequency, then the
    /// token) while the sum of their document frequencies stays within `max_postings` (tokens in at least half of a
    /// corpus of 1 000 or more documents are left out, as in [`Index::bm25_pool`]); a token too frequent to fit is
    /// left out, and when even the rarest does not fit the pool is empty. One FTS5 query over those tokens, within
    /// `vis`, gives at most `limit` rows with FTS5's `bm25()` over them (negated: higher = better), best first, ties
    /// by key then identity.
    ///
    /// Cost: one document-frequency lookup per token, one FTS5 query visiting at most `max_postings` postings, and
    /// at most `limit` row reads; nothing grows with the corpus beyond that.
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn bm25_pool_bounded(
        &self,
        vis: &Visibility,
        tokens: &[String],
        limit: usize,
        max_postings: i64,
    ) -> Result<Vec<(MemoryRow, f64)>> {
        if tokens.is_empty() || vis.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        self.read(|tx| {
            let (_, mut chosen) = chosen_tokens(tx, tokens)?;
            chosen.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(b.0)));
            let mut budget = 0i64;
            let kept: Vec<&String> = chosen
                .iter()
                .take_while(|(_, df)| {
                    budget += df;
                    budget <= max_postings
                })
                .map(|(t, _)| *t)
                .collect();
            if kept.is_empty() {
                return Ok(Vec::new());
            }
            let expr = Value::Text(kept.iter().map(|t| fts_quote(t)).collect::<Vec<_>>().join(" OR "));
            let plan = scan_plan(tx, vis, None)?;
            let mut hits = fts_hits(tx, &plan, vis, None, expr, Some(limit))?;
            hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            hits.truncate(limit);
            let mut out = Vec::with_capacity(hits.len());
            for (search_rowid, score) in hits {
                if let Some(row) = fetch_by_search_rowid(tx, search_rowid)?
                    && visible(&row, vis, None)
                {
                    out.push((row, score));
                }
            }
            out.sort_by(|(a, sa), (b, sb)| {
                sb.total_cmp(sa)
                    .then_with(|| (&a.key, a.scope, &a.scope_id).cmp(&(&b.key, b.scope, &b.scope_id)))
            });
            Ok(out)
        })
    }

    /// Raw BM25 scores of `rows` against `query`, in input order: the value [`Index::bm25_pool`] reports for a row
    /// (same token selection, statistics over the whole indexed corpus, FTS5's formula), `None` for a row that
    /// shares no scored token with the query or is not in the search index. One read snapshot; one point lookup
    /// per row. Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn bm25_scores(&self, query: &str, rows: &[&MemoryRow]) -> Result<Vec<Option<f64>>> {
        let tokens = search_tokens(query);
        if tokens.is_empty() || rows.is_empty() {
            return Ok(vec![None; rows.len()]);
        }
        self.read(|tx| {
            let (docs, chosen) = chosen_tokens(tx, &tokens)?;
            let total: i64 = tx
                .prepare_cached("SELECT tokens FROM cao_search_stats WHERE id = 1")?
                .query_row([], |r| r.get(0))?;
            if chosen.is_empty() || docs <= 0 || total <= 0 {
                return Ok(vec![None; rows.len()]);
            }
            let avgdl = total as f64 / docs as f64;
            let weighted: Vec<(&str, f64)> = chosen.iter().map(|(t, df)| (t.as_str(), fts5_idf(docs, *df))).collect();
            let mut stmt = tx.prepare_cached(
                "SELECT f.body FROM memory_metadata m JOIN cao_memory_fts f ON f.rowid = m.search_rowid
                 WHERE m.id = ?1",
            )?;
            let mut out = Vec::with_capacity(rows.len());
            for row in rows {
                let body: Option<String> = stmt.query_row([&row.id], |r| r.get(0)).optional()?;
                out.push(body.and_then(|b| bm25_of_body(&b, &weighted, avgdl)));
            }
            Ok(out)
        })
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
                let hay = trigram_body(row.key.as_str(), &row.tags, &row.content);
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
                     WHERE m.source_kind = 'native' AND m.search_rowid IS NOT NULL AND {vis_sql}{ty}
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
    fn tokens_are_distinct_and_ordered() {
        assert_eq!(
            search_tokens("Rust, rust & RUST-2 tests testing"),
            ["rust", "2", "test"]
        );
        assert!(search_tokens("— …").is_empty());
        assert_eq!(search_tokens("When did we pick Kafka?"), ["we", "pick", "kafka"]);
        assert_eq!(
            search_tokens("what is"),
            ["what", "is"],
            "a query of only question words keeps them"
        );
        assert_eq!(metadata_terms("Foo  foo BAR"), ["foo", "bar"]);
        assert_eq!(fts_quote("a\"b"), "\"a\"\"b\"");
    }
}
