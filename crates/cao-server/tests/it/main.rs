//! `cao-server` integration tests: the HTTP binary (flags, authentication, retention, a replica of a shared
//! PostgreSQL database).
//!
//! One test binary per crate (modules below), so the workspace links few test executables.

#![allow(
    clippy::disallowed_methods,
    reason = "test setup writes fixture files directly; the code under test writes through cao_core::fs"
)]

mod auth;
mod cli;
mod harness;
mod postgres;
mod retention;
