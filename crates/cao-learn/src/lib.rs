//! `cao-learn`: the self-learning loop (layer 5; over `cao-store` and `cao-ops`). Spec 004; spec/reference-facts.md
//! "Outcomes, lessons, promotion"; cases in `conformance/reference/outcomes.json` and `learned_patterns.json`.
//!
//! The rules, which need no memory store:
//! - [`outcome`]: validating a reported outcome (trim, caps, the 0..100 score, the reference's errors) and the
//!   listing limit;
//! - [`profile`]: agent profiles, markdown with YAML frontmatter, looked up in the agent directories then among
//!   the [`builtin`] profiles (`retrospector`, `memory_manager`; and the `cao-learning` skill text), with their
//!   `capabilities` (`store_lesson` authorises cross-agent lessons);
//! - [`learned`]: the "Learned Patterns" block of a profile: parsing, rendering and itemized add/update/remove
//!   deltas that change only the block's byte range;
//! - [`gate`]: which agent-scope memories may be promoted;
//! - [`profile_file`]: reading a profile for editing and writing it back atomically through symlinks, keeping its
//!   mode; installing a built-in into an agent directory without overwriting.
//!
//! The features over the store (free functions over `cao_store::Store`, called by `cao-memory`'s facade):
//! - [`outcomes`]: recording a reported outcome and listing them (newest first);
//! - [`lessons`]: `store_lesson`, an agent-scope `feedback` memory written through the memory write pipeline
//!   (`cao_ops::write`), with the capability rule of [`profile`];
//! - [`promote`]: the promotion plan (candidates gathered from an agent scope, judged by [`gate`]), its reviewed
//!   apply into the profile's Learned Patterns block, audited; [`learning`]: the agents and lessons the web UI lists.
//!
//! docs/decisions/0008-cao-learn-layering.md explains the layering.
//!
//! Invariants:
//! - The rules touch no memory store; the features reach it only through `cao_store::Store`. The only profile file
//!   writes are the promotion write and the install, both through `cao_core::fs`.
//! - Every check runs before any edit: a refused delta, outcome or profile name changes nothing.
//! - An edit of a profile changes only the bytes of its Learned Patterns block; removing every lesson restores
//!   the original bytes (property-tested).

pub mod builtin;
pub mod error;
pub mod gate;
pub mod learned;
pub mod learning;
pub mod lesson_writer;
pub mod lessons;
pub mod outcome;
pub mod outcomes;
pub mod profile;
pub mod profile_file;
pub mod promote;

pub use error::LearnError;
pub use gate::{Candidate, DEFAULT_MIN_RECALLS, Ineligible};
pub use learned::{DeltaReport, Edited, MAX_LESSON_CHARS, MAX_LESSONS, apply_deltas};
pub use outcome::{OutcomeDraft, ValidOutcome};
pub use profile::{AgentProfile, ProfileSource, STORE_LESSON_CAPABILITY};
