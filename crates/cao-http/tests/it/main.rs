//! `cao-http` integration tests: the router, the REST API, JWT authentication and the settings reads of each
//! request, in process.
//!
//! One test binary per crate (modules below), so the workspace links few test executables.

#![allow(
    clippy::disallowed_methods,
    reason = "test setup writes fixture files directly; the code under test writes through cao_core::fs"
)]

mod api;
mod auth;
mod edge;
mod keep_alive;
mod outcomes;
mod router;
#[cfg(target_os = "linux")]
mod settings_reads;
mod tool_schemas;
mod ui;
