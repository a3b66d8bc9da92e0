//! Integration tests of the memory inspector: the state machine driven by key presses over a real journal
//! (`common::home`), drawn on ratatui's `TestBackend` and compared with insta snapshots.

#![allow(clippy::unwrap_used)]

mod common;
mod screens;
mod state;
mod vault;
