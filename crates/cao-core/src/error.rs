//! Errors of the domain layer.

/// A domain rule was violated by caller input. Every variant names the offending value so the
/// message is actionable on its own (it is shown to agents and operators verbatim).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoreError {
    /// `scope` is not one of global, project, session, agent, federated.
    #[error("invalid scope {0:?}: expected one of global, project, session, agent, federated")]
    InvalidScope(String),
    /// `memory_type` is not one of project, user, feedback, reference.
    #[error("invalid memory_type {0:?}: expected one of project, user, feedback, reference")]
    InvalidMemoryType(String),
    /// A key sanitised to nothing, or (strict form) does not match `^[a-z0-9-]{1,60}$`.
    #[error("invalid key {0:?}: {1}")]
    InvalidKey(String, &'static str),
    /// A memory identity's text form is not `scope/key` or `scope/scope_id/key` (see
    /// [`crate::memory_ref::MemoryRef`]).
    #[error("invalid memory reference {0:?}: {1}")]
    InvalidMemoryRef(String, &'static str),
    /// A `source_kind` that is not `native` or `vault`.
    #[error("invalid source_kind {0:?}: expected native or vault")]
    InvalidSourceKind(String),
    /// A project id override does not match `^[a-zA-Z0-9._-]{1,128}$`.
    #[error(
        "invalid project id {0:?}: must match ^[a-zA-Z0-9._-]{{1,128}}$ and not be global, federated, . or .. (from CAO_PROJECT_ID or memory.project_id)"
    )]
    InvalidProjectId(String),
    /// A session/agent/project scope was requested but the terminal context cannot supply its id.
    #[error("cannot resolve scope_id for scope {scope}: {missing} is not known in this terminal context")]
    UnresolvableScopeId {
        /// The scope that needed an id.
        scope: &'static str,
        /// What was missing (e.g. `session_name (CAO_SESSION_NAME)`).
        missing: &'static str,
    },
    /// `settings.json` could not be parsed, or a setting has the wrong type.
    #[error("invalid settings: {0}")]
    InvalidSettings(String),
    /// A setting name that is not in [`crate::settings::KEYS`].
    #[error("unknown setting {name:?}; known keys: {known}")]
    UnknownSetting {
        /// The name given.
        name: String,
        /// Every known key, comma-separated.
        known: String,
    },
    /// A value that does not fit the setting's type or pattern.
    #[error("invalid value {value:?} for {key}: expected {expected}")]
    InvalidSettingValue {
        /// The setting.
        key: &'static str,
        /// The value given.
        value: String,
        /// The type or pattern expected.
        expected: &'static str,
    },
    /// `settings.json` cannot be updated without losing data (unreadable, not JSON, not an object, or a parent of
    /// the key holds a non-object value). Nothing was written.
    #[error("refusing to update {path}: {reason}; nothing was written")]
    SettingsUnusable {
        /// The settings file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Writing `settings.json` (or creating its directory or lock file) failed.
    #[error("cannot write {path}: {reason}")]
    SettingsWrite {
        /// The settings file.
        path: String,
        /// The I/O error.
        reason: String,
    },
}
