//! The journal's SQL: appends inside the memory write transaction, dense ids, version links, leases.

use super::*;
use crate::MemoryRow;
use cao_core::MemoryType;

fn open() -> (tempfile::TempDir, Index) {
    let dir = tempfile::tempdir().expect("tempdir");
    let ix = Index::open(&dir.path().join("db").join("t.db")).expect("open");
    (dir, ix)
}

fn t(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_780_000_000 + secs, 0).expect("valid time")
}

fn key(k: &str) -> Key {
    Key::parse_strict(k).expect("key")
}

fn row(k: &str, scope: Scope, scope_id: Option<&str>, content: &str) -> MemoryRow {
    MemoryRow::new(
        format!("id-{k}-{}", scope.as_str()),
        scope,
        scope_id.map(str::to_owned),
        key(k),
        MemoryType::Project,
        format!("/w/{k}.md"),
        "",
        content,
        t(0),
    )
}

fn note(text: &str, secs: i64) -> JournalNote {
    JournalNote {
        text: text.into(),
        writer: JournalWriter {
            terminal_id: Some("term-1".into()),
            session: Some("sess".into()),
            pid: Some(42),
        },
        at: t(secs),
    }
}

fn meta(ix: &Index, container: &str) -> JournalMeta {
    ix.journal_read(|j| j.meta(container)).expect("meta")
}

fn entry(ix: &Index, container: &str, id: u64) -> Option<EntryRow> {
    ix.journal_read(|j| j.entry(container, id)).expect("entry")
}

#[test]
fn a_write_and_its_entry_commit_together_with_dense_ids_and_version_links() {
    let (_d, ix) = open();
    let (out, id0) = ix
        .upsert_with_journal(
            &row("deploy", Scope::Project, Some("p1"), "v1"),
            &note("# deploy\nv1", 1),
        )
        .expect("store");
    assert!(out.created);
    assert_eq!(id0, 0);
    let (_, id1) = ix
        .upsert_with_journal(&row("other", Scope::Project, Some("p1"), "o"), &note("o", 2))
        .expect("store");
    let (out, id2) = ix
        .upsert_with_journal(
            &row("deploy", Scope::Project, Some("p1"), "v2"),
            &note("# deploy\nv2", 3),
        )
        .expect("store");
    assert!(!out.created);
    assert_eq!((id1, id2), (1, 2));
    // Session memories journal into the global container, numbered on their own.
    let (_, g0) = ix
        .upsert_with_journal(&row("pref", Scope::Session, Some("s-1"), "x"), &note("x", 4))
        .expect("store");
    assert_eq!(g0, 0);
    assert_eq!(meta(&ix, "global").entries, 1);
    assert_eq!(
        meta(&ix, "p1"),
        JournalMeta {
            entries: 3,
            view_end: 0,
            view_bytes: 0
        }
    );

    let e0 = entry(&ix, "p1", 0).expect("entry 0");
    assert_eq!(
        (e0.kind, e0.text.as_str(), e0.next),
        (EntryKind::Note, "# deploy\nv1", Some((2, EntryKind::Note)))
    );
    assert_eq!(e0.writer.terminal_id.as_deref(), Some("term-1"));
    assert_eq!((e0.writer.pid, e0.at, e0.purged), (Some(42), t(1), false));
    assert_eq!(entry(&ix, "p1", 2).expect("entry 2").next, None);

    let deleted = ix
        .delete_with_journal(
            Scope::Project,
            Some("p1"),
            &key("deploy"),
            &JournalWriter::default(),
            t(5),
        )
        .expect("delete");
    assert_eq!(deleted, Some(3));
    let e3 = entry(&ix, "p1", 3).expect("entry 3");
    assert_eq!((e3.kind, e3.text.as_str()), (EntryKind::Delete, ""));
    assert_eq!(entry(&ix, "p1", 2).expect("entry 2").next, Some((3, EntryKind::Delete)));
    assert!(
        ix.get(Scope::Project, Some("p1"), &key("deploy"))
            .expect("get")
            .is_none()
    );
    // Deleting what is not there appends nothing.
    let none = ix
        .delete_with_journal(
            Scope::Project,
            Some("p1"),
            &key("deploy"),
            &JournalWriter::default(),
            t(6),
        )
        .expect("delete");
    assert_eq!(none, None);
    assert_eq!(meta(&ix, "p1").entries, 4);
    assert_eq!(
        ix.journal_read(|j| j.unwritten("p1", 10)).expect("unwritten"),
        vec![0, 1, 2, 3]
    );
    assert_eq!(
        ix.journal_read(|j| j.memory_entry_ids("p1", Scope::Project, Some("p1"), &key("deploy")))
            .expect("ids"),
        vec![0, 2, 3]
    );
}

#[test]
fn the_plain_writes_append_nothing() {
    let (_d, ix) = open();
    ix.upsert(&row("a", Scope::Global, None, "x")).expect("upsert");
    assert!(ix.delete(Scope::Global, None, &key("a")).expect("delete"));
    assert_eq!(meta(&ix, "global"), JournalMeta::default());
    assert!(ix.journal_read(|j| j.containers()).expect("containers").is_empty());
}

#[test]
fn a_failed_journal_append_rolls_the_write_back_and_the_other_way_round() {
    let (_d, ix) = open();
    ix.upsert_with_journal(&row("keep", Scope::Global, None, "v1"), &note("v1", 1))
        .expect("store");
    // Triggers make each half of the transaction fail in turn.
    ix.write(|tx| {
        tx.execute_batch(
            "CREATE TRIGGER fail_journal BEFORE INSERT ON cao_journal_entries
             WHEN NEW.text = 'boom' BEGIN SELECT RAISE(ABORT, 'journal refused'); END;
             CREATE TRIGGER fail_row BEFORE UPDATE ON memory_metadata
             WHEN NEW.content = 'row-boom' BEGIN SELECT RAISE(ABORT, 'row refused'); END;",
        )?;
        Ok(())
    })
    .expect("triggers");
    let err = ix
        .upsert_with_journal(&row("keep", Scope::Global, None, "v2"), &note("boom", 2))
        .expect_err("journal refuses");
    assert!(err.to_string().contains("journal refused"), "{err}");
    let kept = ix.get(Scope::Global, None, &key("keep")).expect("get").expect("row");
    assert_eq!(kept.content, "v1", "the row update was rolled back with the entry");
    let err = ix
        .upsert_with_journal(&row("keep", Scope::Global, None, "row-boom"), &note("fine", 3))
        .expect_err("row refuses");
    assert!(err.to_string().contains("row refused"), "{err}");
    assert_eq!(meta(&ix, "global").entries, 1, "no entry without its write");
    assert!(entry(&ix, "global", 1).is_none());
    // A project row without a project id cannot be journaled; nothing is written.
    let err = ix
        .upsert_with_journal(&row("orphan", Scope::Project, None, "x"), &note("x", 4))
        .expect_err("no container");
    assert!(matches!(err, IndexError::Invalid(_)), "{err:?}");
    assert!(ix.get(Scope::Project, None, &key("orphan")).expect("get").is_none());
}

#[test]
fn leases_are_taken_only_when_free_and_the_line_unwritten() {
    let (_d, ix) = open();
    ix.journal_write(|j| {
        assert!(j.lease_claim("p", 0, 1, "a", 1_000, 5_000)?);
        assert!(!j.lease_claim("p", 0, 1, "b", 2_000, 6_000)?, "held until 5000");
        assert!(j.lease_claim("p", 0, 1, "b", 5_000, 9_000)?, "expired at 5000");
        assert!(!j.lease_release("p", 0, 1, "a")?, "a lost it");
        assert!(j.lease_pause("p", 0, 1, "b", 15_000)?);
        assert_eq!(
            j.lease("p", 0, 1)?,
            Some(LeaseRow {
                holder: String::new(),
                expires_at_ms: 15_000
            })
        );
        assert!(!j.lease_claim("p", 0, 1, "c", 14_999, 20_000)?, "paused");
        assert!(j.insert_line("p", 2, 1, "text", "verbatim", t(0))?);
        assert!(!j.insert_line("p", 2, 1, "again", "verbatim", t(0))?, "written once");
        assert!(
            !j.lease_claim("p", 2, 1, "c", 0, 20_000)?,
            "written lines take no lease"
        );
        assert_eq!(j.active_leases("p", 0)?, 0, "the pause has no holder");
        assert!(j.lease_claim("p", 4, 2, "c", 0, 20_000)?);
        assert_eq!(j.active_leases("p", 0)?, 1);
        j.leases_truncate("p", 5)?;
        assert_eq!(j.lease("p", 4, 2)?, None, "4+2 reaches entry 5");
        assert!(j.lease("p", 0, 1)?.is_some(), "0+1 does not");
        Ok::<_, IndexError>(())
    })
    .expect("leases");
}

#[test]
fn view_rows_pairs_and_truncation() {
    let (_d, ix) = open();
    ix.journal_write(|j| {
        for (id, n) in [(0, 4), (4, 2), (6, 1), (7, 1), (8, 1)] {
            j.view_insert("p", id, n, 10 * n)?;
        }
        assert_eq!(j.sibling_pairs("p", 1, 10)?, vec![6]);
        assert_eq!(j.sibling_pairs("p", 2, 10)?, Vec::<u64>::new());
        assert_eq!(j.view_containing("p", 5)?.map(|v| (v.id, v.n)), Some((4, 2)));
        assert_eq!(j.view_containing("p", 9)?, None);
        assert_eq!(j.view_truncate("p", 6)?, 30);
        let mut seen = Vec::new();
        j.view_scan("p", true, |item| {
            seen.push((item.row.id, item.row.n));
            true
        })?;
        assert_eq!(seen, vec![(4, 2), (0, 4)]);
        Ok::<_, IndexError>(())
    })
    .expect("view");
}

#[test]
fn clear_removes_every_row_of_one_container() {
    let (_d, ix) = open();
    ix.upsert_with_journal(&row("a", Scope::Project, Some("p1"), "x"), &note("x", 1))
        .expect("store");
    ix.upsert_with_journal(&row("b", Scope::Project, Some("p2"), "y"), &note("y", 1))
        .expect("store");
    let cleared = ix.journal_write(|j| j.clear("p1")).expect("clear");
    assert_eq!(cleared, 1);
    assert_eq!(meta(&ix, "p1"), JournalMeta::default());
    assert_eq!(meta(&ix, "p2").entries, 1);
    assert_eq!(
        ix.journal_read(|j| j.containers()).expect("containers"),
        vec!["p2".to_owned()]
    );
}

#[test]
fn changes_picked_up_from_files_append_only_to_an_open_journal() {
    let (_d, ix) = open();
    let r = row("deploy", Scope::Project, Some("p1"), "v1");
    let (out, id) = ix
        .upsert_journaled(&r, &note("v1", 1), AppendWhen::IfOpen)
        .expect("upsert");
    assert!(out.created, "the row is written either way");
    assert_eq!(id, None, "no journal yet: nothing appended");
    assert!(!ix.journal_read(|j| j.has_journal("p1")).expect("has"));
    ix.journal_write(|j| j.create_journal("p1")).expect("create");
    ix.journal_write(|j| j.create_journal("p1"))
        .expect("creating twice is fine");
    assert!(ix.journal_read(|j| j.has_journal("p1")).expect("has"));
    assert_eq!(meta(&ix, "p1").entries, 0);
    let (_, id) = ix
        .upsert_journaled(
            &row("deploy", Scope::Project, Some("p1"), "v2"),
            &note("v2", 2),
            AppendWhen::IfOpen,
        )
        .expect("upsert");
    assert_eq!(id, Some(0));
    // Another container's journal is still closed.
    let (_, id) = ix
        .upsert_journaled(&row("x", Scope::Global, None, "g"), &note("g", 3), AppendWhen::IfOpen)
        .expect("upsert");
    assert_eq!(id, None);
    let (_, id) = ix
        .upsert_journaled(&row("y", Scope::Global, None, "g"), &note("g", 3), AppendWhen::Always)
        .expect("upsert");
    assert_eq!(id, Some(0), "Always opens the journal");
    let w = JournalWriter::default();
    assert_eq!(
        ix.delete_journaled(Scope::Project, Some("p1"), &key("deploy"), &w, t(4), AppendWhen::IfOpen)
            .expect("delete"),
        (true, Some(1))
    );
    assert_eq!(
        ix.delete_journaled(Scope::Project, Some("p1"), &key("deploy"), &w, t(5), AppendWhen::Always)
            .expect("delete"),
        (false, None),
        "nothing to delete, nothing appended"
    );
    ix.upsert(&row("z", Scope::Project, Some("p2"), "z")).expect("upsert");
    assert_eq!(
        ix.delete_journaled(Scope::Project, Some("p2"), &key("z"), &w, t(6), AppendWhen::IfOpen)
            .expect("delete"),
        (true, None)
    );
    assert_eq!(meta(&ix, "p2"), JournalMeta::default());
}

#[test]
fn a_batch_appends_one_entry_per_row_in_order_or_nothing() {
    let (_d, ix) = open();
    let rows = vec![
        (row("a", Scope::Project, Some("p1"), "A"), note("A", 1)),
        (row("b", Scope::Project, Some("p1"), "B"), note("B", 2)),
        (row("a", Scope::Project, Some("p1"), "A2"), note("A2", 3)),
    ];
    let out = ix.upsert_many_with_journal(&rows).expect("batch");
    assert_eq!(
        out.iter().map(|(o, id)| (o.created, *id)).collect::<Vec<_>>(),
        vec![(true, 0), (true, 1), (false, 2)]
    );
    assert_eq!(entry(&ix, "p1", 0).expect("0").next, Some((2, EntryKind::Note)));
    let mut bad = row("c", Scope::Project, Some("p1"), "C");
    bad.related_keys = Some("x".repeat(2000));
    let err = ix.upsert_many_with_journal(&[
        (row("d", Scope::Project, Some("p1"), "D"), note("D", 4)),
        (bad, note("C", 5)),
    ]);
    assert!(err.is_err());
    assert_eq!(meta(&ix, "p1").entries, 3, "nothing of the failed batch");
    assert!(ix.get(Scope::Project, Some("p1"), &key("d")).expect("get").is_none());
}

#[test]
fn import_candidates_are_the_native_rows_of_one_container() {
    let (_d, ix) = open();
    for r in [
        row("p", Scope::Project, Some("p1"), "in p1"),
        row("q", Scope::Project, Some("p2"), "in p2"),
        row("g", Scope::Global, None, "global"),
        row("s", Scope::Session, Some("s1"), "session"),
        row("a", Scope::Agent, Some("dev"), "agent"),
        row("f", Scope::Federated, None, "fed"),
    ] {
        ix.upsert(&r).expect("upsert");
    }
    let keys = |c: &str| {
        let mut k: Vec<String> = ix
            .journal_read(|j| j.import_candidates(c))
            .expect("candidates")
            .into_iter()
            .map(|c| format!("{}:{}:{}", c.scope.as_str(), c.key.as_str(), c.content))
            .collect();
        k.sort();
        k
    };
    assert_eq!(keys("p1"), ["project:p:in p1"]);
    assert_eq!(
        keys("global"),
        ["agent:a:agent", "global:g:global", "session:s:session"]
    );
    assert_eq!(keys("federated"), ["federated:f:fed"]);
    assert!(keys("nope").is_empty());
    let c = ix.journal_read(|j| j.import_candidates("p2")).expect("candidates");
    assert_eq!((c[0].file_path.as_str(), c[0].updated_at), ("/w/q.md", t(0)));
}

/// Everything the search index holds: FTS documents, trigram documents, statistics, term frequencies and each row's
/// search rowid.
fn search_state(ix: &Index) -> Vec<String> {
    ix.read(|tx| {
        let mut out = Vec::new();
        for sql in [
            "SELECT rowid || '|' || body || '|' || meta || '|' || near FROM cao_memory_fts ORDER BY rowid",
            "SELECT 'trigram docs ' || count(*) FROM cao_memory_trigram",
            "SELECT 'trigram caching ' || ifnull(group_concat(rowid), '') FROM cao_memory_trigram
             WHERE cao_memory_trigram MATCH '\"caching\"'",
            "SELECT docs || '|' || tokens || '|' || context_tokens FROM cao_search_stats",
            "SELECT term || '|' || df FROM cao_search_terms ORDER BY term",
            "SELECT id || '|' || ifnull(search_rowid, '-') FROM memory_metadata ORDER BY id",
        ] {
            let mut stmt = tx.prepare(sql)?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            for r in rows {
                out.push(r?);
            }
        }
        Ok(out)
    })
    .expect("read the search state")
}

#[test]
fn a_batch_of_new_rows_indexes_as_rows_upserted_one_by_one() {
    let at = |k: &str, scope: Scope, scope_id: Option<&str>, content: &str, secs: i64| {
        let mut r = row(k, scope, scope_id, content);
        r.created_at = t(secs);
        r.updated_at = t(secs);
        r
    };
    let before = [
        at("alpha", Scope::Project, Some("p1"), "deploy pipeline runs nightly", 0),
        at(
            "gamma",
            Scope::Project,
            Some("p1"),
            "database migrations need review",
            20,
        ),
        at("omega", Scope::Global, None, "global preference for tabs", 5),
    ];
    // New rows before, between and after the existing ones (out of creation order), in two scopes.
    let batch = [
        at(
            "beta",
            Scope::Project,
            Some("p1"),
            "beta release notes mention caching",
            10,
        ),
        at("delta", Scope::Project, Some("p1"), "delta sync uses checksums", 30),
        at(
            "aaa",
            Scope::Project,
            Some("p1"),
            "first ever note about onboarding",
            -5,
        ),
        at(
            "epsilon",
            Scope::Project,
            Some("p1"),
            "epsilon tuning of caching layer",
            15,
        ),
        at("sigma", Scope::Global, None, "global editor settings", 6),
    ];
    let (_d1, one_by_one) = open();
    let (_d2, batched) = open();
    for r in &before {
        one_by_one.upsert(r).expect("upsert");
        batched.upsert(r).expect("upsert");
    }
    for r in &batch {
        one_by_one.upsert(r).expect("upsert");
    }
    let rows: Vec<(MemoryRow, JournalNote)> = batch
        .iter()
        .enumerate()
        .map(|(i, r)| (r.clone(), note(&r.content, i as i64)))
        .collect();
    let out = batched.upsert_many_with_journal(&rows).expect("batch");
    assert!(out.iter().all(|(o, _)| o.created));
    assert_eq!(
        out.iter().map(|(_, id)| *id).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 0],
        "one entry per row, in order, per journal"
    );
    let want = search_state(&one_by_one);
    assert!(want.iter().any(|l| l.contains("caching")), "{want:?}");
    assert_eq!(search_state(&batched), want);
}

#[test]
fn a_batch_of_changed_and_new_rows_indexes_as_rows_upserted_one_by_one() {
    let at = |k: &str, content: &str, secs: i64| {
        let mut r = row(k, Scope::Project, Some("p1"), content);
        r.created_at = t(secs);
        r.updated_at = t(secs);
        r
    };
    let before = [
        at("alpha", "deploy pipeline runs nightly", 0),
        at("beta", "beta release notes mention caching", 10),
        at("gamma", "database migrations need review", 20),
        at("delta", "delta sync uses checksums", 30),
        at("zeta", "zeta is the last one", 40),
    ];
    // Existing identities with new text (one also of another type, so another search-rowid slot) and new ones
    // between them: the first open of a home whose rows another program wrote, or files edited outside the tool.
    let mut retyped = at("gamma", "database migrations were reviewed by caching experts", 20);
    retyped.memory_type = MemoryType::Feedback;
    let batch = [
        at("beta", "beta release notes now mention sharding", 10),
        retyped,
        at("epsilon", "epsilon tuning of caching layer", 15),
        at("eta", "eta comes after everything", 50),
    ];
    let (_d1, one_by_one) = open();
    let (_d2, batched) = open();
    for r in &before {
        one_by_one.upsert(r).expect("upsert");
        batched.upsert(r).expect("upsert");
    }
    for r in &batch {
        one_by_one.upsert(r).expect("upsert");
    }
    let rows: Vec<(MemoryRow, JournalNote)> = batch
        .iter()
        .enumerate()
        .map(|(i, r)| (r.clone(), note(&r.content, i as i64)))
        .collect();
    let out = batched.upsert_many_with_journal(&rows).expect("batch");
    assert_eq!(
        out.iter().map(|(o, _)| o.created).collect::<Vec<_>>(),
        [false, false, true, true]
    );
    let want = search_state(&one_by_one);
    assert!(want.iter().any(|l| l.contains("shard")), "{want:?}");
    assert_eq!(search_state(&batched), want);
    // A batch naming one memory twice is written one row at a time, with the same result.
    let (_d3, twice) = open();
    for r in &before {
        twice.upsert(r).expect("upsert");
    }
    let mut repeated = rows.clone();
    repeated.push(rows[0].clone());
    twice.upsert_many_with_journal(&repeated).expect("batch with a repeat");
    assert_eq!(search_state(&twice), want);
}
