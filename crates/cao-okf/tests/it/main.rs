//! `cao-okf` integration tests: conformance with the reference's bundles, golden bundles, hostile bundles and
//! round-trip properties.
//!
//! One test binary per crate (modules below), so the workspace links few test executables.

mod conformance;
mod golden;
mod hostile;
mod roundtrip;
