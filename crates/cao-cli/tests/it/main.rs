//! `cao` integration tests: golden transcripts of the real binary against temp homes seeded through the
//! real service.
//!
//! One test binary per crate (modules below), so the workspace links few test executables.

#![allow(
    clippy::disallowed_methods,
    reason = "test setup writes fixture files directly; the code under test writes through cao_core::fs"
)]

mod bad_input;
mod bundle_cli;
mod cleanup_cli;
mod common;
mod compact_cli;
mod config_cli;
mod context_cli;
mod context_terminal_cli;
mod decisions_cli;
mod dense_cli;
mod explain_cli;
mod hardening_cli;
mod inject_cli;
mod inspect_cli;
mod journal_cli;
mod learning_cli;
mod lifecycle_e2e;
mod lint_cli;
mod maintenance_cli;
mod memory_cli;
mod reference_home;
mod relationships_cli;
mod setup_cli;
mod store_copy_cli;
mod vault_cli;
