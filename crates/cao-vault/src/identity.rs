//! Note identity (spec/vault-facts.md section 2 "Identity"; conformance `vault_identity.json`): the derived key of
//! a mapping-relative path, the authored-key rule, the note uid, the metadata row id and collision keys.
//!
//! Invariants:
//! - [`derive_cao_key`] always returns a key matching `^[a-z0-9-]{1,60}$` (at most 51 + 1 + 8 characters); NFD and
//!   NFC spellings of one path give the same key (the path is NFC-normalised before anything else).
//! - Authored keys are validated, never sanitised ([`authored_key`]).
//! - Every digest is SHA-256 over UTF-8, parts joined by NUL ([`crate::hash::sha256_nul_joined`]).

use crate::hash::{sha256_hex, sha256_nul_joined};
use cao_core::key::is_valid_key;
use unicode_normalization::UnicodeNormalization;

/// The message of an authored key that does not match the key pattern (a `key_invalid` finding's detail).
pub const KEY_INVALID_MESSAGE: &str = "cao.key must match ^[a-z0-9-]{1,60}$";

/// Where a note's key came from (`vault_note.key_source`; one definition, in `cao-core`).
pub use cao_core::vault::KeySource;

/// A path NFC-normalised with backslashes turned into `/` (the form identities and digests are computed on).
pub fn nfc_path(path: &str) -> String {
    path.replace('\\', "/").nfc().collect()
}

/// The derived key of a mapping-relative path: NFC (backslash -> `/`), one trailing lowercase `.md` dropped, the
/// last segment, lowercased, each run of characters outside `[a-z0-9]` replaced by `-`, `-` stripped, `note` if
/// empty, cut to 51 characters (a trailing `-` may survive), then `-` and the first 8 hex digits of
/// `sha256(NFC path)`. Returns the key and the NFC path.
pub fn derive_cao_key(mapping_relative_path: &str) -> (String, String) {
    let nfc = nfc_path(mapping_relative_path);
    let stem = nfc.strip_suffix(".md").unwrap_or(&nfc);
    let last = stem.rsplit('/').next().unwrap_or(stem);
    let lower = last.to_lowercase();
    let mut slug = String::with_capacity(lower.len());
    let mut in_run = false;
    for c in lower.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            slug.push(c);
            in_run = false;
        } else if !in_run {
            slug.push('-');
            in_run = true;
        }
    }
    let trimmed = slug.trim_matches('-');
    let base = if trimmed.is_empty() { "note" } else { trimmed };
    let cut: String = base.chars().take(51).collect();
    let digest = sha256_hex(nfc.as_bytes());
    (format!("{cut}-{}", &digest[..8]), nfc)
}

/// An authored `cao.key` checked against `^[a-z0-9-]{1,60}$` (never sanitised).
///
/// Errors: [`KEY_INVALID_MESSAGE`] when the value is not a string matching the pattern.
pub fn authored_key(value: Option<&str>) -> Result<String, &'static str> {
    match value {
        Some(k) if is_valid_key(k) => Ok(k.to_owned()),
        _ => Err(KEY_INVALID_MESSAGE),
    }
}

/// The note uid: `sha256(vault_id NUL scope NUL scope_id-or-empty NUL key)` as hex.
pub fn note_uid(vault_id: &str, scope: &str, scope_id: Option<&str>, key: &str) -> String {
    sha256_nul_joined(&[vault_id, scope, scope_id.unwrap_or(""), key])
}

/// The id of a note's `memory_metadata` row: `sha256("memory" NUL note_uid)`.
pub fn metadata_row_id(note_uid: &str) -> String {
    sha256_nul_joined(&["memory", note_uid])
}

/// The uid of a note quarantined by a key collision: `sha256("collision" NUL old uid NUL vault path)`.
pub fn collision_uid(old_uid: &str, relpath: &str) -> String {
    sha256_nul_joined(&["collision", old_uid, relpath])
}

/// Why no collision key could be made: every candidate was already taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no unused collision key for '{0}'")]
pub struct CollisionKeysExhausted(pub String);

/// The collision key of a note whose canonical key collides: `D` = sha256 of `digest_parts` joined by NUL; for
/// `L` = 8, 16, ..., 48 the candidate is the canonical key's first `60 - 11 - L` characters with trailing `-`
/// stripped, then `-collision-` and `D`'s first `L` hex digits, `-` runs collapsed and outer `-` stripped; the first
/// candidate not in `reserved` wins (spec/vault-facts.md "Identity"). Every candidate is at most 60 characters.
///
/// Errors: [`CollisionKeysExhausted`] when all six candidates are reserved.
pub fn collision_cao_key<S: AsRef<[u8]>>(
    canonical: &str,
    digest_parts: &[S],
    reserved: &dyn Fn(&str) -> bool,
) -> Result<String, CollisionKeysExhausted> {
    let digest = sha256_nul_joined(digest_parts);
    for len in (8..=48).step_by(8) {
        let readable: String = canonical.chars().take(60 - 11 - len).collect();
        let raw = format!("{}-collision-{}", readable.trim_end_matches('-'), &digest[..len]);
        let mut candidate = String::with_capacity(raw.len());
        for c in raw.chars() {
            if c == '-' && candidate.ends_with('-') {
                continue;
            }
            candidate.push(c);
        }
        let candidate = candidate.trim_matches('-').to_owned();
        if !reserved(&candidate) {
            return Ok(candidate);
        }
    }
    Err(CollisionKeysExhausted(canonical.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn derived_keys_follow_the_rule() {
        assert_eq!(derive_cao_key("Note.md").0, "note-4227dc78");
        assert_eq!(derive_cao_key("Cafe\u{301}.md"), derive_cao_key("Caf\u{e9}.md"));
        assert_eq!(derive_cao_key("").0, "note-e3b0c442");
        assert!(derive_cao_key("a\\b.md").1 == "a/b.md");
    }

    proptest! {
        #[test]
        fn derived_keys_are_always_valid(path in "\\PC{0,120}") {
            let (key, _) = derive_cao_key(&path);
            prop_assert!(is_valid_key(&key), "{key}");
        }

        #[test]
        fn collision_keys_are_valid(canonical in "[a-z0-9-]{1,60}", part in "\\PC{0,40}") {
            let key = collision_cao_key(&canonical, &[part.as_str()], &|_| false).expect("first candidate");
            prop_assert!(is_valid_key(&key), "{key}");
        }
    }
}
