//! `cao-memory`: the [`MemoryService`], the one entry point for storing, recalling and maintaining memories
//! (layer 3; composes `cao-wiki`, `cao-index` and `cao-rank` over `cao-core`). It is the embedding API.
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
//! - Recall never reads topic files; it is served from the index (metadata + FTS5).

#![cfg_attr(
    test,
    allow(clippy::disallowed_methods, reason = "unit-test setup writes fixture files directly")
)]

pub mod audit;
mod audit_relationships;
mod error;
mod explain_table;
mod inject;
mod inject_related;
mod lifecycle;
pub mod provider_files;
mod recall;
mod relevance;
pub mod retention;
mod service;
mod types;

pub use audit::{AuditEvent, AuditLog};
pub use error::MemoryError;
pub use inject::{
    AllEligible, CONTEXT_HEADING, ContextRequest, DEFAULT_CONTEXT_BUDGET, EligibilityFilter, INJECTED_SCOPES,
    MEMORY_MAX_PER_SCOPE, MEMORY_SCOPE_BUDGET_CHARS, render_block, scope_char_cap,
};
pub use inject_related::{MAX_RELATED_PER_PRIMARY, RELATED_FANOUT_CAP};
pub use lifecycle::RegistryFilter;
pub use provider_files::{
    Provider, ProviderWrite, SkipReason, write_provider_block, write_provider_file, write_provider_file_with,
};
pub use relevance::{
    DEFAULT_EXPLAIN_LIMIT, EXPLAIN_SCHEMA, ExplainCandidate, ExplainReport, ExplainRequest, Injection,
    MAX_EXPLAIN_LIMIT, PoolCounts, RecencyConstants,
};
pub use retention::{CleanupReport, ExpiredMemory};
pub use service::MemoryService;
pub use types::*;
