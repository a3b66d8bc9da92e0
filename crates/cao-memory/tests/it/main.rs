//! `cao-memory` integration tests: the service end to end (files, index, recall, injection, lifecycle, retention,
//! audit, provider files), conformance cases, properties and multi-process races.
//!
//! One test binary per crate (modules below), so the workspace links few test executables.

#![allow(
    clippy::disallowed_methods,
    reason = "test setup writes fixture files directly; the code under test writes through cao_core::fs"
)]

mod bad_input;
mod concurrency;
mod conformance;
mod explain;
mod inject;
mod inject_related;
mod lifecycle;
mod okf;
mod okf_roundtrip;
mod properties;
mod provider_files;
mod read_path;
mod recall;
mod relationship_audit;
mod relationships;
mod retention;
