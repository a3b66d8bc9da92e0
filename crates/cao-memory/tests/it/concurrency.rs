//! Many processes writing one home lose nothing.
//!
//! The parent test re-runs this test binary as 8 child processes (libtest `--exact concurrency::child_writer`), each storing
//! 200 memories into the same home; every 10th store goes to one of 5 keys shared by all processes. Afterwards
//! every entry must be in its file and in the index, no call may have failed, and `repair` must find nothing to
//! change. Meanwhile the parent walks the home for changes made outside the tool, again and again: the writers'
//! files and rows change together, so no walk may report one of their writes as an external change.

use cao_core::{CaoHome, Key, Scope, TerminalContext};
use cao_memory::{MemoryService, StoreArgs};
use cao_testkit::service::RawStorage;
use std::process::Command;

const PROCS: usize = 8;
const PER_PROC: usize = 200;
const SHARED_KEYS: usize = 5;

fn ctx(root: &std::path::Path) -> TerminalContext {
    TerminalContext {
        project_id: Some("race".into()),
        cwd: Some(root.to_path_buf()),
        ..Default::default()
    }
}

fn key_for(proc_id: usize, j: usize) -> String {
    if j.is_multiple_of(10) {
        format!("shared-{}", (j / 10) % SHARED_KEYS)
    } else {
        format!("p{proc_id}-m{j}")
    }
}

/// Child body: only does work when started by the parent (env `CAO_CHILD_HOME`).
#[test]
fn child_writer() {
    let (Ok(home), Ok(id)) = (std::env::var("CAO_CHILD_HOME"), std::env::var("CAO_CHILD_ID")) else {
        return;
    };
    let id: usize = id.parse().expect("numeric child id");
    let svc = MemoryService::open(CaoHome::new(&home)).expect("open service");
    let ctx = ctx(std::path::Path::new(&home));
    for j in 0..PER_PROC {
        let req = StoreArgs {
            content: format!("process {id} entry {j}: the quick brown fox {id}x{j}"),
            key: Some(key_for(id, j)),
            scope: Some(
                if j.is_multiple_of(2) { "project" } else { "global" }
                    .parse()
                    .expect("a valid scope"),
            ),
            ..Default::default()
        };
        // Shared keys always go to project scope so that all processes hit the same file.
        let req = if j.is_multiple_of(10) {
            StoreArgs {
                scope: Some(cao_core::Scope::Project),
                ..req
            }
        } else {
            req
        };
        svc.store(&ctx, req)
            .unwrap_or_else(|e| panic!("store {id}/{j} failed: {e}"));
    }
    svc.flush_index_md().expect("flush index.md");
}

#[test]
fn eight_processes_lose_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("mkdir");
    let exe = std::env::current_exe().expect("test binary path");
    let mut children: Vec<_> = (0..PROCS)
        .map(|i| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "concurrency::child_writer",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("CAO_CHILD_HOME", &home)
                .env("CAO_CHILD_ID", i.to_string())
                .env_remove("CAO_MEMORY_ENABLED")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn child")
        })
        .collect();
    let reader = MemoryService::open(CaoHome::new(&home)).expect("open the reader");
    let mut walks = 0;
    while children.iter_mut().any(|c| c.try_wait().ok().flatten().is_none()) {
        let report = reader.pick_up_changes().expect("walk");
        assert!(
            report.is_clean() && report.unparsable.is_empty(),
            "walk {walks} took another process's write for an external change: {report}"
        );
        walks += 1;
    }
    assert!(walks > 0, "the writers finished before the first walk");
    for (i, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().expect("child exit");
        assert!(
            out.status.success(),
            "child {i} failed: {:?}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let svc = MemoryService::open(CaoHome::new(&home)).expect("open");
    let ctx = ctx(&home);
    let project = Some("race");
    for p in 0..PROCS {
        for j in (0..PER_PROC).filter(|j| !j.is_multiple_of(10)) {
            let k = key_for(p, j);
            let scope = if j.is_multiple_of(2) {
                Scope::Project
            } else {
                Scope::Global
            };
            let key = Key::parse_strict(&k).expect("valid key");
            let m = svc
                .show(&ctx, cao_memory::ShowRequest::key(&key, Some(scope)))
                .expect("show")
                .unwrap_or_else(|| panic!("{k} missing from index"));
            assert_eq!(m.content, format!("process {p} entry {j}: the quick brown fox {p}x{j}"));
            let path = svc
                .wiki_layout()
                .topic_path(scope, if scope == Scope::Project { project } else { None }, &key)
                .expect("path");
            let text = std::fs::read_to_string(&path).expect("topic file exists");
            assert!(text.ends_with(&format!("{p}x{j}\n")), "file of {k} holds its content");
        }
    }
    // Each shared key received PER_PROC/10/SHARED_KEYS entries from each process.
    let expected_entries = (PER_PROC / 10 / SHARED_KEYS * PROCS) as i64;
    for s in 0..SHARED_KEYS {
        let key = Key::parse_strict(&format!("shared-{s}")).expect("key");
        let m = svc
            .show(&ctx, cao_memory::ShowRequest::key(&key, Some(Scope::Project)))
            .expect("show")
            .expect("shared key indexed");
        assert_eq!(m.entry_count, expected_entries, "no entry of shared-{s} was lost");
        let path = svc
            .wiki_layout()
            .topic_path(Scope::Project, project, &key)
            .expect("path");
        let text = std::fs::read_to_string(&path).expect("read");
        let topic = cao_store::StoredTopic::parse(&text).expect("shared topic parses");
        assert_eq!(topic.entry_count() as i64, expected_entries);
    }
    let report = svc.repair().expect("repair");
    assert!(
        report.is_clean(),
        "repair found differences after concurrent writes: {report}"
    );
    assert!(report.unparsable.is_empty(), "{report}");
    assert_eq!(report.scanned, PROCS * (PER_PROC - PER_PROC / 10) + SHARED_KEYS);
}
