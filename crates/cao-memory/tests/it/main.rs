//! `cao-memory` integration tests: the service end to end (files, index, recall, injection, lifecycle, retention,
//! audit, provider files), conformance cases, properties and multi-process races.
//!
//! One test binary per crate (modules below), so the workspace links few test executables.

#![allow(
    clippy::disallowed_methods,
    reason = "test setup writes fixture files directly; the code under test writes through cao_core::fs"
)]

mod bad_input;
mod compact;
mod concurrency;
mod conformance;
mod decisions;
mod dense;
mod explain;
mod external_edits;
mod inject;
mod inject_related;
mod journal_purge;
mod journal_tools;
mod journal_writes;
mod learning;
mod lifecycle;
mod lint_heal;
mod locomo_parity;
mod okf;
mod okf_roundtrip;
mod postgres;
mod postgres_purge;
mod properties;
mod provider_files;
mod read_path;
mod recall;
mod related;
mod relationship_audit;
mod relationships;
mod retention;
mod storage_faults;
mod store_copy;
mod vault;
mod vault_pickup;

/// Every audit line of `svc`'s store, days in order, oldest first (each with its `\n`): the home's daily files, or
/// the audit table of a PostgreSQL store.
pub(crate) fn audit_text(svc: &cao_memory::MemoryService) -> String {
    svc.audit_log()
        .days()
        .expect("audit log")
        .into_iter()
        .flat_map(|(_, lines)| lines)
        .collect()
}

/// The audit lines of one UTC day (as [`audit_text`]).
pub(crate) fn audit_day(svc: &cao_memory::MemoryService, day: chrono::NaiveDate) -> String {
    let day = day.format("%Y-%m-%d").to_string();
    svc.audit_log()
        .days()
        .expect("audit log")
        .into_iter()
        .filter(|(d, _)| *d == day)
        .flat_map(|(_, lines)| lines)
        .collect()
}

/// Every native row of `svc`'s store, read through the store interface (either backend).
pub(crate) fn all_rows(svc: &cao_memory::MemoryService) -> Result<Vec<cao_store::MemoryRow>, cao_store::StoreError> {
    svc.storage()
        .read()
        .map_err(|e| cao_store::StoreError::Unavailable(e.to_string()))?
        .list(&cao_store::ListFilter {
            visibility: cao_store::Visibility::all(),
            ..Default::default()
        })
}

/// Undo what the related-memory pass derived on every store (each row's `related_keys` back to NULL, its `compiler`
/// edges removed), without audit lines: for tests about hand-made relations, whose fixtures would otherwise also
/// relate lexically similar memories.
pub(crate) fn forget_compiled_relations(svc: &cao_memory::MemoryService, clock: std::sync::Arc<dyn cao_core::Clock>) {
    let rel = cao_lifecycle::RelationshipService::new(svc.storage().clone(), clock);
    cao_testkit::service::clear_related_keys(svc);
    for row in all_rows(svc).expect("rows") {
        rel.recompute(
            row.scope,
            row.scope_id.as_deref(),
            row.key.as_str(),
            cao_lifecycle::RelOrigin::Compiler,
            cao_lifecycle::RelType::RelatesTo,
            Vec::new(),
        )
        .expect("recompute");
    }
}
