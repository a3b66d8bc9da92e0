//! Terminal context: who is calling, and how each scope's `scope_id` is resolved from it.
//!
//! For the stdio MCP server it comes from the environment (`CAO_TERMINAL_ID`, `CAO_SESSION_NAME`,
//! `CAO_AGENT_PROFILE`, `CAO_PROVIDER`, `CAO_PROJECT_ID`, and the process cwd); for `cao-server` from request
//! headers (`X-CAO-*`). Source: spec 000 "Storing into each scope"; design.md "Processes and concurrency".

use crate::error::CoreError;
use crate::identity::{self, ProjectIdentity};
use crate::key::sanitize_scope_id;
use crate::scope::Scope;
use crate::settings::{Settings, env_nonempty};
use std::path::PathBuf;

/// What the caller's terminal knows about itself. Every field is optional; a scope that needs a missing field
/// cannot be resolved ([`CoreError::UnresolvableScopeId`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TerminalContext {
    /// The terminal id (`CAO_TERMINAL_ID`).
    pub terminal_id: Option<String>,
    /// The session name (`CAO_SESSION_NAME`); the scope id of `session`.
    pub session_name: Option<String>,
    /// The agent profile (`CAO_AGENT_PROFILE`); the scope id of `agent`.
    pub agent_profile: Option<String>,
    /// The provider (`CAO_PROVIDER`: claude_code, codex, kiro_cli, ...).
    pub provider: Option<String>,
    /// The working directory; the project identity is derived from it.
    pub cwd: Option<PathBuf>,
    /// An explicit project id (`CAO_PROJECT_ID` or the `X-CAO-Project-Id` header); beats `memory.project_id`.
    pub project_id: Option<String>,
}

impl TerminalContext {
    /// Read the context of this process from its environment and cwd.
    pub fn from_env() -> Self {
        Self {
            terminal_id: env_nonempty("CAO_TERMINAL_ID"),
            session_name: env_nonempty("CAO_SESSION_NAME"),
            agent_profile: env_nonempty("CAO_AGENT_PROFILE"),
            provider: env_nonempty("CAO_PROVIDER"),
            cwd: std::env::current_dir().ok(),
            project_id: env_nonempty("CAO_PROJECT_ID"),
        }
    }

    /// The project identity: explicit project id > `memory.project_id` > git remote > cwd hash.
    ///
    /// Errors: [`CoreError::InvalidProjectId`] for a malformed override; [`CoreError::UnresolvableScopeId`] when
    /// there is neither an override nor a cwd.
    pub fn project(&self, settings: &Settings) -> Result<ProjectIdentity, CoreError> {
        let override_id = self.project_id.clone().or_else(|| settings.project_id_override());
        match (&self.cwd, override_id) {
            (Some(cwd), o) => identity::resolve_project(cwd, o.as_deref()),
            (None, Some(o)) => {
                identity::validate_project_id(&o)?;
                Ok(ProjectIdentity {
                    project_id: o,
                    source: identity::ProjectIdSource::Override,
                    alias: None,
                })
            }
            (None, None) => Err(CoreError::UnresolvableScopeId {
                scope: "project",
                missing: "cwd (or CAO_PROJECT_ID)",
            }),
        }
    }

    /// The session scope id (sanitised), if a session name is known.
    pub fn session_id(&self) -> Option<String> {
        self.session_name.as_deref().map(sanitize_scope_id)
    }

    /// The agent scope id (sanitised), if an agent profile is known.
    pub fn agent_id(&self) -> Option<String> {
        self.agent_profile.as_deref().map(sanitize_scope_id)
    }

    /// The scope id a write into `scope` uses: `None` for global/federated, else the resolved id.
    ///
    /// Errors: [`CoreError::UnresolvableScopeId`] naming what is missing; [`CoreError::InvalidProjectId`].
    pub fn scope_id_for(&self, scope: Scope, settings: &Settings) -> Result<Option<String>, CoreError> {
        match scope {
            Scope::Global | Scope::Federated => Ok(None),
            Scope::Project => Ok(Some(self.project(settings)?.project_id)),
            Scope::Session => self.session_id().map(Some).ok_or(CoreError::UnresolvableScopeId {
                scope: "session",
                missing: "session_name (CAO_SESSION_NAME)",
            }),
            Scope::Agent => self.agent_id().map(Some).ok_or(CoreError::UnresolvableScopeId {
                scope: "agent",
                missing: "agent_profile (CAO_AGENT_PROFILE)",
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_context_is_an_error_not_a_guess() {
        let ctx = TerminalContext::default();
        let s = Settings::default();
        assert_eq!(ctx.scope_id_for(Scope::Global, &s), Ok(None));
        assert!(matches!(
            ctx.scope_id_for(Scope::Session, &s),
            Err(CoreError::UnresolvableScopeId { .. })
        ));
        assert!(matches!(
            ctx.scope_id_for(Scope::Agent, &s),
            Err(CoreError::UnresolvableScopeId { .. })
        ));
    }

    #[test]
    fn ids_are_sanitised() {
        let ctx = TerminalContext {
            session_name: Some("a/../b c".into()),
            ..Default::default()
        };
        assert_eq!(
            ctx.scope_id_for(Scope::Session, &Settings::default()),
            Ok(Some("abc".into()))
        );
    }
}
