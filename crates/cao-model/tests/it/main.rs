//! `cao-model` integration tests: the `command` provider against fake model programs and the `openai` provider
//! against a local OpenAI-compatible endpoint.
//!
//! One test binary per crate (modules below), so the workspace links few test executables.

#![allow(
    clippy::disallowed_methods,
    reason = "test setup writes fake model programs directly; the code under test writes no file"
)]

mod command;
mod openai;
