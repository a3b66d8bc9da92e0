//! `cao-bench`: shared pieces of the benchmark and retrieval binaries (dev tooling; not shipped).
//!
//! - [`locomo`] loads the LoCoMo conversations from `../shared/data/locomo/locomo6.json` (or `CAO_LOCOMO`); it is
//!   `cao_testkit::locomo`, shared with the tests.
//! - [`Stats`] summarises latency samples (nearest-rank percentiles in milliseconds).
//! - [`vault`] measures the Obsidian vault (`bench --only vault`): reconcile, rescan, recall against native.
//! - [`mcp`] measures latency through a real `cao-mcp-server` over stdio (`bench --only mcp`).
//! - [`time_recalls`] times recalls of one search mode / order (the embedded and the PostgreSQL recall rows).
//! - [`bundle`] writes generated memories as an OKF bundle (the import rows' and the native vault comparison's input).

use anyhow::Result;
use cao_core::{SearchMode, SortBy, TerminalContext};
use cao_memory::{MemoryService, RecallArgs};
use std::time::{Duration, Instant};

pub mod bundle;
pub mod mcp;
pub mod vault;

/// One recall through `svc` as `ctx`: `query` in search mode `mode` and order `sort`, access recorded (what a tool
/// call does); the answer is dropped after [`std::hint::black_box`].
///
/// Errors: the recall's error.
pub fn recall_once(
    svc: &MemoryService,
    ctx: &TerminalContext,
    mode: SearchMode,
    sort: SortBy,
    query: &str,
) -> Result<()> {
    let r = svc.recall(
        ctx,
        cao_memory::Call::new(
            RecallArgs {
                query: Some(query.to_owned()),
                search_mode: Some(mode),
                sort_by: Some(sort),
                ..Default::default()
            },
            cao_memory::CallOptions {
                record_access: true,
                ..Default::default()
            },
        ),
    )?;
    std::hint::black_box(r);
    Ok(())
}

/// The (search mode, order) pairs each store's recall rows are timed in, in the order the tables list them: every
/// lexical mode the issue goals name (metadata, BM25 and hybrid by recency; hybrid and BM25 by score; hybrid by
/// usage and by relevance). Used by the embedded and the PostgreSQL tables alike.
pub const RECALL_MODES: [(SearchMode, SortBy); 7] = [
    (SearchMode::Metadata, SortBy::Recency),
    (SearchMode::Bm25, SortBy::Recency),
    (SearchMode::Hybrid, SortBy::Recency),
    (SearchMode::Hybrid, SortBy::Score),
    (SearchMode::Bm25, SortBy::Score),
    (SearchMode::Hybrid, SortBy::Usage),
    (SearchMode::Hybrid, SortBy::Relevance),
];

/// [`recall_once`] `n` times, asking `questions` in turn (cycled; none when `questions` is empty), and the latency
/// of each call.
///
/// Errors: the first failing recall's error (the samples before it are dropped).
pub fn time_recalls(
    svc: &MemoryService,
    ctx: &TerminalContext,
    mode: SearchMode,
    sort: SortBy,
    questions: &[String],
    n: usize,
) -> Result<Stats> {
    let mut st = Stats::default();
    for q in questions.iter().cycle().take(n) {
        let t = Instant::now();
        recall_once(svc, ctx, mode, sort, q)?;
        st.push(t.elapsed());
    }
    Ok(st)
}

/// Latency samples of one measured operation.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    samples: Vec<Duration>,
}

impl Stats {
    /// Print one row of the bench table, `| <size> | <op> | p50 ms | p95 ms | p99 ms | n |`.
    #[allow(clippy::print_stdout, reason = "the bench binary's table")]
    pub fn print_row(&self, size: usize, op: &str) {
        println!(
            "| {size} | {op} | {:.3} | {:.3} | {:.3} | {} |",
            self.pct_ms(50.0),
            self.pct_ms(95.0),
            self.pct_ms(99.0),
            self.len()
        );
    }

    /// Add one sample.
    pub fn push(&mut self, d: Duration) {
        self.samples.push(d);
    }
    /// The `p`-th percentile (0..=100) in milliseconds (nearest rank); 0 when empty.
    pub fn pct_ms(&self, p: f64) -> f64 {
        if self.samples.is_empty() {
            return 0.0;
        }
        let mut v = self.samples.clone();
        v.sort();
        let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize - 1;
        v[rank.min(v.len() - 1)].as_secs_f64() * 1000.0
    }
    /// Number of samples.
    pub fn len(&self) -> usize {
        self.samples.len()
    }
    /// Whether there are no samples.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }
}

/// LoCoMo data (the loader lives in `cao-testkit`, which tests share).
pub use cao_testkit::locomo;
