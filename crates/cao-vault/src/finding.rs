//! The closed vocabulary of vault findings (spec/vault-facts.md section 9): 38 codes, each with its wire string and
//! severity, and the finding value every refusal and warning of the vault becomes.
//!
//! Findings are content-free: a code, a severity and a short detail made of codes, pattern names and counts, never
//! note text (conformance `vault_findings.json`).

use serde::{Deserialize, Serialize};
use std::fmt;

/// How serious a finding is (wire strings `info`, `warn`, `error`). An `error` quarantines the note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Informational: the note is still indexed.
    Info,
    /// A warning: the note is indexed unless another finding says otherwise.
    Warn,
    /// An error: the note is quarantined.
    Error,
}

impl Severity {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A mapping's `secret_gate`: what a secret in a note's body does (spec/vault-facts.md section 1, "A mapping").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SecretGate {
    /// `reject` (default): `secret_detected` is an error and quarantines the note.
    #[default]
    Reject,
    /// `warn`: `secret_detected` is a warning; the note stays indexed (its body is redacted on injection).
    Warn,
}

impl SecretGate {
    /// The wire string (`reject` / `warn`).
    pub fn as_str(self) -> &'static str {
        match self {
            SecretGate::Reject => "reject",
            SecretGate::Warn => "warn",
        }
    }
}

macro_rules! codes {
    ($($variant:ident = $wire:literal : $sev:ident,)*) => {
        /// One of the 38 finding codes (spec/vault-facts.md section 9). The severity of every code is fixed except
        /// [`FindingCode::SecretDetected`], whose severity is the mapping's [`SecretGate`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum FindingCode {
            $(
                #[doc = concat!("`", $wire, "`")]
                $variant,
            )*
        }

        impl FindingCode {
            /// Every code, in the order of spec/vault-facts.md section 9 (info, warn, error, then `secret_detected`).
            pub const ALL: [FindingCode; 38] = [$(FindingCode::$variant,)*];

            /// The wire string (`link_dangling`, ...).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(FindingCode::$variant => $wire,)*
                }
            }

            /// The code named by a wire string, `None` for an unknown one.
            pub fn parse(s: &str) -> Option<FindingCode> {
                match s {
                    $($wire => Some(FindingCode::$variant),)*
                    _ => None,
                }
            }

            /// The code's severity under a mapping whose secret gate is `gate` (only `secret_detected` depends on
            /// it: `error` under `reject`, `warn` under `warn`).
            pub fn severity(self, gate: SecretGate) -> Severity {
                match self {
                    $(FindingCode::$variant => codes!(@sev $sev, gate),)*
                }
            }
        }
    };
    (@sev info, $gate:ident) => { Severity::Info };
    (@sev warn, $gate:ident) => { Severity::Warn };
    (@sev error, $gate:ident) => { Severity::Error };
    (@sev gate, $gate:ident) => {
        match $gate {
            SecretGate::Reject => Severity::Error,
            SecretGate::Warn => Severity::Warn,
        }
    };
}

codes! {
    HeadingFragmentIgnored = "heading_fragment_ignored": info,
    BlockReferenceUnsupported = "block_reference_unsupported": info,
    EmbedNotInlined = "embed_not_inlined": info,
    AttachmentIgnored = "attachment_ignored": info,
    LinkExcluded = "link_excluded": info,
    LinkDangling = "link_dangling": info,
    PluginFormatExcluded = "plugin_format_excluded": info,
    SyncArtifactSkipped = "sync_artifact_skipped": info,
    AliasAmbiguous = "alias_ambiguous": warn,
    LinkAmbiguous = "link_ambiguous": warn,
    KeyProvenanceUnknown = "key_provenance_unknown": warn,
    NoteTooLarge = "note_too_large": warn,
    HardlinkRefused = "hardlink_refused": warn,
    PathEscapesRoot = "path_escapes_root": warn,
    UnstableSkipped = "unstable_skipped": warn,
    LinkLimitExceeded = "link_limit_exceeded": warn,
    LinkTargetInvalid = "link_target_invalid": warn,
    ByteBudgetExceeded = "byte_budget_exceeded": warn,
    NoteLimitExceeded = "note_limit_exceeded": warn,
    MappingFolderMissing = "mapping_folder_missing": warn,
    MappingFolderUnreadable = "mapping_folder_unreadable": warn,
    RenameWithEditUnresolved = "rename_with_edit_unresolved": warn,
    RenameAmbiguous = "rename_ambiguous": warn,
    CaoLinkConflict = "cao_link_conflict": warn,
    EdgeLimitExceeded = "edge_limit_exceeded": warn,
    DeindexedRetained = "deindexed_retained": warn,
    NonRegularFileRefused = "non_regular_file_refused": warn,
    KeyCollision = "key_collision": error,
    FrontmatterMalformed = "frontmatter_malformed": error,
    FrontmatterUnsafe = "frontmatter_unsafe": error,
    FrontmatterTooLarge = "frontmatter_too_large": error,
    InvalidCaoBlock = "invalid_cao_block": error,
    KeyInvalid = "key_invalid": error,
    SymlinkRefused = "symlink_refused": error,
    PathCaseCollision = "path_case_collision": error,
    NoteNotUtf8 = "note_not_utf8": error,
    NoteContainsNul = "note_contains_nul": error,
    SecretDetected = "secret_detected": gate,
}

impl fmt::Display for FindingCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FindingCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FindingCode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        FindingCode::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("unknown finding code {s:?}")))
    }
}

/// One finding about one vault path: code, severity and a content-free detail.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Finding {
    /// The code.
    pub code: FindingCode,
    /// The severity (the code's, or the secret gate's for `secret_detected`).
    pub severity: Severity,
    /// A short, content-free detail (`max_note_bytes exceeded`, a pattern name, `type=relates_to;total=70;kept=64`).
    pub detail: String,
}

impl Finding {
    /// A finding of `code` with its fixed severity (the `reject` gate's for `secret_detected`) and `detail`.
    pub fn new(code: FindingCode, detail: impl Into<String>) -> Finding {
        Finding {
            code,
            severity: code.severity(SecretGate::Reject),
            detail: detail.into(),
        }
    }

    /// A finding whose detail is its own code's wire string (the link and rename findings of reconcile).
    pub fn bare(code: FindingCode) -> Finding {
        Finding::new(code, code.as_str())
    }

    /// A `secret_detected` finding naming `pattern`, with the severity `gate` gives it.
    pub fn secret(pattern: &str, gate: SecretGate) -> Finding {
        Finding {
            code: FindingCode::SecretDetected,
            severity: FindingCode::SecretDetected.severity(gate),
            detail: pattern.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thirty_eight_distinct_codes_round_trip() {
        let mut seen = std::collections::BTreeSet::new();
        for c in FindingCode::ALL {
            assert_eq!(FindingCode::parse(c.as_str()), Some(c));
            assert!(seen.insert(c.as_str()));
        }
        assert_eq!(seen.len(), 38);
        let count = |s| {
            FindingCode::ALL
                .iter()
                .filter(|c| **c != FindingCode::SecretDetected && c.severity(SecretGate::Reject) == s)
                .count()
        };
        assert_eq!(
            (count(Severity::Info), count(Severity::Warn), count(Severity::Error)),
            (8, 19, 10)
        );
        assert_eq!(FindingCode::SecretDetected.severity(SecretGate::Warn), Severity::Warn);
        assert_eq!(
            FindingCode::SecretDetected.severity(SecretGate::Reject),
            Severity::Error
        );
        assert_eq!(FindingCode::parse("nope"), None);
    }
}
