//! Errors of the bundle format layer: whole-operation refusals. Per-file import problems are not errors but
//! [`crate::import::RejectReason`]s in the plan.

use cao_core::Scope;

/// A refusal of a whole export or import, before anything is planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OkfError {
    /// Import into a scope other than global, project or federated.
    #[error("import target scope must be global, project or federated, got {0}")]
    ImportScope(Scope),
    /// An unknown conflict policy name (cut to 40 characters).
    #[error("conflict policy must be skip, replace or merge, got {0:?}")]
    ConflictPolicy(String),
    /// Export of a private scope without the explicit opt-in.
    #[error("the {0} scope is private; exporting it needs --include-private")]
    PrivateScope(Scope),
    /// A session/agent scope id that is not a safe path segment (it must equal its sanitised form).
    #[error("scope id {0:?} is not a safe path segment ([A-Za-z0-9_-], no leading or trailing - or _)")]
    UnsafeScopeId(String),
    /// Two exported topics map to the same bundle path.
    #[error("two topics map to the bundle path {0}")]
    DuplicateTopic(String),
}
