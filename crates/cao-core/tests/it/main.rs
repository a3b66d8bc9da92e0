//! `cao-core` integration tests: the reference's conformance cases and the secret-gate forms beyond them.
//!
//! One test binary per crate (modules below), so the workspace links few test executables.

#![allow(
    clippy::disallowed_methods,
    reason = "test setup writes fixture files directly; the code under test writes through cao_core::fs"
)]

mod conformance;
mod secret_forms;
