//! Dense vectors: stored with the row in one transaction, invalidated when the content changes, removed with the
//! memory, found by the exact scan under visibility and type filters, and seen by other handles on the same file.

use crate::common::*;
use cao_core::{MemoryType, Scope};
use cao_index::{AppendWhen, Index, JournalNote, JournalWriter, MemoryRow, VectorCounts, VectorWrite, Visibility};

const MODEL: &str = "test-model";

fn unit(v: &[f32]) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / n).collect()
}

fn note(row: &MemoryRow) -> JournalNote {
    JournalNote {
        text: row.content.clone(),
        writer: JournalWriter::default(),
        at: row.updated_at,
    }
}

fn store(ix: &Index, row: &MemoryRow, v: Option<&[f32]>) {
    let vector = v.map(|vector| VectorWrite { model: MODEL, vector });
    ix.upsert_journaled_with_vector(row, &note(row), AppendWhen::IfOpen, vector)
        .expect("upsert");
}

fn top(ix: &Index, vis: &Visibility, ty: Option<MemoryType>, q: &[f32], k: usize) -> Vec<String> {
    ix.dense_top(vis, ty, MODEL, q, k)
        .expect("dense top")
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

#[test]
fn the_scan_ranks_by_similarity_under_visibility_and_type() {
    let db = TestDb::new();
    let ix = &db.index;
    let a = global("a", "alpha", 1);
    let b = global("b", "beta", 2);
    let mut c = row("c", Scope::Session, Some("s1"), "gamma", 3);
    c.memory_type = MemoryType::Feedback;
    store(ix, &a, Some(&unit(&[1.0, 0.0, 0.0])));
    store(ix, &b, Some(&unit(&[0.6, 0.8, 0.0])));
    store(ix, &c, Some(&unit(&[0.9, 0.1, 0.0])));
    store(ix, &global("d", "no vector", 4), None);
    let q = unit(&[1.0, 0.0, 0.0]);
    let all = Visibility::all();
    assert_eq!(top(ix, &all, None, &q, 10), [a.id.clone(), c.id.clone(), b.id.clone()]);
    assert_eq!(top(ix, &all, None, &q, 2), [a.id.clone(), c.id.clone()]);
    let scores = ix.dense_top(&all, None, MODEL, &q, 1).expect("top");
    assert!((scores[0].1 - 1.0).abs() < 1e-6);
    let global_only = Visibility::none().allow(Scope::Global, None);
    assert_eq!(top(ix, &global_only, None, &q, 10), [a.id.clone(), b.id.clone()]);
    assert_eq!(top(ix, &all, Some(MemoryType::Feedback), &q, 10), [c.id.clone()]);
    assert!(top(ix, &Visibility::none(), None, &q, 10).is_empty());
    // Another model's query (or dimension) finds nothing of this one's.
    assert!(ix.dense_top(&all, None, "other", &q, 10).expect("top").is_empty());
    assert!(
        ix.dense_top(&all, None, MODEL, &[1.0, 0.0], 10)
            .expect("top")
            .is_empty()
    );
    let s = ix
        .dense_scores(MODEL, &q, &[a.id.as_str(), "id-missing", b.id.as_str()])
        .expect("scores");
    assert!(s[0].is_some_and(|x| (x - 1.0).abs() < 1e-6) && s[1].is_none());
    assert!(s[2].is_some_and(|x| (x - 0.6).abs() < 1e-6));
}

#[test]
fn a_content_change_invalidates_and_a_removal_removes_the_vector() {
    let db = TestDb::new();
    let ix = &db.index;
    let q = unit(&[1.0, 0.0]);
    let a = global("a", "alpha", 1);
    store(ix, &a, Some(&q));
    assert_eq!(
        ix.vector_counts(MODEL).expect("counts"),
        VectorCounts { with: 1, without: 0 }
    );
    assert_eq!(top(ix, &Visibility::all(), None, &q, 5), vec![a.id.clone()]);
    // Same content, other type: the vector stays, and the type filter sees the new type.
    let mut retyped = a.clone();
    retyped.memory_type = MemoryType::Feedback;
    store(ix, &retyped, None);
    assert_eq!(
        top(ix, &Visibility::all(), Some(MemoryType::Feedback), &q, 5),
        vec![a.id.clone()]
    );
    assert!(top(ix, &Visibility::all(), Some(MemoryType::Project), &q, 5).is_empty());
    // New content without a vector: the old vector no longer applies.
    let mut changed = retyped.clone();
    changed.content = "alpha, revised".into();
    store(ix, &changed, None);
    assert!(top(ix, &Visibility::all(), None, &q, 5).is_empty());
    assert_eq!(ix.vector_of(&a.id, MODEL).expect("read"), None);
    let missing = ix.rows_without_vector(MODEL, None, 10).expect("missing");
    assert_eq!(keys(&missing), ["a"]);
    // A backfill of stale content is refused; of the current content, stored.
    let v = VectorWrite {
        model: MODEL,
        vector: &q,
    };
    assert!(!ix.put_vector_if_current(&a.id, "alpha", v).expect("put"));
    assert!(ix.put_vector_if_current(&a.id, "alpha, revised", v).expect("put"));
    assert_eq!(top(ix, &Visibility::all(), None, &q, 5), vec![a.id.clone()]);
    assert!(ix.rows_without_vector(MODEL, None, 10).expect("missing").is_empty());
    // Removal.
    assert!(ix.delete(Scope::Global, None, &key("a")).expect("delete"));
    assert!(top(ix, &Visibility::all(), None, &q, 5).is_empty());
    assert_eq!(ix.vector_counts(MODEL).expect("counts"), VectorCounts::default());
    let orphans: i64 = rusqlite::Connection::open(db.path())
        .expect("open")
        .query_row("SELECT count(*) FROM cao_memory_vectors", [], |r| r.get(0))
        .expect("count");
    assert_eq!(orphans, 0);
}

#[test]
fn another_handle_sees_new_changed_and_removed_vectors() {
    let db = TestDb::new();
    let other = Index::open(&db.path()).expect("second handle");
    let q = unit(&[0.0, 1.0]);
    let all = Visibility::all();
    assert!(
        top(&db.index, &all, None, &q, 5).is_empty(),
        "the copy is loaded (empty)"
    );
    let a = global("a", "alpha", 1);
    let b = global("b", "beta", 2);
    store(&other, &a, Some(&unit(&[1.0, 0.2])));
    store(&other, &b, Some(&unit(&[0.2, 1.0])));
    assert_eq!(top(&db.index, &all, None, &q, 5), [b.id.clone(), a.id.clone()]);
    let mut a2 = a.clone();
    a2.content = "alpha now about the other axis".into();
    store(&other, &a2, Some(&unit(&[0.0, 1.0])));
    assert_eq!(top(&db.index, &all, None, &q, 5), [a.id.clone(), b.id.clone()]);
    other.delete_scope(Scope::Global, None).expect("clear");
    assert!(top(&db.index, &all, None, &q, 5).is_empty());
}

#[test]
fn bad_vectors_are_refused_and_write_nothing() {
    let db = TestDb::new();
    let a = global("a", "alpha", 1);
    for bad in [vec![], vec![f32::NAN, 1.0], vec![0.5; cao_index::MAX_VECTOR_DIM + 1]] {
        let r = db.index.upsert_journaled_with_vector(
            &a,
            &note(&a),
            AppendWhen::IfOpen,
            Some(VectorWrite {
                model: MODEL,
                vector: &bad,
            }),
        );
        assert!(matches!(r, Err(cao_index::IndexError::Invalid(_))), "{r:?}");
        assert!(
            db.index.get(Scope::Global, None, &key("a")).expect("get").is_none(),
            "nothing written"
        );
    }
}

#[test]
fn an_existing_vectors_table_is_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = db_path(&dir);
    {
        let ix = Index::open(&path).expect("open");
        store(&ix, &global("a", "alpha", 1), Some(&unit(&[1.0, 0.0])));
    }
    // Forget that migration 11 ran: it runs again over the existing tables and keeps their rows.
    rusqlite::Connection::open(&path)
        .expect("open")
        .execute("DELETE FROM cao_schema_migrations WHERE version = 11", [])
        .expect("unrecord");
    let ix = Index::open(&path).expect("reopen");
    assert_eq!(ix.vector_counts(MODEL).expect("counts").with, 1);
}

#[test]
fn a_copy_kept_current_through_changes_ranks_exactly_as_a_fresh_load() {
    // `kept` scans between every change (so it catches up row by row, and reloads after a removal); each round a
    // handle opened afresh reads every vector from the file. Their rankings and scores must be identical.
    let db = TestDb::new();
    let kept = &db.index;
    let writer = Index::open(&db.path()).expect("writer handle");
    let all = Visibility::all();
    let dim = 24;
    let vec_of = |seed: usize| -> Vec<f32> {
        unit(
            &(0..dim)
                .map(|j| (((seed * 31 + j * 17) % 97) as f32 - 48.0) / 48.0)
                .collect::<Vec<_>>(),
        )
    };
    let queries: Vec<Vec<f32>> = (0..4).map(|s| vec_of(1_000 + s)).collect();
    let check = |round: &str| {
        let fresh = Index::open(&db.path()).expect("fresh handle");
        for q in &queries {
            for ty in [None, Some(MemoryType::Feedback)] {
                let a = kept.dense_top(&all, ty, MODEL, q, 7).expect("top");
                let b = fresh.dense_top(&all, ty, MODEL, q, 7).expect("top");
                assert_eq!(a, b, "{round}: the kept copy and a fresh load rank differently");
            }
            let ids: Vec<String> = (0..40).map(|i| global(&format!("k{i}"), "x", 1).id).collect();
            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            assert_eq!(
                kept.dense_scores(MODEL, q, &refs).expect("scores"),
                fresh.dense_scores(MODEL, q, &refs).expect("scores"),
                "{round}: scores differ"
            );
        }
    };
    let mut rows: Vec<MemoryRow> = (0..40)
        .map(|i| global(&format!("k{i}"), &format!("content {i}"), i as i64 + 1))
        .collect();
    for (i, r) in rows.iter().enumerate() {
        store(&writer, r, Some(&vec_of(i)));
        if i % 10 == 9 {
            check(&format!("after {} stores", i + 1));
        }
    }
    for i in (0..40).step_by(3) {
        rows[i].content = format!("changed {i}");
        // Every other change comes with a new vector; the rest leave the memory without one.
        let v = (i % 2 == 0).then(|| vec_of(500 + i));
        store(&writer, &rows[i], v.as_deref());
    }
    check("after content changes");
    for i in (1..40).step_by(4) {
        rows[i].memory_type = MemoryType::Feedback;
        store(&writer, &rows[i], Some(&vec_of(i)));
    }
    check("after type changes");
    for i in (2..40).step_by(5) {
        writer.delete(Scope::Global, None, &rows[i].key).expect("delete");
    }
    check("after removals");
    let extra = global("k-late", "late", 99);
    store(&writer, &extra, Some(&vec_of(7)));
    check("after a store following removals");
}
