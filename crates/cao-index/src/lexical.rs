//! The lexical (BM25) pool: candidates from the FTS5 table, scored with the caller's [`LexicalScorer`] over this
//! index's term statistics (docs/decisions/0009-lexical-ranking.md).
//!
//! FTS5 only finds candidates (`MATCH`, inside the visibility's rowid ranges); it never ranks. Each candidate's two
//! stored fields (content and context terms) give the term counts and field lengths, `cao_search_stats` the corpus
//! size and field totals, `cao_search_terms` the document frequencies, and the scorer (`cao_rank::Bm25`) the score.

use crate::row::MemoryRow;
use crate::search::{Scan, fetch_by_search_rowid, fts_quote, scan_plan, type_clause, visible};
use crate::visibility::Visibility;
use crate::{Index, Result};
use cao_core::MemoryType;
use cao_core::lexical::{CorpusStats, FIELDS, Field, LexicalScorer, TermInDoc};
use rusqlite::types::Value;
use rusqlite::{OptionalExtension, Transaction, params_from_iter};

/// Most candidate rows the pruned path collects through the rarer query terms (the sum of their document
/// frequencies). Above it the rarest terms alone generate candidates.
const PRUNE_MAX_CANDIDATES: u64 = 1000;

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

/// The score of one stored document (`body` = content terms, `context` = context terms, single-space separated)
/// for `terms`; `None` when it scores 0 (it contains none of them, or only in a field the scorer weighs 0).
fn score_fields(
    scorer: &dyn LexicalScorer,
    corpus: &CorpusStats,
    terms: &[QueryTerm],
    body: &str,
    context: &str,
) -> Option<f64> {
    let fields: [Vec<&str>; FIELDS] = [
        body.split(' ').filter(|t| !t.is_empty()).collect(),
        context.split(' ').filter(|t| !t.is_empty()).collect(),
    ];
    let len = Field::ALL.map(|f| u32::try_from(fields[f.index()].len()).unwrap_or(u32::MAX));
    let mut score = 0.0;
    for t in terms {
        let tf = Field::ALL.map(|f| {
            let n = fields[f.index()].iter().filter(|x| **x == t.term).count();
            u32::try_from(n).unwrap_or(u32::MAX)
        });
        let hit = TermInDoc { tf, len };
        if hit.matches() {
            score += scorer.term_score(corpus, t.idf, &hit);
        }
    }
    (score > 0.0).then_some(score)
}

/// `(search_rowid, score)` of every visible row matching any of `generators`, scored on all of `terms`.
#[allow(clippy::too_many_arguments)]
fn candidates(
    tx: &Transaction<'_>,
    plan: &Scan,
    vis: &Visibility,
    memory_type: Option<MemoryType>,
    scorer: &dyn LexicalScorer,
    corpus: &CorpusStats,
    terms: &[QueryTerm],
    generators: &[&QueryTerm],
) -> rusqlite::Result<Vec<(i64, f64)>> {
    let match_expr = Value::Text(
        generators
            .iter()
            .map(|t| fts_quote(&t.term))
            .collect::<Vec<_>>()
            .join(" OR "),
    );
    let mut out = Vec::new();
    let mut take = |rows: &mut rusqlite::Rows<'_>| -> rusqlite::Result<()> {
        while let Some(r) = rows.next()? {
            let rowid: i64 = r.get(0)?;
            let body: String = r.get(1)?;
            let context: String = r.get(2)?;
            if let Some(s) = score_fields(scorer, corpus, terms, &body, &context) {
                out.push((rowid, s));
            }
        }
        Ok(())
    };
    match plan {
        Scan::Everything => {
            let mut stmt =
                tx.prepare_cached("SELECT rowid, body, context FROM cao_memory_fts WHERE cao_memory_fts MATCH ?1")?;
            take(&mut stmt.query([&match_expr])?)?;
        }
        Scan::Ranges(ranges) => {
            let mut stmt = tx.prepare_cached(
                "SELECT rowid, body, context FROM cao_memory_fts
                 WHERE cao_memory_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3",
            )?;
            for (lo, hi) in ranges {
                let p = [match_expr.clone(), Value::Integer(*lo), Value::Integer(*hi)];
                take(&mut stmt.query(params_from_iter(p))?)?;
            }
        }
        Scan::Join => {
            let mut params = vec![match_expr];
            let vis_sql = vis.sql(&mut params);
            let ty = type_clause(memory_type, &mut params);
            let sql = format!(
                "SELECT cao_memory_fts.rowid, cao_memory_fts.body, cao_memory_fts.context
                 FROM cao_memory_fts CROSS JOIN memory_metadata m ON m.search_rowid = cao_memory_fts.rowid
                 WHERE cao_memory_fts MATCH ? AND {vis_sql}{ty}"
            );
            let mut stmt = tx.prepare_cached(&sql)?;
            take(&mut stmt.query(params_from_iter(&params))?)?;
        }
    }
    Ok(out)
}

/// The best `limit` `(search_rowid, score)` pairs, best first (ties by search rowid).
///
/// Candidates come from the rarest terms G (as many as fit in [`PRUNE_MAX_CANDIDATES`] by document frequency, at
/// least one), each scored on every query term. While G matches fewer than `limit` visible rows it grows by the next
/// rarest term (only that term's rows are read). A row that
/// matches none of G scores at most the sum of [`LexicalScorer::term_bound`] over the other terms; when the
/// `limit`-th candidate scores above that the answer is exact, otherwise such a row can be missing from the pool
/// (its score is bounded by the frequent terms' low IDF). This keeps long natural-language queries at a few
/// milliseconds on 100k memories (docs/decisions/0001 and 0009).
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
) -> rusqlite::Result<Vec<(i64, f64)>> {
    let mut by_df: Vec<&QueryTerm> = terms.iter().collect();
    by_df.sort_by(|a, b| a.df.cmp(&b.df).then_with(|| a.term.cmp(&b.term)));
    let mut split = 1;
    let mut budget = by_df[0].df;
    while split < by_df.len() && budget + by_df[split].df <= PRUNE_MAX_CANDIDATES {
        budget += by_df[split].df;
        split += 1;
    }
    let mut found = candidates(tx, plan, vis, memory_type, scorer, corpus, terms, &by_df[..split])?;
    // Too few: add the next rarest term's rows, one term at a time (each candidate is already scored on every term).
    let mut seen: std::collections::HashSet<i64> = found.iter().map(|(r, _)| *r).collect();
    while found.len() < limit && split < by_df.len() {
        let more = candidates(tx, plan, vis, memory_type, scorer, corpus, terms, &by_df[split..=split])?;
        found.extend(more.into_iter().filter(|(r, _)| seen.insert(*r)));
        split += 1;
    }
    found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    found.truncate(limit);
    Ok(found)
}

impl Index {
    /// The lexical (BM25) pool: at most `limit` visible indexed rows (of `memory_type` when given) that contain at
    /// least one term of `query` ([`search_tokens`]) in a field `scorer` weighs (a positive score), with their raw score from `scorer` over the
    /// whole indexed corpus's statistics (higher = better), best first; ties by key, scope, scope id (which of
    /// several rows tied at the cut is kept follows their search rowids).
    ///
    /// Terms absent from the corpus are left out; a query without a present term gives an empty pool. Candidates
    /// come from the rarer terms (see `top`: exact unless a row shares only frequent terms with the query).
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
        if terms.is_empty() || vis.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        self.read(|tx| {
            let (corpus, terms) = query_terms(tx, scorer, terms.to_vec())?;
            if terms.is_empty() {
                return Ok(Vec::new());
            }
            let plan = scan_plan(tx, vis, memory_type)?;
            let hits = top(tx, &plan, vis, memory_type, scorer, &corpus, &terms, limit)?;
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

    /// Raw lexical scores of `rows` against `query`, in input order: the value [`Index::bm25_pool`] reports for a
    /// row (same terms, corpus statistics and scorer), `None` for a row that contains no query term or is not in the
    /// search index. One read snapshot; one point lookup per row.
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
                "SELECT f.body, f.context FROM memory_metadata m JOIN cao_memory_fts f ON f.rowid = m.search_rowid
                 WHERE m.id = ?1",
            )?;
            let mut out = Vec::with_capacity(rows.len());
            for row in rows {
                let fields: Option<(String, String)> =
                    stmt.query_row([&row.id], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
                out.push(fields.and_then(|(b, c)| score_fields(scorer, &corpus, &terms, &b, &c)));
            }
            Ok(out)
        })
    }
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
