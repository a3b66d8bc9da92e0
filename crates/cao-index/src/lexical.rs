//! The lexical (BM25) pool: candidates from the FTS5 table, scored with the caller's [`LexicalScorer`] over this
//! index's term statistics (docs/decisions/0009-lexical-ranking.md).
//!
//! FTS5 only finds candidates (`MATCH` on a row's own text, the `body` and `meta` columns, inside the visibility's
//! rowid ranges, or the newest such rows for frequent terms); it never scores or orders them. Each candidate's
//! stored columns (content terms; key, tags and day; the neighbours' terms) give the term counts and field lengths,
//! `cao_search_stats` the corpus size and field totals, `cao_search_terms` the document frequencies, and the scorer
//! (`cao_rank::Bm25`) the score. How many candidates are read is bounded by [`PoolBudget`].
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

/// How a lexical pool draws its candidates (see `top`). Every candidate is read and scored on every query term; the
/// budget bounds how many are read, so the cost of a pool does not grow with the postings of frequent terms.
///
/// 0. When the caller sees at most `exact_visible_rows` indexed rows, every visible row holding a query term in its
///    own text is read and scored: the pool is exact, and steps 1-4 are skipped. Such a pool reads no more rows
///    than step 1 may (document frequencies count every partition, so for a small visibility the steps below would
///    leave out rows whose only own-text terms are frequent in the whole corpus, even when their neighbours' text
///    holds the query's rare terms; docs/decisions/0009, "Revision: exact pools for small visibilities").
/// 1. The rarest query terms generate candidates while the sum of their document frequencies fits in
///    `rare_candidates`.
/// 2. While that gives fewer rows than the pool's limit, the next rarest terms generate candidates too, one at a
///    time, while the sum stays within `widened_candidates`.
/// 3. While the pool is short (fewer rows than its limit, or a limit-th score that a row holding only the other
///    terms could still beat: the sum of their [`LexicalScorer::term_bound`]) and two or more terms are left: the
///    newest `every_term_rows` rows holding every one of them in their own text (FTS5 `AND`, read newest first).
/// 4. Fewer rows than the limit: the newest rows holding any of the other terms fill the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolBudget {
    /// Most candidate rows read and scored through the rarest terms (step 1).
    pub rare_candidates: u64,
    /// Most candidate rows read through the rarer terms when they give fewer rows than the limit (step 2); equal
    /// to `rare_candidates`: no widening.
    pub widened_candidates: u64,
    /// Most rows holding every remaining term read when the pool is still short (step 3; 0 = skip the step).
    pub every_term_rows: usize,
    /// Most visible indexed rows for which the pool reads every visible match and is exact (step 0; 0 = never).
    pub exact_visible_rows: usize,
}

impl PoolBudget {
    /// Recall's pool: exact when at most 1,000 indexed rows are visible; otherwise 1,000 rare-term candidates,
    /// widened to 4,000 while they give too few rows, then the newest 100 rows holding every remaining term
    /// (docs/decisions/0009: measured against the latency at 10,000 and 100,000 memories and the top scores found).
    pub const RECALL: PoolBudget = PoolBudget {
        rare_candidates: PRUNE_MAX_CANDIDATES,
        widened_candidates: 4 * PRUNE_MAX_CANDIDATES,
        every_term_rows: 100,
        exact_visible_rows: PRUNE_MAX_CANDIDATES as usize,
    };
}

/// Rows the recent fill (step 4 of [`PoolBudget`]) takes beyond the ones still missing from the pool.
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
#[derive(Debug, Clone, PartialEq)]
pub struct QueryTerm {
    /// The indexed term.
    pub term: String,
    /// Documents holding it (any field).
    pub df: u64,
    /// Its weight from the scorer ([`LexicalScorer::idf`]).
    pub idf: f64,
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
#[derive(Debug, Clone, Copy)]
pub struct Doc<'a> {
    /// The content field.
    pub body: &'a str,
    /// Key, tags and stored day (the own part of the context field).
    pub meta: &'a str,
    /// The neighbours' terms (the rest of the context field).
    pub near: &'a str,
}

/// A scored candidate: `(search_rowid, score)`.
type Scored = (i64, f64);

/// The slot of a stored term in [`TermFilter`]: its length and first and last bytes (`None` for an empty term).
fn filter_slot(term: &str) -> Option<usize> {
    let b = term.as_bytes();
    let (first, last) = (*b.first()?, *b.last()?);
    Some((b.len().wrapping_mul(31) ^ usize::from(first).wrapping_mul(7) ^ usize::from(last)) & 255)
}

/// A 256-bit filter over a query's terms: a stored term whose slot is unset is none of them, so most of a
/// document's terms are passed over without a comparison.
#[derive(Debug, Clone)]
pub struct TermFilter([u64; 4]);

impl TermFilter {
    /// The filter of a query's terms.
    pub fn new(terms: &[QueryTerm]) -> Self {
        Self::of(terms.iter().map(|t| t.term.as_str()))
    }

    /// The filter of some terms.
    pub fn of<'t>(terms: impl Iterator<Item = &'t str>) -> Self {
        let mut bits = [0u64; 4];
        for slot in terms.filter_map(filter_slot) {
            bits[slot / 64] |= 1 << (slot % 64);
        }
        TermFilter(bits)
    }

    /// Whether `term` may be one of the query's terms (false: it certainly is none of them).
    pub fn may_hold(&self, term: &str) -> bool {
        filter_slot(term).is_some_and(|slot| self.0[slot / 64] & (1 << (slot % 64)) != 0)
    }
}

/// The score of one stored document for `terms` (content field = `body`, context field = `meta` + `near`); `None`
/// when it is not a match: no term occurs in its own text (`body` or `meta`: content, key, tags, stored day; a
/// memory is never a hit through its neighbours' text alone, docs/decisions/0009), or it scores 0 (its terms are
/// only in a field the scorer weighs 0). One pass over the document's terms (`filter` is [`TermFilter::new`] of
/// `terms`); the terms' scores are summed in query order.
pub fn score_doc(
    scorer: &dyn LexicalScorer,
    corpus: &CorpusStats,
    terms: &[QueryTerm],
    filter: &TermFilter,
    doc: &Doc<'_>,
) -> Option<f64> {
    // Per query term: occurrences in body, meta, near.
    let mut small = [[0u32; 3]; 32];
    let mut large = Vec::new();
    let counts: &mut [[u32; 3]] = if terms.len() <= small.len() {
        &mut small[..terms.len()]
    } else {
        large.resize(terms.len(), [0u32; 3]);
        &mut large
    };
    let mut lens = [0u32; 3];
    for (field, column) in [doc.body, doc.meta, doc.near].into_iter().enumerate() {
        for term in column.split(' ').filter(|t| !t.is_empty()) {
            lens[field] = lens[field].saturating_add(1);
            if !filter.may_hold(term) {
                continue;
            }
            for (t, count) in terms.iter().zip(counts.iter_mut()) {
                if t.term == term {
                    count[field] = count[field].saturating_add(1);
                }
            }
        }
    }
    let len = [lens[0], lens[1].saturating_add(lens[2])];
    let mut score = 0.0;
    let mut own = false;
    for (t, [in_body, in_meta, in_near]) in terms.iter().zip(counts.iter().copied()) {
        let tf = [in_body, in_meta.saturating_add(in_near)];
        let hit = TermInDoc { tf, len };
        if hit.matches() {
            let s = scorer.term_score(corpus, t.idf, &hit);
            own |= s > 0.0 && in_body.saturating_add(in_meta) > 0;
            score += s;
        }
    }
    (own && score > 0.0).then_some(score)
}

/// The FTS5 query of rows containing `terms` joined by `op` (`"OR"`: any of them, `"AND"`: every one) in their own
/// text (the `body` and `meta` columns).
fn own_text_expr(terms: &[&QueryTerm], op: &str) -> Value {
    let joined = terms
        .iter()
        .map(|t| fts_quote(&t.term))
        .collect::<Vec<_>>()
        .join(&format!(" {op} "));
    Value::Text(format!("{{body meta}} : ({joined})"))
}

/// The FTS5 query of rows containing every one of `terms` in their own text.
fn every_expr(terms: &[&QueryTerm]) -> Value {
    own_text_expr(terms, "AND")
}

/// The FTS5 query of rows containing any of `terms` in their own text.
fn match_expr(terms: &[&QueryTerm]) -> Value {
    own_text_expr(terms, "OR")
}

/// The document columns a scorer reads, as a select list over the FTS5 table aliased `table` (`""` = unaliased):
/// `body, meta, near`, or `body` and two empty texts when the scorer ignores the context field
/// ([`LexicalScorer::uses_context`]: then `meta` and `near` change no score, so they are left unread).
fn doc_columns(scorer: &dyn LexicalScorer, table: &str) -> String {
    if scorer.uses_context() {
        format!("{table}body, {table}meta, {table}near")
    } else {
        format!("{table}body, '', ''")
    }
}

/// Column `i` of `r` as text, borrowed from the statement (no copy).
fn text_at<'r>(r: &'r rusqlite::Row<'_>, i: usize) -> rusqlite::Result<&'r str> {
    r.get_ref(i)?
        .as_str()
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e)))
}

/// Read the documents of `rows` (`(rowid, body, meta, near)` rows of a query) and score them; returns how many rows
/// were read (matches or not).
fn score_rows(
    rows: &mut rusqlite::Rows<'_>,
    scorer: &dyn LexicalScorer,
    corpus: &CorpusStats,
    terms: &[QueryTerm],
    out: &mut Vec<Scored>,
) -> rusqlite::Result<usize> {
    let filter = TermFilter::new(terms);
    let mut read = 0usize;
    while let Some(r) = rows.next()? {
        read += 1;
        let rowid: i64 = r.get(0)?;
        let doc = Doc {
            body: text_at(r, 1)?,
            meta: text_at(r, 2)?,
            near: text_at(r, 3)?,
        };
        if let Some(s) = score_doc(scorer, corpus, terms, &filter, &doc) {
            out.push((rowid, s));
        }
    }
    Ok(read)
}

/// The visible rows matching `expr`, scored on all of `terms`: every one, or with `newest = Some(n)` the `n` with the
/// highest search rowids (read newest first).
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
    newest: Option<usize>,
) -> rusqlite::Result<Vec<Scored>> {
    let mut out = Vec::new();
    let order = if newest.is_some() {
        " ORDER BY rowid DESC LIMIT ?"
    } else {
        ""
    };
    let cap = |n: usize| Value::Integer(i64::try_from(n).unwrap_or(i64::MAX));
    match plan {
        Scan::Everything => {
            let cols = doc_columns(scorer, "");
            let mut stmt = tx.prepare_cached(&format!(
                "SELECT rowid, {cols} FROM cao_memory_fts WHERE cao_memory_fts MATCH ?{order}"
            ))?;
            let mut p = vec![expr];
            p.extend(newest.map(cap));
            score_rows(&mut stmt.query(params_from_iter(p))?, scorer, corpus, terms, &mut out)?;
        }
        Scan::Ranges(ranges) => {
            let cols = doc_columns(scorer, "");
            let mut stmt = tx.prepare_cached(&format!(
                "SELECT rowid, {cols} FROM cao_memory_fts
                 WHERE cao_memory_fts MATCH ? AND rowid BETWEEN ? AND ?{order}"
            ))?;
            // Disjoint (merged by the plan); highest first, so a capped read takes the newest rows overall.
            let mut ranges = ranges.clone();
            ranges.sort_unstable_by_key(|r| std::cmp::Reverse(r.1));
            let mut left = newest;
            for (lo, hi) in ranges {
                if left == Some(0) {
                    break;
                }
                let mut p = vec![expr.clone(), Value::Integer(lo), Value::Integer(hi)];
                p.extend(left.map(cap));
                let read = score_rows(&mut stmt.query(params_from_iter(p))?, scorer, corpus, terms, &mut out)?;
                left = left.map(|n| n.saturating_sub(read));
            }
        }
        Scan::Join => {
            let mut params = vec![expr];
            let vis_sql = vis.sql(&mut params);
            let ty = type_clause(memory_type, &mut params);
            params.extend(newest.map(cap));
            let cols = doc_columns(scorer, "f.");
            let order = if newest.is_some() {
                " ORDER BY f.rowid DESC LIMIT ?"
            } else {
                ""
            };
            let sql = format!(
                "SELECT f.rowid, {cols}
                 FROM cao_memory_fts f CROSS JOIN memory_metadata m ON m.search_rowid = f.rowid
                 WHERE f.cao_memory_fts MATCH ? AND {vis_sql}{ty}{order}"
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

/// Most stored rows the recent pre-selection reads newest first ([`RecentWalk`]) before FTS5's index answers for the
/// rest: the newest rows of a partition nearly always hold a frequent term, so the walk ends after about as many
/// rows as it must find.
const RECENT_WALK: usize = 512;

/// A query's frequent terms, to test whether a stored document holds one in its own text (`body` or `meta`, the
/// columns an FTS5 `{body meta}` match reads).
struct Frequent<'a> {
    terms: Vec<&'a str>,
    filter: TermFilter,
}

impl<'a> Frequent<'a> {
    fn new(terms: &[&'a QueryTerm]) -> Self {
        Frequent {
            terms: terms.iter().map(|t| t.term.as_str()).collect(),
            filter: TermFilter::of(terms.iter().map(|t| t.term.as_str())),
        }
    }

    /// Whether the document's own text holds one of the terms: exactly what `MATCH '{body meta} : (t1 OR t2 ..)'`
    /// finds (both columns hold indexed terms separated by single spaces, each one FTS5 token).
    fn in_own_text(&self, doc: &Doc<'_>) -> bool {
        [doc.body, doc.meta].into_iter().any(|column| {
            column
                .split(' ')
                .any(|t| !t.is_empty() && self.filter.may_hold(t) && self.terms.contains(&t))
        })
    }
}

/// The recent fill of the frequent terms (step 4 of [`PoolBudget`]) read from the stored documents: the
/// visible rows newest first (highest search rowid), each tested for a frequent term in its own text; the first
/// `k` that hold one are the rows [`preselect_recent`] would return, and each that is not already `seen` is scored
/// on every query term. The reads grow with the rows walked, not with the postings of the frequent terms (which
/// FTS5 would have to position in every segment).
struct RecentWalk<'q> {
    scorer: &'q dyn LexicalScorer,
    corpus: &'q CorpusStats,
    terms: &'q [QueryTerm],
    filter: &'q TermFilter,
    frequent: &'q Frequent<'q>,
    seen: &'q std::collections::HashSet<i64>,
    /// Most rows read before the rest is left to FTS5 ([`RECENT_WALK`]; 0 = leave everything to FTS5).
    max_rows: usize,
}

impl RecentWalk<'_> {
    /// Walk `plan`'s rows newest first, pushing the scored matches into `out`. `Ok(None)` when the walk found `k`
    /// matching rows or read every visible row; otherwise the part left (the unread rowid ranges and how many
    /// matching rows are still wanted) for [`preselect_recent`]: after [`RecentWalk::max_rows`] rows, or at once for
    /// a joined visibility ([`Scan::Join`]).
    fn run(
        &self,
        tx: &Transaction<'_>,
        plan: &Scan,
        k: usize,
        out: &mut Vec<Scored>,
    ) -> rusqlite::Result<Option<(Scan, usize)>> {
        let mut ranges = match plan {
            Scan::Everything => vec![(i64::MIN, i64::MAX)],
            Scan::Ranges(r) => r.clone(),
            Scan::Join => return Ok(Some((Scan::Join, k))),
        };
        // Disjoint (merged by the plan); highest first.
        ranges.sort_unstable_by_key(|r| std::cmp::Reverse(r.1));
        let cols = doc_columns(self.scorer, "");
        let mut stmt = tx.prepare_cached(&format!(
            "SELECT rowid, {cols} FROM cao_memory_fts WHERE rowid BETWEEN ?1 AND ?2 ORDER BY rowid DESC"
        ))?;
        let (mut taken, mut walked) = (0usize, 0usize);
        for (i, &(lo, hi)) in ranges.iter().enumerate() {
            let mut rows = stmt.query([lo, hi])?;
            while let Some(r) = rows.next()? {
                let rowid: i64 = r.get(0)?;
                if walked == self.max_rows {
                    let mut rest = vec![(lo, rowid)];
                    rest.extend_from_slice(&ranges[i + 1..]);
                    return Ok(Some((Scan::Ranges(rest), k - taken)));
                }
                walked += 1;
                let doc = Doc {
                    body: text_at(r, 1)?,
                    meta: text_at(r, 2)?,
                    near: text_at(r, 3)?,
                };
                if !self.frequent.in_own_text(&doc) {
                    continue;
                }
                taken += 1;
                if !self.seen.contains(&rowid)
                    && let Some(s) = score_doc(self.scorer, self.corpus, self.terms, self.filter, &doc)
                {
                    out.push((rowid, s));
                }
                if taken == k {
                    return Ok(None);
                }
            }
        }
        Ok(None)
    }
}

/// The `k` highest visible search rowids matching `expr`, from FTS5's index alone (no document is read): the recent
/// fill's answer for what [`RecentWalk`] leaves.
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

/// The score of the stored document of one search rowid ([`score_doc`]); `None` when it is missing or no match.
fn score_rowid(
    tx: &Transaction<'_>,
    rowid: i64,
    scorer: &dyn LexicalScorer,
    corpus: &CorpusStats,
    terms: &[QueryTerm],
    filter: &TermFilter,
) -> rusqlite::Result<Option<f64>> {
    let cols = doc_columns(scorer, "");
    let mut stmt = tx.prepare_cached(&format!("SELECT {cols} FROM cao_memory_fts WHERE rowid = ?1"))?;
    let mut rows = stmt.query([rowid])?;
    let Some(r) = rows.next()? else { return Ok(None) };
    let doc = Doc {
        body: text_at(r, 0)?,
        meta: text_at(r, 1)?,
        near: text_at(r, 2)?,
    };
    Ok(score_doc(scorer, corpus, terms, filter, &doc))
}

/// Whether at most `cap` indexed rows (rows with a search rowid) are visible through `plan` (of `memory_type` when
/// given); reads at most `cap + 1` entries of the search-rowid index.
fn visible_rows_at_most(
    tx: &Transaction<'_>,
    plan: &Scan,
    vis: &Visibility,
    memory_type: Option<MemoryType>,
    cap: usize,
) -> rusqlite::Result<bool> {
    let over = i64::try_from(cap).unwrap_or(i64::MAX).saturating_add(1);
    let count = |sql: &str, params: Vec<Value>| -> rusqlite::Result<i64> {
        tx.prepare_cached(sql)?
            .query_row(params_from_iter(params), |r| r.get::<_, i64>(0))
    };
    let seen = match plan {
        Scan::Everything => count(
            "SELECT count(*) FROM (SELECT 1 FROM memory_metadata WHERE search_rowid IS NOT NULL LIMIT ?1)",
            vec![Value::Integer(over)],
        )?,
        Scan::Ranges(ranges) => {
            let mut seen = 0i64;
            for (lo, hi) in ranges {
                seen += count(
                    "SELECT count(*) FROM (SELECT 1 FROM memory_metadata WHERE search_rowid BETWEEN ?1 AND ?2 LIMIT ?3)",
                    vec![Value::Integer(*lo), Value::Integer(*hi), Value::Integer(over - seen)],
                )?;
                if seen >= over {
                    break;
                }
            }
            seen
        }
        Scan::Join => {
            let mut params = Vec::new();
            let vis_sql = vis.sql(&mut params);
            let ty = type_clause(memory_type, &mut params);
            params.push(Value::Integer(over));
            count(
                &format!(
                    "SELECT count(*) FROM (SELECT 1 FROM memory_metadata m
                     WHERE m.search_rowid IS NOT NULL AND {vis_sql}{ty} LIMIT ?)"
                ),
                params,
            )?
        }
    };
    Ok(seen < over)
}

/// Where the steps of a [`PoolBudget`] read their candidates: one backend's lexical index (FTS5 here, the
/// postings table of the PostgreSQL backend). [`pool_top`] runs the steps over it, so the pool algorithm exists once
/// for both backends.
pub trait CandidateSource {
    /// The backend's error.
    type Error;

    /// The visible rows whose own text holds any (`every` false) or every one (`every` true) of `match_terms`, each
    /// scored on all the query's terms as `(search_rowid, score)` (rows that do not match left out): every such
    /// row, or with `newest = Some(n)` the `n` of them with the highest search rowids.
    ///
    /// Errors: the backend's.
    fn candidates(
        &mut self,
        match_terms: &[&QueryTerm],
        every: bool,
        newest: Option<usize>,
    ) -> std::result::Result<Vec<(i64, f64)>, Self::Error>;

    /// Step 0: whether at most `cap` indexed rows are visible. By default `false` (the step is skipped).
    ///
    /// Errors: the backend's.
    fn visible_at_most(&mut self, cap: usize) -> std::result::Result<bool, Self::Error> {
        let _ = cap;
        Ok(false)
    }

    /// Step 0: every visible row holding any of `terms` in its own text, scored as
    /// [`CandidateSource::candidates`] scores (by default exactly `candidates(terms, false, None)`).
    ///
    /// Errors: the backend's.
    fn every_match(&mut self, terms: &[&QueryTerm]) -> std::result::Result<Vec<(i64, f64)>, Self::Error> {
        self.candidates(terms, false, None)
    }

    /// Step 4: push onto `found` about `k` of the newest rows holding any of `remaining` whose search rowid `seen`
    /// does not hold, scored as [`CandidateSource::candidates`] scores. By default the `k` newest candidates.
    ///
    /// Errors: the backend's.
    fn fill_recent(
        &mut self,
        remaining: &[&QueryTerm],
        k: usize,
        seen: &std::collections::HashSet<i64>,
        found: &mut Vec<(i64, f64)>,
    ) -> std::result::Result<(), Self::Error> {
        for hit in self.candidates(remaining, false, Some(k))? {
            if !seen.contains(&hit.0) {
                found.push(hit);
            }
        }
        Ok(())
    }
}

/// The best `limit` `(search_rowid, score)` pairs of `terms`, best first (ties by search rowid), read from `source`
/// within `pool` ([`PoolBudget`]'s steps).
///
/// A row holding none of the terms that generated candidates in its own text gets at most the sum of
/// [`LexicalScorer::term_bound`] over the other terms from them; once the `limit`-th candidate scores above that, no
/// such row can enter (the rule of MaxScore), so for a scorer without the context field the answer is exact; until
/// then step 3 reads the rows most likely to (those holding every other term). With
/// the context field such a row can also hold a generating term in its neighbours' text, which no index lists
/// (`near` is not in the inverted index), so a row lifted by its neighbours can be missing. Past the budget, a row
/// sharing only frequent terms with the query can be missing or be replaced by a newer one (its score is bounded
/// by those terms' low IDF). No step reads more rows
/// than its budget, so a pool costs about the same at 1,000 and at 100,000 memories (docs/decisions/0009).
///
/// Errors: the source's.
pub fn pool_top<S: CandidateSource + ?Sized>(
    source: &mut S,
    terms: &[QueryTerm],
    scorer: &dyn LexicalScorer,
    limit: usize,
    pool: PoolBudget,
) -> std::result::Result<Vec<(i64, f64)>, S::Error> {
    let mut by_df: Vec<&QueryTerm> = terms.iter().collect();
    by_df.sort_by(|a, b| a.df.cmp(&b.df).then_with(|| a.term.cmp(&b.term)));
    // Step 0: a small visibility is read whole (every visible row holding a term): exact.
    if pool.exact_visible_rows > 0 && source.visible_at_most(pool.exact_visible_rows)? {
        let mut found = source.every_match(&by_df)?;
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        found.truncate(limit);
        return Ok(found);
    }
    // Step 1: the rarest terms.
    let mut split = 0;
    let mut budget = 0;
    while split < by_df.len() && budget + by_df[split].df <= pool.rare_candidates {
        budget += by_df[split].df;
        split += 1;
    }
    let mut found = if split > 0 {
        source.candidates(&by_df[..split], false, None)?
    } else {
        Vec::new()
    };
    // The search rowids in `found`: a row that several steps read is scored once.
    let mut found_ids: std::collections::HashSet<i64> = found.iter().map(|f| f.0).collect();
    let add = |found: &mut Vec<Scored>, found_ids: &mut std::collections::HashSet<i64>, hits: Vec<Scored>| {
        for hit in hits {
            if found_ids.insert(hit.0) {
                found.push(hit);
            }
        }
    };
    // Whether a row matching only `by_df[split..]` could still be in the answer.
    let short = |found: &[Scored], split: usize| -> bool {
        if found.len() < limit {
            return true;
        }
        let bound: f64 = by_df[split..].iter().map(|t| scorer.term_bound(t.idf)).sum();
        let mut scores: Vec<f64> = found.iter().map(|f| f.1).collect();
        let (_, kth, _) = scores.select_nth_unstable_by(limit - 1, |a, b| b.total_cmp(a));
        *kth <= bound
    };
    // Step 2: the next rarest terms, one at a time.
    while split < by_df.len() && budget + by_df[split].df <= pool.widened_candidates && found.len() < limit {
        budget += by_df[split].df;
        let hits = source.candidates(&by_df[split..=split], false, None)?;
        add(&mut found, &mut found_ids, hits);
        split += 1;
    }
    // Step 3: the newest rows holding every remaining term.
    if pool.every_term_rows > 0 && by_df.len() - split >= 2 && short(&found, split) {
        let hits = source.candidates(&by_df[split..], true, Some(pool.every_term_rows))?;
        add(&mut found, &mut found_ids, hits);
    }
    // Step 4: the newest rows holding any remaining term fill a pool still short of `limit`.
    if found.len() < limit && split < by_df.len() {
        let k = limit + found.len() + PRESELECT_MARGIN;
        source.fill_recent(&by_df[split..], k, &found_ids, &mut found)?;
    }
    found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    found.truncate(limit);
    Ok(found)
}

/// The FTS5 candidates of one pool read in `tx`.
struct FtsCandidates<'a, 't> {
    tx: &'a Transaction<'t>,
    plan: &'a Scan,
    vis: &'a Visibility,
    memory_type: Option<MemoryType>,
    scorer: &'a dyn LexicalScorer,
    corpus: &'a CorpusStats,
    terms: &'a [QueryTerm],
    recent_walk: usize,
}

impl CandidateSource for FtsCandidates<'_, '_> {
    type Error = rusqlite::Error;

    fn candidates(
        &mut self,
        match_terms: &[&QueryTerm],
        every: bool,
        newest: Option<usize>,
    ) -> rusqlite::Result<Vec<Scored>> {
        let expr = if every {
            every_expr(match_terms)
        } else {
            match_expr(match_terms)
        };
        candidates(
            self.tx,
            self.plan,
            self.vis,
            self.memory_type,
            self.scorer,
            self.corpus,
            self.terms,
            expr,
            newest,
        )
    }

    fn visible_at_most(&mut self, cap: usize) -> rusqlite::Result<bool> {
        visible_rows_at_most(self.tx, self.plan, self.vis, self.memory_type, cap)
    }

    /// The visible rows read in rowid order (at most `exact_visible_rows` of them): cheaper than merging the
    /// frequent terms' doclists, and the same rows (test `a_small_visibility_gets_the_exact_pool`); a joined
    /// visibility asks FTS5.
    fn every_match(&mut self, terms: &[&QueryTerm]) -> rusqlite::Result<Vec<Scored>> {
        if matches!(self.plan, Scan::Join) {
            return self.candidates(terms, false, None);
        }
        let filter = TermFilter::new(self.terms);
        let every = Frequent::new(terms);
        let none = std::collections::HashSet::new();
        let walk = RecentWalk {
            scorer: self.scorer,
            corpus: self.corpus,
            terms: self.terms,
            filter: &filter,
            frequent: &every,
            seen: &none,
            max_rows: usize::MAX,
        };
        let mut found = Vec::new();
        walk.run(self.tx, self.plan, usize::MAX, &mut found)?;
        Ok(found)
    }

    /// The stored rows are read newest first (a walk whose cost does not grow with the postings of frequent
    /// terms); FTS5's index answers only for what that walk leaves (more than `recent_walk` rows without enough
    /// matches, or a joined visibility).
    fn fill_recent(
        &mut self,
        remaining: &[&QueryTerm],
        k: usize,
        seen: &std::collections::HashSet<i64>,
        found: &mut Vec<Scored>,
    ) -> rusqlite::Result<()> {
        let filter = TermFilter::new(self.terms);
        let frequent = Frequent::new(remaining);
        let walk = RecentWalk {
            scorer: self.scorer,
            corpus: self.corpus,
            terms: self.terms,
            filter: &filter,
            frequent: &frequent,
            seen,
            max_rows: self.recent_walk,
        };
        if let Some((plan, k)) = walk.run(self.tx, self.plan, k, found)? {
            let expr = match_expr(remaining);
            for rowid in preselect_recent(self.tx, &plan, self.vis, self.memory_type, expr, k)? {
                if seen.contains(&rowid) {
                    continue;
                }
                if let Some(s) = score_rowid(self.tx, rowid, self.scorer, self.corpus, self.terms, &filter)? {
                    found.push((rowid, s));
                }
            }
        }
        Ok(())
    }
}

/// [`pool_top`] over FTS5 in `tx`; `recent_walk` bounds the stored rows step 4 reads itself before FTS5's index
/// answers ([`RECENT_WALK`]).
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
    recent_walk: usize,
) -> rusqlite::Result<Vec<(i64, f64)>> {
    let mut source = FtsCandidates {
        tx,
        plan,
        vis,
        memory_type,
        scorer,
        corpus,
        terms,
        recent_walk,
    };
    pool_top(&mut source, terms, scorer, limit, pool)
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
            let filter = TermFilter::new(&terms);
            let mut out = Vec::with_capacity(rows.len());
            for row in rows {
                let mut found = stmt.query([&row.id])?;
                let score = match found.next()? {
                    Some(r) => {
                        let doc = Doc {
                            body: text_at(r, 0)?,
                            meta: text_at(r, 1)?,
                            near: text_at(r, 2)?,
                        };
                        score_doc(scorer, &corpus, &terms, &filter, &doc)
                    }
                    None => None,
                };
                out.push(score);
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
    let hits = top(
        tx,
        &plan,
        vis,
        memory_type,
        scorer,
        &corpus,
        &terms,
        limit,
        pool,
        RECENT_WALK,
    )?;
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
    use cao_core::{Key, Scope};

    /// 300 rows over four partitions and three memory types, with uneven word choice (some words frequent, some
    /// rare, some rows without frequent words), the visibility shapes and queries the pool tests run.
    fn pool_corpus() -> (tempfile::TempDir, Index, [Visibility; 3], [&'static str; 5]) {
        let dir = tempfile::tempdir().expect("tempdir");
        let ix = Index::open(&dir.path().join("db").join("t.db")).expect("open");
        let words = [
            "kafka", "queue", "deploy", "rust", "python", "cache", "retry", "budget", "lunch", "garden", "painting",
            "camping", "guitar", "museum",
        ];
        let t0 = chrono::DateTime::parse_from_rfc3339("2024-01-01T00:00:00Z")
            .expect("time")
            .to_utc();
        let places: [(Scope, Option<&str>); 4] = [
            (Scope::Project, Some("p1")),
            (Scope::Project, Some("p2")),
            (Scope::Global, None),
            (Scope::Session, Some("s")),
        ];
        for i in 0..300usize {
            // Deterministic, uneven word choice: some words frequent, some rare, some rows without frequent words.
            let pick = |salt: usize| words[(i * 7 + salt * 13 + i / 5) % words.len()];
            let content = if i % 9 == 0 {
                format!("note {i} unrelated filler")
            } else {
                format!(
                    "{} {} {} note {i}",
                    pick(1),
                    pick(2),
                    if i % 3 == 0 { pick(3) } else { "x" }
                )
            };
            let (scope, sid) = places[i % places.len()];
            let ty = MemoryType::ALL[i % 3];
            let key = Key::parse_strict(&format!("k{i}")).expect("key");
            let row = MemoryRow::new(
                format!("id{i}"),
                scope,
                sid.map(str::to_owned),
                key,
                ty,
                format!("f{i}.md"),
                "",
                content,
                t0 + chrono::Duration::seconds(i64::try_from(i).expect("small")),
            );
            ix.upsert(&row).expect("upsert");
        }
        let visibilities = [
            Visibility::all(),
            Visibility::none().allow(Scope::Project, Some("p1")),
            Visibility::none()
                .allow(Scope::Project, Some("p2"))
                .allow(Scope::Global, None)
                .allow(Scope::Session, Some("s")),
        ];
        let queries = [
            "kafka queue",
            "deploy rust python cache",
            "museum guitar camping lunch",
            "retry note",
            "garden filler painting",
        ];
        (dir, ix, visibilities, queries)
    }

    /// The best `limit` of every visible row scored one by one: the exact answer a pool is checked against.
    fn exact_top(
        ix: &Index,
        vis: &Visibility,
        ty: Option<MemoryType>,
        scorer: &dyn LexicalScorer,
        q: &str,
        limit: usize,
    ) -> Vec<Scored> {
        ix.read(|tx| {
            let (corpus, terms) = query_terms(tx, scorer, search_tokens(q))?;
            let filter = TermFilter::new(&terms);
            let rowids: Vec<i64> = tx
                .prepare("SELECT rowid FROM cao_memory_fts")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let mut all = Vec::new();
            for rowid in rowids {
                let Some(row) = fetch_by_search_rowid(tx, rowid)? else {
                    continue;
                };
                if !visible(&row, vis, ty) {
                    continue;
                }
                if let Some(s) = score_rowid(tx, rowid, scorer, &corpus, &terms, &filter)? {
                    all.push((rowid, s));
                }
            }
            all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            all.truncate(limit);
            Ok(all)
        })
        .expect("exact")
    }

    /// The pool of `q` within `pool`, its recent fill walking at most `walk` stored rows.
    #[allow(clippy::too_many_arguments)]
    fn pool_top(
        ix: &Index,
        vis: &Visibility,
        ty: Option<MemoryType>,
        scorer: &dyn LexicalScorer,
        q: &str,
        limit: usize,
        pool: PoolBudget,
        walk: usize,
    ) -> Vec<Scored> {
        ix.read(|tx| {
            let (corpus, terms) = query_terms(tx, scorer, search_tokens(q))?;
            let plan = scan_plan(tx, vis, ty)?;
            Ok(top(tx, &plan, vis, ty, scorer, &corpus, &terms, limit, pool, walk)?)
        })
        .expect("pool")
    }

    /// Step 0: a visibility of at most `exact_visible_rows` indexed rows gets the exact pool whatever the other steps'
    /// budget (here none: no rare-term candidates, no every-term step), for every visibility shape and memory type;
    /// a visibility of more rows runs the steps exactly as without step 0.
    #[test]
    fn a_small_visibility_gets_the_exact_pool() {
        let (_dir, ix, visibilities, queries) = pool_corpus();
        let scorer = cao_rank::Bm25::DEFAULT;
        let mut missed = 0;
        for vis in &visibilities {
            for ty in [None, Some(MemoryType::User)] {
                for q in queries {
                    for limit in [1, 4, 50] {
                        let steps = fixed_budget(0, 0);
                        let exact = PoolBudget {
                            exact_visible_rows: 300,
                            ..steps
                        };
                        let too_small = PoolBudget {
                            exact_visible_rows: 2,
                            ..steps
                        };
                        let want = exact_top(&ix, vis, ty, &scorer, q, limit);
                        let run = |pool: PoolBudget| pool_top(&ix, vis, ty, &scorer, q, limit, pool, RECENT_WALK);
                        assert_eq!(run(exact), want, "query {q:?} type {ty:?} limit {limit}");
                        let bounded = run(steps);
                        assert_eq!(run(too_small), bounded, "query {q:?} type {ty:?} limit {limit}");
                        missed += usize::from(bounded != want);
                    }
                }
            }
        }
        // Without step 0 this budget misses rows somewhere, so the equality above is step 0's doing.
        assert!(missed > 0);
    }

    /// The recent fill read from the stored rows ([`RecentWalk`]) answers exactly what FTS5's index answers
    /// (`preselect_recent`): for every visibility shape (everything, one partition, several, a memory type), with the
    /// walk ending early, handing over to FTS5 part way, or not walking at all.
    #[test]
    fn the_recent_walk_finds_the_rows_the_fts_index_finds() {
        let (_dir, ix, visibilities, queries) = pool_corpus();
        let scorer = cao_rank::Bm25::DEFAULT;
        for vis in &visibilities {
            for ty in [None, Some(MemoryType::User)] {
                for q in queries {
                    for rare in [0, 10, 40] {
                        for limit in [1, 4, 50] {
                            let pool = PoolBudget {
                                rare_candidates: rare,
                                widened_candidates: rare,
                                every_term_rows: 0,
                                exact_visible_rows: 0,
                            };
                            let run = |walk: usize| pool_top(&ix, vis, ty, &scorer, q, limit, pool, walk);
                            let by_fts = run(0);
                            for walk in [1, 3, 17, RECENT_WALK] {
                                assert_eq!(
                                    run(walk),
                                    by_fts,
                                    "query {q:?} type {ty:?} rare {rare} limit {limit} walk {walk}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// What steps 1 and 2 must return when they fill the pool (no every-term step): the rarest terms (cumulative
    /// document frequency within `rare`), then one more term at a time while fewer than `limit` rows match, and the
    /// exact top of every visible row whose own text holds one of those terms.
    fn widened_oracle(
        ix: &Index,
        vis: &Visibility,
        ty: Option<MemoryType>,
        scorer: &dyn LexicalScorer,
        q: &str,
        limit: usize,
        rare: u64,
    ) -> Vec<Scored> {
        let every = exact_top(ix, vis, ty, scorer, q, usize::MAX);
        ix.read(|tx| {
            let (_, mut terms) = query_terms(tx, scorer, search_tokens(q))?;
            terms.sort_by(|a, b| a.df.cmp(&b.df).then_with(|| a.term.cmp(&b.term)));
            let own_text = |rowid: i64| -> rusqlite::Result<Vec<String>> {
                tx.query_row("SELECT body, meta FROM cao_memory_fts WHERE rowid = ?1", [rowid], |r| {
                    Ok(format!("{} {}", r.get::<_, String>(0)?, r.get::<_, String>(1)?)
                        .split(' ')
                        .map(str::to_owned)
                        .collect())
                })
            };
            let holds = |rowid: i64, used: &[QueryTerm]| -> rusqlite::Result<bool> {
                let words = own_text(rowid)?;
                Ok(used.iter().any(|t| words.contains(&t.term)))
            };
            let mut used = 0;
            let mut df = 0;
            while used < terms.len() && df + terms[used].df <= rare {
                df += terms[used].df;
                used += 1;
            }
            let count = |used: usize| -> rusqlite::Result<usize> {
                let mut n = 0;
                for hit in &every {
                    n += usize::from(holds(hit.0, &terms[..used])?);
                }
                Ok(n)
            };
            while used < terms.len() && count(used)? < limit {
                used += 1;
            }
            let mut out = Vec::new();
            for hit in &every {
                if holds(hit.0, &terms[..used])? {
                    out.push(*hit);
                }
            }
            out.truncate(limit);
            Ok(out)
        })
        .expect("oracle")
    }

    /// Steps 1 and 2 of [`PoolBudget`]: the rarest terms within the rare budget, then the next rarer ones one at a
    /// time while fewer rows than the limit match, every row read scored exactly; checked against an oracle over every
    /// visible row, for every visibility shape, memory type, rare budget and limit, with and without the context
    /// field. A limit above the number of matches reads every term and gives the exact answer.
    #[test]
    fn a_short_pool_widens_through_the_next_rarer_terms() {
        let (_dir, ix, visibilities, queries) = pool_corpus();
        for scorer in [cao_rank::Bm25::DEFAULT, scorer(0.0)] {
            for vis in &visibilities {
                for ty in [None, Some(MemoryType::User)] {
                    for q in queries {
                        for rare in [0, 10, 40] {
                            for limit in [1, 4, 50, 1000] {
                                let pool = PoolBudget {
                                    rare_candidates: rare,
                                    widened_candidates: u64::MAX,
                                    every_term_rows: 0,
                                    exact_visible_rows: 0,
                                };
                                let got = pool_top(&ix, vis, ty, &scorer, q, limit, pool, RECENT_WALK);
                                assert_eq!(
                                    got,
                                    widened_oracle(&ix, vis, ty, &scorer, q, limit, rare),
                                    "query {q:?} type {ty:?} rare {rare} limit {limit}"
                                );
                                if limit == 1000 {
                                    assert_eq!(got, exact_top(&ix, vis, ty, &scorer, q, limit));
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// One row per content, stored in order a second apart (global scope), in a fresh index.
    fn index_of(contents: &[&str]) -> (tempfile::TempDir, Index) {
        let dir = tempfile::tempdir().expect("tempdir");
        let ix = Index::open(&dir.path().join("db").join("t.db")).expect("open");
        let t0 = chrono::DateTime::parse_from_rfc3339("2024-01-01T00:00:00Z")
            .expect("time")
            .to_utc();
        for (i, content) in contents.iter().enumerate() {
            let row = MemoryRow::new(
                format!("id{i}"),
                Scope::Global,
                None,
                Key::parse_strict(&format!("k{i}")).expect("key"),
                MemoryType::Project,
                format!("f{i}.md"),
                "",
                (*content).to_owned(),
                t0 + chrono::Duration::seconds(i64::try_from(i).expect("small")),
            );
            ix.upsert(&row).expect("upsert");
        }
        (dir, ix)
    }

    /// A budget of `rare` rows through the rarest terms, no widening, and `every_term_rows` rows in step 3 (no
    /// exact step, so the steps run on the small test corpora).
    fn fixed_budget(rare: u64, every_term_rows: usize) -> PoolBudget {
        PoolBudget {
            rare_candidates: rare,
            widened_candidates: rare,
            every_term_rows,
            exact_visible_rows: 0,
        }
    }

    /// The search rowid of the oldest row.
    fn oldest_rowid(ix: &Index) -> i64 {
        ix.read(|tx| Ok(tx.query_row("SELECT MIN(rowid) FROM cao_memory_fts", [], |r| r.get::<_, i64>(0))?))
            .expect("rowid")
    }

    /// Step 3 of [`PoolBudget`]: an old row holding every remaining term is read although 40 newer rows hold a single
    /// query term each (no term rare enough, so the pool is short by count); without the step (the related pass's
    /// budget) the newest rows fill the pool. Without the context field, so a neighbour's text cannot lift a
    /// one-term row above it.
    #[test]
    fn the_every_term_step_finds_an_old_row_holding_every_frequent_term() {
        let mut contents = vec!["kafka retry"];
        for i in 1..=40 {
            contents.push(if i % 2 == 0 { "kafka lunch" } else { "retry garden" });
        }
        let (_dir, ix) = index_of(&contents);
        let scorer = scorer(0.0);
        let vis = Visibility::all();
        let budget = |every_term_rows| fixed_budget(0, every_term_rows);
        let with_step = pool_top(&ix, &vis, None, &scorer, "kafka retry", 1, budget(100), RECENT_WALK);
        assert_eq!(with_step, exact_top(&ix, &vis, None, &scorer, "kafka retry", 1));
        assert_eq!(with_step[0].0, oldest_rowid(&ix), "the only row holding both terms");
        let without = pool_top(&ix, &vis, None, &scorer, "kafka retry", 1, budget(0), RECENT_WALK);
        assert_ne!(
            without[0].0,
            oldest_rowid(&ix),
            "the recent fill reads the newest rows only"
        );
    }

    /// Step 3 also runs when the rare terms give enough rows but the MaxScore bound does not prove them: ten rows
    /// hold the rare "zebra", yet the oldest row, holding both frequent terms, scores above each of them; the step
    /// finds it.
    #[test]
    fn the_every_term_step_runs_until_the_bound_proves_the_pool() {
        let mut contents = vec!["kafka retry"];
        contents.extend(std::iter::repeat_n("kafka garden", 19));
        contents.extend(std::iter::repeat_n("retry museum", 19));
        contents.extend(std::iter::repeat_n("zebra", 10));
        contents.extend(std::iter::repeat_n("filler note", 51));
        let (_dir, ix) = index_of(&contents);
        let scorer = scorer(0.0);
        let vis = Visibility::all();
        // Document frequencies count the neighbours' text too: "zebra" is in 14 documents, "kafka" and "retry" in 22.
        let budget = |every_term_rows| fixed_budget(20, every_term_rows);
        let q = "zebra kafka retry";
        let want = exact_top(&ix, &vis, None, &scorer, q, 1);
        assert_eq!(
            want[0].0,
            oldest_rowid(&ix),
            "the row holding both frequent terms is the best"
        );
        assert_eq!(pool_top(&ix, &vis, None, &scorer, q, 1, budget(100), RECENT_WALK), want);
        let without = pool_top(&ix, &vis, None, &scorer, q, 1, budget(0), RECENT_WALK);
        assert_ne!(without, want, "a rare-term row is returned without the step");
    }

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

    /// The score of one document as counted term by term over each column (the definition `score_doc` computes in
    /// one pass): the oracle the one-pass count is checked against.
    fn score_by_definition(
        scorer: &dyn LexicalScorer,
        corpus: &CorpusStats,
        terms: &[QueryTerm],
        doc: &Doc<'_>,
    ) -> Option<f64> {
        let split = |c: &str| {
            c.split(' ')
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        let (body, meta, near) = (split(doc.body), split(doc.meta), split(doc.near));
        let count = |v: &[String], term: &str| {
            u32::try_from(v.iter().filter(|x| *x == term).count()).expect("a short test document")
        };
        let len = [body.len(), meta.len() + near.len()].map(|n| u32::try_from(n).expect("a short test document"));
        let mut score = 0.0;
        let mut own = false;
        for t in terms {
            let (in_body, in_meta) = (count(&body, &t.term), count(&meta, &t.term));
            let hit = TermInDoc {
                tf: [in_body, in_meta + count(&near, &t.term)],
                len,
            };
            if hit.matches() {
                let s = scorer.term_score(corpus, t.idf, &hit);
                own |= s > 0.0 && in_body + in_meta > 0;
                score += s;
            }
        }
        (own && score > 0.0).then_some(score)
    }

    /// A BM25F scorer for the tests (cao-rank's is a dev-dependency of this crate).
    fn scorer(context_weight: f64) -> cao_rank::Bm25 {
        cao_rank::Bm25 {
            context_weight,
            ..cao_rank::Bm25::DEFAULT
        }
    }

    proptest::proptest! {
        /// The one-pass count of `score_doc` (with its term filter, a repeated query term, empty tokens and long
        /// queries) gives exactly the score of counting each term in each column, and leaving `meta` and `near`
        /// unread for a scorer that does not use the context field changes no score.
        #[test]
        fn one_pass_score_is_the_score_by_definition(
            words in proptest::collection::vec("[a-e]{1,3}", 0..40),
            split_at in (0usize..40, 0usize..40),
            query in proptest::collection::vec("[a-e]{1,3}", 1..40),
            context_weight in proptest::sample::select(vec![0.0, 0.4, 1.0]),
        ) {
            let (a, b) = (split_at.0.min(words.len()), split_at.1.min(words.len()));
            let (a, b) = (a.min(b), a.max(b));
            // Double spaces leave empty tokens, which count for nothing.
            let body = words[..a].join(" ");
            let meta = words[a..b].join("  ");
            let near = words[b..].join(" ");
            let corpus = CorpusStats { docs: 50, field_terms: [400, 900] };
            let s = scorer(context_weight);
            let terms: Vec<QueryTerm> = query
                .iter()
                .enumerate()
                .map(|(i, t)| QueryTerm { term: t.clone(), df: i as u64 % 7 + 1, idf: s.idf(&corpus, i as u64 % 7 + 1) })
                .collect();
            let doc = Doc { body: &body, meta: &meta, near: &near };
            let filter = TermFilter::new(&terms);
            let want = score_by_definition(&s, &corpus, &terms, &doc);
            proptest::prop_assert_eq!(score_doc(&s, &corpus, &terms, &filter, &doc), want);
            if !s.uses_context() {
                let bare = Doc { body: &body, meta: "", near: "" };
                proptest::prop_assert_eq!(score_doc(&s, &corpus, &terms, &filter, &bare), want);
            }
        }
    }
}
