//! `cao-learn` integration tests: the reference's Learned Patterns cases through the pure editor and through the
//! promotion writer on real files, properties of the block edit, the built-in profiles.
//!
//! One test binary per crate (modules below), so the workspace links few test executables.

#![allow(clippy::disallowed_methods, reason = "test setup writes fixture files directly")]

mod builtins;
mod conformance;
mod properties;
