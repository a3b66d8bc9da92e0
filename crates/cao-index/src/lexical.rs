//! The lexical (BM25) pool: candidates from the FTS5 table, scored with the caller's [`LexicalScorer`] over this
//! index's term statistics (docs/decisions/0009-lexical-ranking.md).
//!
//! FTS5 only finds candidates (`MATCH` on a row's own text, the `body` and `meta` columns, inside the visibility's
//! rowid ranges) and, for frequent terms, pre-selects a bounded number of them with its own BM25; it never decides
//! the order. Each candidate's stored columns (content terms; key, tags and day; the neighbours' terms) give the
//! term counts and field lengths, `cao_search_stats` the corpus size and field totals, `cao_search_terms` the
//! document frequencies, and the scorer (`cao_rank::Bm25`) the score.
//!
//! A match needs a query term in the memory's own text (content, key, tags, stored day): the neighbours' text only
//! adds to the score of a memory that matches on its own, so a memory stored next to a match is never a hit because
//! of it (docs/decisions/0009).

use crate::row::MemoryRow;
use crate::search::{Scan, fetch_by_search_rowid, fts_quote, scan_plan, type_clause, visible};
use crate::visibility::Visibility;
use crate::{Index, Result};
use cao_core::MemoryType;
use cao_core::lexical::{CorpusStats, LexicalScorer, TermInDoc};
use rusqlite::types::Value;
use rusqlite::{OptionalExtension, Transaction, params_from_iter};

/// Most candidate rows recall's pool reads and scores through its rarer terms (the sum of their document
/// frequencies): [`PoolBudget::RECALL`].
const PRUNE_MAX_CANDIDATES: u64 = 1000;

/// How a lexical pool draws its candidates (see `top`): the rarer query terms generate candidates while the sum of
/// their document frequencies fits in `rare_candidates`; rows matching only the other (frequent) terms are
/// pre-selected as `frequent` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolBudget {
    /// Most candidate rows read and scored through the rarer terms.
    pub rare_candidates: u64,
    /// How rows that match only the frequent terms are pre-selected.
    pub frequent: FrequentTerms,
}

/// How [`PoolBudget`] pre-selects rows that match only a query's frequent terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrequentTerms {
    /// By FTS5's own BM25: the best rows, but FTS5 scores every row matching those terms, so the cost grows with
    /// them (recall, where the order matters most).
    Bm25,
    /// The most recently indexed matching rows (highest search rowids): FTS5 walks its index in rowid order and
    /// stops at the limit, so the cost does not grow with the corpus (the related-memory pass on every store).
    Recent,
}

impl PoolBudget {
    /// Recall's pool: 1,000 rare-term candidates, frequent terms pre-selected by FTS5's BM25.
    pub const RECALL: PoolBudget = PoolBudget {
        rare_candidates: PRUNE_MAX_CANDIDATES,
        frequent: FrequentTerms::Bm25,
    };
}

/// Rows FTS5's pre-selection takes beyond the ones still missing from the pool.
const PRESELECT_MARGIN: usize = 32;

/// The distinct indexed terms of `query` in first-occurrence order ([`cao_core::text::index_terms`]: reference
/// tokens without stop words, stemmed). Empty when the query has only stop words (nothing in the index can match).
pub fn search_tokens(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in cao_core::text::index_terms(query) {
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// A query term present in the corpus, with its document frequency and weight.
struct QueryTerm {
    term: String,
    df: u64,
    idf: f64,
}

/// The corpus statistics and the query's terms present in the corpus (first-occurrence order).
fn query_terms(
    tx: &Transaction<'_>,
    scorer: &dyn LexicalScorer,
    tokens: Vec<String>,
) -> rusqlite::Result<(CorpusStats, Vec<QueryTerm>)> {
    let corpus = tx
        .prepare_cached("SELECT docs, tokens, context_tokens FROM cao_search_stats WHERE id = 1")?
        .query_row([], |r| {
            let n = |i: usize| -> rusqlite::Result<u64> { Ok(u64::try_from(r.get::<_, i64>(i)?).unwrap_or(0)) };
            Ok(CorpusStats {
                docs: n(0)?,
                field_terms: [n(1)?, n(2)?],
            })
        })?;
    let mut df_stmt = tx.prepare_cached("SELECT df FROM cao_search_terms WHERE term = ?1")?;
    let mut terms = Vec::with_capacity(tokens.len());
    for term in tokens {
        let df: i64 = df_stmt.query_row([&term], |r| r.get(0)).optional()?.unwrap_or(0);
        let df = u64::try_from(df).unwrap_or(0);
        if df > 0 {
            let idf = scorer.idf(&corpus, df);
            terms.push(QueryTerm { term, df, idf });
        }
    }
    Ok((corpus, terms))
}

/// One stored lexical document: its three columns as stored (indexed terms, single-space separated).
struct Doc {
    body: String,
    meta: String,
    near: String,
}

/// A scored candidate: `(search_rowid, score)`.
type Scored = (i64, f64);

/// The terms of one stored column.
fn terms_of(column: &str) -> Vec<&str> {
    column.split(' ').filter(|t| !t.is_empty()).collect()
}

/// The score of one stored document for `terms` (content field = `body`, context field = `meta` + `near`); `None`
/// when it is not a match: no term occurs in its own text (`body` or `meta`: content, key, tags, stored day; a
/// memory is never a hit through its neighbours' text alone, docs/decisions/0009), or it scores 0 (its terms are
/// only in a field the scorer weighs 0).
fn score_doc(scorer: &dyn LexicalScorer, corpus: &CorpusStats, terms: &[QueryTerm], doc: &Doc) -> Option<f64> {
    let (body, meta, near) = (terms_of(&doc.body), terms_of(&doc.meta), terms_of(&doc.near));
    let count = |v: &[&str], term: &str| u32::try_from(v.iter().filter(|x| **x == term).count()).unwrap_or(u32::MAX);
    let len = [body.len(), meta.len() + near.len()].map(|n| u32::try_from(n).unwrap_or(u32::MAX));
    let mut score = 0.0;
    let mut own = false;
    for t in terms {
        let (in_body, in_meta) = (count(&body, &t.term), count(&meta, &t.term));
        let tf = [in_body, in_meta.saturating_add(count(&near, &t.term))];
        let hit = TermInDoc { tf, len };
        if hit.matches() {
            let s = scorer.term_score(corpus, t.idf, &hit);
            own |= s > 0.0 && in_body.saturating_add(in_meta) > 0;
            score += s;
        }
    }
    (own && score > 0.0).then_some(score)
}

/// The FTS5 query of rows containing any of `terms` in their own text (the `body` and `meta` columns).
fn match_expr(terms: &[&QueryTerm]) -> Value {
    let any = terms
        .iter()
        .map(|t| fts_quote(&t.term))
        .collect::<Vec<_>>()
        .join(" OR ");
    Value::Text(format!("{{body meta}} : ({any})"))
}

/// Read the documents of `rows` (`(rowid, body, meta, near)` rows of a query) and score them.
fn score_rows(
    rows: &mut rusqlite::Rows<'_>,
    scorer: &dyn LexicalScorer,
    corpus: &CorpusStats,
    terms: &[QueryTerm],
    out: &mut Vec<Scored>,
) -> rusqlite::Result<()> {
    while let Some(r) = rows.next()? {
        let rowid: i64 = r.get(0)?;
        let doc = Doc {
            body: r.get(1)?,
            meta: r.get(2)?,
            near: r.get(3)?,
        };
        if let Some(s) = score_doc(scorer, corpus, terms, &doc) {
            out.push((rowid, s));
        }
    }
    Ok(())
}

/// Every visible row matching `expr`, scored on all of `terms`.
#[allow(clippy::too_many_arguments)]
fn candidates(
    tx: &Transaction<'_>,
    plan: &Scan,
    vis: &Visibility,
    memory_type: Option<MemoryType>,
    scorer: &dyn LexicalScorer,
    corpus: &CorpusStats,
    terms: &[QueryTerm],
    expr: Value,
) -> rusqlite::Result<Vec<Scored>> {
    let mut out = Vec::new();
    match plan {
        Scan::Everything => {
            let mut stmt =
                tx.prepare_cached("SELECT rowid, body, meta, near FROM cao_memory_fts WHERE cao_memory_fts MATCH ?1")?;
            score_rows(&mut stmt.query([&expr])?, scorer, corpus, terms, &mut out)?;
        }
        Scan::Ranges(ranges) => {
            let mut stmt = tx.prepare_cached(
                "SELECT rowid, body, meta, near FROM cao_memory_fts
                 WHERE cao_memory_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3",
            )?;
            for (lo, hi) in ranges {
                let p = [expr.clone(), Value::Integer(*lo), Value::Integer(*hi)];
                score_rows(&mut stmt.query(params_from_iter(p))?, scorer, corpus, terms, &mut out)?;
            }
        }
        Scan::Join => {
            let mut params = vec![expr];
            let vis_sql = vis.sql(&mut params);
            let ty = type_clause(memory_type, &mut params);
            let sql = format!(
                "SELECT f.rowid, f.body, f.meta, f.near
                 FROM cao_memory_fts f CROSS JOIN memory_metadata m ON m.search_rowid = f.rowid
                 WHERE f.cao_memory_fts MATCH ? AND {vis_sql}{ty}"
            );
            let mut stmt = tx.prepare_cached(&sql)?;
            score_rows(
                &mut stmt.query(params_from_iter(&params))?,
                scorer,
                corpus,
                terms,
                &mut out,
            )?;
        }
    }
    Ok(out)
}

/// The search rowids of at most `k` visible rows matching `expr`: with [`FrequentTerms::Bm25`] best first by FTS5's
/// own BM25 (`bm25()`, k1 1.2, b 0.75, columns weighted 1, 0.5, 0.5), with [`FrequentTerms::Recent`] the highest
/// rowids first. A pre-selection only, read from FTS5's index (no document is read).
fn preselect(
    tx: &Transaction<'_>,
    plan: &Scan,
    vis: &Visibility,
    memory_type: Option<MemoryType>,
    expr: Value,
    k: usize,
    mode: FrequentTerms,
) -> rusqlite::Result<Vec<i64>> {
    if mode == FrequentTerms::Recent {
        return preselect_recent(tx, plan, vis, memory_type, expr, k);
    }
    let lim = Value::Integer(i64::try_from(k).unwrap_or(i64::MAX));
    let pair = |r: &rusqlite::Row<'_>| Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?));
    let mut hits: Vec<(i64, f64)> = Vec::new();
    match plan {
        Scan::Everything => {
            let mut stmt = tx.prepare_cached(
                "SELECT rowid, bm25(cao_memory_fts, 1.0, 0.5, 0.5) AS s FROM cao_memory_fts
                 WHERE cao_memory_fts MATCH ?1 ORDER BY s, rowid LIMIT ?2",
            )?;
            let rows = stmt.query_map(params_from_iter([&expr, &lim]), pair)?;
            hits = rows.collect::<rusqlite::Result<_>>()?;
        }
        Scan::Ranges(ranges) => {
            let mut stmt = tx.prepare_cached(
                "SELECT rowid, bm25(cao_memory_fts, 1.0, 0.5, 0.5) AS s FROM cao_memory_fts
                 WHERE cao_memory_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3 ORDER BY s, rowid LIMIT ?4",
            )?;
            for (lo, hi) in ranges {
                let p = [expr.clone(), Value::Integer(*lo), Value::Integer(*hi), lim.clone()];
                for h in stmt.query_map(params_from_iter(p), pair)? {
                    hits.push(h?);
                }
            }
            hits.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            hits.truncate(k);
        }
        Scan::Join => {
            let mut params = vec![expr];
            let vis_sql = vis.sql(&mut params);
            let ty = type_clause(memory_type, &mut params);
            params.push(lim);
            let sql = format!(
                "SELECT f.rowid, bm25(cao_memory_fts, 1.0, 0.5, 0.5) AS s
                 FROM cao_memory_fts f CROSS JOIN memory_metadata m ON m.search_rowid = f.rowid
                 WHERE f.cao_memory_fts MATCH ? AND {vis_sql}{ty} ORDER BY s, f.rowid LIMIT ?"
            );
            let mut stmt = tx.prepare_cached(&sql)?;
            let rows = stmt.query_map(params_from_iter(&params), pair)?;
            hits = rows.collect::<rusqlite::Result<_>>()?;
        }
    }
    Ok(hits.into_iter().map(|(r, _)| r).collect())
}

/// [`preselect`] with [`FrequentTerms::Recent`]: the `k` highest visible rowids matching `expr`.
fn preselect_recent(
    tx: &Transaction<'_>,
    plan: &Scan,
    vis: &Visibility,
    memory_type: Option<MemoryType>,
    expr: Value,
    k: usize,
) -> rusqlite::Result<Vec<i64>> {
    let lim = Value::Integer(i64::try_from(k).unwrap_or(i64::MAX));
    let mut hits: Vec<i64> = Vec::new();
    match plan {
        Scan::Everything => {
            let mut stmt = tx.prepare_cached(
                "SELECT rowid FROM cao_memory_fts WHERE cao_memory_fts MATCH ?1 ORDER BY rowid DESC LIMIT ?2",
            )?;
            let rows = stmt.query_map(params_from_iter([&expr, &lim]), |r| r.get::<_, i64>(0))?;
            hits = rows.collect::<rusqlite::Result<_>>()?;
        }
        Scan::Ranges(ranges) => {
            let mut stmt = tx.prepare_cached(
                "SELECT rowid FROM cao_memory_fts
                 WHERE cao_memory_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3 ORDER BY rowid DESC LIMIT ?4",
            )?;
            for (lo, hi) in ranges {
                let p = [expr.clone(), Value::Integer(*lo), Value::Integer(*hi), lim.clone()];
                for h in stmt.query_map(params_from_iter(p), |r| r.get::<_, i64>(0))? {
                    hits.push(h?);
                }
            }
            hits.sort_unstable_by(|a, b| b.cmp(a));
            hits.truncate(k);
        }
        Scan::Join => {
            let mut params = vec![expr];
            let vis_sql = vis.sql(&mut params);
            let ty = type_clause(memory_type, &mut params);
            params.push(lim);
            let sql = format!(
                "SELECT f.rowid FROM cao_memory_fts f CROSS JOIN memory_metadata m ON m.search_rowid = f.rowid
                 WHERE f.cao_memory_fts MATCH ? AND {vis_sql}{ty} ORDER BY f.rowid DESC LIMIT ?"
            );
            let mut stmt = tx.prepare_cached(&sql)?;
            let rows = stmt.query_map(params_from_iter(&params), |r| r.get::<_, i64>(0))?;
            hits = rows.collect::<rusqlite::Result<_>>()?;
        }
    }
    Ok(hits)
}

/// The stored document of one search rowid.
fn doc_of(tx: &Transaction<'_>, rowid: i64) -> rusqlite::Result<Option<Doc>> {
    tx.prepare_cached("SELECT body, meta, near FROM cao_memory_fts WHERE rowid = ?1")?
        .query_row([rowid], |r| {
            Ok(Doc {
                body: r.get(0)?,
                meta: r.get(1)?,
                near: r.get(2)?,
            })
        })
        .optional()
}

/// The best `limit` `(search_rowid, score)` pairs, best first (ties by search rowid).
///
/// Bounded reads whatever the corpus: the rarest terms G (as many as fit in `budget.rare_candidates` by document
/// frequency) generate candidates, each read and scored on every query term. While G yields fewer than `limit` rows
/// (or no term is rare enough to be in G), at most `limit` + (rows found) + [`PRESELECT_MARGIN`] more rows are
/// pre-selected from the other terms (from FTS5's index alone, no document read; by FTS5's own BM25 or the most
/// recent, [`FrequentTerms`]), and only those are read and scored. A row that matches none of G scores at most the sum of [`LexicalScorer::term_bound`] over the
/// other terms; when the `limit`-th candidate scores above that the answer is exact, otherwise such a row can be
/// missing from the pool (its score is bounded by the frequent terms' low IDF). This keeps long natural-language
/// queries at a few milliseconds on 100k memories (docs/decisions/0001 and 0009).
#[allow(clippy::too_many_arguments)]
fn top(
    tx: &Transaction<'_>,
    plan: &Scan,
    vis: &Visibility,
    memory_type: Option<MemoryType>,
    scorer: &dyn LexicalScorer,
    corpus: &CorpusStats,
    terms: &[QueryTerm],
    limit: usize,
    pool: PoolBudget,
) -> rusqlite::Result<Vec<(i64, f64)>> {
    let mut by_df: Vec<&QueryTerm> = terms.iter().collect();
    by_df.sort_by(|a, b| a.df.cmp(&b.df).then_with(|| a.term.cmp(&b.term)));
    let mut split = 0;
    let mut budget = 0;
    while split < by_df.len() && budget + by_df[split].df <= pool.rare_candidates {
        budget += by_df[split].df;
        split += 1;
    }
    let mut found = if split > 0 {
        let expr = match_expr(&by_df[..split]);
        candidates(tx, plan, vis, memory_type, scorer, corpus, terms, expr)?
    } else {
        Vec::new()
    };
    if found.len() < limit && split < by_df.len() {
        let seen: std::collections::HashSet<i64> = found.iter().map(|f| f.0).collect();
        let k = limit + found.len() + PRESELECT_MARGIN;
        let expr = match_expr(&by_df[split..]);
        for rowid in preselect(tx, plan, vis, memory_type, expr, k, pool.frequent)? {
            if seen.contains(&rowid) {
                continue;
            }
            if let Some(doc) = doc_of(tx, rowid)?
                && let Some(s) = score_doc(scorer, corpus, terms, &doc)
            {
                found.push((rowid, s));
            }
        }
    }
    found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    found.truncate(limit);
    Ok(found)
}

impl Index {
    /// The lexical (BM25) pool: at most `limit` visible indexed rows (of `memory_type` when given) that contain at
    /// least one term of `query` ([`search_tokens`]) in their own text (content, key, tags, stored day) and score
    /// above 0 with `scorer`, with their raw score from `scorer` over the whole indexed corpus's statistics (higher =
    /// better; the neighbours' text counts in the context field), best first; ties by key, scope, scope id (which of
    /// several rows tied at the cut is kept follows their search rowids).
    ///
    /// Terms absent from the corpus are left out; a query without a present term gives an empty pool. The work is
    /// bounded whatever the corpus (see `top`: exact unless a row shares only frequent terms with the query).
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn bm25_pool(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        query: &str,
        limit: usize,
        scorer: &dyn LexicalScorer,
    ) -> Result<Vec<(MemoryRow, f64)>> {
        self.bm25_pool_terms(vis, memory_type, &search_tokens(query), limit, scorer)
    }

    /// [`Index::bm25_pool`] of already-made terms: `terms` are distinct indexed terms as [`search_tokens`] returns
    /// them (or as [`cao_core::text::index_terms`] makes them), used as given (a stop word or unknown term matches
    /// nothing). The cost grows with the number of terms (one document-frequency lookup each) and the bounded
    /// candidate pool, so callers that build a query from a whole document bound the terms first.
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn bm25_pool_terms(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        terms: &[String],
        limit: usize,
        scorer: &dyn LexicalScorer,
    ) -> Result<Vec<(MemoryRow, f64)>> {
        self.bm25_pool_budgeted(vis, memory_type, terms, limit, scorer, PoolBudget::RECALL)
    }

    /// [`Index::bm25_pool_terms`] with the candidate budget `pool` instead of [`PoolBudget::RECALL`]: the
    /// related-memory pass bounds its reads further and pre-selects frequent-term rows by recency, so its cost does
    /// not grow with the corpus.
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn bm25_pool_budgeted(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        terms: &[String],
        limit: usize,
        scorer: &dyn LexicalScorer,
        pool: PoolBudget,
    ) -> Result<Vec<(MemoryRow, f64)>> {
        if terms.is_empty() || vis.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        self.read(|tx| bm25_pool_in(tx, vis, memory_type, terms, limit, scorer, pool))
    }

    /// Raw lexical scores of `rows` against `query`, in input order: the value [`Index::bm25_pool`] reports for a
    /// row (same terms, corpus statistics and scorer), `None` for a row that is not a match (no query term in its own
    /// text, or a score of 0) or is not in the search index. One read snapshot; one point lookup per row.
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn bm25_scores(
        &self,
        query: &str,
        rows: &[&MemoryRow],
        scorer: &dyn LexicalScorer,
    ) -> Result<Vec<Option<f64>>> {
        let tokens = search_tokens(query);
        if tokens.is_empty() || rows.is_empty() {
            return Ok(vec![None; rows.len()]);
        }
        self.read(|tx| {
            let (corpus, terms) = query_terms(tx, scorer, tokens)?;
            if terms.is_empty() {
                return Ok(vec![None; rows.len()]);
            }
            let mut stmt = tx.prepare_cached(
                "SELECT f.body, f.meta, f.near FROM memory_metadata m JOIN cao_memory_fts f
                 ON f.rowid = m.search_rowid WHERE m.id = ?1",
            )?;
            let mut out = Vec::with_capacity(rows.len());
            for row in rows {
                let doc = stmt
                    .query_row([&row.id], |r| {
                        Ok(Doc {
                            body: r.get(0)?,
                            meta: r.get(1)?,
                            near: r.get(2)?,
                        })
                    })
                    .optional()?;
                out.push(doc.and_then(|d| score_doc(scorer, &corpus, &terms, &d)));
            }
            Ok(out)
        })
    }
}

/// The body of [`Index::bm25_pool_budgeted`] inside an open transaction (a read snapshot, or a write transaction
/// whose own rows it then sees).
#[allow(clippy::too_many_arguments)]
pub(crate) fn bm25_pool_in(
    tx: &Transaction<'_>,
    vis: &Visibility,
    memory_type: Option<MemoryType>,
    terms: &[String],
    limit: usize,
    scorer: &dyn LexicalScorer,
    pool: PoolBudget,
) -> Result<Vec<(MemoryRow, f64)>> {
    if terms.is_empty() || vis.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let (corpus, terms) = query_terms(tx, scorer, terms.to_vec())?;
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let plan = scan_plan(tx, vis, memory_type)?;
    let hits = top(tx, &plan, vis, memory_type, scorer, &corpus, &terms, limit, pool)?;
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_distinct_ordered_and_without_stop_words() {
        assert_eq!(
            search_tokens("Rust, rust & RUST-2 tests testing"),
            ["rust", "2", "test"]
        );
        assert!(search_tokens("— …").is_empty());
        assert_eq!(search_tokens("When did we pick Kafka?"), ["pick", "kafka"]);
        assert!(
            search_tokens("what is it").is_empty(),
            "a query of only stop words has no term (documents hold none)"
        );
    }
}
