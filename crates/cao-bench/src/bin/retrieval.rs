//! `cargo xtask retrieval`: recall@1/5/10 and MRR on LoCoMo, through the MCP tool layer.
//!
//! Every turn of every conversation is stored with the `memory_store` tool (one memory per turn, key from the
//! turn's `dia_id`, project scope, one project per conversation). Every question except category 5 is asked with
//! `memory_recall` (limit 10) in each configuration; a hit is a returned key that is one of the question's
//! evidence turns. recall@k = share of a question's evidence turns found in the top k, averaged over questions;
//! MRR = mean of 1 / rank of the first evidence turn (0 when none is in the top 10).
#![allow(clippy::print_stdout)]

use anyhow::{Context, Result};
use cao_bench::locomo;
use cao_core::{CaoHome, Settings, SystemClock, TerminalContext};
use cao_mcp::{FixedContext, FlushSignal, MemoryTools, ServiceHandle};
use cao_memory::MemoryService;
use serde_json::json;
use std::sync::Arc;

const CONFIGS: [(&str, &str, &str); 4] = [
    ("bm25", "bm25", "recency"),
    ("hybrid", "hybrid", "recency"),
    ("score", "hybrid", "score"),
    ("metadata", "metadata", "recency"),
];

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

async fn run() -> Result<()> {
    let samples = locomo::load()?;
    let tmp = tempfile::tempdir()?;
    let home = CaoHome::new(tmp.path().join("home"));
    let svc = MemoryService::open_with(home, Settings::default(), Arc::new(SystemClock))?;
    let mut totals = vec![(0.0f64, 0.0f64, 0.0f64, 0.0f64); CONFIGS.len()];
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
        for t in &sample.turns {
            let out = call(
                &tools,
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
        for q in sample
            .questions
            .iter()
            .filter(|q| q.category != 5 && !q.evidence.is_empty())
        {
            n_questions += 1;
            let evidence: Vec<String> = q.evidence.iter().map(|e| locomo::turn_key(e.trim())).collect();
            for (i, (_, mode, sort)) in CONFIGS.iter().enumerate() {
                let out = call(
                    &tools,
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
                let found_at = |k: usize| {
                    let top = &keys[..keys.len().min(k)];
                    evidence.iter().filter(|e| top.contains(e)).count() as f64 / evidence.len() as f64
                };
                let rr = keys
                    .iter()
                    .position(|k| evidence.contains(k))
                    .map_or(0.0, |p| 1.0 / (p as f64 + 1.0));
                let t = &mut totals[i];
                t.0 += found_at(1);
                t.1 += found_at(5);
                t.2 += found_at(10);
                t.3 += rr;
            }
        }
    }
    println!(
        "LoCoMo ({} conversations, {n_turns} turns stored, {n_questions} questions, category 5 excluded)",
        samples.len()
    );
    println!();
    println!("| mode | search_mode/sort_by | recall@1 | recall@5 | recall@10 | MRR |");
    println!("|---|---|---:|---:|---:|---:|");
    let n = n_questions as f64;
    for (i, (name, mode, sort)) in CONFIGS.iter().enumerate() {
        let t = totals[i];
        println!(
            "| {name} | {mode}/{sort} | {:.3} | {:.3} | {:.3} | {:.3} |",
            t.0 / n,
            t.1 / n,
            t.2 / n,
            t.3 / n
        );
    }
    Ok(())
}
