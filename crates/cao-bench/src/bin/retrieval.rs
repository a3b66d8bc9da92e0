//! `cargo xtask retrieval`: recall@1/5/10 and MRR@10 on LoCoMo, through the MCP tool layer.
//!
//! Every turn of every conversation is stored with the `memory_store` tool (one memory per turn, key from the
//! turn's `dia_id`, project scope, one project per conversation). Every question except category 5 is asked with
//! `memory_recall` (limit 10) in each configuration; a hit is a returned key that is one of the question's
//! evidence turns. Two recall measures, averaged over questions:
//! - any-evidence R@k: 1 when at least one of the question's evidence turns is in the top k, else 0;
//! - share R@k: the share of the question's evidence turns found in the top k.
//!
//! MRR@10 = mean of 1 / rank of the first evidence turn (0 when none is in the top 10). A second table gives
//! any-evidence R@5 per LoCoMo category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop).
//!
//! With `--model DIR` (or `CAO_EMBED_MODEL`; `cargo xtask retrieval` turns the variable into the flag) the turns
//! are stored with that embedding model configured (each turn's vector written with it) and every configuration is
//! measured twice: lexical (no model) and hybrid (the model's dense similarity fused with the lexical score;
//! docs/decisions/0011-dense-recall.md). The relevance sort and metadata mode do not use the model and are measured
//! lexically only.
//!
//! Usage: `retrieval [--dated] [--dump FILE] [--model DIR]`. By default every turn is stored now (all memories the same age).
//! `--dated` stores each turn at its session's date (a fixed clock, turns a second apart) and asks the questions the
//! day after the conversation's last session, so age-dependent orders (score, relevance's project age factor) see
//! the conversation's real time span. `--dump` writes one JSON line per question (sample, question, category,
//! evidence keys and the returned keys of each configuration) for per-question comparisons.
#![allow(clippy::print_stdout)]

use anyhow::{Context, Result};
use cao_bench::locomo;
use cao_core::{CaoHome, FixedClock, Settings, SystemClock, TerminalContext};
use cao_mcp::{FixedContext, FlushSignal, MemoryTools, ServiceHandle};
use cao_memory::MemoryService;
use chrono::{DateTime, Utc};
use serde_json::json;
use std::sync::Arc;

const CONFIGS: [(&str, &str, &str); 6] = [
    ("bm25", "bm25", "recency"),
    ("hybrid", "hybrid", "recency"),
    ("bm25-score", "bm25", "score"),
    ("score", "hybrid", "score"),
    ("relevance", "hybrid", "relevance"),
    ("metadata", "metadata", "recency"),
];

/// The cut-offs of the recall measures.
const KS: [usize; 3] = [1, 5, 10];

/// One question's measures, or (in [`Totals::mean`]) their means.
#[derive(Debug, Clone, Copy, Default)]
struct Metrics {
    /// Any-evidence recall at each of [`KS`]: 1 when an evidence turn is in the top k.
    any: [f64; 3],
    /// Share of the evidence turns in the top k, at each of [`KS`].
    share: [f64; 3],
    /// Reciprocal rank of the first evidence turn in the top 10 (0 when none).
    rr: f64,
}

impl Metrics {
    /// The measures of one answer (`keys`, best first) against the question's evidence keys (non-empty).
    fn of(keys: &[String], evidence: &[String]) -> Metrics {
        let mut m = Metrics::default();
        for (j, k) in KS.iter().enumerate() {
            let top = &keys[..keys.len().min(*k)];
            let found = evidence.iter().filter(|e| top.contains(e)).count();
            m.any[j] = if found > 0 { 1.0 } else { 0.0 };
            m.share[j] = found as f64 / evidence.len() as f64;
        }
        m.rr = keys
            .iter()
            .take(10)
            .position(|k| evidence.contains(k))
            .map_or(0.0, |p| 1.0 / (p as f64 + 1.0));
        m
    }
}

/// Sums of [`Metrics`] over questions.
#[derive(Debug, Clone, Copy, Default)]
struct Totals {
    sum: Metrics,
    n: usize,
}

impl Totals {
    fn add(&mut self, m: &Metrics) {
        for j in 0..KS.len() {
            self.sum.any[j] += m.any[j];
            self.sum.share[j] += m.share[j];
        }
        self.sum.rr += m.rr;
        self.n += 1;
    }

    fn mean(&self) -> Metrics {
        let n = self.n.max(1) as f64;
        Metrics {
            any: self.sum.any.map(|v| v / n),
            share: self.sum.share.map(|v| v / n),
            rr: self.sum.rr / n,
        }
    }
}

fn main() -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(run())
}

async fn call(
    tools: &MemoryTools,
    ctx: &TerminalContext,
    name: &str,
    args: serde_json::Value,
) -> Result<serde_json::Value> {
    let serde_json::Value::Object(map) = args else {
        anyhow::bail!("arguments must be an object")
    };
    tools
        .call(name, Some(map), ctx.clone())
        .await
        .map_err(|e| anyhow::anyhow!("{name}: {e:?}"))
}

/// Command-line flags.
#[derive(Default)]
struct Args {
    dump: Option<std::path::PathBuf>,
    dated: bool,
    model: Option<std::path::PathBuf>,
}

fn args() -> Result<Args> {
    let mut a = Args::default();
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--dump" => a.dump = Some(it.next().context("--dump needs a file")?.into()),
            "--dated" => a.dated = true,
            "--model" => a.model = Some(it.next().context("--model needs a directory")?.into()),
            other => anyhow::bail!("unknown flag {other}; usage: retrieval [--dated] [--dump FILE] [--model DIR]"),
        }
    }
    Ok(a)
}

/// A LoCoMo session date (`1:56 pm on 8 May, 2023`) as UTC.
fn session_time(date: &str) -> Result<DateTime<Utc>> {
    let t = chrono::NaiveDateTime::parse_from_str(date, "%I:%M %p on %d %B, %Y")
        .with_context(|| format!("unparsable LoCoMo session date {date:?}"))?;
    Ok(t.and_utc())
}

async fn run() -> Result<()> {
    let args = args()?;
    #[allow(
        clippy::disallowed_methods,
        reason = "a report file the user named, streamed line by line; not memory data"
    )]
    let mut dump = match &args.dump {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        None => None,
    };
    let samples = locomo::load()?;
    let tmp = tempfile::tempdir()?;
    let home = CaoHome::new(tmp.path().join("home"));
    let clock = Arc::new(FixedClock::new(Utc::now()));
    if args.model.is_none() && std::env::var_os("CAO_EMBED_MODEL").is_some() {
        anyhow::bail!(
            "CAO_EMBED_MODEL is set: pass the directory as --model DIR and unset it (lexical rows need no model)"
        );
    }
    let clock_of = || -> Arc<dyn cao_core::Clock> {
        if args.dated {
            clock.clone()
        } else {
            Arc::new(SystemClock)
        }
    };
    let svc = MemoryService::open_with(home.clone(), Settings::default(), clock_of())?;
    // With a model: the same home, the model configured (stores write vectors; recall fuses).
    let dense_svc = match &args.model {
        Some(dir) => {
            let dir = std::path::absolute(dir)?;
            let info = cao_embed::inspect_dir(&dir).with_context(|| format!("model directory {}", dir.display()))?;
            println!("embedding model: {} ({})", info.model_id, dir.display());
            let settings = Settings::from_value(json!({"memory": {"embeddings": {"model_dir": dir}}}));
            Some(MemoryService::open_with(home, settings, clock_of())?)
        }
        None => None,
    };
    // (label, config index, hybrid) of every measured row.
    let mut rows: Vec<(String, usize, bool)> = CONFIGS
        .iter()
        .enumerate()
        .map(|(i, (name, _, _))| ((*name).to_owned(), i, false))
        .collect();
    if dense_svc.is_some() {
        for (i, (name, mode, sort)) in CONFIGS.iter().enumerate() {
            if *mode != "metadata" && *sort != "relevance" {
                rows.push((format!("{name} +dense"), i, true));
            }
        }
    }
    let mut totals = vec![Totals::default(); rows.len()];
    let store_started = std::time::Instant::now();
    let mut query_time = std::time::Duration::ZERO;
    // (category, config) -> totals.
    let mut by_category: std::collections::BTreeMap<(u8, usize), Totals> = std::collections::BTreeMap::new();
    let mut n_questions = 0usize;
    let mut n_turns = 0usize;
    for sample in &samples {
        let ctx = TerminalContext {
            project_id: Some(sample.sample_id.clone()),
            cwd: Some(tmp.path().to_path_buf()),
            ..Default::default()
        };
        let tools = MemoryTools::new(
            ServiceHandle::open(svc.clone()),
            Arc::new(FixedContext(ctx.clone())),
            FlushSignal::new(),
        );
        let dense_tools = dense_svc.as_ref().map(|d| {
            MemoryTools::new(
                ServiceHandle::open(d.clone()),
                Arc::new(FixedContext(ctx.clone())),
                FlushSignal::new(),
            )
        });
        let store_tools = dense_tools.as_ref().unwrap_or(&tools);
        let mut last = None;
        for (i, t) in sample.turns.iter().enumerate() {
            if args.dated {
                // Turns of a session are stored a second apart, in order, at the session's date.
                let at = session_time(&t.date)? + chrono::Duration::seconds(i as i64);
                clock.set(at);
                last = Some(at);
            }
            let out = call(
                store_tools,
                &ctx,
                "memory_store",
                json!({
                    "content": format!("{} ({}): {}", t.speaker, t.date, t.text),
                    "key": locomo::turn_key(&t.dia_id),
                    "scope": "project",
                    "memory_type": "project",
                }),
            )
            .await?;
            anyhow::ensure!(out["success"] == json!(true), "store failed: {out}");
            n_turns += 1;
        }
        if let Some(at) = last {
            // Questions are asked the day after the conversation's last session.
            clock.set(at + chrono::Duration::days(1));
        }
        for q in sample
            .questions
            .iter()
            .filter(|q| q.category != 5 && !q.evidence.is_empty())
        {
            n_questions += 1;
            let evidence: Vec<String> = q.evidence.iter().map(|e| locomo::turn_key(e.trim())).collect();
            let mut returned = serde_json::Map::new();
            for (r, (label, i, hybrid)) in rows.iter().enumerate() {
                let (_, mode, sort) = CONFIGS[*i];
                let via = match (&dense_tools, hybrid) {
                    (Some(d), true) => d,
                    _ => &tools,
                };
                let started = std::time::Instant::now();
                let out = call(
                    via,
                    &ctx,
                    "memory_recall",
                    json!({"query": q.question, "scope": "project", "limit": 10, "search_mode": mode, "sort_by": sort}),
                )
                .await?;
                let keys: Vec<String> = out["memories"]
                    .as_array()
                    .context("memories array")?
                    .iter()
                    .filter_map(|m| m["key"].as_str().map(str::to_owned))
                    .collect();
                query_time += started.elapsed();
                let q_metrics = Metrics::of(&keys, &evidence);
                totals[r].add(&q_metrics);
                by_category.entry((q.category, r)).or_default().add(&q_metrics);
                returned.insert(label.clone(), json!(keys));
            }
            if let Some(w) = dump.as_mut() {
                use std::io::Write;
                let line = json!({
                    "sample": sample.sample_id,
                    "question": q.question,
                    "category": q.category,
                    "evidence": evidence,
                    "returned": returned,
                });
                writeln!(w, "{line}")?;
            }
        }
    }
    println!(
        "LoCoMo ({} conversations, {n_turns} turns stored, {n_questions} questions, category 5 excluded{})",
        samples.len(),
        if args.dated {
            "; turns dated at their session, questions asked the day after the last session"
        } else {
            ""
        }
    );
    println!();
    println!(
        "| mode | search_mode/sort_by | any R@1 | any R@5 | any R@10 | share R@1 | share R@5 | share R@10 | MRR@10 |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for (r, (name, i, _)) in rows.iter().enumerate() {
        let (_, mode, sort) = CONFIGS[*i];
        let t = &totals[r];
        let m = t.mean();
        println!(
            "| {name} | {mode}/{sort} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
            m.any[0], m.any[1], m.any[2], m.share[0], m.share[1], m.share[2], m.rr
        );
    }
    println!();
    println!("any-evidence R@5 per LoCoMo category (questions):");
    println!();
    let categories: std::collections::BTreeSet<u8> = by_category.keys().map(|(c, _)| *c).collect();
    let head: Vec<String> = rows.iter().map(|(name, _, _)| name.clone()).collect();
    println!("| category | questions | {} |", head.join(" | "));
    println!("|---|---:|{}", "---:|".repeat(rows.len()));
    for c in categories {
        let n = by_category.get(&(c, 0)).map_or(0, |t| t.n);
        let cells: Vec<String> = (0..rows.len())
            .map(|i| {
                by_category
                    .get(&(c, i))
                    .map_or("-".into(), |t| format!("{:.3}", t.mean().any[1]))
            })
            .collect();
        println!("| {c} | {n} | {} |", cells.join(" | "));
    }
    println!();
    println!(
        "stores (with their embeddings when a model is given): {:.1} s; recall calls: {} in {:.1} s",
        store_started.elapsed().as_secs_f64() - query_time.as_secs_f64(),
        n_questions * rows.len(),
        query_time.as_secs_f64()
    );
    if let Some(mut w) = dump {
        use std::io::Write;
        w.flush()?;
    }
    Ok(())
}
