//! `cao-bench`: shared pieces of the benchmark and retrieval binaries (dev tooling; not shipped).
//!
//! - [`locomo`] loads the LoCoMo conversations from `../shared/data/locomo/locomo6.json` (or `CAO_LOCOMO`).
//! - [`Stats`] summarises latency samples (p50/p99 in milliseconds).

use anyhow::{Context, Result};
use std::path::PathBuf;
use std::time::Duration;

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

/// LoCoMo data: conversations of turns and their questions.
pub mod locomo {
    use super::*;
    use serde::Deserialize;

    /// One turn of a conversation.
    #[derive(Debug, Clone)]
    pub struct Turn {
        /// `D<session>:<n>`.
        pub dia_id: String,
        /// Who spoke.
        pub speaker: String,
        /// What was said (with the image caption appended when the turn shared one).
        pub text: String,
        /// The session's date line (e.g. `1:56 pm on 8 May, 2023`).
        pub date: String,
    }

    /// One question with its evidence turns.
    #[derive(Debug, Clone, Deserialize)]
    pub struct Question {
        /// The question text.
        pub question: String,
        /// Evidence `dia_id`s.
        #[serde(default)]
        pub evidence: Vec<String>,
        /// LoCoMo category (5 = adversarial, no answer).
        pub category: u8,
    }

    /// One sample: a conversation and its questions.
    #[derive(Debug, Clone)]
    pub struct Sample {
        /// e.g. `conv-26`.
        pub sample_id: String,
        /// Every turn in order.
        pub turns: Vec<Turn>,
        /// Every question.
        pub questions: Vec<Question>,
    }

    /// The data file: `CAO_LOCOMO`, else `<workspace>/../shared/data/locomo/locomo6.json`.
    pub fn path() -> PathBuf {
        std::env::var_os("CAO_LOCOMO").map(PathBuf::from).unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/locomo/locomo6.json")
        })
    }

    /// Load every sample.
    pub fn load() -> Result<Vec<Sample>> {
        let p = path();
        let text = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        let raw: Vec<serde_json::Value> = serde_json::from_str(&text).context("parsing LoCoMo JSON")?;
        let mut out = Vec::new();
        for s in raw {
            let sample_id = s["sample_id"].as_str().unwrap_or("sample").to_owned();
            let conv = s["conversation"].as_object().context("conversation object")?;
            let mut sessions: Vec<(u32, &serde_json::Value)> = conv
                .iter()
                .filter_map(|(k, v)| {
                    let n = k.strip_prefix("session_")?;
                    n.parse::<u32>().ok().map(|n| (n, v))
                })
                .collect();
            sessions.sort_by_key(|(n, _)| *n);
            let mut turns = Vec::new();
            for (n, v) in sessions {
                let date = conv
                    .get(&format!("session_{n}_date_time"))
                    .and_then(|d| d.as_str())
                    .unwrap_or("")
                    .to_owned();
                for t in v.as_array().into_iter().flatten() {
                    let mut text = t["text"].as_str().unwrap_or("").to_owned();
                    if let Some(c) = t.get("blip_caption").and_then(|c| c.as_str()) {
                        text.push_str(&format!(" [shared an image: {c}]"));
                    }
                    turns.push(Turn {
                        dia_id: t["dia_id"].as_str().unwrap_or("").to_owned(),
                        speaker: t["speaker"].as_str().unwrap_or("").to_owned(),
                        text,
                        date: date.clone(),
                    });
                }
            }
            let questions: Vec<Question> = serde_json::from_value(s["qa"].clone()).context("qa list")?;
            out.push(Sample {
                sample_id,
                turns,
                questions,
            });
        }
        Ok(out)
    }

    /// The memory key of a turn: `D1:3` -> `d1-3`.
    pub fn turn_key(dia_id: &str) -> String {
        dia_id.to_ascii_lowercase().replace(':', "-")
    }
}
