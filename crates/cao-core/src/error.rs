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
    /// A project id override does not match `^[a-zA-Z0-9._-]{1,128}$`.
    #[error(
        "invalid project id {0:?}: must match ^[a-zA-Z0-9._-]{{1,128}}$ (from CAO_PROJECT_ID or memory.project_id)"
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
}
