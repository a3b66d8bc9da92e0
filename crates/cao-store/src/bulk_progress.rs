//! The progress of bulk work the store does on its own, inside an ordinary call: bringing many topic files into
//! the index at once (the first open of a home written by the reference implementation or copied without its
//! index, thousands of files edited outside the tool). Such work can take seconds on a large home and happens
//! before the call's own answer, so a command-line process installs a [`Progress`] factory once
//! ([`set_bulk_progress`]) and draws a bar on a terminal; every other process shows nothing.
//!
//! Invariant: reporting never changes what the store does; without a factory the work reports to [`NoProgress`].

use crate::types::{NoProgress, Progress};
use std::sync::OnceLock;

/// Makes the reporter of one bulk operation (called on the thread doing the work, once per operation).
pub type ProgressFactory = Box<dyn Fn() -> Box<dyn Progress> + Send + Sync>;

static FACTORY: OnceLock<ProgressFactory> = OnceLock::new();

/// Install, once per process, the factory of the reporters of the store's own bulk work (see the module docs).
/// Returns `false` (and changes nothing) when one is already installed.
pub fn set_bulk_progress(factory: ProgressFactory) -> bool {
    FACTORY.set(factory).is_ok()
}

/// A reporter for one bulk operation: the installed factory's, or [`NoProgress`].
pub(crate) fn bulk_progress() -> Box<dyn Progress> {
    match FACTORY.get() {
        Some(make) => make(),
        None => Box::new(NoProgress),
    }
}
