//! Recorded file stamps of rows and wiki directories: per-directory reads, the rotation over every row, and the
//! directory records.

use crate::common::{TestDb, global, row};
use cao_core::fs::FileStamp;
use cao_core::{MemoryRef, Scope};
use cao_index::WikiDirStamp;

fn stamp(n: i64) -> FileStamp {
    FileStamp {
        size: n,
        changed_ns: n * 1_000,
        inode: n + 7,
    }
}

#[test]
fn file_stamps_in_reads_one_directory_with_its_recorded_stamps() {
    let db = TestDb::new();
    let mut stamped = global("g1", "one", 0);
    stamped.file_stamp = Some(stamp(1));
    db.index.upsert(&stamped).expect("upsert");
    db.index.upsert(&global("g2", "two", 1)).expect("upsert");
    db.index
        .upsert(&row("s1", Scope::Session, Some("sess-a"), "three", 2))
        .expect("upsert");
    db.index
        .upsert(&row("s2", Scope::Session, Some("sess-b"), "four", 3))
        .expect("upsert");

    let mut global_rows = db.index.file_stamps_in(Scope::Global, None).expect("global");
    global_rows.sort_by(|a, b| a.memory.key.cmp(&b.memory.key));
    let got: Vec<_> = global_rows
        .iter()
        .map(|r| (r.memory.key.as_str(), r.stamp, r.file_path.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("g1", Some(stamp(1)), stamped.file_path.as_str()),
            ("g2", None, global("g2", "two", 1).file_path.as_str())
        ]
    );
    let session = db
        .index
        .file_stamps_in(Scope::Session, Some("sess-a"))
        .expect("session");
    assert_eq!(session.len(), 1);
    assert_eq!(session[0].memory.to_string(), "session/sess-a/s1");
    assert!(
        db.index
            .file_stamps_in(Scope::Agent, Some("x"))
            .expect("agent")
            .is_empty()
    );

    db.index
        .set_file_stamps(&[(MemoryRef::new(Scope::Global, None, global("g2", "", 0).key), stamp(2))])
        .expect("set");
    let g2 = db.index.file_stamps_in(Scope::Global, None).expect("global");
    assert!(
        g2.iter()
            .any(|r| r.memory.key.as_str() == "g2" && r.stamp == Some(stamp(2)))
    );
}

#[test]
fn the_rotation_visits_every_row_once_per_round() {
    let db = TestDb::new();
    let n = 23;
    for i in 0..n {
        db.index.upsert(&global(&format!("k{i}"), "text", i)).expect("upsert");
    }
    // A table no larger than the limit comes back whole, from any cursor.
    for start in [i64::MIN, 0, 5, 1_000] {
        let (rows, _) = db.index.file_stamps_rotation(start, 100).expect("rotation");
        let mut keys: Vec<_> = rows.iter().map(|r| r.memory.key.to_string()).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), n as usize, "from {start}");
        assert_eq!(rows.len(), n as usize, "no row twice, from {start}");
    }
    // Chunks of 5 from a cursor in the middle: every row once in each round of 5 calls (25 >= 23 rows).
    let mut cursor = db.index.max_row_id().expect("max") / 2;
    let mut seen = std::collections::HashMap::<String, usize>::new();
    for _ in 0..5 {
        let (rows, next) = db.index.file_stamps_rotation(cursor, 5).expect("rotation");
        assert!(rows.len() <= 5);
        for r in rows {
            *seen.entry(r.memory.key.to_string()).or_default() += 1;
        }
        cursor = next;
    }
    assert_eq!(seen.len(), n as usize, "{seen:?}");
    assert!(seen.values().all(|&c| c <= 2), "{seen:?}");
    assert!(db.index.max_row_id().expect("max") >= n);
    assert_eq!(TestDb::new().index.max_row_id().expect("empty"), 0);
    assert!(
        TestDb::new()
            .index
            .file_stamps_rotation(0, 5)
            .expect("empty")
            .0
            .is_empty()
    );
}

#[test]
fn directory_stamps_are_recorded_replaced_and_forgotten() {
    let db = TestDb::new();
    assert!(db.index.wiki_dir_stamps().expect("none").is_empty());
    db.index
        .set_wiki_dir_stamp(Scope::Global, None, Some(stamp(1)))
        .expect("set");
    db.index
        .set_wiki_dir_stamp(Scope::Session, Some("sess-a"), Some(stamp(2)))
        .expect("set");
    db.index
        .set_wiki_dir_stamp(Scope::Global, None, Some(stamp(3)))
        .expect("replace");
    let mut got = db.index.wiki_dir_stamps().expect("read");
    got.sort_by(|a, b| a.scope_id.cmp(&b.scope_id));
    assert_eq!(
        got,
        [
            WikiDirStamp {
                scope: Scope::Global,
                scope_id: None,
                stamp: stamp(3)
            },
            WikiDirStamp {
                scope: Scope::Session,
                scope_id: Some("sess-a".into()),
                stamp: stamp(2)
            },
        ]
    );
    db.index.set_wiki_dir_stamp(Scope::Global, None, None).expect("forget");
    db.index
        .set_wiki_dir_stamp(Scope::Agent, Some("never"), None)
        .expect("forget nothing");
    assert_eq!(db.index.wiki_dir_stamps().expect("read").len(), 1);
}
