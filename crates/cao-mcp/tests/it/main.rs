//! `cao-mcp` integration tests: the self-learning tools through the tool call path (`MemoryTools::execute`, as
//! stdio and `/mcp` run them): the reference's outcome cases, the caller rules, the disabled payloads.
//!
//! One test binary per crate (modules below), so the workspace links few test executables.

#![allow(clippy::disallowed_methods, reason = "test setup writes fixture files directly")]

mod arguments;
mod learning_tools;
