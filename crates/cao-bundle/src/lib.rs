//! `cao-bundle`: OKF bundles over the memory store (layer 5; the format itself, pure, is `cao-okf`'s).
//!
//! - [`export`]: a scope's memories as a bundle directory or a reproducible `.tar.gz`;
//! - [`import`]: a bundle directory or archive planned by `cao-okf` and written in batches through the store
//!   (`Store::put_batch`), with the related-memory pass once per batch;
//! - [`bundle`]: reading bundles within hard limits (sizes, counts, paths) and packing archives.
//!
//! Invariants:
//! - An archive or directory is read within [`bundle::MAX_BUNDLE_BYTES`] and [`bundle::MAX_BUNDLE_ENTRIES`]; a member
//!   outside the bundle's root is refused before anything is written.
//! - A dry run writes nothing.

#![cfg_attr(
    test,
    allow(clippy::disallowed_methods, reason = "unit-test setup writes fixture files directly")
)]

pub mod bundle;
pub mod export;
pub mod import;
