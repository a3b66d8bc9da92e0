//! Every write and delete path of the store appends its journal entry in the same index transaction (spec 001
//! "Notes and the journal"): store, forget, delete, clear, retention, OKF import, edits picked up from the files,
//! repair; the first opening of a container's journal imports its existing topics oldest first by file mtime
//! without touching the files; a removed memory directory clears its journal at the next call.

use cao_core::{Key, Scope, Settings, SystemClock, TerminalContext};
use cao_index::{EntryKind, EntryRow};
use cao_memory::{ConflictPolicy, ForgetArgs, ImportRequest, MemoryService, NoProgress, StoreArgs};
use cao_testkit::service::RawStorage;
use cao_testkit::service::{ServiceFixture, utc};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const PROJECT: &str = "proj-j";

fn setup() -> ServiceFixture {
    ServiceFixture::builder()
        .at(utc(2026, 3, 1, 12, 0, 0))
        .project(PROJECT)
        .session("sess-j")
        .open()
}

/// Every entry of `container`, oldest first, read through the store (either backend).
fn entries(svc: &MemoryService, container: &str) -> Vec<EntryRow> {
    svc.storage()
        .read()
        .expect("read")
        .journal(|j| j.entries_from(container, 0, 100_000))
        .expect("entries")
}

/// `(kind, key, text)` of every entry of `container`.
fn summary(svc: &MemoryService, container: &str) -> Vec<(EntryKind, String, String)> {
    entries(svc, container)
        .into_iter()
        .map(|e| (e.kind, e.key.as_str().to_owned(), e.text))
        .collect()
}

fn note(key: &str, text: &str) -> (EntryKind, String, String) {
    (EntryKind::Note, key.to_owned(), text.to_owned())
}

fn delete(key: &str) -> (EntryKind, String, String) {
    (EntryKind::Delete, key.to_owned(), String::new())
}

fn key(k: &str) -> Key {
    Key::parse_strict(k).expect("key")
}

#[test]
fn store_forget_delete_and_clear_append_their_entries_with_the_writer_and_name_them_in_receipts() {
    let f = setup();
    let ctx = TerminalContext {
        terminal_id: Some("term-7".into()),
        ..f.ctx.clone()
    };
    let first = f.store_as(&ctx, "project", "deploy", "deploy with cargo xtask dist");
    assert_eq!(first.journal_entry, Some(0));
    let second = f.store_as(&ctx, "project", "ci-cache", "the cache key includes Cargo.lock");
    assert_eq!(second.journal_entry, Some(1));
    let again = f.store_as(&ctx, "project", "deploy", "deploy from main only");
    assert_eq!((again.action, again.journal_entry), ("updated", Some(2)));
    // Session and global memories journal into the global container, numbered on their own.
    assert_eq!(f.store("session", "scratch", "scratch notes").journal_entry, Some(0));
    assert_eq!(f.store("global", "editor", "vim keys").journal_entry, Some(1));

    let forgot = f
        .svc
        .forget(
            &ctx,
            ForgetArgs {
                key: "ci-cache".into(),
                scope: Some(cao_core::Scope::Project),
            },
        )
        .expect("forget");
    assert_eq!((forgot.deleted, forgot.journal_entry), (true, Some(3)));
    let absent = f
        .svc
        .forget(
            &ctx,
            ForgetArgs {
                key: "ci-cache".into(),
                scope: Some(cao_core::Scope::Project),
            },
        )
        .expect("forget again");
    assert_eq!(
        (absent.deleted, absent.journal_entry),
        (false, None),
        "nothing deleted, nothing appended"
    );
    let deleted = f
        .svc
        .delete(
            &f.ctx,
            cao_memory::MemoryTarget::key(&key("deploy"), Some(Scope::Project)),
        )
        .expect("delete");
    assert_eq!(deleted.journal_entry, Some(4));
    f.store("project", "left", "left over");
    assert_eq!(f.svc.clear(&f.ctx, Scope::Project).expect("clear"), 1);

    let ix = &f.svc;
    assert_eq!(
        summary(ix, PROJECT),
        vec![
            note("deploy", "deploy with cargo xtask dist"),
            note("ci-cache", "the cache key includes Cargo.lock"),
            note("deploy", "deploy from main only"),
            delete("ci-cache"),
            delete("deploy"),
            note("left", "left over"),
            delete("left"),
        ]
    );
    assert_eq!(
        summary(ix, "global"),
        vec![note("scratch", "scratch notes"), note("editor", "vim keys")]
    );
    let all = entries(ix, PROJECT);
    assert_eq!(all[0].writer.terminal_id.as_deref(), Some("term-7"));
    assert_eq!(all[0].writer.session.as_deref(), Some("sess-j"));
    assert_eq!(all[0].writer.pid, Some(std::process::id()));
    assert_eq!(
        all[0].at,
        utc(2026, 3, 1, 12, 0, 0),
        "the entry time is the write's time"
    );
    assert_eq!(all[0].next.map(|(id, _)| id), Some(2), "versions are linked");
    assert_eq!(all[2].next, Some((4, EntryKind::Delete)));
}

#[test]
fn retention_and_import_append_their_entries() {
    let f = setup();
    f.store("project", "old-note", "expires after ninety days");
    f.clock.set(utc(2026, 9, 1, 0, 0, 0));
    let report = f.svc.cleanup(false).expect("cleanup");
    assert_eq!(report.removed.len(), 1, "{report:?}");
    assert_eq!(
        summary(&f.svc, PROJECT),
        vec![note("old-note", "expires after ninety days"), delete("old-note")]
    );
    let retention_writer = &entries(&f.svc, PROJECT)[1].writer;
    assert_eq!(
        (
            retention_writer.terminal_id.as_deref(),
            retention_writer.session.as_deref()
        ),
        (None, None)
    );

    let bundle = f.root().join("bundle");
    std::fs::create_dir_all(&bundle).expect("mkdir");
    for (name, body) in [("alpha.md", "Alpha fact."), ("beta.md", "Beta fact.")] {
        std::fs::write(bundle.join(name), format!("---\ntype: project\n---\n{body}\n")).expect("write");
    }
    let out = f
        .svc
        .import(
            &f.ctx,
            &ImportRequest {
                source: bundle,
                scope: Scope::Project,
                conflict: ConflictPolicy::Merge,
                dry_run: false,
            },
            &NoProgress,
        )
        .expect("import");
    assert_eq!(out.report.imported, 2);
    let got = summary(&f.svc, PROJECT);
    assert_eq!(got.len(), 4);
    let mut imported: Vec<_> = got[2..].to_vec();
    imported.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(imported, vec![note("alpha", "Alpha fact."), note("beta", "Beta fact.")]);
}

/// A topic file as the store writes it, with the given mtime (seconds after a fixed instant).
fn write_topic(dir: &Path, key: &str, body: &str, mtime_secs: u64) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let path = dir.join(format!("{key}.md"));
    std::fs::write(
        &path,
        format!(
            "# {key}\n<!-- id: {} | scope: project | type: project | tags:  -->\n\n## 2026-01-0{}T00:00:00Z\n{body}\n",
            uuid_like(key),
            1 + mtime_secs % 9,
        ),
    )
    .expect("write topic");
    let file = std::fs::File::options().write(true).open(&path).expect("open");
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + mtime_secs))
        .expect("set mtime");
}

fn uuid_like(key: &str) -> String {
    let hex: String = key.bytes().map(|b| format!("{b:02x}")).collect();
    let h = format!("{hex:0<32}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

fn files_with_times(dir: &Path) -> Vec<(String, Vec<u8>, SystemTime)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| {
            let m = std::fs::metadata(&p).expect("metadata");
            (
                p.file_name().expect("name").to_string_lossy().into_owned(),
                std::fs::read(&p).expect("read"),
                m.modified().expect("mtime"),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn the_first_opening_imports_existing_topics_oldest_first_by_mtime_and_leaves_the_files_alone() {
    if cao_testkit::service::skip_on_postgres(
        "writes topic files before the first opening and orders the import by file mtime",
    ) {
        return;
    }
    let f = setup();
    let dir = f.home.memory_dir().join(PROJECT).join("wiki").join("project");
    // Names and mtimes disagree on the order, so the order can only come from the mtimes.
    write_topic(&dir, "zeta", "Zeta, written first.", 10);
    write_topic(&dir, "alpha", "Alpha, written last.", 30);
    write_topic(&dir, "mid", "Mid, written second.", 20);
    let before = files_with_times(&dir);
    // A read picks the files up into the index; the container has no journal yet, so nothing is appended.
    f.svc.pick_up_changes().expect("pick up");
    assert_eq!(f.svc.raw_index().count().expect("count"), 3);
    assert!(entries(&f.svc, PROJECT).is_empty());

    // The first write opens the journal: the three existing topics first, oldest first, then the write.
    let out = f.store("project", "newest", "Newest.");
    assert_eq!(out.journal_entry, Some(3));
    assert_eq!(
        summary(&f.svc, PROJECT),
        vec![
            note("zeta", "Zeta, written first."),
            note("mid", "Mid, written second."),
            note("alpha", "Alpha, written last."),
            note("newest", "Newest."),
        ]
    );
    let after: Vec<_> = files_with_times(&dir)
        .into_iter()
        .filter(|(n, _, _)| n != "newest.md")
        .collect();
    assert_eq!(after, before, "the import changes no byte and no time of the files");

    // Another process finds the journal open and imports nothing again.
    let other = MemoryService::open_with(f.home.clone(), Settings::default(), Arc::new(SystemClock)).expect("open");
    other
        .store(
            &f.ctx,
            StoreArgs {
                content: "From another process.".into(),
                key: Some("other".into()),
                ..Default::default()
            },
        )
        .expect("store");
    assert_eq!(entries(&f.svc, PROJECT).len(), 5);
}

/// A reconcile batch holds one topic lock (one descriptor) per file, so its size follows the process's descriptor
/// limit: with a soft limit of 1,024 a batch is 384 files, and 1,000 topic files written outside the tool are
/// indexed in three transactions, each file once, with no descriptor left open; the first write then imports them
/// all into the journal.
#[test]
fn files_beyond_one_batch_are_indexed_in_batches_sized_by_the_descriptor_limit() {
    if cao_testkit::service::skip_on_postgres("writes topic files outside the tool for the embedded backend's walk") {
        return;
    }
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(1024),
            maximum: limit.maximum,
        },
    )
    .expect("lower the soft descriptor limit");
    let f = setup();
    let dir = f.home.memory_dir().join(PROJECT).join("wiki").join("project");
    let n = 1000;
    for i in 0..n {
        write_topic(&dir, &format!("t{i:04}"), &format!("Topic {i}."), i);
    }
    let fds = || std::fs::read_dir("/proc/self/fd").map(Iterator::count).unwrap_or(0);
    let (open_before, writes_before) = (fds(), f.svc.storage().write_transactions());
    f.svc.pick_up_changes().expect("pick up");
    let writes = f.svc.storage().write_transactions() - writes_before;
    let open_after = fds();
    setrlimit(Resource::Nofile, limit).expect("restore the descriptor limit");
    assert_eq!(f.svc.raw_index().count().expect("count"), n as usize);
    assert_eq!(writes, 3, "1,000 files in batches of 384");
    assert!(
        open_after <= open_before + 4,
        "descriptors before {open_before}, after {open_after}"
    );
    let out = f.store("project", "newest", "Newest.");
    assert_eq!(out.journal_entry, Some(n), "every file imported once, then the write");
}

#[test]
fn a_memory_written_before_the_first_opening_is_imported_then_its_new_version_appended() {
    if cao_testkit::service::skip_on_postgres("writes a topic file before the first opening of the journal") {
        return;
    }
    let f = setup();
    let dir = f.home.memory_dir().join(PROJECT).join("wiki").join("project");
    write_topic(&dir, "deploy", "Old deploy text.", 5);
    f.svc.pick_up_changes().expect("pick up");
    let out = f.store("project", "deploy", "New deploy text.");
    assert_eq!(out.journal_entry, Some(1));
    let all = entries(&f.svc, PROJECT);
    assert_eq!(
        summary(&f.svc, PROJECT),
        vec![note("deploy", "Old deploy text."), note("deploy", "New deploy text.")]
    );
    assert_eq!(all[0].next, Some((1, EntryKind::Note)));
}

#[test]
fn edits_outside_the_tool_append_notes_and_removed_files_append_deletes() {
    if cao_testkit::service::skip_on_postgres("edits and removes topic files behind the service") {
        return;
    }
    let f = setup();
    let path = f.store("project", "deploy", "deploy with kafka").file_path;
    f.store("project", "other", "other note");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, text.replace("deploy with kafka", "deploy with zookeeper")).expect("edit");
    f.svc.pick_up_changes().expect("pick up");
    let other_path = f
        .home
        .memory_dir()
        .join(PROJECT)
        .join("wiki")
        .join("project")
        .join("other.md");
    std::fs::remove_file(&other_path).expect("remove");
    f.svc.pick_up_changes().expect("pick up");
    let all = entries(&f.svc, PROJECT);
    assert_eq!(
        summary(&f.svc, PROJECT),
        vec![
            note("deploy", "deploy with kafka"),
            note("other", "other note"),
            note("deploy", "deploy with zookeeper"),
            delete("other"),
        ]
    );
    assert_eq!(
        (all[2].writer.terminal_id.as_deref(), all[2].writer.session.as_deref()),
        (None, None),
        "an edit outside the tool has no terminal or session"
    );
    // A walk that finds nothing new appends nothing; repair agrees and appends nothing either.
    f.svc.pick_up_changes().expect("pick up");
    let repair = f.svc.repair().expect("repair");
    assert!(repair.is_clean(), "{repair:?}");
    assert_eq!(entries(&f.svc, PROJECT).len(), 4);
}

#[test]
fn removing_the_memory_directory_clears_the_journal_at_the_next_call() {
    if cao_testkit::service::skip_on_postgres("removes the home's memory directory") {
        return;
    }
    let f = setup();
    f.store("project", "deploy", "deploy with kafka");
    f.store("global", "keep", "a global memory");
    assert_eq!(entries(&f.svc, PROJECT).len(), 1);
    std::fs::remove_dir_all(f.home.memory_dir().join(PROJECT)).expect("rm -r");
    let report = f.svc.pick_up_changes().expect("pick up");
    assert_eq!(report.journals_cleared, vec![PROJECT.to_owned()]);
    assert!(entries(&f.svc, PROJECT).is_empty());
    assert!(
        !f.svc
            .storage()
            .read()
            .expect("read")
            .journal(|j| j.has_journal(PROJECT))
            .expect("has"),
        "the journal itself is gone"
    );
    assert_eq!(entries(&f.svc, "global").len(), 1, "other containers keep theirs");
    // The next write starts a new journal from entry 0.
    assert_eq!(f.store("project", "fresh", "fresh start").journal_entry, Some(0));
}

#[test]
fn an_index_rebuilt_from_the_files_imports_them_once_at_the_first_opening() {
    if cao_testkit::service::skip_on_postgres("removes the SQLite index and rebuilds it from the wiki files") {
        return;
    }
    let f = setup();
    f.store("project", "a", "first");
    f.clock.advance(chrono::Duration::minutes(1));
    f.store("project", "b", "second");
    drop(f.svc);
    // The database is deleted: the next process rebuilds the index from the files, then opens a new journal.
    std::fs::remove_dir_all(f.home.root().join("db")).expect("rm db");
    let svc = MemoryService::open_with(f.home.clone(), Settings::default(), Arc::new(SystemClock)).expect("open");
    assert_eq!(svc.raw_index().count().expect("count"), 2);
    assert!(entries(&svc, PROJECT).is_empty(), "repair appends to no journal");
    svc.store(
        &f.ctx,
        StoreArgs {
            content: "third".into(),
            key: Some("c".into()),
            ..Default::default()
        },
    )
    .expect("store");
    let got = summary(&svc, PROJECT);
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(got[2], note("c", "third"));
    let mut imported = got[..2].to_vec();
    imported.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(imported, vec![note("a", "first"), note("b", "second")]);
}
