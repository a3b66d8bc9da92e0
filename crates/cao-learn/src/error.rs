//! [`LearnError`]: why a self-learning rule refused its input.

use std::path::PathBuf;

/// Why an outcome, a lesson, a profile or a block edit was refused. Every message is one line naming the offending
/// field or file (never lesson or profile content, which may be long or hostile).
#[derive(Debug, thiserror::Error)]
pub enum LearnError {
    /// An outcome field is missing or invalid (spec 004 "Phase 1 — outcome capture"); nothing was stored.
    #[error("invalid outcome: {0}")]
    Outcome(String),
    /// A lesson key or text breaks the Learned Patterns rules (key `^[a-z0-9][a-z0-9-]{0,63}$`, text 1..400
    /// characters, no block markers); the reference's `LearnedPatternsError`. Nothing was written.
    #[error("invalid lesson: {0}")]
    Lesson(String),
    /// An agent profile name is not a plain name (`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`).
    #[error(
        "invalid agent profile name {0:?}: use letters, digits, '_' and '-' (at most 64, not starting with '-' or '_')"
    )]
    ProfileName(String),
    /// A profile file cannot be used: unreadable, too large, not UTF-8, or its frontmatter is invalid.
    #[error("agent profile {path}: {reason}")]
    Profile {
        /// The file.
        path: PathBuf,
        /// What is wrong (never the file's content).
        reason: String,
    },
    /// A file operation on a profile failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, with the path.
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl LearnError {
    /// An [`LearnError::Io`] for `context` (which names the path).
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> LearnError {
        let context = context.into();
        move |source| LearnError::Io { context, source }
    }
}

impl From<LearnError> for cao_store::MemoryError {
    /// A self-learning rule's refusal as the memory system's error, its message kept: a refused outcome, lesson or
    /// profile name is the caller's ([`cao_store::MemoryError::Invalid`]), a malformed profile file is
    /// [`cao_store::MemoryError::InvalidProfile`], a file-system failure stays one.
    fn from(e: LearnError) -> Self {
        match e {
            LearnError::Outcome(_) | LearnError::Lesson(_) | LearnError::ProfileName(_) => {
                cao_store::MemoryError::Invalid(e.to_string())
            }
            LearnError::Profile { .. } => cao_store::MemoryError::InvalidProfile(e.to_string()),
            LearnError::Io { context, source } => cao_store::MemoryError::Io { context, source },
        }
    }
}
