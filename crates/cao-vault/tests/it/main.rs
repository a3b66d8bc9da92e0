//! `cao-vault` integration tests: conformance with the reference's `vault_*.json` cases and hostile vault trees
//! built in temporary directories.
//!
//! One test binary per crate (modules below).
#![allow(
    clippy::disallowed_methods,
    reason = "test setup writes fixture files and trees directly"
)]

mod conformance_config;
mod conformance_migrate;
mod conformance_pure;
mod conformance_reconcile;
mod conformance_scan;
mod hostile;
mod support;
