//! `cao-tui`: the memory inspector (spec 001 "The inspector"), a terminal view of the journal's mechanism as it
//! runs: which lines the agent's view holds, what each summarizes, what merges next, and delete or purge on the
//! newest entry of a memory. Edge layer (4): ratatui and crossterm live here; `cao memory inspect` starts it.
//!
//! Parts:
//! - [`source`]: where it reads and writes ([`Source`]; [`LocalSource`] over `cao-memory` and `cao-journal`'s
//!   inspector functions, which hold every rule: merge order, ready pairs, leases, whose entry a session wrote);
//! - [`state`]: the state machine ([`State`]): rows, expansion, selection, search and reveal with the zoom path,
//!   modes, twice-press delete and purge;
//! - [`mod@render`] and [`detail`]: pure drawing of a [`State`] on a ratatui frame (tested on ratatui's `TestBackend`);
//! - [`term`]: the terminal loop (raw mode, mouse, the 2 s re-read while summaries are pending, OSC 52, `$EDITOR`).
//!
//! Invariants: drawing never changes the store; delete and purge need a second press of the same key on the same
//! entry, and only on the newest entry of a memory; memory text is untrusted and drawn without control characters;
//! the terminal is restored on every exit.

pub mod detail;
mod error;
pub mod render;
pub mod source;
pub mod state;
pub mod term;

pub use error::TuiError;
pub use render::render;
pub use source::{Hit, Loaded, LocalSource, Source, VaultMark};
pub use state::{Key, Mode, State};
pub use term::run;
