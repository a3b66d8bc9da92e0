//! `cao-bench`: shared pieces of the benchmark and retrieval binaries (dev tooling; not shipped).
//!
//! - [`locomo`] loads the LoCoMo conversations from `../shared/data/locomo/locomo6.json` (or `CAO_LOCOMO`); it is
//!   `cao_testkit::locomo`, shared with the tests.
//! - [`Stats`] summarises latency samples (nearest-rank percentiles in milliseconds).
//! - [`vault`] measures the Obsidian vault (`bench --only vault`): reconcile, rescan, recall against native.
//! - [`mcp`] measures latency through a real `cao-mcp-server` over stdio (`bench --only mcp`).

use std::time::Duration;

pub mod mcp;
pub mod vault;

/// Latency samples of one measured operation.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    samples: Vec<Duration>,
}

impl Stats {
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
