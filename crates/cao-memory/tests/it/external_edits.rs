//! Edits made to the wiki files outside the tool (by hand, by another program, or by a writer killed between its
//! file write and its index transaction) are picked up before a read answers, and leftover temp files of dead
//! writers are removed.

use cao_core::{CaoHome, Key, Scope, Settings, SystemClock, TerminalContext};
use cao_memory::{ContextRequest, ListRequest, MemoryService, RecallArgs, StoreArgs};
use cao_testkit::service::RawStorage;
use cao_testkit::service::ServiceFixture;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Why every test here skips against PostgreSQL ([`cao_testkit::service::skip_on_postgres`]).
const FILES_ONLY: &str = "edits, adds or removes topic files, scope directories, temp files or the index file behind \
     the service; a PostgreSQL store has no files to edit";

/// Whether this run is against PostgreSQL, where these tests skip for [`FILES_ONLY`].
fn skip_on_postgres() -> bool {
    cao_testkit::service::skip_on_postgres(FILES_ONLY)
}

fn setup() -> ServiceFixture {
    ServiceFixture::builder().project("proj-a").open()
}

fn store(svc: &MemoryService, ctx: &TerminalContext, scope: &str, key: &str, content: &str) -> PathBuf {
    PathBuf::from(
        svc.store(
            ctx,
            StoreArgs {
                content: content.into(),
                scope: Some(scope.parse().expect("a valid scope")),
                key: Some(key.into()),
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("store {key}: {e}"))
        .file_path,
    )
}

fn recall_keys(svc: &MemoryService, ctx: &TerminalContext, query: &str) -> Vec<(String, String)> {
    svc.recall(
        ctx,
        RecallArgs {
            query: Some(query.into()),
            ..Default::default()
        },
    )
    .expect("recall")
    .memories
    .into_iter()
    .map(|m| (m.key, m.content))
    .collect()
}

/// Another service on the same home: a second process.
fn another_process(home: &CaoHome) -> MemoryService {
    MemoryService::open_with(home.clone(), Settings::default(), Arc::new(SystemClock)).expect("open")
}

/// `path`'s text with the content of its (single) entry replaced, written in place (same inode, so the
/// directory's modification time does not change), as an editor that truncates and rewrites does.
fn edit_in_place(path: &Path, old: &str, new: &str) {
    let text = std::fs::read_to_string(path).expect("read topic file");
    assert!(text.contains(old), "{text}");
    std::fs::write(path, text.replace(old, new)).expect("rewrite in place");
}

#[test]
fn an_in_place_edit_is_seen_by_every_read_without_a_repair() {
    if skip_on_postgres() {
        return;
    }
    let f = setup();
    let path = store(&f.svc, &f.ctx, "project", "deploy", "deploy with kafka streams");
    assert_eq!(recall_keys(&f.svc, &f.ctx, "kafka").len(), 1);
    edit_in_place(&path, "deploy with kafka streams", "deploy with zookeeper only");

    // A process that starts now sees the edit on its first read, whichever read it is.
    let other = another_process(&f.home);
    assert_eq!(
        recall_keys(&other, &f.ctx, "zookeeper"),
        [("deploy".to_owned(), "deploy with zookeeper only".to_owned())]
    );
    assert!(
        recall_keys(&other, &f.ctx, "kafka").is_empty(),
        "the old text is gone from the search index"
    );
    let key = Key::parse_strict("deploy").expect("key");
    let shown = another_process(&f.home)
        .show(&f.ctx, cao_memory::ShowRequest::key(&key, None))
        .expect("show")
        .expect("found");
    assert_eq!(shown.content, "deploy with zookeeper only");
    let listed = another_process(&f.home)
        .list(&f.ctx, ListRequest::default())
        .expect("list");
    assert_eq!(listed[0].content, "deploy with zookeeper only");
    let block = another_process(&f.home)
        .context_block(&f.ctx, ContextRequest::default())
        .expect("block")
        .expect("non-empty");
    assert!(block.contains("deploy with zookeeper only"), "{block}");

    // The process that was already running sees it once its check interval (one second) has passed.
    std::thread::sleep(Duration::from_millis(1_100));
    assert_eq!(
        recall_keys(&f.svc, &f.ctx, "zookeeper"),
        [("deploy".to_owned(), "deploy with zookeeper only".to_owned())]
    );
    // The pickup left the store in agreement with its files.
    assert!(f.svc.repair().expect("repair").is_clean());
}

#[test]
fn a_hand_added_file_is_indexed_and_a_removed_one_dropped() {
    if skip_on_postgres() {
        return;
    }
    let f = setup();
    let kept = store(&f.svc, &f.ctx, "global", "kept", "a note that stays");
    let gone = store(&f.svc, &f.ctx, "global", "gone", "a note removed by hand");
    // A topic file written by another program (the format of spec/reference-facts.md "Topic file").
    let added = kept.with_file_name("added-by-hand.md");
    std::fs::write(
        &added,
        "# added-by-hand\n<!-- id: 0f4c2a8e-1111-4222-8333-944455556666 | scope: global | type: user | tags: manual -->\n\n\
         ## 2026-02-03T04:05:06Z\nwritten by hand in an editor\n",
    )
    .expect("hand-written topic file");
    std::fs::remove_file(&gone).expect("remove by hand");

    let other = another_process(&f.home);
    let listed: Vec<String> = other
        .list(&f.ctx, ListRequest::default())
        .expect("list")
        .into_iter()
        .map(|m| m.key)
        .collect();
    assert!(listed.contains(&"added-by-hand".to_owned()), "{listed:?}");
    assert!(listed.contains(&"kept".to_owned()), "{listed:?}");
    assert!(!listed.contains(&"gone".to_owned()), "{listed:?}");
    assert_eq!(
        recall_keys(&other, &f.ctx, "editor"),
        [("added-by-hand".to_owned(), "written by hand in an editor".to_owned())]
    );
    let gone_key = Key::parse_strict("gone").expect("key");
    assert!(
        other
            .show(&f.ctx, cao_memory::ShowRequest::key(&gone_key, Some(Scope::Global)))
            .expect("show")
            .is_none()
    );
    assert!(
        other
            .storage()
            .read()
            .expect("read")
            .get(Scope::Global, None, &gone_key)
            .expect("get")
            .is_none(),
        "the removed file's row is gone"
    );
    assert!(other.repair().expect("repair").is_clean());
}

/// The pid of a process that has exited.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().expect("spawn true");
    let pid = child.id();
    child.wait().expect("wait");
    pid
}

/// A temp file named as `cao_core::fs` names them, last modified `age` ago.
fn temp_file(dir: &Path, target: &str, pid: u32, age: Duration) -> PathBuf {
    let path = dir.join(format!(".{target}.{pid}-7.tmp"));
    std::fs::write(&path, "half-written").expect("temp file");
    let file = std::fs::File::options()
        .write(true)
        .open(&path)
        .expect("open temp file");
    file.set_modified(SystemTime::now() - age).expect("backdate");
    path
}

#[test]
fn temp_files_of_dead_writers_are_removed_and_live_or_recent_ones_kept() {
    if skip_on_postgres() {
        return;
    }
    let f = setup();
    let topic = store(&f.svc, &f.ctx, "global", "note", "a note");
    let topic_dir = topic.parent().expect("topic dir").to_path_buf();
    let wiki_dir = topic_dir.parent().expect("wiki dir").to_path_buf();
    let old = Duration::from_secs(3600);
    let dead = dead_pid();
    let stale = [
        temp_file(&topic_dir, "note.md", dead, old),
        temp_file(&wiki_dir, "index.md", dead, old),
        temp_file(f.home.root(), "settings.json", dead, old),
    ];
    let keep = [
        // Our own process is alive: its temp files may still be renamed into place.
        temp_file(&topic_dir, "other.md", std::process::id(), old),
        // A dead writer's file written moments ago is left for a later sweep (a writer in another pid namespace
        // may share the home).
        temp_file(&topic_dir, "recent.md", dead, Duration::ZERO),
    ];
    let removed = cao_memory::sweep_temp_files(&f.home).expect("sweep");
    let mut want: Vec<PathBuf> = stale.to_vec();
    want.sort();
    let mut got = removed.clone();
    got.sort();
    assert_eq!(got, want);
    for p in &stale {
        assert!(!p.exists(), "{} was left", p.display());
    }
    for p in &keep {
        assert!(p.exists(), "{} was removed", p.display());
    }
    // Repair removes them too, and reports it.
    let again = temp_file(&topic_dir, "note.md", dead, old);
    let report = f.svc.repair().expect("repair");
    assert!(!again.exists());
    assert_eq!(report.removed_temp_files, [again.display().to_string()]);
    // A missing home is not an error and creates nothing.
    let missing = CaoHome::new(f.dir.path().join("no-such-home"));
    assert_eq!(
        cao_memory::sweep_temp_files(&missing).expect("sweep"),
        Vec::<PathBuf>::new()
    );
    assert!(!missing.root().exists());
}

#[test]
fn health_reports_a_replaced_database() {
    if skip_on_postgres() {
        return;
    }
    let f = setup();
    store(&f.svc, &f.ctx, "global", "note", "a note");
    let ok = f.svc.health();
    assert_eq!(
        serde_json::to_value(&ok).expect("json"),
        serde_json::json!({"status": "ok"})
    );
    std::fs::remove_file(f.home.db_path()).expect("remove the database");
    let degraded = serde_json::to_value(f.svc.health()).expect("json");
    assert_eq!(degraded["status"], "degraded", "{degraded}");
    assert!(
        degraded["reason"]
            .as_str()
            .is_some_and(|r| r.contains("cao memory repair")),
        "{degraded}"
    );
}

/// Rows without a recorded stamp (written by the reference, or before stamps existed) are read once, recorded in
/// batches, and not read again; another process's writes are recognised by their stamps, never read and never
/// reported as external changes.
#[test]
fn unstamped_rows_are_read_once_and_other_processes_writes_are_not_external_changes() {
    if skip_on_postgres() {
        return;
    }
    let f = setup();
    for i in 0..5 {
        store(
            &f.svc,
            &f.ctx,
            "global",
            &format!("note-{i}"),
            &format!("note number {i}"),
        );
    }
    for row in crate::all_rows(&f.svc).expect("rows") {
        let mut row = row;
        row.file_stamp = None;
        f.svc.raw_index().upsert(&row).expect("forget the stamp");
    }
    let other = another_process(&f.home);
    let first = other.pick_up_changes().expect("walk");
    assert_eq!(first.scanned, 5, "{first:?}");
    assert!(first.is_clean(), "every row agrees with its file: {first:?}");
    assert!(
        crate::all_rows(&f.svc)
            .expect("rows")
            .iter()
            .all(|r| r.file_stamp.is_some()),
        "the stamps are recorded"
    );
    assert_eq!(
        other.pick_up_changes().expect("walk").scanned,
        0,
        "nothing is read again"
    );
    assert_eq!(
        another_process(&f.home).pick_up_changes().expect("walk").scanned,
        0,
        "nor by a new process"
    );

    // A write by another process: its file and its row change together, with the same stamp, so the walk that
    // lists the changed directory finds each file's inode recorded in its row and reads neither.
    store(&f.svc, &f.ctx, "global", "note-1", "a second entry");
    store(&f.svc, &f.ctx, "global", "note-9", "a new note");
    let walk = other.pick_up_changes().expect("walk");
    assert_eq!(walk.scanned, 0, "{walk:?}");
    assert!(
        walk.is_clean(),
        "another process's writes are not external changes: {walk:?}"
    );
}

/// A memory another process created and whose file was then removed by hand, both between two walks of a running
/// process, is still dropped: the running process notices the index holds a row it never saw a file for.
#[test]
fn a_row_created_and_orphaned_between_two_walks_is_dropped() {
    if skip_on_postgres() {
        return;
    }
    let f = setup();
    store(&f.svc, &f.ctx, "global", "kept", "a note that stays");
    let running = another_process(&f.home);
    running.pick_up_changes().expect("first walk");
    let writer = another_process(&f.home);
    let path = store(
        &writer,
        &f.ctx,
        "global",
        "short-lived",
        "created, then its file removed by hand",
    );
    std::fs::remove_file(&path).expect("remove by hand");
    for _ in 0..2 {
        running.pick_up_changes().expect("walk");
    }
    let key = Key::parse_strict("short-lived").expect("key");
    assert!(
        f.svc
            .storage()
            .read()
            .expect("read")
            .get(Scope::Global, None, &key)
            .expect("get")
            .is_none(),
        "the orphaned row is gone"
    );
    assert!(f.svc.repair().expect("repair").is_clean());
}

/// How long a directory must have been unchanged before a walk records its stamp (the store's `DIR_SETTLE`, two
/// seconds), plus a margin.
const SETTLED: Duration = Duration::from_millis(2_200);

/// The scope directories the index records as agreeing with their rows, as `scope[/scope id]`.
fn recorded_dirs(svc: &MemoryService) -> Vec<String> {
    let mut dirs: Vec<String> = svc
        .raw_index()
        .wiki_dir_stamps()
        .expect("dir stamps")
        .into_iter()
        .map(|d| match d.scope_id {
            Some(id) => format!("{}/{id}", d.scope),
            None => d.scope.to_string(),
        })
        .collect();
    dirs.sort();
    dirs
}

/// A directory's stamp is recorded only once it has been unchanged for a while (a change in the same tick of the
/// file system's clock could leave the stamp as it was), and only while every file in it agrees with its row.
#[test]
fn a_directory_is_recorded_once_settled_and_forgotten_when_it_changes() {
    if skip_on_postgres() {
        return;
    }
    let f = setup();
    store(&f.svc, &f.ctx, "global", "kept", "a note that stays");
    store(&f.svc, &f.ctx, "project", "proj-note", "a project note");
    let walker = another_process(&f.home);
    walker.pick_up_changes().expect("walk");
    assert!(
        recorded_dirs(&walker).is_empty(),
        "just written: {:?}",
        recorded_dirs(&walker)
    );
    std::thread::sleep(SETTLED);
    assert!(walker.pick_up_changes().expect("walk").is_clean());
    assert_eq!(recorded_dirs(&walker), ["global", "project/proj-a"]);

    // A store changes the directory: the next walk lists it again and does not record it until it settles.
    store(&f.svc, &f.ctx, "global", "later", "written after the record");
    assert!(walker.pick_up_changes().expect("walk").is_clean());
    assert!(!recorded_dirs(&walker).contains(&"global".to_owned()));
    std::thread::sleep(SETTLED);
    walker.pick_up_changes().expect("walk");
    assert!(recorded_dirs(&walker).contains(&"global".to_owned()));
}

/// A recorded directory whose stamp is unchanged is not listed: a walk finds no file added to it. (The record is
/// forged here to show it; the store records a stamp only when every file agreed.) Any change to the directory
/// gives it another stamp, and then every file added is found.
#[test]
fn a_directory_with_its_recorded_stamp_is_not_listed() {
    if skip_on_postgres() {
        return;
    }
    let f = setup();
    let kept = store(&f.svc, &f.ctx, "global", "kept", "a note that stays");
    let dir = kept.parent().expect("dir").to_path_buf();
    let hand = |key: &str| {
        std::fs::write(
            dir.join(format!("{key}.md")),
            format!(
                "# {key}\n<!-- id: 0f4c2a8e-1111-4222-8333-9444555566{} | scope: global | type: user | tags: manual -->\n\n\
                 ## 2026-02-03T04:05:06Z\nwritten by hand\n",
                key.len() + 10
            ),
        )
        .expect("hand-written topic file");
    };
    hand("by-hand");
    let stamp = cao_core::fs::FileStamp::read(&dir).expect("dir stamp");
    f.svc
        .raw_index()
        .set_wiki_dir_stamp(Scope::Global, None, Some(stamp))
        .expect("forge the record");
    let walk = another_process(&f.home).pick_up_changes().expect("walk");
    assert!(walk.added.is_empty(), "the directory was listed: {walk:?}");

    hand("by-hand-2");
    let walk = another_process(&f.home).pick_up_changes().expect("walk");
    let mut added = walk.added.clone();
    added.sort();
    assert_eq!(added, ["global/by-hand", "global/by-hand-2"], "{walk:?}");
}

/// An edit made in place changes no directory: the rotation over the rows finds it, in a directory whose stamp is
/// recorded (not listed) as in one that changed.
#[test]
fn an_in_place_edit_in_a_recorded_directory_is_found_by_the_rotation() {
    if skip_on_postgres() {
        return;
    }
    let f = setup();
    let path = store(&f.svc, &f.ctx, "project", "deploy", "deploy with kafka streams");
    store(&f.svc, &f.ctx, "project", "other", "another project note");
    std::thread::sleep(SETTLED);
    let running = another_process(&f.home);
    running.pick_up_changes().expect("walk");
    assert!(recorded_dirs(&running).contains(&"project/proj-a".to_owned()));

    edit_in_place(&path, "deploy with kafka streams", "deploy with zookeeper only");
    assert!(
        recorded_dirs(&running).contains(&"project/proj-a".to_owned()),
        "an in-place edit changes no directory"
    );
    let walk = running.pick_up_changes().expect("walk");
    assert_eq!(walk.updated, ["project/proj-a/deploy"], "{walk:?}");
    assert_eq!(walk.scanned, 1, "only the edited file was read: {walk:?}");
    assert_eq!(
        recall_keys(&running, &f.ctx, "zookeeper"),
        [("deploy".to_owned(), "deploy with zookeeper only".to_owned())]
    );
    // A file removed leaves a changed directory: listed again, its row dropped.
    std::fs::remove_file(&path).expect("remove by hand");
    let walk = running.pick_up_changes().expect("walk");
    assert_eq!(walk.removed, ["project/proj-a/deploy"], "{walk:?}");
}

/// A scope directory removed by hand with everything in it (a session's notes) takes its rows with it.
#[test]
fn a_removed_scope_directory_drops_its_rows() {
    if skip_on_postgres() {
        return;
    }
    let f = ServiceFixture::builder().project("proj-a").session("sess-gone").open();
    let note = store(&f.svc, &f.ctx, "session", "sess-note", "a session note");
    store(&f.svc, &f.ctx, "global", "kept", "a note that stays");
    std::thread::sleep(SETTLED);
    let running = another_process(&f.home);
    running.pick_up_changes().expect("walk");
    assert!(recorded_dirs(&running).contains(&"session/sess-gone".to_owned()));
    std::fs::remove_dir_all(note.parent().expect("session dir")).expect("rm -r");
    let walk = running.pick_up_changes().expect("walk");
    assert_eq!(walk.removed, ["session/sess-gone/sess-note"], "{walk:?}");
    assert!(!recorded_dirs(&running).iter().any(|d| d.starts_with("session/")));
    assert!(running.repair().expect("repair").is_clean());
}

/// An unparsable file is reported once per process, keeps its directory from being recorded (so a fix made in
/// place is still seen), and is indexed once it parses.
#[test]
fn an_unparsable_file_is_reported_once_and_picked_up_when_fixed() {
    if skip_on_postgres() {
        return;
    }
    let f = setup();
    let kept = store(&f.svc, &f.ctx, "global", "kept", "a note that stays");
    let broken = kept.with_file_name("broken.md");
    std::fs::write(&broken, "not a topic file\n").expect("write");
    std::thread::sleep(SETTLED);
    let running = another_process(&f.home);
    let first = running.pick_up_changes().expect("walk");
    assert_eq!(first.unparsable.len(), 1, "{first:?}");
    let second = running.pick_up_changes().expect("walk");
    assert!(second.unparsable.is_empty(), "reported again: {second:?}");
    assert!(!recorded_dirs(&running).contains(&"global".to_owned()));

    let mut file = std::fs::File::options()
        .write(true)
        .truncate(true)
        .open(&broken)
        .expect("open");
    std::io::Write::write_all(
        &mut file,
        b"# broken\n<!-- id: 0f4c2a8e-2222-4222-8333-944455556666 | scope: global | type: user | tags: fixed -->\n\n\
          ## 2026-02-03T04:05:06Z\nfixed in place\n",
    )
    .expect("fix in place");
    drop(file);
    let walk = running.pick_up_changes().expect("walk");
    assert_eq!(walk.added, ["global/broken"], "{walk:?}");
}

/// A home whose rows point elsewhere and record no stamps (a home written by the reference implementation and
/// copied, or moved): every file disagrees with its row, and the first walk of a new process rebuilds the rows in
/// a few transactions (one per batch of 256 files), not one per file, with every memory listed as its file says.
#[test]
fn a_home_of_foreign_unstamped_rows_is_adopted_in_batched_transactions() {
    if skip_on_postgres() {
        return;
    }
    let f = setup();
    let n = 600;
    for i in 0..n {
        store(
            &f.svc,
            &f.ctx,
            "global",
            &format!("note-{i}"),
            &format!("note number {i}"),
        );
    }
    let moved: Vec<_> = f
        .svc
        .raw_index()
        .all_rows()
        .expect("rows")
        .into_iter()
        .map(|mut row| {
            row.file_stamp = None;
            row.file_path = format!("/tmp/cao-reference-home/memory/global/wiki/global/{}.md", row.key);
            row
        })
        .collect();
    f.svc
        .raw_index()
        .upsert_many(&moved)
        .expect("rows as another machine wrote them");

    let other = another_process(&f.home);
    let before = other.storage().write_transactions();
    let walk = other.pick_up_changes().expect("walk");
    let transactions = other.storage().write_transactions() - before;
    assert_eq!(walk.updated.len(), n, "every row is rebuilt from its file: {walk:?}");
    assert!(
        transactions <= 8,
        "{n} rebuilt rows took {transactions} write transactions (one per batch expected)"
    );
    let rows = f.svc.raw_index().all_rows().expect("rows");
    assert_eq!(rows.len(), n);
    for row in &rows {
        let path = f
            .svc
            .wiki_layout()
            .topic_path(row.scope, None, &row.key)
            .expect("topic path");
        assert_eq!(Path::new(&row.file_path), path, "{}", row.key);
        assert!(row.file_stamp.is_some(), "{} has its stamp", row.key);
        assert_eq!(row.content, format!("note number {}", &row.key.as_str()[5..]));
    }
    assert!(
        another_process(&f.home).pick_up_changes().expect("walk").is_clean(),
        "a second process finds nothing to do"
    );
}

/// What file systems guarantee about an edit made in place (same inode; `open(O_TRUNC)` + `write`, as `cp` or an
/// editor writing in place does): the directory's modification time does not change, and neither may the file's
/// size nor its modification time, which the editing program may set back (`touch -r`, `utimensat`). Its change
/// time (ctime) always changes: the kernel sets it on every write and every metadata change, and no system call
/// sets it to a chosen value. The stamp a row records includes the ctime, so such an edit is still found by the
/// rotation over the rows.
#[test]
fn an_in_place_edit_of_the_same_size_with_its_mtime_restored_is_found() {
    if skip_on_postgres() {
        return;
    }
    let f = setup();
    let path = store(&f.svc, &f.ctx, "project", "deploy", "deploy with kafka streams");
    std::thread::sleep(SETTLED);
    let running = another_process(&f.home);
    running.pick_up_changes().expect("walk");
    assert!(recorded_dirs(&running).contains(&"project/proj-a".to_owned()));
    let before = std::fs::metadata(&path).expect("stat");
    let dir_before = std::fs::metadata(path.parent().expect("dir")).expect("stat dir");

    edit_in_place(&path, "deploy with kafka streams", "deploy with kafka pigeons");
    std::fs::File::options()
        .write(true)
        .open(&path)
        .and_then(|f| f.set_modified(before.modified().expect("mtime")))
        .expect("restore the mtime");
    let after = std::fs::metadata(&path).expect("stat");
    assert_eq!(after.len(), before.len(), "same size");
    assert_eq!(after.modified().ok(), before.modified().ok(), "same mtime");
    assert_eq!(
        std::fs::metadata(path.parent().expect("dir"))
            .expect("stat dir")
            .modified()
            .ok(),
        dir_before.modified().ok(),
        "the directory did not change"
    );

    let walk = running.pick_up_changes().expect("walk");
    assert_eq!(walk.updated, ["project/proj-a/deploy"], "{walk:?}");
    assert_eq!(
        recall_keys(&running, &f.ctx, "pigeons"),
        [("deploy".to_owned(), "deploy with kafka pigeons".to_owned())]
    );
}
