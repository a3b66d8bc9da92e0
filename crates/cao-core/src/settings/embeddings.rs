//! The dense-recall setting: `memory.embeddings.model_dir` (env `CAO_EMBED_MODEL`), the directory of a local
//! sentence-embedding model (docs/decisions/0011-dense-recall.md). Unset means recall is lexical only.

use super::Settings;
use super::keys::MEMORY_EMBEDDINGS_MODEL_DIR;
use crate::home::expand_tilde;
use serde_json::Value;
use std::path::PathBuf;

/// Longest accepted model directory path, in bytes.
const MAX_MODEL_DIR_BYTES: usize = 4096;

/// What a valid model directory value looks like (error messages).
pub(crate) const MODEL_DIR_EXPECTED: &str = "an absolute directory path (or ~/...) of at most 4096 bytes without NUL, holding config.json, tokenizer.json \
and model.safetensors";

/// Parse a model directory value (command line, environment or file).
///
/// Errors: the expected-value text.
pub(crate) fn parse_model_dir(raw: &str) -> Result<Value, &'static str> {
    let d = raw.trim();
    let ok = !d.is_empty()
        && d.len() <= MAX_MODEL_DIR_BYTES
        && !d.contains('\0')
        && (d.starts_with('/') || d == "~" || d.starts_with("~/"));
    if ok {
        Ok(Value::String(d.to_owned()))
    } else {
        Err(MODEL_DIR_EXPECTED)
    }
}

impl Settings {
    /// `memory.embeddings.model_dir` (env `CAO_EMBED_MODEL`), `~/` expanded: the embedding model directory dense
    /// recall uses, `None` when unset (recall is lexical). An invalid value warns and reads as unset.
    pub fn embedding_model_dir(&self) -> Option<PathBuf> {
        let eff = self.effective(&MEMORY_EMBEDDINGS_MODEL_DIR);
        if let Some(w) = &eff.warning {
            tracing::warn!(setting = MEMORY_EMBEDDINGS_MODEL_DIR.name, "{w}");
        }
        match eff.value {
            Some(Value::String(s)) => Some(expand_tilde(&s)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::SettingSource;
    use serde_json::json;

    #[test]
    fn model_dir_is_an_absolute_path_from_env_or_file() {
        assert_eq!(parse_model_dir("/opt/minilm"), Ok(json!("/opt/minilm")));
        assert_eq!(parse_model_dir("~/models/minilm"), Ok(json!("~/models/minilm")));
        for bad in ["", "relative/dir", "a\0b", &format!("/{}", "x".repeat(4096))] {
            assert_eq!(parse_model_dir(bad), Err(MODEL_DIR_EXPECTED), "{bad:?}");
        }
        let file = json!({"memory": {"embeddings": {"model_dir": "/from/file"}}});
        let lookup = |name: &str| (name == "CAO_EMBED_MODEL").then(|| "/from/env".to_owned());
        let e = Settings::from_value(file.clone()).effective_with(&MEMORY_EMBEDDINGS_MODEL_DIR, &lookup);
        assert_eq!((e.value, e.source), (Some(json!("/from/env")), SettingSource::Env));
        let e = Settings::from_value(file).effective_with(&MEMORY_EMBEDDINGS_MODEL_DIR, &|_| None);
        assert_eq!((e.value, e.source), (Some(json!("/from/file")), SettingSource::File));
        let bad = json!({"memory": {"embeddings": {"model_dir": "not/absolute"}}});
        let e = Settings::from_value(bad).effective_with(&MEMORY_EMBEDDINGS_MODEL_DIR, &|_| None);
        assert_eq!(e.value, None);
        assert!(e.warning.is_some_and(|w| w.contains("memory.embeddings.model_dir")));
    }
}
