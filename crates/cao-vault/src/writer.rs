//! The managed-folder writer (spec/vault-facts.md section 6; conformance `vault_writer.json`): the only place CAO
//! writes into a vault.
//!
//! - [`render_managed`] (pure) turns the note as it is (or nothing) and a [`WriteRequest`] into the new text:
//!   the bytes before the opening fence and every non-`cao` frontmatter byte are kept (comments, spacing, order,
//!   the fences' line ends); every top-level `cao` entry is cut out and one new `cao` block is appended at the end
//!   of the frontmatter (the caller's fields, the existing `links` when the caller gives none, then `key`, then
//!   `managed: true`, block style, indented like the existing mapping); new top-level seeds are only `tags` and
//!   `created`, written when absent (an existing one is reported in `ignored_frontmatter_keys`). Append mode adds
//!   `\n\n## <UTC second>\n<content>\n`, clamping a future or out-of-order time to now with an
//!   `_Originally recorded: <ts>_` line. A non-empty note without a frontmatter block is never adopted.
//! - [`publish`] writes `<root>/<managed_folder>/<key>.md`: each managed-folder component is opened relative to its
//!   parent without following links (missing ones are created), the target must be a regular file or absent, the
//!   current text must hash to what the caller expects (a new note requires an absent or empty file), and the
//!   bytes are replaced atomically inside the opened folder (`cao_core::fs::atomic_write_at`; mode of the old file,
//!   else 0666 less the umask).
//!
//! Locks (the vault projection lock, then a per-file lock) and the refresh reconcile after a publish are the
//! store's; [`projection_lock_path`] names the projection lock file.

use crate::config::VaultConfig;
use crate::finding::SecretGate;
use crate::hash::{sha256_hex, sha256_nul_joined};
use crate::note::{Split, normalize_text, split_frontmatter};
use crate::yaml::{self, Yaml};
use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
use granit_parser::{Event, Parser, StructureStyle};
use regex::Regex;
use std::ffi::OsStr;
use std::fs::File;
use std::io::Read as _;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// Top-level frontmatter keys a write may seed (when absent).
pub const SEED_KEYS: [&str; 2] = ["tags", "created"];

/// Why a managed write was refused. Messages never quote note content.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The note changed since it was indexed, or is not a managed note (`VaultWriteConflictError`).
    #[error("vault note changed at '{}'; run `cao memory vault reconcile --apply` before writing", .0.display())]
    Conflict(PathBuf),
    /// A symlink or non-regular file on the way (`VaultWriteBoundaryError`).
    #[error("vault write refused at '{}': {reason}", .path.display())]
    Boundary {
        /// Where.
        path: PathBuf,
        /// What was found.
        reason: &'static str,
    },
    /// A credential in the body, the entry or the `cao` block under a `reject` gate (`VaultSecretWriteError`).
    #[error("vault write rejected: note matched credential pattern '{0}'")]
    Secret(&'static str),
    /// The rendered note is larger than `max_note_bytes`.
    #[error("vault write exceeds max_note_bytes")]
    TooLarge,
    /// The rendered frontmatter is larger than `max_frontmatter_bytes`.
    #[error("vault write exceeds max_frontmatter_bytes")]
    FrontmatterTooLarge,
    /// A NUL character in the note.
    #[error("vault write contains a NUL character")]
    ContainsNul,
    /// A seed other than `tags` / `created`.
    #[error("unsupported top-level frontmatter key: '{0}'")]
    UnsupportedSeed(String),
    /// The key cannot name a file of the managed folder.
    #[error("managed note key must match ^[A-Za-z0-9._-]+$")]
    InvalidKey,
    /// An I/O error.
    #[error("vault write failed at '{}': {source}", .path.display())]
    Io {
        /// Where.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// The body of a managed write.
#[derive(Debug, Clone, PartialEq)]
pub enum BodyEdit {
    /// Replace the body (`write_managed_note`).
    Replace(String),
    /// Append one entry (`MemoryService.store`).
    Append {
        /// The entry's text.
        content: String,
        /// When it happened (default now).
        occurred_at: Option<DateTime<Utc>>,
        /// Now.
        now: DateTime<Utc>,
    },
}

/// One managed write.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteRequest {
    /// The note's key: `cao.key` and the file name `<key>.md`.
    pub key: String,
    /// The caller's `cao` fields in order (`type`, `links`, ...), without `key` and `managed`.
    pub cao: Vec<(String, Yaml)>,
    /// Top-level seeds (only [`SEED_KEYS`]), written when absent.
    pub seeds: Vec<(String, Yaml)>,
    /// The body.
    pub body: BodyEdit,
}

/// Limits of a managed write (the vault's and the writable mapping's).
#[derive(Debug, Clone, Copy)]
pub struct WriteLimits {
    /// `max_note_bytes`.
    pub max_note_bytes: u64,
    /// `max_frontmatter_bytes`.
    pub max_frontmatter_bytes: u32,
    /// The writable mapping's secret gate.
    pub secret_gate: SecretGate,
}

impl WriteLimits {
    /// The limits of `vault` (secret gate of its writable mapping).
    pub fn of(vault: &VaultConfig) -> WriteLimits {
        WriteLimits {
            max_note_bytes: vault.max_note_bytes,
            max_frontmatter_bytes: vault.max_frontmatter_bytes,
            secret_gate: vault.writable_mapping().map_or(SecretGate::Reject, |m| m.secret_gate),
        }
    }
}

/// A rendered note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The new text.
    pub text: String,
    /// SHA-256 of its normalised text (what the index records).
    pub content_sha256: String,
    /// Seeds not written because the key exists.
    pub ignored_frontmatter_keys: Vec<String>,
    /// Append mode: the entry's time was replaced by now.
    pub timestamp_clamped: bool,
    /// Append mode: the time of the note's first section (its `created_at`).
    pub created_at: Option<DateTime<Utc>>,
    /// A credential matched under a `warn` gate (the note is written).
    pub secret_warning: Option<&'static str>,
}

static HEADING: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?m)^## (\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)[ \t]*$").ok());

fn headings(body: &str) -> Vec<DateTime<Utc>> {
    HEADING.as_ref().map_or_else(Vec::new, |re| {
        re.captures_iter(body)
            .filter_map(|c| c.get(1))
            .filter_map(|m| DateTime::parse_from_rfc3339(m.as_str()).ok())
            .map(|t| t.with_timezone(&Utc))
            .collect()
    })
}

fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The top-level entries of a block-mapping frontmatter: `(key, byte range)` where a range runs from the start of
/// the key's line to the start of the next key's line. `None` when the frontmatter is not a block mapping.
fn top_level_entries(raw: &str) -> Option<Vec<(Option<String>, std::ops::Range<usize>)>> {
    // One frame per open collection: (is a mapping, expecting a key).
    fn advance(stack: &mut [(bool, bool)]) {
        if let Some(top) = stack.last_mut()
            && top.0
        {
            top.1 = !top.1;
        }
    }
    let to_byte = |m: granit_parser::Marker| {
        m.byte_offset()
            .unwrap_or_else(|| raw.char_indices().nth(m.index()).map_or(raw.len(), |(b, _)| b))
    };
    let mut stack: Vec<(bool, bool)> = Vec::new();
    let mut starts: Vec<(Option<String>, usize)> = Vec::new();
    for item in Parser::new_from_str(raw) {
        let (event, span) = item.ok()?;
        let is_map = matches!(event, Event::MappingStart(..));
        match event {
            Event::MappingStart(style, ..) | Event::SequenceStart(style, ..) => {
                if stack.is_empty() {
                    if !is_map || style != StructureStyle::Block {
                        return None;
                    }
                    stack.push((true, true));
                    continue;
                }
                if stack.len() == 1 && stack[0].1 {
                    return None; // a collection as a top-level key
                }
                advance(&mut stack);
                stack.push((is_map, true));
            }
            Event::Scalar(value, ..) => {
                if stack.is_empty() {
                    return None;
                }
                if stack.len() == 1 && stack[0].1 {
                    let at = to_byte(span.start);
                    let line = raw[..at].rfind('\n').map_or(0, |i| i + 1);
                    starts.push((Some(value.into_owned()), line));
                }
                advance(&mut stack);
            }
            Event::Alias(_) => advance(&mut stack),
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
            }
            _ => {}
        }
    }
    let mut out = Vec::with_capacity(starts.len());
    for (i, (k, start)) in starts.iter().enumerate() {
        let end = starts.get(i + 1).map_or(raw.len(), |(_, s)| *s);
        out.push((k.clone(), *start..end));
    }
    Some(out)
}

/// Render a managed note (module docs). `existing` is the file's text as it is (`None` when absent).
///
/// Errors: [`WriteError::UnsupportedSeed`], [`WriteError::Conflict`] (a non-empty note without a frontmatter
/// block, or whose frontmatter is not a block mapping), [`WriteError::ContainsNul`],
/// [`WriteError::FrontmatterTooLarge`], [`WriteError::TooLarge`], [`WriteError::Secret`].
pub fn render_managed(
    existing: Option<&str>,
    request: &WriteRequest,
    limits: WriteLimits,
    path_for_errors: &Path,
) -> Result<Rendered, WriteError> {
    if let Some((k, _)) = request.seeds.iter().find(|(k, _)| !SEED_KEYS.contains(&k.as_str())) {
        return Err(WriteError::UnsupportedSeed(k.clone()));
    }
    let conflict = || WriteError::Conflict(path_for_errors.to_path_buf());
    let existing = existing.filter(|t| !t.is_empty());
    let (prefix, nl, kept, present, existing_links, step, body) = match existing {
        None => ("", "\n", String::new(), Vec::new(), None, 2, String::new()),
        Some(text) => {
            let Ok(Split::Fenced(region)) = split_frontmatter(text, usize::MAX) else {
                return Err(conflict());
            };
            let raw = region.raw(text);
            let entries = top_level_entries(raw).ok_or_else(conflict)?;
            let nl = if region.crlf { "\r\n" } else { "\n" };
            let first = entries.first().map_or(raw.len(), |(_, r)| r.start);
            let mut kept = raw[..first].to_owned();
            let mut present = Vec::new();
            for (key, range) in &entries {
                if key.as_deref() == Some("cao") {
                    continue;
                }
                kept.push_str(&raw[range.clone()]);
                present.extend(key.clone());
            }
            if let Some(stripped) = kept.strip_suffix(nl) {
                kept.truncate(stripped.len());
            }
            let existing_links = yaml::load(raw)
                .ok()
                .flatten()
                .and_then(|d| d.get("cao").and_then(|c| c.get("links")).cloned())
                .filter(|l| *l != Yaml::Null);
            let step = raw
                .lines()
                .map(|l| l.len() - l.trim_start_matches(' ').len())
                .filter(|n| *n > 0)
                .min()
                .unwrap_or(2);
            (
                &text[..region.start],
                nl,
                kept,
                present,
                existing_links,
                step,
                region.body(text).to_owned(),
            )
        }
    };
    // The new `cao` block.
    let mut cao = request.cao.clone();
    if !cao.iter().any(|(k, _)| k == "links")
        && let Some(links) = existing_links
    {
        cao.push(("links".into(), links));
    }
    cao.retain(|(k, _)| k != "key" && k != "managed");
    cao.push(("key".into(), Yaml::Str(request.key.clone())));
    cao.push(("managed".into(), Yaml::Bool(true)));
    let mut ignored = Vec::new();
    let mut seeds = Vec::new();
    for (k, v) in &request.seeds {
        if present.iter().any(|p| p == k) {
            ignored.push(k.clone());
        } else {
            seeds.push((k.clone(), v.clone()));
        }
    }
    let mut lines = yaml::emit_mapping(&seeds, 0, step);
    let cao_lines = yaml::emit_mapping(
        &[(
            "cao".into(),
            Yaml::Map(cao.into_iter().map(|(k, v)| (Yaml::Str(k), v)).collect()),
        )],
        0,
        step,
    );
    let cao_text = cao_lines.join("\n");
    lines.extend(cao_lines);
    let mut raw = kept;
    if !raw.is_empty() {
        raw.push_str(nl);
    }
    raw.push_str(&lines.join(nl));
    // The body.
    let (body, entry, clamped, created_at) = match &request.body {
        BodyEdit::Replace(b) => (b.clone(), b.clone(), false, None),
        BodyEdit::Append {
            content,
            occurred_at,
            now,
        } => {
            let latest = headings(&body).into_iter().max();
            let at = occurred_at.unwrap_or(*now);
            let clamped = at > *now || latest.is_some_and(|l| at < l);
            let mut entry = format!("## {}\n", ts(if clamped { *now } else { at }));
            if clamped {
                entry.push_str(&format!("_Originally recorded: {}_\n", ts(at)));
            }
            entry.push_str(content);
            entry.push('\n');
            let trimmed = body.trim_end_matches('\n');
            let new_body = if trimmed.is_empty() {
                entry
            } else {
                format!("{trimmed}\n\n{entry}")
            };
            let created = headings(&new_body).into_iter().next();
            (new_body, content.clone(), clamped, created)
        }
    };
    let text = format!("{prefix}---{nl}{raw}{nl}---{nl}{body}");
    if text.contains('\0') {
        return Err(WriteError::ContainsNul);
    }
    if raw.len() > limits.max_frontmatter_bytes as usize {
        return Err(WriteError::FrontmatterTooLarge);
    }
    if text.len() as u64 > limits.max_note_bytes {
        return Err(WriteError::TooLarge);
    }
    let secret = cao_core::secret::scan(&entry).or_else(|| cao_core::secret::scan(&cao_text));
    if let (Some(pattern), SecretGate::Reject) = (secret, limits.secret_gate) {
        return Err(WriteError::Secret(pattern));
    }
    let normalized = normalize_text(text.as_bytes()).map_err(|_| WriteError::ContainsNul)?;
    Ok(Rendered {
        content_sha256: sha256_hex(normalized.as_bytes()),
        text,
        ignored_frontmatter_keys: ignored,
        timestamp_clamped: clamped,
        created_at,
        secret_warning: secret,
    })
}

/// What the file must be before a publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// A new note: absent or empty.
    New,
    /// An existing note whose normalised text hashes to this (the indexed `content_sha256`).
    Hash(String),
}

/// Whether a key can name a managed note file (`^[A-Za-z0-9._-]+$`, not `.` or `..`).
pub fn valid_file_key(key: &str) -> bool {
    !key.is_empty()
        && key != "."
        && key != ".."
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The managed folder, opened component by component from the root without following links; missing components
/// are created. Returns the folder's handle and its path (for messages).
fn open_managed_folder(vault: &VaultConfig) -> Result<(File, PathBuf), WriteError> {
    let io = |path: &Path, source: std::io::Error| WriteError::Io {
        path: path.to_path_buf(),
        source,
    };
    let flags = rustix::fs::OFlags::RDONLY
        | rustix::fs::OFlags::DIRECTORY
        | rustix::fs::OFlags::NOFOLLOW
        | rustix::fs::OFlags::CLOEXEC;
    let mut path = vault.root.clone();
    let mut dir =
        File::from(rustix::fs::open(&vault.root, flags, rustix::fs::Mode::empty()).map_err(|e| io(&path, e.into()))?);
    for comp in vault.managed_folder.split('/') {
        path.push(comp);
        let name = OsStr::new(comp);
        match rustix::fs::statat(dir.as_fd(), name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => match rustix::fs::FileType::from_raw_mode(st.st_mode) {
                rustix::fs::FileType::Directory => {}
                rustix::fs::FileType::Symlink => {
                    return Err(WriteError::Boundary {
                        path,
                        reason: "symlinked managed folder component",
                    });
                }
                _ => {
                    return Err(WriteError::Boundary {
                        path,
                        reason: "managed folder component is not a directory",
                    });
                }
            },
            Err(rustix::io::Errno::NOENT) => cao_core::fs::create_dir_at(&dir, name).map_err(|e| io(&path, e))?,
            Err(e) => return Err(io(&path, e.into())),
        }
        let next = rustix::fs::openat(dir.as_fd(), name, flags, rustix::fs::Mode::empty()).map_err(|e| match e {
            rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => WriteError::Boundary {
                path: path.clone(),
                reason: "symlinked managed folder component",
            },
            other => io(&path, other.into()),
        })?;
        dir = File::from(next);
    }
    Ok((dir, path))
}

/// The current text and permission bits of `<key>.md` in the opened managed folder (`None` when absent).
fn read_current(dir: &File, name: &OsStr, path: &Path) -> Result<Option<(Vec<u8>, u32)>, WriteError> {
    let flags = rustix::fs::OFlags::RDONLY
        | rustix::fs::OFlags::NOFOLLOW
        | rustix::fs::OFlags::NONBLOCK
        | rustix::fs::OFlags::CLOEXEC;
    match rustix::fs::statat(dir.as_fd(), name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(e) => {
            return Err(WriteError::Io {
                path: path.to_path_buf(),
                source: e.into(),
            });
        }
        Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile => {
            return Err(WriteError::Boundary {
                path: path.to_path_buf(),
                reason: "target is not a regular file",
            });
        }
        Ok(_) => {}
    }
    let fd = rustix::fs::openat(dir.as_fd(), name, flags, rustix::fs::Mode::empty()).map_err(|e| match e {
        rustix::io::Errno::LOOP => WriteError::Boundary {
            path: path.to_path_buf(),
            reason: "target is a symlink",
        },
        other => WriteError::Io {
            path: path.to_path_buf(),
            source: other.into(),
        },
    })?;
    let mut file = File::from(fd);
    let mode = file
        .metadata()
        .map_err(|e| WriteError::Io {
            path: path.to_path_buf(),
            source: e,
        })?
        .mode();
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|e| WriteError::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    Ok(Some((bytes, mode & 0o7777)))
}

/// The managed note `<root>/<managed_folder>/<key>.md` as it is now (read confined): its text, `None` when absent.
///
/// Errors: [`WriteError::InvalidKey`], [`WriteError::Boundary`], [`WriteError::Io`]; a file that is not UTF-8 is a
/// [`WriteError::Conflict`].
pub fn read_managed(vault: &VaultConfig, key: &str) -> Result<Option<String>, WriteError> {
    if !valid_file_key(key) {
        return Err(WriteError::InvalidKey);
    }
    let (dir, folder) = open_managed_folder(vault)?;
    let name = format!("{key}.md");
    let path = folder.join(&name);
    match read_current(&dir, OsStr::new(&name), &path)? {
        None => Ok(None),
        Some((bytes, _)) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| WriteError::Conflict(path)),
    }
}

/// Publish `text` as `<root>/<managed_folder>/<key>.md` (module docs). Returns the absolute path.
///
/// Errors: [`WriteError::InvalidKey`], [`WriteError::Boundary`] (a symlink or non-regular file on the way),
/// [`WriteError::Conflict`] (the file is not what `expected` says), [`WriteError::Io`].
pub fn publish(vault: &VaultConfig, key: &str, text: &str, expected: &Expected) -> Result<PathBuf, WriteError> {
    if !valid_file_key(key) {
        return Err(WriteError::InvalidKey);
    }
    let (dir, folder) = open_managed_folder(vault)?;
    let name = format!("{key}.md");
    let path = folder.join(&name);
    let current = read_current(&dir, OsStr::new(&name), &path)?;
    let matches = match (&current, expected) {
        (None, Expected::New) => true,
        (Some((bytes, _)), Expected::New) => bytes.is_empty(),
        (None, Expected::Hash(_)) => false,
        (Some((bytes, _)), Expected::Hash(h)) => normalize_text(bytes).is_ok_and(|t| sha256_hex(t.as_bytes()) == *h),
    };
    if !matches {
        return Err(WriteError::Conflict(path));
    }
    let mode = current.map_or(cao_core::fs::FileMode::UmaskDefault, |(_, m)| {
        cao_core::fs::FileMode::Exact(m)
    });
    cao_core::fs::atomic_write_at(&dir, OsStr::new(&name), text.as_bytes(), mode).map_err(|e| WriteError::Io {
        path: path.clone(),
        source: e,
    })?;
    Ok(path)
}

/// The vault projection lock file: `<CAO home>/locks/vault-projection-<first 16 hex of sha256(identity)>.lock`,
/// identity `inode:<dev>:<ino>` of the root (or `path:<root>` when it cannot be stat'ed).
pub fn projection_lock_path(cao_home: &Path, root: &Path) -> PathBuf {
    let identity = match std::fs::metadata(root) {
        Ok(m) => format!("inode:{}:{}", m.dev(), m.ino()),
        Err(_) => format!("path:{}", root.display()),
    };
    let digest = sha256_nul_joined(&[identity.as_str()]);
    cao_home
        .join("locks")
        .join(format!("vault-projection-{}.lock", &digest[..16]))
}

/// A naive UTC time as a `created` seed value (written like PyYAML writes a naive `datetime`).
pub fn created_seed(at: NaiveDateTime, utc_offset: bool) -> Yaml {
    Yaml::DateTime {
        naive: at,
        offset_secs: utc_offset.then_some(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> WriteLimits {
        WriteLimits {
            max_note_bytes: 262_144,
            max_frontmatter_bytes: 16_384,
            secret_gate: SecretGate::Reject,
        }
    }

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("time").with_timezone(&Utc)
    }

    #[test]
    fn appends_keep_foreign_bytes() {
        let existing = "\u{feff}---\r\n# a comment\r\ntitle: crlf\r\ncao:\r\n  key: topic\r\n  links: []\r\nz: 1\r\n---\r\nBody line\r\n";
        let r = render_managed(
            Some(existing),
            &WriteRequest {
                key: "topic".into(),
                cao: vec![("type".into(), Yaml::Str("project".into()))],
                seeds: vec![("tags".into(), Yaml::Str("a".into()))],
                body: BodyEdit::Append {
                    content: "Appended.".into(),
                    occurred_at: Some(at("2024-05-01T00:00:00Z")),
                    now: at("2024-06-01T00:00:00Z"),
                },
            },
            limits(),
            Path::new("x"),
        )
        .expect("render");
        assert_eq!(
            r.text,
            "\u{feff}---\r\n# a comment\r\ntitle: crlf\r\nz: 1\r\ntags: a\r\ncao:\r\n  type: project\r\n  links: []\r\n  key: topic\r\n  managed: true\r\n---\r\nBody line\r\n\n## 2024-05-01T00:00:00Z\nAppended.\n"
        );
        assert!(!r.timestamp_clamped);
    }

    #[test]
    fn refusals() {
        let req = |body: &str| WriteRequest {
            key: "k".into(),
            cao: vec![],
            seeds: vec![],
            body: BodyEdit::Replace(body.into()),
        };
        assert!(matches!(
            render_managed(Some("plain\n"), &req("b"), limits(), Path::new("x")),
            Err(WriteError::Conflict(_))
        ));
        assert!(matches!(
            render_managed(
                None,
                &req("ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"),
                limits(),
                Path::new("x")
            ),
            Err(WriteError::Secret("github_pat"))
        ));
        assert!(matches!(
            render_managed(None, &req(&"x".repeat(300_000)), limits(), Path::new("x")),
            Err(WriteError::TooLarge)
        ));
        assert!(valid_file_key("a.b_c-1") && !valid_file_key("..") && !valid_file_key("a/b"));
    }
}
