//! `cao-memory`: the [`MemoryService`], the one entry point for storing, recalling and maintaining memories, and
//! the embedding API (layer 6; over the feature crates `cao-ops`, `cao-maint`, `cao-bundle`, `cao-learn` and
//! `cao-journal`, all over the store interface of `cao-store`).
//!
//! - [`MemoryService`]: a thin facade. Each method resolves the call's settings once (or uses those given to
//!   [`MemoryService::with_settings`]), checks `memory.enabled` where the call needs it (after argument validation
//!   for recall and explain) and delegates to one feature function; no rule lives here.
//! - [`provider_files`]: the memory block written into the files agent CLIs read (`CLAUDE.md`, `AGENTS.md`, Kiro
//!   steering files), only its delimited byte range changed.
//! - The feature crates' request and result types are re-exported under the names embedders use.
//!
//! Invariants (kept by the crates below, stated here for embedders):
//! - Bad input is rejected before any file or database is touched.
//! - After any sequence of completed calls, the index agrees with the wiki files (`repair` finds nothing).
//! - `index.md` is a derived view: stores only mark its container dirty; `MemoryService::flush_index_md` rewrites
//!   dirty ones, so store cost does not grow with the corpus.
//! - No read answers from a database file that was removed or replaced after the service opened it.
//! - No memory can close or open the `<cao-memory>` block ([`neutralize_delimiters`] in [`render_block`]).

#![cfg_attr(
    test,
    allow(clippy::disallowed_methods, reason = "unit-test setup writes fixture files directly")
)]

pub mod provider_files;
mod service;

/// The feature crates' modules under the paths embedders and the edge crates have always named.
pub use cao_maint::{compact, compact_rules, heal, lint, retention};
pub use cao_ops::{auto_compact, decisions, vault, vault_fresh, vault_migrate};

pub use cao_bundle::bundle::{MAX_BUNDLE_BYTES, MAX_BUNDLE_ENTRIES, MAX_EXTENSION_BYTES, MAX_TOPIC_FILE_BYTES};
pub use cao_bundle::export::{EXPORT_SCHEMA, ExportDestination, ExportOutcome, ExportRequest};
pub use cao_bundle::import::{IMPORT_SCHEMA, ImportOutcome, ImportRequest};
pub use cao_journal::{Worker as SummarizeWorker, WriterFilter};
pub use cao_learn::OutcomeDraft;
pub use cao_learn::learning::{AgentProfileSource, AgentSummary, LessonView};
pub use cao_learn::lesson_writer::LessonWriter;
pub use cao_learn::outcomes::{Outcome, OutcomeList, ReportOutcomeResult};
pub use cao_learn::promote::{
    IneligibleLesson, MAX_CANDIDATES, PROMOTE_SCHEMA, PlannedChange, PromoteRequest, PromotionReport, SkippedChange,
};
pub use cao_maint::auto_compact::AutoCompactStep;
pub use cao_maint::backfill::{EMBED_SCHEMA, EmbedReport};
pub use cao_maint::compact::{
    COMPACT_SCHEMA, CompactCounts, CompactReport, CompactRequest, CompactStatus, CompactedTopic, render_compact_text,
};
pub use cao_maint::copy::{COPY_SCHEMA, CopyCount, CopyReport};
pub use cao_maint::heal::{
    ActionStatus, HEAL_SCHEMA, HealAction, HealActionKind, HealCounts, HealReport, HealRequest, WithoutAction,
};
pub use cao_maint::lint_report::{
    FindingKind, IssueType, LINT_SCHEMA, LintCounts, LintFinding, LintReport, LintRequest, Severity,
};
pub use cao_maint::lint_table::{render_heal_text, render_lint_table};
pub use cao_maint::retention::{CleanupReport, ExpiredMemory};
pub use cao_okf::{ConflictPolicy, ExportReport, ImportReport};
pub use cao_ops::explain::ExplainRequest;
pub use cao_ops::explain_table::render_explain_table;
pub use cao_ops::inject::{
    AllEligible, CONTEXT_HEADING, ContextRequest, DEFAULT_CONTEXT_BUDGET, EligibilityFilter, INJECTED_SCOPES,
    MAX_CONTEXT_BUDGET, MEMORY_MAX_PER_SCOPE, MEMORY_SCOPE_BUDGET_CHARS, RegistryFilter, neutralize_delimiters,
    render_block, scope_char_cap, validate_context_budget,
};
pub use cao_ops::inject_related::{MAX_RELATED_PER_PRIMARY, RELATED_FANOUT_CAP};
pub use cao_ops::journal::{
    EntryWriter, JournalTarget, PurgeResult, REMINDER_MAX_ROWS, ReadResult, SEARCH_MAX_HITS, SEARCH_QUERY_MAX_BYTES,
    SearchHit, SearchResult, SessionSnapshot, SummarizeReport, ViewResult, ZoomRequest, ZoomResult, ZoomedEntry,
    ZoomedLine,
};
pub use cao_ops::overview::{ContainerSummary, JournalSummary, SPARK_DAYS};
pub use cao_ops::types::*;
pub use cao_rank::{
    DEFAULT_EXPLAIN_LIMIT, EXPLAIN_SCHEMA, ExplainCandidate, ExplainReport, Injection, MAX_EXPLAIN_LIMIT, PoolCounts,
    RecencyConstants,
};
pub use cao_store::MemoryError;
pub use cao_store::audit::{AuditEvent, AuditLog};
pub use cao_store::index_recovery::{DamagedIndex, LostTable, recover_damaged_index};
pub use cao_store::{DatabaseSchema, database_schema};
pub use cao_store::{audit, plan_digest, visibility};
/// Long-running processes embed written memories in the background and load the model at start (see
/// `cao_store::background`).
pub use cao_store::{enable_background_embedding, limit_index_read_mapping};
pub use cao_store::{set_bulk_progress, sweep_at_startup, sweep_temp_files};
pub use provider_files::{
    Provider, ProviderWrite, SkipReason, write_provider_block, write_provider_file, write_provider_file_with,
};
pub use service::{AutoCompaction, MemoryService, SessionJournal};
