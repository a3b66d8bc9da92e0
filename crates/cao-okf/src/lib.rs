//! `cao-okf`: the OKF bundle format of the cao memory system (layer 1; depends on `cao-core` only).
//!
//! An OKF bundle is a directory (or a tar.gz of one) of markdown files that carries one scope's memories between
//! machines, into git for review, and to and from the Python reference implementation (spec 000 "cao memory
//! export/import", "Read-only mirror"; spec/reference-facts.md "OKF bundles"). This crate is the pure format
//! layer: it renders every file of a bundle from plain data and plans an import from a bundle's bytes. It does
//! no I/O, touches no database and reads no clock; the export and import pipelines gather the data, pass `now`,
//! and execute what this crate decides.
//!
//! - [`export`]: the bundle files of an export ([`export::render_bundle`]), the secret gate decision per topic,
//!   the description rule, and the single-file renderers (topic file, history file, `index.md`, `manifest.md`).
//! - [`import`]: the import plan ([`import::plan_import`], [`import::plan_file`]): per file accepted (key, type,
//!   tags, entry text, entry time, clamp) or rejected with a reason, the conflict policy, and the report.
//! - [`frontmatter`]: the frontmatter split and the bounded YAML reading of an untrusted topic file.
//! - [`path`]: bundle paths (topic and history paths, path validation for directory walks and tar entries,
//!   import classification, prune candidates).
//! - [`pytext`]: the Python string semantics (`splitlines`, `strip`, `json.dumps`) the format's bytes depend on.
//!
//! Invariants:
//! - Rendering is deterministic: the same input gives the same bytes (no clock, no map iteration order).
//! - Everything in a bundle is untrusted on import: nothing here panics on any input, the YAML reader has hard
//!   budgets (size, nesting, aliases), and a rejection reason never contains file content.
//! - A bundle rendered here imports back (through [`import::plan_import`], new keys) to the same key, type, tags,
//!   entry time and body (stripped, line boundaries as `\n`), property-tested; content lines that look like
//!   entry headings, header comments or a See Also heading are the exception: the importer escapes or drops
//!   them, as the reference does.
//! - Bytes, orders, quoting, escaping and report fields follow the reference exactly (conformance
//!   `okf_export.json`, `okf_import.json`); the few deliberate differences are listed in docs/conformance.md.

pub mod error;
pub mod export;
pub mod frontmatter;
pub mod import;
pub mod path;
pub mod pytext;

pub use error::OkfError;
pub use export::{ExportEntry, ExportOptions, ExportReport, ExportTopic, RenderedBundle, render_bundle};
pub use import::{
    BundleEntry, ConflictPolicy, EntryKind, ExistingTopics, FileOutcome, FilePlan, ImportOptions, ImportPlan,
    ImportReport, PlannedWrite, RejectReason, WriteAction, plan_file, plan_import, same_entry_text,
};
