//! Provider config files: the `<cao-memory>` block written into the per-project file an agent CLI reads at start
//! (spec 000 "Context Injection" route 2 and "Supersedes lifecycle (opt-in)", provider-file paragraph).
//!
//! | provider      | file (under the terminal's cwd)   | ownership                                   |
//! |---------------|-----------------------------------|---------------------------------------------|
//! | `claude_code` | `.claude/CLAUDE.md`               | only the delimited block; every other byte kept |
//! | `codex`       | `AGENTS.md`                       | only the delimited block; every other byte kept |
//! | `kiro_cli`    | `.kiro/steering/cao-memory.md`    | the whole file (`<block>\n`)                |
//!
//! The delimited block is the reference's: a line [`BEGIN_MARKER`], the block's lines, a line [`END_MARKER`].
//!
//! Rules (each is tested in `tests/it/provider_files.rs`):
//! - Markers count only as whole lines (surrounding spaces/tabs and a CR before the LF allowed), so a marker quoted
//!   inside prose is user text. Each begin line pairs with the next end line; a begin line followed by another
//!   begin line before any end line (or by none) is a stray marker and stays as user text.
//! - The first complete block is rewritten in place: bytes before its begin line and from the end of its end
//!   marker on (the end line's own line break included) are kept exactly. Later complete blocks are ours and stale;
//!   they are removed as whole lines (with their line breaks). Text between blocks is kept, except where removing a
//!   stale block pairs a stray begin line before it with a stray end line after it: that pair is then a complete
//!   block and is removed too (repeated until none is left), so splicing the same block twice changes nothing.
//! - A file without a block gets one appended: after the existing bytes if they end with a line break (or are
//!   empty) followed by one line break; otherwise after one added line break and without a final one, so a file
//!   that did not end with a line break still does not.
//! - The block's line breaks follow the file: the file's first line break (CRLF or LF; LF for a file without
//!   one). A UTF-8 byte order mark stays first. Files need not be UTF-8: the splice works on bytes.
//! - Inside the block, an exact marker string in memory content is written as `&lt;!-- cao-memory:...`, so no
//!   memory can end or start a block early (for this reader or the reference's substring search).
//! - Path validation (all providers, before anything is created): the cwd must be an existing absolute directory;
//!   each directory on the way to the file and the file itself, when they exist, must resolve (symlinks
//!   followed) inside the canonical cwd; the file must be a regular file. Missing directories are created
//!   (`0777` less the umask). A symlinked file inside the cwd is followed and the link kept, as the reference
//!   does (`CLAUDE.md -> ../AGENTS.md` stays one file).
//! - Nothing to inject (memory disabled, an empty block), a failed fetch, a refused path or a failed write leaves
//!   the previous file byte-for-byte in place. New content equal to the old is not written (`Unchanged`).
//! - Writes are atomic and serialised: an exclusive `flock` on the target's directory (10 s timeout; no lock file
//!   is left in the user's tree), the existing file read with `O_NOFOLLOW`, a temp file beside it created with
//!   `O_CREAT|O_EXCL|O_NOFOLLOW`, given the existing file's permission bits (a new file: `0666` less the umask),
//!   written, fsynced, renamed over the target, and the directory fsynced. The directory is re-checked under the
//!   lock (still canonical, same inode), which narrows, but cannot close without `openat`, the window in which
//!   someone with write access to the cwd could swap a directory for a symlink.

use crate::service::MemoryService;
use cao_core::TerminalContext;
use cao_core::fs::{FileMode, WriteOptions, atomic_write_with};
use cao_ops::inject::ContextRequest;
use cao_store::MemoryError;
use serde::Serialize;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The line that opens the managed block in `CLAUDE.md` / `AGENTS.md` (reference plugins' `BEGIN_MARKER`).
pub const BEGIN_MARKER: &str = "<!-- cao-memory:begin -->";
/// The line that closes the managed block (reference plugins' `END_MARKER`).
pub const END_MARKER: &str = "<!-- cao-memory:end -->";
/// Largest existing provider file that is rewritten (bytes); a bigger one is refused and left alone.
pub const MAX_PROVIDER_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// How long a writer waits for another writer of the same directory (reference `DEFAULT_LOCK_TIMEOUT_SECONDS`).
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(10);

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// An agent CLI whose per-project config file receives the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// Claude Code: `<cwd>/.claude/CLAUDE.md`, delimited block.
    ClaudeCode,
    /// Codex CLI: `<cwd>/AGENTS.md`, delimited block.
    Codex,
    /// Kiro CLI: `<cwd>/.kiro/steering/cao-memory.md`, whole file.
    KiroCli,
}

impl Provider {
    /// Every provider with a config file.
    pub const ALL: [Provider; 3] = [Provider::ClaudeCode, Provider::Codex, Provider::KiroCli];

    /// The provider named `name` (`claude_code`, `codex`, `kiro_cli`, as in `POST /terminals`); `None` for
    /// providers without a config file.
    pub fn parse(name: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::ClaudeCode => "claude_code",
            Provider::Codex => "codex",
            Provider::KiroCli => "kiro_cli",
        }
    }

    /// The file's path relative to the cwd, `/`-separated.
    pub fn relative_path(self) -> &'static str {
        match self {
            Provider::ClaudeCode => ".claude/CLAUDE.md",
            Provider::Codex => "AGENTS.md",
            Provider::KiroCli => ".kiro/steering/cao-memory.md",
        }
    }

    /// Whether the file is owned whole (Kiro) rather than holding a delimited block among user text.
    pub fn owns_whole_file(self) -> bool {
        self == Provider::KiroCli
    }

    fn dirs(self) -> &'static [&'static str] {
        match self {
            Provider::ClaudeCode => &[".claude"],
            Provider::Codex => &[],
            Provider::KiroCli => &[".kiro", "steering"],
        }
    }

    fn file_name(self) -> &'static str {
        match self {
            Provider::ClaudeCode => "CLAUDE.md",
            Provider::Codex => "AGENTS.md",
            Provider::KiroCli => "cao-memory.md",
        }
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why nothing was written although nothing was wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Retrieval found nothing to inject; the previous block stays.
    Empty,
    /// `memory.enabled` is off; nothing is fetched or injected.
    Disabled,
}

/// What [`write_provider_file`] did. Serialises as `{"outcome": "written", "path": ...}` and so on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ProviderWrite {
    /// The file was replaced atomically with the new block.
    Written {
        /// The file written (symlinks resolved).
        path: PathBuf,
    },
    /// The file already held exactly this block; nothing was written.
    Unchanged {
        /// The file checked (symlinks resolved).
        path: PathBuf,
    },
    /// Nothing to write; the previous file is untouched.
    Skipped {
        /// Why.
        reason: SkipReason,
    },
    /// The cwd or target failed validation (not absolute, missing, a symlink escaping the cwd, not a regular
    /// file, too large); nothing was created or written.
    Refused {
        /// One line naming the offending path.
        reason: String,
    },
}

impl ProviderWrite {
    /// Written, unchanged or skipped (a refusal is not a success).
    pub fn is_success(&self) -> bool {
        !matches!(self, ProviderWrite::Refused { .. })
    }
}

impl std::fmt::Display for ProviderWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProviderWrite::Written { path } => write!(f, "written: {}", path.display()),
            ProviderWrite::Unchanged { path } => write!(f, "unchanged: {}", path.display()),
            ProviderWrite::Skipped {
                reason: SkipReason::Empty,
            } => f.write_str("skipped: empty (no memory to inject; the previous block is kept)"),
            ProviderWrite::Skipped {
                reason: SkipReason::Disabled,
            } => f.write_str("skipped: memory disabled (memory.enabled is false)"),
            ProviderWrite::Refused { reason } => write!(f, "refused: {reason}"),
        }
    }
}

/// Write the caller's `<cao-memory>` block into `provider`'s config file under `ctx.cwd`, with the default
/// budget. This is what creating a terminal of that provider triggers.
///
/// Errors: a failed fetch (`MemoryService::context_block`'s errors) or a failed write ([`MemoryError::Io`]); in
/// both cases the previous file is untouched. Validation failures are [`ProviderWrite::Refused`], not errors.
pub fn write_provider_file(
    svc: &MemoryService,
    provider: Provider,
    ctx: &TerminalContext,
) -> Result<ProviderWrite, MemoryError> {
    write_provider_file_with(svc, provider, ctx, ContextRequest::default())
}

/// [`write_provider_file`] with an explicit [`ContextRequest`] (budget).
///
/// Errors: as [`write_provider_file`].
pub fn write_provider_file_with(
    svc: &MemoryService,
    provider: Provider,
    ctx: &TerminalContext,
    req: ContextRequest,
) -> Result<ProviderWrite, MemoryError> {
    let Some(cwd) = ctx.cwd.as_deref() else {
        return Ok(ProviderWrite::Refused {
            reason: "no working directory for the terminal".to_owned(),
        });
    };
    if let Err(reason) = canonical_cwd(cwd) {
        return Ok(ProviderWrite::Refused { reason });
    }
    if !svc.memory_enabled() {
        return Ok(ProviderWrite::Skipped {
            reason: SkipReason::Disabled,
        });
    }
    let block = svc.context_block(ctx, req)?;
    write_provider_block(provider, cwd, block.as_deref())
}

/// Write an already built `block` (for example one fetched from a remote memory owner) into `provider`'s config
/// file under `cwd`. `None` or a blank block is [`SkipReason::Empty`].
///
/// Errors: [`MemoryError::Io`] when a directory cannot be created, the lock is not obtained in
/// [`LOCK_TIMEOUT`], or the file cannot be read or replaced; the previous file is untouched.
pub fn write_provider_block(provider: Provider, cwd: &Path, block: Option<&str>) -> Result<ProviderWrite, MemoryError> {
    if let Err(reason) = canonical_cwd(cwd) {
        return Ok(ProviderWrite::Refused { reason });
    }
    let Some(block) = block.filter(|b| !b.trim().is_empty()) else {
        return Ok(ProviderWrite::Skipped {
            reason: SkipReason::Empty,
        });
    };
    let outcome = resolve_target(provider, cwd).and_then(|target| publish(provider, &target, block));
    match outcome {
        Ok(w) => Ok(w),
        Err(Fail::Refuse(reason)) => Ok(ProviderWrite::Refused { reason }),
        Err(Fail::Io(e)) => Err(e),
    }
}

/// The new bytes of a `CLAUDE.md` / `AGENTS.md` holding `existing`, with its cao-memory block set to `block`
/// (the `<cao-memory>` text, `\n`-separated). Pure; see the module documentation for the rules.
pub fn splice_block(existing: &[u8], block: &str) -> Vec<u8> {
    let (bom, body) = match existing.strip_prefix(BOM) {
        Some(rest) => (BOM, rest),
        None => (&[][..], existing),
    };
    let nl = detect_newline(body);
    let rendered = render_delimited(block, nl);
    let blocks = find_blocks(body);
    let mut out = Vec::with_capacity(existing.len() + rendered.len() + 4);
    out.extend_from_slice(bom);
    let Some((first, later)) = blocks.split_first() else {
        out.extend_from_slice(body);
        if body.is_empty() || body.ends_with(b"\n") {
            out.extend_from_slice(&rendered);
            out.extend_from_slice(nl);
        } else {
            out.extend_from_slice(nl);
            out.extend_from_slice(&rendered);
        }
        return out;
    };
    out.extend_from_slice(&body[..first.start]);
    out.extend_from_slice(&rendered);
    // Removing a stale block can pair a stray begin line before it with a stray end line after it (found by the
    // `provider_splice` fuzz target): that pair is a complete block of the result, which the next splice would
    // remove, so it is removed now. Each pass removes at least one block, so this ends; the text after the first
    // block then holds no complete block and a second splice changes nothing.
    let mut tail = body[first.marker_end..].to_vec();
    let mut stale: Vec<Span> = later.iter().map(|b| b.shifted_back(first.marker_end)).collect();
    while !stale.is_empty() {
        tail = remove_blocks(&tail, &stale);
        stale = find_blocks(&tail);
    }
    out.extend_from_slice(&tail);
    out
}

/// `tail` (the bytes after the first block's end marker) without the complete blocks `stale`, each removed as whole
/// lines with its line break; a stale block that was the last line without a line break takes the break before it
/// too, so the file keeps ending without one.
fn remove_blocks(tail: &[u8], stale: &[Span]) -> Vec<u8> {
    let mut out = Vec::with_capacity(tail.len());
    let mut cursor = 0;
    for b in stale {
        out.extend_from_slice(&tail[cursor..b.start]);
        if b.line_end == b.marker_end {
            let cut = trailing_newline_len(&out);
            out.truncate(out.len() - cut);
        }
        cursor = b.line_end;
    }
    out.extend_from_slice(&tail[cursor..]);
    out
}

/// The whole content of Kiro's steering file for `block`: the block with LF line breaks, then one LF
/// (reference: `context_block + "\n"`).
pub fn kiro_file_content(block: &str) -> Vec<u8> {
    let mut s = block.replace("\r\n", "\n");
    s.push('\n');
    s.into_bytes()
}

/// A complete block: byte offsets in the body (after any BOM).
#[derive(Debug, Clone, Copy)]
struct Span {
    /// Start of the begin line.
    start: usize,
    /// End of the end line's content (before its line break).
    marker_end: usize,
    /// End of the end line including its line break.
    line_end: usize,
}

impl Span {
    /// The same block with offsets relative to byte `base` of the body (`base` <= `start`).
    fn shifted_back(self, base: usize) -> Span {
        Span {
            start: self.start - base,
            marker_end: self.marker_end - base,
            line_end: self.line_end - base,
        }
    }
}

/// `(start, content_end, line_end)` of each line; `content_end` excludes `\n` and a `\r` before it.
fn lines(body: &[u8]) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < body.len() {
        match body[start..].iter().position(|&c| c == b'\n') {
            Some(i) => {
                let nl = start + i;
                let content_end = if nl > start && body[nl - 1] == b'\r' {
                    nl - 1
                } else {
                    nl
                };
                out.push((start, content_end, nl + 1));
                start = nl + 1;
            }
            None => {
                out.push((start, body.len(), body.len()));
                start = body.len();
            }
        }
    }
    out
}

fn is_marker(line: &[u8], marker: &str) -> bool {
    line.trim_ascii() == marker.as_bytes()
}

fn find_blocks(body: &[u8]) -> Vec<Span> {
    let ls = lines(body);
    let mut spans = Vec::new();
    let mut i = 0;
    while i < ls.len() {
        let (s, ce, _) = ls[i];
        if !is_marker(&body[s..ce], BEGIN_MARKER) {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        let mut closed = None;
        while j < ls.len() {
            let (js, jce, _) = ls[j];
            if is_marker(&body[js..jce], BEGIN_MARKER) {
                break;
            }
            if is_marker(&body[js..jce], END_MARKER) {
                closed = Some(j);
                break;
            }
            j += 1;
        }
        match closed {
            Some(j) => {
                let (_, jce, jle) = ls[j];
                spans.push(Span {
                    start: s,
                    marker_end: jce,
                    line_end: jle,
                });
                i = j + 1;
            }
            // Stray begin: user text. Continue at the next begin line (or the end).
            None => i = j.max(i + 1),
        }
    }
    spans
}

/// The file's line break: its first one (`\r\n` or `\n`); when it has none, `\r\n` if it ends with a `\r` (the
/// `\n` appended after it would make a `\r\n`, the first line break the next splice sees, so a block rendered with
/// `\n` would be rendered again with `\r\n`: found by the `provider_splice` fuzz target), else `\n`.
fn detect_newline(body: &[u8]) -> &'static [u8] {
    match body.iter().position(|&c| c == b'\n') {
        Some(i) if i > 0 && body[i - 1] == b'\r' => b"\r\n",
        None if body.ends_with(b"\r") => b"\r\n",
        _ => b"\n",
    }
}

fn trailing_newline_len(out: &[u8]) -> usize {
    if out.ends_with(b"\r\n") {
        2
    } else if out.ends_with(b"\n") {
        1
    } else {
        0
    }
}

/// `BEGIN nl <block lines joined by nl> nl END`, without a final line break; marker strings inside the block are
/// defused.
fn render_delimited(block: &str, nl: &[u8]) -> Vec<u8> {
    let body = block
        .replace("\r\n", "\n")
        .replace(BEGIN_MARKER, &BEGIN_MARKER.replacen('<', "&lt;", 1))
        .replace(END_MARKER, &END_MARKER.replacen('<', "&lt;", 1));
    let mut out = Vec::with_capacity(body.len() + 64);
    out.extend_from_slice(BEGIN_MARKER.as_bytes());
    out.extend_from_slice(nl);
    for (i, line) in body.split('\n').enumerate() {
        if i > 0 {
            out.extend_from_slice(nl);
        }
        out.extend_from_slice(line.as_bytes());
    }
    out.extend_from_slice(nl);
    out.extend_from_slice(END_MARKER.as_bytes());
    out
}

/// A validation refusal (reported, not an error) or an I/O failure.
enum Fail {
    Refuse(String),
    Io(MemoryError),
}

fn io_fail(context: String, source: io::Error) -> Fail {
    Fail::Io(MemoryError::Io { context, source })
}

/// The canonical form of `cwd`, which must be an existing absolute directory. Errors: the refusal reason.
fn canonical_cwd(cwd: &Path) -> Result<PathBuf, String> {
    if !cwd.is_absolute() {
        return Err(format!("working directory {} is not an absolute path", cwd.display()));
    }
    let base = fs::canonicalize(cwd).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => format!("working directory {} does not exist", cwd.display()),
        _ => format!("working directory {} cannot be resolved: {e}", cwd.display()),
    })?;
    if !base.is_dir() {
        return Err(format!("working directory {} is not a directory", cwd.display()));
    }
    Ok(base)
}

/// `path` resolved, which must stay inside `base`. Errors: a refusal naming `path`.
fn resolve_inside(path: &Path, base: &Path) -> Result<PathBuf, Fail> {
    let canon = fs::canonicalize(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => Fail::Refuse(format!("{} is a symlink to a missing target", path.display())),
        _ => Fail::Refuse(format!("{} cannot be resolved: {e}", path.display())),
    })?;
    if !canon.starts_with(base) {
        return Err(Fail::Refuse(format!(
            "{} resolves to {}, outside the working directory {}",
            path.display(),
            canon.display(),
            base.display()
        )));
    }
    Ok(canon)
}

/// Validate (and create the missing directories of) `provider`'s file under `cwd`; returns the path to write,
/// symlinks resolved.
fn resolve_target(provider: Provider, cwd: &Path) -> Result<PathBuf, Fail> {
    let base = canonical_cwd(cwd).map_err(Fail::Refuse)?;
    let mut dir = base.clone();
    for comp in provider.dirs() {
        let next = dir.join(comp);
        match fs::symlink_metadata(&next) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => match cao_core::fs::create_dir(&next) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io_fail(format!("cannot create directory {}", next.display()), e)),
            },
            Err(e) => return Err(io_fail(format!("cannot inspect {}", next.display()), e)),
        }
        let canon = resolve_inside(&next, &base)?;
        if !canon.is_dir() {
            return Err(Fail::Refuse(format!("{} is not a directory", next.display())));
        }
        dir = canon;
    }
    let target = dir.join(provider.file_name());
    match fs::symlink_metadata(&target) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(target),
        Err(e) => Err(io_fail(format!("cannot inspect {}", target.display()), e)),
        Ok(m) if m.file_type().is_symlink() => {
            let canon = resolve_inside(&target, &base)?;
            if canon.is_file() {
                Ok(canon)
            } else {
                Err(Fail::Refuse(format!("{} is not a regular file", target.display())))
            }
        }
        Ok(m) if m.is_file() => Ok(target),
        Ok(_) => Err(Fail::Refuse(format!("{} is not a regular file", target.display()))),
    }
}

/// Under the directory lock: read the current file, compute the new bytes, replace atomically when different.
fn publish(provider: Provider, target: &Path, block: &str) -> Result<ProviderWrite, Fail> {
    let dir = target
        .parent()
        .ok_or_else(|| Fail::Refuse(format!("{} has no parent directory", target.display())))?;
    let dir_file = File::open(dir).map_err(|e| io_fail(format!("cannot open directory {}", dir.display()), e))?;
    lock_dir(&dir_file, dir)?;
    // The directory must still be the one validated: canonical and the same inode as the locked handle.
    let same = match (fs::canonicalize(dir), fs::symlink_metadata(dir), dir_file.metadata()) {
        (Ok(c), Ok(now), Ok(held)) => c == dir && now.dev() == held.dev() && now.ino() == held.ino(),
        _ => false,
    };
    if !same {
        return Err(Fail::Refuse(format!(
            "{} changed while it was being written (replaced or now a symlink)",
            dir.display()
        )));
    }
    let existing = read_existing(target)?;
    let new = if provider.owns_whole_file() {
        kiro_file_content(block)
    } else {
        splice_block(existing.as_ref().map_or(&[][..], |(b, _)| b.as_slice()), block)
    };
    if existing.as_ref().is_some_and(|(b, _)| *b == new) {
        return Ok(ProviderWrite::Unchanged {
            path: target.to_path_buf(),
        });
    }
    atomic_replace(&dir_file, target, &new, existing.map(|(_, mode)| mode))
        .map_err(|e| io_fail(format!("cannot write {}", target.display()), e))?;
    Ok(ProviderWrite::Written {
        path: target.to_path_buf(),
    })
}

fn lock_dir(dir_file: &File, dir: &Path) -> Result<(), Fail> {
    let deadline = Instant::now() + LOCK_TIMEOUT;
    loop {
        match dir_file.try_lock() {
            Ok(()) => return Ok(()),
            Err(fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(fs::TryLockError::WouldBlock) => {
                return Err(io_fail(
                    format!(
                        "another writer held the lock on {} for more than {} s",
                        dir.display(),
                        LOCK_TIMEOUT.as_secs()
                    ),
                    io::Error::from(io::ErrorKind::TimedOut),
                ));
            }
            Err(fs::TryLockError::Error(e)) => {
                return Err(io_fail(format!("cannot lock directory {}", dir.display()), e));
            }
        }
    }
}

/// The current bytes and permission bits of `target`, `None` when it does not exist. Never follows a symlink.
fn read_existing(target: &Path) -> Result<Option<(Vec<u8>, u32)>, Fail> {
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(target)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(Fail::Refuse(format!("{} became a symlink", target.display())));
        }
        Err(e) => return Err(io_fail(format!("cannot read {}", target.display()), e)),
    };
    let meta = file
        .metadata()
        .map_err(|e| io_fail(format!("cannot inspect {}", target.display()), e))?;
    if !meta.is_file() {
        return Err(Fail::Refuse(format!("{} is not a regular file", target.display())));
    }
    if meta.len() > MAX_PROVIDER_FILE_BYTES {
        return Err(Fail::Refuse(format!(
            "{} is {} bytes, larger than the {} bytes cao rewrites",
            target.display(),
            meta.len(),
            MAX_PROVIDER_FILE_BYTES
        )));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(MAX_PROVIDER_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_fail(format!("cannot read {}", target.display()), e))?;
    Ok(Some((bytes, meta.permissions().mode() & 0o7777)))
}

/// [`cao_core::fs::atomic_write_with`]: temp file beside `target` (`O_EXCL|O_NOFOLLOW`), `mode` applied (a new
/// file: `0666` less the umask), write, fsync, rename, fsync the directory through the locked handle. The temp
/// file is removed on failure, so the old file and directory are as before.
fn atomic_replace(dir_file: &File, target: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
    let mode = mode.map_or(FileMode::UmaskDefault, FileMode::Exact);
    atomic_write_with(target, bytes, WriteOptions::with_mode(mode).sync_dir_through(dir_file))
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: &str = "<cao-memory>\n## Context from CAO Memory\n- [global] k: v\n</cao-memory>";

    #[test]
    fn provider_names_round_trip() {
        for p in Provider::ALL {
            assert_eq!(Provider::parse(p.as_str()), Some(p));
            assert!(p.relative_path().ends_with(p.file_name()));
        }
        assert_eq!(Provider::parse("q_cli"), None);
        assert_eq!(Provider::parse("Codex"), None);
    }

    /// The `provider_splice` fuzz finding (fuzz/crashes/provider_splice): a file with a BOM whose only line ends in a
    /// lone `\r`. The appended block's first line break joined that `\r` into a `\r\n`, so a second splice of the
    /// same block rendered it with `\r\n` and rewrote the file.
    #[test]
    fn splicing_after_a_trailing_carriage_return_is_idempotent() {
        let file = b"\xEF\xBB\xBF# BOM\r";
        let block = "<cao-memory>\n- [project] testing: use pytest\n</cao-memory>";
        let once = splice_block(file, block);
        assert!(once.starts_with(file), "the file's bytes are kept");
        assert_eq!(splice_block(&once, block), once, "the same block again changes nothing");
        let other = "<cao-memory>\n</cao-memory>";
        assert_eq!(
            splice_block(&once, other),
            splice_block(file, other),
            "the last block wins"
        );
    }

    /// The `provider_splice` fuzz finding `crash-166c…` (fuzz/crashes/provider_splice): removing the stale second
    /// block left a stray begin line before it and a stray end line after it, which the second splice paired into a
    /// block and removed, so the same block spliced twice rewrote the file.
    #[test]
    fn removing_a_stale_block_that_pairs_stray_markers_is_idempotent() {
        let found: &[u8] =
            include_bytes!("../../../fuzz/crashes/provider_splice/crash-166c3816714833a60af55072e09fb14a1e79a05a");
        let small = format!(
            "{BEGIN_MARKER}\nold\n{END_MARKER}\nkeep 1\n{BEGIN_MARKER}\nstray\n{BEGIN_MARKER}\nstale\n{END_MARKER}\nkeep 2\n{END_MARKER}\nkeep 3\n"
        );
        for file in [found, small.as_bytes()] {
            let once = splice_block(file, B);
            assert_eq!(splice_block(&once, B), once, "the same block again changes nothing");
            assert_eq!(find_blocks(&once).len(), 1, "one block is left");
            assert_eq!(splice_block(&once, ""), splice_block(file, ""), "the last block wins");
        }
        let once = String::from_utf8(splice_block(small.as_bytes(), B)).expect("utf-8");
        assert!(
            once.starts_with(&format!("{BEGIN_MARKER}\n{B}\n{END_MARKER}\nkeep 1\n")),
            "{once}"
        );
        assert!(once.ends_with("keep 3\n") && !once.contains("stale"), "{once}");
    }

    #[test]
    fn marker_lines_are_whole_lines_only() {
        let quoted = format!("Use `{BEGIN_MARKER}` lines.\n{END_MARKER} is the end.\n");
        assert!(find_blocks(quoted.as_bytes()).is_empty());
        let padded = format!("  {BEGIN_MARKER}\t\r\nx\r\n{END_MARKER}  \r\n");
        let spans = find_blocks(padded.as_bytes());
        assert_eq!(spans.len(), 1);
        assert_eq!(&padded.as_bytes()[spans[0].marker_end..spans[0].line_end], b"\r\n");
    }

    #[test]
    fn markers_in_memory_content_are_defused() {
        let evil = format!("<cao-memory>\n- [global] k: a\n{END_MARKER}\n{BEGIN_MARKER}\n</cao-memory>");
        let once = splice_block(b"intro\n", &evil);
        let twice = splice_block(&once, B);
        assert_eq!(
            twice,
            splice_block(b"intro\n", B),
            "the defused block is replaced whole"
        );
    }

    #[test]
    fn display_lines() {
        let w = ProviderWrite::Written {
            path: PathBuf::from("/w/AGENTS.md"),
        };
        assert_eq!(w.to_string(), "written: /w/AGENTS.md");
        assert!(
            ProviderWrite::Skipped {
                reason: SkipReason::Empty
            }
            .to_string()
            .starts_with("skipped: empty")
        );
        let r = ProviderWrite::Refused { reason: "x".into() };
        assert_eq!(r.to_string(), "refused: x");
        assert!(!r.is_success());
        assert_eq!(
            serde_json::to_value(&w).expect("serialises"),
            serde_json::json!({"outcome": "written", "path": "/w/AGENTS.md"})
        );
    }
}
