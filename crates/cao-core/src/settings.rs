//! `settings.json` in the home directory, overlaid by environment variables.
//!
//! Precedence for every setting: environment > file > default. The file is a JSON object; memory settings live
//! under `"memory"` (e.g. `{"memory": {"enabled": false, "project_id": "acme"}}`), as the reference stores them.
//!
//! Fail-open rule for `memory.enabled` (reference `is_memory_enabled`): when the file is unreadable, not JSON, or
//! the value has the wrong type, memory stays **enabled** and a warning is logged. Env values `1`, `true`, `yes`
//! (any case, trimmed) mean true; any other non-empty value means false; empty means unset.
//!
//! [`KEYS`] lists every known setting (type, default, env variable); [`Settings::effective`] resolves one with
//! its source, and [`set`] / [`unset`] edit the file (validated, atomic, mode 0600, other keys kept).
//! [`Settings::model_settings`] gives the `memory.model.*` keys typed and validated ([`ModelSettings`]).

use crate::home::CaoHome;
use serde_json::{Map, Value};

mod embeddings;
mod file;
mod keys;
mod learning;
mod model;

pub use file::{SetOutcome, set, unset};
pub use keys::{
    AGENTS_DIRS, CompileMode, EffectiveValue, HIDDEN_VALUE, InjectionMode, KEYS, MEMORY_COMPILE_MODE,
    MEMORY_EMBEDDINGS_MODEL_DIR, MEMORY_ENABLED, MEMORY_EXPLAIN_ENABLED, MEMORY_FSYNC_WRITES, MEMORY_INJECTION_MODE,
    MEMORY_INSTRUCTION_PROMOTION_ENABLED, MEMORY_LEARNING_ENABLED, MEMORY_LIFECYCLE_ENABLED, MEMORY_MODEL_API_KEY_ENV,
    MEMORY_MODEL_COMMAND, MEMORY_MODEL_NAME, MEMORY_MODEL_PROVIDER, MEMORY_MODEL_TIMEOUT_MS, MEMORY_MODEL_URL,
    MEMORY_NON_ACCESSING_INSPECTION, MEMORY_PROJECT_ID, MEMORY_RECALL_BM25_B, MEMORY_RECALL_BM25_K1,
    MEMORY_RECALL_CONTEXT_WEIGHT, MEMORY_SUMMARIZE, SettingDefault, SettingKey, SettingKind, SettingSource,
    UI_TREE_DRAWING, known_keys, lookup, parse_value,
};
pub use learning::{DEFAULT_AGENT_STORE, MAX_AGENT_DIRS};
pub use model::{
    MODEL_COMMAND_MAX_ARG_BYTES, MODEL_COMMAND_MAX_ARGS, MODEL_NAME_MAX_BYTES, MODEL_TIMEOUT_MS_DEFAULT,
    MODEL_TIMEOUT_MS_MAX, MODEL_URL_MAX_BYTES, ModelProvider, ModelSettings,
};

/// A snapshot of the settings that the memory engine reads. Cheap to clone; re-read with [`Settings::load`].
#[derive(Debug, Clone, Default)]
pub struct Settings {
    file: Map<String, Value>,
    /// Set when the file existed but could not be used (the reason, for diagnostics).
    pub file_error: Option<String>,
}

impl Settings {
    /// Read `<home>/settings.json`. A missing file is an empty object; an unreadable or invalid one is recorded
    /// in [`Settings::file_error`] and treated as empty (callers fail open as each setting documents).
    pub fn load(home: &CaoHome) -> Self {
        let path = home.settings_path();
        match std::fs::read_to_string(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Self::default(),
            Err(e) => Self::with_error(format!("{}: {e}", path.display())),
            Ok(text) => match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(map)) => Self {
                    file: map,
                    file_error: None,
                },
                Ok(_) => Self::with_error(format!("{}: expected a JSON object", path.display())),
                Err(e) => Self::with_error(format!("{}: {e}", path.display())),
            },
        }
    }

    /// Settings from an in-memory JSON object (tests, embedding).
    pub fn from_value(v: Value) -> Self {
        match v {
            Value::Object(file) => Self { file, file_error: None },
            _ => Self::with_error("expected a JSON object".into()),
        }
    }

    fn with_error(e: String) -> Self {
        // A command loads the settings several times; one warning per distinct problem per process is enough.
        static WARNED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        let first = WARNED.lock().map_or(true, |mut seen| {
            let new = !seen.contains(&e);
            if new {
                seen.push(e.clone());
            }
            new
        });
        if first {
            tracing::warn!(error = %e, "settings.json unreadable; using defaults");
        }
        Self {
            file: Map::new(),
            file_error: Some(e),
        }
    }

    /// The raw file value at a dotted path such as `memory.enabled` (no env overlay).
    pub fn file_value(&self, dotted: &str) -> Option<&Value> {
        let mut parts = dotted.split('.');
        let mut cur = self.file.get(parts.next()?)?;
        for p in parts {
            cur = cur.as_object()?.get(p)?;
        }
        Some(cur)
    }

    /// A boolean setting: env `env_name` > file `dotted` (must be a JSON bool; other types warn and use the
    /// default) > `default`.
    pub fn bool_setting(&self, env_name: &str, dotted: &str, default: bool) -> bool {
        if let Some(v) = env_nonempty(env_name) {
            return parse_env_bool(&v);
        }
        match self.file_value(dotted) {
            None | Some(Value::Null) => default,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                tracing::warn!(setting = dotted, value = %other, "expected a boolean; using the default");
                default
            }
        }
    }

    /// `memory.enabled` (env `CAO_MEMORY_ENABLED`), default true, failing open.
    pub fn memory_enabled(&self) -> bool {
        self.bool_setting("CAO_MEMORY_ENABLED", "memory.enabled", true)
    }

    /// The project id override: env `CAO_PROJECT_ID` > file `memory.project_id`. Not validated here
    /// (see [`crate::identity::validate_project_id`]). Empty strings count as unset.
    pub fn project_id_override(&self) -> Option<String> {
        env_nonempty("CAO_PROJECT_ID").or_else(|| {
            self.file_value("memory.project_id")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        })
    }
}

/// An environment variable's trimmed value, `None` when unset or blank.
pub fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// `1`, `true`, `yes` (case-insensitive, trimmed) are true; everything else false.
pub fn parse_env_bool(v: &str) -> bool {
    matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes")
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "test setup writes fixture files directly")]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn file_values_and_defaults() {
        let s = Settings::from_value(json!({"memory": {"enabled": false, "project_id": "acme"}}));
        assert_eq!(s.file_value("memory.project_id"), Some(&json!("acme")));
        assert!(!s.bool_setting("CAO_TEST_UNSET_VAR_XYZ", "memory.enabled", true));
        let bad = Settings::from_value(json!({"memory": {"enabled": "no"}}));
        assert!(
            bad.bool_setting("CAO_TEST_UNSET_VAR_XYZ", "memory.enabled", true),
            "wrong type fails open"
        );
    }

    #[test]
    fn corrupt_file_fails_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = CaoHome::new(dir.path());
        std::fs::write(home.settings_path(), "{not json").expect("write");
        let s = Settings::load(&home);
        assert!(s.file_error.is_some());
        assert!(s.bool_setting("CAO_TEST_UNSET_VAR_XYZ", "memory.enabled", true));
    }

    #[test]
    fn env_bool_parsing() {
        assert!(parse_env_bool(" TRUE "));
        assert!(parse_env_bool("1"));
        assert!(!parse_env_bool("off"));
    }
}
