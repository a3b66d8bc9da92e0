//! Integration tests of cao-journal (one binary): the view, zoom, summarizing and leases, purge, snapshots, the
//! properties against a replay model, and several processes summarizing one journal.

mod common;
mod multi_process;
mod props;
mod purge;
mod snapshot;
mod summarize;
mod view;
mod zoom;
