//! Where files live (spec 000 "Storage Layout"; spec/reference-facts.md "Layout").
//!
//! ```text
//! <memory_dir>/
//!   global/wiki/index.md
//!   global/wiki/global/<key>.md
//!   global/wiki/session/<session_name>/<key>.md
//!   global/wiki/agent/<agent_profile>/<key>.md
//!   <project_id>/wiki/index.md
//!   <project_id>/wiki/project/<key>.md
//!   federated/wiki/index.md
//!   federated/wiki/federated/<key>.md
//! ```
//!
//! Path safety: every path is built from a validated [`Key`] (`^[a-z0-9-]{1,60}$`) and a validated scope id or
//! container name (a single segment of `[A-Za-z0-9._-]`, 1..=255 bytes, not `.`/`..`), and is then checked
//! lexically to consist only of normal components below the memory dir ([`WikiError::PathEscape`] otherwise).
//! Before a directory is used for writing, [`WikiLayout::prepare_dir`] additionally resolves symlinks and
//! checks that the real directory is inside the real memory dir.
//!
//! A project id named `global` or `federated` shares that container's directory (and index.md) with it, as in
//! the reference; the scope directories inside never collide.

use crate::error::{Result, WikiError};
use crate::topic::Topic;
use cao_core::fs::{FileStamp, create_private_dir_all};
use cao_core::{Container, Key, Scope};
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Name of the index file in every `wiki/` directory.
pub const INDEX_FILE: &str = "index.md";
/// Name of the wiki directory inside every container.
pub const WIKI_DIR: &str = "wiki";
pub use cao_core::container::{FEDERATED_CONTAINER, GLOBAL_CONTAINER, is_safe_segment};

/// Check the scope id for `scope`: required and a safe segment for project/session/agent, absent for
/// global/federated. Returns the id when there is one.
///
/// Errors: [`WikiError::InvalidScopeId`] naming the scope and the id.
pub fn validate_scope_id(scope: Scope, scope_id: Option<&str>) -> Result<Option<&str>> {
    let err = |reason| WikiError::InvalidScopeId {
        scope,
        scope_id: scope_id.map(str::to_owned),
        reason,
    };
    match (scope.needs_scope_id(), scope_id) {
        (true, None) => Err(err("this scope needs a scope_id")),
        (true, Some(id)) if !is_safe_segment(id) => {
            Err(err("must be 1..=255 characters of [A-Za-z0-9._-] and not . or .."))
        }
        (true, Some(id)) => Ok(Some(id)),
        (false, None) => Ok(None),
        (false, Some(_)) => Err(err("global and federated memories take no scope_id")),
    }
}

/// Check a container name: `global`, `federated` or a project id that is a safe segment.
///
/// Errors: [`WikiError::InvalidContainer`].
pub fn validate_container(container: &str) -> Result<()> {
    if is_safe_segment(container) {
        Ok(())
    } else {
        Err(WikiError::InvalidContainer(container.to_owned()))
    }
}

/// One topic file found by [`WikiLayout::scan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedTopic {
    /// The container directory name (`global`, `federated` or a project id).
    pub container: String,
    /// The scope, from the scope directory name.
    pub scope: Scope,
    /// The scope id: the container name for project, the sub-directory for session/agent, `None` otherwise.
    pub scope_id: Option<String>,
    /// The key, from the file stem.
    pub key: Key,
    /// The absolute (memory-dir-based) path of the file; equal to [`WikiLayout::topic_path`] of the identity.
    pub path: PathBuf,
    /// The file's stamp as the scan saw it (read through the directory handle, symlinks not followed); `None` when
    /// it could not be read (the file vanished meanwhile).
    pub stamp: Option<FileStamp>,
}

/// A directory holding the topic files of one scope and scope id, where [`WikiLayout::topic_path`] puts them; found
/// by [`WikiLayout::scope_dirs`] (not constructible elsewhere, so its path always matches its identity).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScopeDir {
    /// The container directory name (`global`, `federated` or a project id).
    pub container: String,
    /// The scope of its files.
    pub scope: Scope,
    /// Their scope id (the container for project, the sub-directory for session/agent, `None` otherwise).
    pub scope_id: Option<String>,
    /// The directory.
    pub path: PathBuf,
}

/// What [`WikiLayout::scope_dirs`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopeDirs {
    /// Every scope directory, in the order of the traversal (not sorted).
    pub dirs: Vec<ScopeDir>,
    /// Temp files of the atomic writer in the directories above the scope directories (see
    /// [`ScanReport::temp_files`]).
    pub temp_files: Vec<PathBuf>,
}

/// One `<key>.md` entry of a scope directory, as [`ScopeDir::list`] found it.
#[derive(Debug)]
pub struct ListedTopic {
    /// The key, from the file name.
    pub key: Key,
    /// The inode number the directory entry names (no `stat`: read with the entry itself).
    pub inode: u64,
    entry: fs::DirEntry,
}

impl ListedTopic {
    /// The file's path (`<scope dir>/<key>.md`).
    pub fn path(&self) -> PathBuf {
        self.entry.path()
    }

    /// The file's [`FileStamp`], read through the directory handle (one `fstatat`, symlinks not followed); `None`
    /// when the file vanished meanwhile or cannot be stat'ed.
    pub fn stamp(&self) -> Option<FileStamp> {
        self.entry.metadata().ok().map(|m| FileStamp::of(&m))
    }
}

/// What [`ScopeDir::list`] found in one scope directory.
#[derive(Debug, Default)]
pub struct ScopeDirListing {
    /// Every regular file named `<key>.md` with a valid key, unsorted.
    pub topics: Vec<ListedTopic>,
    /// Temp files of the atomic writer (see [`ScanReport::temp_files`]).
    pub temp_files: Vec<PathBuf>,
}

impl ScopeDir {
    /// List the directory without opening or `stat`ing its files: its topic files (name and inode number from the
    /// directory entry) and the atomic writer's temp files. Entries [`WikiLayout::scan`] would report (symlinks,
    /// other names, sub-directories) are left out silently.
    ///
    /// Errors: [`WikiError::Io`] when the directory cannot be listed (`NotFound` when it is gone).
    pub fn list(&self) -> Result<ScopeDirListing> {
        use std::os::unix::fs::DirEntryExt;
        let rd = fs::read_dir(&self.path).map_err(|e| WikiError::io("read directory", &self.path, e))?;
        let mut out = ScopeDirListing::default();
        for entry in rd {
            let entry = entry.map_err(|e| WikiError::io("read directory", &self.path, e))?;
            let Ok(ft) = entry.file_type() else { continue };
            if !ft.is_file() {
                continue;
            }
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if is_quiet_name(Some(name)) {
                if cao_core::fs::temp_file_writer(entry.file_name().as_os_str()).is_some() {
                    out.temp_files.push(entry.path());
                }
                continue;
            }
            let Some(Ok(key)) = name.strip_suffix(".md").map(Key::parse_strict) else {
                continue;
            };
            out.topics.push(ListedTopic {
                key,
                inode: entry.ino(),
                entry,
            });
        }
        Ok(out)
    }
}

/// A path [`WikiLayout::scan`] did not use, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedPath {
    /// The path.
    pub path: PathBuf,
    /// Why it was skipped (one line, e.g. "file name is not `<key>.md` with a valid key").
    pub reason: String,
}

/// Result of [`WikiLayout::scan`]: topics and skipped paths, each sorted by path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanReport {
    /// Every topic file whose path is exactly where [`WikiLayout::topic_path`] would put it.
    pub topics: Vec<ScannedTopic>,
    /// Everything unexpected inside containers (symlinks, bad names, misplaced scope dirs, unreadable dirs).
    /// Lock files (`.*.lock`), temp files (`.*.tmp`), `index.md` and top-level directories without a `wiki/`
    /// directory are skipped silently.
    pub skipped: Vec<SkippedPath>,
    /// Temp files of the atomic writer (`.<file>.<pid>-<n>.tmp`, [`cao_core::fs::temp_file_writer`]) found in a
    /// container's `wiki/` directory or a scope directory, for the store's sweep of crash leftovers.
    pub temp_files: Vec<PathBuf>,
}

/// A topic file read from disk: its exact text and the parse of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredTopic {
    /// The file text.
    pub text: String,
    /// The parsed topic.
    pub topic: Topic,
}

/// Read and parse a topic file without following a symlink at `path`.
///
/// Returns `Ok(None)` when the file does not exist. Errors: [`WikiError::NotARegularFile`] (symlink, directory,
/// ...), [`WikiError::Io`], [`WikiError::Corrupt`] (not UTF-8, not a topic file; the caller adds the path).
pub fn read_topic_file(path: &Path) -> Result<Option<StoredTopic>> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(WikiError::io("stat", path, e)),
        Ok(m) if !m.file_type().is_file() => return Err(WikiError::NotARegularFile { path: path.to_owned() }),
        Ok(_) => {}
    }
    let bytes = match fs::read(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(WikiError::io("read", path, e)),
        Ok(b) => b,
    };
    let text = String::from_utf8(bytes)
        .map_err(|e| WikiError::corrupt(format!("not valid UTF-8 at byte {}", e.utf8_error().valid_up_to())))?;
    let topic = Topic::parse(&text)?;
    Ok(Some(StoredTopic { text, topic }))
}

/// The directory layout below one memory directory (`<home>/memory`). Cheap to clone; no I/O on construction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WikiLayout {
    memory_dir: PathBuf,
}

impl WikiLayout {
    /// A layout rooted at `memory_dir` (usually [`cao_core::CaoHome::memory_dir`]).
    pub fn new(memory_dir: PathBuf) -> Self {
        Self { memory_dir }
    }

    /// The memory directory.
    pub fn memory_dir(&self) -> &Path {
        &self.memory_dir
    }

    /// The container of a memory ([`Container::of`]: `global` for global, session and agent; the project id for
    /// project; `federated` for federated), after checking its scope id.
    ///
    /// Errors: [`WikiError::InvalidScopeId`] (see [`validate_scope_id`]).
    pub fn container_name(&self, scope: Scope, scope_id: Option<&str>) -> Result<Container> {
        let id = validate_scope_id(scope, scope_id)?;
        Ok(Container::of(scope, id))
    }

    /// `<memory_dir>/<container>/wiki`. Errors: [`WikiError::InvalidContainer`], [`WikiError::PathEscape`].
    pub fn wiki_dir(&self, container: &str) -> Result<PathBuf> {
        validate_container(container)?;
        self.contained(self.memory_dir.join(container).join(WIKI_DIR))
    }

    /// `<memory_dir>/<container>/wiki/index.md`. Errors: as [`WikiLayout::wiki_dir`].
    pub fn index_path(&self, container: &str) -> Result<PathBuf> {
        self.contained(self.wiki_dir(container)?.join(INDEX_FILE))
    }

    /// Path of a topic relative to its wiki dir, `/`-separated, as used in index.md links:
    /// `global/<key>.md`, `project/<key>.md`, `federated/<key>.md`, `session/<id>/<key>.md`, `agent/<id>/<key>.md`.
    ///
    /// Errors: [`WikiError::InvalidScopeId`].
    pub fn topic_rel_path(&self, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<String> {
        let id = validate_scope_id(scope, scope_id)?;
        Ok(match (scope, id) {
            (Scope::Session | Scope::Agent, Some(id)) => format!("{scope}/{id}/{key}.md"),
            _ => format!("{scope}/{key}.md"),
        })
    }

    /// Absolute path of a topic file: `<wiki_dir(container)>/<topic_rel_path>`.
    ///
    /// Errors: [`WikiError::InvalidScopeId`]; [`WikiError::PathEscape`] if the result is not strictly below the
    /// memory dir (cannot happen for validated inputs; checked anyway).
    pub fn topic_path(&self, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<PathBuf> {
        let container = self.container_name(scope, scope_id)?;
        let rel = self.topic_rel_path(scope, scope_id, key)?;
        let mut p = self.wiki_dir(container.as_str())?;
        for part in rel.split('/') {
            p.push(part);
        }
        self.contained(p)
    }

    /// The scope directory of `scope` and `scope_id`: the directory of every [`WikiLayout::topic_path`] of that
    /// identity (`<wiki_dir(container)>/<scope>` or `.../<scope>/<scope id>` for session and agent).
    ///
    /// Errors: as [`WikiLayout::topic_path`].
    pub fn scope_dir(&self, scope: Scope, scope_id: Option<&str>) -> Result<PathBuf> {
        let container = self.container_name(scope, scope_id)?;
        let mut p = self.wiki_dir(container.as_str())?;
        p.push(scope.as_str());
        if let (Scope::Session | Scope::Agent, Some(id)) = (scope, scope_id) {
            p.push(id);
        }
        self.contained(p)
    }

    /// Lexical containment: `path` must be `memory_dir` followed by one or more normal components.
    fn contained(&self, path: PathBuf) -> Result<PathBuf> {
        let ok = path
            .strip_prefix(&self.memory_dir)
            .map(|rest| {
                rest.components().next().is_some() && rest.components().all(|c| matches!(c, Component::Normal(_)))
            })
            .unwrap_or(false);
        if ok { Ok(path) } else { Err(self.escape(path)) }
    }

    fn escape(&self, path: PathBuf) -> WikiError {
        WikiError::PathEscape {
            path,
            memory_dir: self.memory_dir.clone(),
        }
    }

    /// Create `dir` (and missing parents, mode 0700) and check that, with symlinks resolved, it is inside the
    /// resolved memory dir. Call before writing into `dir`.
    ///
    /// Errors: [`WikiError::PathEscape`] (lexically or after resolving symlinks), [`WikiError::Io`].
    pub fn prepare_dir(&self, dir: &Path) -> Result<()> {
        let dir = self.contained(dir.to_owned())?;
        create_private_dir_all(&self.memory_dir).map_err(|e| WikiError::io("create directory", &self.memory_dir, e))?;
        create_private_dir_all(&dir).map_err(|e| WikiError::io("create directory", &dir, e))?;
        let real_root =
            fs::canonicalize(&self.memory_dir).map_err(|e| WikiError::io("resolve", &self.memory_dir, e))?;
        let real_dir = fs::canonicalize(&dir).map_err(|e| WikiError::io("resolve", &dir, e))?;
        if real_dir.starts_with(&real_root) && real_dir != real_root {
            Ok(())
        } else {
            Err(self.escape(dir))
        }
    }

    /// Read and parse a topic file (no lock needed: files are replaced atomically).
    ///
    /// `Ok(None)` when absent. Errors: as [`WikiLayout::topic_path`] and [`read_topic_file`].
    pub fn read_topic(&self, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<Option<StoredTopic>> {
        read_topic_file(&self.topic_path(scope, scope_id, key)?)
    }

    /// Walk every container: `<memory_dir>/<container>/wiki/{global,project,federated}/*.md` and
    /// `<memory_dir>/<container>/wiki/{session,agent}/<id>/*.md`. Symlinks are never followed (they are
    /// reported). A file is accepted only when its path is exactly [`WikiLayout::topic_path`] of the identity
    /// derived from it (scope = scope dir; scope id = container for project, sub-dir for session/agent), so
    /// e.g. `<project>/wiki/global/k.md` is reported, not returned. Files are not opened.
    ///
    /// A missing memory dir gives an empty report. Errors: [`WikiError::Io`] only when the memory dir itself
    /// cannot be read; anything below it that cannot be read is reported in [`ScanReport::skipped`].
    pub fn scan(&self) -> Result<ScanReport> {
        let mut report = ScanReport::default();
        self.each_scope_dir(&mut report, &mut |report, dir| self.scan_scope_dir(dir, report))?;
        // The order of the paths (`memory/<container>/wiki/<scope>/[<id>/]<key>.md`), compared field by field:
        // comparing `Path`s parses their components on every comparison, which dominates a scan of 100k files.
        report.topics.sort_by(|a, b| {
            (a.container.as_str(), a.scope.as_str(), a.scope_id.as_deref())
                .cmp(&(b.container.as_str(), b.scope.as_str(), b.scope_id.as_deref()))
                .then_with(|| cmp_file_names(a.key.as_str(), b.key.as_str()))
        });
        report.skipped.sort_by(|a, b| a.path.cmp(&b.path));
        report.temp_files.sort();
        Ok(report)
    }

    /// The scope directories [`WikiLayout::scan`] would visit, without listing them: every directory that holds the
    /// topic files of one scope and scope id, where that identity's files live. Paths [`WikiLayout::scan`] would
    /// report are ignored silently. Also returns the temp files of the atomic writer seen in the directories above
    /// them (a container's `wiki/`, `wiki/session/`, ...), as [`ScanReport::temp_files`]. The cost is one listing
    /// of each directory above the scope directories; this is how the store finds the directories to compare with
    /// what it recorded of them.
    ///
    /// Errors: [`WikiError::Io`] only when the memory dir itself cannot be read (a missing one has no directories).
    pub fn scope_dirs(&self) -> Result<ScopeDirs> {
        let mut report = ScanReport::default();
        let mut dirs = Vec::new();
        self.each_scope_dir(&mut report, &mut |_, dir| dirs.push(dir.clone()))?;
        Ok(ScopeDirs {
            dirs,
            temp_files: report.temp_files,
        })
    }

    /// Call `f` for every scope directory under the memory dir that holds its identity's topic files (the traversal
    /// of [`WikiLayout::scan`]); what does not fit the layout is reported in `report`.
    fn each_scope_dir(&self, report: &mut ScanReport, f: &mut dyn FnMut(&mut ScanReport, &ScopeDir)) -> Result<()> {
        let top = match fs::read_dir(&self.memory_dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(WikiError::io("read directory", &self.memory_dir, e)),
            Ok(rd) => rd,
        };
        for entry in top {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    report.skip(&self.memory_dir, format!("cannot list: {e}"));
                    continue;
                }
            };
            let path = entry.path();
            let Ok(ft) = entry.file_type() else {
                report.skip(&path, "cannot stat");
                continue;
            };
            if ft.is_symlink() {
                report.skip(&path, "symlink (not followed)");
                continue;
            }
            if !ft.is_dir() {
                continue;
            }
            let wiki = path.join(WIKI_DIR);
            let wiki_meta = match fs::symlink_metadata(&wiki) {
                Ok(m) => m,
                Err(_) => continue, // not a container (e.g. the reference's `logs/`)
            };
            let Some(container) = entry
                .file_name()
                .to_str()
                .map(str::to_owned)
                .filter(|c| is_safe_segment(c))
            else {
                report.skip(&path, "container name is not a valid project id, global or federated");
                continue;
            };
            if !wiki_meta.is_dir() {
                report.skip(&wiki, "wiki is not a directory (symlinks are not followed)");
                continue;
            }
            self.scan_wiki(&container, &wiki, report, f);
        }
        Ok(())
    }

    fn scan_wiki(
        &self,
        container: &str,
        wiki: &Path,
        report: &mut ScanReport,
        f: &mut dyn FnMut(&mut ScanReport, &ScopeDir),
    ) {
        for Listed { path, name, ft, .. } in list_dir(wiki, report) {
            if ft.is_symlink() {
                report.skip(&path, "symlink (not followed)");
                continue;
            }
            let scope = name.as_deref().and_then(|n| n.parse::<Scope>().ok());
            match (scope, ft.is_dir()) {
                (Some(scope @ (Scope::Session | Scope::Agent)), true) => {
                    if container != GLOBAL_CONTAINER {
                        report.skip(&path, format!("{scope} memories live only in the global container"));
                        continue;
                    }
                    for Listed {
                        path: sub,
                        name: sub_name,
                        ft: sub_ft,
                        ..
                    } in list_dir(&path, report)
                    {
                        if sub_ft.is_symlink() {
                            report.skip(&sub, "symlink (not followed)");
                        } else if !sub_ft.is_dir() {
                            report.skip(
                                &sub,
                                format!("unexpected file directly in {scope}/ (expected <id>/ dirs)"),
                            );
                        } else {
                            match sub_name.filter(|n| is_safe_segment(n)) {
                                Some(id) => self.visit_scope_dir(container, scope, Some(&id), sub, report, f),
                                None => report.skip(&sub, "directory name is not a valid scope id"),
                            }
                        }
                    }
                }
                (Some(scope), true) => {
                    let scope_id = (scope == Scope::Project).then_some(container);
                    match self.container_name(scope, scope_id) {
                        Ok(c) if c == container => self.visit_scope_dir(container, scope, scope_id, path, report, f),
                        _ => report.skip(&path, format!("{scope} memories do not live in container {container}")),
                    }
                }
                (_, false) if is_quiet_name(name.as_deref()) => report.note_temp(&path, ft),
                (_, false) if name.as_deref() == Some(INDEX_FILE) => {}
                (_, true) => report.skip(&path, "unexpected directory (not a scope name)"),
                (_, false) => report.skip(&path, "unexpected file in wiki/"),
            }
        }
    }

    /// Hand one scope directory to `f` when it is where its identity's topic files live (checked once per directory:
    /// a file in it is then at its identity's path exactly when its name is `<key>.md`); otherwise report it.
    fn visit_scope_dir(
        &self,
        container: &str,
        scope: Scope,
        scope_id: Option<&str>,
        path: PathBuf,
        report: &mut ScanReport,
        f: &mut dyn FnMut(&mut ScanReport, &ScopeDir),
    ) {
        if !self.scope_dir(scope, scope_id).is_ok_and(|p| p == path) {
            report.skip(&path, "not the directory its scope and scope id map to");
            return;
        }
        let dir = ScopeDir {
            container: container.to_owned(),
            scope,
            scope_id: scope_id.map(str::to_owned),
            path,
        };
        f(report, &dir);
    }

    fn scan_scope_dir(&self, dir: &ScopeDir, report: &mut ScanReport) {
        for Listed { path, name, ft, entry } in list_dir(&dir.path, report) {
            if ft.is_symlink() {
                report.skip(&path, "symlink (not followed)");
                continue;
            }
            if ft.is_dir() {
                report.skip(&path, "unexpected directory");
                continue;
            }
            if is_quiet_name(name.as_deref()) {
                report.note_temp(&path, ft);
                continue;
            }
            if !ft.is_file() {
                report.skip(&path, "not a regular file");
                continue;
            }
            let key = name
                .as_deref()
                .and_then(|n| n.strip_suffix(".md"))
                .and_then(|s| Key::parse_strict(s).ok());
            let Some(key) = key else {
                report.skip(&path, "file name is not <key>.md with a key matching ^[a-z0-9-]{1,60}$");
                continue;
            };
            report.topics.push(ScannedTopic {
                container: dir.container.clone(),
                scope: dir.scope,
                scope_id: dir.scope_id.clone(),
                key,
                path,
                stamp: entry.metadata().ok().map(|m| FileStamp::of(&m)),
            });
        }
    }
}

impl ScanReport {
    fn skip(&mut self, path: &Path, reason: impl Into<String>) {
        self.skipped.push(SkippedPath {
            path: path.to_owned(),
            reason: reason.into(),
        });
    }

    /// Keep `path` in [`ScanReport::temp_files`] when it is a regular file named as the atomic writer names temp files.
    fn note_temp(&mut self, path: &Path, ft: fs::FileType) {
        if ft.is_file() && path.file_name().and_then(cao_core::fs::temp_file_writer).is_some() {
            self.temp_files.push(path.to_owned());
        }
    }
}

/// One directory entry as [`list_dir`] returns it.
struct Listed {
    /// The entry's path.
    path: PathBuf,
    /// Its name, when UTF-8.
    name: Option<String>,
    /// Its type (symlinks not followed).
    ft: fs::FileType,
    /// The entry itself (its metadata is read through the directory handle).
    entry: fs::DirEntry,
}

/// The order of the file names `<a>.md` and `<b>.md`, without building them: the keys' bytes, and when one key is a
/// prefix of the other, the `.` after the shorter one against the longer one's next byte.
fn cmp_file_names(a: &str, b: &str) -> std::cmp::Ordering {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let n = x.len().min(y.len());
    x[..n].cmp(&y[..n]).then_with(|| match (x.get(n), y.get(n)) {
        (None, None) => std::cmp::Ordering::Equal,
        (None, Some(c)) => b'.'.cmp(c),
        (Some(c), None) => c.cmp(&b'.'),
        (Some(_), Some(_)) => std::cmp::Ordering::Equal,
    })
}

/// Lock and temp files: `.<anything>.lock` / `.<anything>.tmp`.
fn is_quiet_name(name: Option<&str>) -> bool {
    name.is_some_and(|n| n.starts_with('.') && (n.ends_with(".lock") || n.ends_with(".tmp")))
}

/// Entries of `dir` (path, UTF-8 name if any, file type without following symlinks, the entry). Problems are
/// reported.
fn list_dir(dir: &Path, report: &mut ScanReport) -> Vec<Listed> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            report.skip(dir, format!("cannot list: {e}"));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for entry in rd {
        match entry {
            Err(e) => report.skip(dir, format!("cannot list: {e}")),
            Ok(entry) => {
                let path = entry.path();
                match entry.file_type() {
                    Ok(ft) => out.push(Listed {
                        path,
                        name: entry.file_name().to_str().map(str::to_owned),
                        ft,
                        entry,
                    }),
                    Err(e) => report.skip(&path, format!("cannot stat: {e}")),
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cao_core::key::sanitize_scope_id;
    use proptest::prelude::*;

    fn key(s: &str) -> Key {
        Key::parse_strict(s).expect("valid test key")
    }

    #[test]
    fn file_name_order_is_the_order_of_the_names() {
        for (a, b) in [
            ("k", "k-x"),
            ("k", "k0"),
            ("k", "k"),
            ("a", "b"),
            ("ab", "a"),
            ("m1", "m10"),
            ("x-", "x"),
        ] {
            assert_eq!(
                cmp_file_names(a, b),
                format!("{a}.md").cmp(&format!("{b}.md")),
                "{a} / {b}"
            );
        }
    }

    #[test]
    fn paths_per_scope() {
        let l = WikiLayout::new(PathBuf::from("/h/memory"));
        let k = key("k");
        let cases = [
            (Scope::Global, None, "/h/memory/global/wiki/global/k.md", "global/k.md"),
            (
                Scope::Project,
                Some("p1"),
                "/h/memory/p1/wiki/project/k.md",
                "project/k.md",
            ),
            (
                Scope::Session,
                Some("sess-1"),
                "/h/memory/global/wiki/session/sess-1/k.md",
                "session/sess-1/k.md",
            ),
            (
                Scope::Agent,
                Some("reviewer"),
                "/h/memory/global/wiki/agent/reviewer/k.md",
                "agent/reviewer/k.md",
            ),
            (
                Scope::Federated,
                None,
                "/h/memory/federated/wiki/federated/k.md",
                "federated/k.md",
            ),
        ];
        for (scope, id, abs, rel) in cases {
            assert_eq!(l.topic_path(scope, id, &k).expect("valid"), PathBuf::from(abs));
            assert_eq!(l.topic_rel_path(scope, id, &k).expect("valid"), rel);
            assert_eq!(
                Some(l.scope_dir(scope, id).expect("valid").as_path()),
                PathBuf::from(abs).parent()
            );
        }
        assert!(l.scope_dir(Scope::Session, None).is_err());
        assert!(l.scope_dir(Scope::Agent, Some("..")).is_err());
        assert_eq!(
            l.index_path("p1").expect("valid"),
            PathBuf::from("/h/memory/p1/wiki/index.md")
        );
    }

    #[test]
    fn rejects_bad_scope_ids_and_containers() {
        let l = WikiLayout::new(PathBuf::from("/h/memory"));
        let k = key("k");
        for (scope, id) in [
            (Scope::Project, None),
            (Scope::Project, Some("..")),
            (Scope::Project, Some(".")),
            (Scope::Project, Some("a/b")),
            (Scope::Project, Some("")),
            (Scope::Session, Some("x\0")),
            (Scope::Agent, None),
            (Scope::Global, Some("x")),
            (Scope::Federated, Some("x")),
        ] {
            assert!(
                matches!(l.topic_path(scope, id, &k), Err(WikiError::InvalidScopeId { .. })),
                "{scope} {id:?}"
            );
        }
        for c in ["..", ".", "", "a/b", "<PROJECT>"] {
            assert!(matches!(l.wiki_dir(c), Err(WikiError::InvalidContainer(_))), "{c:?}");
        }
        let long = "a".repeat(256);
        assert!(l.topic_path(Scope::Project, Some(&long), &k).is_err());
    }

    proptest! {
        #[test]
        fn topic_path_stays_inside(raw_key in any::<String>(), raw_id in any::<String>(), scope_ix in 0usize..5) {
            let Ok(k) = Key::sanitize(&raw_key) else { return Ok(()); };
            let scope = Scope::ALL[scope_ix];
            let root = PathBuf::from("/h/memory");
            let l = WikiLayout::new(root.clone());
            let sanitized = sanitize_scope_id(&raw_id);
            let ids: [Option<&str>; 3] = [None, Some(sanitized.as_str()), Some(raw_id.as_str())];
            for id in ids {
                if let Ok(p) = l.topic_path(scope, id, &k) {
                    let rest = p.strip_prefix(&root).expect("below the memory dir");
                    prop_assert!(rest.components().all(|c| matches!(c, Component::Normal(_))), "{p:?}");
                    prop_assert_eq!(rest.components().count(), if matches!(scope, Scope::Session | Scope::Agent) { 5 } else { 4 });
                }
            }
            // sanitize_scope_id output is always accepted for scopes that need an id.
            if scope.needs_scope_id() && sanitized.len() <= 255 {
                prop_assert!(l.topic_path(scope, Some(&sanitized), &k).is_ok());
            }
        }
    }
}
