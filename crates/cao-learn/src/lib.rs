//! `cao-learn`: the rules of the self-learning loop (layer 2; over `cao-core`). Spec 004; spec/reference-facts.md
//! "Outcomes, lessons, promotion"; cases in `conformance/reference/outcomes.json` and `learned_patterns.json`.
//!
//! What lives here (everything that needs no memory store):
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
//! The wiring that needs the store (recording outcomes in the index, `store_lesson` through the memory write
//! pipeline, gathering candidates and auditing a promotion) is `cao-memory`'s (features `outcomes`, `lessons`,
//! `promote`), which depends on this crate; docs/decisions/0008-cao-learn-layering.md explains the split.
//!
//! Invariants:
//! - Nothing here touches the memory store or the index; the only file writes are the promotion write and the
//!   install, both through `cao_core::fs`.
//! - Every check runs before any edit: a refused delta, outcome or profile name changes nothing.
//! - An edit of a profile changes only the bytes of its Learned Patterns block; removing every lesson restores
//!   the original bytes (property-tested).

pub mod builtin;
pub mod error;
pub mod gate;
pub mod learned;
pub mod outcome;
pub mod profile;
pub mod profile_file;

pub use error::LearnError;
pub use gate::{Candidate, DEFAULT_MIN_RECALLS, Ineligible};
pub use learned::{DeltaReport, Edited, MAX_LESSON_CHARS, MAX_LESSONS, apply_deltas};
pub use outcome::{OutcomeDraft, ValidOutcome};
pub use profile::{AgentProfile, ProfileSource, STORE_LESSON_CAPABILITY};
