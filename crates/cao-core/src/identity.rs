//! Project identity: which `memory/<project_id>/` container a working directory belongs to.
//!
//! The chain (spec 000 "Memory Scopes"; spec/reference-facts.md "Project identity"):
//! 1. an override (`CAO_PROJECT_ID`, else `memory.project_id`), which must match `^[a-zA-Z0-9._-]{1,128}$`;
//! 2. the normalised `git config --get remote.origin.url` of the cwd (bounded by [`GIT_TIMEOUT`]);
//! 3. `sha256(realpath(cwd))`, first 12 hex characters.
//!
//! When 1 or 2 wins, the cwd hash is kept as an alias so that memories stored before the override or remote
//! existed are still found.
//!
//! [`resolve_project`] looks a cwd up once per process: its hash and git remote are reused for [`IDENTITY_TTL`]
//! (a new cwd is looked up at once), so a server answering many calls from one terminal spawns `git` at most once
//! per cwd and TTL, and never when an override is given. [`git_spawns_on_this_thread`] counts the spawns.

use crate::error::CoreError;
use sha2::{Digest, Sha256};
use std::cell::Cell;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Upper bound on the `git config` lookup.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(2);

/// How long [`resolve_project`] reuses what it found for a cwd (its hash and git remote) before looking again: a
/// remote added or changed is seen within this time by a long-running server (a CLI process is shorter anyway).
pub const IDENTITY_TTL: Duration = Duration::from_secs(5);

/// Most cwds remembered at once; past it, expired entries are dropped, then all.
const CACHE_CAP: usize = 256;

/// What one lookup of a cwd found.
#[derive(Debug, Clone)]
struct CwdFacts {
    at: Instant,
    hash: String,
    /// `None`: the remote was not looked up (an override won); `Some(None)`: no remote.
    remote: Option<Option<String>>,
}

static CACHE: LazyLock<Mutex<HashMap<PathBuf, CwdFacts>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

thread_local! {
    static GIT_SPAWNS: Cell<u64> = const { Cell::new(0) };
}

/// How many `git` processes [`git_remote_url`] has started on the calling thread (lookups run on the caller's
/// thread). For tests and diagnostics: a warm [`resolve_project`] adds nothing.
pub fn git_spawns_on_this_thread() -> u64 {
    GIT_SPAWNS.with(Cell::get)
}

/// Where a project id came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjectIdSource {
    /// `CAO_PROJECT_ID` or `memory.project_id`.
    Override,
    /// The normalised git remote URL.
    GitRemote,
    /// The cwd hash.
    CwdHash,
}

/// A resolved project identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectIdentity {
    /// The container name under `memory/`.
    pub project_id: String,
    /// How it was found.
    pub source: ProjectIdSource,
    /// The cwd hash when it is not itself the project id (recall also searches this container).
    pub alias: Option<String>,
}

/// Container names that are not projects: a project id equal to one of them would land its memories inside the
/// global or federated container (a deliberate difference from the reference, which accepts them).
pub const RESERVED_PROJECT_IDS: [&str; 2] = ["global", "federated"];

/// Validate an override value against `^[a-zA-Z0-9._-]{1,128}$` (conformance `project_id_override.json`); `.`,
/// `..` and the [`RESERVED_PROJECT_IDS`] are refused too.
pub fn validate_project_id(v: &str) -> Result<(), CoreError> {
    let ok = !v.is_empty()
        && !RESERVED_PROJECT_IDS.contains(&v)
        && v.len() <= 128
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
        && v != "."
        && v != "..";
    if ok {
        Ok(())
    } else {
        Err(CoreError::InvalidProjectId(v.chars().take(140).collect()))
    }
}

/// `sha256(realpath(cwd))[:12]` as lowercase hex. The path is resolved like Python's non-strict
/// `os.path.realpath` (see [`realpath`]), so a deleted or not-yet-created cwd still hashes the way the reference
/// hashes it. On Unix the path's bytes are hashed as they are.
pub fn cwd_hash(cwd: &Path) -> String {
    let real = realpath(cwd);
    #[cfg(unix)]
    let digest = Sha256::digest(std::os::unix::ffi::OsStrExt::as_bytes(real.as_os_str()));
    #[cfg(not(unix))]
    let digest = Sha256::digest(real.to_string_lossy().as_bytes());
    let mut hex = String::with_capacity(12);
    for b in digest.iter().take(6) {
        hex.push_str(&format!("{b:02x}"));
    }
    hex
}

/// `path` made absolute with every symlink resolved, like Python's non-strict `os.path.realpath`: when the whole
/// path exists this is [`std::fs::canonicalize`]; otherwise components are resolved one by one (`.` dropped,
/// `..` removes the last resolved component, existing prefixes canonicalised) and the missing rest is appended
/// as written.
pub fn realpath(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for comp in abs.components() {
        match comp {
            Component::Prefix(_) | Component::RootDir => out.push(comp.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                if let Ok(real) = std::fs::canonicalize(&out) {
                    out = real;
                }
            }
        }
    }
    out
}

/// Normalise a git remote URL into a project id (conformance `git_remote.json`): trim (whitespace as in
/// [`crate::text::trim_reference_whitespace`]), lowercase, strip one
/// leading `git+ssh://`, `ssh://`, `git://`, `https://` or `http://`; drop everything up to and including the
/// first `@`; if the part before the first `:` has no `/`, that `:` becomes `/`; strip one trailing `.git`;
/// every run of characters outside `[a-z0-9]` becomes `-`; trim `-`; empty becomes `unknown`.
pub fn normalize_git_remote(url: &str) -> String {
    let mut s = crate::text::trim_reference_whitespace(url).to_lowercase();
    for p in ["git+ssh://", "ssh://", "git://", "https://", "http://"] {
        if let Some(rest) = s.strip_prefix(p) {
            s = rest.to_owned();
            break;
        }
    }
    if let Some(at) = s.find('@') {
        s = s[at + 1..].to_owned();
    }
    if let Some(colon) = s.find(':')
        && !s[..colon].contains('/')
    {
        s.replace_range(colon..=colon, "/");
    }
    if let Some(rest) = s.strip_suffix(".git") {
        s = rest.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let t = out.trim_matches('-');
    if t.is_empty() {
        "unknown".to_owned()
    } else {
        t.to_owned()
    }
}

/// `git config --get remote.origin.url` in `cwd`, or `None` (no git, not a repo, no remote, timeout).
pub fn git_remote_url(cwd: &Path) -> Option<String> {
    GIT_SPAWNS.with(|n| n.set(n.get() + 1));
    let mut child = Command::new("git")
        .args(["config", "--get", "remote.origin.url"])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                if !status.success() {
                    return None;
                }
                let mut out = String::new();
                std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
                let out = out.trim().to_owned();
                return if out.is_empty() { None } else { Some(out) };
            }
            Ok(None) if start.elapsed() < GIT_TIMEOUT => std::thread::sleep(Duration::from_millis(2)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// Resolve the identity of `cwd` given an optional override (already chosen by env > settings). The cwd's hash and
/// remote come from the per-process cache when looked up less than [`IDENTITY_TTL`] ago; with an override the
/// remote is never looked up.
///
/// Errors: [`CoreError::InvalidProjectId`] when the override is malformed (never silently ignored).
pub fn resolve_project(cwd: &Path, override_id: Option<&str>) -> Result<ProjectIdentity, CoreError> {
    resolve_project_at(cwd, override_id, Instant::now())
}

/// [`resolve_project`] as of `now` (tests move time forward past [`IDENTITY_TTL`]).
fn resolve_project_at(cwd: &Path, override_id: Option<&str>, now: Instant) -> Result<ProjectIdentity, CoreError> {
    if let Some(o) = override_id {
        // Validated before any lookup: a malformed override costs nothing and caches nothing.
        validate_project_id(o)?;
    }
    let (hash, remote) = cwd_facts(cwd, override_id.is_none(), now);
    if let Some(o) = override_id {
        let alias = (o != hash).then(|| hash.clone());
        return Ok(ProjectIdentity {
            project_id: o.to_owned(),
            source: ProjectIdSource::Override,
            alias,
        });
    }
    if let Some(url) = remote {
        let id = normalize_git_remote(&url);
        if id != "unknown" && !RESERVED_PROJECT_IDS.contains(&id.as_str()) {
            let alias = (id != hash).then(|| hash.clone());
            return Ok(ProjectIdentity {
                project_id: id,
                source: ProjectIdSource::GitRemote,
                alias,
            });
        }
    }
    Ok(ProjectIdentity {
        project_id: hash,
        source: ProjectIdSource::CwdHash,
        alias: None,
    })
}

/// The cwd's hash and (when `want_remote`) its git remote URL: from the cache when fresh, else looked up and
/// remembered. The lock is not held while `git` runs, so two first calls for one cwd may both look it up.
fn cwd_facts(cwd: &Path, want_remote: bool, now: Instant) -> (String, Option<String>) {
    let fresh =
        |f: &CwdFacts| now.saturating_duration_since(f.at) < IDENTITY_TTL && (!want_remote || f.remote.is_some());
    if let Some(f) = CACHE.lock().unwrap_or_else(PoisonError::into_inner).get(cwd)
        && fresh(f)
    {
        return (f.hash.clone(), f.remote.clone().flatten());
    }
    let hash = cwd_hash(cwd);
    let remote = want_remote.then(|| git_remote_url(cwd));
    let mut cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    if cache.len() >= CACHE_CAP {
        cache.retain(|_, f| now.saturating_duration_since(f.at) < IDENTITY_TTL);
        if cache.len() >= CACHE_CAP {
            cache.clear();
        }
    }
    cache.insert(
        cwd.to_path_buf(),
        CwdFacts {
            at: now,
            hash: hash.clone(),
            remote: remote.clone(),
        },
    );
    (hash, remote.flatten())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_hash_is_12_hex() {
        let dir = tempfile::tempdir().expect("tempdir");
        let h = cwd_hash(dir.path());
        assert_eq!(h.len(), 12);
        assert!(h.bytes().all(|b| b.is_ascii_hexdigit()));
    }

    #[test]
    fn missing_cwd_hashes_its_lexically_resolved_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = std::fs::canonicalize(dir.path()).expect("canonical");
        let missing = dir.path().join("gone/./x/../y");
        assert_eq!(realpath(&missing), real.join("gone/y"));
        assert_eq!(cwd_hash(&missing), cwd_hash(&real.join("gone/y")));
        assert_eq!(realpath(dir.path()), real);
    }

    #[test]
    fn non_repo_falls_back_to_hash() {
        let dir = tempfile::tempdir().expect("tempdir");
        let id = resolve_project(dir.path(), None).expect("resolves");
        assert_eq!(id.source, ProjectIdSource::CwdHash);
        assert_eq!(id.project_id, cwd_hash(dir.path()));
        assert_eq!(id.alias, None);
    }

    /// A temp dir that is a git repository with `origin` at `url`.
    fn repo_with_remote(url: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        for args in [&["init", "-q"][..], &["remote", "add", "origin", url][..]] {
            let st = Command::new("git")
                .args(args)
                .current_dir(dir.path())
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .stdout(Stdio::null())
                .status()
                .expect("git must be installed to run this test");
            assert!(st.success(), "git {args:?} failed");
        }
        dir
    }

    #[test]
    fn a_cwd_is_looked_up_once_per_ttl_and_never_with_an_override() {
        let repo = repo_with_remote("git@github.com:Acme/Widgets.git");
        let t = Instant::now();
        let before = git_spawns_on_this_thread();
        let id = resolve_project_at(repo.path(), None, t).expect("resolves");
        assert_eq!(
            (id.project_id.as_str(), id.source),
            ("github-com-acme-widgets", ProjectIdSource::GitRemote)
        );
        assert_eq!(id.alias, Some(cwd_hash(repo.path())));
        assert_eq!(git_spawns_on_this_thread(), before + 1);
        // Warm: the same answer, no process.
        let again = resolve_project_at(repo.path(), None, t + IDENTITY_TTL / 2).expect("resolves");
        assert_eq!(again, id);
        assert_eq!(git_spawns_on_this_thread(), before + 1, "a warm lookup spawns nothing");
        // An override never looks the remote up, cached or not.
        let other = tempfile::tempdir().expect("tempdir");
        let o = resolve_project_at(other.path(), Some("acme"), t).expect("resolves");
        assert_eq!(o.alias, Some(cwd_hash(other.path())));
        assert_eq!(git_spawns_on_this_thread(), before + 1, "an override spawns nothing");
        // A malformed override is refused before any lookup.
        assert!(resolve_project_at(other.path(), Some("a b"), t).is_err());
        // Another cwd is looked up at once; past the TTL the first one is looked up again.
        let id2 = resolve_project_at(other.path(), None, t).expect("resolves");
        assert_eq!(id2.source, ProjectIdSource::CwdHash);
        assert_eq!(git_spawns_on_this_thread(), before + 2);
        resolve_project_at(repo.path(), None, t + IDENTITY_TTL).expect("resolves");
        assert_eq!(
            git_spawns_on_this_thread(),
            before + 3,
            "expired entries are looked up again"
        );
    }

    #[test]
    fn override_wins_and_records_alias() {
        let dir = tempfile::tempdir().expect("tempdir");
        let id = resolve_project(dir.path(), Some("acme.widgets")).expect("resolves");
        assert_eq!(id.project_id, "acme.widgets");
        assert_eq!(id.alias, Some(cwd_hash(dir.path())));
        assert!(resolve_project(dir.path(), Some("has space")).is_err());
        assert!(
            resolve_project(dir.path(), Some("global")).is_err(),
            "reserved container name"
        );
        assert!(
            resolve_project(dir.path(), Some("federated")).is_err(),
            "reserved container name"
        );
    }
}
