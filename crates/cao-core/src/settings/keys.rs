//! The registry of known settings ([`KEYS`]) and how each one's effective value is resolved.
//!
//! Every key has a type, a default, one environment variable and the rule: environment (trimmed, non-empty) >
//! file value > default. A file value of the wrong type, a parent that is not a JSON object, or an unusable
//! `settings.json` yields the default plus a one-line warning (never an error), so readers fail the way each
//! setting documents (`memory.enabled` open, the opt-in switches closed).
//!
//! Boolean environment values: `1`, `true`, `yes` (any case) are true, everything else false (the reference's rule
//! for `CAO_MEMORY_ENABLED`); a value that is not one of `1 true yes 0 false no` also carries a warning.
//!
//! The model keys (`memory.model.*`, validated by the functions of `model.rs`): an environment value is parsed as
//! `cao config set` parses it; a file value must have the key's JSON type (a string, a number for `timeout_ms`, a
//! list of strings or a command-line string for `command`; a blank string is unset). An invalid value from either
//! source yields the default plus a warning, and [`Settings::model_settings`] turns that warning into an error.

use super::model;
use super::{Settings, parse_env_bool};
use crate::error::CoreError;
use crate::identity::validate_project_id;
use serde_json::Value;

/// The type of a setting's value, which decides how `cao config set` parses and validates it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingKind {
    /// A JSON boolean; spelled `true` or `false` on the command line.
    Bool,
    /// A JSON string matching `^[a-zA-Z0-9._-]{1,128}$`, not `.`, `..` or a reserved container name
    /// ([`validate_project_id`]).
    ProjectId,
    /// A model provider name: `none`, `openai` or `command` ([`super::ModelProvider`]).
    Provider,
    /// An absolute `http`/`https` URL with a host and no user name or password, at most 2048 bytes.
    Url,
    /// A non-empty string of at most 256 bytes without control characters.
    Name,
    /// The name of an environment variable (`^[A-Za-z_][A-Za-z0-9_]{0,127}$`). A value that does not match is
    /// never echoed in messages: it may be a secret pasted in the wrong place.
    EnvVarName,
    /// A command line as a JSON list of strings (program first; at most 64 words of at most 4096 bytes, no NUL).
    /// On the command line and in the environment it may also be written as words with shell-like quoting.
    Argv,
    /// A whole number of milliseconds, 1..=3600000.
    Millis,
    /// A number from 0 to 1 (a fraction or weight).
    Fraction,
    /// A number from 0 to 3: BM25's term-frequency saturation k1.
    Saturation,
    /// An injection mode: `block`, `view` or `both` ([`InjectionMode`]).
    InjectionMode,
    /// A list of directories: a JSON list of absolute paths (or `~/`-relative ones, expanded with `$HOME` when
    /// read); on the command line and in the environment, paths separated by `:` (as `PATH`). At most
    /// [`super::learning::MAX_AGENT_DIRS`] entries of at most 4096 bytes, no NUL.
    Dirs,
    /// One directory: an absolute path (or `~/`-relative, expanded with `$HOME` when read), at most 4096 bytes, no
    /// NUL (`memory.embeddings.model_dir`).
    ModelDir,
    /// A switch spelled `on` or `off` (a string, as the `[ui]` settings of spec 001 are).
    Switch,
    /// A decision-engine mode spelled `off` or `enforce` (spec 001 "Relevance from the decision engine").
    Enforce,
    /// A decision-engine mode spelled `off` or `advise` (spec 001 "Relevance from the decision engine").
    Advise,
    /// A compile mode spelled `off` or `model` ([`CompileMode`]).
    CompileMode,
}

impl SettingKind {
    /// The short type name shown by `cao config list` (`bool`, `string`).
    pub fn as_str(self) -> &'static str {
        match self {
            SettingKind::Bool => "bool",
            SettingKind::ProjectId
            | SettingKind::Provider
            | SettingKind::Url
            | SettingKind::Name
            | SettingKind::EnvVarName
            | SettingKind::InjectionMode
            | SettingKind::Switch
            | SettingKind::Enforce
            | SettingKind::Advise
            | SettingKind::CompileMode => "string",
            SettingKind::ModelDir => "string",
            SettingKind::Argv | SettingKind::Dirs => "list",
            SettingKind::Millis => "integer",
            SettingKind::Fraction | SettingKind::Saturation => "number",
        }
    }

    /// What a valid value looks like, for error messages.
    pub fn expected(self) -> &'static str {
        match self {
            SettingKind::Bool => "a boolean: true or false",
            SettingKind::ProjectId => "a string matching ^[a-zA-Z0-9._-]{1,128}$, not ., .., global or federated",
            SettingKind::Provider => model::PROVIDER_EXPECTED,
            SettingKind::Url => model::URL_EXPECTED,
            SettingKind::Name => model::NAME_EXPECTED,
            SettingKind::EnvVarName => model::ENV_NAME_EXPECTED,
            SettingKind::Argv => model::ARGV_EXPECTED,
            SettingKind::Millis => model::MILLIS_EXPECTED,
            SettingKind::Fraction => FRACTION_EXPECTED,
            SettingKind::Saturation => SATURATION_EXPECTED,
            SettingKind::InjectionMode => INJECTION_MODE_EXPECTED,
            SettingKind::Dirs => super::learning::DIRS_EXPECTED,
            SettingKind::ModelDir => super::embeddings::MODEL_DIR_EXPECTED,
            SettingKind::Switch => SWITCH_EXPECTED,
            SettingKind::Enforce => ENFORCE_EXPECTED,
            SettingKind::Advise => ADVISE_EXPECTED,
            SettingKind::CompileMode => COMPILE_MODE_EXPECTED,
        }
    }

    /// Whether a rejected value may be shown in messages (not for [`SettingKind::EnvVarName`], whose wrong
    /// values are often the secret itself).
    pub fn echoes_invalid_values(self) -> bool {
        self != SettingKind::EnvVarName
    }
}

/// A setting's built-in default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingDefault {
    /// A boolean default.
    Bool(bool),
    /// A string default.
    Text(&'static str),
    /// A non-negative integer default.
    Int(u64),
    /// A decimal default, in thousandths (`900` = 0.9).
    Thousandths(u32),
    /// No default value: the setting is unset unless the file or the environment provides one.
    Unset,
}

impl SettingDefault {
    /// The default as JSON (`None` when unset).
    pub fn value(self) -> Option<Value> {
        match self {
            SettingDefault::Bool(b) => Some(Value::Bool(b)),
            SettingDefault::Text(s) => Some(Value::String(s.to_owned())),
            SettingDefault::Int(n) => Some(Value::from(n)),
            SettingDefault::Thousandths(n) => Some(Value::from(f64::from(n) / 1000.0)),
            SettingDefault::Unset => None,
        }
    }
}

/// One known setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingKey {
    /// Dotted path inside `settings.json` (`memory.lifecycle.enabled` = `{"memory": {"lifecycle": {"enabled": ..}}}`).
    pub name: &'static str,
    /// Value type.
    pub kind: SettingKind,
    /// Built-in default.
    pub default: SettingDefault,
    /// The environment variable that overrides the file.
    pub env: &'static str,
    /// One line saying what the setting does.
    pub doc: &'static str,
}

/// `memory.enabled`: the master switch (fail-open).
pub const MEMORY_ENABLED: SettingKey = SettingKey {
    name: "memory.enabled",
    kind: SettingKind::Bool,
    default: SettingDefault::Bool(true),
    env: "CAO_MEMORY_ENABLED",
    doc: "Master switch of the memory system; when false every memory tool and command refuses to run.",
};

/// `memory.project_id`: the project identity override.
pub const MEMORY_PROJECT_ID: SettingKey = SettingKey {
    name: "memory.project_id",
    kind: SettingKind::ProjectId,
    default: SettingDefault::Unset,
    env: "CAO_PROJECT_ID",
    doc: "Project identity override (else the git remote, else a hash of the working directory).",
};

/// `memory.lifecycle.enabled`: the opt-in supersedes lifecycle (spec "Supersedes lifecycle (opt-in)").
pub const MEMORY_LIFECYCLE_ENABLED: SettingKey = SettingKey {
    name: "memory.lifecycle.enabled",
    kind: SettingKind::Bool,
    default: SettingDefault::Bool(false),
    env: "CAO_MEMORY_LIFECYCLE_ENABLED",
    doc: "Exclude targets of active supersedes edges from injection and demote them in recency/usage recall.",
};

/// `memory.non_accessing_inspection`: operator views do not count as accesses (spec "Non-accessing operator
/// inspection (opt-in)").
pub const MEMORY_NON_ACCESSING_INSPECTION: SettingKey = SettingKey {
    name: "memory.non_accessing_inspection",
    kind: SettingKind::Bool,
    default: SettingDefault::Bool(false),
    env: "CAO_MEMORY_NON_ACCESSING_INSPECTION",
    doc: "CLI list/show and HTTP GET /memory do not increase access counts.",
};

/// `memory.explain_enabled`: the `cao memory list --query Q --explain` diagnostic (spec "On-demand relevance
/// explain").
pub const MEMORY_EXPLAIN_ENABLED: SettingKey = SettingKey {
    name: "memory.explain_enabled",
    kind: SettingKind::Bool,
    default: SettingDefault::Bool(true),
    env: "CAO_MEMORY_EXPLAIN_ENABLED",
    doc: "Allow the on-demand relevance explain diagnostic.",
};

/// `memory.model.provider`: which language model the memory system may call (`cao-model`).
pub const MEMORY_MODEL_PROVIDER: SettingKey = SettingKey {
    name: "memory.model.provider",
    kind: SettingKind::Provider,
    default: SettingDefault::Text("none"),
    env: "CAO_MEMORY_MODEL_PROVIDER",
    doc: "Language model provider: none (offline, no model), openai (an OpenAI-compatible endpoint) or command.",
};

/// `memory.model.url`: base URL of the OpenAI-compatible endpoint.
pub const MEMORY_MODEL_URL: SettingKey = SettingKey {
    name: "memory.model.url",
    kind: SettingKind::Url,
    default: SettingDefault::Unset,
    env: "CAO_MEMORY_MODEL_URL",
    doc: "Base URL of the OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1 (provider openai).",
};

/// `memory.model.name`: the model name sent to the endpoint and recorded as the author of its answers.
pub const MEMORY_MODEL_NAME: SettingKey = SettingKey {
    name: "memory.model.name",
    kind: SettingKind::Name,
    default: SettingDefault::Unset,
    env: "CAO_MEMORY_MODEL_NAME",
    doc: "Model name sent to the endpoint (provider openai) and recorded as the author of each answer.",
};

/// `memory.model.api_key_env`: the name of the environment variable holding the API key.
pub const MEMORY_MODEL_API_KEY_ENV: SettingKey = SettingKey {
    name: "memory.model.api_key_env",
    kind: SettingKind::EnvVarName,
    default: SettingDefault::Unset,
    env: "CAO_MEMORY_MODEL_API_KEY_ENV",
    doc: "Name of the environment variable holding the API key sent as a Bearer token (never the key itself).",
};

/// `memory.model.command`: argv of a CLI that reads the prompt on stdin and answers on stdout.
pub const MEMORY_MODEL_COMMAND: SettingKey = SettingKey {
    name: "memory.model.command",
    kind: SettingKind::Argv,
    default: SettingDefault::Unset,
    env: "CAO_MEMORY_MODEL_COMMAND",
    doc: "Command reading the prompt on stdin, e.g. [\"claude\",\"-p\"] (provider command; never run by a shell).",
};

/// `memory.model.timeout_ms`: the per-request timeout of a model call.
pub const MEMORY_MODEL_TIMEOUT_MS: SettingKey = SettingKey {
    name: "memory.model.timeout_ms",
    kind: SettingKind::Millis,
    default: SettingDefault::Int(model::MODEL_TIMEOUT_MS_DEFAULT),
    env: "CAO_MEMORY_MODEL_TIMEOUT_MS",
    doc: "Timeout of one model request in milliseconds (1..3600000); a command is killed when it passes.",
};

/// `memory.recall.bm25_k1`: term-frequency saturation of the lexical score (docs/decisions/0009-lexical-ranking.md).
pub const MEMORY_RECALL_BM25_K1: SettingKey = SettingKey {
    name: "memory.recall.bm25_k1",
    kind: SettingKind::Saturation,
    default: SettingDefault::Thousandths(1200),
    env: "CAO_MEMORY_RECALL_BM25_K1",
    doc: "BM25 k1 of the lexical score (0..3): how fast repeated query words stop adding to a memory's score.",
};

/// `memory.recall.bm25_b`: length normalisation of the lexical score (docs/decisions/0009-lexical-ranking.md).
pub const MEMORY_RECALL_BM25_B: SettingKey = SettingKey {
    name: "memory.recall.bm25_b",
    kind: SettingKind::Fraction,
    default: SettingDefault::Thousandths(100),
    env: "CAO_MEMORY_RECALL_BM25_B",
    doc: "BM25 b of the lexical score (0..1): how much longer memories are penalised (0 none, 1 full).",
};

/// `memory.recall.context_weight`: weight of a memory's context field (key, tags, stored date, the text of the two
/// memories stored before and the two stored after it) against its content in the lexical score
/// (docs/decisions/0009-lexical-ranking.md).
pub const MEMORY_RECALL_CONTEXT_WEIGHT: SettingKey = SettingKey {
    name: "memory.recall.context_weight",
    kind: SettingKind::Fraction,
    default: SettingDefault::Thousandths(400),
    env: "CAO_MEMORY_RECALL_CONTEXT_WEIGHT",
    doc: "Weight (0..1) of a memory's context (key, tags, date, the neighbouring memories' text) against its content.",
};

/// What a [`SettingKind::Fraction`] value looks like.
pub(crate) const FRACTION_EXPECTED: &str = "a number from 0 to 1";
/// What a [`SettingKind::Saturation`] value looks like.
pub(crate) const SATURATION_EXPECTED: &str = "a number from 0 to 3";

/// A number within `0..=max` (finite), as JSON.
///
/// Errors: `expected`.
fn check_number(v: f64, max: f64, expected: &'static str) -> Result<Value, &'static str> {
    if v.is_finite() && (0.0..=max).contains(&v) {
        serde_json::Number::from_f64(v).map(Value::Number).ok_or(expected)
    } else {
        Err(expected)
    }
}

/// The range and message of a numeric kind.
fn number_kind(kind: SettingKind) -> Option<(f64, &'static str)> {
    match kind {
        SettingKind::Fraction => Some((1.0, FRACTION_EXPECTED)),
        SettingKind::Saturation => Some((3.0, SATURATION_EXPECTED)),
        _ => None,
    }
}
/// `memory.injection.mode`: what a new session is given (spec 001 "The view"; default `block`, so nothing changes
/// for existing users).
pub const MEMORY_INJECTION_MODE: SettingKey = SettingKey {
    name: "memory.injection.mode",
    kind: SettingKind::InjectionMode,
    default: SettingDefault::Text("block"),
    env: "CAO_MEMORY_INJECTION_MODE",
    doc: "What a new session is given: block (the <cao-memory> block), view (the journal's 32 KiB view of the \
          project) or both.",
};

/// `memory.summarize`: long-running processes write the journal's summary lines (spec 001 "Summaries and spend").
pub const MEMORY_SUMMARIZE: SettingKey = SettingKey {
    name: "memory.summarize",
    kind: SettingKind::Bool,
    default: SettingDefault::Bool(true),
    env: "CAO_MEMORY_SUMMARIZE",
    doc: "Let cao-server and cao-mcp-server write the journal's summary lines in the background (two at a time).",
};

/// `ui.tree_drawing`: whether the memory inspector's detail pane draws the tree around the selection as boxes (`on`)
/// or with the outline's tree lines (`off`) (spec 001 "The inspector": `mermaid = "off"` under `[ui]`).
pub const UI_TREE_DRAWING: SettingKey = SettingKey {
    name: "ui.tree_drawing",
    kind: SettingKind::Switch,
    default: SettingDefault::Text("on"),
    env: "CAO_UI_TREE_DRAWING",
    doc: "How the memory inspector draws the tree around the selection: on (boxes) or off (the outline's tree \
          lines).",
};

/// What a valid switch looks like.
const SWITCH_EXPECTED: &str = "one of on, off";

/// What a valid enforce mode looks like.
const ENFORCE_EXPECTED: &str = "one of off, enforce";

/// What a valid advise mode looks like.
const ADVISE_EXPECTED: &str = "one of off, advise";

/// `memory.decisions.search`: with `enforce` and a configured model, `memory_search` shows only the word matches the
/// decision engine scores at or above `memory.decisions.relevance_floor` (spec 001 "Relevance from the decision
/// engine"; experimental, off by default).
pub(super) const MEMORY_DECISIONS_SEARCH: SettingKey = SettingKey {
    name: "memory.decisions.search",
    kind: SettingKind::Enforce,
    default: SettingDefault::Text("off"),
    env: "CAO_MEMORY_DECISIONS_SEARCH",
    doc: "Experimental: enforce lets the model (memory.model.*) keep only the relevant memory_search matches; off \
          shows the word matches.",
};

/// `memory.decisions.recall`: with `advise` and a configured model, each new user message gets a reminder naming up
/// to 3 memories the decision engine scores at or above `memory.decisions.routing_confidence` (spec 001).
pub(super) const MEMORY_DECISIONS_RECALL: SettingKey = SettingKey {
    name: "memory.decisions.recall",
    kind: SettingKind::Advise,
    default: SettingDefault::Text("off"),
    env: "CAO_MEMORY_DECISIONS_RECALL",
    doc: "Experimental: advise names up to 3 memories the model finds relevant to each new user message \
          (UserPromptSubmit hook, memory_advise).",
};

/// `memory.decisions.duplicates`: with `advise` and a configured model, a `memory_store` receipt for a new key names
/// existing memories that may cover the same topic (spec 001).
pub(super) const MEMORY_DECISIONS_DUPLICATES: SettingKey = SettingKey {
    name: "memory.decisions.duplicates",
    kind: SettingKind::Advise,
    default: SettingDefault::Text("off"),
    env: "CAO_MEMORY_DECISIONS_DUPLICATES",
    doc: "Experimental: advise makes a memory_store receipt for a new key name existing memories that may cover \
          the same topic.",
};

/// `memory.decisions.relevance_floor`: the least engine score a `memory_search` match needs to be shown under
/// `memory.decisions.search = enforce`. The spec gives no default; 0.5 (the midpoint: "more likely relevant than
/// not") is ours.
pub(super) const MEMORY_DECISIONS_RELEVANCE_FLOOR: SettingKey = SettingKey {
    name: "memory.decisions.relevance_floor",
    kind: SettingKind::Fraction,
    default: SettingDefault::Thousandths(500),
    env: "CAO_MEMORY_DECISIONS_RELEVANCE_FLOOR",
    doc: "Least model score (0..1) a memory_search match needs under memory.decisions.search = enforce.",
};

/// `memory.decisions.routing_confidence`: the least engine score a memory needs to be named by recall advice or
/// duplicate advice. The spec gives no default; 0.7 is ours: advice interrupts the agent unasked, so it asks for
/// more confidence than a search the agent asked for.
pub(super) const MEMORY_DECISIONS_ROUTING_CONFIDENCE: SettingKey = SettingKey {
    name: "memory.decisions.routing_confidence",
    kind: SettingKind::Fraction,
    default: SettingDefault::Thousandths(700),
    env: "CAO_MEMORY_DECISIONS_ROUTING_CONFIDENCE",
    doc: "Least model score (0..1) a memory needs to be named by recall or duplicate advice.",
};

/// `memory.decisions.timeout_ms`: the deadline of the recall advice's model call, shorter than
/// `memory.model.timeout_ms` because it runs before the turn starts (spec 001).
pub(super) const MEMORY_DECISIONS_TIMEOUT_MS: SettingKey = SettingKey {
    name: "memory.decisions.timeout_ms",
    kind: SettingKind::Millis,
    default: SettingDefault::Int(3000),
    env: "CAO_MEMORY_DECISIONS_TIMEOUT_MS",
    doc: "Deadline of the recall advice's model call in milliseconds (1..3600000); when it passes, no advice.",
};

/// `memory.fsync_writes`: whether each memory write fsyncs its topic file and directory before it is acknowledged
/// (docs/decisions/0012-write-durability.md). Default false: a write survives the crash or kill of any process at
/// once, and a power failure or OS crash only after the kernel's write-back (as the index's SQLite
/// `synchronous = NORMAL`); true adds two fsyncs per write (milliseconds on a virtual disk).
pub const MEMORY_FSYNC_WRITES: SettingKey = SettingKey {
    name: "memory.fsync_writes",
    kind: SettingKind::Bool,
    default: SettingDefault::Bool(false),
    env: "CAO_MEMORY_FSYNC_WRITES",
    doc: "Fsync each written topic file and its directory before a write returns, so it survives a power failure \
          (slower). Off: writes survive any process crash at once, a power failure after the kernel's write-back.",
};

/// `memory.compile_mode`: whether long-running processes compact a topic in the background after a store to it
/// (spec 000 "Capabilities"; spec/reference-facts.md "Compiler": the reference merges each update of an existing key
/// into its article). Default `off`; `model` needs a configured model (`memory.model.*`).
pub const MEMORY_COMPILE_MODE: SettingKey = SettingKey {
    name: "memory.compile_mode",
    kind: SettingKind::CompileMode,
    default: SettingDefault::Text("off"),
    env: "CAO_MEMORY_COMPILE_MODE",
    doc: "off, or model: cao-server and cao-mcp-server compact a topic in the background (as cao memory compact \
          does, with memory.model.*) once it has two or more entries since its last compaction. One-shot cao \
          commands never do.",
};

/// What a valid compile mode looks like.
const COMPILE_MODE_EXPECTED: &str = "one of off, model";

/// Automatic compaction on update ([`MEMORY_COMPILE_MODE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CompileMode {
    /// No automatic compaction (the default); `cao memory compact` still works.
    #[default]
    Off,
    /// Long-running processes compact updated topics with the configured model.
    Model,
}

impl CompileMode {
    /// `off` or `model`.
    pub fn as_str(self) -> &'static str {
        match self {
            CompileMode::Off => "off",
            CompileMode::Model => "model",
        }
    }

    /// The mode spelled exactly `off` or `model`; anything else is `None`.
    pub fn parse(s: &str) -> Option<CompileMode> {
        match s {
            "off" => Some(CompileMode::Off),
            "model" => Some(CompileMode::Model),
            _ => None,
        }
    }
}

/// What a new session is given ([`MEMORY_INJECTION_MODE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum InjectionMode {
    /// The `<cao-memory>` block only (the default).
    #[default]
    Block,
    /// The journal's view only.
    View,
    /// The block, then the view.
    Both,
}

impl InjectionMode {
    /// `block`, `view` or `both`.
    pub fn as_str(self) -> &'static str {
        match self {
            InjectionMode::Block => "block",
            InjectionMode::View => "view",
            InjectionMode::Both => "both",
        }
    }

    /// The mode named `s` (exact, lowercase); `None` for anything else.
    pub fn parse(s: &str) -> Option<InjectionMode> {
        match s {
            "block" => Some(InjectionMode::Block),
            "view" => Some(InjectionMode::View),
            "both" => Some(InjectionMode::Both),
            _ => None,
        }
    }

    /// Whether the `<cao-memory>` block is injected.
    pub fn block(self) -> bool {
        matches!(self, InjectionMode::Block | InjectionMode::Both)
    }

    /// Whether the journal's view is injected (and session snapshots and reminders are kept).
    pub fn view(self) -> bool {
        matches!(self, InjectionMode::View | InjectionMode::Both)
    }
}

/// What a valid injection mode looks like.
const INJECTION_MODE_EXPECTED: &str = "one of block, view, both";
/// `memory.learning_enabled`: the opt-in self-learning loop's outcome capture and lessons (spec 004 "Feature flags").
/// Nested under `memory.enabled`; fails closed.
pub const MEMORY_LEARNING_ENABLED: SettingKey = SettingKey {
    name: "memory.learning_enabled",
    kind: SettingKind::Bool,
    default: SettingDefault::Bool(false),
    env: "CAO_MEMORY_LEARNING_ENABLED",
    doc: "Self-learning loop: report_outcome, list_outcomes, /outcomes and store_lesson (needs memory.enabled).",
};

/// `memory.instruction_promotion_enabled`: `cao memory promote --apply` may edit agent profiles (spec 004 "Feature
/// flags"). Nested under `memory.learning_enabled`; fails closed.
pub const MEMORY_INSTRUCTION_PROMOTION_ENABLED: SettingKey = SettingKey {
    name: "memory.instruction_promotion_enabled",
    kind: SettingKind::Bool,
    default: SettingDefault::Bool(false),
    env: "CAO_MEMORY_INSTRUCTION_PROMOTION_ENABLED",
    doc: "Allow `cao memory promote --apply` to write lessons into agent profiles (needs memory.learning_enabled).",
};

/// `agents.dirs`: the directories agent profiles are looked up in, in order (default `$CAO_HOME/agent-store`).
pub const AGENTS_DIRS: SettingKey = SettingKey {
    name: "agents.dirs",
    kind: SettingKind::Dirs,
    default: SettingDefault::Unset,
    env: "CAO_AGENTS_DIRS",
    doc: "Directories holding agent profiles (<name>.md), searched in order; default $CAO_HOME/agent-store.",
};

/// `memory.embeddings.model_dir`: the local sentence-embedding model dense recall uses (unset: lexical recall).
pub const MEMORY_EMBEDDINGS_MODEL_DIR: SettingKey = SettingKey {
    name: "memory.embeddings.model_dir",
    kind: SettingKind::ModelDir,
    default: SettingDefault::Unset,
    env: "CAO_EMBED_MODEL",
    doc: "Directory of a local embedding model (config.json, tokenizer.json, model.safetensors; `cao models install \
minilm`) for hybrid dense recall; unset: recall is lexical.",
};

/// Every known setting, in the order `cao config list` shows them.
pub const KEYS: &[SettingKey] = &[
    MEMORY_ENABLED,
    MEMORY_PROJECT_ID,
    MEMORY_LIFECYCLE_ENABLED,
    MEMORY_NON_ACCESSING_INSPECTION,
    MEMORY_EXPLAIN_ENABLED,
    MEMORY_MODEL_PROVIDER,
    MEMORY_MODEL_URL,
    MEMORY_MODEL_NAME,
    MEMORY_MODEL_API_KEY_ENV,
    MEMORY_MODEL_COMMAND,
    MEMORY_MODEL_TIMEOUT_MS,
    MEMORY_INJECTION_MODE,
    MEMORY_SUMMARIZE,
    MEMORY_COMPILE_MODE,
    MEMORY_FSYNC_WRITES,
    MEMORY_LEARNING_ENABLED,
    MEMORY_INSTRUCTION_PROMOTION_ENABLED,
    AGENTS_DIRS,
    MEMORY_DECISIONS_SEARCH,
    MEMORY_DECISIONS_RECALL,
    MEMORY_DECISIONS_DUPLICATES,
    MEMORY_DECISIONS_RELEVANCE_FLOOR,
    MEMORY_DECISIONS_ROUTING_CONFIDENCE,
    MEMORY_DECISIONS_TIMEOUT_MS,
    UI_TREE_DRAWING,
    MEMORY_RECALL_BM25_K1,
    MEMORY_RECALL_BM25_B,
    MEMORY_RECALL_CONTEXT_WEIGHT,
    MEMORY_EMBEDDINGS_MODEL_DIR,
];

/// The known setting named `name` (exact, case-sensitive).
///
/// Errors: [`CoreError::UnknownSetting`] naming `name` and listing every known key.
pub fn lookup(name: &str) -> Result<&'static SettingKey, CoreError> {
    KEYS.iter()
        .find(|k| k.name == name)
        .ok_or_else(|| CoreError::UnknownSetting {
            name: name.chars().take(200).collect(),
            known: known_keys(),
        })
}

/// Every known key name, comma-separated (for messages).
pub fn known_keys() -> String {
    KEYS.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
}

/// What messages show instead of a value that must not be echoed ([`SettingKind::echoes_invalid_values`]).
pub const HIDDEN_VALUE: &str = "<not shown>";

/// Parse and validate a command-line value for `key` (no I/O).
///
/// Bool: exactly `true` or `false`. ProjectId: [`validate_project_id`]. Provider: `none`, `openai` or `command`.
/// Url, Name, EnvVarName, Millis: see [`SettingKind`]. Argv: a JSON list of strings when the value starts with
/// `[`, otherwise words split with shell-like quoting (`claude -p`, `tool "two words"`); stored as a JSON list.
///
/// Errors: [`CoreError::InvalidSettingValue`] naming the key, the value (except for [`SettingKind::EnvVarName`],
/// see [`HIDDEN_VALUE`]) and the expected type/pattern.
pub fn parse_value(key: &SettingKey, raw: &str) -> Result<Value, CoreError> {
    let invalid = || CoreError::InvalidSettingValue {
        key: key.name,
        value: if key.kind.echoes_invalid_values() {
            raw.chars().take(200).collect()
        } else {
            HIDDEN_VALUE.to_owned()
        },
        expected: key.kind.expected(),
    };
    let checked = |r: Result<Value, &'static str>| r.map_err(|_| invalid());
    match key.kind {
        SettingKind::Provider => checked(model::parse_provider(raw)),
        SettingKind::Url => checked(model::parse_url(raw)),
        SettingKind::Name => checked(model::parse_name(raw)),
        SettingKind::EnvVarName => checked(model::parse_env_name(raw)),
        SettingKind::Argv => checked(model::parse_argv(raw)),
        SettingKind::Millis => checked(model::parse_millis(raw)),
        SettingKind::Fraction | SettingKind::Saturation => {
            let (max, expected) = number_kind(key.kind).ok_or_else(invalid)?;
            // Plain decimals only (`0.5`, `.75`, `1`): no sign, exponent, NaN or infinity spellings.
            if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
                return Err(invalid());
            }
            let v: f64 = raw.parse().map_err(|_| invalid())?;
            checked(check_number(v, max, expected))
        }
        SettingKind::InjectionMode => match InjectionMode::parse(raw) {
            Some(m) => Ok(Value::String(m.as_str().to_owned())),
            None => Err(invalid()),
        },
        SettingKind::Dirs => checked(super::learning::parse_dirs(raw)),
        SettingKind::ModelDir => checked(super::embeddings::parse_model_dir(raw)),
        SettingKind::Switch => match raw {
            "on" | "off" => Ok(Value::String(raw.to_owned())),
            _ => Err(invalid()),
        },
        SettingKind::Enforce => match raw {
            "off" | "enforce" => Ok(Value::String(raw.to_owned())),
            _ => Err(invalid()),
        },
        SettingKind::Advise => match raw {
            "off" | "advise" => Ok(Value::String(raw.to_owned())),
            _ => Err(invalid()),
        },
        SettingKind::CompileMode => match CompileMode::parse(raw) {
            Some(m) => Ok(Value::String(m.as_str().to_owned())),
            None => Err(invalid()),
        },
        SettingKind::Bool => match raw {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(invalid()),
        },
        SettingKind::ProjectId => match validate_project_id(raw) {
            Ok(()) => Ok(Value::String(raw.to_owned())),
            Err(_) => Err(invalid()),
        },
    }
}

/// Where an effective value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SettingSource {
    /// The setting's environment variable.
    Env,
    /// `settings.json`.
    File,
    /// The built-in default.
    Default,
}

impl SettingSource {
    /// `env`, `file` or `default`.
    pub fn as_str(self) -> &'static str {
        match self {
            SettingSource::Env => "env",
            SettingSource::File => "file",
            SettingSource::Default => "default",
        }
    }
}

/// A setting's effective value and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct EffectiveValue {
    /// The setting.
    pub key: &'static SettingKey,
    /// The value in effect (`None`: unset).
    pub value: Option<Value>,
    /// Where [`EffectiveValue::value`] came from.
    pub source: SettingSource,
    /// Why a present file or env value was ignored or is questionable (one line), if it was.
    pub warning: Option<String>,
}

impl Settings {
    /// The effective value of `key`: env > file > default (see the module docs). Reads the process environment.
    pub fn effective(&self, key: &'static SettingKey) -> EffectiveValue {
        self.effective_with(key, &|name| std::env::var(name).ok())
    }

    /// As [`Settings::effective`], with `env` looking up environment variables (tests, embedding).
    pub fn effective_with(&self, key: &'static SettingKey, env: &dyn Fn(&str) -> Option<String>) -> EffectiveValue {
        let done = |value: Option<Value>, source, warning: Option<String>| EffectiveValue {
            key,
            value,
            source,
            warning,
        };
        let fallback = |warning: Option<String>| done(key.default.value(), SettingSource::Default, warning);

        if let Some(raw) = env(key.env).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()) {
            return match key.kind {
                SettingKind::Bool => {
                    let known = ["1", "true", "yes", "0", "false", "no"];
                    let warning = (!known.contains(&raw.to_ascii_lowercase().as_str())).then(|| {
                        format!(
                            "{}={raw:?} is not one of 1/true/yes/0/false/no; it reads as false",
                            key.env
                        )
                    });
                    done(Some(Value::Bool(parse_env_bool(&raw))), SettingSource::Env, warning)
                }
                SettingKind::ProjectId => {
                    let warning = validate_project_id(&raw).err().map(|e| e.to_string());
                    done(Some(Value::String(raw)), SettingSource::Env, warning)
                }
                _ => match parse_value(key, &raw) {
                    Ok(v) => done(Some(v), SettingSource::Env, None),
                    Err(_) => fallback(Some(format!(
                        "{}={} is not {}; using the default",
                        key.env,
                        shown(key, &Value::String(raw)),
                        key.kind.expected()
                    ))),
                },
            };
        }
        if let Some(e) = &self.file_error {
            return fallback(Some(format!("settings.json is not usable ({e}); using the default")));
        }
        let mut cur: Option<&Value> = None;
        let mut walked = String::new();
        for part in key.name.split('.') {
            let next = match cur {
                None => self.file.get(part),
                Some(Value::Object(map)) => map.get(part),
                Some(other) => {
                    return fallback(Some(format!(
                        "{walked} in settings.json is {}, not an object; using the default",
                        brief(other)
                    )));
                }
            };
            match next {
                None => return fallback(None),
                Some(v) => cur = Some(v),
            }
            if !walked.is_empty() {
                walked.push('.');
            }
            walked.push_str(part);
        }
        let wrong_type = |v: &Value| {
            fallback(Some(format!(
                "{} in settings.json is {}, expected {}; using the default",
                key.name,
                brief(v),
                key.kind.expected()
            )))
        };
        match (key.kind, cur) {
            (_, None | Some(Value::Null)) => fallback(None),
            (SettingKind::Bool, Some(Value::Bool(b))) => done(Some(Value::Bool(*b)), SettingSource::File, None),
            (SettingKind::ProjectId, Some(Value::String(s))) => {
                let s = s.trim();
                if s.is_empty() {
                    return fallback(None);
                }
                let warning = validate_project_id(s).err().map(|e| e.to_string());
                done(Some(Value::String(s.to_owned())), SettingSource::File, warning)
            }
            (SettingKind::Bool | SettingKind::ProjectId, Some(v)) => wrong_type(v),
            (kind, Some(v)) => {
                let parsed = match (kind, v) {
                    (_, Value::String(s)) if s.trim().is_empty() => return fallback(None),
                    (SettingKind::Millis, Value::Number(n)) => match n.as_u64() {
                        Some(n) => model::check_millis(n),
                        None => Err(kind.expected()),
                    },
                    (SettingKind::Argv, Value::Array(_)) => model::check_argv_value(v),
                    (SettingKind::Dirs, Value::Array(_)) => super::learning::check_dirs_value(v),
                    (SettingKind::Fraction | SettingKind::Saturation, Value::Number(n)) => match number_kind(kind) {
                        Some((max, expected)) => n.as_f64().map_or(Err(expected), |v| check_number(v, max, expected)),
                        None => Err(kind.expected()),
                    },
                    (SettingKind::Fraction | SettingKind::Saturation, _) => Err(kind.expected()),
                    (SettingKind::Millis, _) => Err(kind.expected()),
                    (_, Value::String(s)) => parse_value(key, s.trim()).map_err(|_| kind.expected()),
                    _ => Err(kind.expected()),
                };
                match parsed {
                    Ok(v) => done(Some(v), SettingSource::File, None),
                    Err(expected) => fallback(Some(format!(
                        "{} in settings.json is {}, expected {expected}; using the default",
                        key.name,
                        shown(key, v)
                    ))),
                }
            }
        }
    }

    /// A boolean setting's effective value; a warning (ignored file value, odd env spelling) is logged.
    pub(super) fn effective_bool(&self, key: &'static SettingKey) -> bool {
        let eff = self.effective(key);
        if let Some(w) = &eff.warning {
            tracing::warn!(setting = key.name, "{w}");
        }
        let default = matches!(key.default, SettingDefault::Bool(true));
        eff.value.as_ref().and_then(Value::as_bool).unwrap_or(default)
    }

    /// `memory.lifecycle.enabled` (env `CAO_MEMORY_LIFECYCLE_ENABLED`): env > nested file value > default false.
    /// An invalid nested object, a non-boolean file value or an unusable settings.json warns and leaves it off.
    pub fn lifecycle_enabled(&self) -> bool {
        self.effective_bool(&MEMORY_LIFECYCLE_ENABLED)
    }

    /// `memory.non_accessing_inspection` (env `CAO_MEMORY_NON_ACCESSING_INSPECTION`), default and read-error
    /// fallback false: when true, CLI list/show and HTTP GET reads do not record accesses.
    pub fn non_accessing_inspection(&self) -> bool {
        self.effective_bool(&MEMORY_NON_ACCESSING_INSPECTION)
    }

    /// `memory.explain_enabled` (env `CAO_MEMORY_EXPLAIN_ENABLED`), default true.
    pub fn explain_enabled(&self) -> bool {
        self.effective_bool(&MEMORY_EXPLAIN_ENABLED)
    }

    /// A numeric setting's effective value (env > file > default); an invalid value logs its warning and reads as
    /// the default.
    pub fn number(&self, key: &'static SettingKey) -> f64 {
        let eff = self.effective(key);
        if let Some(w) = &eff.warning {
            tracing::warn!(setting = key.name, "{w}");
        }
        let default = key.default.value().and_then(|v| v.as_f64()).unwrap_or(0.0);
        eff.value.as_ref().and_then(Value::as_f64).unwrap_or(default)
    }

    /// `memory.summarize` (env `CAO_MEMORY_SUMMARIZE`), default true: long-running processes write the journal's
    /// summary lines.
    pub fn summarize_enabled(&self) -> bool {
        self.effective_bool(&MEMORY_SUMMARIZE)
    }

    /// `memory.fsync_writes` (env `CAO_MEMORY_FSYNC_WRITES`), default false: the durability of memory writes.
    pub fn write_durability(&self) -> crate::fs::Durability {
        if self.effective_bool(&MEMORY_FSYNC_WRITES) {
            crate::fs::Durability::PowerLoss
        } else {
            crate::fs::Durability::ProcessCrash
        }
    }

    /// `memory.compile_mode` (env `CAO_MEMORY_COMPILE_MODE`), default `off`; an invalid value warns and reads as
    /// `off`.
    pub fn compile_mode(&self) -> CompileMode {
        self.effective_text(&MEMORY_COMPILE_MODE)
            .as_deref()
            .and_then(CompileMode::parse)
            .unwrap_or_default()
    }

    /// `ui.tree_drawing` (env `CAO_UI_TREE_DRAWING`), default `on`: true when the memory inspector draws the tree
    /// around the selection as boxes, false (`off`) for the outline's tree lines. An invalid value warns and reads
    /// as `on`.
    pub fn tree_drawing(&self) -> bool {
        let eff = self.effective(&UI_TREE_DRAWING);
        if let Some(w) = &eff.warning {
            tracing::warn!(setting = UI_TREE_DRAWING.name, "{w}");
        }
        eff.value.as_ref().and_then(Value::as_str) != Some("off")
    }

    /// The string value of a mode setting, warning about an invalid value (which reads as the default).
    fn effective_text(&self, key: &'static SettingKey) -> Option<String> {
        let eff = self.effective(key);
        if let Some(w) = &eff.warning {
            tracing::warn!(setting = key.name, "{w}");
        }
        eff.value.as_ref().and_then(Value::as_str).map(str::to_owned)
    }

    /// A fraction setting's value in 0..=1 (an invalid value warns and reads as the default).
    fn effective_fraction(&self, key: &'static SettingKey) -> f64 {
        let eff = self.effective(key);
        if let Some(w) = &eff.warning {
            tracing::warn!(setting = key.name, "{w}");
        }
        let default = key.default.value().and_then(|v| v.as_f64()).unwrap_or(1.0);
        eff.value
            .as_ref()
            .and_then(Value::as_f64)
            .unwrap_or(default)
            .clamp(0.0, 1.0)
    }

    /// `memory.decisions.search` (env `CAO_MEMORY_DECISIONS_SEARCH`) is `enforce`; default `off`.
    pub fn decisions_search_enforced(&self) -> bool {
        self.effective_text(&MEMORY_DECISIONS_SEARCH).as_deref() == Some("enforce")
    }

    /// `memory.decisions.recall` (env `CAO_MEMORY_DECISIONS_RECALL`) is `advise`; default `off`.
    pub fn decisions_recall_advised(&self) -> bool {
        self.effective_text(&MEMORY_DECISIONS_RECALL).as_deref() == Some("advise")
    }

    /// `memory.decisions.duplicates` (env `CAO_MEMORY_DECISIONS_DUPLICATES`) is `advise`; default `off`.
    pub fn decisions_duplicates_advised(&self) -> bool {
        self.effective_text(&MEMORY_DECISIONS_DUPLICATES).as_deref() == Some("advise")
    }

    /// `memory.decisions.relevance_floor` (env `CAO_MEMORY_DECISIONS_RELEVANCE_FLOOR`), 0..=1, default 0.5.
    pub fn decisions_relevance_floor(&self) -> f64 {
        self.effective_fraction(&MEMORY_DECISIONS_RELEVANCE_FLOOR)
    }

    /// `memory.decisions.routing_confidence` (env `CAO_MEMORY_DECISIONS_ROUTING_CONFIDENCE`), 0..=1, default 0.7.
    pub fn decisions_routing_confidence(&self) -> f64 {
        self.effective_fraction(&MEMORY_DECISIONS_ROUTING_CONFIDENCE)
    }

    /// `memory.decisions.timeout_ms` (env `CAO_MEMORY_DECISIONS_TIMEOUT_MS`), default 3000 ms: the recall advice's
    /// deadline.
    pub fn decisions_timeout(&self) -> std::time::Duration {
        let eff = self.effective(&MEMORY_DECISIONS_TIMEOUT_MS);
        if let Some(w) = &eff.warning {
            tracing::warn!(setting = MEMORY_DECISIONS_TIMEOUT_MS.name, "{w}");
        }
        std::time::Duration::from_millis(eff.value.as_ref().and_then(Value::as_u64).unwrap_or(3000))
    }

    /// `memory.injection.mode` (env `CAO_MEMORY_INJECTION_MODE`), default `block`; an invalid value warns and
    /// reads as `block`.
    pub fn injection_mode(&self) -> InjectionMode {
        let eff = self.effective(&MEMORY_INJECTION_MODE);
        if let Some(w) = &eff.warning {
            tracing::warn!(setting = MEMORY_INJECTION_MODE.name, "{w}");
        }
        eff.value
            .as_ref()
            .and_then(Value::as_str)
            .and_then(InjectionMode::parse)
            .unwrap_or_default()
    }
}

/// A rejected value for a message: [`brief`], or [`HIDDEN_VALUE`] for a kind that must not echo it.
fn shown(key: &SettingKey, v: &Value) -> String {
    if key.kind.echoes_invalid_values() {
        brief(v)
    } else {
        HIDDEN_VALUE.to_owned()
    }
}

/// A JSON value for a message: compact, at most 60 characters.
fn brief(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(57).collect::<String>())
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn eff(file: Value, key: &'static SettingKey, env: &[(&str, &str)]) -> EffectiveValue {
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        let lookup = move |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        Settings::from_value(file).effective_with(key, &lookup)
    }

    #[test]
    fn registry_names_are_unique_dotted_and_typed_defaults_match() {
        let mut names: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KEYS.len());
        for k in KEYS {
            // Three sections: the memory system's, the agent profiles' and the inspector's (`[ui]` of spec 001).
            assert!(
                ["memory.", "agents.", "ui."].iter().any(|p| k.name.starts_with(p)) && !k.name.ends_with('.'),
                "{}",
                k.name
            );
            assert!(k.env.starts_with("CAO_"), "{}", k.env);
            match (k.kind, k.default) {
                (SettingKind::Bool, SettingDefault::Bool(_))
                | (
                    SettingKind::Provider
                    | SettingKind::InjectionMode
                    | SettingKind::Switch
                    | SettingKind::Enforce
                    | SettingKind::Advise
                    | SettingKind::CompileMode,
                    SettingDefault::Text(_),
                )
                | (SettingKind::Millis, SettingDefault::Int(_))
                | (SettingKind::Fraction | SettingKind::Saturation, SettingDefault::Thousandths(_))
                | (
                    SettingKind::ProjectId
                    | SettingKind::Url
                    | SettingKind::Name
                    | SettingKind::EnvVarName
                    | SettingKind::Argv
                    | SettingKind::Dirs
                    | SettingKind::ModelDir,
                    SettingDefault::Unset,
                ) => {}
                other => panic!("{}: default does not fit the type: {other:?}", k.name),
            }
            assert_eq!(lookup(k.name).map(|f| f.name), Ok(k.name));
        }
        let err = lookup("memory.Enabled").expect_err("case-sensitive");
        assert!(err.to_string().contains("memory.lifecycle.enabled"), "{err}");
    }

    #[test]
    fn recall_numbers_are_validated_from_every_source() {
        assert_eq!(parse_value(&MEMORY_RECALL_BM25_K1, "1.2"), Ok(json!(1.2)));
        assert_eq!(parse_value(&MEMORY_RECALL_BM25_B, "0"), Ok(json!(0.0)));
        for (key, bad) in [
            (&MEMORY_RECALL_BM25_K1, "3.5"),
            (&MEMORY_RECALL_BM25_K1, "-1"),
            (&MEMORY_RECALL_BM25_B, "1.01"),
            (&MEMORY_RECALL_CONTEXT_WEIGHT, "NaN"),
            (&MEMORY_RECALL_CONTEXT_WEIGHT, "half"),
        ] {
            let err = parse_value(key, bad).expect_err(bad).to_string();
            assert!(err.contains(key.name) && err.contains("a number from 0 to"), "{err}");
        }
        let e = eff(json!({}), &MEMORY_RECALL_BM25_K1, &[]);
        assert_eq!((e.value, e.source), (Some(json!(1.2)), SettingSource::Default));
        let e = eff(
            json!({"memory": {"recall": {"bm25_b": 0.75}}}),
            &MEMORY_RECALL_BM25_B,
            &[],
        );
        assert_eq!((e.value, e.source), (Some(json!(0.75)), SettingSource::File));
        let e = eff(json!({"memory": {"recall": {"bm25_b": 7}}}), &MEMORY_RECALL_BM25_B, &[]);
        assert_eq!(e.value, Some(json!(0.1)), "out of range in the file: the default");
        assert!(e.warning.is_some_and(|w| w.contains("a number from 0 to 1")));
        let e = eff(
            json!({}),
            &MEMORY_RECALL_CONTEXT_WEIGHT,
            &[("CAO_MEMORY_RECALL_CONTEXT_WEIGHT", "0")],
        );
        assert_eq!((e.value, e.source), (Some(json!(0.0)), SettingSource::Env));
        let s = Settings::from_value(json!({"memory": {"recall": {"bm25_k1": 1.5}}}));
        assert_eq!(s.number(&MEMORY_RECALL_BM25_K1), 1.5);
        assert_eq!(s.number(&MEMORY_RECALL_CONTEXT_WEIGHT), 0.4);
    }

    #[test]
    fn injection_mode_and_summarize_follow_env_file_default_and_refuse_other_words() {
        let file = json!({"memory": {"injection": {"mode": "view"}, "summarize": false}});
        assert_eq!(
            eff(file.clone(), &MEMORY_INJECTION_MODE, &[]).value,
            Some(json!("view"))
        );
        assert_eq!(
            eff(
                file.clone(),
                &MEMORY_INJECTION_MODE,
                &[("CAO_MEMORY_INJECTION_MODE", "both")]
            )
            .value,
            Some(json!("both"))
        );
        let e = eff(
            json!({"memory": {"injection": {"mode": "Views"}}}),
            &MEMORY_INJECTION_MODE,
            &[],
        );
        assert_eq!((e.value, e.source), (Some(json!("block")), SettingSource::Default));
        assert!(e.warning.is_some_and(|w| w.contains("block, view, both")));
        assert_eq!(eff(json!({}), &MEMORY_INJECTION_MODE, &[]).value, Some(json!("block")));
        assert_eq!(eff(file, &MEMORY_SUMMARIZE, &[]).value, Some(json!(false)));
        assert_eq!(eff(json!({}), &MEMORY_SUMMARIZE, &[]).value, Some(json!(true)));
        assert!(parse_value(&MEMORY_INJECTION_MODE, "both").is_ok());
        assert!(parse_value(&MEMORY_INJECTION_MODE, "all").is_err());
        for (m, block, view) in [
            (InjectionMode::Block, true, false),
            (InjectionMode::View, false, true),
            (InjectionMode::Both, true, true),
        ] {
            assert_eq!((m.block(), m.view()), (block, view));
            assert_eq!(InjectionMode::parse(m.as_str()), Some(m));
        }
    }

    #[test]
    fn decision_settings_are_off_by_default_and_validated() {
        let none = Settings::from_value(json!({}));
        assert!(!none.decisions_search_enforced());
        assert!(!none.decisions_recall_advised());
        assert!(!none.decisions_duplicates_advised());
        assert_eq!(none.decisions_relevance_floor(), 0.5);
        assert_eq!(none.decisions_routing_confidence(), 0.7);
        assert_eq!(none.decisions_timeout(), std::time::Duration::from_millis(3000));
        let on = Settings::from_value(json!({"memory": {"decisions": {"search": "enforce", "recall": "advise",
            "duplicates": "advise", "relevance_floor": 0.25, "routing_confidence": 1, "timeout_ms": 500}}}));
        assert!(on.decisions_search_enforced() && on.decisions_recall_advised() && on.decisions_duplicates_advised());
        assert_eq!(on.decisions_relevance_floor(), 0.25);
        assert_eq!(on.decisions_routing_confidence(), 1.0);
        assert_eq!(on.decisions_timeout(), std::time::Duration::from_millis(500));
        // The modes are not interchangeable, and a fraction outside 0..1 is the default with a warning.
        for (file, key) in [
            (
                json!({"memory": {"decisions": {"search": "advise"}}}),
                &MEMORY_DECISIONS_SEARCH,
            ),
            (
                json!({"memory": {"decisions": {"recall": "enforce"}}}),
                &MEMORY_DECISIONS_RECALL,
            ),
            (
                json!({"memory": {"decisions": {"relevance_floor": 1.5}}}),
                &MEMORY_DECISIONS_RELEVANCE_FLOOR,
            ),
            (
                json!({"memory": {"decisions": {"routing_confidence": -0.1}}}),
                &MEMORY_DECISIONS_ROUTING_CONFIDENCE,
            ),
            (
                json!({"memory": {"decisions": {"relevance_floor": true}}}),
                &MEMORY_DECISIONS_RELEVANCE_FLOOR,
            ),
        ] {
            let e = eff(file.clone(), key, &[]);
            assert_eq!(
                (e.value, e.source),
                (key.default.value(), SettingSource::Default),
                "{file}"
            );
            assert!(e.warning.is_some(), "{file}");
        }
        let e = eff(
            json!({}),
            &MEMORY_DECISIONS_RELEVANCE_FLOOR,
            &[("CAO_MEMORY_DECISIONS_RELEVANCE_FLOOR", "0.9")],
        );
        assert_eq!((e.value, e.source), (Some(json!(0.9)), SettingSource::Env));
        let e = eff(
            json!({}),
            &MEMORY_DECISIONS_SEARCH,
            &[("CAO_MEMORY_DECISIONS_SEARCH", "enforce")],
        );
        assert_eq!(e.value, Some(json!("enforce")));
        assert_eq!(
            parse_value(&MEMORY_DECISIONS_ROUTING_CONFIDENCE, ".75"),
            Ok(json!(0.75))
        );
        for bad in ["", ".", "1.01", "-0", "1e-1", "0,5", "NaN", "inf"] {
            assert!(parse_value(&MEMORY_DECISIONS_ROUTING_CONFIDENCE, bad).is_err(), "{bad}");
        }
        assert!(parse_value(&MEMORY_DECISIONS_DUPLICATES, "on").is_err());
    }

    #[test]
    fn compile_mode_is_off_by_default_and_only_off_or_model() {
        assert_eq!(Settings::from_value(json!({})).compile_mode(), CompileMode::Off);
        let on = json!({"memory": {"compile_mode": "model"}});
        assert_eq!(Settings::from_value(on.clone()).compile_mode(), CompileMode::Model);
        assert_eq!(
            eff(on, &MEMORY_COMPILE_MODE, &[("CAO_MEMORY_COMPILE_MODE", "off")]).value,
            Some(json!("off"))
        );
        let bad = eff(json!({"memory": {"compile_mode": "on"}}), &MEMORY_COMPILE_MODE, &[]);
        assert_eq!(bad.value, Some(json!("off")));
        assert!(bad.warning.is_some());
        assert_eq!(
            Settings::from_value(json!({"memory": {"compile_mode": true}})).compile_mode(),
            CompileMode::Off
        );
        assert_eq!(parse_value(&MEMORY_COMPILE_MODE, "model"), Ok(json!("model")));
        for raw in ["on", "Model", "true", ""] {
            assert!(parse_value(&MEMORY_COMPILE_MODE, raw).is_err(), "{raw}");
        }
    }

    #[test]
    fn tree_drawing_is_on_or_off_and_anything_else_reads_as_on() {
        assert_eq!(eff(json!({}), &UI_TREE_DRAWING, &[]).value, Some(json!("on")));
        let off = json!({"ui": {"tree_drawing": "off"}});
        assert_eq!(eff(off.clone(), &UI_TREE_DRAWING, &[]).value, Some(json!("off")));
        assert_eq!(
            eff(off, &UI_TREE_DRAWING, &[("CAO_UI_TREE_DRAWING", "on")]).value,
            Some(json!("on"))
        );
        let e = eff(json!({"ui": {"tree_drawing": "boxes"}}), &UI_TREE_DRAWING, &[]);
        assert_eq!((e.value, e.source), (Some(json!("on")), SettingSource::Default));
        assert!(e.warning.is_some_and(|w| w.contains("on, off")));
        let e = eff(json!({"ui": {"tree_drawing": false}}), &UI_TREE_DRAWING, &[]);
        assert_eq!(e.source, SettingSource::Default);
        assert!(parse_value(&UI_TREE_DRAWING, "off").is_ok());
        assert!(parse_value(&UI_TREE_DRAWING, "OFF").is_err());
        assert!(parse_value(&UI_TREE_DRAWING, "false").is_err());
        assert!(Settings::from_value(json!({})).tree_drawing());
    }

    #[test]
    fn precedence_env_then_file_then_default() {
        let file = json!({"memory": {"lifecycle": {"enabled": true}, "enabled": false, "project_id": "acme"}});
        let e = eff(file.clone(), &MEMORY_LIFECYCLE_ENABLED, &[]);
        assert_eq!(
            (e.value, e.source, e.warning),
            (Some(json!(true)), SettingSource::File, None)
        );
        let e = eff(
            file.clone(),
            &MEMORY_LIFECYCLE_ENABLED,
            &[("CAO_MEMORY_LIFECYCLE_ENABLED", " 0 ")],
        );
        assert_eq!((e.value, e.source), (Some(json!(false)), SettingSource::Env));
        let e = eff(
            file.clone(),
            &MEMORY_LIFECYCLE_ENABLED,
            &[("CAO_MEMORY_LIFECYCLE_ENABLED", "  ")],
        );
        assert_eq!(e.source, SettingSource::File, "blank env counts as unset");
        let e = eff(file.clone(), &MEMORY_PROJECT_ID, &[("CAO_PROJECT_ID", "other")]);
        assert_eq!((e.value, e.source), (Some(json!("other")), SettingSource::Env));
        let e = eff(file, &MEMORY_EXPLAIN_ENABLED, &[]);
        assert_eq!((e.value, e.source), (Some(json!(true)), SettingSource::Default));
        let e = eff(json!({}), &MEMORY_PROJECT_ID, &[]);
        assert_eq!((e.value, e.source, e.warning), (None, SettingSource::Default, None));
    }

    #[test]
    fn invalid_nested_values_warn_and_use_the_default() {
        for file in [
            json!({"memory": {"lifecycle": true}}),
            json!({"memory": {"lifecycle": ["enabled"]}}),
            json!({"memory": {"lifecycle": {"enabled": "true"}}}),
            json!({"memory": {"lifecycle": {"enabled": 1}}}),
            json!({"memory": "on"}),
        ] {
            let e = eff(file.clone(), &MEMORY_LIFECYCLE_ENABLED, &[]);
            assert_eq!(
                (&e.value, e.source),
                (&Some(json!(false)), SettingSource::Default),
                "{file}"
            );
            assert!(e.warning.is_some(), "{file} warns");
        }
        let e = eff(json!({"memory": {"lifecycle": true}}), &MEMORY_LIFECYCLE_ENABLED, &[]);
        assert_eq!(
            e.warning.as_deref(),
            Some("memory.lifecycle in settings.json is true, not an object; using the default")
        );
        let e = eff(
            json!({"memory": {"lifecycle": {"enabled": null}}}),
            &MEMORY_LIFECYCLE_ENABLED,
            &[],
        );
        assert_eq!((e.source, e.warning), (SettingSource::Default, None), "null is unset");
        // memory.enabled fails open on the same kind of damage.
        let e = eff(json!({"memory": {"enabled": "false"}}), &MEMORY_ENABLED, &[]);
        assert_eq!((e.value, e.source), (Some(json!(true)), SettingSource::Default));
    }

    #[test]
    fn unusable_file_keeps_defaults_with_a_warning() {
        let s = Settings::with_error("settings.json: expected a JSON object".into());
        let e = s.effective_with(&MEMORY_LIFECYCLE_ENABLED, &no_env);
        assert_eq!((e.value, e.source), (Some(json!(false)), SettingSource::Default));
        assert!(e.warning.is_some_and(|w| w.contains("expected a JSON object")));
        let e = s.effective_with(&MEMORY_ENABLED, &no_env);
        assert_eq!(e.value, Some(json!(true)), "memory.enabled fails open");
    }

    #[test]
    fn env_spellings() {
        let e = eff(
            json!({}),
            &MEMORY_EXPLAIN_ENABLED,
            &[("CAO_MEMORY_EXPLAIN_ENABLED", "YES")],
        );
        assert_eq!((e.value, e.warning), (Some(json!(true)), None));
        let e = eff(
            json!({}),
            &MEMORY_EXPLAIN_ENABLED,
            &[("CAO_MEMORY_EXPLAIN_ENABLED", "on")],
        );
        assert_eq!(e.value, Some(json!(false)), "reference rule: anything else is false");
        assert!(
            e.warning
                .is_some_and(|w| w.contains("CAO_MEMORY_EXPLAIN_ENABLED=\"on\""))
        );
        let e = eff(json!({}), &MEMORY_PROJECT_ID, &[("CAO_PROJECT_ID", "a/b")]);
        assert_eq!((e.value, e.source), (Some(json!("a/b")), SettingSource::Env));
        assert!(e.warning.is_some_and(|w| w.contains("invalid project id")));
    }

    #[test]
    fn file_project_id_is_trimmed_and_blank_means_unset() {
        let e = eff(json!({"memory": {"project_id": " acme "}}), &MEMORY_PROJECT_ID, &[]);
        assert_eq!((e.value, e.source), (Some(json!("acme")), SettingSource::File));
        let e = eff(json!({"memory": {"project_id": ""}}), &MEMORY_PROJECT_ID, &[]);
        assert_eq!((e.value, e.source, e.warning), (None, SettingSource::Default, None));
        let e = eff(json!({"memory": {"project_id": 7}}), &MEMORY_PROJECT_ID, &[]);
        assert_eq!((e.value, e.source), (None, SettingSource::Default));
        assert!(e.warning.is_some());
    }

    #[test]
    fn accessors_agree_with_effective_values() {
        // The runner's environment may set these variables; compare against the same lookup instead of constants.
        let s = Settings::from_value(json!({"memory": {"lifecycle": {"enabled": true},
            "non_accessing_inspection": true, "explain_enabled": false, "enabled": false}}));
        let real = |k: &'static SettingKey| s.effective(k).value.and_then(|v| v.as_bool());
        assert_eq!(Some(s.lifecycle_enabled()), real(&MEMORY_LIFECYCLE_ENABLED));
        assert_eq!(
            Some(s.non_accessing_inspection()),
            real(&MEMORY_NON_ACCESSING_INSPECTION)
        );
        assert_eq!(Some(s.explain_enabled()), real(&MEMORY_EXPLAIN_ENABLED));
        assert_eq!(Some(s.memory_enabled()), real(&MEMORY_ENABLED));
        if std::env::var_os("CAO_MEMORY_LIFECYCLE_ENABLED").is_none() {
            assert!(s.lifecycle_enabled());
            assert!(!Settings::from_value(json!({"memory": {"lifecycle": "yes"}})).lifecycle_enabled());
        }
    }

    #[test]
    fn parse_value_validates_per_type() {
        assert_eq!(parse_value(&MEMORY_ENABLED, "false"), Ok(json!(false)));
        assert_eq!(parse_value(&MEMORY_PROJECT_ID, "my.proj-1_x"), Ok(json!("my.proj-1_x")));
        for (key, bad) in [
            (&MEMORY_ENABLED, "True"),
            (&MEMORY_ENABLED, "1"),
            (&MEMORY_ENABLED, ""),
            (&MEMORY_PROJECT_ID, ""),
            (&MEMORY_PROJECT_ID, ".."),
            (&MEMORY_PROJECT_ID, "global"),
            (&MEMORY_PROJECT_ID, "a b"),
            (&MEMORY_PROJECT_ID, &"x".repeat(129)),
        ] {
            let err = parse_value(key, bad).expect_err(bad);
            assert!(err.to_string().contains(key.kind.expected()), "{err}");
        }
    }

    #[test]
    fn model_keys_resolve_env_then_file_then_default() {
        let file = json!({"memory": {"model": {"provider": "openai", "timeout_ms": 2000, "command": "claude -p"}}});
        let e = eff(file.clone(), &MEMORY_MODEL_PROVIDER, &[]);
        assert_eq!(
            (e.value, e.source, e.warning),
            (Some(json!("openai")), SettingSource::File, None)
        );
        let e = eff(
            file.clone(),
            &MEMORY_MODEL_PROVIDER,
            &[("CAO_MEMORY_MODEL_PROVIDER", "command")],
        );
        assert_eq!((e.value, e.source), (Some(json!("command")), SettingSource::Env));
        let e = eff(file.clone(), &MEMORY_MODEL_TIMEOUT_MS, &[]);
        assert_eq!((e.value, e.source), (Some(json!(2000)), SettingSource::File));
        let e = eff(file.clone(), &MEMORY_MODEL_COMMAND, &[]);
        assert_eq!(
            (e.value, e.source),
            (Some(json!(["claude", "-p"])), SettingSource::File)
        );
        let e = eff(json!({}), &MEMORY_MODEL_PROVIDER, &[]);
        assert_eq!((e.value, e.source), (Some(json!("none")), SettingSource::Default));
        let e = eff(json!({}), &MEMORY_MODEL_TIMEOUT_MS, &[]);
        assert_eq!((e.value, e.source), (Some(json!(60000)), SettingSource::Default));
        let e = eff(json!({}), &MEMORY_MODEL_URL, &[]);
        assert_eq!((e.value, e.source, e.warning), (None, SettingSource::Default, None));
        // Invalid env and file values fall back to the default with a warning naming the source.
        let e = eff(file, &MEMORY_MODEL_TIMEOUT_MS, &[("CAO_MEMORY_MODEL_TIMEOUT_MS", "0")]);
        assert_eq!((e.value, e.source), (Some(json!(60000)), SettingSource::Default));
        assert!(
            e.warning
                .is_some_and(|w| w.starts_with("CAO_MEMORY_MODEL_TIMEOUT_MS=\"0\" is not"))
        );
        let e = eff(
            json!({"memory": {"model": {"url": "localhost"}}}),
            &MEMORY_MODEL_URL,
            &[],
        );
        assert_eq!((e.value, e.source), (None, SettingSource::Default));
        assert!(
            e.warning
                .is_some_and(|w| w.starts_with("memory.model.url in settings.json is \"localhost\""))
        );
        let e = eff(json!({"memory": {"model": {"name": "  "}}}), &MEMORY_MODEL_NAME, &[]);
        assert_eq!((e.value, e.warning), (None, None), "a blank string is unset");
    }

    #[test]
    fn parse_value_validates_model_keys_and_hides_bad_variable_names() {
        assert_eq!(parse_value(&MEMORY_MODEL_PROVIDER, "command"), Ok(json!("command")));
        assert_eq!(
            parse_value(&MEMORY_MODEL_COMMAND, "claude -p"),
            Ok(json!(["claude", "-p"]))
        );
        assert_eq!(parse_value(&MEMORY_MODEL_TIMEOUT_MS, "1500"), Ok(json!(1500)));
        assert_eq!(
            parse_value(&MEMORY_MODEL_API_KEY_ENV, "OPENAI_API_KEY"),
            Ok(json!("OPENAI_API_KEY"))
        );
        for (key, bad) in [
            (&MEMORY_MODEL_PROVIDER, "gpt"),
            (&MEMORY_MODEL_URL, "127.0.0.1:11434"),
            (&MEMORY_MODEL_NAME, ""),
            (&MEMORY_MODEL_COMMAND, "[]"),
            (&MEMORY_MODEL_TIMEOUT_MS, "0"),
            (&MEMORY_MODEL_TIMEOUT_MS, "-1"),
        ] {
            let err = parse_value(key, bad).expect_err(bad);
            assert!(err.to_string().contains(key.kind.expected()), "{err}");
            assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
        }
        let err = parse_value(&MEMORY_MODEL_API_KEY_ENV, "sk-live-1234567890").expect_err("not a name");
        assert!(!err.to_string().contains("1234567890"), "{err}");
        assert!(err.to_string().contains(HIDDEN_VALUE), "{err}");
    }
}
