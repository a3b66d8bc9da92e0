//! `cao-ops`: the memory operations the tools call, as free functions over the store (layer 4; over `cao-store`,
//! `cao-journal`, `cao-lifecycle`, `cao-rank`). `cao-memory`'s facade delegates to them; the maintenance, bundle
//! and learning crates build on them.
//!
//! - [`write`](mod@write): store (upsert-append, with the related-memory pass and duplicate advice), forget, delete, clear;
//! - [`recall`]: every search mode and order (candidates from the store, every order from `cao-rank`), with
//!   [`relevance`] (the all-terms-first order), [`dense`] (the embedding model's text source) and [`explain`] (the
//!   `cao.memory.explain/1` report; [`explain_table`] formats it);
//! - [`inject`] and [`inject_related`]: the `<cao-memory>` context block;
//! - [`inspect`]: the operator's list and show; [`overview`]: the containers overview;
//! - [`related`]: the related-memory pass after every store;
//! - [`decisions`]: relevance from the decision engine (search enforcement, recall advice, duplicate advice);
//! - [`journal`]: the journal's tool operations (view, zoom, search, read, history, purge, session snapshots and
//!   reminders, the injected view, one summarizing pass);
//! - [`auto_compact`]: the queue of topics automatic compaction waits for (the worker is `cao-maint`'s);
//! - shared read rules: [`supersedes`], [`eligibility`], and [`audit_relationships`] (the audited relationship
//!   service); the request and result shapes in [`types`];
//! - [`vault`]: the Obsidian vault over the store (configuration, scan, reconcile and rebuild, status, writes into
//!   the managed folder).
//! - [`vault_fresh`]: where a vault row comes from and whether its file changed since it was indexed.
//! - [`vault_migrate`]: moving native memories into the managed folder, with receipts and their rollback.
//!
//! Invariants:
//! - Every argument is validated before any I/O: a refused call writes nothing.
//! - Every read starts with `Store::read` (a replaced database is refused; edits made outside the tool are picked
//!   up); list, show (non-accessing), explain, view and zoom take no write transaction.
//! - Ranking rules are `cao-rank`'s: these modules gather candidates and call it.
//! - No memory can close or open the `<cao-memory>` block ([`inject::neutralize_delimiters`]).

#![cfg_attr(
    test,
    allow(clippy::disallowed_methods, reason = "unit-test setup writes fixture files directly")
)]

pub mod audit_relationships;
pub mod auto_compact;
pub mod decisions;
pub mod dense;
pub mod eligibility;
pub mod explain;
pub mod explain_table;
pub mod inject;
pub mod inject_related;
pub mod inspect;
pub mod journal;
#[cfg(test)]
mod module_graph;
pub mod overview;
pub mod recall;
pub mod related;
pub mod relevance;
pub mod supersedes;
pub mod types;
pub mod vault;
pub mod vault_fresh;
pub mod vault_migrate;
pub mod write;
