//! A full disk and a read-only disk (issue 31): store, import, heal, compaction, journal snapshot and summary
//! writes on a home whose file system refuses writes fail with `storage_full` / `storage_read_only`, leave nothing
//! half-written (no truncated or temp topic file, no row without its file, no journal entry without its row) and
//! succeed once space returns, after which lint finds no integrity problem.
//!
//! Two variants:
//! - fault injection ([`cao_core::fs::fault::inject`]: the one file-write module and the SQLite index's commits
//!   fail as the file system would), which runs everywhere; every write call must fail;
//! - a real file system: a small tmpfs mounted by the test (root only; CI runs as root), filled up with a filler
//!   file, and remounted read-only. A write the full tmpfs still has room for (an index update that reuses the
//!   WAL's pages) may succeed; every call either succeeds whole or fails with the storage code. Each test prints
//!   which variant ran (and why the tmpfs one did not, when it could not mount).

use cao_core::fs::fault::{self, StorageFault};
use cao_core::{CaoHome, Key, Scope, Settings, TerminalContext};
use cao_memory::{
    CompactRequest, ConflictPolicy, ExportDestination, ExportRequest, HealRequest, ImportRequest, JournalTarget,
    LintRequest, MemoryError, MemoryService, NoProgress, StoreArgs,
};
use cao_model::{OpenAiConfig, OpenAiModel, RetryPolicy, SharedModel};
use cao_protocol::ErrorCode;
use cao_testkit::fake_model::{FakeModel, Reply};
use cao_testkit::service::{RawStorage, fixed_clock, utc};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const PROJECT: &str = "proj-disk";

/// How the test makes the home's file system refuse writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// `cao_core::fs::fault::inject` on the home.
    Injected,
    /// A tmpfs mounted under the temp dir.
    Tmpfs,
}

/// A home on a file system the test can break and mend.
struct Disk {
    variant: Variant,
    /// The temp dir (the caller's cwd; holds the mount point).
    dir: tempfile::TempDir,
    /// The home root.
    root: PathBuf,
    /// The tmpfs mount point (unmounted on drop).
    mount: Option<PathBuf>,
}

impl Disk {
    /// A home for `variant`; `Err(reason)` when the tmpfs cannot be mounted here.
    fn new(variant: Variant) -> Result<Disk, String> {
        let dir = tempfile::tempdir().expect("temp dir");
        let (root, mount) = match variant {
            Variant::Injected => (dir.path().join("home"), None),
            Variant::Tmpfs => {
                let mnt = dir.path().join("mnt");
                std::fs::create_dir(&mnt).expect("mount point");
                let out = Command::new("mount")
                    .args(["-t", "tmpfs", "-o", "size=24m,mode=0700", "tmpfs"])
                    .arg(&mnt)
                    .output()
                    .map_err(|e| format!("cannot run mount: {e}"))?;
                if !out.status.success() {
                    return Err(format!(
                        "mount refused: {}",
                        String::from_utf8_lossy(&out.stderr).trim()
                    ));
                }
                (mnt.join("home"), Some(mnt))
            }
        };
        Ok(Disk {
            variant,
            dir,
            root,
            mount,
        })
    }

    fn home(&self) -> CaoHome {
        CaoHome::new(&self.root)
    }

    fn filler(&self) -> PathBuf {
        self.mount.as_ref().expect("tmpfs").join("filler")
    }

    /// Make the file system refuse writes with `f`. For a read-only tmpfs, no file may be open for writing (the
    /// kernel refuses the remount): the caller has closed every service on the home.
    fn break_with(&self, f: StorageFault) {
        match (self.variant, f) {
            (Variant::Injected, _) => fault::inject(&self.root, Some(f)),
            (Variant::Tmpfs, StorageFault::Full) => fill(&self.filler()),
            (Variant::Tmpfs, StorageFault::ReadOnly) => self.remount("ro"),
        }
    }

    /// Give the space (or the write permission) back.
    fn mend(&self) {
        match self.variant {
            Variant::Injected => fault::inject(&self.root, None),
            Variant::Tmpfs => {
                self.remount("rw");
                let _ = std::fs::remove_file(self.filler());
            }
        }
    }

    /// Remount the tmpfs `mode` (`ro` / `rw`). The kernel answers "busy" to a read-only remount while a file on
    /// the mount is open for writing or unlinked and not yet released; a release can trail the `close` that caused
    /// it by a moment (seen on CI once), so a busy answer is retried for up to 10 s. A mount still busy then fails
    /// the test naming the handles this process holds on the mount.
    fn remount(&self, mode: &str) {
        let mnt = self.mount.as_ref().expect("tmpfs");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let out = Command::new("mount")
                .args(["-o", &format!("remount,{mode}")])
                .arg(mnt)
                .output()
                .expect("run mount");
            if out.status.success() {
                return;
            }
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            if !err.contains("busy") || std::time::Instant::now() >= deadline {
                panic!(
                    "remount {mode}: {err}; this process's open files on the mount: {:?}",
                    open_files_under(mnt)
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Disk {
    fn drop(&mut self) {
        fault::inject(&self.root, None);
        if let Some(mnt) = &self.mount {
            let _ = Command::new("umount").arg(mnt).status();
        }
    }
}

/// The files this process has open under `dir` (from `/proc/self/fd`), for a failure message.
fn open_files_under(dir: &Path) -> Vec<PathBuf> {
    let Ok(fds) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    fds.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.starts_with(dir))
        .collect()
}

/// Write `path` until the file system says `ENOSPC` (64 KiB chunks, then 4 KiB ones for the last pages).
fn fill(path: &Path) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("filler");
    for chunk in [64 * 1024, 4096, 512] {
        let buf = vec![0x5a_u8; chunk];
        loop {
            match f.write(&buf) {
                Ok(n) if n == buf.len() => {}
                Ok(_) => break,
                Err(e) => {
                    assert_eq!(fault::classify(&e), Some(StorageFault::Full), "filling: {e}");
                    break;
                }
            }
        }
    }
    let _ = f.sync_all();
}

fn ctx(disk: &Disk) -> TerminalContext {
    TerminalContext {
        cwd: Some(disk.dir.path().to_path_buf()),
        project_id: Some(PROJECT.into()),
        session_name: Some("sess-disk".into()),
        ..TerminalContext::default()
    }
}

fn open(disk: &Disk) -> Result<MemoryService, MemoryError> {
    MemoryService::open_with(disk.home(), Settings::default(), fixed_clock(utc(2026, 5, 1, 9, 0, 0)))
}

fn store(svc: &MemoryService, ctx: &TerminalContext, key: &str, content: &str) -> Result<(), MemoryError> {
    svc.store(
        ctx,
        StoreArgs {
            content: content.into(),
            scope: Some(cao_core::Scope::Project),
            key: Some(key.into()),
            ..Default::default()
        },
    )
    .map(|_| ())
}

/// Everything a failed call must leave as it was: every file under the home's `memory/` with its bytes (lock
/// files aside: opening one creates it empty), every index row, every journal entry of the project.
#[derive(Debug, PartialEq)]
struct State {
    files: BTreeMap<String, Vec<u8>>,
    rows: Vec<String>,
    journal: Vec<String>,
}

fn state(svc: &MemoryService) -> State {
    let memory_dir = svc.home().memory_dir();
    let mut files = BTreeMap::new();
    let mut stack = vec![memory_dir.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if !p.to_string_lossy().ends_with(".lock") {
                let rel = p
                    .strip_prefix(&memory_dir)
                    .expect("under memory/")
                    .display()
                    .to_string();
                files.insert(rel, std::fs::read(&p).expect("read file"));
            }
        }
    }
    let index = svc.raw_index();
    let mut rows: Vec<String> = index
        .all_rows()
        .expect("rows")
        .iter()
        .map(|r| {
            format!(
                "{:?}/{:?}/{} {} {}",
                r.scope, r.scope_id, r.key, r.updated_at, r.access_count
            )
        })
        .collect();
    rows.sort();
    let journal = index
        .journal_read(|j| j.entries_from(&format!("project-{PROJECT}"), 0, 100_000))
        .expect("journal")
        .iter()
        .map(|e| format!("{:?} {} {}", e.kind, e.key.as_str(), e.text))
        .collect();
    State { files, rows, journal }
}

/// No temp file of an atomic write is left anywhere under the home.
fn assert_no_temp_files(root: &Path) {
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir") {
            let p = e.expect("entry").path();
            assert!(
                !p.to_string_lossy().ends_with(".tmp"),
                "temp file left: {}",
                p.display()
            );
            if p.is_dir() {
                stack.push(p);
            }
        }
    }
}

/// The code a call on a home with `fault` must fail with.
fn code_of(fault: StorageFault) -> ErrorCode {
    match fault {
        StorageFault::Full => ErrorCode::StorageFull,
        StorageFault::ReadOnly => ErrorCode::StorageReadOnly,
    }
}

/// What one call did on the broken home.
fn judge<T: std::fmt::Debug>(
    disk: &Disk,
    fault: StorageFault,
    what: &str,
    result: Result<T, MemoryError>,
    failed: &mut Vec<String>,
) {
    match result {
        Err(e) => {
            assert_eq!(e.code(), code_of(fault), "{what}: {e}");
            assert_eq!(e.storage_fault(), Some(fault), "{what}: {e}");
            failed.push(what.to_owned());
        }
        Ok(v) => assert_eq!(
            disk.variant,
            Variant::Tmpfs,
            "{what} succeeded on an injected {fault:?} disk: {v:?}"
        ),
    }
}

fn model(ep: &FakeModel) -> SharedModel {
    OpenAiModel::new(OpenAiConfig {
        url: ep.url(),
        name: "fake".into(),
        api_key: None,
        timeout: Duration::from_secs(10),
        retry: RetryPolicy {
            max_attempts: 1,
            base_delay: Duration::from_millis(10),
            max_retry_after: Duration::from_secs(1),
        },
    })
    .map(SharedModel::new)
    .expect("model")
}

/// The fake model's answer: the prompt's article (its `# <key>` and id lines) with one consolidated body.
fn article(user: &str) -> Reply {
    let key = user.lines().find_map(|l| l.strip_prefix("# ")).unwrap_or_default();
    let id = user.lines().find(|l| l.starts_with("<!-- id:")).unwrap_or_default();
    Reply::text(&format!(
        "# {key}\n{id}\n\nThe service listens on port 9090 (it moved from 8080). Deploys run on Fridays.\n"
    ))
}

/// A bundle of two project topics, exported from another home.
fn bundle(dir: &Path) -> PathBuf {
    let fx = cao_testkit::service::ServiceFixture::builder()
        .project("proj-src")
        .open();
    fx.store("project", "imported-a", "Imported note about the release train.");
    fx.store("project", "imported-b", "Imported note about the staging database.");
    let out = dir.join("bundle");
    fx.svc
        .export(
            &fx.ctx,
            &ExportRequest {
                scope: Scope::Project,
                scope_id: None,
                include_private: false,
                include_history: false,
                redact: false,
            },
            &ExportDestination::Directory {
                path: out.clone(),
                prune: false,
            },
            &NoProgress,
        )
        .expect("export");
    out
}

/// The seeded home: a kept memory, a topic with two entries (a compaction candidate), a dozen fillers and a
/// memory with a paragraph naming a file the repository lacks (heal strips it: a topic file rewrite).
fn seed(svc: &MemoryService, ctx: &TerminalContext) {
    store(svc, ctx, "kept", "The kept memory survives a full disk.").expect("store kept");
    store(
        svc,
        ctx,
        "deploy",
        "The service listens on port 8080. Deploys run on Fridays.",
    )
    .expect("store");
    store(svc, ctx, "deploy", "The service moved to port 9090.").expect("store");
    for i in 0..12 {
        store(
            svc,
            ctx,
            &format!("filler-{i:02}"),
            &format!("Filler memory number {i}."),
        )
        .expect("filler");
    }
    store(
        svc,
        ctx,
        "build-notes",
        "The crate root is the top of the tree.\n\nThe old parser lived in src/old.rs.",
    )
    .expect("build notes");
}

fn heal_req(disk: &Disk, apply: bool) -> HealRequest {
    HealRequest {
        apply,
        aggressive: true,
        repo_root: Some(disk.dir.path().to_path_buf()),
        ..Default::default()
    }
}

/// The writes of the issue on the broken home; returns the calls that failed with the storage code.
fn writes(
    svc: &MemoryService,
    disk: &Disk,
    ctx: &TerminalContext,
    fault: StorageFault,
    bundle: &Path,
    m: &SharedModel,
) -> Vec<String> {
    let mut failed = Vec::new();
    judge(
        disk,
        fault,
        "store new",
        store(svc, ctx, "fresh", "A new memory on a full disk."),
        &mut failed,
    );
    judge(
        disk,
        fault,
        "store append",
        store(svc, ctx, "kept", "A second entry for the kept memory."),
        &mut failed,
    );
    let import = ImportRequest {
        source: bundle.to_path_buf(),
        scope: Scope::Project,
        conflict: ConflictPolicy::Skip,
        dry_run: false,
    };
    judge(
        disk,
        fault,
        "import",
        svc.import(ctx, &import, &NoProgress),
        &mut failed,
    );
    judge(
        disk,
        fault,
        "heal --apply",
        svc.heal(ctx, heal_req(disk, true), &NoProgress),
        &mut failed,
    );
    let compact = CompactRequest {
        scope: Some(Scope::Project),
        key: Some("deploy".into()),
        dry_run: false,
        model: Some(m.clone()),
    };
    judge(
        disk,
        fault,
        "compact",
        svc.compact(ctx, compact, &NoProgress),
        &mut failed,
    );
    let target = JournalTarget::default();
    judge(
        disk,
        fault,
        "journal snapshot",
        svc.session(ctx, &target, "sess-disk").take_snapshot(),
        &mut failed,
    );
    let worker = cao_memory::SummarizeWorker::new(Duration::from_secs(5));
    judge(
        disk,
        fault,
        "summary",
        svc.summarize_pass(&cao_model::NoModel::new(), &worker),
        &mut failed,
    );
    failed
}

/// After the home is mended: the same calls succeed, and lint finds no integrity problem (file without row, row
/// without file, unparsable file, index.md drift) and no error. Its graph-density warnings about the fillers are
/// not the disk's doing and are left out.
fn writes_succeed_and_lint_is_clean(
    svc: &MemoryService,
    disk: &Disk,
    ctx: &TerminalContext,
    bundle: &Path,
    m: &SharedModel,
) {
    store(svc, ctx, "fresh", "A new memory on a full disk.").expect("store new once space is back");
    store(svc, ctx, "kept", "A second entry for the kept memory.").expect("store append once space is back");
    let import = ImportRequest {
        source: bundle.to_path_buf(),
        scope: Scope::Project,
        conflict: ConflictPolicy::Skip,
        dry_run: false,
    };
    let imported = svc
        .import(ctx, &import, &NoProgress)
        .expect("import once space is back");
    assert_eq!(imported.stopped, None);
    svc.heal(ctx, heal_req(disk, true), &NoProgress)
        .expect("heal once space is back");
    svc.compact(
        ctx,
        CompactRequest {
            scope: Some(Scope::Project),
            key: Some("deploy".into()),
            dry_run: false,
            model: Some(m.clone()),
        },
        &NoProgress,
    )
    .expect("compact once space is back");
    let target = JournalTarget::default();
    svc.session(ctx, &target, "sess-disk")
        .take_snapshot()
        .expect("snapshot once space is back");
    let worker = cao_memory::SummarizeWorker::new(Duration::from_secs(5));
    svc.summarize_pass(&cao_model::NoModel::new(), &worker)
        .expect("summary once space is back");
    for key in ["fresh", "kept", "imported-a", "imported-b", "deploy"] {
        let k = Key::parse_strict(key).expect("key");
        assert!(
            svc.storage()
                .read()
                .expect("read")
                .get(Scope::Project, Some(PROJECT), &k)
                .expect("get")
                .is_some(),
            "{key} is stored"
        );
    }
    let lint = svc
        .lint(
            ctx,
            LintRequest {
                repo_root: Some(disk.dir.path().to_path_buf()),
                ..Default::default()
            },
            &NoProgress,
        )
        .expect("lint");
    let problems: Vec<String> = lint
        .findings
        .iter()
        .filter(|f| f.issue_type == cao_memory::IssueType::IndexIntegrity || f.severity == cao_memory::Severity::Error)
        .map(|f| format!("{:?} {:?} {}", f.issue_type, f.kind, f.description))
        .collect();
    assert!(problems.is_empty(), "lint after the disk was mended: {problems:#?}");
    assert_no_temp_files(&disk.root);
}

/// The whole scenario for a full disk on `variant`.
fn full_disk(variant: Variant) {
    let disk = match Disk::new(variant) {
        Ok(d) => d,
        Err(why) => {
            eprintln!("storage_faults: the tmpfs variant did not run ({why}); the fault-injection variant ran");
            return;
        }
    };
    eprintln!("storage_faults: full disk, {variant:?} variant");
    let ep = FakeModel::start(article);
    let m = model(&ep);
    let bundle = bundle(disk.dir.path());
    let ctx = ctx(&disk);
    let svc = open(&disk).expect("open");
    seed(&svc, &ctx);
    let plan = svc.heal(&ctx, heal_req(&disk, false), &NoProgress).expect("plan");
    assert!(!plan.actions.is_empty(), "heal has something to do: {plan:#?}");
    assert!(svc.health().is_ok(), "{:?}", svc.health());
    let before = state(&svc);

    disk.break_with(StorageFault::Full);
    let health = svc.health();
    assert_eq!(health.storage, Some(StorageFault::Full), "{health:?}");
    assert!(!health.is_ok());
    let failed = writes(&svc, &disk, &ctx, StorageFault::Full, &bundle, &m);
    eprintln!("storage_faults: failed with storage_full: {failed:?}");
    assert!(
        failed.iter().any(|w| w == "store new"),
        "a new topic file needs space: {failed:?}"
    );
    if variant == Variant::Injected {
        assert_eq!(state(&svc), before, "nothing was written by the failed calls");
    }
    // Reads still answer.
    let listed = svc
        .list(&ctx, cao_memory::ListRequest::default())
        .expect("list on a full disk");
    assert!(listed.iter().any(|m| m.key == "kept"), "{listed:?}");
    assert_no_temp_files(&disk.root);

    disk.mend();
    assert!(svc.health().is_ok(), "{:?}", svc.health());
    writes_succeed_and_lint_is_clean(&svc, &disk, &ctx, &bundle, &m);
}

/// The whole scenario for a home remounted read-only on `variant`.
fn read_only_disk(variant: Variant) {
    let disk = match Disk::new(variant) {
        Ok(d) => d,
        Err(why) => {
            eprintln!("storage_faults: the tmpfs variant did not run ({why}); the fault-injection variant ran");
            return;
        }
    };
    eprintln!("storage_faults: read-only disk, {variant:?} variant");
    let ep = FakeModel::start(article);
    let m = model(&ep);
    let bundle = bundle(disk.dir.path());
    let ctx = ctx(&disk);
    let before = {
        let svc = open(&disk).expect("open");
        seed(&svc, &ctx);
        state(&svc)
    };
    // The kernel remounts read-only only when no file on it is open for writing: every handle above is closed.
    disk.break_with(StorageFault::ReadOnly);
    match open(&disk) {
        Err(e) => {
            // A home whose index cannot even be opened on a read-only file system says so.
            assert_eq!(variant, Variant::Tmpfs, "opening with an injected read-only fault: {e}");
            assert_eq!(e.code(), ErrorCode::StorageReadOnly, "{e}");
            eprintln!("storage_faults: opening the read-only home failed with storage_read_only: {e}");
        }
        Ok(svc) => {
            let health = svc.health();
            assert_eq!(health.storage, Some(StorageFault::ReadOnly), "{health:?}");
            let failed = writes(&svc, &disk, &ctx, StorageFault::ReadOnly, &bundle, &m);
            eprintln!("storage_faults: failed with storage_read_only: {failed:?}");
            assert!(failed.iter().any(|w| w == "store new"), "{failed:?}");
            let listed = svc
                .list(&ctx, cao_memory::ListRequest::default())
                .expect("list on a read-only disk");
            assert!(listed.iter().any(|m| m.key == "kept"), "{listed:?}");
            drop(svc);
        }
    }
    disk.mend();
    let svc = open(&disk).expect("open once writable");
    assert_eq!(state(&svc), before, "nothing was written while read-only");
    writes_succeed_and_lint_is_clean(&svc, &disk, &ctx, &bundle, &m);
}

#[test]
fn a_full_disk_fails_writes_with_storage_full_and_they_succeed_once_space_returns_injected() {
    full_disk(Variant::Injected);
}

#[test]
fn a_full_disk_fails_writes_with_storage_full_and_they_succeed_once_space_returns_tmpfs() {
    full_disk(Variant::Tmpfs);
}

#[test]
fn a_read_only_home_fails_writes_with_storage_read_only_and_they_succeed_once_writable_injected() {
    read_only_disk(Variant::Injected);
}

#[test]
fn a_read_only_home_fails_writes_with_storage_read_only_and_they_succeed_once_writable_tmpfs() {
    read_only_disk(Variant::Tmpfs);
}
