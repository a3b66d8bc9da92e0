//! Relationship changes in the daily audit log: the memory service's implementation of
//! [`cao_lifecycle::RelationshipAudit`] and [`relationships`] (behind `MemoryService::relationships`), the
//! relationship service every caller (CLI, HTTP API, forget/delete/clear/retention purges) writes edges through.
//!
//! Why here: the audit writer ([`cao_store::audit::AuditLog`]) belongs to the memory home, which this layer owns;
//! `cao-lifecycle` (layer 2) only defines the sink trait and reports each committed change, so no layer depends
//! upward and no caller can change an edge without its line (short of building a bare
//! `RelationshipService::new`, which benchmarks do).
//!
//! Line: `{"ts":"2026-04-16T10:30:00.123Z","event":"relationship_create","id":"<uuid>","source_key":"a",
//! "target_key":"b","type":"relates_to","scope":"project","scope_id":"abc","actor":"t-1","outcome":"active"}` + `\n`.
//! Content-free (never attributes or confidence); every string bounded as the other audit lines.

use cao_core::Clock;
use cao_lifecycle::{LifecycleError, RelationshipAudit, RelationshipChange, RelationshipService};
use cao_store::MemoryError;
use cao_store::Store;
use cao_store::audit::{AuditLog, bounded};
use chrono::SecondsFormat;
use serde::Serialize;
use std::sync::Arc;

#[derive(Serialize)]
struct Line {
    ts: String,
    event: &'static str,
    id: String,
    source_key: String,
    target_key: String,
    #[serde(rename = "type")]
    rel_type: String,
    scope: &'static str,
    scope_id: Option<String>,
    actor: String,
    outcome: String,
}

/// The JSON line (ending with `\n`) of one change made by `actor` at `ts`.
pub fn change_line(ts: chrono::DateTime<chrono::Utc>, actor: &str, c: &RelationshipChange<'_>) -> String {
    let line = Line {
        ts: ts.to_rfc3339_opts(SecondsFormat::Millis, true),
        event: c.event.as_str(),
        id: bounded(c.id),
        source_key: bounded(c.source_key),
        target_key: bounded(c.target_key),
        rel_type: bounded(c.rel_type),
        scope: c.scope.as_str(),
        scope_id: c.scope_id.filter(|s| !s.is_empty()).map(bounded),
        actor: bounded(actor),
        outcome: bounded(c.outcome),
    };
    let mut s = serde_json::to_string(&line).unwrap_or_else(|_| format!("{{\"event\":\"{}\"}}", line.event));
    s.push('\n');
    s
}

/// The sink: writes each change to the home's audit log as `actor`, stamped by the store's clock.
struct AuditSink {
    clock: Arc<dyn Clock>,
    log: AuditLog,
    actor: String,
}

impl std::fmt::Debug for AuditSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditSink")
            .field("dir", &self.log.dir())
            .field("actor", &self.actor)
            .finish()
    }
}

impl RelationshipAudit for AuditSink {
    fn record(&self, change: &RelationshipChange<'_>) {
        let ts = self.clock.now();
        if let Err(e) = self.log.append_line(ts, &change_line(ts, &self.actor, change)) {
            tracing::warn!(
                error = %e,
                event = change.event.as_str(),
                "could not write the audit log line; the relationship change itself succeeded"
            );
        }
    }
}

/// The relationship service over `store`'s index and clock, recording every change it makes (create, recompute,
/// promote, reject, soft delete, purge) in the audit log as `actor` (a terminal id, an agent profile, or
/// `operator`; see [`cao_store::audit::actor_of`]).
pub fn relationships(store: &Store, actor: &str) -> RelationshipService {
    let sink = AuditSink {
        clock: Arc::clone(store.clock()),
        log: cao_store::audit::log_of(store),
        actor: actor.to_owned(),
    };
    RelationshipService::new(store.clone(), Arc::clone(store.clock())).with_audit(Arc::new(sink))
}

/// A relationship failure inside a memory operation: index failures keep their kind; anything else (not expected
/// from a purge) is reported as invalid input.
pub fn lifecycle_error(e: LifecycleError) -> MemoryError {
    match e {
        LifecycleError::Store(e) => MemoryError::Store(e),
        other => MemoryError::Invalid(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cao_core::Scope;
    use cao_lifecycle::RelationshipEvent;
    use chrono::TimeZone;

    #[test]
    fn line_has_the_documented_fields_and_no_content() {
        let ts = chrono::Utc
            .with_ymd_and_hms(2026, 4, 16, 10, 30, 0)
            .single()
            .expect("valid");
        let change = RelationshipChange {
            event: RelationshipEvent::Purge,
            id: "r-1",
            scope: Scope::Global,
            scope_id: None,
            source_key: "a",
            target_key: "b",
            rel_type: "relates_to",
            outcome: "purged",
        };
        let line = change_line(ts, "operator", &change);
        assert!(line.ends_with('\n') && line.matches('\n').count() == 1, "{line:?}");
        let v: serde_json::Value = serde_json::from_str(&line).expect("json");
        assert_eq!(
            v,
            serde_json::json!({"ts": "2026-04-16T10:30:00.000Z", "event": "relationship_purge", "id": "r-1",
                "source_key": "a", "target_key": "b", "type": "relates_to", "scope": "global", "scope_id": null,
                "actor": "operator", "outcome": "purged"})
        );
    }
}
