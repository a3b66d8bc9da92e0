//! `cao-maint`: maintenance of the memory store, as free functions over it (layer 5; over `cao-store` and
//! `cao-ops`).
//!
//! - [`lint`]: orphan pages (files without rows and rows without files, `index.md`), stale claims checked with an
//!   in-process repository search ([`code_search`], ripgrep's `ignore` walker), poisoned access counts, dense
//!   keys, and model-judged contradictions ([`lint_contradiction`]); the report's shapes in [`lint_report`], its
//!   claims in [`lint_claims`], the tables in [`lint_table`];
//! - [`heal`]: one fix per issue type, under the heal lock, audited, whatever it deletes kept recoverable;
//! - [`compact`]: model-written consolidated articles accepted under the compiler's rules ([`compact_rules`],
//!   pure), and [`auto_compact`], the worker of automatic compaction;
//! - [`retention`]: the cleanup of expired memories (the rules are `cao_core::retention`'s);
//! - [`backfill`]: embedding the memories that have no vector (`cao memory embed`);
//! - [`copy`]: `cao store copy`, a whole store moved to another backend through the store interface.
//!
//! Invariants:
//! - Lint reads and writes nothing but its report (the pickup of outside edits aside).
//! - Heal and compaction change memories only through the store's content protocol, each change audited; an apply
//!   named by a reviewed plan's digest applies only that plan.

#![cfg_attr(
    test,
    allow(clippy::disallowed_methods, reason = "unit-test setup writes fixture files directly")
)]

pub mod auto_compact;
pub mod backfill;
pub mod code_search;
pub mod compact;
pub mod compact_rules;
pub mod copy;
pub mod heal;
pub mod lint;
pub mod lint_claims;
pub mod lint_contradiction;
pub mod lint_report;
pub mod lint_table;
pub mod retention;
