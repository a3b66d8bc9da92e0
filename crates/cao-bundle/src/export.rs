//! OKF export: one scope's memories as a bundle directory or a `.tar.gz` archive (spec 000 "cao memory export",
//! "Read-only mirror"; spec/reference-facts.md "OKF bundles"; conformance `okf_export.json`).
//!
//! 1. The scope is checked (session and agent only with `include_private`; [`MemoryError::PrivateScope`]) and its
//!    scope id resolved: a project id given or the caller's project (explicit id > `memory.project_id` > git
//!    remote > cwd hash, as every command resolves it); for session and agent the one id given, else every
//!    session or agent; none for global and federated.
//! 2. The scope's rows are read from the index (every one, no limit); with `include_history` each topic file is
//!    read for its earlier entries (the file is then the source of the latest text and times too). A topic file
//!    that cannot be read is exported from its row without history, with a warning naming the key.
//! 3. `cao-okf` renders every file ([`cao_okf::render_bundle`]: the secret gate, descriptions, See Also links,
//!    `index.md`, `manifest.md`). Rendering is a pure function of the memories, so the same memories give the same
//!    bytes.
//! 4. A directory destination gets each file only when its bytes differ from what is there (`exported` /
//!    `unchanged` count topic files), written in batches through [`cao_core::fs::atomic_write_batch`] with the
//!    umask's mode (a user's own tree); `prune` then deletes the `.md` files this export did not write
//!    ([`cao_okf::path::prune_candidates`]: never `index.md` or `manifest.md`, never the stale history of a topic
//!    still exported; refused in a non-empty directory without the `manifest.md` of an earlier export, so a
//!    mistyped destination is never emptied of its markdown). An archive destination is packed reproducibly ([`crate::bundle::pack_tar_gz`]) and written
//!    only when its bytes differ from the file already there; as in the reference, every topic counts as exported.
//!
//! Nothing is written inside the home's `memory/` directory, and nothing through a symlinked directory that leads
//! out of the destination. Export reads only: no access is counted, no alias recorded, no index row written.

use crate::bundle;
use cao_core::key::sanitize_scope_id;
use cao_core::{Scope, Settings, TerminalContext};
use cao_okf::export::{ExportEntry, ExportOptions, ExportReport, ExportTopic, RenderedBundle, check_export_scope};
use cao_ops::types::Progress;
use cao_store::MemoryError;
use cao_store::Store;
use cao_store::{ListFilter, MemoryRow, Visibility};
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Schema name of [`ExportOutcome`] (docs/schemas/cao.memory.export-1.json).
pub const EXPORT_SCHEMA: &str = "cao.memory.export/1";

/// Files written per batch (one data sync each).
const WRITE_BATCH: usize = 1000;

/// What to export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportRequest {
    /// The scope to export.
    pub scope: Scope,
    /// Project: the project id (default: the caller's project). Session / agent: only this session or agent
    /// (default: every one). Global / federated: must be `None`.
    pub scope_id: Option<String>,
    /// Required to export session or agent memories.
    pub include_private: bool,
    /// Also write `history/<topic path>` files with every earlier entry.
    pub include_history: bool,
    /// Redact secret matches as `[REDACTED:<name>]` instead of skipping the topic.
    pub redact: bool,
}

impl ExportRequest {
    /// An export of `scope` with every option off.
    pub fn new(scope: Scope) -> ExportRequest {
        ExportRequest {
            scope,
            scope_id: None,
            include_private: false,
            include_history: false,
            redact: false,
        }
    }
}

/// Where an export goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExportDestination {
    /// A bundle directory (created when missing); `prune` deletes topics no longer exported.
    Directory {
        /// The directory.
        path: PathBuf,
        /// Delete destination `.md` files this export did not write (never `index.md` / `manifest.md`).
        prune: bool,
    },
    /// A `.tar.gz` archive file (its directory is created when missing).
    Archive {
        /// The archive file.
        path: PathBuf,
    },
}

/// The result of an export (`cao.memory.export/1`): the reference's report fields and what was written where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExportOutcome {
    /// Always [`EXPORT_SCHEMA`].
    pub schema: &'static str,
    /// The exported scope.
    pub scope: Scope,
    /// The scope id exported (the project id; the one session or agent), `None` for every one or none.
    pub scope_id: Option<String>,
    /// The destination as given (`None` for an in-memory archive).
    pub destination: Option<String>,
    /// Whether the destination is a `.tar.gz` archive.
    pub archive: bool,
    /// Files written (topics, history, `index.md`, `manifest.md`; for an archive 1 or 0).
    pub files_written: usize,
    /// The report: `exported`, `unchanged`, `skipped_secret`, `redacted`, `pruned`, `links_dropped`,
    /// `skip_reasons` (key -> secret pattern names).
    #[serde(flatten)]
    pub report: ExportReport,
}

/// Export `req` to `dest` (module documentation). Memory must be enabled (the facade checks).
///
/// Errors: [`MemoryError::PrivateScope`]; [`MemoryError::Invalid`] for a scope id that does not fit the scope, an
/// unresolvable project, or a destination that is a file where a directory is needed (or the reverse), lies inside
/// the memory store, or passes through a symlink out of the destination; [`MemoryError::Io`] when writing fails;
/// index errors.
pub fn export(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    req: &ExportRequest,
    dest: &ExportDestination,
    progress: &dyn Progress,
) -> Result<ExportOutcome, MemoryError> {
    let (scope_id, bundle) = render(store, settings, ctx, req)?;
    let mut report = bundle.report.clone();
    let (path, archive) = match dest {
        ExportDestination::Directory { path, .. } => (path, false),
        ExportDestination::Archive { path } => (path, true),
    };
    refuse_inside_memory(store, path)?;
    let files_written = match dest {
        ExportDestination::Directory { path, prune } => write_directory(path, &bundle, *prune, &mut report, progress)?,
        ExportDestination::Archive { path } => {
            report.exported = bundle.topic_paths.len();
            write_archive(path, &bundle)?
        }
    };
    Ok(ExportOutcome {
        schema: EXPORT_SCHEMA,
        scope: req.scope,
        scope_id,
        destination: Some(path.display().to_string()),
        archive,
        files_written,
        report,
    })
}

/// The `.tar.gz` bytes of an export of `req` and its outcome (every topic counted as exported; nothing written):
/// the HTTP export. Errors: as [`export`], without the destination errors.
pub fn export_archive(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    req: &ExportRequest,
) -> Result<(Vec<u8>, ExportOutcome), MemoryError> {
    let (scope_id, bundle) = render(store, settings, ctx, req)?;
    let bytes = bundle::pack_tar_gz(&bundle.files)?;
    let mut report = bundle.report.clone();
    report.exported = bundle.topic_paths.len();
    Ok((
        bytes,
        ExportOutcome {
            schema: EXPORT_SCHEMA,
            scope: req.scope,
            scope_id,
            destination: None,
            archive: true,
            files_written: 0,
            report,
        },
    ))
}

/// Steps 1-3: the resolved scope id and the rendered bundle.
fn render(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    req: &ExportRequest,
) -> Result<(Option<String>, RenderedBundle), MemoryError> {
    check_export_scope(req.scope, req.include_private).map_err(|_| MemoryError::PrivateScope(req.scope))?;
    let scope_id = resolve_scope_id(settings, ctx, req)?;
    let vis = match (&scope_id, req.scope.needs_scope_id()) {
        (Some(id), _) => Visibility::none().allow(req.scope, Some(id)),
        (None, true) => Visibility::none().allow_any(req.scope),
        (None, false) => Visibility::none().allow(req.scope, None),
    };
    let rows = store.snapshot().list(&ListFilter {
        visibility: vis,
        scope: Some(req.scope),
        memory_type: None,
        limit: None,
    })?;
    let topics: Vec<ExportTopic> = rows
        .into_iter()
        .map(|row| topic_of(store, row, req.include_history))
        .collect();
    let opts = ExportOptions {
        scope: req.scope,
        scope_id: scope_id.clone(),
        include_history: req.include_history,
        redact: req.redact,
    };
    let bundle = cao_okf::render_bundle(&opts, &topics).map_err(|e| MemoryError::Invalid(e.to_string()))?;
    Ok((scope_id, bundle))
}

/// The scope id an export names (step 1 of the module documentation).
fn resolve_scope_id(
    settings: &Settings,
    ctx: &TerminalContext,
    req: &ExportRequest,
) -> Result<Option<String>, MemoryError> {
    let given = req.scope_id.as_deref().map(str::trim).filter(|s| !s.is_empty());
    match (req.scope, given) {
        (Scope::Global | Scope::Federated, None) => Ok(None),
        (Scope::Global | Scope::Federated, Some(id)) => Err(MemoryError::Invalid(format!(
            "the {} scope has no scope id; got {id:?}",
            req.scope
        ))),
        (Scope::Project, Some(id)) => {
            cao_core::identity::validate_project_id(id)?;
            Ok(Some(id.to_owned()))
        }
        (Scope::Project, None) => Ok(Some(ctx.project(settings)?.project_id)),
        (Scope::Session | Scope::Agent, Some(id)) if sanitize_scope_id(id) == id => Ok(Some(id.to_owned())),
        (Scope::Session | Scope::Agent, Some(id)) => Err(MemoryError::Invalid(format!(
            "{id:?} is not a {} id ([A-Za-z0-9_-], no leading or trailing - or _)",
            req.scope
        ))),
        (Scope::Session | Scope::Agent, None) => Ok(None),
    }
}

/// One row as an export topic; with `history`, from its topic file (falling back to the row, with a warning).
fn topic_of(store: &Store, row: MemoryRow, history: bool) -> ExportTopic {
    let mut topic = ExportTopic {
        key: row.key.clone(),
        scope_id: row.scope_id.clone(),
        memory_type: row.memory_type,
        tags: row.tags.clone(),
        created_at: row.created_at,
        updated_at: row.updated_at,
        content: row.content.clone(),
        history: Vec::new(),
    };
    if !history {
        return topic;
    }
    match store.topic(&row.memory_ref()) {
        Ok(Some(stored)) => {
            let entries = stored.entries();
            if let Some((latest, earlier)) = entries.split_last() {
                topic.content = latest.content.clone();
                topic.created_at = stored.created_at();
                topic.updated_at = stored.updated_at();
                topic.history = earlier
                    .iter()
                    .map(|e| ExportEntry {
                        timestamp: e.timestamp,
                        content: e.content.clone(),
                    })
                    .collect();
            }
        }
        Ok(None) => {
            tracing::warn!(key = %row.key, "the topic file is missing; exported from the index without history")
        }
        Err(e) => {
            tracing::warn!(key = %row.key, error = %e, "the topic file cannot be read; exported from the index without history")
        }
    }
    topic
}

/// Refuse a destination inside the home's `memory/` directory, or one holding it (a bundle there would mix with
/// the wiki, and a prune would delete topic files).
fn refuse_inside_memory(store: &Store, dest: &Path) -> Result<(), MemoryError> {
    let memory = store.home().memory_dir();
    let memory = memory.canonicalize().unwrap_or(memory);
    let dest_abs = canonical_or_nearest(dest);
    if dest_abs.starts_with(&memory) || memory.starts_with(&dest_abs) {
        return Err(MemoryError::Invalid(format!(
            "the export destination {} overlaps the memory store ({}); choose a path outside it",
            dest.display(),
            memory.display()
        )));
    }
    Ok(())
}

/// `path` canonicalised, or its nearest existing ancestor canonicalised with the rest appended.
fn canonical_or_nearest(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut rest = Vec::new();
    let mut cur = absolute.as_path();
    loop {
        if let Ok(c) = cur.canonicalize() {
            return rest.iter().rev().fold(c, |acc: PathBuf, part| acc.join(part));
        }
        match (cur.parent(), cur.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                cur = parent;
            }
            _ => return absolute,
        }
    }
}

fn io_err(context: String) -> impl FnOnce(std::io::Error) -> MemoryError {
    move |source| MemoryError::Io { context, source }
}

/// Write a rendered bundle into `dir` (step 4, directory): returns the number of files written.
fn write_directory(
    dir: &Path,
    bundle: &RenderedBundle,
    prune: bool,
    report: &mut ExportReport,
    progress: &dyn Progress,
) -> Result<usize, MemoryError> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() && prune && !is_bundle_or_empty(dir)? => {
            return Err(MemoryError::Invalid(format!(
                "refusing --prune in {}: it is not empty and holds no manifest.md of an earlier export (prune \
                 deletes every other .md file below it)",
                dir.display()
            )));
        }
        Ok(m) if !m.is_dir() => {
            return Err(MemoryError::Invalid(format!(
                "the export destination {} is not a directory (use a path ending in .tar.gz for an archive)",
                dir.display()
            )));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            cao_core::fs::create_dir_all(dir).map_err(io_err(format!("creating {}", dir.display())))?;
        }
        Err(e) => return Err(io_err(format!("reading {}", dir.display()))(e)),
    }
    let root = dir
        .canonicalize()
        .map_err(io_err(format!("resolving {}", dir.display())))?;
    let topic_paths: BTreeSet<&str> = bundle.topic_paths.iter().map(String::as_str).collect();
    let mut changed: Vec<(PathBuf, &[u8])> = Vec::new();
    for (rel, text) in &bundle.files {
        let target = root.join(rel);
        let same = match std::fs::symlink_metadata(&target) {
            Ok(m) if m.is_file() && m.len() == text.len() as u64 => {
                std::fs::read(&target).is_ok_and(|bytes| bytes == text.as_bytes())
            }
            _ => false,
        };
        if topic_paths.contains(rel.as_str()) {
            if same {
                report.unchanged += 1;
            } else {
                report.exported += 1;
            }
        }
        if !same {
            changed.push((target, text.as_bytes()));
        }
    }
    let mut parents: Vec<&Path> = changed.iter().filter_map(|(p, _)| p.parent()).collect();
    parents.sort();
    parents.dedup();
    for parent in parents {
        cao_core::fs::create_dir_all(parent).map_err(io_err(format!("creating {}", parent.display())))?;
        let resolved = parent
            .canonicalize()
            .map_err(io_err(format!("resolving {}", parent.display())))?;
        if !resolved.starts_with(&root) {
            return Err(MemoryError::Invalid(format!(
                "{} leads out of the export destination (a symlinked directory); remove it or choose another \
                 destination",
                parent.display()
            )));
        }
    }
    progress.start("exporting", changed.len() as u64);
    for chunk in changed.chunks(WRITE_BATCH) {
        let items: Vec<(&Path, &[u8])> = chunk.iter().map(|(p, b)| (p.as_path(), *b)).collect();
        cao_core::fs::atomic_write_batch(&items, cao_core::fs::FileMode::UmaskDefault)
            .map_err(io_err(format!("writing the bundle into {}", dir.display())))?;
        progress.advance(chunk.len() as u64);
    }
    progress.finish();
    if prune {
        report.pruned = prune_directory(&root, bundle)?;
    }
    Ok(changed.len())
}

/// Whether `dir` is empty or holds the `manifest.md` of an earlier export (its first line `# CAO Memory Export`).
fn is_bundle_or_empty(dir: &Path) -> Result<bool, MemoryError> {
    let mut listing = std::fs::read_dir(dir).map_err(io_err(format!("reading {}", dir.display())))?;
    if listing.next().is_none() {
        return Ok(true);
    }
    let manifest = dir.join(cao_okf::path::MANIFEST_FILE);
    Ok(std::fs::read_to_string(manifest).is_ok_and(|t| t.starts_with("# CAO Memory Export\n")))
}

/// Delete the `.md` files under `root` this export did not write ([`cao_okf::path::prune_candidates`]); returns
/// how many were deleted. Symlinks are deleted, never followed; a file that cannot be deleted is logged and left.
fn prune_directory(root: &Path, bundle: &RenderedBundle) -> Result<usize, MemoryError> {
    let mut existing = Vec::new();
    for item in walkdir::WalkDir::new(root).follow_links(false).min_depth(1) {
        let item = item.map_err(|e| MemoryError::Io {
            context: format!("listing {} for --prune", root.display()),
            source: e.into(),
        })?;
        if item.file_type().is_dir() {
            continue;
        }
        let Ok(rel) = item.path().strip_prefix(root) else {
            continue;
        };
        if let Some(rel) = rel.to_str() {
            existing.push(rel.to_owned());
        }
    }
    let kept = bundle.kept_paths();
    let mut pruned = 0;
    for rel in cao_okf::path::prune_candidates(existing.iter().map(String::as_str), &kept) {
        match std::fs::remove_file(root.join(&rel)) {
            Ok(()) => pruned += 1,
            Err(e) => tracing::warn!(path = %rel, error = %e, "could not prune"),
        }
    }
    Ok(pruned)
}

/// Pack and write the archive (step 4, archive) when its bytes differ: returns 1 when written, 0 when unchanged.
fn write_archive(path: &Path, bundle: &RenderedBundle) -> Result<usize, MemoryError> {
    if path.is_dir() {
        return Err(MemoryError::Invalid(format!(
            "the export archive {} is a directory; give a file path ending in .tar.gz, or export to the directory \
             without .tar.gz",
            path.display()
        )));
    }
    let bytes = bundle::pack_tar_gz(&bundle.files)?;
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(0);
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        cao_core::fs::create_dir_all(parent).map_err(io_err(format!("creating {}", parent.display())))?;
    }
    cao_core::fs::atomic_write_with(
        path,
        &bytes,
        cao_core::fs::WriteOptions::with_mode(cao_core::fs::FileMode::UmaskDefault),
    )
    .map_err(io_err(format!("writing {}", path.display())))?;
    Ok(1)
}
