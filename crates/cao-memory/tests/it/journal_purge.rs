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
    if cao_testkit::service::skip_on_postgres(
        "scans every byte of the home's files (SQLite database, WAL, wiki); the PostgreSQL counterpart is postgres_purge",
    ) {
        return;
    }
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
        .storage()
        .read()
        .expect("read")
        .journal(|j| j.snapshot_get(PROJECT, "session-a"))
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

/// The memory's embedding (written with every store while a model is configured) goes with the purge too: no
/// file of the home holds its bytes afterwards, nor the text of the relationship attributes written after it.
#[test]
fn a_purge_leaves_neither_the_vector_nor_the_edge_attributes_on_disk() {
    if cao_testkit::service::skip_on_postgres(
        "reads the SQLite database file's rows and bytes; the PostgreSQL counterpart is postgres_purge",
    ) {
        return;
    }
    let model = tempfile::tempdir().expect("tempdir");
    cao_embed::testing::write_tiny_model(model.path()).expect("tiny model");
    let settings = cao_core::Settings::from_value(
        serde_json::json!({"memory": {"embeddings": {"model_dir": model.path().to_str().expect("utf-8")}}}),
    );
    let f = ServiceFixture::builder()
        .at(utc(2026, 5, 1, 8, 0, 0))
        .project(PROJECT)
        .settings(settings)
        .open();
    for i in 0..40 {
        f.store(
            "project",
            &format!("note-{i:02}"),
            &format!("note {i} about deploy caches"),
        );
    }
    f.store("project", "leaked", &format!("the api token is {SECRET}"));
    f.store("project", "other", "the deploy cache is warmed at midnight");
    let key = Key::parse_strict("leaked").expect("key");
    let row = f
        .svc
        .storage()
        .read()
        .expect("read")
        .get(Scope::Project, Some(PROJECT), &key)
        .expect("read")
        .expect("row");
    let blob: Vec<u8> = rusqlite::Connection::open(f.home.db_path())
        .expect("open db")
        .query_row(
            "SELECT vector FROM cao_memory_vectors WHERE memory_id = ?1",
            [&row.id],
            |r| r.get(0),
        )
        .expect("the memory has a vector");
    assert!(blob.len() >= 16, "{} bytes", blob.len());
    // Any 16 bytes of the vector are as unlikely to appear by chance as the text.
    let vector_probe = &blob[..16];
    let rel = f.svc.relationships("test");
    for (source, target, why) in [
        ("other", "leaked", "names zqxattributesin"),
        ("leaked", "other", "names zqxattributesout"),
    ] {
        rel.create(cao_lifecycle::NewRelationship {
            scope: Scope::Project,
            scope_id: Some(PROJECT.to_owned()),
            source_key: source.to_owned(),
            target_key: target.to_owned(),
            rel_type: "relates_to".to_owned(),
            origin: None,
            status: None,
            confidence: None,
            rank: None,
            attributes: Some(serde_json::json!({"why": why})),
        })
        .expect("edge");
    }
    for needle in [SECRET.as_bytes(), vector_probe, b"zqxattributesin", b"zqxattributesout"] {
        assert!(
            !files_holding(f.home.root(), needle).is_empty(),
            "on disk before the purge"
        );
    }
    let r = f
        .svc
        .purge(&f.ctx, cao_memory::MemoryTarget::key(&key, Some(Scope::Project)))
        .expect("purge");
    assert!(r.row_deleted && !r.wal_busy, "{r:?}");
    for needle in [SECRET.as_bytes(), vector_probe, b"zqxattributesin", b"zqxattributesout"] {
        assert_eq!(
            files_holding(f.home.root(), needle),
            Vec::<String>::new(),
            "no file of the home holds {:?}",
            String::from_utf8_lossy(needle)
        );
    }
}
