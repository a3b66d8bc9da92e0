//! LoCoMo data: the conversations of `../shared/data/locomo/locomo6.json` (or the file `CAO_LOCOMO` names), their
//! turns and questions, for the benchmarks (`cao-bench`) and the tests that store real conversational text.

use serde::Deserialize;
use std::path::PathBuf;

/// A loading error: the file, and what went wrong reading or parsing it.
#[derive(Debug)]
pub struct LoadError(pub String);

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoadError {}

/// Result of [`load`].
pub type Result<T> = std::result::Result<T, LoadError>;

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
    std::env::var_os("CAO_LOCOMO")
        .map(PathBuf::from)
        .unwrap_or_else(|| super::workspace_root().join("../shared/data/locomo/locomo6.json"))
}

/// Load every sample.
pub fn load() -> Result<Vec<Sample>> {
    let p = path();
    let text = std::fs::read_to_string(&p).map_err(|e| LoadError(format!("reading {}: {e}", p.display())))?;
    let raw: Vec<serde_json::Value> =
        serde_json::from_str(&text).map_err(|e| LoadError(format!("parsing LoCoMo JSON {}: {e}", p.display())))?;
    let mut out = Vec::new();
    for s in raw {
        let sample_id = s["sample_id"].as_str().unwrap_or("sample").to_owned();
        let conv = s["conversation"]
            .as_object()
            .ok_or_else(|| LoadError(format!("{sample_id}: no conversation object")))?;
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
        let questions: Vec<Question> =
            serde_json::from_value(s["qa"].clone()).map_err(|e| LoadError(format!("{sample_id}: the qa list: {e}")))?;
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
