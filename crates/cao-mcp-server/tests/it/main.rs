//! `cao-mcp-server` integration tests: the stdio binary.
//!
//! One test binary per crate (modules below), so the workspace links few test executables.

#![allow(
    clippy::disallowed_methods,
    reason = "test setup writes fixture files directly; the code under test writes through cao_core::fs"
)]

mod auto_compact;
mod cli;
mod decisions;
mod dense_background;
mod stdio;
mod summarizer;
