//! The audit seam of relationship changes: [`RelationshipService`](crate::RelationshipService) reports every change
//! it makes to an optional [`RelationshipAudit`] sink, one [`RelationshipChange`] per edge.
//!
//! The sink is a trait so this crate (layer 2) does not depend on the audit log's writer, which lives with the
//! memory service (`cao_memory::audit`, layer 3): the memory service implements the trait and hands out
//! relationship services with the sink attached (`MemoryService::relationships(actor)`), so every caller (CLI,
//! HTTP API, forget) records its changes through one writer.
//!
//! Invariants: a change is reported only after it was committed; reports are content-free (id, keys, scope, scope
//! id, type and a short outcome word; never attributes or confidence); a sink must not fail the operation.

use cao_core::Scope;

/// What happened to an edge. Wire names: [`RelationshipEvent::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelationshipEvent {
    /// An edge was created or re-created (`create`).
    Create,
    /// A producer recompute added, updated or removed an edge (outcome `added` / `updated` / `removed`).
    Recompute,
    /// An edge was promoted to active.
    Promote,
    /// An edge was rejected.
    Reject,
    /// An edge was soft-deleted (status `deleted`).
    Delete,
    /// An edge was removed because one of its ends was forgotten.
    Purge,
}

impl RelationshipEvent {
    /// The wire name: `relationship_create`, `relationship_recompute`, `relationship_promote`,
    /// `relationship_reject`, `relationship_delete`, `relationship_purge`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "relationship_create",
            Self::Recompute => "relationship_recompute",
            Self::Promote => "relationship_promote",
            Self::Reject => "relationship_reject",
            Self::Delete => "relationship_delete",
            Self::Purge => "relationship_purge",
        }
    }
}

/// One changed edge, borrowed for the duration of [`RelationshipAudit::record`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelationshipChange<'a> {
    /// What happened.
    pub event: RelationshipEvent,
    /// Edge id.
    pub id: &'a str,
    /// Scope of both ends.
    pub scope: Scope,
    /// Scope id of both ends; `None` for global and federated.
    pub scope_id: Option<&'a str>,
    /// Source memory key.
    pub source_key: &'a str,
    /// Target memory key.
    pub target_key: &'a str,
    /// Edge type (`relates_to`, `contradiction`, `supersedes`; a stored value outside the vocabulary is reported as
    /// stored).
    pub rel_type: &'a str,
    /// A short result word: the edge's status after create/promote/reject/delete, `added` / `updated` / `removed`
    /// for a recompute, `purged` for a purge.
    pub outcome: &'a str,
}

/// Receives every committed relationship change. Implementations must be cheap and infallible from the caller's
/// point of view (log their own failures).
pub trait RelationshipAudit: Send + Sync + std::fmt::Debug {
    /// Record one change.
    fn record(&self, change: &RelationshipChange<'_>);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_wire_names() {
        for (e, n) in [
            (RelationshipEvent::Create, "relationship_create"),
            (RelationshipEvent::Recompute, "relationship_recompute"),
            (RelationshipEvent::Promote, "relationship_promote"),
            (RelationshipEvent::Reject, "relationship_reject"),
            (RelationshipEvent::Delete, "relationship_delete"),
            (RelationshipEvent::Purge, "relationship_purge"),
        ] {
            assert_eq!(e.as_str(), n);
        }
    }
}
