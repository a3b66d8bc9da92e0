//! File-system behaviour: upsert through the layout, scan, permissions, symlink safety.

use cao_core::time::parse_ts;
use cao_core::{Key, MemoryType, Scope};
use cao_wiki::{WikiError, WikiLayout};
use chrono::{DateTime, Utc};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn key(s: &str) -> Key {
    Key::parse_strict(s).expect("valid test key")
}

fn ts(s: &str) -> DateTime<Utc> {
    parse_ts(s).expect("valid test timestamp")
}

fn mode(p: &Path) -> u32 {
    fs::metadata(p).expect("stat").permissions().mode() & 0o777
}

#[test]
fn upsert_creates_then_appends_with_private_permissions() {
    let home = tempfile::tempdir().expect("tempdir");
    let layout = WikiLayout::new(home.path().join("memory"));
    let k = key("notes");
    let w1 = layout
        .upsert_topic(
            Scope::Session,
            Some("sess-1"),
            &k,
            MemoryType::Project,
            "a",
            ts("2026-01-01T00:00:00Z"),
            "one",
        )
        .expect("create");
    assert!(w1.created);
    assert_eq!(w1.rel_path, "session/sess-1/notes.md");
    assert_eq!(w1.container, "global");
    assert_eq!(w1.path, home.path().join("memory/global/wiki/session/sess-1/notes.md"));
    let w2 = layout
        .upsert_topic(
            Scope::Session,
            Some("sess-1"),
            &k,
            MemoryType::User,
            "b",
            ts("2026-01-02T00:00:00Z"),
            "two",
        )
        .expect("append");
    assert!(!w2.created);
    assert_eq!(w2.topic.header().id, w1.topic.header().id);
    assert_eq!(w2.topic.entry_count(), 2);
    assert_eq!(fs::read_to_string(&w2.path).expect("read"), w2.text);
    let read = layout
        .read_topic(Scope::Session, Some("sess-1"), &k)
        .expect("read")
        .expect("exists");
    assert_eq!(read.topic.current_content(), "two");
    assert_eq!(read.topic.header().memory_type, MemoryType::User);

    assert_eq!(mode(&w2.path), 0o600);
    assert_eq!(mode(w2.path.parent().expect("dir")), 0o700);
    assert_eq!(mode(&home.path().join("memory")), 0o700);
    assert_eq!(mode(&home.path().join("memory/global/wiki")), 0o700);
    // Only the topic file and its lock file remain: no temp files.
    let mut names: Vec<_> = fs::read_dir(w2.path.parent().expect("dir"))
        .expect("list")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
        .collect();
    names.sort();
    assert_eq!(names, [".notes.lock", "notes.md"]);
}

#[test]
fn refuses_to_append_to_corrupt_or_non_utf8_files() {
    let home = tempfile::tempdir().expect("tempdir");
    let layout = WikiLayout::new(home.path().join("memory"));
    let k = key("broken");
    let p = layout.topic_path(Scope::Global, None, &k).expect("path");
    fs::create_dir_all(p.parent().expect("dir")).expect("mkdir");
    for bad in [&b"# broken\n<!-- id: x | scope: glo"[..], b"# broken\n\xff\xfe"] {
        fs::write(&p, bad).expect("write");
        let r = layout.upsert_topic(
            Scope::Global,
            None,
            &k,
            MemoryType::Project,
            "",
            ts("2026-01-01T00:00:00Z"),
            "x",
        );
        assert!(matches!(r, Err(WikiError::Corrupt { .. })), "{r:?}");
        assert_eq!(fs::read(&p).expect("read"), bad, "the corrupt file is left untouched");
    }
}

#[test]
fn remove_deletes_file_and_reports_absence() {
    let home = tempfile::tempdir().expect("tempdir");
    let layout = WikiLayout::new(home.path().join("memory"));
    let k = key("gone");
    layout
        .upsert_topic(
            Scope::Project,
            Some("p1"),
            &k,
            MemoryType::Project,
            "",
            ts("2026-01-01T00:00:00Z"),
            "x",
        )
        .expect("create");
    let locked = layout.lock_topic(Scope::Project, Some("p1"), &k).expect("lock");
    assert!(locked.remove().expect("remove"));
    assert!(!locked.remove().expect("second remove"));
    assert!(locked.read().expect("read").is_none());
}

/// A wiki with one topic in every scope and the oddities a scan reports (bad names, symlinks, misplaced files, a
/// temp file of a dead writer). Returns the layout and the directory outside the memory dir the symlinks point to.
fn odd_wiki(mem: &std::path::Path) -> (WikiLayout, tempfile::TempDir) {
    let layout = WikiLayout::new(mem.to_owned());
    let t = ts("2026-01-01T00:00:00Z");
    let stores = [
        (Scope::Global, None, "g"),
        (Scope::Project, Some("proj.x"), "p"),
        (Scope::Session, Some("sess-1"), "s"),
        (Scope::Agent, Some("reviewer"), "a"),
        (Scope::Federated, None, "f"),
    ];
    for (scope, id, k) in stores {
        layout
            .upsert_topic(scope, id, &key(k), MemoryType::Project, "", t, "c")
            .expect("store");
    }
    layout.write_index("global", &[], t).expect("index");
    // Oddities.
    fs::write(mem.join("global/wiki/global/Bad_Name.md"), "x").expect("write");
    fs::write(mem.join("global/wiki/global/notes.txt"), "x").expect("write");
    fs::write(mem.join("global/wiki/global/.stale.md.1-2.tmp"), "x").expect("write");
    fs::create_dir_all(mem.join("global/wiki/global/sub")).expect("mkdir");
    fs::create_dir_all(mem.join("proj.x/wiki/global")).expect("mkdir");
    fs::write(mem.join("proj.x/wiki/global/k.md"), "x").expect("write");
    fs::create_dir_all(mem.join("global/wiki/weird")).expect("mkdir");
    fs::create_dir_all(mem.join("logs/memory")).expect("mkdir"); // not a container: silent
    let outside = tempfile::tempdir().expect("outside");
    fs::write(outside.path().join("evil.md"), "x").expect("write");
    std::os::unix::fs::symlink(outside.path().join("evil.md"), mem.join("global/wiki/global/evil.md")).expect("ln");
    std::os::unix::fs::symlink(outside.path(), mem.join("global/wiki/agent/linked")).expect("ln");
    std::os::unix::fs::symlink(outside.path(), mem.join("linked-container")).expect("ln");
    (layout, outside)
}

#[test]
fn scan_finds_upserted_files_and_reports_oddities() {
    let home = tempfile::tempdir().expect("tempdir");
    let mem = home.path().join("memory");
    let (layout, _outside) = odd_wiki(&mem);

    let report = layout.scan().expect("scan");
    let found: Vec<_> = report
        .topics
        .iter()
        .map(|t| (t.scope, t.scope_id.as_deref(), t.key.as_str(), t.container.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (Scope::Federated, None, "f", "federated"),
            (Scope::Agent, Some("reviewer"), "a", "global"),
            (Scope::Global, None, "g", "global"),
            (Scope::Session, Some("sess-1"), "s", "global"),
            (Scope::Project, Some("proj.x"), "p", "proj.x"),
        ]
    );
    for t in &report.topics {
        assert_eq!(
            t.path,
            layout.topic_path(t.scope, t.scope_id.as_deref(), &t.key).expect("path")
        );
    }
    let skipped: Vec<_> = report
        .skipped
        .iter()
        .map(|s| s.path.strip_prefix(&mem).expect("inside").to_path_buf())
        .collect();
    let expect = [
        "global/wiki/agent/linked",
        "global/wiki/global/Bad_Name.md",
        "global/wiki/global/evil.md",
        "global/wiki/global/notes.txt",
        "global/wiki/global/sub",
        "global/wiki/weird",
        "linked-container",
        "proj.x/wiki/global",
    ];
    assert_eq!(skipped, expect.map(std::path::PathBuf::from), "{:#?}", report.skipped);
    assert!(report.skipped.iter().all(|s| !s.reason.is_empty()));
}

/// The cheap walk (scope directories, then each listed without a `stat` per file) finds exactly the topic files a
/// scan finds, with the inode numbers a `stat` gives, and the same temp files.
#[test]
fn scope_dir_listings_find_what_a_scan_finds() {
    let home = tempfile::tempdir().expect("tempdir");
    let mem = home.path().join("memory");
    let (layout, _outside) = odd_wiki(&mem);
    fs::write(mem.join("global/wiki/.index.md.1-3.tmp"), "x").expect("write");

    let scan = layout.scan().expect("scan");
    let dirs = layout.scope_dirs().expect("scope dirs");
    let mut found = Vec::new();
    let mut temp_files = dirs.temp_files.clone();
    for dir in &dirs.dirs {
        let listing = dir.list().expect("list");
        temp_files.extend(listing.temp_files);
        for t in listing.topics {
            let path = t.path();
            assert_eq!(
                path,
                layout
                    .topic_path(dir.scope, dir.scope_id.as_deref(), &t.key)
                    .expect("path")
            );
            let stat = fs::symlink_metadata(&path).expect("stat");
            assert_eq!(
                t.inode,
                std::os::unix::fs::MetadataExt::ino(&stat),
                "{}",
                path.display()
            );
            assert_eq!(t.stamp(), Some(cao_core::fs::FileStamp::of(&stat)));
            found.push((dir.container.clone(), dir.scope, dir.scope_id.clone(), t.key, path));
        }
    }
    found.sort_by(|a, b| a.4.cmp(&b.4));
    let scanned: Vec<_> = scan
        .topics
        .iter()
        .map(|t| {
            (
                t.container.clone(),
                t.scope,
                t.scope_id.clone(),
                t.key.clone(),
                t.path.clone(),
            )
        })
        .collect();
    assert_eq!(found, scanned);
    temp_files.sort();
    assert_eq!(temp_files, scan.temp_files);
    assert_eq!(
        temp_files,
        [
            mem.join("global/wiki/.index.md.1-3.tmp"),
            mem.join("global/wiki/global/.stale.md.1-2.tmp")
        ]
    );
    assert!(
        WikiLayout::new(home.path().join("missing"))
            .scope_dirs()
            .expect("missing dir")
            .dirs
            .is_empty()
    );
}

#[test]
fn scan_of_missing_memory_dir_is_empty() {
    let home = tempfile::tempdir().expect("tempdir");
    let report = WikiLayout::new(home.path().join("memory")).scan().expect("scan");
    assert!(report.topics.is_empty() && report.skipped.is_empty());
}

#[test]
fn writes_through_a_symlinked_directory_escaping_the_memory_dir_are_refused() {
    let home = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("outside");
    let mem = home.path().join("memory");
    fs::create_dir_all(mem.join("global/wiki")).expect("mkdir");
    std::os::unix::fs::symlink(outside.path(), mem.join("global/wiki/global")).expect("ln");
    let layout = WikiLayout::new(mem);
    let r = layout.upsert_topic(
        Scope::Global,
        None,
        &key("k"),
        MemoryType::Project,
        "",
        ts("2026-01-01T00:00:00Z"),
        "x",
    );
    assert!(matches!(r, Err(WikiError::PathEscape { .. })), "{r:?}");
    assert_eq!(
        fs::read_dir(outside.path()).expect("list").count(),
        0,
        "nothing written outside"
    );
}

#[test]
fn a_symlinked_topic_file_is_not_read() {
    let home = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("outside");
    let layout = WikiLayout::new(home.path().join("memory"));
    let k = key("k");
    let p = layout.topic_path(Scope::Global, None, &k).expect("path");
    fs::create_dir_all(p.parent().expect("dir")).expect("mkdir");
    let secret = outside.path().join("secret.md");
    fs::write(
        &secret,
        "# k\n<!-- id: x | scope: global | type: user | tags:  -->\n\n## 2026-01-01T00:00:00Z\nsecret\n",
    )
    .expect("write");
    std::os::unix::fs::symlink(&secret, &p).expect("ln");
    assert!(matches!(
        layout.read_topic(Scope::Global, None, &k),
        Err(WikiError::NotARegularFile { .. })
    ));
    let r = layout.upsert_topic(
        Scope::Global,
        None,
        &k,
        MemoryType::Project,
        "",
        ts("2026-01-02T00:00:00Z"),
        "x",
    );
    assert!(matches!(r, Err(WikiError::NotARegularFile { .. })), "{r:?}");
}

#[test]
fn concurrent_upserts_lose_nothing() {
    let home = tempfile::tempdir().expect("tempdir");
    let layout = WikiLayout::new(home.path().join("memory"));
    let k = key("busy");
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (layout, k) = (layout.clone(), k.clone());
            std::thread::spawn(move || {
                for i in 0..10 {
                    layout
                        .upsert_topic(
                            Scope::Project,
                            Some("p"),
                            &k,
                            MemoryType::Project,
                            "",
                            ts("2026-01-01T00:00:00Z"),
                            &format!("{t}-{i}"),
                        )
                        .expect("store");
                }
            })
        })
        .collect();
    for th in threads {
        th.join().expect("thread");
    }
    let read = layout
        .read_topic(Scope::Project, Some("p"), &k)
        .expect("read")
        .expect("exists");
    assert_eq!(read.topic.entry_count(), 40);
    let mut all: Vec<_> = read.topic.entries().iter().map(|e| e.content.clone()).collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 40);
}

#[test]
fn prepared_upserts_write_nothing_until_written_as_a_batch() {
    let home = tempfile::tempdir().expect("tempdir");
    let layout = WikiLayout::new(home.path().join("memory"));
    let (a, b) = (key("alpha"), key("beta"));
    layout
        .upsert_topic(
            Scope::Global,
            None,
            &a,
            MemoryType::Project,
            "",
            ts("2026-01-01T00:00:00Z"),
            "one",
        )
        .expect("create alpha");
    let before = fs::read_to_string(layout.topic_path(Scope::Global, None, &a).expect("path")).expect("read");
    let la = layout.lock_topic(Scope::Global, None, &a).expect("lock alpha");
    let lb = layout.lock_topic(Scope::Project, Some("proj"), &b).expect("lock beta");
    let wa = la
        .prepare_upsert(MemoryType::User, "t", ts("2026-01-02T00:00:00Z"), "two")
        .expect("prepare alpha");
    let wb = lb
        .prepare_upsert(MemoryType::Project, "", ts("2026-01-03T00:00:00Z"), "new")
        .expect("prepare beta");
    assert!(!wa.created && wb.created);
    assert_eq!(
        fs::read_to_string(la.path()).expect("read"),
        before,
        "prepare writes nothing"
    );
    assert!(!lb.path().exists(), "prepare creates no file");
    cao_wiki::write_prepared(&[(&la, &wa), (&lb, &wb)]).expect("batch");
    assert_eq!(fs::read_to_string(la.path()).expect("read"), wa.text);
    assert_eq!(fs::read_to_string(lb.path()).expect("read"), wb.text);
    assert_eq!(mode(lb.path()), 0o600);
    let read = layout
        .read_topic(Scope::Global, None, &a)
        .expect("read")
        .expect("exists");
    assert_eq!(read.topic.entry_count(), 2);
    assert_eq!(read.topic.current_content(), "two");
}
