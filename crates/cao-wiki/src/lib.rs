//! `cao-wiki`: the markdown wiki store of the cao memory system (layer 1; depends on `cao-core` only).
//!
//! The wiki files are the content store and the interchange format with the reference implementation
//! (spec 000 "Storage Layout"; spec/reference-facts.md "Layout", "Topic file", "index.md").
//!
//! - [`layout`]: where files live ([`WikiLayout`]: containers, topic paths, index paths, [`WikiLayout::scan`]).
//! - [`topic`]: the topic-file format ([`Topic::parse`], [`upsert_text`], [`Topic::render`]), including what is
//!   recovered from a file and where this crate deliberately differs from the reference.
//! - [`escape`]: line escaping of content so stored content never looks like file structure.
//! - [`index`]: index.md ([`render_index`], [`WikiLayout::write_index`], [`words_token_estimate`]).
//! - [`fsio`]: locks ([`TopicLock`], [`IndexLock`]); writes go through [`cao_core::fs::atomic_write`].
//! - [`store`]: the locked read-modify-write of one topic ([`WikiLayout::lock_topic`], [`LockedTopic`]).
//!
//! Invariants:
//! - Every path handed out is built from a validated [`cao_core::Key`] and a validated scope id / container
//!   (one `[A-Za-z0-9._-]` segment, not `.`/`..`) and is checked to stay below the memory dir; directories are
//!   additionally checked after resolving symlinks before anything is written into them.
//! - Topic files and index.md are only ever replaced atomically (temp file, fsync, rename, fsync dir; topic writes
//!   may skip the fsyncs, [`cao_core::fs::Durability`]), under
//!   the same lock files as the reference (`.<key>.lock`, `.index.lock`), so a reader never sees a partial file.
//! - For any content `c` up to [`MAX_CONTENT_BYTES`],
//!   `Topic::parse(&upsert_text(prev, h, ts, c)?)?.current_content() == c`, byte for byte.
//! - An upsert never appends to a file it cannot parse, and verifies the new text before writing it.
//! - Created directories are mode 0700, created files 0600. Parsing never panics.

pub mod error;
pub mod escape;
pub mod fsio;
pub mod index;
pub mod layout;
pub mod store;
pub mod topic;

pub use error::{Result, WikiError};
pub use fsio::{IndexLock, TopicLock};
pub use index::{INDEX_SECTION_ORDER, IndexRow, render_index, words_token_estimate};
pub use layout::{
    FEDERATED_CONTAINER, GLOBAL_CONTAINER, INDEX_FILE, ListedTopic, ScanReport, ScannedTopic, ScopeDir,
    ScopeDirListing, ScopeDirs, SkippedPath, StoredTopic, WIKI_DIR, WikiLayout, is_safe_segment, read_topic_file,
    validate_container, validate_scope_id,
};
pub use store::{LockedTopic, TopicWrite, write_prepared, write_prepared_with};
pub use topic::{Entry, Topic, TopicHeader, upsert_text, validate_tags};

/// Documented maximum content size of one entry in bytes (64 KiB). The service rejects bigger content before
/// any I/O; [`upsert_text`] rejects it too ([`WikiError::ContentTooLarge`]).
pub const MAX_CONTENT_BYTES: usize = 65_536;
