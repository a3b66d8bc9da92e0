//! Paths inside a bundle: where a topic is written on export, and which paths an import reads, ignores or
//! rejects (spec/reference-facts.md "OKF bundles").
//!
//! Layout of a bundle (all paths relative to its root, `/`-separated):
//! - `<key>.md` for a topic of a shared scope (global, project, federated), `<scope_id>/<key>.md` for a topic of a
//!   private scope (session, agent), since two sessions can hold the same key ([`topic_rel_path`]);
//! - `history/<topic path>` with the earlier entries of a topic ([`history_rel_path`]);
//! - `index.md` and `manifest.md` ([`INDEX_FILE`], [`MANIFEST_FILE`]), never topics and never pruned.
//!
//! Untrusted paths (a directory walk or a tar archive) go through [`validate_bundle_path`] first (no absolute
//! paths, no `..`, no empty or `.` segments, valid UTF-8, no NUL or backslash), then [`classify_bundle_path`]
//! decides what an import does with them, in the reference's order: reserved names and `history/` are skipped,
//! nested paths are rejected, and a stem must survive the key rules unchanged.

use crate::import::{IgnoreReason, RejectReason};
use cao_core::{Key, Scope};

/// The bundle's index file (root only).
pub const INDEX_FILE: &str = "index.md";
/// The bundle's provenance file (root only).
pub const MANIFEST_FILE: &str = "manifest.md";
/// The directory holding history files.
pub const HISTORY_DIR: &str = "history";
/// Suffix of every topic file.
pub const TOPIC_SUFFIX: &str = ".md";
/// Longest accepted bundle path, in bytes (a Linux `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;

/// Whether topics of `scope` nest under their scope id in a bundle (session and agent).
pub fn is_nested_scope(scope: Scope) -> bool {
    matches!(scope, Scope::Session | Scope::Agent)
}

/// The bundle path of a topic: `<scope_id>/<key>.md` when `scope_id` is given (the exporter passes it only for
/// the nested scopes, see [`is_nested_scope`]), else `<key>.md`. The scope id must already be a safe path segment
/// (the exporter checks it with [`cao_core::key::sanitize_scope_id`]).
pub fn topic_rel_path(key: &Key, scope_id: Option<&str>) -> String {
    match scope_id {
        Some(id) => format!("{id}/{key}{TOPIC_SUFFIX}"),
        None => format!("{key}{TOPIC_SUFFIX}"),
    }
}

/// The bundle path of a topic's history file: `history/<topic path>`.
pub fn history_rel_path(topic_rel: &str) -> String {
    format!("{HISTORY_DIR}/{topic_rel}")
}

/// Why a raw path cannot name a file inside a bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path is empty (or only `./`).
    #[error("empty path")]
    Empty,
    /// The path is not valid UTF-8.
    #[error("path is not valid UTF-8")]
    NotUtf8,
    /// The path contains a NUL byte.
    #[error("path contains a NUL byte")]
    Nul,
    /// The path contains a backslash (a Windows separator that could hide `..`).
    #[error("path contains a backslash")]
    Backslash,
    /// The path starts with `/`.
    #[error("absolute path")]
    Absolute,
    /// A segment is `..`.
    #[error("path escapes the bundle root (`..`)")]
    ParentSegment,
    /// A segment is empty (`a//b`, a trailing `/`) or `.` after the leading `./`.
    #[error("path has an empty or `.` segment")]
    EmptySegment,
    /// The path is longer than [`MAX_PATH_BYTES`].
    #[error("path is longer than {MAX_PATH_BYTES} bytes")]
    TooLong,
}

/// Check a raw path from a bundle (a directory walk or a tar entry name) and return it normalised: leading `./`
/// segments removed, everything else unchanged. Nothing else is rewritten, so a path that is accepted names the
/// same file everywhere.
///
/// Errors: [`PathError`] for an empty, non-UTF-8, absolute, `..`-containing, NUL- or backslash-containing path,
/// an empty or `.` segment, or one over [`MAX_PATH_BYTES`].
pub fn validate_bundle_path(raw: &[u8]) -> Result<String, PathError> {
    if raw.len() > MAX_PATH_BYTES {
        return Err(PathError::TooLong);
    }
    let text = std::str::from_utf8(raw).map_err(|_| PathError::NotUtf8)?;
    if text.contains('\0') {
        return Err(PathError::Nul);
    }
    if text.contains('\\') {
        return Err(PathError::Backslash);
    }
    if text.starts_with('/') {
        return Err(PathError::Absolute);
    }
    let mut rest = text;
    while let Some(r) = rest.strip_prefix("./") {
        rest = r.trim_start_matches('/');
    }
    if rest.is_empty() || rest == "." {
        return Err(PathError::Empty);
    }
    for segment in rest.split('/') {
        match segment {
            ".." => return Err(PathError::ParentSegment),
            "" | "." => return Err(PathError::EmptySegment),
            _ => {}
        }
    }
    Ok(rest.to_owned())
}

/// What an import does with a (validated) bundle path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BundlePathKind {
    /// A candidate topic at the bundle root whose stem is a key.
    Topic(Key),
    /// Not read: not a `.md` file, a reserved name, or under `history/`.
    Ignored(IgnoreReason),
    /// Read as a topic by the reference but refused: nested, or the stem does not survive the key rules.
    Rejected(RejectReason),
}

/// Classify a bundle path (as returned by [`validate_bundle_path`]) for import, in the reference's order:
/// 1. not ending in `.md` (case-sensitive) -> ignored;
/// 2. a file named `index.md` or `manifest.md` (at any depth), or anything under `history/` -> ignored;
/// 3. a nested path (`a/b.md`) -> rejected ([`RejectReason::Nested`]);
/// 4. the stem (name without `.md`) must equal [`Key::sanitize`] of itself -> else rejected
///    ([`RejectReason::StemNotKey`]); a 60-character key ending in `-` is such a stem (sanitising trims it).
///
/// A symlink must be rejected by the caller between steps 2 and 3 (the plan does this, see
/// [`crate::import::EntryKind`]).
pub fn classify_bundle_path(rel: &str) -> BundlePathKind {
    if !rel.ends_with(TOPIC_SUFFIX) {
        return BundlePathKind::Ignored(IgnoreReason::NotMarkdown);
    }
    let name = rel.rsplit('/').next().unwrap_or(rel);
    if name == INDEX_FILE || name == MANIFEST_FILE {
        return BundlePathKind::Ignored(IgnoreReason::Reserved);
    }
    if rel.split('/').next() == Some(HISTORY_DIR) && rel.contains('/') {
        return BundlePathKind::Ignored(IgnoreReason::History);
    }
    if rel.contains('/') {
        return BundlePathKind::Rejected(RejectReason::Nested);
    }
    let stem = &name[..name.len() - TOPIC_SUFFIX.len()];
    match Key::sanitize(stem) {
        Ok(key) if key.as_str() == stem => BundlePathKind::Topic(key),
        _ => BundlePathKind::Rejected(RejectReason::StemNotKey),
    }
}

/// The existing destination files an export with `--prune` deletes: every `.md` path of `existing` (bundle
/// paths relative to the destination) that this export did not write (`kept`: topic and history paths), except
/// the root `index.md` and `manifest.md`, and except `history/<p>` while topic `p` is kept (stale history of a
/// topic still exported survives a run without `--include-history`). Sorted, as the reference deletes them.
pub fn prune_candidates<'a>(
    existing: impl IntoIterator<Item = &'a str>,
    kept: &std::collections::BTreeSet<String>,
) -> Vec<String> {
    let mut out: Vec<String> = existing
        .into_iter()
        .filter(|rel| rel.ends_with(TOPIC_SUFFIX))
        .filter(|rel| *rel != INDEX_FILE && *rel != MANIFEST_FILE && !kept.contains(*rel))
        .filter(|rel| {
            rel.strip_prefix(HISTORY_DIR)
                .and_then(|r| r.strip_prefix('/'))
                .is_none_or(|topic| !kept.contains(topic))
        })
        .map(str::to_owned)
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> Key {
        Key::parse_strict(s).expect("valid key")
    }

    #[test]
    fn topic_paths() {
        assert_eq!(topic_rel_path(&key("note"), None), "note.md");
        assert_eq!(topic_rel_path(&key("note"), Some("sess-a")), "sess-a/note.md");
        assert_eq!(history_rel_path("sess-a/note.md"), "history/sess-a/note.md");
        assert!(is_nested_scope(Scope::Session) && is_nested_scope(Scope::Agent));
        assert!(!is_nested_scope(Scope::Global) && !is_nested_scope(Scope::Project));
    }

    #[test]
    fn hostile_paths_are_refused() {
        let cases: [(&[u8], PathError); 12] = [
            (b"", PathError::Empty),
            (b"./", PathError::Empty),
            (b".", PathError::Empty),
            (b"/etc/passwd", PathError::Absolute),
            (b"../x.md", PathError::ParentSegment),
            (b"a/../../x.md", PathError::ParentSegment),
            (b"a/./x.md", PathError::EmptySegment),
            (b"a//x.md", PathError::EmptySegment),
            (b"dir/", PathError::EmptySegment),
            (b"a\\..\\x.md", PathError::Backslash),
            (b"a\0.md", PathError::Nul),
            (b"\xff.md", PathError::NotUtf8),
        ];
        for (raw, want) in cases {
            assert_eq!(
                validate_bundle_path(raw),
                Err(want),
                "{:?}",
                String::from_utf8_lossy(raw)
            );
        }
        assert_eq!(
            validate_bundle_path(&[b'a'; MAX_PATH_BYTES + 1]),
            Err(PathError::TooLong)
        );
        assert_eq!(validate_bundle_path(b"./alpha.md").as_deref(), Ok("alpha.md"));
        assert_eq!(validate_bundle_path(b".//./a/b.md").as_deref(), Ok("a/b.md"));
        assert_eq!(validate_bundle_path(b"..a.md").as_deref(), Ok("..a.md"));
    }

    #[test]
    fn classification_follows_the_reference_order() {
        use BundlePathKind::*;
        assert_eq!(classify_bundle_path("alpha.md"), Topic(key("alpha")));
        assert_eq!(classify_bundle_path("alpha.txt"), Ignored(IgnoreReason::NotMarkdown));
        assert_eq!(classify_bundle_path("ALPHA.MD"), Ignored(IgnoreReason::NotMarkdown));
        assert_eq!(classify_bundle_path("index.md"), Ignored(IgnoreReason::Reserved));
        assert_eq!(classify_bundle_path("sub/manifest.md"), Ignored(IgnoreReason::Reserved));
        assert_eq!(classify_bundle_path("history/alpha.md"), Ignored(IgnoreReason::History));
        assert_eq!(
            classify_bundle_path("history/s/alpha.md"),
            Ignored(IgnoreReason::History)
        );
        assert_eq!(classify_bundle_path("history.md"), Topic(key("history")));
        assert_eq!(classify_bundle_path("sess-a/note.md"), Rejected(RejectReason::Nested));
        for bad in [
            "Alpha.md", "a_b.md", ".md", ".x.md", "a.b.md", "-a.md", "a-.md", "a--b.md", " a.md",
        ] {
            assert_eq!(classify_bundle_path(bad), Rejected(RejectReason::StemNotKey), "{bad}");
        }
        let long = format!("{}.md", "a".repeat(61));
        assert_eq!(classify_bundle_path(&long), Rejected(RejectReason::StemNotKey));
        let sixty = format!("{}.md", "a".repeat(60));
        assert!(matches!(classify_bundle_path(&sixty), Topic(_)));
    }

    #[test]
    fn prune_keeps_reserved_files_and_history_of_kept_topics() {
        let kept: std::collections::BTreeSet<String> =
            ["a.md", "history/b.md", "b.md"].iter().map(|s| s.to_string()).collect();
        let existing = [
            "index.md",
            "manifest.md",
            "a.md",
            "b.md",
            "gone.md",
            "history/a.md",
            "history/b.md",
            "history/gone.md",
            "sub/index.md",
            "notes.txt",
        ];
        assert_eq!(
            prune_candidates(existing, &kept),
            ["gone.md", "history/gone.md", "sub/index.md"]
        );
    }
}
