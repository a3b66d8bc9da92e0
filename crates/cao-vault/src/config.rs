//! The vault configuration: `memory.vault` in `settings.json` (spec/vault-facts.md section 1; conformance
//! `vault_config.json`).
//!
//! [`validate`] reads the JSON value exactly as the reference's model does: strict types (no coercion: `"true"`,
//! `1`, `4096.0` are type errors), unknown keys refused at all three levels, every field error of a level reported
//! together (in field order, then the unknown keys), and the cross-field rules of a level checked only when its
//! fields are valid, first failure wins. Each problem is a [`ConfigIssue`] with the reference's location, type and
//! message (the text after pydantic's `Value error, ` prefix).
//!
//! Fail closed: a configuration that does not validate means no vault at all; callers report
//! [`VaultConfigError`] ("vault configuration unavailable: ...") and never fall back to a partial config.
//! `CAO_MEMORY_VAULT_ENABLED` can only switch a valid configuration off ([`apply_kill_switch`]).
//!
//! The validated root is canonical (`~` expanded, made absolute, symlinks resolved), an existing directory, not a
//! system directory ([`BLOCKED_EXACT`], [`BLOCKED_TREES`]), not the user's home, and it neither contains nor lies
//! inside the memory base, the CAO home or the graph export root.

use crate::finding::SecretGate;
use crate::path::{fold, is_within};
use cao_core::Scope;
use regex::Regex;
use serde::Serialize;
use serde_json::{Map, Value};
use std::fmt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::LazyLock;

/// The environment variable that can switch a configured vault off (`0`, `false`, `no`, `off`, trimmed, any case).
pub const ENV_ENABLED: &str = "CAO_MEMORY_VAULT_ENABLED";
/// Default of `max_recall_body_chars`.
pub const DEFAULT_MAX_RECALL_BODY_CHARS: u32 = 4096;
/// Largest `max_recall_body_chars`.
pub const MAX_RECALL_BODY_CHARS: u32 = 65536;
/// Above this `max_recall_body_chars` (the per-scope injection budget) only a warning is logged.
pub const INJECTION_BUDGET_CHARS: u32 = 1000;
/// Default of `max_note_bytes` (256 KiB).
pub const DEFAULT_MAX_NOTE_BYTES: u64 = 262_144;
/// Largest `max_note_bytes` (1 MiB).
pub const MAX_NOTE_BYTES: u64 = 1_048_576;
/// Default of `max_notes`.
pub const DEFAULT_MAX_NOTES: u32 = 20_000;
/// Largest `max_notes`.
pub const MAX_NOTES: u32 = 100_000;
/// Default of `max_frontmatter_bytes` (16 KiB).
pub const DEFAULT_MAX_FRONTMATTER_BYTES: u32 = 16_384;
/// Largest `max_frontmatter_bytes` (64 KiB).
pub const MAX_FRONTMATTER_BYTES: u32 = 65_536;

/// Roots refused when they resolve exactly to one of these.
pub const BLOCKED_EXACT: [&str; 18] = [
    "/",
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/etc",
    "/var",
    "/tmp",
    "/dev",
    "/proc",
    "/sys",
    "/root",
    "/boot",
    "/lib",
    "/lib64",
    "/private/etc",
    "/private/var",
    "/private/tmp",
];

/// Roots refused when they resolve to a path beneath one of these (`/dev/shm` excepted).
pub const BLOCKED_TREES: [&str; 16] = [
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/etc",
    "/dev",
    "/proc",
    "/sys",
    "/boot",
    "/root",
    "/lib",
    "/lib64",
    "/usr/lib",
    "/usr/lib64",
    "/var/spool/cron",
    "/private/etc",
];

/// The validated `memory.vault` object, defaults filled in. Serialises to the reference's shape (`cao config get
/// memory.vault`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VaultSettings {
    /// `enabled` (default false). See [`apply_kill_switch`].
    pub enabled: bool,
    /// `max_recall_body_chars`: 1..=65536, default 4096.
    pub max_recall_body_chars: u32,
    /// `vaults`: at most one in this release.
    pub vaults: Vec<VaultConfig>,
}

impl Default for VaultSettings {
    fn default() -> Self {
        VaultSettings {
            enabled: false,
            max_recall_body_chars: DEFAULT_MAX_RECALL_BODY_CHARS,
            vaults: Vec::new(),
        }
    }
}

impl VaultSettings {
    /// The vault in use: the configured one when `enabled`, else `None`.
    pub fn active(&self) -> Option<&VaultConfig> {
        if self.enabled { self.vaults.first() } else { None }
    }
}

/// One vault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VaultConfig {
    /// `^[a-z0-9][a-z0-9-]{0,31}$`.
    pub id: String,
    /// The canonical root directory.
    pub root: PathBuf,
    /// The one folder CAO writes (vault-relative, segments `^[A-Za-z0-9._-]+$`), inside the writable mapping.
    pub managed_folder: String,
    /// Exclusion patterns (see [`crate::path::Excludes`]).
    pub exclude: Vec<String>,
    /// Largest note read, in bytes (1..=1 MiB, default 256 KiB).
    pub max_note_bytes: u64,
    /// Most notes read per scan (1..=100,000, default 20,000).
    pub max_notes: u32,
    /// Largest frontmatter, in UTF-8 bytes of the raw YAML (1..=64 KiB, default 16 KiB).
    pub max_frontmatter_bytes: u32,
    /// Folder-to-scope mappings.
    pub mappings: Vec<Mapping>,
}

impl VaultConfig {
    /// The index of the mapping `relpath` lies in (mapping folders never overlap), if any.
    pub fn mapping_of(&self, relpath: &str) -> Option<usize> {
        self.mappings.iter().position(|m| is_within(relpath, &m.folder))
    }

    /// The writable mapping (exactly one in a valid configuration).
    pub fn writable_mapping(&self) -> Option<&Mapping> {
        self.mappings.iter().find(|m| m.writable)
    }
}

/// A scope a mapping may serve (session and federated cannot be mapped).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MappedScope {
    /// `global`.
    Global,
    /// `project`.
    Project,
    /// `agent`.
    Agent,
}

impl MappedScope {
    /// The memory scope.
    pub fn scope(self) -> Scope {
        match self {
            MappedScope::Global => Scope::Global,
            MappedScope::Project => Scope::Project,
            MappedScope::Agent => Scope::Agent,
        }
    }

    /// The wire string.
    pub fn as_str(self) -> &'static str {
        self.scope().as_str()
    }
}

/// One mapping: a vault folder bound to one memory scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mapping {
    /// Vault-relative folder (may contain spaces and any Unicode).
    pub folder: String,
    /// The scope it serves.
    pub scope: MappedScope,
    /// Required for project and agent, absent for global; project ids are canonical (alias table applied).
    pub scope_id: Option<String>,
    /// `false`: the folder is inert (not scanned, recalled, injected or written).
    pub index: bool,
    /// Rows of this mapping go to automatic injection.
    pub inject: bool,
    /// The managed folder's mapping (exactly one).
    pub writable: bool,
    /// What a secret in a note's body does.
    pub secret_gate: SecretGate,
    /// Notes with more than one hard link are read (default: refused).
    pub allow_hardlinks: bool,
    /// The project scope id as configured, when the alias table replaced it (for the `cwd_hash_scope_id` warning).
    #[serde(skip)]
    pub configured_scope_id: Option<String>,
}

/// One validation problem, as the reference reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigIssue {
    /// Dotted location (`vaults.0.mappings.1.folder`; empty for the whole object).
    pub loc: String,
    /// The pydantic error type (`value_error`, `bool_type`, `int_type`, `string_type`, `list_type`,
    /// `literal_error`, `missing`, `extra_forbidden`, `model_type`).
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The message (for `value_error`, the text after `Value error, `).
    pub msg: String,
}

/// Why no vault configuration is available.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VaultConfigError {
    /// `memory.vault` is present but not a JSON object.
    #[error("memory.vault must be an object")]
    NotAnObject,
    /// The object does not validate.
    #[error("{}", describe(.0))]
    Invalid(Vec<ConfigIssue>),
    /// The project alias table could not be read.
    #[error("project alias lookup failed: {0}")]
    AliasLookup(String),
}

fn describe(issues: &[ConfigIssue]) -> String {
    let n = issues.len();
    let mut s = format!("{n} validation error{} for memory.vault", if n == 1 { "" } else { "s" });
    for i in issues {
        let loc = if i.loc.is_empty() { "memory.vault" } else { &i.loc };
        s.push_str(&format!("; {loc}: {} [type={}]", i.msg, i.kind));
    }
    s
}

/// What a project scope id is in the project alias table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectLookup {
    /// Neither a known project id nor an alias.
    Unknown,
    /// A known (canonical) project id.
    Canonical,
    /// An alias of `canonical` (`kind` as recorded, e.g. `cwd_hash`).
    Alias {
        /// The canonical project id.
        canonical: String,
        /// The alias kind.
        kind: String,
    },
}

/// The project alias table, supplied by the store.
pub trait ProjectDirectory {
    /// What `id` is.
    ///
    /// Errors: the table cannot be read (the configuration is then unavailable: fail closed).
    fn lookup(&self, id: &str) -> Result<ProjectLookup, String>;
}

/// A project alias table held in memory: `(alias, canonical, kind)` rows.
#[derive(Debug, Clone, Default)]
pub struct StaticProjects {
    /// The rows.
    pub aliases: Vec<(String, String, String)>,
}

impl ProjectDirectory for StaticProjects {
    fn lookup(&self, id: &str) -> Result<ProjectLookup, String> {
        if let Some((_, canonical, kind)) = self.aliases.iter().find(|(a, _, _)| a == id) {
            return Ok(ProjectLookup::Alias {
                canonical: canonical.clone(),
                kind: kind.clone(),
            });
        }
        Ok(if self.aliases.iter().any(|(_, c, _)| c == id) {
            ProjectLookup::Canonical
        } else {
            ProjectLookup::Unknown
        })
    }
}

/// The directories a vault root must keep clear of, and the alias table.
pub struct ConfigContext<'a> {
    /// The user's home directory (`$HOME`).
    pub user_home: PathBuf,
    /// The CAO home (`CAO_HOME`).
    pub cao_home: PathBuf,
    /// The graph export root (`CAO_GRAPH_EXPORT_ROOT`, default `<CAO home>/graph-exports`).
    pub graph_export_root: PathBuf,
    /// The project alias table.
    pub projects: &'a dyn ProjectDirectory,
}

impl<'a> ConfigContext<'a> {
    /// The context of this process: `$HOME`, the given CAO home, `CAO_GRAPH_EXPORT_ROOT` or its default.
    pub fn from_env(cao_home: &Path, projects: &'a dyn ProjectDirectory) -> ConfigContext<'a> {
        let user_home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/"), PathBuf::from);
        let graph_export_root = std::env::var_os("CAO_GRAPH_EXPORT_ROOT")
            .filter(|v| !v.is_empty())
            .map_or_else(|| cao_home.join("graph-exports"), PathBuf::from);
        ConfigContext {
            user_home,
            cao_home: cao_home.to_path_buf(),
            graph_export_root,
            projects,
        }
    }
}

/// The vault configuration from a `settings.json` object: `memory.vault` absent (or the file unreadable, which
/// `cao_core::Settings` turns into an empty object) means the defaults (disabled).
///
/// Errors: as [`validate`].
pub fn from_settings(
    settings: &cao_core::Settings,
    ctx: &ConfigContext<'_>,
) -> Result<VaultSettings, VaultConfigError> {
    match settings.file_value("memory.vault") {
        None => Ok(VaultSettings::default()),
        Some(v) => validate(v, ctx),
    }
}

/// `CAO_MEMORY_VAULT_ENABLED`: `0`, `false`, `no`, `off` (trimmed, any case) switch the vault off; any other value,
/// `true` included, changes nothing.
pub fn apply_kill_switch(mut settings: VaultSettings, env_value: Option<&str>) -> VaultSettings {
    if env_value.is_some_and(|v| matches!(v.trim().to_lowercase().as_str(), "0" | "false" | "no" | "off")) {
        settings.enabled = false;
    }
    settings
}

static ID_RE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"^[a-z0-9][a-z0-9-]{0,31}$").ok());
static SCOPE_ID_RE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"^[a-zA-Z0-9._-]{1,128}$").ok());
static SEGMENT_RE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"^[A-Za-z0-9._-]+$").ok());

fn re_match(re: &LazyLock<Option<Regex>>, s: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(s))
}

/// Collects the issues of one validation.
struct Issues(Vec<ConfigIssue>);

impl Issues {
    fn push(&mut self, loc: &str, kind: &'static str, msg: impl Into<String>) {
        self.0.push(ConfigIssue {
            loc: loc.to_owned(),
            kind,
            msg: msg.into(),
        });
    }
    fn value(&mut self, loc: &str, msg: impl Into<String>) {
        self.push(loc, "value_error", msg);
    }
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}

/// A strict bool field.
fn strict_bool(obj: &Map<String, Value>, name: &str, default: bool, loc: &str, issues: &mut Issues) -> Option<bool> {
    match obj.get(name) {
        None => Some(default),
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => {
            issues.push(&join(loc, name), "bool_type", "Input should be a valid boolean");
            None
        }
    }
}

/// A strict int field in `1..=max`.
fn strict_int(
    obj: &Map<String, Value>,
    name: &str,
    default: u64,
    max: u64,
    loc: &str,
    issues: &mut Issues,
) -> Option<u64> {
    match obj.get(name) {
        None => Some(default),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => match n.as_u64() {
            Some(v) if (1..=max).contains(&v) => Some(v),
            _ => {
                issues.value(
                    &join(loc, name),
                    format!("{name} must be a positive integer no greater than {max}"),
                );
                None
            }
        },
        Some(_) => {
            issues.push(&join(loc, name), "int_type", "Input should be a valid integer");
            None
        }
    }
}

/// A strict string field; `Err(())` after recording an issue, `Ok(None)` when absent.
fn strict_str<'v>(
    obj: &'v Map<String, Value>,
    name: &str,
    loc: &str,
    issues: &mut Issues,
) -> Result<Option<&'v str>, ()> {
    match obj.get(name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => {
            issues.push(&join(loc, name), "string_type", "Input should be a valid string");
            Err(())
        }
    }
}

fn required_str<'v>(obj: &'v Map<String, Value>, name: &str, loc: &str, issues: &mut Issues) -> Option<&'v str> {
    match strict_str(obj, name, loc, issues) {
        Ok(Some(s)) => Some(s),
        Ok(None) => {
            issues.push(&join(loc, name), "missing", "Field required");
            None
        }
        Err(()) => None,
    }
}

fn extras(obj: &Map<String, Value>, known: &[&str], loc: &str, issues: &mut Issues) {
    for k in obj.keys() {
        if !known.contains(&k.as_str()) {
            issues.push(&join(loc, k), "extra_forbidden", "Extra inputs are not permitted");
        }
    }
}

/// The relative POSIX path rules of `folder` and `managed_folder`.
fn posix_rule(name: &str, value: &str) -> Result<(), String> {
    if value.is_empty()
        || value.contains('\0')
        || value.contains('\\')
        || value.starts_with('/')
        || value.ends_with('/')
    {
        return Err(format!(
            "{name} must be a relative POSIX path without a trailing separator"
        ));
    }
    if value.split('/').any(str::is_empty) {
        return Err(format!("{name} must not contain empty path segments"));
    }
    if value.split('/').any(|s| s == "." || s == "..") {
        return Err(format!("{name} must not contain '.' or '..' path segments"));
    }
    Ok(())
}

/// Python's `repr` of a string (single quotes unless the text has a `'` and no `"`).
fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::new();
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Validate a `memory.vault` value (module docs).
///
/// Errors: [`VaultConfigError::NotAnObject`], [`VaultConfigError::Invalid`] with every issue, or
/// [`VaultConfigError::AliasLookup`] when the alias table fails.
pub fn validate(value: &Value, ctx: &ConfigContext<'_>) -> Result<VaultSettings, VaultConfigError> {
    let Value::Object(obj) = value else {
        return Err(VaultConfigError::NotAnObject);
    };
    let mut issues = Issues(Vec::new());
    let enabled = strict_bool(obj, "enabled", false, "", &mut issues);
    let max_recall = strict_int(
        obj,
        "max_recall_body_chars",
        u64::from(DEFAULT_MAX_RECALL_BODY_CHARS),
        u64::from(MAX_RECALL_BODY_CHARS),
        "",
        &mut issues,
    );
    let mut vaults = Vec::new();
    let mut vaults_ok = true;
    match obj.get("vaults") {
        None => {}
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                match validate_vault(item, &format!("vaults.{i}"), ctx, &mut issues)? {
                    Some(v) => vaults.push(v),
                    None => vaults_ok = false,
                }
            }
        }
        Some(_) => {
            issues.push("vaults", "list_type", "Input should be a valid list");
            vaults_ok = false;
        }
    }
    extras(obj, &["enabled", "max_recall_body_chars", "vaults"], "", &mut issues);
    let (Some(enabled), Some(max_recall), true, true) = (enabled, max_recall, vaults_ok, issues.0.is_empty()) else {
        return Err(VaultConfigError::Invalid(issues.0));
    };
    if enabled && vaults.is_empty() {
        issues.value("", "enabled=true requires at least one vault");
    } else if vaults.len() > 1 {
        issues.value("", "vaults supports only one vault in release one");
    }
    if !issues.0.is_empty() {
        return Err(VaultConfigError::Invalid(issues.0));
    }
    let max_recall_body_chars = u32::try_from(max_recall).unwrap_or(DEFAULT_MAX_RECALL_BODY_CHARS);
    if max_recall_body_chars > INJECTION_BUDGET_CHARS {
        tracing::debug!(
            max_recall_body_chars,
            "memory.vault.max_recall_body_chars is above the per-scope injection budget ({INJECTION_BUDGET_CHARS})"
        );
    }
    Ok(VaultSettings {
        enabled,
        max_recall_body_chars,
        vaults,
    })
}

fn validate_vault(
    value: &Value,
    loc: &str,
    ctx: &ConfigContext<'_>,
    issues: &mut Issues,
) -> Result<Option<VaultConfig>, VaultConfigError> {
    let Value::Object(obj) = value else {
        issues.push(loc, "model_type", "Input should be a valid dictionary");
        return Ok(None);
    };
    let before = issues.0.len();
    let id = required_str(obj, "id", loc, issues).and_then(|id| {
        if re_match(&ID_RE, id) {
            Some(id.to_owned())
        } else {
            issues.value(&join(loc, "id"), "id must match ^[a-z0-9][a-z0-9-]{0,31}$");
            None
        }
    });
    let root = required_str(obj, "root", loc, issues).and_then(|raw| match validate_root(raw, &ctx.user_home) {
        Ok(p) => Some(p),
        Err(msg) => {
            issues.value(&join(loc, "root"), msg);
            None
        }
    });
    let managed_folder = required_str(obj, "managed_folder", loc, issues).and_then(|mf| {
        let checked = posix_rule("managed_folder", mf).and_then(|()| {
            if mf.split('/').all(|s| re_match(&SEGMENT_RE, s)) {
                Ok(())
            } else {
                Err(format!("managed_folder must match ^[A-Za-z0-9._-]+$: {}", py_repr(mf)))
            }
        });
        match checked {
            Ok(()) => Some(mf.to_owned()),
            Err(msg) => {
                issues.value(&join(loc, "managed_folder"), msg);
                None
            }
        }
    });
    let exclude = validate_exclude(obj.get("exclude"), &join(loc, "exclude"), issues);
    let max_note_bytes = strict_int(
        obj,
        "max_note_bytes",
        DEFAULT_MAX_NOTE_BYTES,
        MAX_NOTE_BYTES,
        loc,
        issues,
    );
    let max_notes = strict_int(
        obj,
        "max_notes",
        u64::from(DEFAULT_MAX_NOTES),
        u64::from(MAX_NOTES),
        loc,
        issues,
    );
    let max_fm = strict_int(
        obj,
        "max_frontmatter_bytes",
        u64::from(DEFAULT_MAX_FRONTMATTER_BYTES),
        u64::from(MAX_FRONTMATTER_BYTES),
        loc,
        issues,
    );
    let mut mappings = Vec::new();
    let mut mappings_ok = true;
    match obj.get("mappings") {
        None => {}
        Some(Value::Array(items)) => {
            for (j, item) in items.iter().enumerate() {
                match validate_mapping(item, &format!("{loc}.mappings.{j}"), issues) {
                    Some(m) => mappings.push(m),
                    None => mappings_ok = false,
                }
            }
        }
        Some(_) => {
            issues.push(&join(loc, "mappings"), "list_type", "Input should be a valid list");
            mappings_ok = false;
        }
    }
    extras(
        obj,
        &[
            "id",
            "root",
            "managed_folder",
            "exclude",
            "max_note_bytes",
            "max_notes",
            "max_frontmatter_bytes",
            "mappings",
        ],
        loc,
        issues,
    );
    let (Some(id), Some(root), Some(managed_folder), Some(exclude), Some(mnb), Some(mn), Some(mfb), true) = (
        id,
        root,
        managed_folder,
        exclude,
        max_note_bytes,
        max_notes,
        max_fm,
        mappings_ok,
    ) else {
        return Ok(None);
    };
    if issues.0.len() != before {
        return Ok(None);
    }
    let mut vault = VaultConfig {
        id,
        root,
        managed_folder,
        exclude,
        max_note_bytes: mnb,
        max_notes: u32::try_from(mn).unwrap_or(MAX_NOTES),
        max_frontmatter_bytes: u32::try_from(mfb).unwrap_or(MAX_FRONTMATTER_BYTES),
        mappings,
    };
    if let Some(msg) = cross_field(&mut vault, ctx)? {
        issues.value(loc, msg);
        return Ok(None);
    }
    Ok(Some(vault))
}

fn validate_exclude(value: Option<&Value>, loc: &str, issues: &mut Issues) -> Option<Vec<String>> {
    let items = match value {
        None => return Some(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            issues.push(loc, "list_type", "Input should be a valid list");
            return None;
        }
    };
    let mut out = Vec::with_capacity(items.len());
    let mut ok = true;
    for (j, item) in items.iter().enumerate() {
        match item {
            Value::String(s) => out.push(s.clone()),
            _ => {
                issues.push(&format!("{loc}.{j}"), "string_type", "Input should be a valid string");
                ok = false;
            }
        }
    }
    if !ok {
        return None;
    }
    for p in &out {
        if p.is_empty() {
            issues.value(loc, "exclude patterns must be non-empty strings");
            return None;
        }
        if p.starts_with('/') || p.contains('\\') || p.split('/').any(|s| s == "." || s == "..") {
            issues.value(
                loc,
                "exclude patterns must be relative and not contain '.' or '..' path segments",
            );
            return None;
        }
    }
    Some(out)
}

fn validate_mapping(value: &Value, loc: &str, issues: &mut Issues) -> Option<Mapping> {
    let Value::Object(obj) = value else {
        issues.push(loc, "model_type", "Input should be a valid dictionary");
        return None;
    };
    let before = issues.0.len();
    let folder = required_str(obj, "folder", loc, issues).and_then(|f| match posix_rule("folder", f) {
        Ok(()) => Some(f.to_owned()),
        Err(msg) => {
            issues.value(&join(loc, "folder"), msg);
            None
        }
    });
    let scope = match obj.get("scope") {
        None => {
            issues.push(&join(loc, "scope"), "missing", "Field required");
            None
        }
        Some(v) => match v.as_str() {
            Some("global") => Some(MappedScope::Global),
            Some("project") => Some(MappedScope::Project),
            Some("agent") => Some(MappedScope::Agent),
            _ => {
                issues.push(
                    &join(loc, "scope"),
                    "literal_error",
                    "Input should be 'global', 'project' or 'agent'",
                );
                None
            }
        },
    };
    let scope_id = match obj.get("scope_id") {
        None | Some(Value::Null) => Some(None),
        Some(Value::String(s)) => {
            if re_match(&SCOPE_ID_RE, s) && !s.chars().all(|c| c == '.') {
                Some(Some(s.clone()))
            } else {
                issues.value(
                    &join(loc, "scope_id"),
                    "scope_id must match ^[a-zA-Z0-9._-]{1,128}$ and not be only dots",
                );
                None
            }
        }
        Some(_) => {
            issues.push(&join(loc, "scope_id"), "string_type", "Input should be a valid string");
            None
        }
    };
    let index = strict_bool(obj, "index", true, loc, issues);
    let inject = strict_bool(obj, "inject", false, loc, issues);
    let writable = strict_bool(obj, "writable", false, loc, issues);
    let secret_gate = match obj.get("secret_gate") {
        None => Some(SecretGate::Reject),
        Some(v) => match v.as_str() {
            Some("reject") => Some(SecretGate::Reject),
            Some("warn") => Some(SecretGate::Warn),
            _ => {
                issues.push(
                    &join(loc, "secret_gate"),
                    "literal_error",
                    "Input should be 'reject' or 'warn'",
                );
                None
            }
        },
    };
    let allow_hardlinks = strict_bool(obj, "allow_hardlinks", false, loc, issues);
    extras(
        obj,
        &[
            "folder",
            "scope",
            "scope_id",
            "index",
            "inject",
            "writable",
            "secret_gate",
            "allow_hardlinks",
        ],
        loc,
        issues,
    );
    let (
        Some(folder),
        Some(scope),
        Some(scope_id),
        Some(index),
        Some(inject),
        Some(writable),
        Some(secret_gate),
        Some(allow_hardlinks),
    ) = (
        folder,
        scope,
        scope_id,
        index,
        inject,
        writable,
        secret_gate,
        allow_hardlinks,
    )
    else {
        return None;
    };
    if issues.0.len() != before {
        return None;
    }
    let problem = match (scope, &scope_id) {
        (MappedScope::Global, Some(_)) => Some("scope_id is forbidden for global scope".to_owned()),
        (MappedScope::Project | MappedScope::Agent, None) => {
            Some(format!("scope_id is required for {} scope", scope.as_str()))
        }
        _ if writable && !index => Some("writable=true requires index=true".to_owned()),
        _ if inject && !index => Some("inject=true requires index=true".to_owned()),
        _ => None,
    };
    if let Some(msg) = problem {
        issues.value(loc, msg);
        return None;
    }
    Some(Mapping {
        folder,
        scope,
        scope_id,
        index,
        inject,
        writable,
        secret_gate,
        allow_hardlinks,
        configured_scope_id: None,
    })
}

/// `path` made absolute against the process's working directory, `.` and `..` removed lexically (Python
/// `os.path.abspath`).
fn lexical_absolute(path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// `~` expansion, absolute, symlinks resolved, existing directory, not a system directory.
fn validate_root(raw: &str, user_home: &Path) -> Result<PathBuf, String> {
    let expanded = if raw == "~" {
        user_home.to_path_buf()
    } else if let Some(rest) = raw.strip_prefix("~/") {
        user_home.join(rest)
    } else {
        PathBuf::from(raw)
    };
    // Unlike the reference (which makes a relative root absolute against the working directory), a relative root
    // is refused: every process would resolve it against its own working directory, so an agent started inside a
    // cloned repository holding a folder of that name would index and recall that repository's notes.
    if !expanded.is_absolute() {
        return Err(format!(
            "root must be an absolute path or start with ~/ (a relative root would depend on each process's working \
             directory): {raw}"
        ));
    }
    let absolute = lexical_absolute(&expanded);
    let Ok(resolved) = std::fs::canonicalize(&absolute) else {
        return Err(format!("root does not exist: {raw}"));
    };
    let text = resolved.to_string_lossy();
    if BLOCKED_EXACT.contains(&text.as_ref()) {
        return Err(format!(
            "root not allowed: {raw} (resolves to blocked system path {text})"
        ));
    }
    if let Some(tree) = BLOCKED_TREES
        .iter()
        .find(|t| is_within(&text, t) && !is_within(&text, "/dev/shm"))
    {
        return Err(format!(
            "root not allowed: {raw} (resolves to path beneath blocked system path {tree})"
        ));
    }
    if !resolved.is_dir() {
        return Err(format!("root is not a directory: {raw}"));
    }
    Ok(resolved)
}

/// Whether two paths name the same directory: by device and inode when both exist, else by their NFC + casefolded
/// text.
fn same_place(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => fold(&a.to_string_lossy()) == fold(&b.to_string_lossy()),
    }
}

/// Whether `root` (canonical) contains or lies inside `dir`.
fn overlaps(root: &Path, dir: &Path) -> bool {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| lexical_absolute(dir));
    root.ancestors().any(|a| same_place(a, &dir)) || dir.ancestors().any(|a| same_place(a, root))
}

/// The cross-field rules of a vault whose fields are valid (module docs); the first failure's message.
fn cross_field(vault: &mut VaultConfig, ctx: &ConfigContext<'_>) -> Result<Option<String>, VaultConfigError> {
    let home = std::fs::canonicalize(&ctx.user_home).unwrap_or_else(|_| ctx.user_home.clone());
    if same_place(&vault.root, &home) {
        return Ok(Some("root must not be the user's home directory".into()));
    }
    for (name, dir) in [
        ("MEMORY_BASE_DIR", ctx.cao_home.join("memory")),
        ("CAO_HOME_DIR", ctx.cao_home.clone()),
        ("graph export root", ctx.graph_export_root.clone()),
    ] {
        if overlaps(&vault.root, &dir) {
            return Ok(Some(format!("root must not overlap {name}")));
        }
    }
    let folded: Vec<String> = vault.mappings.iter().map(|m| fold(&m.folder)).collect();
    for (i, a) in folded.iter().enumerate() {
        for b in &folded[i + 1..] {
            if is_within(a, b) || is_within(b, a) {
                return Ok(Some("mappings[].folder values must not overlap".into()));
            }
        }
    }
    let managed = fold(&vault.managed_folder);
    let holders: Vec<&Mapping> = vault
        .mappings
        .iter()
        .zip(&folded)
        .filter(|(_, f)| is_within(&managed, f))
        .map(|(m, _)| m)
        .collect();
    if holders.len() != 1 || !holders[0].writable {
        return Ok(Some(
            "managed_folder must lie inside exactly one writable mapping".into(),
        ));
    }
    if vault.mappings.iter().filter(|m| m.writable).count() != 1 {
        return Ok(Some("only the managed_folder mapping may be writable".into()));
    }
    for m in &mut vault.mappings {
        if m.scope != MappedScope::Project {
            continue;
        }
        let Some(id) = m.scope_id.clone() else { continue };
        if let ProjectLookup::Alias { canonical, .. } =
            ctx.projects.lookup(&id).map_err(VaultConfigError::AliasLookup)?
        {
            m.configured_scope_id = Some(id);
            m.scope_id = Some(canonical);
        }
    }
    let identity = |m: &Mapping| -> (MappedScope, String) {
        let id = m.scope_id.clone().unwrap_or_default();
        (m.scope, if m.scope == MappedScope::Project { fold(&id) } else { id })
    };
    for (i, a) in vault.mappings.iter().enumerate() {
        if vault.mappings[i + 1..].iter().any(|b| identity(a) == identity(b)) {
            return Ok(Some("mappings must not resolve to the same (scope, scope_id)".into()));
        }
    }
    Ok(None)
}

/// The configuration warnings status shows: one per mapping with `secret_gate: warn` and `inject: true`.
pub fn config_warnings(settings: &VaultSettings) -> Vec<String> {
    settings
        .vaults
        .iter()
        .flat_map(|v| &v.mappings)
        .filter(|m| m.secret_gate == SecretGate::Warn && m.inject)
        .map(|m| format!("mapping '{}' has secret_gate='warn' with inject=true", m.folder))
        .collect()
}

/// One binding warning (status only).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct BindingWarning {
    /// `agent_scope_recall_only`, `orphaned_mapping`, `cwd_hash_scope_id` or `unmapped_project_write`.
    pub kind: String,
    /// The mapping's folder.
    pub mapping: String,
    /// The message.
    pub detail: String,
}

impl fmt::Display for BindingWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

/// The binding warnings of a configuration, sorted by kind, mapping and detail: every agent mapping is recall-only;
/// a project scope id that is neither a known project id nor an alias is orphaned; a project scope id configured as
/// a cwd-hash alias names the alias. (`unmapped_project_write` is a process counter the store adds.)
///
/// Errors: the alias table cannot be read.
pub fn binding_warnings(
    settings: &VaultSettings,
    projects: &dyn ProjectDirectory,
) -> Result<Vec<BindingWarning>, String> {
    let mut out = Vec::new();
    for m in settings.vaults.iter().flat_map(|v| &v.mappings) {
        match m.scope {
            MappedScope::Agent => out.push(BindingWarning {
                kind: "agent_scope_recall_only".into(),
                mapping: m.folder.clone(),
                detail: format!(
                    "agent-scoped mapping '{}' is recall-only and is not injected in this release",
                    m.folder
                ),
            }),
            MappedScope::Project => {
                let id = m.scope_id.as_deref().unwrap_or("");
                if let Some(configured) = &m.configured_scope_id {
                    out.push(BindingWarning {
                        kind: "cwd_hash_scope_id".into(),
                        mapping: m.folder.clone(),
                        detail: format!("project scope_id '{configured}' is an alias of project id '{id}'"),
                    });
                } else if projects.lookup(id)? == ProjectLookup::Unknown {
                    out.push(BindingWarning {
                        kind: "orphaned_mapping".into(),
                        mapping: m.folder.clone(),
                        detail: format!("project scope_id '{id}' is not a known project id or alias"),
                    });
                }
            }
            MappedScope::Global => {}
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_root_is_refused_whatever_the_working_directory_holds() {
        let home = std::env::temp_dir();
        for raw in ["vault", "./vault", "../vault", "."] {
            let err = validate_root(raw, &home).expect_err(raw);
            assert!(err.starts_with("root must be an absolute path"), "{raw}: {err}");
        }
        assert!(
            validate_root("~/definitely-not-a-vault-here", &home)
                .expect_err("missing")
                .starts_with("root does not exist")
        );
    }

    #[test]
    fn kill_switch_only_turns_off() {
        let on = VaultSettings {
            enabled: true,
            ..VaultSettings::default()
        };
        for off in ["0", " FALSE ", "no", "Off"] {
            assert!(!apply_kill_switch(on.clone(), Some(off)).enabled, "{off}");
        }
        for keep in ["1", "true", "", "yes"] {
            assert!(apply_kill_switch(on.clone(), Some(keep)).enabled, "{keep}");
        }
        assert!(!apply_kill_switch(VaultSettings::default(), Some("true")).enabled);
    }

    #[test]
    fn python_repr() {
        assert_eq!(py_repr("my folder"), "'my folder'");
        assert_eq!(py_repr("it's"), "\"it's\"");
        assert_eq!(py_repr("a\tb"), "'a\\tb'");
    }
}
