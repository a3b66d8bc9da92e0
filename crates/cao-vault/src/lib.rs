//! `cao-vault`: the Obsidian vault as a knowledge source of the cao memory system (layer 1; depends on `cao-core`
//! only). Everything of the vault that needs no memory store: configuration, what a note is, identity, the one
//! confined scanner, links, reconcile planning, the managed-folder writer and migration planning. The store side
//! (indexing vault rows, recall, forget, the CLI commands) builds on these types. The rules are the reference's,
//! recorded in `spec/vault-facts.md` and the `vault_*.json` conformance cases.
//!
//! - [`config`]: `memory.vault` of `settings.json` validated exactly as the reference does (strict types, unknown
//!   keys refused at every level, canonical root, refused system roots, folder and mapping rules, fail-closed), the
//!   `CAO_MEMORY_VAULT_ENABLED` kill switch, config and binding warnings; [`binding`]: which scope a vault mapping
//!   serves.
//! - [`note`]: normalised note text, the frontmatter split and parse (bounded YAML 1.1, [`yaml`]), the `cao` block,
//!   the fields a note contributes; [`identity`]: derived keys, note uids, collision keys; [`finding`]: the 38
//!   finding codes and their severities.
//! - [`path`]: vault-relative paths and exclusion patterns; [`scan`]: the confined directory walk and reads
//!   (never following a link out of the root, never reading `.obsidian`, `.trash`, `.git` or `_cao-*`, size and
//!   count limits, each refusal a finding); [`links`]: wikilink and `cao.links` extraction and resolution into
//!   edges of origin `vault`.
//! - [`reconcile`]: the pure plan of a reconcile from a scan and the indexed vault state (adds, updates,
//!   removals, renames, exclusions, metadata rows, edges, folded findings, the report).
//! - [`recall`]: the body a recalled vault note shows; [`status`]: the durable part of the status report.
//! - [`writer`]: rendering and publishing notes of the managed folder (foreign frontmatter bytes kept, confined
//!   atomic replacement through `cao_core::fs::atomic_write_at`); [`migrate`]: planning the move of native
//!   memories into it (sections within budget, edges as `cao.links`, lossy fields, receipt skip reasons).
//!
//! Invariants:
//! - Only [`scan`] and [`writer`] touch the file system; every read is confined to the vault root (opened
//!   directory by directory without following links, checked against what was listed), every write goes through
//!   `cao_core::fs`.
//! - Findings and errors never carry note content: codes, pattern names, counts and paths only.
//! - No function panics on any note or configuration input.

pub mod binding;
pub mod config;
pub mod finding;
pub mod hash;
pub mod identity;
pub mod links;
pub mod migrate;
pub mod note;
pub mod path;
pub mod recall;
pub mod reconcile;
pub mod scan;
pub mod status;
pub mod writer;
pub mod yaml;

pub use finding::{Finding, FindingCode, SecretGate, Severity};
