//! The self-learning settings (spec 004 "Feature flags"): `memory.learning_enabled`,
//! `memory.instruction_promotion_enabled` and `agents.dirs`.
//!
//! The flags nest: promotion needs learning, learning needs memory; a disabled parent forces every child off.
//! Both learning flags are opt-in and fail closed: an unreadable or invalid `settings.json`, or a value of the
//! wrong type, leaves them off (deliberately opposite to `memory.enabled`, which fails open). The environment
//! variable, when set, wins over the file as for every setting.

use super::Settings;
use super::keys::{AGENTS_DIRS, MEMORY_INSTRUCTION_PROMOTION_ENABLED, MEMORY_LEARNING_ENABLED};
use crate::home::{CaoHome, expand_tilde};
use serde_json::Value;
use std::path::PathBuf;

/// Most directories `agents.dirs` may name.
pub const MAX_AGENT_DIRS: usize = 16;

/// Longest accepted directory path in `agents.dirs`, in bytes.
const MAX_DIR_BYTES: usize = 4096;

/// The name of the default agent directory under the home (`$CAO_HOME/agent-store`).
pub const DEFAULT_AGENT_STORE: &str = "agent-store";

/// What a valid `agents.dirs` value looks like (error messages).
pub(crate) const DIRS_EXPECTED: &str = "a list of 1 to 16 absolute directory paths (or ~/...), each at most 4096 \
bytes without NUL: a JSON list, or paths separated by ':'";

/// Parse a command-line or environment value of `agents.dirs`: a JSON list when it starts with `[`, otherwise
/// paths separated by `:` (empty parts dropped). Returned as a JSON list of strings.
///
/// Errors: the expected-value text.
pub(crate) fn parse_dirs(raw: &str) -> Result<Value, &'static str> {
    if raw.trim_start().starts_with('[') {
        let v: Value = serde_json::from_str(raw).map_err(|_| DIRS_EXPECTED)?;
        return check_dirs_value(&v);
    }
    check_dirs(
        raw.split(':')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect(),
    )
}

/// A JSON list of strings forming a valid `agents.dirs` value (see [`parse_dirs`]).
///
/// Errors: the expected-value text.
pub(crate) fn check_dirs_value(v: &Value) -> Result<Value, &'static str> {
    let items = v.as_array().ok_or(DIRS_EXPECTED)?;
    let dirs = items
        .iter()
        .map(|d| d.as_str().map(|s| s.trim().to_owned()).ok_or(DIRS_EXPECTED))
        .collect::<Result<Vec<_>, _>>()?;
    check_dirs(dirs)
}

fn check_dirs(dirs: Vec<String>) -> Result<Value, &'static str> {
    let ok = !dirs.is_empty()
        && dirs.len() <= MAX_AGENT_DIRS
        && dirs.iter().all(|d| {
            d.len() <= MAX_DIR_BYTES && !d.contains('\0') && (d.starts_with('/') || d == "~" || d.starts_with("~/"))
        });
    if ok {
        Ok(Value::Array(dirs.into_iter().map(Value::String).collect()))
    } else {
        Err(DIRS_EXPECTED)
    }
}

impl Settings {
    /// `memory.learning_enabled` (env `CAO_MEMORY_LEARNING_ENABLED`), default false: outcome capture
    /// (`report_outcome`, `list_outcomes`, `/outcomes`), `store_lesson` and the injection of agent-scope lessons.
    /// False whenever `memory.enabled` is off; fails closed (an unusable file or a non-boolean value is false).
    pub fn learning_enabled(&self) -> bool {
        self.memory_enabled() && self.effective_bool(&MEMORY_LEARNING_ENABLED)
    }

    /// `memory.instruction_promotion_enabled` (env `CAO_MEMORY_INSTRUCTION_PROMOTION_ENABLED`), default false:
    /// `cao memory promote --apply` may write agent profiles. False whenever learning is off; fails closed.
    pub fn instruction_promotion_enabled(&self) -> bool {
        self.learning_enabled() && self.effective_bool(&MEMORY_INSTRUCTION_PROMOTION_ENABLED)
    }

    /// The agent profile directories, in lookup order: `agents.dirs` (env `CAO_AGENTS_DIRS`, `:`-separated, or the
    /// file's JSON list), `~/` expanded; default `[<home>/agent-store]`. An invalid value warns and uses the
    /// default.
    pub fn agent_dirs(&self, home: &CaoHome) -> Vec<PathBuf> {
        let eff = self.effective(&AGENTS_DIRS);
        if let Some(w) = &eff.warning {
            tracing::warn!(setting = AGENTS_DIRS.name, "{w}");
        }
        match eff.value {
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(expand_tilde).collect(),
            _ => vec![home.agent_store_dir()],
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "test setup writes fixture files directly")]
mod tests {
    use super::*;
    use crate::settings::SettingSource;
    use serde_json::json;

    fn eff_bool(file: Value, key: &'static super::super::SettingKey, env: &[(&str, &str)]) -> Option<Value> {
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        let lookup = move |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        Settings::from_value(file).effective_with(key, &lookup).value
    }

    #[test]
    fn learning_flags_are_off_by_default_and_read_from_the_file() {
        assert_eq!(eff_bool(json!({}), &MEMORY_LEARNING_ENABLED, &[]), Some(json!(false)));
        assert_eq!(
            eff_bool(json!({}), &MEMORY_INSTRUCTION_PROMOTION_ENABLED, &[]),
            Some(json!(false))
        );
        assert_eq!(
            eff_bool(
                json!({"memory": {"learning_enabled": true}}),
                &MEMORY_LEARNING_ENABLED,
                &[]
            ),
            Some(json!(true))
        );
        assert_eq!(
            eff_bool(
                json!({"memory": {"learning_enabled": true}}),
                &MEMORY_LEARNING_ENABLED,
                &[("CAO_MEMORY_LEARNING_ENABLED", "false")]
            ),
            Some(json!(false)),
            "env wins"
        );
        assert_eq!(
            eff_bool(
                json!({"memory": {"learning_enabled": "true"}}),
                &MEMORY_LEARNING_ENABLED,
                &[]
            ),
            Some(json!(false)),
            "a string is not a boolean: fails closed"
        );
    }

    #[test]
    fn the_flags_nest_and_fail_closed() {
        // Only meaningful when the runner's environment does not set them.
        if [
            "CAO_MEMORY_ENABLED",
            "CAO_MEMORY_LEARNING_ENABLED",
            "CAO_MEMORY_INSTRUCTION_PROMOTION_ENABLED",
        ]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
        {
            return;
        }
        let all =
            Settings::from_value(json!({"memory": {"learning_enabled": true, "instruction_promotion_enabled": true}}));
        assert!(all.learning_enabled() && all.instruction_promotion_enabled());
        let no_memory = Settings::from_value(
            json!({"memory": {"enabled": false, "learning_enabled": true, "instruction_promotion_enabled": true}}),
        );
        assert!(!no_memory.learning_enabled() && !no_memory.instruction_promotion_enabled());
        let no_learning = Settings::from_value(json!({"memory": {"instruction_promotion_enabled": true}}));
        assert!(!no_learning.learning_enabled() && !no_learning.instruction_promotion_enabled());

        let dir = tempfile::tempdir().expect("tempdir");
        let home = CaoHome::new(dir.path());
        std::fs::write(home.settings_path(), "{\"memory\": {\"learning_enabled\": true,").expect("write");
        let broken = Settings::load(&home);
        assert!(broken.file_error.is_some());
        assert!(broken.memory_enabled(), "memory.enabled fails open");
        assert!(!broken.learning_enabled(), "learning fails closed");
        assert!(!broken.instruction_promotion_enabled(), "promotion fails closed");
    }

    #[test]
    fn agent_dirs_default_to_the_home_store_and_parse_both_spellings() {
        let home = CaoHome::new("/h");
        if std::env::var_os("CAO_AGENTS_DIRS").is_none() {
            assert_eq!(Settings::default().agent_dirs(&home), [PathBuf::from("/h/agent-store")]);
            let s = Settings::from_value(json!({"agents": {"dirs": ["/a", "/b"]}}));
            assert_eq!(s.agent_dirs(&home), [PathBuf::from("/a"), PathBuf::from("/b")]);
            let bad = Settings::from_value(json!({"agents": {"dirs": ["relative"]}}));
            assert_eq!(
                bad.agent_dirs(&home),
                [PathBuf::from("/h/agent-store")],
                "invalid: default"
            );
        }
        assert_eq!(parse_dirs("/a: /b::"), Ok(json!(["/a", "/b"])));
        assert_eq!(parse_dirs("[\"/x y\"]"), Ok(json!(["/x y"])));
        for bad in ["", "rel", "/a:rel", "[1]", "[]", "/a\0b"] {
            assert_eq!(parse_dirs(bad), Err(DIRS_EXPECTED), "{bad:?}");
        }
        let lookup = |name: &str| (name == "CAO_AGENTS_DIRS").then(|| "/e1:/e2".to_owned());
        let e = Settings::default().effective_with(&AGENTS_DIRS, &lookup);
        assert_eq!((e.value, e.source), (Some(json!(["/e1", "/e2"])), SettingSource::Env));
    }
}
