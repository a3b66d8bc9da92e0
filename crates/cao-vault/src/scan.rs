//! The one confined boundary through which a vault is read (spec/vault-facts.md section 2 "Candidates",
//! "Refusals during scan"; conformance `vault_scan.json`).
//!
//! [`scan_vault`] walks each indexed mapping folder and reads its notes:
//! - **Never out of the root.** The root is opened once; every directory below it is opened relative to its
//!   parent's descriptor with `O_NOFOLLOW | O_DIRECTORY`, and every note relative to its directory's descriptor
//!   with `O_NOFOLLOW | O_NONBLOCK` (`rustix::fs::openat`). No path string is ever resolved by the kernel from the
//!   root down, so a symlink swapped in after the walk makes the open fail (`path_escapes_root`) instead of being
//!   followed. Each directory opened for a read must be the one listed (device and inode), the opened note must be
//!   the inode listed, and it must not change (device, inode, size, mtime, ctime) while it is read
//!   (`unstable_skipped`).
//! - **Links are refused, never followed.** A symlink anywhere below a mapping folder (file or directory, dangling
//!   or not, pointing in or out) is a `symlink_refused` row and is not entered; a mapping folder reached through a
//!   symlink is refused as a whole. A note with more than one hard link is refused unless its mapping allows
//!   hard links.
//! - **Never read:** any path component `.obsidian`, `.trash`, `.git` or `_cao-*`, the vault's `exclude` patterns
//!   (pruned directories are not even listed), files outside every mapping, mappings with `index: false`, and
//!   every file that is not a regular `*.md` file (`.MD` counts; `x.md` directories are walked into).
//! - **Limits.** Candidates are taken in UTF-8 byte order of their NFC paths: from position `max_notes` on one
//!   `note_limit_exceeded` row and nothing more; a note over `max_note_bytes` is `note_too_large`; the scan reads
//!   at most [`MAX_TOTAL_BYTES`] and stops with `byte_budget_exceeded` at the note that would pass it.
//! - **Every refusal is a row with a finding**; nothing is skipped silently except the excluded paths and
//!   non-Markdown files listed above.
//!
//! A note that is read is decoded strictly ([`crate::note::normalize_text`]), hashed (`content_sha256` of the
//! normalised text, `frontmatter_sha256` of the raw frontmatter), parsed ([`crate::note::parse_note`]), checked for
//! the Excalidraw format and for secrets in its body (`cao_core::secret::scan`, severity from the mapping's secret
//! gate), and its links are extracted ([`crate::links::extract_links`]). The text itself is not kept.
//!
//! Rescans: [`ScanOptions::previous`] hands back the notes of an earlier scan; a note whose listing stamp
//! (device, inode, size, mtime, ctime) is unchanged is taken from there without being opened, so an unchanged
//! vault costs one directory walk.

use crate::config::{Mapping, VaultConfig};
use crate::finding::{Finding, FindingCode, Severity};
use crate::hash::sha256_hex;
use crate::links::{RawLink, extract_links};
use crate::note::{NoteFields, normalize_text, parse_note};
use crate::path::{Excludes, fold};
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::Read as _;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use unicode_normalization::UnicodeNormalization;

/// The most bytes one scan reads in total (64 MiB).
pub const MAX_TOTAL_BYTES: u64 = 67_108_864;

/// Directories nested deeper than this below the root are not entered (a `unstable_skipped` row says so).
pub const MAX_DIR_DEPTH: usize = 128;

/// A note's status after a scan or a reconcile (`vault_note.status`; one definition, in `cao-core`).
pub use cao_core::vault::NoteStatus;

/// What identifies a file's content without reading it: device, inode, size, mtime and ctime (nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NoteStamp {
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    /// Change time, nanoseconds since the Unix epoch.
    pub ctime_ns: i64,
}

impl NoteStamp {
    fn of(st: &Stat) -> NoteStamp {
        #[allow(
            clippy::useless_conversion,
            clippy::unnecessary_cast,
            reason = "field widths differ by target"
        )]
        NoteStamp {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            size: u64::try_from(st.st_size).unwrap_or(0),
            mtime_ns: (st.st_mtime as i64)
                .saturating_mul(1_000_000_000)
                .saturating_add(st.st_mtime_nsec as i64),
            ctime_ns: (st.st_ctime as i64)
                .saturating_mul(1_000_000_000)
                .saturating_add(st.st_ctime_nsec as i64),
        }
    }
}

/// What a read note contributes beyond its row: the fields of its frontmatter, its body links and its size in
/// words. Present for notes whose frontmatter parsed (indexed, unsupported, or quarantined by a secret only).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NoteContent {
    /// Frontmatter fields and the `cao` block.
    pub fields: NoteFields,
    /// The body's links, in position order (at most 1000).
    pub links: Vec<RawLink>,
    /// `link_limit_exceeded` when the body had more than 1000 links.
    pub link_findings: Vec<Finding>,
    /// Whitespace-separated words of the whole normalised text (frontmatter included): the metadata row's
    /// `token_estimate`.
    pub words: u64,
}

/// One row of a scan: a candidate note or a refusal.
#[derive(Debug, Clone, PartialEq)]
pub struct ScannedNote {
    /// Vault-relative path, `/`-separated, NFC (for a refused mapping folder: the folder).
    pub relpath: String,
    /// Index of the mapping in the vault's `mappings`.
    pub mapping: usize,
    /// The mapping's scope.
    pub scope: cao_core::Scope,
    /// The mapping's scope id.
    pub scope_id: Option<String>,
    /// The status.
    pub status: NoteStatus,
    /// Findings, in the order they were made.
    pub findings: Vec<Finding>,
    /// Bytes read (`None` when the note was not read).
    pub size_bytes: Option<u64>,
    /// Modification time of the note read (nanoseconds).
    pub mtime_ns: Option<i64>,
    /// The listing stamp (for rescans; `None` for refused entries).
    pub stamp: Option<NoteStamp>,
    /// SHA-256 of the normalised text (`None` when not read or not text).
    pub content_sha256: Option<String>,
    /// SHA-256 of the raw frontmatter (`None` without a fenced region).
    pub frontmatter_sha256: Option<String>,
    /// Parsed content (see [`NoteContent`]).
    pub content: Option<NoteContent>,
}

/// The result of [`scan_vault`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScanReport {
    /// Every row, sorted by the UTF-8 bytes of `relpath`.
    pub notes: Vec<ScannedNote>,
    /// Bytes read (reused notes count their size).
    pub total_bytes_scanned: u64,
    /// [`MAX_TOTAL_BYTES`].
    pub max_total_bytes: u64,
}

/// Options of [`scan_vault`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ScanOptions<'a> {
    /// Notes of an earlier scan by relpath: one whose stamp is unchanged is reused without opening the file.
    pub previous: Option<&'a HashMap<String, ScannedNote>>,
}

/// Why the vault root itself could not be opened.
#[derive(Debug, thiserror::Error)]
#[error("vault root {path} cannot be opened: {source}")]
pub struct RootError {
    /// The root.
    pub path: String,
    /// The cause.
    #[source]
    pub source: std::io::Error,
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

fn file_flags() -> OFlags {
    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY
}

/// A listed candidate note, before it is read.
struct Candidate {
    relpath: String,
    raw: Vec<Vec<u8>>,
    mapping: usize,
    stamp: NoteStamp,
    nlink: u64,
}

struct Walk<'v> {
    vault: &'v VaultConfig,
    excludes: Excludes,
    rows: Vec<ScannedNote>,
    candidates: Vec<Candidate>,
    /// Identity (device, inode) of every directory listed, by its raw path from the root.
    dirs: HashMap<Vec<Vec<u8>>, (u64, u64)>,
}

impl Walk<'_> {
    fn row(&mut self, relpath: String, mapping: usize, status: NoteStatus, finding: Finding) {
        let m = &self.vault.mappings[mapping];
        self.rows.push(ScannedNote {
            relpath,
            mapping,
            scope: m.scope.scope(),
            scope_id: m.scope_id.clone(),
            status,
            findings: vec![finding],
            size_bytes: None,
            mtime_ns: None,
            stamp: None,
            content_sha256: None,
            frontmatter_sha256: None,
            content: None,
        });
    }
}

fn nfc(s: &str) -> String {
    s.nfc().collect()
}

/// Scan a vault (module docs): [`list_vault`] then [`read_listing`]. Only mappings with `index: true` are walked.
///
/// Errors: [`RootError`] when the root cannot be opened as a directory without following a link. Everything
/// below the root is a row, never an error.
pub fn scan_vault(vault: &VaultConfig, options: ScanOptions<'_>) -> Result<ScanReport, RootError> {
    let listing = list_vault(vault)?;
    Ok(read_listing(vault, listing, options))
}

/// The walk of a vault: every refusal found while listing, every candidate note with its stamp, and the open root.
/// Nothing has been read yet; [`read_listing`] reads the candidates, re-opening each directory from the root and
/// checking it is the one listed.
pub struct Listing {
    root: OwnedFd,
    rows: Vec<ScannedNote>,
    candidates: Vec<Candidate>,
    dirs: HashMap<Vec<Vec<u8>>, (u64, u64)>,
}

impl Listing {
    /// `(relpath, stamp)` of every candidate note, sorted by path: equal to an earlier listing's exactly when no
    /// candidate was added, removed or written since (the cheap "unchanged" check of a rescan).
    pub fn stamps(&self) -> Vec<(String, NoteStamp)> {
        let mut v: Vec<(String, NoteStamp)> = self.candidates.iter().map(|c| (c.relpath.clone(), c.stamp)).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// How many rows the walk refused (symlinks, missing folders, sync artifacts, ...).
    pub fn refusals(&self) -> usize {
        self.rows.len()
    }
}

/// SHA-256 (lowercase hex) of a listing's `stamps` ([`Listing::stamps`], sorted by path): each path, a NUL (no
/// path holds one), then device, inode, size, mtime and ctime as 8 little-endian bytes each. Two listings have the
/// same digest exactly when their stamps are equal (barring a SHA-256 collision), so a process can remember a
/// 64-character digest instead of the listing.
pub fn stamps_digest(stamps: &[(String, NoteStamp)]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for (path, s) in stamps {
        h.update(path.as_bytes());
        h.update([0u8]);
        h.update(s.dev.to_le_bytes());
        h.update(s.ino.to_le_bytes());
        h.update(s.size.to_le_bytes());
        h.update(s.mtime_ns.to_le_bytes());
        h.update(s.ctime_ns.to_le_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Walk the indexed mapping folders of a vault without reading any note.
///
/// Errors: [`RootError`] when the root cannot be opened as a directory without following a link.
pub fn list_vault(vault: &VaultConfig) -> Result<Listing, RootError> {
    let root = rustix::fs::open(&vault.root, dir_flags(), Mode::empty()).map_err(|e| RootError {
        path: vault.root.display().to_string(),
        source: e.into(),
    })?;
    let root_stat = rustix::fs::fstat(&root).map_err(|e| RootError {
        path: vault.root.display().to_string(),
        source: e.into(),
    })?;
    let mut walk = Walk {
        vault,
        excludes: Excludes::new(&vault.exclude),
        rows: Vec::new(),
        candidates: Vec::new(),
        dirs: HashMap::new(),
    };
    let rs = NoteStamp::of(&root_stat);
    walk.dirs.insert(Vec::new(), (rs.dev, rs.ino));
    for (i, mapping) in vault.mappings.iter().enumerate() {
        if mapping.index {
            walk_mapping(&mut walk, &root, i, mapping);
        }
    }
    let Walk {
        rows, candidates, dirs, ..
    } = walk;
    Ok(Listing {
        root,
        rows,
        candidates,
        dirs,
    })
}

/// Read the candidates of a listing (limits, confined reads, parsing; module docs) into the scan report.
pub fn read_listing(vault: &VaultConfig, listing: Listing, options: ScanOptions<'_>) -> ScanReport {
    let Listing {
        root,
        mut rows,
        mut candidates,
        dirs,
    } = listing;
    candidates.sort_by(|a, b| a.relpath.cmp(&b.relpath));
    let mut total: u64 = 0;
    let mut folded: HashMap<String, usize> = HashMap::new();
    let mut collided: std::collections::HashSet<String> = std::collections::HashSet::new();
    for c in &candidates {
        *folded.entry(fold(&c.relpath)).or_default() += 1;
    }
    let mut reader = Reader {
        root: &root,
        dirs: &dirs,
        chain: Vec::new(),
    };
    let n = candidates.len();
    for (pos, c) in candidates.iter().enumerate() {
        let mapping = &vault.mappings[c.mapping];
        let mut row = ScannedNote {
            relpath: c.relpath.clone(),
            mapping: c.mapping,
            scope: mapping.scope.scope(),
            scope_id: mapping.scope_id.clone(),
            status: NoteStatus::Skipped,
            findings: Vec::new(),
            size_bytes: None,
            mtime_ns: None,
            stamp: Some(c.stamp),
            content_sha256: None,
            frontmatter_sha256: None,
            content: None,
        };
        if pos >= vault.max_notes as usize {
            row.findings.push(Finding::new(
                FindingCode::NoteLimitExceeded,
                format!("max_notes exceeded; {} candidates skipped", n - pos),
            ));
            rows.push(row);
            break;
        }
        if folded.get(&fold(&c.relpath)).copied().unwrap_or(0) > 1 {
            // Names that differ only in Unicode form (NFC / NFD) share one NFC path: one quarantined row stands for
            // them all (two rows with one path would break the notes table's unique path and stop every reconcile).
            if !collided.insert(c.relpath.clone()) {
                continue;
            }
            row.status = NoteStatus::Quarantined;
            row.findings
                .push(Finding::new(FindingCode::PathCaseCollision, "case-collision path"));
            rows.push(row);
            continue;
        }
        if c.nlink > 1 && !mapping.allow_hardlinks {
            row.status = NoteStatus::Quarantined;
            row.findings
                .push(Finding::new(FindingCode::HardlinkRefused, "hardlink refused"));
            rows.push(row);
            continue;
        }
        if c.stamp.size > vault.max_note_bytes {
            row.findings
                .push(Finding::new(FindingCode::NoteTooLarge, "max_note_bytes exceeded"));
            rows.push(row);
            continue;
        }
        if total + c.stamp.size > MAX_TOTAL_BYTES {
            row.findings.push(Finding::new(
                FindingCode::ByteBudgetExceeded,
                format!("total scan byte budget exceeded; {} candidates skipped", n - pos),
            ));
            rows.push(row);
            break;
        }
        if let Some(prev) = options
            .previous
            .and_then(|p| p.get(&c.relpath))
            .filter(|p| p.stamp == Some(c.stamp) && p.size_bytes.is_some() && p.mapping == c.mapping)
        {
            total += c.stamp.size;
            let mut reused = prev.clone();
            reused.scope = row.scope;
            reused.scope_id = row.scope_id;
            rows.push(reused);
            continue;
        }
        match reader.read(c, vault.max_note_bytes) {
            Err(finding) => {
                row.findings.push(finding);
                rows.push(row);
            }
            Ok((bytes, stamp)) => {
                total += bytes.len() as u64;
                row.stamp = Some(stamp);
                examine(&mut row, &bytes, stamp, vault, mapping);
                rows.push(row);
            }
        }
    }
    rows.sort_by(|a, b| a.relpath.cmp(&b.relpath));
    ScanReport {
        notes: rows,
        total_bytes_scanned: total,
        max_total_bytes: MAX_TOTAL_BYTES,
    }
}

/// Read one listed note again, confined like a scan's read (spec/vault-facts.md section 5 "Reading a row"): the
/// root and every directory of `relpath` opened without following links (a component whose spelling on disk is
/// another Unicode normalisation of the NFC `relpath`, e.g. NFD, is found by listing its directory), the note
/// opened with `O_NOFOLLOW`, at most `max` bytes read (a longer note is cut at `max`), unchanged while read.
/// Returns the bytes and the stamp read.
///
/// Errors: a finding (`path_escapes_root` when a component is a link, `unstable_skipped` when the note is missing,
/// not a regular file or changed while read); never the note's content.
pub fn read_note(vault: &VaultConfig, relpath: &str, max: u64) -> Result<(Vec<u8>, NoteStamp), Finding> {
    let unstable = || Finding::new(FindingCode::UnstableSkipped, "note changed while scanned");
    let escaped = || Finding::new(FindingCode::PathEscapesRoot, "path component changed into a link");
    let mut dir = rustix::fs::open(&vault.root, dir_flags(), Mode::empty()).map_err(|_| unstable())?;
    let parts: Vec<&str> = relpath.split('/').collect();
    let Some((file, dirs)) = parts.split_last() else {
        return Err(unstable());
    };
    if parts.iter().any(|p| p.is_empty() || *p == "." || *p == "..") {
        return Err(escaped());
    }
    for part in dirs {
        let name = on_disk_name(&dir, part).ok_or_else(unstable)?;
        dir = match rustix::fs::openat(&dir, OsStr::from_bytes(&name), dir_flags(), Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::LOOP | Errno::NOTDIR) => return Err(escaped()),
            Err(_) => return Err(unstable()),
        };
    }
    let name = on_disk_name(&dir, file).ok_or_else(unstable)?;
    let fd = match rustix::fs::openat(&dir, OsStr::from_bytes(&name), file_flags(), Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::LOOP) => return Err(Finding::new(FindingCode::PathEscapesRoot, "note changed into a link")),
        Err(_) => return Err(unstable()),
    };
    let before = rustix::fs::fstat(&fd).map_err(|_| unstable())?;
    if FileType::from_raw_mode(before.st_mode) != FileType::RegularFile {
        return Err(unstable());
    }
    let stamp = NoteStamp::of(&before);
    let mut file = std::fs::File::from(fd);
    let mut bytes = Vec::with_capacity(usize::try_from(stamp.size.min(max)).unwrap_or(0));
    (&mut file).take(max).read_to_end(&mut bytes).map_err(|_| unstable())?;
    let after = rustix::fs::fstat(&file).map_err(|_| unstable())?;
    if NoteStamp::of(&after) != stamp {
        return Err(unstable());
    }
    Ok((bytes, stamp))
}

/// The name in `dir` whose NFC form is `nfc_name` (the name itself when it exists as spelled).
fn on_disk_name(dir: &OwnedFd, nfc_name: &str) -> Option<Vec<u8>> {
    if rustix::fs::statat(dir, nfc_name, AtFlags::SYMLINK_NOFOLLOW).is_ok() {
        return Some(nfc_name.as_bytes().to_vec());
    }
    let dup = rustix::io::dup(dir).ok()?;
    let listing = Dir::new(dup).ok()?;
    listing.flatten().find_map(|entry| {
        let name = entry.file_name().to_bytes();
        let s = std::str::from_utf8(name).ok()?;
        (nfc(s) == nfc_name).then(|| name.to_vec())
    })
}

/// Open a mapping folder component by component from the root, then walk it.
fn walk_mapping(walk: &mut Walk<'_>, root: &OwnedFd, index: usize, mapping: &Mapping) {
    let mut current: Option<OwnedFd> = None;
    let mut raw: Vec<Vec<u8>> = Vec::new();
    for comp in mapping.folder.split('/') {
        let parent = current.as_ref().map_or(root.as_fd(), AsFd::as_fd);
        let refusal = match rustix::fs::statat(parent, comp, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => Some((
                NoteStatus::Quarantined,
                Finding::new(FindingCode::SymlinkRefused, "symlinked mapping root"),
            )),
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {
                match rustix::fs::openat(parent, comp, dir_flags(), Mode::empty()) {
                    Ok(fd) => match rustix::fs::fstat(&fd) {
                        Ok(opened) if same_inode(&opened, &st) => {
                            raw.push(comp.as_bytes().to_vec());
                            let s = NoteStamp::of(&opened);
                            walk.dirs.insert(raw.clone(), (s.dev, s.ino));
                            current = Some(fd);
                            None
                        }
                        _ => Some(unreadable()),
                    },
                    Err(Errno::LOOP | Errno::NOTDIR) => Some((
                        NoteStatus::Quarantined,
                        Finding::new(FindingCode::SymlinkRefused, "symlinked mapping root"),
                    )),
                    Err(_) => Some(unreadable()),
                }
            }
            Ok(_) | Err(Errno::NOENT | Errno::NOTDIR) => Some(missing()),
            Err(_) => Some(unreadable()),
        };
        if let Some((status, finding)) = refusal {
            walk.row(mapping.folder.clone(), index, status, finding);
            return;
        }
    }
    if let Some(fd) = current {
        let folder = nfc(&mapping.folder);
        walk_dir(walk, fd, &folder, &mut raw, index, 0);
    }
}

fn missing() -> (NoteStatus, Finding) {
    (
        NoteStatus::Skipped,
        Finding::new(FindingCode::MappingFolderMissing, "mapping folder is missing"),
    )
}

fn unreadable() -> (NoteStatus, Finding) {
    (
        NoteStatus::Skipped,
        Finding::new(FindingCode::MappingFolderUnreadable, "mapping folder is unreadable"),
    )
}

fn same_inode(a: &Stat, b: &Stat) -> bool {
    let (x, y) = (NoteStamp::of(a), NoteStamp::of(b));
    x.dev == y.dev && x.ino == y.ino
}

fn is_sync_artifact(name: &str) -> bool {
    let lower = name.to_lowercase();
    lower.contains(".sync-conflict-") || lower.contains("conflicted copy") || lower.starts_with(".~lock.")
}

fn is_markdown_name(name: &str) -> bool {
    name.len() >= 3 && name.as_bytes()[name.len() - 3..].eq_ignore_ascii_case(b".md")
}

/// List one directory (entries in byte order of their names) and recurse into its subdirectories.
fn walk_dir(walk: &mut Walk<'_>, dir: OwnedFd, rel: &str, raw: &mut Vec<Vec<u8>>, mapping: usize, depth: usize) {
    let Ok(mut listing) = Dir::new(dir) else {
        walk.row(
            rel.to_owned(),
            mapping,
            NoteStatus::Skipped,
            Finding::new(FindingCode::UnstableSkipped, "directory could not be listed"),
        );
        return;
    };
    let mut names: Vec<Vec<u8>> = Vec::new();
    for entry in listing.by_ref() {
        let Ok(entry) = entry else { break };
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(name.to_vec());
        }
    }
    names.sort();
    let Ok(dir_fd) = listing.fd() else { return };
    for name in names {
        let Ok(name_str) = std::str::from_utf8(&name) else {
            tracing::warn!(folder = rel, "vault entry with a non-UTF-8 name ignored");
            continue;
        };
        let relpath = format!("{rel}/{}", nfc(name_str));
        let os_name = OsStr::from_bytes(&name);
        let Ok(st) = rustix::fs::statat(dir_fd, os_name, AtFlags::SYMLINK_NOFOLLOW) else {
            // Vanished between the listing and the stat: nothing to report.
            continue;
        };
        let kind = FileType::from_raw_mode(st.st_mode);
        if kind == FileType::Directory {
            if walk.excludes.is_excluded_dir(&relpath) {
                continue;
            }
        } else if walk.excludes.is_excluded(&relpath) {
            continue;
        }
        match kind {
            FileType::Symlink => walk.row(
                relpath,
                mapping,
                NoteStatus::Quarantined,
                Finding::new(FindingCode::SymlinkRefused, "symlinked path component"),
            ),
            FileType::Directory => {
                if depth + 1 > MAX_DIR_DEPTH {
                    walk.row(
                        relpath,
                        mapping,
                        NoteStatus::Skipped,
                        Finding::new(FindingCode::UnstableSkipped, "directory nesting too deep"),
                    );
                    continue;
                }
                match rustix::fs::openat(dir_fd, os_name, dir_flags(), Mode::empty()) {
                    Ok(sub) => match rustix::fs::fstat(&sub) {
                        Ok(opened) if same_inode(&opened, &st) => {
                            raw.push(name.clone());
                            let s = NoteStamp::of(&opened);
                            walk.dirs.insert(raw.clone(), (s.dev, s.ino));
                            walk_dir(walk, sub, &relpath, raw, mapping, depth + 1);
                            raw.pop();
                        }
                        _ => walk.row(
                            relpath,
                            mapping,
                            NoteStatus::Skipped,
                            Finding::new(FindingCode::UnstableSkipped, "directory changed while scanned"),
                        ),
                    },
                    Err(Errno::LOOP | Errno::NOTDIR) => walk.row(
                        relpath,
                        mapping,
                        NoteStatus::Skipped,
                        Finding::new(FindingCode::PathEscapesRoot, "path component changed into a link"),
                    ),
                    Err(_) => walk.row(
                        relpath,
                        mapping,
                        NoteStatus::Skipped,
                        Finding::new(FindingCode::UnstableSkipped, "directory could not be opened"),
                    ),
                }
            }
            FileType::RegularFile if is_markdown_name(name_str) => {
                if is_sync_artifact(name_str) {
                    walk.row(
                        relpath,
                        mapping,
                        NoteStatus::Skipped,
                        Finding::new(FindingCode::SyncArtifactSkipped, "sync-conflict filename"),
                    );
                    continue;
                }
                let mut full = raw.clone();
                full.push(name.clone());
                #[allow(
                    clippy::useless_conversion,
                    clippy::unnecessary_cast,
                    reason = "nlink width differs by target"
                )]
                walk.candidates.push(Candidate {
                    relpath,
                    raw: full,
                    mapping,
                    stamp: NoteStamp::of(&st),
                    nlink: st.st_nlink as u64,
                });
            }
            FileType::RegularFile => {}
            _ if is_markdown_name(name_str) => walk.row(
                relpath,
                mapping,
                NoteStatus::Skipped,
                Finding::new(FindingCode::NonRegularFileRefused, "non-regular Markdown entry"),
            ),
            _ => {}
        }
    }
}

/// Reads candidates through a cached chain of directory descriptors opened from the root.
struct Reader<'a> {
    root: &'a OwnedFd,
    dirs: &'a HashMap<Vec<Vec<u8>>, (u64, u64)>,
    chain: Vec<(Vec<u8>, OwnedFd)>,
}

impl Reader<'_> {
    /// Open the directory chain of `raw` (all but the last component), reusing the common prefix.
    fn open_dirs(&mut self, dirs: &[Vec<u8>]) -> Result<(), Finding> {
        let common = self
            .chain
            .iter()
            .zip(dirs)
            .take_while(|((name, _), want)| name == *want)
            .count();
        self.chain.truncate(common);
        for i in common..dirs.len() {
            let parent = self.chain.last().map_or(self.root.as_fd(), |(_, fd)| fd.as_fd());
            let name = OsStr::from_bytes(&dirs[i]);
            let fd = match rustix::fs::openat(parent, name, dir_flags(), Mode::empty()) {
                Ok(fd) => fd,
                Err(Errno::LOOP | Errno::NOTDIR) => {
                    return Err(Finding::new(
                        FindingCode::PathEscapesRoot,
                        "path component changed into a link",
                    ));
                }
                Err(_) => return Err(Finding::new(FindingCode::UnstableSkipped, "note changed while scanned")),
            };
            let st = rustix::fs::fstat(&fd)
                .map_err(|_| Finding::new(FindingCode::UnstableSkipped, "note changed while scanned"))?;
            let s = NoteStamp::of(&st);
            if self.dirs.get(&dirs[..=i].to_vec()) != Some(&(s.dev, s.ino)) {
                return Err(Finding::new(FindingCode::UnstableSkipped, "note changed while scanned"));
            }
            self.chain.push((dirs[i].clone(), fd));
        }
        Ok(())
    }

    /// Read a candidate: the listed inode, unchanged while read, at most `max` bytes.
    fn read(&mut self, c: &Candidate, max: u64) -> Result<(Vec<u8>, NoteStamp), Finding> {
        let unstable = || Finding::new(FindingCode::UnstableSkipped, "note changed while scanned");
        let Some((name, dirs)) = c.raw.split_last() else {
            return Err(unstable());
        };
        self.open_dirs(dirs)?;
        let parent = self.chain.last().map_or(self.root.as_fd(), |(_, fd)| fd.as_fd());
        let fd = match rustix::fs::openat(parent, OsStr::from_bytes(name), file_flags(), Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::LOOP) => {
                return Err(Finding::new(FindingCode::PathEscapesRoot, "note changed into a link"));
            }
            Err(_) => return Err(unstable()),
        };
        let before = rustix::fs::fstat(&fd).map_err(|_| unstable())?;
        let stamp = NoteStamp::of(&before);
        if FileType::from_raw_mode(before.st_mode) != FileType::RegularFile
            || stamp.dev != c.stamp.dev
            || stamp.ino != c.stamp.ino
        {
            return Err(unstable());
        }
        if stamp.size > max {
            return Err(Finding::new(FindingCode::NoteTooLarge, "max_note_bytes exceeded"));
        }
        let mut file = std::fs::File::from(fd);
        let mut bytes = Vec::with_capacity(usize::try_from(stamp.size).unwrap_or(0));
        (&mut file)
            .take(max + 1)
            .read_to_end(&mut bytes)
            .map_err(|_| unstable())?;
        let after = rustix::fs::fstat(&file).map_err(|_| unstable())?;
        if NoteStamp::of(&after) != stamp || bytes.len() as u64 != stamp.size {
            return Err(unstable());
        }
        Ok((bytes, stamp))
    }
}

/// Decode, hash, parse and judge a note that was read.
fn examine(row: &mut ScannedNote, bytes: &[u8], stamp: NoteStamp, vault: &VaultConfig, mapping: &Mapping) {
    row.size_bytes = Some(bytes.len() as u64);
    row.mtime_ns = Some(stamp.mtime_ns);
    let text = match normalize_text(bytes) {
        Ok(t) => t,
        Err(e) => {
            row.status = NoteStatus::Quarantined;
            row.findings.push(e.finding());
            return;
        }
    };
    row.content_sha256 = Some(sha256_hex(text.as_bytes()));
    let parsed = parse_note(&text, vault.max_frontmatter_bytes as usize);
    if let Some(region) = parsed.region() {
        row.frontmatter_sha256 = Some(sha256_hex(region.raw(&text).as_bytes()));
    }
    let body = parsed.body(&text);
    let fields = match &parsed.outcome {
        Ok(fm) => Some(NoteFields::of(fm)),
        Err(f) => {
            row.findings.push(f.clone());
            None
        }
    };
    let excalidraw =
        row.relpath.to_lowercase().ends_with(".excalidraw.md") || fields.as_ref().is_some_and(|f| f.excalidraw);
    if excalidraw {
        row.findings.push(Finding::new(
            FindingCode::PluginFormatExcluded,
            "Excalidraw format is not indexed",
        ));
    }
    if let Some(pattern) = cao_core::secret::scan(body) {
        row.findings.push(Finding::secret(pattern, mapping.secret_gate));
    }
    row.status = if row.findings.iter().any(|f| f.severity == Severity::Error) {
        NoteStatus::Quarantined
    } else if excalidraw {
        NoteStatus::Unsupported
    } else {
        NoteStatus::Indexed
    };
    if let Some(fields) = fields {
        let (links, link_findings) = if row.status == NoteStatus::Indexed {
            extract_links(body)
        } else {
            (Vec::new(), Vec::new())
        };
        row.content = Some(NoteContent {
            fields,
            links,
            link_findings,
            words: cao_core::text::split_words(&text).count() as u64,
        });
    }
}

#[cfg(test)]
mod digest_tests {
    use super::*;

    fn stamp(ino: u64, ctime_ns: i64) -> NoteStamp {
        NoteStamp {
            dev: 1,
            ino,
            size: 10,
            mtime_ns: ctime_ns,
            ctime_ns,
        }
    }

    #[test]
    fn the_digest_changes_with_any_path_or_stamp() {
        let base = vec![("a.md".to_owned(), stamp(1, 5)), ("b.md".to_owned(), stamp(2, 5))];
        let d = stamps_digest(&base);
        assert_eq!(d.len(), 64);
        assert_eq!(d, stamps_digest(&base.clone()), "deterministic");
        let mut edited = base.clone();
        edited[1].1.ctime_ns = 6;
        let mut renamed = base.clone();
        renamed[0].0 = "c.md".to_owned();
        let removed = base[..1].to_vec();
        let mut replaced = base.clone();
        replaced[0].1.ino = 3;
        for other in [edited, renamed, removed, replaced] {
            assert_ne!(d, stamps_digest(&other), "{other:?}");
        }
        assert_ne!(stamps_digest(&[]), d);
    }
}
