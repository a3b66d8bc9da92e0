//! `cao-index` integration tests: schema and migrations, writes and reads, relationships, and an FTS model check.
//!
//! One test binary per crate (modules below), so the workspace links few test executables.

#![allow(
    clippy::disallowed_methods,
    reason = "test setup writes fixture files directly; the code under test writes through cao_core::fs"
)]

mod common;
mod fts_model;
mod ops;
mod relationships;
mod schema;
mod stamps;
mod vectors;
