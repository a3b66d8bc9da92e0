//! The `memory.model.*` settings: which language model the memory system may call and how.
//!
//! Keys (each overridden by its environment variable, env > file > default):
//!
//! | key | env | value |
//! |---|---|---|
//! | `memory.model.provider` | `CAO_MEMORY_MODEL_PROVIDER` | `none` (default), `openai` or `command` |
//! | `memory.model.url` | `CAO_MEMORY_MODEL_URL` | base URL of an OpenAI-compatible endpoint (`http`/`https`) |
//! | `memory.model.name` | `CAO_MEMORY_MODEL_NAME` | the model name sent to the endpoint (and recorded as the author) |
//! | `memory.model.api_key_env` | `CAO_MEMORY_MODEL_API_KEY_ENV` | the NAME of the variable holding the API key |
//! | `memory.model.command` | `CAO_MEMORY_MODEL_COMMAND` | argv of a CLI reading the prompt on stdin |
//! | `memory.model.timeout_ms` | `CAO_MEMORY_MODEL_TIMEOUT_MS` | per-request timeout, 1..=3600000 ms (default 60000) |
//!
//! Invariants:
//! - One copy of every rule: `cao config set`, the file reader and the env reader all validate through the
//!   functions of this module, so a value accepted by one is accepted by all.
//! - The API key itself is never a setting: only the name of the variable holding it. A value of
//!   `api_key_env` that is not a variable name is never echoed back (it may be the key pasted by mistake).
//! - A URL carrying a user name or password is refused, so no credential sits in `settings.json` or in
//!   `cao config list` output.
//! - A command is an argv list, never a shell line: a string form is split into words with shell-like quoting
//!   (`shlex`), and nothing ever passes it to a shell.

use super::Settings;
use super::keys::{
    MEMORY_MODEL_API_KEY_ENV, MEMORY_MODEL_COMMAND, MEMORY_MODEL_NAME, MEMORY_MODEL_PROVIDER, MEMORY_MODEL_TIMEOUT_MS,
    MEMORY_MODEL_URL, SettingKey,
};
use crate::error::CoreError;
use serde_json::Value;
use std::time::Duration;

/// The longest accepted `memory.model.timeout_ms`: one hour.
pub const MODEL_TIMEOUT_MS_MAX: u64 = 3_600_000;

/// The default `memory.model.timeout_ms`: 60 s, enough for a CLI agent answering one prompt.
pub const MODEL_TIMEOUT_MS_DEFAULT: u64 = 60_000;

/// The longest accepted `memory.model.name`, in bytes.
pub const MODEL_NAME_MAX_BYTES: usize = 256;

/// The longest accepted `memory.model.url`, in bytes.
pub const MODEL_URL_MAX_BYTES: usize = 2048;

/// The most words a `memory.model.command` may have.
pub const MODEL_COMMAND_MAX_ARGS: usize = 64;

/// The longest word of a `memory.model.command`, in bytes.
pub const MODEL_COMMAND_MAX_ARG_BYTES: usize = 4096;

/// Which kind of model `memory.model.provider` selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelProvider {
    /// No model (the default): deterministic and offline; callers fall back to their non-model behaviour.
    #[default]
    None,
    /// An OpenAI-compatible chat-completions endpoint (Ollama, llama.cpp server, vLLM, hosted services).
    #[serde(rename = "openai")]
    OpenAi,
    /// A command-line program that reads the prompt on stdin and answers on stdout (`claude -p`, `codex exec`).
    Command,
}

impl ModelProvider {
    /// Every provider, in the order error messages list them.
    pub const ALL: [ModelProvider; 3] = [ModelProvider::None, ModelProvider::OpenAi, ModelProvider::Command];

    /// The settings spelling: `none`, `openai`, `command`.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelProvider::None => "none",
            ModelProvider::OpenAi => "openai",
            ModelProvider::Command => "command",
        }
    }

    /// Parse the settings spelling (exact, lower case).
    ///
    /// Errors: `None` for anything else.
    pub fn parse(s: &str) -> Option<ModelProvider> {
        ModelProvider::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

impl std::fmt::Display for ModelProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The model settings in effect, validated and typed (see the module docs for each field's key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSettings {
    /// `memory.model.provider`.
    pub provider: ModelProvider,
    /// `memory.model.url` (validated: http or https, a host, no user name or password).
    pub url: Option<String>,
    /// `memory.model.name`.
    pub name: Option<String>,
    /// `memory.model.api_key_env`: the name of the environment variable holding the API key (not the key).
    pub api_key_env: Option<String>,
    /// `memory.model.command`: program and arguments, never run through a shell.
    pub command: Option<Vec<String>>,
    /// `memory.model.timeout_ms` as a duration (1 ms ..= 1 h).
    pub timeout: Duration,
}

impl Default for ModelSettings {
    /// Every key at its default: provider `none`, nothing else set, a 60 s timeout.
    fn default() -> Self {
        ModelSettings {
            provider: ModelProvider::None,
            url: None,
            name: None,
            api_key_env: None,
            command: None,
            timeout: Duration::from_millis(MODEL_TIMEOUT_MS_DEFAULT),
        }
    }
}

impl Settings {
    /// The model settings in effect (reads the process environment; see [`Settings::model_settings_with`]).
    ///
    /// Errors: as [`Settings::model_settings_with`].
    pub fn model_settings(&self) -> Result<ModelSettings, CoreError> {
        self.model_settings_with(&|name| std::env::var(name).ok())
    }

    /// The model settings in effect, with `env` looking up environment variables.
    ///
    /// Unlike the switches, which fall back to their default with a warning, a model setting that is present but
    /// invalid (in the environment or in `settings.json`), or an unusable `settings.json`, is an error: calling
    /// a different model than the one configured, or none, would be a silent surprise.
    ///
    /// Errors: [`CoreError::InvalidSettings`] carrying the first such warning (it names the key or variable and
    /// what is expected; it never contains an `api_key_env` value).
    pub fn model_settings_with(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<ModelSettings, CoreError> {
        let value = |key: &'static SettingKey| -> Result<Option<Value>, CoreError> {
            let eff = self.effective_with(key, env);
            match eff.warning {
                // The registry's warning says the default applies; here the call fails instead.
                Some(w) => Err(CoreError::InvalidSettings(
                    w.trim_end_matches("; using the default").to_owned(),
                )),
                None => Ok(eff.value),
            }
        };
        let string = |key: &'static SettingKey| -> Result<Option<String>, CoreError> {
            Ok(value(key)?.and_then(|v| v.as_str().map(str::to_owned)))
        };
        let provider = match string(&MEMORY_MODEL_PROVIDER)? {
            Some(p) => ModelProvider::parse(&p).ok_or_else(|| CoreError::InvalidSettings(provider_expected(&p)))?,
            None => ModelProvider::None,
        };
        let command = value(&MEMORY_MODEL_COMMAND)?.and_then(|v| {
            v.as_array()
                .map(|a| a.iter().filter_map(|w| w.as_str().map(str::to_owned)).collect())
        });
        let timeout_ms = value(&MEMORY_MODEL_TIMEOUT_MS)?
            .and_then(|v| v.as_u64())
            .unwrap_or(MODEL_TIMEOUT_MS_DEFAULT);
        Ok(ModelSettings {
            provider,
            url: string(&MEMORY_MODEL_URL)?,
            name: string(&MEMORY_MODEL_NAME)?,
            api_key_env: string(&MEMORY_MODEL_API_KEY_ENV)?,
            command,
            timeout: Duration::from_millis(timeout_ms),
        })
    }
}

fn provider_expected(p: &str) -> String {
    format!(
        "memory.model.provider {p:?} is not one of {}",
        ModelProvider::ALL.map(ModelProvider::as_str).join(", ")
    )
}

/// What a valid provider looks like (for messages).
pub(crate) const PROVIDER_EXPECTED: &str = "one of none, openai, command";

/// What a valid URL looks like (for messages).
pub(crate) const URL_EXPECTED: &str = "an http:// or https:// URL with a host and no user name or password, at most \
     2048 bytes (e.g. http://127.0.0.1:11434/v1)";

/// What a valid model name looks like (for messages).
pub(crate) const NAME_EXPECTED: &str = "a non-empty name of at most 256 bytes without control characters";

/// What a valid variable name looks like (for messages).
pub(crate) const ENV_NAME_EXPECTED: &str =
    "the name of an environment variable (^[A-Za-z_][A-Za-z0-9_]{0,127}$) that holds the key, not the key itself";

/// What a valid command looks like (for messages).
pub(crate) const ARGV_EXPECTED: &str = "a command line: a JSON list of strings such as [\"claude\",\"-p\"], or words \
     such as claude -p (quotes group words; no shell runs it); a non-empty program, at most 64 words of at most 4096 \
     bytes, no NUL";

/// What a valid timeout looks like (for messages).
pub(crate) const MILLIS_EXPECTED: &str = "a whole number of milliseconds from 1 to 3600000";

/// `none`, `openai` or `command`, exactly.
///
/// Errors: the expected-value text.
pub(crate) fn parse_provider(raw: &str) -> Result<Value, &'static str> {
    ModelProvider::parse(raw)
        .map(|p| Value::String(p.as_str().to_owned()))
        .ok_or(PROVIDER_EXPECTED)
}

/// An absolute `http`/`https` URL with a host, without user info, at most [`MODEL_URL_MAX_BYTES`]; returned as
/// given (not normalised).
///
/// Errors: the expected-value text.
pub(crate) fn parse_url(raw: &str) -> Result<Value, &'static str> {
    if raw.len() > MODEL_URL_MAX_BYTES || raw.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(URL_EXPECTED);
    }
    let url = url::Url::parse(raw).map_err(|_| URL_EXPECTED)?;
    let ok = matches!(url.scheme(), "http" | "https")
        && url.host_str().is_some_and(|h| !h.is_empty())
        && url.username().is_empty()
        && url.password().is_none();
    if ok {
        Ok(Value::String(raw.to_owned()))
    } else {
        Err(URL_EXPECTED)
    }
}

/// 1..=[`MODEL_NAME_MAX_BYTES`] bytes, no control characters.
///
/// Errors: the expected-value text.
pub(crate) fn parse_name(raw: &str) -> Result<Value, &'static str> {
    if raw.is_empty() || raw.len() > MODEL_NAME_MAX_BYTES || raw.chars().any(char::is_control) {
        return Err(NAME_EXPECTED);
    }
    Ok(Value::String(raw.to_owned()))
}

/// `^[A-Za-z_][A-Za-z0-9_]{0,127}$`.
///
/// Errors: the expected-value text.
pub(crate) fn parse_env_name(raw: &str) -> Result<Value, &'static str> {
    let mut chars = raw.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if first_ok && raw.len() <= 128 && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        Ok(Value::String(raw.to_owned()))
    } else {
        Err(ENV_NAME_EXPECTED)
    }
}

/// A command line: a JSON list of strings when `raw` starts with `[`, otherwise words split with shell-like
/// quoting (`shlex::split`; an unbalanced quote is an error). Returned as a JSON list of strings.
///
/// Errors: the expected-value text.
pub(crate) fn parse_argv(raw: &str) -> Result<Value, &'static str> {
    let words: Vec<String> = if raw.trim_start().starts_with('[') {
        let v: Value = serde_json::from_str(raw).map_err(|_| ARGV_EXPECTED)?;
        return check_argv_value(&v);
    } else {
        shlex::split(raw).ok_or(ARGV_EXPECTED)?
    };
    check_argv(words)
}

/// A JSON list of strings forming a valid argv (see [`parse_argv`]).
///
/// Errors: the expected-value text.
pub(crate) fn check_argv_value(v: &Value) -> Result<Value, &'static str> {
    let items = v.as_array().ok_or(ARGV_EXPECTED)?;
    let words = items
        .iter()
        .map(|w| w.as_str().map(str::to_owned).ok_or(ARGV_EXPECTED))
        .collect::<Result<Vec<_>, _>>()?;
    check_argv(words)
}

fn check_argv(words: Vec<String>) -> Result<Value, &'static str> {
    let program_ok = words.first().is_some_and(|p| !p.trim().is_empty());
    let words_ok = words.len() <= MODEL_COMMAND_MAX_ARGS
        && words
            .iter()
            .all(|w| w.len() <= MODEL_COMMAND_MAX_ARG_BYTES && !w.contains('\0'));
    if program_ok && words_ok {
        Ok(Value::Array(words.into_iter().map(Value::String).collect()))
    } else {
        Err(ARGV_EXPECTED)
    }
}

/// A whole number 1..=[`MODEL_TIMEOUT_MS_MAX`] written in decimal digits.
///
/// Errors: the expected-value text.
pub(crate) fn parse_millis(raw: &str) -> Result<Value, &'static str> {
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(MILLIS_EXPECTED);
    }
    let n: u64 = raw.parse().map_err(|_| MILLIS_EXPECTED)?;
    check_millis(n)
}

/// 1..=[`MODEL_TIMEOUT_MS_MAX`].
///
/// Errors: the expected-value text.
pub(crate) fn check_millis(n: u64) -> Result<Value, &'static str> {
    if (1..=MODEL_TIMEOUT_MS_MAX).contains(&n) {
        Ok(Value::from(n))
    } else {
        Err(MILLIS_EXPECTED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
        move |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    #[test]
    fn defaults_are_no_model_and_sixty_seconds() {
        let s = Settings::from_value(json!({}))
            .model_settings_with(&lookup(&[]))
            .expect("valid");
        assert_eq!(s, ModelSettings::default());
        assert_eq!(s.provider, ModelProvider::None);
        assert_eq!(s.timeout, Duration::from_secs(60));
    }

    #[test]
    fn file_values_are_read_and_env_overrides_each_key() {
        let file = json!({"memory": {"model": {
            "provider": "openai", "url": "http://127.0.0.1:11434/v1", "name": "qwen2.5:7b",
            "api_key_env": "OPENAI_API_KEY", "command": ["claude", "-p"], "timeout_ms": 1500}}});
        let s = Settings::from_value(file.clone())
            .model_settings_with(&lookup(&[]))
            .expect("valid");
        assert_eq!(
            s,
            ModelSettings {
                provider: ModelProvider::OpenAi,
                url: Some("http://127.0.0.1:11434/v1".into()),
                name: Some("qwen2.5:7b".into()),
                api_key_env: Some("OPENAI_API_KEY".into()),
                command: Some(vec!["claude".into(), "-p".into()]),
                timeout: Duration::from_millis(1500),
            }
        );
        let env = lookup(&[
            ("CAO_MEMORY_MODEL_PROVIDER", "command"),
            ("CAO_MEMORY_MODEL_URL", "https://api.example.com/v1"),
            ("CAO_MEMORY_MODEL_NAME", "gpt-x"),
            ("CAO_MEMORY_MODEL_API_KEY_ENV", "MY_KEY"),
            ("CAO_MEMORY_MODEL_COMMAND", "codex exec --model 'o 4'"),
            ("CAO_MEMORY_MODEL_TIMEOUT_MS", " 250 "),
        ]);
        let s = Settings::from_value(file).model_settings_with(&env).expect("valid");
        assert_eq!(
            s,
            ModelSettings {
                provider: ModelProvider::Command,
                url: Some("https://api.example.com/v1".into()),
                name: Some("gpt-x".into()),
                api_key_env: Some("MY_KEY".into()),
                command: Some(vec!["codex".into(), "exec".into(), "--model".into(), "o 4".into()]),
                timeout: Duration::from_millis(250),
            }
        );
        // The JSON list form works in the environment too.
        let env = lookup(&[("CAO_MEMORY_MODEL_COMMAND", r#"["my tool", "--flag"]"#)]);
        let s = Settings::from_value(json!({}))
            .model_settings_with(&env)
            .expect("valid");
        assert_eq!(s.command, Some(vec!["my tool".into(), "--flag".into()]));
        // A command written as a string in the file is split the same way.
        let s = Settings::from_value(json!({"memory": {"model": {"command": "claude -p"}}}))
            .model_settings_with(&lookup(&[]))
            .expect("valid");
        assert_eq!(s.command, Some(vec!["claude".into(), "-p".into()]));
    }

    #[test]
    fn invalid_values_are_errors_naming_the_key_or_variable() {
        for (file, env, needle) in [
            (
                json!({"memory": {"model": {"provider": "gpt"}}}),
                vec![],
                "memory.model.provider",
            ),
            (
                json!({}),
                vec![("CAO_MEMORY_MODEL_PROVIDER", "OpenAI")],
                "CAO_MEMORY_MODEL_PROVIDER",
            ),
            (
                json!({"memory": {"model": {"timeout_ms": 0}}}),
                vec![],
                "memory.model.timeout_ms",
            ),
            (
                json!({"memory": {"model": {"timeout_ms": "100"}}}),
                vec![],
                "memory.model.timeout_ms",
            ),
            (
                json!({}),
                vec![("CAO_MEMORY_MODEL_TIMEOUT_MS", "-5")],
                "CAO_MEMORY_MODEL_TIMEOUT_MS",
            ),
            (
                json!({"memory": {"model": {"url": "ftp://x"}}}),
                vec![],
                "memory.model.url",
            ),
            (
                json!({"memory": {"model": {"command": []}}}),
                vec![],
                "memory.model.command",
            ),
            (
                json!({"memory": {"model": {"command": ["a", 1]}}}),
                vec![],
                "memory.model.command",
            ),
            (
                json!({}),
                vec![("CAO_MEMORY_MODEL_COMMAND", "claude 'oops")],
                "CAO_MEMORY_MODEL_COMMAND",
            ),
            (json!({"memory": {"model": "openai"}}), vec![], "memory.model"),
        ] {
            let err = Settings::from_value(file.clone())
                .model_settings_with(&lookup(&env))
                .expect_err("invalid");
            assert!(matches!(err, CoreError::InvalidSettings(_)), "{err:?}");
            assert!(err.to_string().contains(needle), "{file} {env:?}: {err}");
            assert!(!err.to_string().contains("using the default"), "{err}");
        }
    }

    #[test]
    fn a_key_pasted_as_the_variable_name_is_never_echoed() {
        let secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
        for (file, env) in [
            (json!({"memory": {"model": {"api_key_env": secret}}}), vec![]),
            (json!({}), vec![("CAO_MEMORY_MODEL_API_KEY_ENV", secret)]),
        ] {
            let err = Settings::from_value(file)
                .model_settings_with(&lookup(&env))
                .expect_err("invalid");
            let msg = err.to_string();
            assert!(!msg.contains("abcdefghij"), "{msg}");
            assert!(msg.contains("not the key itself"), "{msg}");
        }
    }

    #[test]
    fn validators() {
        assert!(parse_url("http://localhost:8080/v1").is_ok());
        assert!(parse_url("https://api.example.com").is_ok());
        for bad in [
            "",
            "localhost:8080",
            "file:///etc/passwd",
            "http://user:pw@host/v1",
            "http://",
            "http://a b",
            "not a url",
        ] {
            assert_eq!(parse_url(bad), Err(URL_EXPECTED), "{bad}");
        }
        assert!(parse_env_name("_A1").is_ok());
        for bad in ["", "1A", "A-B", "A B", &"A".repeat(129)] {
            assert!(parse_env_name(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_argv("claude -p"), Ok(json!(["claude", "-p"])));
        assert_eq!(parse_argv("a \"b c\" 'd'"), Ok(json!(["a", "b c", "d"])));
        assert_eq!(parse_argv("[\"a b\"]"), Ok(json!(["a b"])));
        for bad in ["", "   ", "[]", "[1]", "[\"\"]", "a 'b", "[\"a\""] {
            assert_eq!(parse_argv(bad), Err(ARGV_EXPECTED), "{bad}");
        }
        assert_eq!(parse_millis("1"), Ok(json!(1)));
        assert_eq!(parse_millis("3600000"), Ok(json!(3_600_000)));
        for bad in ["0", "-1", "3600001", "1.5", "", "1e3", "99999999999999999999999"] {
            assert_eq!(parse_millis(bad), Err(MILLIS_EXPECTED), "{bad}");
        }
        assert!(parse_name("llama3.1:8b-instruct").is_ok());
        assert!(parse_name("a\nb").is_err());
        assert!(parse_name("").is_err());
        assert_eq!(parse_provider("openai"), Ok(json!("openai")));
        assert!(parse_provider("OPENAI").is_err());
    }
}
