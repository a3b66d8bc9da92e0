//! The promotion gate (spec 004 "The promotion gate"): which agent-scope memories may become Learned Patterns
//! lessons of a profile. Pure: the caller gathers the candidates (the agent scope keyed to the target profile) and
//! edits the block with [`crate::learned::apply_deltas`].
//!
//! A candidate is eligible when all of: its type is `feedback` or `project`; its access count is at least the
//! minimum (default [`DEFAULT_MIN_RECALLS`], `--min-recalls`); its key is a lesson key; its text, whitespace
//! collapsed, is a valid lesson ([`crate::learned::lesson_text`]: 1..=400 characters, no block markers or control
//! characters); and it does not match the secret gate (a profile is shared with every session, often in git).
//! Ineligible candidates are reported with the first reason that applies, in that order.

use crate::learned::{is_lesson_key, lesson_text};
use cao_core::MemoryType;

/// The default minimum access count (spec 004: "access_count >= 3").
pub const DEFAULT_MIN_RECALLS: u32 = 3;

/// One memory of the target agent's scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate<'a> {
    /// Its key.
    pub key: &'a str,
    /// Its current content.
    pub content: &'a str,
    /// Its type label.
    pub memory_type: MemoryType,
    /// How often it was recalled.
    pub access_count: i64,
}

/// Why a candidate is not promoted.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Ineligible {
    /// Its type is neither `feedback` nor `project`.
    Type {
        /// The type.
        memory_type: String,
    },
    /// Recalled fewer times than required.
    TooFewRecalls {
        /// Its access count.
        recalls: i64,
        /// The minimum.
        min_recalls: u32,
    },
    /// Its key cannot be a lesson key (`^[a-z0-9][a-z0-9-]{0,63}$`).
    Key,
    /// Its text is not a valid lesson (too long, empty, block markers, control characters).
    Text {
        /// Why.
        detail: String,
    },
    /// Its text matches a secret pattern.
    Secret {
        /// The pattern name.
        pattern: String,
    },
}

impl std::fmt::Display for Ineligible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ineligible::Type { memory_type } => {
                write!(f, "type {memory_type} (only feedback and project are promoted)")
            }
            Ineligible::TooFewRecalls { recalls, min_recalls } => {
                write!(f, "recalled {recalls} times; needs {min_recalls}")
            }
            Ineligible::Key => f.write_str("its key is not a lesson key (^[a-z0-9][a-z0-9-]{0,63}$)"),
            Ineligible::Text { detail } => f.write_str(detail),
            Ineligible::Secret { pattern } => write!(f, "matches secret pattern {pattern}"),
        }
    }
}

/// The lesson text of `c` when it passes the gate with `min_recalls`, else the first reason it does not.
pub fn judge(c: &Candidate<'_>, min_recalls: u32) -> Result<String, Ineligible> {
    if !matches!(c.memory_type, MemoryType::Feedback | MemoryType::Project) {
        return Err(Ineligible::Type {
            memory_type: c.memory_type.as_str().to_owned(),
        });
    }
    if c.access_count < i64::from(min_recalls) {
        return Err(Ineligible::TooFewRecalls {
            recalls: c.access_count,
            min_recalls,
        });
    }
    if !is_lesson_key(c.key) {
        return Err(Ineligible::Key);
    }
    let text = lesson_text(c.content).map_err(|e| Ineligible::Text {
        detail: e.to_string().trim_start_matches("invalid lesson: ").to_owned(),
    })?;
    if let Some(pattern) = cao_core::secret::scan(&text) {
        return Err(Ineligible::Secret {
            pattern: pattern.to_owned(),
        });
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c<'a>(key: &'a str, content: &'a str, t: MemoryType, n: i64) -> Candidate<'a> {
        Candidate {
            key,
            content,
            memory_type: t,
            access_count: n,
        }
    }

    #[test]
    fn the_gate_in_order() {
        let ok = c(
            "keep-cache",
            "Keep the cache mode.\n  Applies when: x.",
            MemoryType::Feedback,
            3,
        );
        assert_eq!(judge(&ok, 3), Ok("Keep the cache mode. Applies when: x.".to_owned()));
        assert!(judge(&c("k", "t", MemoryType::Project, 9), 3).is_ok());
        assert_eq!(
            judge(&c("k", "t", MemoryType::User, 9), 3),
            Err(Ineligible::Type {
                memory_type: "user".into()
            })
        );
        assert_eq!(
            judge(&c("k", "t", MemoryType::Feedback, 2), 3),
            Err(Ineligible::TooFewRecalls {
                recalls: 2,
                min_recalls: 3
            })
        );
        assert!(judge(&c("k", "t", MemoryType::Feedback, 0), 0).is_ok());
        assert_eq!(judge(&c("-k", "t", MemoryType::Feedback, 5), 3), Err(Ineligible::Key));
        let long = "x".repeat(401);
        assert!(matches!(
            judge(&c("k", &long, MemoryType::Feedback, 5), 3),
            Err(Ineligible::Text { .. })
        ));
        assert!(matches!(
            judge(&c("k", "a <!-- cao-learned:end --> b", MemoryType::Feedback, 5), 3),
            Err(Ineligible::Text { .. })
        ));
        assert!(matches!(
            judge(&c("k", "use key AKIAIOSFODNN7EXAMPLE", MemoryType::Feedback, 5), 3),
            Err(Ineligible::Secret { .. })
        ));
    }
}
