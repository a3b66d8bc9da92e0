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

/// Undo what the related-memory pass derived on every store (each row's `related_keys` back to NULL, its `compiler`
/// edges removed), without audit lines: for tests about hand-made relations, whose fixtures would otherwise also
/// relate lexically similar memories.
pub(crate) fn forget_compiled_relations(svc: &cao_memory::MemoryService, clock: std::sync::Arc<dyn cao_core::Clock>) {
    let rel = cao_lifecycle::RelationshipService::new(svc.storage().clone(), clock);
    use cao_testkit::service::RawStorage;
    for row in svc.raw_index().all_rows().expect("rows") {
        svc.raw_index()
            .set_related_keys(row.scope, row.scope_id.as_deref(), &row.key, None)
            .expect("related_keys");
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
