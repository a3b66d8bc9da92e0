//! `cargo run --release -p cao-bench --bin retrieval_sweep -- [--model DIR] [--cache DIR]`: leave-one-conversation-out
//! validation of the recall constants on LoCoMo, in memory.
//!
//! The product's lexical and dense rankings are rebuilt here from their parts (`cao_core::text::index_terms`, the
//! BM25 formula of `cao_rank::Bm25`, `cao_rank::fuse`, the `cao_embed` encoder) over one document per turn, exactly
//! as `cargo xtask retrieval` stores them (`speaker (date): text`, the key as a context term), with exact
//! (unbounded) pools, so a grid of constants can be scored in seconds. For each grid, every configuration is scored
//! per conversation; then, for each conversation, the configuration best on the *other* conversations is chosen and
//! scored on the held-out one. The held-out average (questions of all conversations, each scored with a
//! configuration chosen without it) is what justifies a constant; the in-sample best is printed next to it only to
//! show the optimism of choosing on the same data. `cargo xtask retrieval` stays the measurement of the product.
//!
//! With `--model DIR` the turns and questions are embedded once (cached under `--cache DIR` by the weights' hash)
//! and the dense grids run too.
#![allow(clippy::print_stdout)]

use anyhow::{Context, Result};
use cao_bench::locomo;
use cao_core::lexical::{CorpusStats, LexicalScorer, TermInDoc};
use cao_rank::{Bm25, FusionInput, fuse};
use std::collections::HashMap;

/// One turn as a lexical document.
struct Doc {
    conv: usize,
    /// Content terms (term id, count), and the content length.
    content: Vec<u32>,
    /// Key terms (the stored day is the same for every memory and left out).
    meta: Vec<u32>,
}

/// One question.
struct Query {
    conv: usize,
    category: u8,
    terms: Vec<u32>,
    evidence: Vec<usize>,
    text: String,
}

/// A lexical configuration.
#[derive(Debug, Clone, Copy)]
struct Lex {
    k1: f64,
    b: f64,
    w: f64,
    /// Neighbours on each side in the context field.
    window: usize,
    /// Neighbour-only matches allowed.
    near_match: bool,
    /// Length normalisation of the context field when it differs from `b` (BM25F with per-field b).
    b_ctx: Option<f64>,
    /// Document frequencies over the memory's own text only (content and key), not its neighbours'.
    df_own: bool,
    /// Corpus statistics as `cargo xtask retrieval` sees them: the conversations are stored one after the other and
    /// each one's questions are asked before the next is stored, so conversation `c` is scored against the
    /// statistics of conversations `0..=c` (else against all six).
    incremental: bool,
    /// Candidates drawn as the product's bounded pool draws them for a pool of this many rows
    /// (`cao_index::PoolBudget::RECALL`; see [`bounded_candidates`]); `None` = every matching row (exact).
    pool: Option<usize>,
    /// BM25F: fields combined before saturation (else one BM25 per field, summed).
    bm25f: bool,
}

/// Per-question measures: any@1, any@5, any@10, share@5, rr@10.
type M = [f64; 5];

fn measure(ranked: &[usize], evidence: &[usize]) -> M {
    let any = |k: usize| {
        if ranked.iter().take(k).any(|d| evidence.contains(d)) {
            1.0
        } else {
            0.0
        }
    };
    let share5 = evidence
        .iter()
        .filter(|e| ranked.iter().take(5).any(|d| d == *e))
        .count() as f64
        / evidence.len().max(1) as f64;
    let rr = ranked
        .iter()
        .take(10)
        .position(|d| evidence.contains(d))
        .map_or(0.0, |p| 1.0 / (p as f64 + 1.0));
    [any(1), any(5), any(10), share5, rr]
}

struct Corpus {
    docs: Vec<Doc>,
    queries: Vec<Query>,
    n_terms: usize,
    /// Doc index ranges per conversation.
    conv_range: Vec<std::ops::Range<usize>>,
}

fn build() -> Result<Corpus> {
    let samples = locomo::load()?;
    let mut vocab: HashMap<String, u32> = HashMap::new();
    let id = |t: String, vocab: &mut HashMap<String, u32>| -> u32 {
        let n = vocab.len() as u32;
        *vocab.entry(t).or_insert(n)
    };
    let mut docs = Vec::new();
    let mut queries = Vec::new();
    let mut conv_range = Vec::new();
    for (c, s) in samples.iter().enumerate() {
        let start = docs.len();
        let mut by_key = HashMap::new();
        for t in &s.turns {
            let text = format!("{} ({}): {}", t.speaker, t.date, t.text);
            let key = locomo::turn_key(&t.dia_id);
            let content = cao_core::text::index_terms(&text).map(|x| id(x, &mut vocab)).collect();
            let meta = cao_core::text::index_terms(&key).map(|x| id(x, &mut vocab)).collect();
            by_key.insert(key, docs.len());
            docs.push(Doc { conv: c, content, meta });
        }
        conv_range.push(start..docs.len());
        for q in s.questions.iter().filter(|q| q.category != 5 && !q.evidence.is_empty()) {
            let mut terms: Vec<u32> = Vec::new();
            for t in cao_core::text::index_terms(&q.question) {
                let i = id(t, &mut vocab);
                if !terms.contains(&i) {
                    terms.push(i);
                }
            }
            let evidence: Vec<usize> = q
                .evidence
                .iter()
                .filter_map(|e| by_key.get(&locomo::turn_key(e.trim())).copied())
                .collect();
            queries.push(Query {
                conv: c,
                category: q.category,
                terms,
                evidence,
                text: q.question.clone(),
            });
        }
    }
    Ok(Corpus {
        n_terms: vocab.len(),
        docs,
        queries,
        conv_range,
    })
}

/// Per-window prepared fields: term counts per doc per field, lengths, df.
struct Prepared {
    /// (term -> (tf content+meta, tf near)) per doc.
    tf: Vec<HashMap<u32, [u32; 2]>>,
    len: Vec<[u32; 2]>,
    df: Vec<u64>,
    /// Document frequencies over own text (content and key) only.
    df_own: Vec<u64>,
    stats: CorpusStats,
    /// Document frequencies and statistics over conversations `0..=c`, per `c` ([`Lex::incremental`]).
    prefix: Vec<(Vec<u64>, CorpusStats)>,
}

const NEAR_TERMS: usize = 100;

fn prepare(c: &Corpus, window: usize) -> Prepared {
    let mut tf = Vec::with_capacity(c.docs.len());
    let mut len = Vec::with_capacity(c.docs.len());
    let mut df = vec![0u64; c.n_terms];
    let mut df_own = vec![0u64; c.n_terms];
    let mut field_terms = [0u64; 2];
    for (i, d) in c.docs.iter().enumerate() {
        let r = &c.conv_range[d.conv];
        let mut m: HashMap<u32, [u32; 2]> = HashMap::new();
        for t in &d.content {
            m.entry(*t).or_default()[0] += 1;
        }
        let mut ctx_len = d.meta.len() as u32;
        for t in &d.meta {
            m.entry(*t).or_default()[1] += 1;
        }
        for off in 1..=window {
            for j in [i.checked_sub(off), Some(i + off)].into_iter().flatten() {
                if r.contains(&j) {
                    for t in c.docs[j].content.iter().take(NEAR_TERMS) {
                        m.entry(*t).or_default()[1] += 1;
                        ctx_len += 1;
                    }
                }
            }
        }
        // Own-text marker: meta terms count as own text; near-only terms do not. Track own via content|meta.
        for t in m.keys() {
            df[*t as usize] += 1;
        }
        let own: std::collections::HashSet<u32> = d.content.iter().chain(&d.meta).copied().collect();
        for t in own {
            df_own[t as usize] += 1;
        }
        let l = [d.content.len() as u32, ctx_len];
        field_terms[0] += u64::from(l[0]);
        field_terms[1] += u64::from(l[1]);
        tf.push(m);
        len.push(l);
    }
    let mut prefix = Vec::new();
    for r in &c.conv_range {
        let mut pdf = vec![0u64; c.n_terms];
        let mut ft = [0u64; 2];
        for i in 0..r.end {
            for t in tf[i].keys() {
                pdf[*t as usize] += 1;
            }
            let l: &[u32; 2] = &len[i];
            ft[0] += u64::from(l[0]);
            ft[1] += u64::from(l[1]);
        }
        prefix.push((
            pdf,
            CorpusStats {
                docs: r.end as u64,
                field_terms: ft,
            },
        ));
    }
    Prepared {
        prefix,
        tf,
        len,
        df,
        df_own,
        stats: CorpusStats {
            docs: c.docs.len() as u64,
            field_terms,
        },
    }
}

/// Lexical scores of the visible docs of `q` (conversation), `None` = no match.
fn lexical(c: &Corpus, p: &Prepared, cfg: &Lex, q: &Query) -> Vec<(usize, f64)> {
    let weighted: Vec<(u32, f64)> = q.terms.iter().map(|t| (*t, 1.0)).collect();
    lexical_weighted(c, p, cfg, q.conv, &weighted, &q.terms)
}

/// Lexical scores over the docs of conversation `conv` for weighted query terms: a doc's score is the sum of
/// `weight * term_score`; a doc is a match when one of `matching` is in its own text (or in its context, with
/// neighbour-only matches allowed) and its score is positive.
fn lexical_weighted(
    c: &Corpus,
    p: &Prepared,
    cfg: &Lex,
    conv: usize,
    terms: &[(u32, f64)],
    matching: &[u32],
) -> Vec<(usize, f64)> {
    let bm = Bm25 {
        k1: cfg.k1,
        b: cfg.b,
        context_weight: cfg.w,
    };
    let (dfs, stats) = if cfg.incremental {
        (&p.prefix[conv].0, &p.prefix[conv].1)
    } else if cfg.df_own {
        (&p.df_own, &p.stats)
    } else {
        (&p.df, &p.stats)
    };
    let idf: Vec<f64> = terms.iter().map(|(t, _)| bm.idf(stats, dfs[*t as usize])).collect();
    let avg = [
        stats.avg_len(cao_core::lexical::Field::Content),
        stats.avg_len(cao_core::lexical::Field::Context),
    ];
    let allowed: Option<std::collections::HashSet<usize>> = cfg
        .pool
        .map(|limit| bounded_candidates(c, p, cfg, conv, matching, dfs, limit));
    let mut out = Vec::new();
    for i in c.conv_range[conv].clone() {
        if allowed.as_ref().is_some_and(|a| !a.contains(&i)) {
            continue;
        }
        let own = c.docs[i]
            .content
            .iter()
            .chain(&c.docs[i].meta)
            .any(|t| matching.contains(t));
        let near = cfg.near_match && matching.iter().any(|t| p.tf[i].contains_key(t));
        if !own && !near {
            continue;
        }
        let mut s = 0.0;
        for ((t, qw), w) in terms.iter().zip(&idf) {
            let Some(f) = p.tf[i].get(t) else { continue };
            let term = TermInDoc { tf: *f, len: p.len[i] };
            if let (true, Some(b_ctx)) = (cfg.bm25f, cfg.b_ctx) {
                // BM25F with its own b per field.
                let mut x = 0.0;
                for (k, (avg_k, (wf, bf))) in avg.iter().zip([(1.0, cfg.b), (cfg.w, b_ctx)]).enumerate() {
                    let tf = f64::from(term.tf[k]);
                    if tf > 0.0 && wf > 0.0 {
                        let rel = if *avg_k > 0.0 {
                            f64::from(term.len[k]) / avg_k
                        } else {
                            1.0
                        };
                        x += wf * tf / (1.0 - bf + bf * rel);
                    }
                }
                if x > 0.0 {
                    s += qw * w * x * (cfg.k1 + 1.0) / (x + cfg.k1);
                }
            } else if cfg.bm25f {
                // The product's formula (cao_rank::Bm25 is BM25F).
                s += qw * bm.term_score(stats, *w, &term);
            } else {
                // The previous formula: one saturated BM25 per field, weighted and summed.
                for (k, (avg_k, wf)) in avg.iter().zip([1.0, cfg.w]).enumerate() {
                    let tf = f64::from(term.tf[k]);
                    if tf > 0.0 {
                        let rel = if *avg_k > 0.0 {
                            f64::from(term.len[k]) / avg_k
                        } else {
                            1.0
                        };
                        s += qw * w * wf * tf * (cfg.k1 + 1.0) / (tf + cfg.k1 * (1.0 - cfg.b + cfg.b * rel));
                    }
                }
            }
        }
        if s > 0.0 {
            out.push((i, s));
        }
    }
    // Equal scores: the earlier turn first, or with `SWEEP_TIES=late` the later one (to see how much a configuration's
    // result owes to the order of ties, which the product breaks by key).
    let late = std::env::var("SWEEP_TIES").is_ok_and(|v| v == "late");
    out.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then(if late { b.0.cmp(&a.0) } else { a.0.cmp(&b.0) })
    });
    if let Some(limit) = cfg.pool {
        out.truncate(limit);
    }
    out
}

/// The rows of conversation `conv` the product's bounded pool reads for `terms` (`cao_index::lexical::top` with
/// `PoolBudget::RECALL`): (1) the rows holding, in their own text, any of the rarest terms whose document
/// frequencies sum to at most 1 000; (2) while fewer than `limit` rows, the next rarer term at a time up to 4 000;
/// (3) while the pool is short (fewer than `limit` rows, or its `limit`-th score not above the MaxScore bound of
/// the terms left) and two or more terms are left, the newest 100 rows holding every term left; (4) while fewer
/// than `limit` rows, the newest rows holding any term left (`limit` + found + 32). Document frequencies are the
/// corpus's (every conversation stored so far), as the product's budget reads them; rows are visible only in
/// their own conversation.
fn bounded_candidates(
    c: &Corpus,
    p: &Prepared,
    cfg: &Lex,
    conv: usize,
    terms: &[u32],
    dfs: &[u64],
    limit: usize,
) -> std::collections::HashSet<usize> {
    let stats = if cfg.incremental { &p.prefix[conv].1 } else { &p.stats };
    let bm = Bm25 {
        k1: cfg.k1,
        b: cfg.b,
        context_weight: cfg.w,
    };
    let mut by_df: Vec<u32> = terms.iter().copied().filter(|t| dfs[*t as usize] > 0).collect();
    by_df.sort_by_key(|t| (dfs[*t as usize], *t));
    let range = c.conv_range[conv].clone();
    let holds = |i: usize, t: u32| c.docs[i].content.contains(&t) || c.docs[i].meta.contains(&t);
    let score = |i: usize| -> f64 {
        terms
            .iter()
            .filter_map(|t| {
                let f = p.tf[i].get(t)?;
                let idf = bm.idf(stats, dfs[*t as usize]);
                Some(bm.term_score(stats, idf, &TermInDoc { tf: *f, len: p.len[i] }))
            })
            .sum()
    };
    let mut found: std::collections::HashSet<usize> = std::collections::HashSet::new();
    let mut scores: Vec<f64> = Vec::new();
    let add = |i: usize, found: &mut std::collections::HashSet<usize>, scores: &mut Vec<f64>| {
        if found.insert(i) {
            scores.push(score(i));
        }
    };
    let mut split = 0;
    let mut budget = 0;
    while split < by_df.len() && budget + dfs[by_df[split] as usize] <= 1000 {
        budget += dfs[by_df[split] as usize];
        split += 1;
    }
    for i in range.clone() {
        if by_df[..split].iter().any(|t| holds(i, *t)) {
            add(i, &mut found, &mut scores);
        }
    }
    while split < by_df.len() && budget + dfs[by_df[split] as usize] <= 4000 && found.len() < limit {
        budget += dfs[by_df[split] as usize];
        let t = by_df[split];
        for i in range.clone() {
            if holds(i, t) {
                add(i, &mut found, &mut scores);
            }
        }
        split += 1;
    }
    let short = |scores: &[f64], split: usize| -> bool {
        if scores.len() < limit {
            return true;
        }
        let bound: f64 = by_df[split..]
            .iter()
            .map(|t| bm.term_bound(bm.idf(stats, dfs[*t as usize])))
            .sum();
        let mut v = scores.to_vec();
        v.sort_by(|a, b| b.total_cmp(a));
        v[limit - 1] <= bound
    };
    if by_df.len() - split >= 2 && short(&scores, split) {
        let mut n = 0;
        for i in range.clone().rev() {
            if n == 100 {
                break;
            }
            if by_df[split..].iter().all(|t| holds(i, *t)) {
                n += 1;
                add(i, &mut found, &mut scores);
            }
        }
    }
    if found.len() < limit && split < by_df.len() {
        let k = limit + found.len() + 32;
        let mut n = 0;
        for i in range.rev() {
            if n == k {
                break;
            }
            if !found.contains(&i) && by_df[split..].iter().any(|t| holds(i, *t)) {
                n += 1;
                add(i, &mut found, &mut scores);
            }
        }
    }
    found
}

/// Pseudo-relevance feedback (RM3-style) on the lexical side.
#[derive(Debug, Clone, Copy)]
struct Prf {
    /// Feedback docs: the first pass's top `k`.
    k: usize,
    /// Expansion terms.
    m: usize,
    /// Weight of the original query (the expansion terms get `1 - lambda`).
    lambda: f64,
    /// Expansion terms may make a doc a match (else the second pass re-ranks the first pass's matches).
    expand_matches: bool,
    /// Feedback docs weighted by their first-pass score (else equally).
    score_weighted: bool,
}

/// The second pass of [`Prf`] over the first pass `first` (best first) of `q`.
///
/// Each feedback doc `D` (weight `s(D) / sum s`, or `1 / k`) gives every content term `t` not in the query
/// `w(D) * tf(t, D) / |D|`; a term's expansion weight is the sum over the feedback docs times its IDF; the `m`
/// heaviest are kept with their weights normalised to sum 1. The re-query weighs each original term
/// `lambda / |q|` and each expansion term `(1 - lambda) * weight`.
fn prf(c: &Corpus, p: &Prepared, cfg: &Lex, q: &Query, first: &[(usize, f64)], f: &Prf) -> Vec<(usize, f64)> {
    let fb: Vec<(usize, f64)> = first.iter().take(f.k).copied().collect();
    if fb.is_empty() || q.terms.is_empty() {
        return first.to_vec();
    }
    let total: f64 = fb.iter().map(|x| x.1).sum();
    let bm = Bm25 {
        k1: cfg.k1,
        b: cfg.b,
        context_weight: cfg.w,
    };
    let mut weight: HashMap<u32, f64> = HashMap::new();
    for (d, s) in &fb {
        let wd = if f.score_weighted && total > 0.0 {
            s / total
        } else {
            1.0 / fb.len() as f64
        };
        let doc = &c.docs[*d];
        let len = doc.content.len().max(1) as f64;
        for t in &doc.content {
            if !q.terms.contains(t) {
                *weight.entry(*t).or_default() += wd / len;
            }
        }
    }
    let mut exp: Vec<(u32, f64)> = weight
        .into_iter()
        .map(|(t, w)| {
            let (df, stats) = if cfg.incremental {
                (p.prefix[q.conv].0[t as usize], &p.prefix[q.conv].1)
            } else {
                (p.df[t as usize], &p.stats)
            };
            (t, w * bm.idf(stats, df))
        })
        .collect();
    exp.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    exp.truncate(f.m);
    let sum: f64 = exp.iter().map(|x| x.1).sum();
    let nq = q.terms.len() as f64;
    let mut terms: Vec<(u32, f64)> = q.terms.iter().map(|t| (*t, f.lambda / nq)).collect();
    if sum > 0.0 {
        terms.extend(exp.iter().map(|(t, w)| (*t, (1.0 - f.lambda) * w / sum)));
    }
    let matching: Vec<u32> = if f.expand_matches {
        terms.iter().map(|x| x.0).collect()
    } else {
        q.terms.clone()
    };
    lexical_weighted(c, p, cfg, q.conv, &terms, &matching)
}

/// Question shape: a question about a time, a date or a number ("when", "how long", a digit, a month...).
fn temporal_shape(text: &str) -> bool {
    let t = text.to_lowercase();
    const WORDS: [&str; 24] = [
        "when",
        "how long",
        "what year",
        "what month",
        "what date",
        "what day",
        "what time",
        "how many",
        "how often",
        "which year",
        "which month",
        "date",
        "year",
        "month",
        "week",
        "january",
        "february",
        "march",
        "april",
        "june",
        "july",
        "august",
        "september",
        "october",
    ];
    t.chars().any(|ch| ch.is_ascii_digit())
        || WORDS.iter().any(|w| t.contains(w))
        || ["november", "december", " may "].iter().any(|w| t.contains(w))
}

/// Dense configuration.
#[derive(Debug, Clone, Copy)]
struct Dense {
    /// Weight of the dense component (lexical gets 1 - alpha).
    alpha: f64,
    /// Rows each source contributes.
    pool: usize,
    /// Weight of the best neighbour's similarity added to a row's own (0 = off).
    near: f64,
    /// Use the contextual vectors (content embedded with the previous turn).
    contextual: bool,
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum()
}

fn fused(c: &Corpus, lex: &[(usize, f64)], dv: &[Vec<f32>], qv: &[f32], q: &Query, d: &Dense) -> Vec<usize> {
    let r = c.conv_range[q.conv].clone();
    let own: Vec<f64> = r.clone().map(|i| dot(&dv[i], qv)).collect();
    let sim = |i: usize| -> f64 {
        let k = i - r.start;
        let mut s = own[k];
        if d.near > 0.0 {
            let mut best = f64::MIN;
            if k > 0 {
                best = best.max(own[k - 1]);
            }
            if k + 1 < own.len() {
                best = best.max(own[k + 1]);
            }
            if best > f64::MIN {
                s += d.near * best;
            }
        }
        s
    };
    let mut dense_rank: Vec<(usize, f64)> = r.clone().map(|i| (i, sim(i))).collect();
    dense_rank.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut cand: Vec<usize> = lex.iter().take(d.pool).map(|x| x.0).collect();
    for (i, _) in dense_rank.iter().take(d.pool) {
        if !cand.contains(i) {
            cand.push(*i);
        }
    }
    let lex_of: HashMap<usize, f64> = lex.iter().copied().collect();
    let inputs: Vec<FusionInput> = cand
        .iter()
        .map(|i| FusionInput {
            lexical: lex_of.get(i).copied(),
            dense: Some(sim(*i)),
        })
        .collect();
    // Weighted min-max (fuse uses 0.5/0.5; re-weight from its components).
    let mut f = fuse(&inputs);
    for x in &mut f {
        x.score = (1.0 - d.alpha) * x.lexical + d.alpha * x.dense;
    }
    f.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
    f.into_iter().map(|x| cand[x.index]).collect()
}

/// Per-question measures of each configuration (rows) over all queries (columns).
struct Grid {
    names: Vec<String>,
    m: Vec<Vec<M>>,
}

fn mean(ms: impl Iterator<Item = M>) -> M {
    let mut s = [0.0; 5];
    let mut n = 0.0;
    for m in ms {
        for k in 0..5 {
            s[k] += m[k];
        }
        n += 1.0;
    }
    s.map(|v| v / f64::max(n, 1.0))
}

fn report(c: &Corpus, title: &str, g: &Grid) -> Vec<M> {
    println!("\n## {title}\n");
    println!("| configuration | any R@1 | any R@5 | any R@10 | share R@5 | MRR@10 |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, m) in g.names.iter().zip(&g.m).take(if g.names.len() > 24 { 0 } else { 24 }) {
        let x = mean(m.iter().copied());
        println!(
            "| {name} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
            x[0], x[1], x[2], x[3], x[4]
        );
    }
    let all: Vec<bool> = vec![false; c.queries.len()];
    loco(c, g, &all)
}

/// Leave one conversation out on any R@5: for each held-out conversation and each question shape (`shape[q]`), the
/// configuration best on the other conversations' questions of that shape is scored on the held-out ones. Prints
/// the held-out means, per category, and the picks; returns the held-out measures in question order.
fn loco(c: &Corpus, g: &Grid, shape: &[bool]) -> Vec<M> {
    let convs = c.conv_range.len();
    let mut held: Vec<M> = vec![[0.0; 5]; c.queries.len()];
    let mut picks = Vec::new();
    for h in 0..convs {
        for sh in [false, true] {
            let sel = |qi: usize| c.queries[qi].conv != h && shape[qi] == sh;
            if !(0..c.queries.len()).any(|qi| c.queries[qi].conv == h && shape[qi] == sh) {
                continue;
            }
            let best = (0..g.names.len())
                .max_by(|a, b| {
                    let s = |r: usize| -> f64 {
                        (0..c.queries.len())
                            .filter(|qi| sel(*qi))
                            .map(|qi| g.m[r][qi][1] + 1e-3 * g.m[r][qi][4])
                            .sum()
                    };
                    s(*a).total_cmp(&s(*b)).then(b.cmp(a))
                })
                .unwrap_or(0);
            picks.push(if shape.iter().any(|x| *x) {
                format!("[{}] {}", if sh { "temporal" } else { "other" }, g.names[best])
            } else {
                g.names[best].clone()
            });
            for qi in 0..c.queries.len() {
                if c.queries[qi].conv == h && shape[qi] == sh {
                    held[qi] = g.m[best][qi];
                }
            }
        }
    }
    let x = mean(held.iter().copied());
    println!(
        "\nleave-one-conversation-out (chosen on the other conversations by any R@5): held-out any R@1 {:.3}, R@5 {:.3}, R@10 {:.3}, share R@5 {:.3}, MRR@10 {:.3}; picks: {}",
        x[0],
        x[1],
        x[2],
        x[3],
        x[4],
        picks.join("; ")
    );
    per_category(c, "held-out", &held);
    held
}

fn per_category(c: &Corpus, name: &str, m: &[M]) {
    let mut cats: Vec<u8> = c.queries.iter().map(|q| q.category).collect();
    cats.sort_unstable();
    cats.dedup();
    let cells: Vec<String> = cats
        .iter()
        .map(|k| {
            let x = mean(
                c.queries
                    .iter()
                    .zip(m)
                    .filter(|(q, _)| q.category == *k)
                    .map(|(_, m)| *m),
            );
            format!("{k}: {:.3}", x[1])
        })
        .collect();
    println!("{name}: any R@5 per category {}", cells.join(", "));
}

fn embed_cached(
    model: &std::path::Path,
    cache: &std::path::Path,
    tag: &str,
    texts: &[String],
) -> Result<Vec<Vec<f32>>> {
    let emb = cao_embed::Embedder::load(model)?;
    let file = cache.join(format!("{}-{tag}.bin", &emb.info().sha256[..16]));
    let dim = emb.dim();
    if let Ok(bytes) = std::fs::read(&file)
        && bytes.len() == texts.len() * dim * 4
    {
        return Ok(bytes
            .chunks(dim * 4)
            .map(|ch| {
                ch.chunks(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect()
            })
            .collect());
    }
    let started = std::time::Instant::now();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let v = emb.embed(&refs)?;
    eprintln!(
        "embedded {} texts ({tag}) in {:.1} s",
        texts.len(),
        started.elapsed().as_secs_f64()
    );
    let mut bytes = Vec::with_capacity(texts.len() * dim * 4);
    for x in &v {
        for f in x {
            bytes.extend_from_slice(&f.to_le_bytes());
        }
    }
    cao_core::fs::create_private_dir_all(cache)?;
    cao_core::fs::atomic_write(&file, &bytes)?;
    Ok(v)
}

fn main() -> Result<()> {
    let mut model = None;
    let mut cache = std::env::temp_dir().join("cao-retrieval-sweep");
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--model" => model = Some(std::path::PathBuf::from(it.next().context("--model DIR")?)),
            "--cache" => cache = it.next().context("--cache DIR")?.into(),
            other => anyhow::bail!("unknown flag {other}"),
        }
    }
    let c = build()?;
    println!(
        "LoCoMo: {} conversations, {} turns, {} questions",
        c.conv_range.len(),
        c.docs.len(),
        c.queries.len()
    );
    let windows = [0usize, 1, 2, 3];
    let prepared: Vec<Prepared> = windows.iter().map(|w| prepare(&c, *w)).collect();
    let run_lex = |cfg: &Lex| -> Vec<Vec<(usize, f64)>> {
        c.queries
            .iter()
            .map(|q| lexical(&c, &prepared[cfg.window], cfg, q))
            .collect()
    };
    let lex_m = |cfg: &Lex| -> Vec<M> {
        run_lex(cfg)
            .iter()
            .zip(&c.queries)
            .map(|(l, q)| measure(&l.iter().map(|x| x.0).collect::<Vec<_>>(), &q.evidence))
            .collect()
    };
    // The previous defaults (per-field BM25 summed, one neighbour per side); the "diff" rows change one thing each.
    let base = Lex {
        k1: 0.9,
        b: 0.25,
        w: 0.5,
        window: 1,
        near_match: false,
        b_ctx: None,
        df_own: false,
        incremental: false,
        pool: None,
        bm25f: false,
    };
    // The defaults chosen by the "lexgrid" leave-one-conversation-out run (cao_rank::Bm25::DEFAULT,
    // cao_index::NEIGHBOUR_WINDOW).
    let chosen = Lex {
        k1: 1.2,
        b: 0.1,
        w: 0.4,
        window: 2,
        near_match: false,
        b_ctx: None,
        df_own: false,
        incremental: false,
        pool: None,
        bm25f: true,
    };
    // `SWEEP_INCREMENTAL=1`: every group scores with the statistics `cargo xtask retrieval` sees ([`Lex::incremental`]).
    let chosen = Lex {
        incremental: std::env::var("SWEEP_INCREMENTAL").is_ok_and(|v| v == "1"),
        ..chosen
    };
    let only = std::env::var("SWEEP_ONLY").unwrap_or_default();
    let want = |g: &str| only.is_empty() || only.split(',').any(|x| x == g);

    // Single differences from the default.
    if want("diff") {
        let variants: Vec<(String, Lex)> = vec![
            (
                "default (k1 0.9, b 0.25, w 0.5, both neighbours, own-text matches)".into(),
                base,
            ),
            (
                "no context field".into(),
                Lex {
                    w: 0.0,
                    window: 0,
                    ..base
                },
            ),
            (
                "neighbour-only matches allowed".into(),
                Lex {
                    near_match: true,
                    ..base
                },
            ),
            ("window 2".into(), Lex { window: 2, ..base }),
            ("window 3".into(), Lex { window: 3, ..base }),
            ("BM25F field combination".into(), Lex { bm25f: true, ..base }),
            (
                "BM25F, window 2".into(),
                Lex {
                    bm25f: true,
                    window: 2,
                    ..base
                },
            ),
        ];
        let g = Grid {
            names: variants.iter().map(|v| v.0.clone()).collect(),
            m: variants.iter().map(|v| lex_m(&v.1)).collect(),
        };
        report(&c, "lexical: one difference at a time", &g);
        per_category(&c, "default", &g.m[0]);
    }
    if want("lexgrid") {
        let mut names = Vec::new();
        let mut ms = Vec::new();
        for window in [1usize, 2, 3] {
            for bm25f in [false, true] {
                for w in [0.3, 0.4, 0.5, 0.6, 0.7] {
                    for k1 in [0.6, 0.9, 1.2, 1.5] {
                        for b in [0.1, 0.25, 0.4, 0.75] {
                            let cfg = Lex {
                                k1,
                                b,
                                w,
                                window,
                                near_match: false,
                                b_ctx: None,
                                df_own: false,
                                incremental: false,
                                pool: None,
                                bm25f,
                            };
                            names.push(format!("k1 {k1} b {b} w {w} window {window} bm25f {bm25f}"));
                            ms.push(lex_m(&cfg));
                        }
                    }
                }
            }
        }
        let g = Grid { names, m: ms };
        let mut best: Vec<usize> = (0..g.names.len()).collect();
        best.sort_by(|a, b| mean(g.m[*b].iter().copied())[1].total_cmp(&mean(g.m[*a].iter().copied())[1]));
        let top = Grid {
            names: best.iter().take(12).map(|i| g.names[*i].clone()).collect(),
            m: best.iter().take(12).map(|i| g.m[*i].clone()).collect(),
        };
        report(
            &c,
            "lexical grid: the 12 best in-sample (LOCO below is over the whole grid)",
            &top,
        );
        report(&c, &format!("lexical grid ({} configurations)", g.names.len()), &g);
    }

    if want("prf") {
        let first = run_lex(&chosen);
        let base_m: Vec<M> = first
            .iter()
            .zip(&c.queries)
            .map(|(l, q)| measure(&l.iter().map(|x| x.0).collect::<Vec<_>>(), &q.evidence))
            .collect();
        per_category(&c, "no feedback (defaults)", &base_m);
        let mut names = vec!["no feedback".to_owned()];
        let mut ms = vec![base_m];
        for expand_matches in [false, true] {
            for score_weighted in [true, false] {
                for k in [3usize, 5, 10] {
                    for m in [5usize, 10, 20] {
                        for lambda in [0.5, 0.6, 0.7, 0.8, 0.9] {
                            let f = Prf {
                                k,
                                m,
                                lambda,
                                expand_matches,
                                score_weighted,
                            };
                            let pc = &prepared[chosen.window];
                            let got: Vec<M> = first
                                .iter()
                                .zip(&c.queries)
                                .map(|(l, q)| {
                                    let r = prf(&c, pc, &chosen, q, l, &f);
                                    measure(&r.iter().map(|x| x.0).collect::<Vec<_>>(), &q.evidence)
                                })
                                .collect();
                            names.push(format!(
                                "k {k} m {m} lambda {lambda} expansion matches {expand_matches} score-weighted {score_weighted}"
                            ));
                            ms.push(got);
                        }
                    }
                }
            }
        }
        let g = Grid { names, m: ms };
        let mut best: Vec<usize> = (0..g.names.len()).collect();
        best.sort_by(|a, b| mean(g.m[*b].iter().copied())[1].total_cmp(&mean(g.m[*a].iter().copied())[1]));
        let top = Grid {
            names: best.iter().take(12).map(|i| g.names[*i].clone()).collect(),
            m: best.iter().take(12).map(|i| g.m[*i].clone()).collect(),
        };
        report(
            &c,
            "pseudo-relevance feedback: the 12 best in-sample (LOCO below is over them only)",
            &top,
        );
        for em in [false, true] {
            let sub: Vec<usize> = (0..g.names.len())
                .filter(|i| *i == 0 || g.names[*i].contains(&format!("expansion matches {em}")))
                .collect();
            let gs = Grid {
                names: sub.iter().map(|i| g.names[*i].clone()).collect(),
                m: sub.iter().map(|i| g.m[*i].clone()).collect(),
            };
            report(
                &c,
                &format!(
                    "pseudo-relevance feedback, expansion matches {em} ({} configurations)",
                    gs.names.len()
                ),
                &gs,
            );
        }
        report(
            &c,
            &format!("pseudo-relevance feedback ({} configurations)", g.names.len()),
            &g,
        );
    }
    if want("incremental") {
        let inc = Lex {
            incremental: true,
            ..chosen
        };
        let g = Grid {
            names: vec![
                "defaults, statistics of all six conversations".into(),
                "defaults, statistics of the conversations stored so far".into(),
                "defaults, statistics of all six, bounded pool of 10".into(),
                "defaults, statistics so far, bounded pool of 10".into(),
                "defaults, statistics so far, bounded pool of 50".into(),
                "b 0, statistics of all six".into(),
                "b 0, statistics so far".into(),
                "b 0.05, statistics so far".into(),
                "b 0, statistics so far, bounded pool of 10".into(),
            ],
            m: vec![
                lex_m(&chosen),
                lex_m(&inc),
                lex_m(&Lex {
                    pool: Some(10),
                    ..chosen
                }),
                lex_m(&Lex { pool: Some(10), ..inc }),
                lex_m(&Lex { pool: Some(50), ..inc }),
                lex_m(&Lex { b: 0.0, ..chosen }),
                lex_m(&Lex { b: 0.0, ..inc }),
                lex_m(&Lex { b: 0.05, ..inc }),
                lex_m(&Lex {
                    b: 0.0,
                    pool: Some(10),
                    ..inc
                }),
            ],
        };
        report(&c, "corpus statistics", &g);
        per_category(&c, "all six", &g.m[0]);
        per_category(&c, "stored so far", &g.m[1]);
        per_category(&c, "stored so far, bounded pool of 10", &g.m[3]);
        for (name, m) in g.names.iter().zip(&g.m).skip(5) {
            per_category(&c, name, m);
        }
        for (h, r) in c.conv_range.iter().enumerate() {
            let sel = |m: &[M]| mean(c.queries.iter().zip(m).filter(|(q, _)| q.conv == h).map(|(_, m)| *m))[1];
            println!(
                "conversation {h} ({} turns): any R@5 {:.3} -> {:.3}",
                r.len(),
                sel(&g.m[0]),
                sel(&g.m[1])
            );
        }
    }
    if want("lexgrid-incremental") {
        // The defaults' grid again, scored as `cargo xtask retrieval` sees the corpus (statistics of the
        // conversations stored so far), with exact pools.
        let mut names = Vec::new();
        let mut ms = Vec::new();
        for w in [0.3, 0.4, 0.5, 0.6] {
            for k1 in [0.9, 1.2, 1.5] {
                for b in [0.0, 0.1, 0.25] {
                    names.push(format!("k1 {k1} b {b} w {w}"));
                    ms.push(lex_m(&Lex {
                        k1,
                        b,
                        w,
                        incremental: true,
                        ..chosen
                    }));
                }
            }
        }
        report(
            &c,
            &format!("lexical grid, statistics so far ({} configurations)", names.len()),
            &Grid { names, m: ms },
        );
    }
    if want("more") {
        let mut names = vec!["defaults".to_owned()];
        let mut ms = vec![lex_m(&chosen)];
        for b_ctx in [0.0, 0.1, 0.25, 0.5, 0.75, 1.0] {
            for b in [0.1, 0.25] {
                for w in [0.3, 0.4, 0.5] {
                    names.push(format!("b {b} context b {b_ctx} w {w}"));
                    ms.push(lex_m(&Lex {
                        b,
                        b_ctx: Some(b_ctx),
                        w,
                        ..chosen
                    }));
                }
            }
        }
        let g = Grid { names, m: ms };
        let mut best: Vec<usize> = (0..g.names.len()).collect();
        best.sort_by(|a, b| mean(g.m[*b].iter().copied())[1].total_cmp(&mean(g.m[*a].iter().copied())[1]));
        let top = Grid {
            names: best.iter().take(8).map(|i| g.names[*i].clone()).collect(),
            m: best.iter().take(8).map(|i| g.m[*i].clone()).collect(),
        };
        report(&c, "per-field b: the 8 best in-sample", &top);
        report(&c, &format!("per-field b ({} configurations)", g.names.len()), &g);
        let mut names = vec!["defaults".to_owned()];
        let mut ms = vec![lex_m(&chosen)];
        for w in [0.3, 0.4, 0.5] {
            for k1 in [0.9, 1.2, 1.5] {
                names.push(format!("own-text df, k1 {k1} w {w}"));
                ms.push(lex_m(&Lex {
                    df_own: true,
                    k1,
                    w,
                    ..chosen
                }));
            }
        }
        report(
            &c,
            &format!("document frequency over own text ({} configurations)", names.len()),
            &Grid { names, m: ms },
        );
    }
    if want("shape") {
        let shape: Vec<bool> = c.queries.iter().map(|q| temporal_shape(&q.text)).collect();
        let mut counts: std::collections::BTreeMap<(u8, bool), usize> = std::collections::BTreeMap::new();
        for (q, s) in c.queries.iter().zip(&shape) {
            *counts.entry((q.category, *s)).or_default() += 1;
        }
        println!("\nquestion shapes (category, temporal shape) -> questions: {counts:?}");
        let mut names = Vec::new();
        let mut ms = Vec::new();
        for w in [0.2, 0.3, 0.4, 0.5, 0.6, 0.8] {
            for k1 in [0.9, 1.2, 1.5] {
                for b in [0.1, 0.25] {
                    let cfg = Lex { k1, b, w, ..chosen };
                    names.push(format!("k1 {k1} b {b} w {w}"));
                    ms.push(lex_m(&cfg));
                }
            }
        }
        let g = Grid { names, m: ms };
        println!(
            "\n## field weights, one configuration for every question ({} configurations)",
            g.names.len()
        );
        loco(&c, &g, &vec![false; c.queries.len()]);
        println!(
            "\n## field weights per question shape (temporal / other; {} configurations each)",
            g.names.len()
        );
        loco(&c, &g, &shape);
    }

    let Some(model) = model else { return Ok(()) };
    let texts: Vec<String> = {
        let samples = locomo::load()?;
        samples
            .iter()
            .flat_map(|s| {
                s.turns
                    .iter()
                    .map(|t| format!("{} ({}): {}", t.speaker, t.date, t.text))
            })
            .collect()
    };
    let dv = embed_cached(&model, &cache, "turns", &texts)?;
    let qv = embed_cached(
        &model,
        &cache,
        "questions",
        &c.queries.iter().map(|q| q.text.clone()).collect::<Vec<_>>(),
    )?;
    let dense_m = |lexcfg: &Lex, vecs: &[Vec<f32>], d: &Dense| -> Vec<M> {
        run_lex(lexcfg)
            .iter()
            .zip(&c.queries)
            .zip(&qv)
            .map(|((l, q), v)| measure(&fused(&c, l, vecs, v, q, d), &q.evidence))
            .collect()
    };
    let dbase = Dense {
        alpha: 0.5,
        pool: 50,
        near: 0.0,
        contextual: false,
    };
    if want("dense") {
        let ctx_texts: Vec<String> = (0..texts.len())
            .map(|i| {
                let same = i > 0 && c.docs[i - 1].conv == c.docs[i].conv;
                if same {
                    format!("{}\n{}", texts[i - 1], texts[i])
                } else {
                    texts[i].clone()
                }
            })
            .collect();
        let cv = embed_cached(&model, &cache, "turns-with-previous", &ctx_texts)?;
        let variants: Vec<(String, Dense)> = vec![
            ("default (alpha 0.5, pool 50)".into(), dbase),
            ("pool 100".into(), Dense { pool: 100, ..dbase }),
            ("pool 20".into(), Dense { pool: 20, ..dbase }),
            ("neighbour similarity 0.5".into(), Dense { near: 0.5, ..dbase }),
            (
                "contextual vectors (with previous turn)".into(),
                Dense {
                    contextual: true,
                    ..dbase
                },
            ),
        ];
        let g = Grid {
            names: variants.iter().map(|v| v.0.clone()).collect(),
            m: variants
                .iter()
                .map(|v| dense_m(&chosen, if v.1.contextual { &cv } else { &dv }, &v.1))
                .collect(),
        };
        report(&c, "hybrid: one difference at a time", &g);
        per_category(&c, "default", &g.m[0]);
    }
    if want("densegrid") {
        let mut names = Vec::new();
        let mut ms = Vec::new();
        for alpha in [0.3, 0.4, 0.5, 0.6] {
            for near in [0.0, 0.25, 0.5, 0.75] {
                for pool in [50usize, 100] {
                    let d = Dense {
                        alpha,
                        pool,
                        near,
                        contextual: false,
                    };
                    names.push(format!("alpha {alpha} near {near} pool {pool}"));
                    ms.push(dense_m(&chosen, &dv, &d));
                }
            }
        }
        report(&c, "hybrid grid", &Grid { names, m: ms });
    }
    Ok(())
}
