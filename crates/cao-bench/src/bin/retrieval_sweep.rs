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
    stats: CorpusStats,
}

const NEAR_TERMS: usize = 100;

fn prepare(c: &Corpus, window: usize) -> Prepared {
    let mut tf = Vec::with_capacity(c.docs.len());
    let mut len = Vec::with_capacity(c.docs.len());
    let mut df = vec![0u64; c.n_terms];
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
        let l = [d.content.len() as u32, ctx_len];
        field_terms[0] += u64::from(l[0]);
        field_terms[1] += u64::from(l[1]);
        tf.push(m);
        len.push(l);
    }
    Prepared {
        tf,
        len,
        df,
        stats: CorpusStats {
            docs: c.docs.len() as u64,
            field_terms,
        },
    }
}

/// Lexical scores of the visible docs of `q` (conversation), `None` = no match.
fn lexical(c: &Corpus, p: &Prepared, cfg: &Lex, q: &Query) -> Vec<(usize, f64)> {
    let bm = Bm25 {
        k1: cfg.k1,
        b: cfg.b,
        context_weight: cfg.w,
    };
    let idf: Vec<f64> = q.terms.iter().map(|t| bm.idf(&p.stats, p.df[*t as usize])).collect();
    let avg = [
        p.stats.avg_len(cao_core::lexical::Field::Content),
        p.stats.avg_len(cao_core::lexical::Field::Context),
    ];
    let mut out = Vec::new();
    for i in c.conv_range[q.conv].clone() {
        let own = c.docs[i]
            .content
            .iter()
            .chain(&c.docs[i].meta)
            .any(|t| q.terms.contains(t));
        let mut s = 0.0;
        let mut any = false;
        for (t, w) in q.terms.iter().zip(&idf) {
            let Some(f) = p.tf[i].get(t) else { continue };
            any = true;
            let term = TermInDoc { tf: *f, len: p.len[i] };
            if cfg.bm25f {
                // The product's formula (cao_rank::Bm25 is BM25F).
                s += bm.term_score(&p.stats, *w, &term);
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
                        s += w * wf * tf * (cfg.k1 + 1.0) / (tf + cfg.k1 * (1.0 - cfg.b + cfg.b * rel));
                    }
                }
            }
        }
        if any && s > 0.0 && (own || cfg.near_match) {
            out.push((i, s));
        }
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
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

fn report(c: &Corpus, title: &str, g: &Grid) {
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
    // Leave one conversation out on any R@5.
    let convs = c.conv_range.len();
    let mut held = Vec::new();
    let mut picks = Vec::new();
    for h in 0..convs {
        let best = (0..g.names.len())
            .max_by(|a, b| {
                let s = |r: usize| -> f64 {
                    c.queries
                        .iter()
                        .zip(&g.m[r])
                        .filter(|(q, _)| q.conv != h)
                        .map(|(_, m)| m[1] + 1e-3 * m[4])
                        .sum()
                };
                s(*a).total_cmp(&s(*b)).then(b.cmp(a))
            })
            .unwrap_or(0);
        picks.push(g.names[best].clone());
        held.extend(
            c.queries
                .iter()
                .zip(&g.m[best])
                .filter(|(q, _)| q.conv == h)
                .map(|(_, m)| *m),
        );
    }
    let x = mean(held.into_iter());
    println!(
        "\nleave-one-conversation-out (chosen on the other conversations by any R@5): held-out any R@1 {:.3}, R@5 {:.3}, R@10 {:.3}, share R@5 {:.3}, MRR@10 {:.3}; picks: {}",
        x[0],
        x[1],
        x[2],
        x[3],
        x[4],
        picks.join("; ")
    );
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
        bm25f: true,
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
