//! Scopes (where a memory lives) and memory types (a label that never changes where it lives).
//!
//! Source: spec 000 "Memory Scopes", "Memory Types"; spec/reference-facts.md "Ranking" (precedence) and
//! the write-authorisation rule.

use crate::error::CoreError;
use std::fmt;
use std::str::FromStr;

/// Where a memory is stored and who can read it back.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Cross-project facts; `memory/global/wiki/global/`; no scope id.
    Global,
    /// Project facts; `memory/<project_id>/wiki/project/`; scope id = project id. The default scope.
    Project,
    /// Ephemeral notes of one session; `memory/global/wiki/session/<session_name>/`.
    Session,
    /// Role-specific patterns; `memory/global/wiki/agent/<agent_profile>/`.
    Agent,
    /// Machine-wide shared tier; `memory/federated/wiki/federated/`; no scope id.
    Federated,
}

impl Scope {
    /// Every scope, in declaration order.
    pub const ALL: [Scope; 5] = [
        Scope::Global,
        Scope::Project,
        Scope::Session,
        Scope::Agent,
        Scope::Federated,
    ];

    /// Scopes in recall precedence order: session, project, global, agent, federated
    /// (spec/reference-facts.md, "Ranking").
    pub const PRECEDENCE: [Scope; 5] = [
        Scope::Session,
        Scope::Project,
        Scope::Global,
        Scope::Agent,
        Scope::Federated,
    ];

    /// The lowercase wire / on-disk name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Global => "global",
            Scope::Project => "project",
            Scope::Session => "session",
            Scope::Agent => "agent",
            Scope::Federated => "federated",
        }
    }

    /// Whether this scope needs a scope id (project, session, agent) or not (global, federated).
    pub fn needs_scope_id(self) -> bool {
        matches!(self, Scope::Project | Scope::Session | Scope::Agent)
    }

    /// Position in [`Scope::PRECEDENCE`] (0 = first).
    pub fn precedence(self) -> u8 {
        match self {
            Scope::Session => 0,
            Scope::Project => 1,
            Scope::Global => 2,
            Scope::Agent => 3,
            Scope::Federated => 4,
        }
    }

    /// Write rank used by [`scope_write_allowed`]: session 0, project 1, agent 1, global 2, federated 0.
    pub fn write_rank(self) -> u8 {
        match self {
            Scope::Session | Scope::Federated => 0,
            Scope::Project | Scope::Agent => 1,
            Scope::Global => 2,
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scope {
    type Err = CoreError;
    /// Exact lowercase names only; anything else is [`CoreError::InvalidScope`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scope::ALL
            .into_iter()
            .find(|sc| sc.as_str() == s)
            .ok_or_else(|| CoreError::InvalidScope(s.to_owned()))
    }
}

/// Whether a caller acting in scope `caller` may write into scope `target`.
///
/// A caller may write its own scope or any scope of strictly lower write rank; unknown scopes (on either side)
/// are denied. Source: spec/reference-facts.md "Ranking" (write authorisation); conformance
/// `scope_write_allowed.json`. The operator's caller scope defaults to global.
pub fn scope_write_allowed(caller: &str, target: &str) -> bool {
    match (caller.parse::<Scope>(), target.parse::<Scope>()) {
        (Ok(c), Ok(t)) => c == t || t.write_rank() < c.write_rank(),
        _ => false,
    }
}

/// The classification label of a memory. Orthogonal to [`Scope`]: it never changes where a memory lands.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryType {
    /// Architecture notes, project conventions (the default).
    Project,
    /// User preferences, working style.
    User,
    /// Corrections, recurring mistakes to avoid.
    Feedback,
    /// Pointers to external resources, docs, links.
    Reference,
}

impl MemoryType {
    /// Every memory type, in declaration order.
    pub const ALL: [MemoryType; 4] = [
        MemoryType::Project,
        MemoryType::User,
        MemoryType::Feedback,
        MemoryType::Reference,
    ];

    /// The lowercase wire / on-disk name.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryType::Project => "project",
            MemoryType::User => "user",
            MemoryType::Feedback => "feedback",
            MemoryType::Reference => "reference",
        }
    }
}

impl fmt::Display for MemoryType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for MemoryType {
    type Err = CoreError;
    /// Exact lowercase names only; anything else is [`CoreError::InvalidMemoryType`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        MemoryType::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| CoreError::InvalidMemoryType(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_reject_others() {
        for s in Scope::ALL {
            assert_eq!(s.as_str().parse::<Scope>(), Ok(s));
        }
        for t in MemoryType::ALL {
            assert_eq!(t.as_str().parse::<MemoryType>(), Ok(t));
        }
        assert!("Global".parse::<Scope>().is_err());
        assert!("user".parse::<Scope>().is_err(), "user is a type, not a scope");
        assert!("".parse::<MemoryType>().is_err());
    }

    #[test]
    fn precedence_matches_order() {
        for (i, s) in Scope::PRECEDENCE.iter().enumerate() {
            assert_eq!(usize::from(s.precedence()), i);
        }
    }
}
