//! Quality and latency of the lexical pool on LoCoMo at the index, with and without step 0 of
//! [`PoolBudget`] (the exact pool of a small visibility).
//!
//! `cargo run --release -p cao-index --example pool_locomo -- DIR` (a directory for the database, created if
//! missing; the data file is `cao_testkit::locomo::path()`). Every turn is stored as one project memory
//! (`speaker (date): text`, key from its `dia_id`, one project per conversation, turns a second apart), as
//! `cargo xtask retrieval` stores them; after each conversation its questions (category 5 excluded) are asked as
//! bm25 pools of 10 through the conversation's project, once per budget, so each conversation is scored against
//! the statistics of the conversations stored so far, as in `cargo xtask retrieval`. Prints any-evidence R@1/5/10,
//! MRR@10, any R@5 per LoCoMo category and the pool's latency (p50 / p95 / p99 ms) per budget. The harness's MCP
//! layer and result formatting are not included: the pools are the product's, the timings are the index's.

use cao_core::{Key, MemoryType, Scope};
use cao_index::{Index, MemoryRow, PoolBudget, Visibility};
use cao_rank::Bm25;
use std::collections::BTreeMap;
use std::time::Instant;

/// Sums over questions: any-evidence hits at 1, 5, 10 and reciprocal ranks (top 10).
#[derive(Default, Clone)]
struct Sums {
    n: f64,
    any: [f64; 3],
    rr: f64,
}

impl Sums {
    fn add(&mut self, keys: &[String], evidence: &[String]) {
        self.n += 1.0;
        for (j, k) in [1usize, 5, 10].iter().enumerate() {
            if keys.iter().take(*k).any(|key| evidence.contains(key)) {
                self.any[j] += 1.0;
            }
        }
        if let Some(p) = keys.iter().take(10).position(|key| evidence.contains(key)) {
            self.rr += 1.0 / (p as f64 + 1.0);
        }
    }
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

#[allow(clippy::print_stdout)] // a benchmark report is its output
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: pool_locomo DIR")?;
    let path = std::path::Path::new(&dir).join("pool_locomo.db");
    if path.exists() {
        std::fs::remove_file(&path)?;
    }
    let index = Index::open(&path)?;
    let samples = cao_testkit::locomo::load()?;
    let budgets = [
        (
            "steps 1-4 only (before)",
            PoolBudget {
                exact_visible_rows: 0,
                ..PoolBudget::RECALL
            },
        ),
        ("PoolBudget::RECALL (exact up to 1,000 visible)", PoolBudget::RECALL),
    ];
    let mut totals = vec![Sums::default(); budgets.len()];
    let mut by_category: BTreeMap<(u8, usize), Sums> = BTreeMap::new();
    let mut latency: Vec<Vec<f64>> = vec![Vec::new(); budgets.len()];
    let start = chrono::Utc::now() - chrono::TimeDelta::days(1);
    let mut stored = 0i64;
    for sample in &samples {
        for (i, t) in sample.turns.iter().enumerate() {
            let key = cao_testkit::locomo::turn_key(&t.dia_id);
            let mut row = MemoryRow::new(
                format!("{}-{i}", sample.sample_id),
                Scope::Project,
                Some(sample.sample_id.clone()),
                Key::parse_strict(&key)?,
                MemoryType::Project,
                format!("/wiki/{}/{key}.md", sample.sample_id),
                "",
                format!("{} ({}): {}", t.speaker, t.date, t.text),
                start + chrono::TimeDelta::seconds(stored),
            );
            row.entry_count = 1;
            index.upsert(&row)?;
            stored += 1;
        }
        let vis = Visibility::none().allow(Scope::Project, Some(&sample.sample_id));
        for (qi, q) in sample
            .questions
            .iter()
            .filter(|q| q.category != 5 && !q.evidence.is_empty())
            .enumerate()
        {
            let evidence: Vec<String> = q
                .evidence
                .iter()
                .map(|e| cao_testkit::locomo::turn_key(e.trim()))
                .collect();
            let terms = cao_index::search_tokens(&q.question);
            // Alternate which budget runs first, so neither always finds the pages the other just read.
            let order: Vec<usize> = if qi % 2 == 0 { vec![0, 1] } else { vec![1, 0] };
            for b in order {
                let budget = &budgets[b].1;
                let t = Instant::now();
                let pool = index.bm25_pool_budgeted(&vis, None, &terms, 10, &Bm25::DEFAULT, *budget)?;
                latency[b].push(t.elapsed().as_secs_f64() * 1000.0);
                let keys: Vec<String> = pool.iter().map(|(r, _)| r.key.as_str().to_owned()).collect();
                totals[b].add(&keys, &evidence);
                by_category.entry((q.category, b)).or_default().add(&keys, &evidence);
            }
        }
    }
    println!(
        "LoCoMo: {} conversations, {stored} turns, bm25 pools of 10",
        samples.len()
    );
    println!();
    println!(
        "| budget | any R@1 | any R@5 | any R@10 | MRR@10 | per category any R@5 (1 / 2 / 3 / 4) | p50 ms | p95 ms | p99 ms |"
    );
    println!("|---|---:|---:|---:|---:|---|---:|---:|---:|");
    for (b, (name, _)) in budgets.iter().enumerate() {
        let s = &totals[b];
        let cats: Vec<String> = (1..=4u8)
            .map(|c| {
                by_category
                    .get(&(c, b))
                    .map_or("-".to_owned(), |x| format!("{:.3}", x.any[1] / x.n))
            })
            .collect();
        let lat = &mut latency[b];
        println!(
            "| {name} | {:.3} | {:.3} | {:.3} | {:.3} | {} | {:.3} | {:.3} | {:.3} |",
            s.any[0] / s.n,
            s.any[1] / s.n,
            s.any[2] / s.n,
            s.rr / s.n,
            cats.join(" / "),
            percentile(lat, 0.5),
            percentile(lat, 0.95),
            percentile(lat, 0.99)
        );
    }
    Ok(())
}
