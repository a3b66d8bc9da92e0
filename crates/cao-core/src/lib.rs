//! `cao-core`: the domain vocabulary of the cao memory system (layer 0; depends on no other cao crate).
//!
//! What lives here:
//! - [`Scope`] (where a memory lives) and [`MemoryType`] (a label that never moves it), their string forms,
//!   scope precedence and the write-authorisation rule ([`scope::scope_write_allowed`]);
//! - the recall options [`SearchMode`] and [`SortBy`];
//! - the retention rules of each scope and memory type ([`retention`]);
//! - identities: [`MemoryRef`] (`scope, scope_id, key`, text form `scope/scope_id/key`), [`SourceKind`] (`native`,
//!   `vault`) and [`Container`] (the wiki container rule), used by every layer that names a memory;
//! - [`Key`] (a validated `^[a-z0-9-]{1,60}$` slug) with the reference's auto-key and sanitising rules, and
//!   [`key::sanitize_scope_id`] / [`key::normalize_tags`];
//! - [`TerminalContext`] (who is calling: terminal id, session, agent profile, provider, cwd) and
//!   [`identity`] (project identity chain: override -> git remote -> cwd hash, with the cwd hash as alias);
//! - [`Settings`] (`settings.json` in the home dir; env > file > default) and [`CaoHome`] (the directory layout root);
//! - [`secret`] (the ordered secret-pattern gate and redaction);
//! - [`Clock`] (injectable time; all timestamps are UTC);
//! - [`lexical`] (the two-field lexical document and the [`lexical::LexicalScorer`] interface between the index's
//!   term statistics and `cao-rank`'s formula), [`text`] (tokeniser, stop words, stems);
//! - [`vault`] (the durable vault rows the reconcile planner and the store share, with their status and
//!   key-source vocabulary);
//! - [`fs`] (the one home of file writes: atomic replacement, private directories, lock files);
//! - [`VERSION`] and [`IMPLEMENTATION`]: what the binaries and `/health` say about which implementation answers.
//!
//! Invariants:
//! - A [`Key`] value always matches `^[a-z0-9-]{1,60}$`, so `<dir>/<key>.md` never leaves `<dir>`.
//! - A resolved scope id for session/agent only contains `[A-Za-z0-9_-]` and is never empty.
//! - The only writes of this crate's own are [`settings::set`] / [`settings::unset`] (atomic, mode 0600, through
//!   [`fs`]); reads are limited to `settings.json`, env and `git config`.

pub mod clock;
pub mod container;
pub mod context;
pub mod display;
pub mod error;
pub mod fs;
pub mod home;
pub mod identity;
pub mod key;
pub mod lexical;
pub mod memory_ref;
pub mod recall;
pub mod retention;
pub mod scope;
pub mod secret;
pub mod settings;
pub mod text;
pub mod time;
pub mod vault;

pub use clock::{Clock, FixedClock, SystemClock};
pub use container::Container;
pub use context::TerminalContext;
pub use error::CoreError;
pub use home::{CaoHome, DatabaseUrl};
pub use key::Key;
pub use memory_ref::{MemoryRef, SourceKind};
pub use recall::{SearchMode, SortBy};
pub use scope::{MemoryType, Scope};
pub use settings::Settings;

/// This implementation's name, as `GET /health` reports it (`"implementation": "cao-rs"`).
pub const IMPLEMENTATION: &str = "cao-rs";

/// What `cao --version`, `cao-server --version` and `cao-mcp-server --version` print after the binary's name:
/// `0.1.0 (cao-rs, Rust)`. The binaries keep the names of the Python reference's console scripts (they are the
/// interface), so the version line says which implementation answers.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (cao-rs, Rust)");
