//! Purge through the store (spec 001 "Forget"): the memory's file and row go, the text of every version is blanked
//! in the journal, every summary line that may hold it is dropped and written again without it, stored session
//! views are withdrawn, and afterwards no byte of the raw database, its WAL and shm files, or the wiki files holds
//! the text, whatever the database did with it before (old versions replaced without `secure_delete`, full-text
//! segments, summary lines, snapshots).

use cao_core::{Key, Scope};
use cao_memory::{JournalTarget, SummarizeWorker, ZoomRequest};
use cao_model::NoModel;
use cao_testkit::service::RawStorage;
use cao_testkit::service::{ServiceFixture, utc};
use std::path::Path;
use std::time::Duration;

const PROJECT: &str = "proj-purge";
const SECRET: &str = "zqxsecrettoken8812";

/// Every file under `dir` whose bytes hold `needle`, with the database's own files named as such.
fn files_holding(dir: &Path, needle: &[u8]) -> Vec<String> {
    let mut hits = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir").flatten() {
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).expect("metadata");
            if meta.is_dir() {
                stack.push(p);
            } else if meta.is_file()
                && std::fs::read(&p)
                    .expect("read")
                    .windows(needle.len())
                    .any(|w| w == needle)
            {
                hits.push(p.display().to_string());
            }
        }
    }
    hits.sort();
    hits
}

fn summarize_everything(f: &ServiceFixture) {
    let worker = SummarizeWorker::new(Duration::from_secs(5));
    for _ in 0..200 {
        if f.svc
            .summarize_pass(&NoModel::new(), &worker)
            .expect("summarize")
            .idle()
        {
            return;
        }
    }
    panic!("summarizing did not settle");
}

#[test]
fn after_a_purge_the_text_is_in_no_byte_of_the_database_wal_or_wiki() {
    let f = ServiceFixture::builder()
        .at(utc(2026, 5, 1, 8, 0, 0))
        .project(PROJECT)
        .open();
    // Enough other memories that the tables span many pages, some written before and some after the secret.
    for i in 0..150 {
        f.store(
            "project",
            &format!("before-{i:03}"),
            &format!("note {i} about deploys and caches"),
        );
    }
    f.store(
        "project",
        "leaked",
        &format!("the api token is {SECRET} (first version)"),
    );
    f.store("project", "leaked", &format!("second version still has {SECRET}"));
    f.store("global", "elsewhere", "a global memory");
    for i in 0..150 {
        f.store("project", &format!("after-{i:03}"), &format!("later note {i}"));
    }
    f.store("project", "leaked", "third version, clean");
    // Summary lines (word for word: they fit) and a session snapshot now hold the text too.
    summarize_everything(&f);
    let snap = f
        .svc
        .session(&f.ctx, &JournalTarget::default(), "session-a")
        .take_snapshot()
        .expect("snapshot");
    let db_dir = f.home.root().join("db");
    assert!(
        !files_holding(&db_dir, SECRET.as_bytes()).is_empty(),
        "the database holds the text before the purge"
    );
    assert!(
        snap.view.contains("leaked") || snap.view.contains("150+"),
        "{}",
        snap.view
    );

    let key = Key::parse_strict("leaked").expect("key");
    let r = f
        .svc
        .purge(&f.ctx, cao_memory::MemoryTarget::key(&key, Some(Scope::Project)))
        .expect("purge");
    assert_eq!(
        (r.file_deleted, r.row_deleted, r.versions_purged, r.first_entry),
        (true, true, 3, Some(150))
    );
    assert!(r.lines_dropped > 0, "{r:?}");
    assert!(!r.wal_busy, "no other connection held the WAL");
    assert_eq!(
        files_holding(f.home.root(), SECRET.as_bytes()),
        Vec::<String>::new(),
        "no file of the home (database, WAL, shm, wiki, index.md, audit log) holds the text"
    );
    let stored = f
        .svc
        .raw_index()
        .journal_read(|j| j.snapshot_get(PROJECT, "session-a"))
        .expect("read")
        .expect("snapshot row");
    assert_eq!(
        stored.view, "",
        "the stored view taken after the first version is withdrawn"
    );

    // The journal keeps the entries, blanked; the summarizer writes the dropped lines again without the text.
    let zoom = |id| {
        f.svc
            .zoom(
                &f.ctx,
                &ZoomRequest {
                    id,
                    n: 1,
                    target: JournalTarget::default(),
                },
            )
            .expect("zoom")
            .entry
            .expect("entry")
    };
    let first = zoom(150);
    assert_eq!((first.status, first.text.as_str()), ("purged", ""));
    summarize_everything(&f);
    let view = f.svc.view(&f.ctx, &JournalTarget::default()).expect("view");
    assert!(!view.view.contains(SECRET));
    assert!(view.view.contains("note leaked: (purged)"), "{}", view.view);
    assert!(
        view.view.contains("after-149"),
        "later memories are still in the view: {}",
        view.view
    );
    assert_eq!(files_holding(f.home.root(), SECRET.as_bytes()), Vec::<String>::new());
    // Everything else is intact.
    assert_eq!(f.svc.raw_index().count().expect("count"), 301);
    let repair = f.svc.repair().expect("repair");
    assert!(repair.is_clean(), "{repair:?}");
}
