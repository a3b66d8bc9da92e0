//! The lexical (BM25) pool of the PostgreSQL backend: the embedded index's [`PoolBudget`] steps (cao-index
//! `lexical.rs`, docs/decisions/0009-lexical-ranking.md) over the postings table instead of FTS5. Candidates come from
//! `cao_search_postings` (a document's own-text terms, what an FTS5 `{body meta}` match finds), their stored
//! documents are scored in Rust by the caller's [`LexicalScorer`] through cao-index's own [`score_doc`], from the same
//! term statistics, and the pool's steps are cao-index's own [`pool_top`]; so both backends return the same rows with
//! the same scores in the same order.

use super::db::{Result, Sql, col, small};
use super::rows::{Args, ROW_COLUMNS, decode_row, type_sql, vis_sql};
use cao_core::MemoryType;
use cao_core::lexical::{CorpusStats, LexicalScorer};
use cao_index::{
    CandidateSource, Doc, MemoryRow, PoolBudget, QueryTerm, TermFilter, Visibility, pool_top, score_doc, search_tokens,
};

/// A scored candidate: `(search_rowid, score)`.
type Scored = (i64, f64);

/// The corpus statistics and the query's terms present in the corpus (first-occurrence order).
fn query_terms(
    sql: &mut Sql<'_>,
    scorer: &dyn LexicalScorer,
    tokens: Vec<String>,
) -> Result<(CorpusStats, Vec<QueryTerm>)> {
    // The statistics row and the query's known terms in one statement (the row repeated per term; one row with
    // NULL term when none is known).
    let found = sql.query(
        "SELECT s.docs, s.tokens, s.context_tokens, t.term, t.df FROM cao_search_stats s
         LEFT JOIN cao_search_terms t ON t.term = ANY($1::text[]) WHERE s.id = 1",
        &[&tokens],
    )?;
    let first = found
        .first()
        .ok_or_else(|| crate::error::StoreError::Database("cao_search_stats has no row".into()))?;
    let corpus = CorpusStats {
        docs: small(col(first, 0)?),
        field_terms: [small(col(first, 1)?), small(col(first, 2)?)],
    };
    let mut dfs = std::collections::HashMap::new();
    for r in &found {
        if let Some(term) = col::<Option<String>>(r, 3)? {
            dfs.insert(term, small(col::<Option<i64>>(r, 4)?.unwrap_or(0)));
        }
    }
    let mut terms = Vec::with_capacity(tokens.len());
    for term in tokens {
        let df = dfs.get(&term).copied().unwrap_or(0);
        if df > 0 {
            let idf = scorer.idf(&corpus, df);
            terms.push(QueryTerm { term, df, idf });
        }
    }
    Ok((corpus, terms))
}

/// The visibility filter of a pool, rendered once per statement.
struct Scope<'q> {
    vis: &'q Visibility,
    memory_type: Option<MemoryType>,
}

impl Scope<'_> {
    /// ` AND <visible>` over the memory row `m`.
    fn condition(&self, args: &mut Args) -> String {
        let v = vis_sql(self.vis, args);
        let t = type_sql(self.memory_type, args);
        format!(" AND m.source_kind = 'native' AND {v}{t}")
    }
}

/// The document columns a scorer reads (`meta` and `near` left unread when it ignores the context field).
fn doc_columns(scorer: &dyn LexicalScorer) -> &'static str {
    if scorer.uses_context() {
        "d.body, d.meta, d.near"
    } else {
        "d.body, ''::text, ''::text"
    }
}

/// Score the `(search_rowid, body, meta, near)` rows of a query into `out`.
fn score_rows(
    rows: &[postgres::Row],
    scorer: &dyn LexicalScorer,
    corpus: &CorpusStats,
    terms: &[QueryTerm],
    out: &mut Vec<Scored>,
) -> Result<()> {
    let filter = TermFilter::new(terms);
    for r in rows {
        let rowid: i64 = col(r, 0)?;
        let (body, meta, near): (&str, &str, &str) = (col(r, 1)?, col(r, 2)?, col(r, 3)?);
        let doc = Doc { body, meta, near };
        if let Some(s) = score_doc(scorer, corpus, terms, &filter, &doc) {
            out.push((rowid, s));
        }
    }
    Ok(())
}

/// The visible rows whose own text holds any (`every` false) or every one of `match_terms`, scored on all of
/// `terms`: every one, or with `newest = Some(n)` the `n` with the highest search rowids.
#[allow(clippy::too_many_arguments)]
fn candidates(
    sql: &mut Sql<'_>,
    scope: &Scope<'_>,
    scorer: &dyn LexicalScorer,
    corpus: &CorpusStats,
    terms: &[QueryTerm],
    match_terms: &[&QueryTerm],
    every: bool,
    newest: Option<usize>,
) -> Result<Vec<Scored>> {
    let mut args = Args::default();
    let list: Vec<String> = match_terms.iter().map(|t| t.term.clone()).collect();
    let n = list.len() as i64;
    let p = args.push(list);
    let matching = if every {
        let c = args.push(n);
        format!(
            "SELECT search_rowid FROM cao_search_postings WHERE term = ANY({p}::text[])
             GROUP BY search_rowid HAVING count(*) = {c}"
        )
    } else {
        format!("SELECT DISTINCT search_rowid FROM cao_search_postings WHERE term = ANY({p}::text[])")
    };
    let cond = scope.condition(&mut args);
    let cut = match newest {
        Some(k) => format!(" ORDER BY d.search_rowid DESC LIMIT {}", args.push(k as i64)),
        None => String::new(),
    };
    let text = format!(
        "SELECT d.search_rowid, {cols} FROM cao_search_docs d
         JOIN memory_metadata m ON m.search_rowid = d.search_rowid
         WHERE d.search_rowid IN ({matching}){cond}{cut}",
        cols = doc_columns(scorer)
    );
    let rows = sql.query(&text, &args.refs())?;
    let mut out = Vec::new();
    score_rows(&rows, scorer, corpus, terms, &mut out)?;
    Ok(out)
}

/// Whether at most `cap` indexed rows are visible in `scope` (reads at most `cap + 1` of them).
fn visible_rows_at_most(sql: &mut Sql<'_>, scope: &Scope<'_>, cap: usize) -> Result<bool> {
    let mut args = Args::default();
    let cond = scope.condition(&mut args);
    let over = i64::try_from(cap).unwrap_or(i64::MAX).saturating_add(1);
    let lim = args.push(over);
    let text = format!(
        "SELECT count(*) FROM (SELECT 1 FROM cao_search_docs d
         JOIN memory_metadata m ON m.search_rowid = d.search_rowid
         WHERE true{cond} LIMIT {lim}) x"
    );
    let r = sql.one(&text, &args.refs())?;
    let seen: i64 = col(&r, 0)?;
    Ok(seen < over)
}

/// The postings-table candidates of one pool read (cao-index's [`pool_top`] runs the steps over them; step 4 is the
/// trait's default, the newest candidates).
struct Postings<'s, 'c> {
    sql: &'s mut Sql<'c>,
    scope: &'s Scope<'s>,
    scorer: &'s dyn LexicalScorer,
    corpus: &'s CorpusStats,
    terms: &'s [QueryTerm],
}

impl CandidateSource for Postings<'_, '_> {
    type Error = crate::error::StoreError;

    fn candidates(&mut self, match_terms: &[&QueryTerm], every: bool, newest: Option<usize>) -> Result<Vec<Scored>> {
        candidates(
            self.sql,
            self.scope,
            self.scorer,
            self.corpus,
            self.terms,
            match_terms,
            every,
            newest,
        )
    }

    fn visible_at_most(&mut self, cap: usize) -> Result<bool> {
        visible_rows_at_most(self.sql, self.scope, cap)
    }
}

/// The BM25 pool of `terms` (as [`search_tokens`] makes them) within `pool`: at most `limit` visible rows, best
/// first, ties by key, scope, scope id.
#[allow(clippy::too_many_arguments)]
pub(crate) fn pool(
    sql: &mut Sql<'_>,
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
    let (corpus, terms) = query_terms(sql, scorer, terms.to_vec())?;
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let scope = Scope { vis, memory_type };
    let mut source = Postings {
        sql: &mut *sql,
        scope: &scope,
        scorer,
        corpus: &corpus,
        terms: &terms,
    };
    let hits = pool_top(&mut source, &terms, scorer, limit, pool)?;
    if hits.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<i64> = hits.iter().map(|h| h.0).collect();
    let text = format!("SELECT m.search_rowid, {ROW_COLUMNS} FROM memory_metadata m WHERE m.search_rowid = ANY($1)");
    let mut rows = std::collections::HashMap::new();
    for r in sql.query(&text, &[&ids])? {
        let s: i64 = col(&r, 0)?;
        if let Some(row) = decode_row(&r, 1)? {
            rows.insert(s, row);
        }
    }
    let mut out = Vec::with_capacity(hits.len());
    for (s, score) in hits {
        if let Some(row) = rows.remove(&s)
            && row.source_kind == cao_core::SourceKind::Native
            && vis.allows(row.scope, row.scope_id.as_deref())
            && memory_type.is_none_or(|t| t == row.memory_type)
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

/// The score of each of `rows` for `query` as [`pool`] would give it (`None`: no match or not indexed).
pub(crate) fn scores(
    sql: &mut Sql<'_>,
    query: &str,
    rows: &[&MemoryRow],
    scorer: &dyn LexicalScorer,
) -> Result<Vec<Option<f64>>> {
    let tokens = search_tokens(query);
    if tokens.is_empty() || rows.is_empty() {
        return Ok(vec![None; rows.len()]);
    }
    let (corpus, terms) = query_terms(sql, scorer, tokens)?;
    if terms.is_empty() {
        return Ok(vec![None; rows.len()]);
    }
    let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
    let found = sql.query(
        "SELECT m.id, d.body, d.meta, d.near FROM memory_metadata m JOIN cao_search_docs d
         ON d.search_rowid = m.search_rowid WHERE m.id = ANY($1::text[])",
        &[&ids],
    )?;
    let filter = TermFilter::new(&terms);
    let mut by_id = std::collections::HashMap::new();
    for r in &found {
        let id: String = col(r, 0)?;
        let doc = Doc {
            body: col(r, 1)?,
            meta: col(r, 2)?,
            near: col(r, 3)?,
        };
        by_id.insert(id, score_doc(scorer, &corpus, &terms, &filter, &doc));
    }
    Ok(rows.iter().map(|r| by_id.get(&r.id).copied().flatten()).collect())
}
