//! `cao-model`: one synchronous interface to a language model (layer 1; depends only on `cao-core`).
//!
//! [`Model::complete`] takes a [`Prompt`] (chat messages) and [`Limits`] (output tokens and bytes, a deadline)
//! and returns a [`Completion`]: the answer as plain text plus the [`ModelInfo`] of the model that wrote it. Three
//! providers, chosen by `memory.model.provider` ([`from_settings`]):
//!
//! - `none` ([`NoModel`], the default): deterministic and offline; [`Model::complete`] always returns
//!   [`ModelError::NoModel`] so callers take their non-model path. The [`extractive`] module is that path for
//!   summaries: word for word when the text fits the byte budget, otherwise a cut at a UTF-8 boundary.
//! - `openai` ([`OpenAiModel`]): any OpenAI-compatible chat-completions endpoint (Ollama, llama.cpp server,
//!   vLLM, hosted), over reqwest's blocking client on rustls, with bounded retries on 429/5xx.
//! - `command` ([`CommandModel`]): a command-line program (`claude -p`, `codex exec`) that reads the prompt on
//!   stdin and answers on stdout; never run through a shell; killed with its process group at the timeout.
//!
//! A caller takes the model's answer when there is one and its own path otherwise:
//!
//! ```
//! use cao_model::{Limits, Model, ModelError, NoModel, Prompt, extractive};
//! use std::time::Duration;
//!
//! let model: Box<dyn Model> = Box::new(NoModel::new()); // cao_model::from_settings(&settings)? in real use
//! let entry = "# deploy\nUse blue/green; the old pool drains in 5 minutes.";
//! let limits = Limits::new(128, extractive::SUMMARY_LINE_MAX_BYTES, Duration::from_secs(30));
//! let line = match model.complete(&Prompt::with_system("Summarise in one line.", entry), &limits) {
//!     Ok(answer) => Some((answer.text, answer.model.to_string())),
//!     Err(ModelError::NoModel) => {
//!         Some((extractive::extract_entry(entry, extractive::SUMMARY_LINE_MAX_BYTES).text, "verbatim".into()))
//!     }
//!     Err(e) if e.is_passing() => None, // try again later (the journal waits 10 s)
//!     Err(_) => None,                   // permanent: pause until the configuration changes
//! };
//! assert_eq!(line, Some((entry.to_owned(), "verbatim".to_owned())));
//! ```
//!
//! Why synchronous: see docs/decisions/0006-cao-model-synchronous-trait.md. The services calling a model are
//! synchronous and run on tokio's blocking pool in the servers; a layer-1 crate does not touch tokio.
//!
//! Invariants:
//! - **An answer is untrusted input.** Every answer is read with a byte cap ([`Limits::read_limit`]; beyond it
//!   the call fails with [`ModelError::TooLarge`] without reading the rest), stripped of ANSI escape sequences
//!   and control characters (newlines and tabs kept), trimmed, cut to [`Limits::max_output_bytes`] at a UTF-8
//!   boundary ([`Completion::truncated`] says so) and returned as text. Callers validate further.
//! - **Secrets stay home.** Every message passes through the secret gate's redaction
//!   ([`cao_core::secret::redact`]) before it leaves the process. The API key is read from the environment
//!   variable named by `memory.model.api_key_env`, sent only as a `Bearer` header marked sensitive, and never
//!   appears in a log, an error or a `Debug` output. Logs carry no prompt or answer text.
//! - **Errors say whether to retry.** [`ModelError::is_passing`] is true for failures that may pass by themselves
//!   (timeout, 429, 5xx, an unreachable endpoint, a failing command); false for permanent ones (configuration,
//!   4xx, a malformed or oversized answer, a program that cannot be started) and for [`ModelError::NoModel`].
//! - **Deadlines hold.** A call returns by [`Limits::deadline`], retries and their waits included, and each
//!   request or command run also ends within the provider's timeout (`memory.model.timeout_ms`); a command still
//!   running then is killed with its whole process group and reaped before the call returns.
//! - **Nothing panics on input.** Prompts, answers, headers and settings of any shape give a typed error.

mod answer;
mod command;
mod error;
pub mod extractive;
mod none;
mod openai;
mod types;

pub use answer::{clean_answer, one_line_excerpt};
pub use cao_core::settings::{ModelProvider, ModelSettings};
pub use command::{CommandConfig, CommandModel};
pub use error::ModelError;
pub use none::NoModel;
pub use openai::{ApiKey, OpenAiConfig, OpenAiModel, RetryPolicy};
pub use types::{Completion, Limits, MAX_PROMPT_BYTES, Message, ModelInfo, Prompt, Role, Usage};

use cao_core::Settings;

/// A model shared between the calls that use it, for request structs that may carry one (lint, heal and compaction
/// with a model the caller chose instead of the configured one). Two are equal when they are the same model
/// instance.
#[derive(Debug, Clone)]
pub struct SharedModel(std::sync::Arc<dyn Model>);

impl SharedModel {
    /// Share `model`.
    pub fn new(model: impl Model + 'static) -> Self {
        SharedModel(std::sync::Arc::new(model))
    }

    /// The model.
    pub fn model(&self) -> &dyn Model {
        self.0.as_ref()
    }
}

impl PartialEq for SharedModel {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SharedModel {}

/// A language model: one blocking call per answer.
///
/// Implementations are `Send + Sync` so one instance (`Box<dyn Model>` in an `Arc`) serves many threads; a call
/// blocks its thread until the answer, an error or the deadline. Call it from a plain thread or tokio's blocking
/// pool (`spawn_blocking`), never directly on an async worker.
pub trait Model: Send + Sync + std::fmt::Debug {
    /// Which provider and model this is (the author recorded on answers, e.g. for "who wrote this summary line").
    fn info(&self) -> &ModelInfo;

    /// Ask the model for one answer to `prompt`, within `limits`.
    ///
    /// Returns the cleaned answer text (see the crate invariants) and the model that wrote it.
    ///
    /// Errors: a [`ModelError`]; [`ModelError::is_passing`] tells a caller whether trying again later may help.
    /// The `none` provider always returns [`ModelError::NoModel`].
    fn complete(&self, prompt: &Prompt, limits: &Limits) -> Result<Completion, ModelError>;
}

/// The model configured by `settings` (`memory.model.*`, each overridden by its `CAO_MEMORY_MODEL_*` variable),
/// reading the process environment for overrides and the API key.
///
/// Errors: as [`from_settings_with`].
pub fn from_settings(settings: &Settings) -> Result<Box<dyn Model>, ModelError> {
    from_settings_with(settings, &|name| std::env::var(name).ok())
}

/// As [`from_settings`], with `env` looking up environment variables (tests, embedding).
///
/// Errors: [`ModelError::Config`] when a model setting is invalid (the message names the key or variable), when
/// `settings.json` is unusable, or when the chosen provider lacks what it needs (see [`from_model_settings`]).
pub fn from_settings_with(
    settings: &Settings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Box<dyn Model>, ModelError> {
    let model_settings = settings
        .model_settings_with(env)
        .map_err(|e| ModelError::Config(e.to_string()))?;
    from_model_settings(&model_settings, env)
}

/// Build the model that `settings` describe; `env` supplies the API key variable.
///
/// - `none`: [`NoModel`]; the other keys are ignored.
/// - `openai`: needs `url` and `name`; when `api_key_env` is set, the variable it names must be set and
///   non-empty (its value becomes the Bearer token). Requests time out after `timeout`; [`RetryPolicy::default`].
/// - `command`: needs `command`; `name` (optional) labels the answers, else the program's file name does.
///
/// Errors: [`ModelError::Config`] naming the missing key or the unset variable (never its value).
pub fn from_model_settings(
    settings: &ModelSettings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Box<dyn Model>, ModelError> {
    let missing = |key: &str| {
        ModelError::Config(format!(
            "{key} is required when memory.model.provider is {}",
            settings.provider
        ))
    };
    match settings.provider {
        ModelProvider::None => Ok(Box::new(NoModel::new())),
        ModelProvider::OpenAi => {
            let url = settings.url.clone().ok_or_else(|| missing("memory.model.url"))?;
            let name = settings.name.clone().ok_or_else(|| missing("memory.model.name"))?;
            let api_key = match &settings.api_key_env {
                None => None,
                Some(var) => match env(var).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()) {
                    Some(key) => Some(ApiKey::new(key)),
                    None => {
                        return Err(ModelError::Config(format!(
                            "memory.model.api_key_env names the environment variable {var}, which is not set or empty"
                        )));
                    }
                },
            };
            let model = OpenAiModel::new(OpenAiConfig {
                url,
                name,
                api_key,
                timeout: settings.timeout,
                retry: RetryPolicy::default(),
            })?;
            Ok(Box::new(model))
        }
        ModelProvider::Command => {
            let argv = settings
                .command
                .clone()
                .ok_or_else(|| missing("memory.model.command"))?;
            let model = CommandModel::new(CommandConfig {
                argv,
                name: settings.name.clone(),
                timeout: settings.timeout,
            })?;
            Ok(Box::new(model))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn the_default_is_no_model() {
        let m = from_settings_with(&Settings::from_value(json!({})), &env_of(&[])).expect("builds");
        assert_eq!(m.info().provider, ModelProvider::None);
        let err = m
            .complete(&Prompt::user("hi"), &Limits::new(10, 100, Duration::from_secs(1)))
            .expect_err("no model");
        assert!(matches!(err, ModelError::NoModel), "{err:?}");
        assert!(!err.is_passing());
    }

    #[test]
    fn openai_from_settings_and_env_overrides() {
        let settings = Settings::from_value(json!({"memory": {"model": {
            "provider": "openai", "url": "http://127.0.0.1:9/v1", "name": "file-model",
            "api_key_env": "MY_MODEL_KEY", "timeout_ms": 1234}}}));
        let m = from_settings_with(&settings, &env_of(&[("MY_MODEL_KEY", "sk-test-123")])).expect("builds");
        assert_eq!(
            (m.info().provider, m.info().name.as_str()),
            (ModelProvider::OpenAi, "file-model")
        );
        let debug = format!("{m:?}");
        assert!(!debug.contains("sk-test-123"), "{debug}");
        assert!(debug.contains("1.234s"), "timeout from the file: {debug}");
        let m = from_settings_with(
            &settings,
            &env_of(&[
                ("MY_MODEL_KEY", "k"),
                ("CAO_MEMORY_MODEL_NAME", "env-model"),
                ("CAO_MEMORY_MODEL_PROVIDER", "command"),
                ("CAO_MEMORY_MODEL_COMMAND", "/bin/echo hi"),
            ]),
        )
        .expect("builds");
        assert_eq!(
            (m.info().provider, m.info().name.as_str()),
            (ModelProvider::Command, "env-model")
        );
    }

    #[test]
    fn missing_pieces_are_config_errors_that_name_them() {
        for (file, env, needle) in [
            (
                json!({"provider": "openai", "name": "m"}),
                &[][..],
                "memory.model.url is required",
            ),
            (
                json!({"provider": "openai", "url": "http://h/v1"}),
                &[],
                "memory.model.name is required",
            ),
            (json!({"provider": "command"}), &[], "memory.model.command is required"),
            (
                json!({"provider": "openai", "url": "http://h/v1", "name": "m", "api_key_env": "NOPE_KEY"}),
                &[],
                "NOPE_KEY, which is not set",
            ),
            (
                json!({"provider": "openai", "url": "http://h/v1", "name": "m", "api_key_env": "BLANK_KEY"}),
                &[("BLANK_KEY", "  ")],
                "BLANK_KEY, which is not set or empty",
            ),
            (json!({"provider": "gpt"}), &[], "memory.model.provider"),
            (
                json!({}),
                &[("CAO_MEMORY_MODEL_TIMEOUT_MS", "0")],
                "CAO_MEMORY_MODEL_TIMEOUT_MS",
            ),
        ] {
            let env: &'static [(&'static str, &'static str)] = env;
            let settings = Settings::from_value(json!({"memory": {"model": file}}));
            let err = from_settings_with(&settings, &env_of(env)).expect_err("incomplete");
            assert!(matches!(err, ModelError::Config(_)), "{err:?}");
            assert!(!err.is_passing());
            assert!(err.to_string().contains(needle), "{file}: {err}");
        }
    }
}
