//! Vault-relative paths: normalisation, folder containment, and the exclusion rules (spec/vault-facts.md section 2
//! "Candidates"; conformance `vault_boundary.json`).
//!
//! - [`normalize_relpath`]: backslash -> `/`, NFC; refuses an empty or absolute path and any empty, `.` or `..`
//!   segment.
//! - [`relpath_within_folder`]: component-prefix containment of two normalised paths.
//! - [`Excludes`]: the always-excluded patterns (`.obsidian/`, `.trash/`, `.git/`, `_cao-*`) plus a vault's
//!   `exclude` list, compared NFC + casefolded (Python `str.casefold`). `x/` matches a path component equal to `x`;
//!   any other pattern is a glob (Python `fnmatch`: `*`, `?`, `[...]`, `[!...]`) on the whole path where `*` also
//!   crosses `/`, a pattern without `/` also matches any single component, and `**/p` also tries `p`.

use regex::Regex;
use unicode_normalization::UnicodeNormalization;

/// The message of a path [`normalize_relpath`] refuses (the reference's `ValueError` text).
pub const BAD_RELPATH: &str = "path must be a non-empty relative component path";

/// The patterns excluded in every vault, before the configured ones.
pub const ALWAYS_EXCLUDED: [&str; 4] = [".obsidian/", ".trash/", ".git/", "_cao-*"];

/// A path [`normalize_relpath`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", BAD_RELPATH)]
pub struct BadRelpath;

/// `relpath` with backslashes turned into `/` and NFC-normalised.
///
/// Errors: [`BadRelpath`] when it is empty, starts with `/`, or has an empty, `.` or `..` segment.
pub fn normalize_relpath(relpath: &str) -> Result<String, BadRelpath> {
    let p: String = relpath.replace('\\', "/").nfc().collect();
    if p.is_empty() || p.starts_with('/') || p.split('/').any(|s| s.is_empty() || s == "." || s == "..") {
        return Err(BadRelpath);
    }
    Ok(p)
}

/// Whether `relpath` is `folder` or lies below it (component prefix, after normalising both).
///
/// Errors: [`BadRelpath`] when either path is refused by [`normalize_relpath`].
pub fn relpath_within_folder(relpath: &str, folder: &str) -> Result<bool, BadRelpath> {
    let p = normalize_relpath(relpath)?;
    let f = normalize_relpath(folder)?;
    Ok(is_within(&p, &f))
}

/// Component-prefix test of two already normalised paths: `path == folder` or `path` starts with `folder/`.
pub fn is_within(path: &str, folder: &str) -> bool {
    path == folder || (path.len() > folder.len() && path.starts_with(folder) && path.as_bytes()[folder.len()] == b'/')
}

/// `s` NFC-normalised and casefolded (Python `unicodedata.normalize("NFC", s).casefold()`), the form in which
/// exclusion patterns, case collisions and folder overlaps compare paths.
pub fn fold(s: &str) -> String {
    let nfc: String = s.nfc().collect();
    caseless::default_case_fold_str(&nfc)
}

/// One compiled exclusion pattern.
#[derive(Debug, Clone)]
enum Pattern {
    /// `x/`: some path component equals `x` (folded).
    Component(String),
    /// A glob on the whole path (and, for `**/p`, on `p` too); `single` when the pattern has no `/` and so also
    /// matches any one component.
    Glob { whole: Vec<Regex>, single: bool },
}

/// The exclusion rules of one vault, compiled once (see the module docs).
#[derive(Debug, Clone)]
pub struct Excludes {
    patterns: Vec<Pattern>,
}

impl Excludes {
    /// The always-excluded patterns plus `configured` (a vault's `exclude` list, already validated).
    pub fn new<S: AsRef<str>>(configured: &[S]) -> Excludes {
        let patterns = ALWAYS_EXCLUDED
            .iter()
            .copied()
            .chain(configured.iter().map(AsRef::as_ref))
            .map(|p| {
                let p = fold(p);
                if let Some(name) = p.strip_suffix('/') {
                    return Pattern::Component(name.to_owned());
                }
                let mut whole: Vec<Regex> = fnmatch_regex(&p).into_iter().collect();
                let first_is_whole = !whole.is_empty();
                if let Some(rest) = p.strip_prefix("**/") {
                    whole.extend(fnmatch_regex(rest));
                }
                Pattern::Glob {
                    whole,
                    single: first_is_whole && !p.contains('/'),
                }
            })
            .collect();
        Excludes { patterns }
    }

    /// Whether the vault-relative `relpath` (a file or a directory) is excluded.
    pub fn is_excluded(&self, relpath: &str) -> bool {
        let folded = fold(relpath);
        self.matches_folded(&folded)
    }

    /// Whether the directory `relpath` is pruned: it is excluded itself, or a glob matches `relpath/`, so that
    /// every path below it would be excluded too (a pattern matching `d/` ends in `*`s, which match anything).
    pub fn is_excluded_dir(&self, relpath: &str) -> bool {
        let folded = fold(relpath);
        if self.matches_folded(&folded) {
            return true;
        }
        let with_slash = format!("{folded}/");
        self.patterns.iter().any(|p| match p {
            Pattern::Component(_) => false,
            Pattern::Glob { whole, .. } => whole.iter().any(|r| r.is_match(&with_slash)),
        })
    }

    fn matches_folded(&self, folded: &str) -> bool {
        self.patterns.iter().any(|p| match p {
            Pattern::Component(name) => folded.split('/').any(|c| c == name),
            Pattern::Glob { whole, single } => {
                whole.iter().any(|r| r.is_match(folded))
                    || (*single && folded.split('/').any(|c| whole.first().is_some_and(|r| r.is_match(c))))
            }
        })
    }
}

/// Python `fnmatch.translate` for the Rust `regex` crate: `*` -> any characters (including `/`), `?` -> one
/// character, `[...]` / `[!...]` -> a character class (reversed ranges dropped, an empty class never matches), an
/// unclosed `[` a literal; everything else literal; the whole string must match.
pub fn fnmatch_regex(pattern: &str) -> Option<Regex> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::from("(?s)^");
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '*' => {
                while i < chars.len() && chars[i] == '*' {
                    i += 1;
                }
                out.push_str(".*");
            }
            '?' => out.push('.'),
            '[' => {
                let mut j = i;
                if j < chars.len() && chars[j] == '!' {
                    j += 1;
                }
                if j < chars.len() && chars[j] == ']' {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    j += 1;
                }
                if j >= chars.len() {
                    out.push_str("\\[");
                    continue;
                }
                let inner: Vec<char> = chars[i..j].to_vec();
                i = j + 1;
                out.push_str(&class_regex(&inner));
            }
            other => push_literal(&mut out, other),
        }
    }
    out.push('$');
    // Every piece is escaped or a fixed construct, so the regex compiles; `None` (never seen) matches nothing.
    Regex::new(&out).ok()
}

fn push_literal(out: &mut String, c: char) {
    let mut buf = [0u8; 4];
    out.push_str(&regex::escape(c.encode_utf8(&mut buf)));
}

/// A character class for the inside of `[...]` (Python fnmatch semantics).
fn class_regex(inner: &[char]) -> String {
    let (negate, body) = match inner.first() {
        Some('!') => (true, &inner[1..]),
        _ => (false, inner),
    };
    // Items: single chars and ranges a-b (a range needs a char on both sides of '-').
    let mut items: Vec<(char, char)> = Vec::new();
    let mut k = 0;
    while k < body.len() {
        let lo = body[k];
        if k + 2 < body.len() && body[k + 1] == '-' {
            let hi = body[k + 2];
            if lo <= hi {
                items.push((lo, hi));
            }
            k += 3;
        } else {
            items.push((lo, lo));
            k += 1;
        }
    }
    if items.is_empty() {
        // `[!]` matches any one character; an empty class never matches.
        return if negate { ".".into() } else { "[^\\s\\S]".into() };
    }
    let mut out = String::from(if negate { "[^" } else { "[" });
    for (lo, hi) in items {
        push_class_char(&mut out, lo);
        if hi != lo {
            out.push('-');
            push_class_char(&mut out, hi);
        }
    }
    out.push(']');
    out
}

fn push_class_char(out: &mut String, c: char) {
    if c.is_ascii_alphanumeric() {
        out.push(c);
    } else {
        out.push_str(&format!("\\x{{{:X}}}", u32::from(c)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnmatch_basics() {
        let m = |p: &str, s: &str| fnmatch_regex(p).expect("compiles").is_match(s);
        assert!(m("a/*", "a/b/c.md"));
        assert!(m("*.tmp.md", "x.tmp.md"));
        assert!(!m("a/[x].md", "a/[x].md"));
        assert!(m("a/[x].md", "a/x.md"));
        assert!(m("[!a]", "b") && !m("[!a]", "a"));
        assert!(!m("[z-a]x", "[z-a]x"));
        assert!(m("a[", "a["));
        assert!(m("?", "é"));
    }

    #[test]
    fn excludes_prune_directories_only_when_everything_below_is_excluded() {
        let ex = Excludes::new(&["Notes/Private/**", "drafts/", "*.tmp.md"]);
        assert!(ex.is_excluded_dir("Notes/Private"));
        assert!(ex.is_excluded_dir("x/Drafts"));
        assert!(!ex.is_excluded_dir("Notes"));
        assert!(ex.is_excluded("Notes/.Obsidian/x.md"));
        assert!(ex.is_excluded("_CAO-tmp"));
    }
}
