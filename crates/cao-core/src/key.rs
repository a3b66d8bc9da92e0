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
            Err(CoreError::InvalidKey(
                display_trunc(input),
                "keys must match ^[a-z0-9-]{1,60}$",
            ))
        }
    }

    /// Service form for caller-supplied keys: NUL bytes dropped, basename only (after the last `/`; a backslash is
    /// an ordinary character that the filter drops), lowercased, only `[a-z0-9-]` kept, runs of `-` collapsed, `-`
    /// trimmed, cut to 60. The cut is not trimmed again, so a 60-character result may end in `-` exactly as the
    /// reference's does (the same key must name the same file).
    ///
    /// Errors: [`CoreError::InvalidKey`] when nothing is left. Source: conformance `sanitize_key.json`.
    pub fn sanitize(input: &str) -> Result<Key, CoreError> {
        let no_nul: String = input.chars().filter(|&c| c != '\0').collect();
        let base = no_nul.rsplit('/').next().unwrap_or("");
        slugify(base).ok_or_else(|| CoreError::InvalidKey(display_trunc(input), "nothing is left after sanitising"))
    }

    /// Auto key from content: the first six whitespace-separated words (whitespace as in
    /// [`crate::text::split_words`]) joined by `-`, then the same filter as [`Key::sanitize`]. `None` when nothing
    /// is left (e.g. content in a non-Latin script only). Source: conformance `auto_key.json`.
    pub fn from_content(content: &str) -> Option<Key> {
        let joined = crate::text::split_words(content).take(6).collect::<Vec<_>>().join("-");
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
    !s.is_empty()
        && s.len() <= MAX_KEY_LEN
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
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
    // All ASCII, so a byte cut is a character cut. Not trimmed again: the reference keeps a `-` at position 60.
    let cut = &trimmed[..trimmed.len().min(MAX_KEY_LEN)];
    if cut.is_empty() {
        None
    } else {
        Some(Key(cut.to_owned()))
    }
}

fn display_trunc(s: &str) -> String {
    let mut out: String = s.chars().take(80).collect();
    if s.chars().count() > 80 {
        out.push('…');
    }
    out
}

/// Sanitise a session/agent scope id: only `[A-Za-z0-9_-]` kept (case preserved), runs of `-` collapsed, `-` and
/// `_` trimmed at both ends; empty becomes `unknown`. Source: spec/reference-facts.md "Keys and ids" and the
/// reference's observed behaviour (`"s 1/..x"` -> `s1x`).
pub fn sanitize_scope_id(raw: &str) -> String {
    let mut s = String::with_capacity(raw.len());
    for c in raw
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
    {
        if !(c == '-' && s.ends_with('-')) {
            s.push(c);
        }
    }
    let t = s.trim_matches(|c| c == '-' || c == '_');
    if t.is_empty() {
        "unknown".to_owned()
    } else {
        t.to_owned()
    }
}

/// Normalise a comma-separated tag list: each part trimmed (whitespace as in
/// [`crate::text::trim_reference_whitespace`]), empty parts dropped, joined with `,` (duplicates and case kept).
/// Source: conformance `tags.json`.
pub fn normalize_tags(raw: &str) -> String {
    raw.split(',')
        .map(crate::text::trim_reference_whitespace)
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn strict_rejects_hostile_keys() {
        for bad in [
            "../x",
            "/etc/passwd",
            "a\0b",
            "",
            "UPPER",
            "a_b",
            &"x".repeat(61),
            &"a".repeat(10_000),
        ] {
            assert!(Key::parse_strict(bad).is_err(), "{bad:?}");
        }
        assert!(Key::parse_strict("ok-1").is_ok());
    }

    /// Values observed by running the reference (`_sanitize_key`, `auto_generate_key`).
    #[test]
    fn cut_at_sixty_keeps_a_trailing_dash_like_the_reference() {
        let k = Key::sanitize(&format!("{}-b", "a".repeat(59))).expect("valid");
        assert_eq!(k.as_str(), format!("{}-", "a".repeat(59)));
        let words = "abcdefghijk ".repeat(5) + "second";
        let auto = Key::from_content(&words).expect("valid");
        assert_eq!(auto.as_str().len(), 60);
        assert!(auto.as_str().ends_with("abcdefghijk-"), "{auto}");
    }

    #[test]
    fn information_separators_split_auto_key_words() {
        assert_eq!(Key::from_content("a\u{1c}b c").expect("valid").as_str(), "a-b-c");
        assert_eq!(normalize_tags("\u{1f}x\u{1f}, y"), "x,y");
    }

    #[test]
    fn scope_id_sanitising() {
        assert_eq!(sanitize_scope_id("sess-1"), "sess-1");
        assert_eq!(sanitize_scope_id("../evil"), "evil");
        assert_eq!(sanitize_scope_id("…"), "unknown");
        assert_eq!(sanitize_scope_id("s 1/..x"), "s1x");
        assert_eq!(sanitize_scope_id("--a--b__"), "a-b");
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

        /// Sanitising a sanitised key changes nothing, except that a trailing `-` left by the 60-character cut
        /// is trimmed (as in the reference).
        #[test]
        fn sanitize_is_idempotent_up_to_the_cut(input in prop_oneof!["[ -~]{0,100}", "[a-z-]{55,70}"]) {
            if let Ok(k) = Key::sanitize(&input) {
                let again = Key::sanitize(k.as_str()).expect("a key sanitises to a key");
                prop_assert_eq!(again.as_str(), k.as_str().trim_end_matches('-'));
            }
        }
    }
}
