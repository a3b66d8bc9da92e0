//! Keys, scope ids and tags: the reference's normalisation rules (spec/reference-facts.md "Keys and ids";
//! conformance `auto_key.json`, `sanitize_key.json`, `tags.json`).

use crate::error::CoreError;
use std::fmt;

/// Maximum key length in characters (all ASCII, so also bytes).
pub const MAX_KEY_LEN: usize = 60;

/// A memory key: always matches `^[a-z0-9-]{1,60}$`, so it is safe as a file stem.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct Key(String);

impl Key {
    /// Strict form used by the CLI and HTTP API: the input must already match `^[a-z0-9-]{1,60}$`.
    ///
    /// Errors: [`CoreError::InvalidKey`] naming the input (truncated for display).
    pub fn parse_strict(input: &str) -> Result<Key, CoreError> {
        if is_valid_key(input) {
            Ok(Key(input.to_owned()))
        } else {
            Err(CoreError::InvalidKey(display_trunc(input), "keys must match ^[a-z0-9-]{1,60}$"))
        }
    }

    /// Service form for caller-supplied keys: NUL bytes dropped, basename only (after the last `/`; a backslash is an ordinary character that the filter drops), lowercased,
    /// only `[a-z0-9-]` kept, runs of `-` collapsed, `-` trimmed, cut to 60 (and trimmed again).
    ///
    /// Errors: [`CoreError::InvalidKey`] when nothing is left. Source: conformance `sanitize_key.json`.
    pub fn sanitize(input: &str) -> Result<Key, CoreError> {
        let no_nul: String = input.chars().filter(|&c| c != '\0').collect();
        let base = no_nul.rsplit('/').next().unwrap_or("");
        slugify(base).ok_or_else(|| CoreError::InvalidKey(display_trunc(input), "nothing is left after sanitising"))
    }

    /// Auto key from content: the first six whitespace-separated words joined by `-`, then the same filter as
    /// [`Key::sanitize`]. `None` when nothing is left (e.g. content in a non-Latin script only).
    /// Source: conformance `auto_key.json`.
    pub fn from_content(content: &str) -> Option<Key> {
        let joined = content.split_whitespace().take(6).collect::<Vec<_>>().join("-");
        slugify(&joined)
    }

    /// The key as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Key {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Whether `s` matches `^[a-z0-9-]{1,60}$`.
pub fn is_valid_key(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_KEY_LEN && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn slugify(s: &str) -> Option<Key> {
    let mut out = String::with_capacity(s.len().min(MAX_KEY_LEN * 2));
    for c in s.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if c == '-' && !out.ends_with('-') {
            out.push('-');
        }
    }
    let trimmed = out.trim_matches('-');
    let cut = &trimmed[..trimmed.len().min(MAX_KEY_LEN)];
    let cut = cut.trim_end_matches('-');
    if cut.is_empty() { None } else { Some(Key(cut.to_owned())) }
}

fn display_trunc(s: &str) -> String {
    let mut out: String = s.chars().take(80).collect();
    if s.chars().count() > 80 {
        out.push('…');
    }
    out
}

/// Sanitise a session/agent scope id: only `[A-Za-z0-9_-]` kept; empty becomes `unknown`.
/// Source: spec/reference-facts.md "Keys and ids".
pub fn sanitize_scope_id(raw: &str) -> String {
    let s: String = raw.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-').collect();
    if s.is_empty() { "unknown".to_owned() } else { s }
}

/// Normalise a comma-separated tag list: each part trimmed, empty parts dropped, joined with `,`
/// (duplicates kept). Source: conformance `tags.json`.
pub fn normalize_tags(raw: &str) -> String {
    raw.split(',').map(str::trim).filter(|t| !t.is_empty()).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn strict_rejects_hostile_keys() {
        for bad in ["../x", "/etc/passwd", "a\0b", "", "UPPER", "a_b", &"x".repeat(61), &"a".repeat(10_000)] {
            assert!(Key::parse_strict(bad).is_err(), "{bad:?}");
        }
        assert!(Key::parse_strict("ok-1").is_ok());
    }

    #[test]
    fn scope_id_sanitising() {
        assert_eq!(sanitize_scope_id("sess-1"), "sess-1");
        assert_eq!(sanitize_scope_id("../evil"), "evil");
        assert_eq!(sanitize_scope_id("…"), "unknown");
    }

    proptest! {
        #[test]
        fn sanitize_yields_valid_key_or_error(input in any::<String>()) {
            if let Ok(k) = Key::sanitize(&input) {
                prop_assert!(is_valid_key(k.as_str()));
            }
        }

        #[test]
        fn auto_key_is_valid_or_none(input in any::<String>()) {
            if let Some(k) = Key::from_content(&input) {
                prop_assert!(is_valid_key(k.as_str()));
            }
        }

        #[test]
        fn sanitize_is_idempotent(input in "[ -~]{0,100}") {
            if let Ok(k) = Key::sanitize(&input) {
                prop_assert_eq!(Key::sanitize(k.as_str()).ok(), Some(k));
            }
        }
    }
}
