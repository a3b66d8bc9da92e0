//! `cao-memory`: the [`MemoryService`], the one entry point for storing, recalling and maintaining memories
//! (layer 3; composes `cao-wiki`, `cao-index`, `cao-rank` and `cao-lifecycle` over `cao-core`). It is the
//! embedding API.
//!
//! Structure (the rust-analyzer `ide` pattern):
//! - `store`: the crate-private `Store` (home, wiki layout, index, clock, settings, database identity, supersedes
//!   lookup, external-change pickup) and the write protocol: lock, atomic file write, one index transaction, remove,
//!   access counting, `index.md` flush, repair, the "index current" check, health, and `prepare_read`, the step every
//!   read feature runs first (a removed or replaced database is refused; topic files changed outside the tool are
//!   picked up, at most once per second per process); [`sweep_temp_files`] removes crash leftovers. It uses no feature module, so it can become a crate of
//!   its own (below the features that need it).
//! - Feature modules of free functions over `&Store`: `write` (store, forget, delete, clear), `recall`,
//!   `relevance`, `explain`, `inspect` (list, show), `inject` and `inject_related` (the context block),
//!   `retention`, `export` and `import` (OKF bundles, read and written by `bundle`), `audit` and
//!   `audit_relationships`, `related` (the related-memory pass after every store), `lint` (with `lint_claims`,
//!   `code_search` and `lint_contradiction`), `heal` and `compact` (model-written consolidated articles, accepted
//!   under the pure rules of `compact_rules`), the self-learning features `outcomes` (report/list
//!   outcomes), `lessons` (`store_lesson`) and `promote` (lessons into agent profiles; the rules are `cao-learn`'s),
//!   with
//!   `visibility`, `supersedes` and `eligibility` as shared read rules. Ranking rules are `cao-rank`'s; these
//!   modules only gather candidates and call it.
//! - [`MemoryService`]: a thin facade. Each method resolves the call's settings, checks `memory.enabled` where the
//!   call needs it (after argument validation for recall and explain) and delegates to one feature function.
//!
//! The module graph has no cycles and only the facade (and `provider_files`, which takes a service) reaches the
//! facade; a unit test (`module_graph`) reads the sources and checks both, and that `store` uses only `error` and
//! `types`.
//!
//! A write is: validate every argument (no I/O) -> take the per-topic file lock -> atomic replace of the topic
//! file -> one SQLite transaction (row, FTS rows, index.md dirty mark) -> release. A failure after the file
//! replace is reported as [`MemoryError::PartialWrite`], which names `cao memory repair`.
//!
//! Invariants:
//! - Bad input is rejected before any file or database is touched.
//! - Every topic file on disk parses back to exactly the content that was stored (see `cao-wiki` escaping).
//! - After any sequence of completed calls, the index agrees with the wiki files (`repair` finds nothing).
//! - `index.md` is a derived view: stores only mark its container dirty; [`MemoryService::flush_index_md`]
//!   rewrites dirty ones, so store cost does not grow with the corpus.
//! - Recall is served from the index (metadata + FTS5); the only topic files a read opens are the ones whose stamp
//!   (size, ctime, inode) changed since the index recorded it (the external-edit pickup).
//! - No read answers from a database file that was removed or replaced after the service opened it.
//! - No memory can close or open the `<cao-memory>` block ([`neutralize_delimiters`] in [`render_block`]).
//! - Only the store writes files or index rows (relationship edges are written by `cao-lifecycle`'s service, which
//!   the features obtain through `audit_relationships`).

#![cfg_attr(
    test,
    allow(clippy::disallowed_methods, reason = "unit-test setup writes fixture files directly")
)]

mod audit_relationships;
pub mod auto_compact;
mod backfill;
mod bundle;
mod code_search;
pub mod compact;
pub mod compact_rules;
pub mod decisions;
mod dense;
mod eligibility;
mod explain;
mod explain_table;
mod export;
pub mod heal;
mod import;
mod inject;
mod inject_related;
mod inspect;
mod journal;
mod learning;
mod lesson_writer;
mod lessons;
pub mod lint;
mod lint_claims;
mod lint_contradiction;
mod lint_report;
mod lint_table;
#[cfg(test)]
mod module_graph;
mod outcomes;
mod overview;
mod promote;
pub mod provider_files;
mod recall;
mod related;
mod relevance;
pub mod retention;
mod service;
mod supersedes;
mod types;
mod write;

pub use auto_compact::AutoCompactStep;
pub use backfill::{EMBED_SCHEMA, EmbedReport};
pub use bundle::{MAX_BUNDLE_BYTES, MAX_BUNDLE_ENTRIES, MAX_EXTENSION_BYTES, MAX_TOPIC_FILE_BYTES};
pub use cao_journal::{Worker as SummarizeWorker, WriterFilter};
pub use cao_learn::OutcomeDraft;
pub use cao_okf::{ConflictPolicy, ExportReport, ImportReport};
pub use cao_rank::{
    DEFAULT_EXPLAIN_LIMIT, EXPLAIN_SCHEMA, ExplainCandidate, ExplainReport, Injection, MAX_EXPLAIN_LIMIT, PoolCounts,
    RecencyConstants,
};
pub use cao_store::MemoryError;
pub use cao_store::audit::{AuditEvent, AuditLog};
pub use cao_store::index_recovery::{DamagedIndex, LostTable, recover_damaged_index};
pub use cao_store::{audit, plan_digest, visibility};
pub use cao_store::{sweep_at_startup, sweep_temp_files};
pub use compact::{
    COMPACT_SCHEMA, CompactCounts, CompactReport, CompactRequest, CompactStatus, CompactedTopic, render_compact_text,
};
pub use explain::ExplainRequest;
pub use explain_table::render_explain_table;
pub use export::{EXPORT_SCHEMA, ExportDestination, ExportOutcome, ExportRequest};
pub use heal::{
    ActionStatus, HEAL_SCHEMA, HealAction, HealActionKind, HealCounts, HealReport, HealRequest, WithoutAction,
};
pub use import::{IMPORT_SCHEMA, ImportOutcome, ImportRequest};
pub use inject::{
    AllEligible, CONTEXT_HEADING, ContextRequest, DEFAULT_CONTEXT_BUDGET, EligibilityFilter, INJECTED_SCOPES,
    MAX_CONTEXT_BUDGET, MEMORY_MAX_PER_SCOPE, MEMORY_SCOPE_BUDGET_CHARS, RegistryFilter, neutralize_delimiters,
    render_block, scope_char_cap, validate_context_budget,
};
pub use inject_related::{MAX_RELATED_PER_PRIMARY, RELATED_FANOUT_CAP};
pub use journal::{
    EntryWriter, JournalTarget, PurgeResult, REMINDER_MAX_ROWS, ReadRequest, ReadResult, SEARCH_MAX_HITS,
    SEARCH_QUERY_MAX_BYTES, SearchHit, SearchRequest, SearchResult, SessionSnapshot, SummarizeReport, ViewResult,
    ZoomRequest, ZoomResult, ZoomedEntry, ZoomedLine,
};
pub use learning::{AgentProfileSource, AgentSummary, LessonView};
pub use lesson_writer::LessonWriter;
pub use lessons::LessonRequest;
pub use lint_report::{
    FindingKind, IssueType, LINT_SCHEMA, LintCounts, LintFinding, LintReport, LintRequest, Severity,
};
pub use lint_table::{render_heal_text, render_lint_table};
pub use outcomes::{Outcome, OutcomeList, OutcomeQuery, ReportOutcomeRequest, ReportOutcomeResult};
pub use overview::{ContainerSummary, JournalSummary, SPARK_DAYS};
pub use promote::{
    IneligibleLesson, MAX_CANDIDATES, PROMOTE_SCHEMA, PlannedChange, PromoteRequest, PromotionReport, SkippedChange,
};
pub use provider_files::{
    Provider, ProviderWrite, SkipReason, write_provider_block, write_provider_file, write_provider_file_with,
};
pub use retention::{CleanupReport, ExpiredMemory};
pub use service::MemoryService;

/// The store and its shared types, under the paths the feature modules name.
mod store {
    pub(crate) use cao_store::*;
}

/// The memory system's error.
mod error {
    pub(crate) use cao_store::MemoryError;
}
pub use types::*;
