//! `cao-client` integration tests.
//!
//! One test binary per crate (modules below), so the workspace links few test executables.

mod remote;
