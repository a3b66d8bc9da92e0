//! Writes, point reads, pools, visibility, access counting, aliases and the index.md queue.

use crate::common::*;
use cao_core::{MemoryType, Scope};
use cao_index::{ACCESS_MIN_INTERVAL, Index, ListFilter, Visibility};
use cao_rank::Bm25;

#[test]
fn upsert_get_delete_round_trip() {
    let db = TestDb::new();
    let ix = &db.index;
    let mut first = row("notes", Scope::Project, Some("p1"), "first version", 0);
    first.tags = "a,b".into();
    first.source_provider = Some("claude_code".into());
    let out = ix.upsert(&first).expect("insert");
    assert!(out.created);
    assert_eq!(out.id, first.id);
    let got = ix
        .get(Scope::Project, Some("p1"), &key("notes"))
        .expect("get")
        .expect("present");
    assert_eq!(got, first, "every field round-trips");
    assert!(
        ix.get(Scope::Project, Some("p2"), &key("notes"))
            .expect("get")
            .is_none(),
        "scope id is identity"
    );
    assert!(
        ix.get(Scope::Global, None, &key("notes")).expect("get").is_none(),
        "scope is identity"
    );

    ix.record_access(&[&first.id], at(1), ACCESS_MIN_INTERVAL)
        .expect("access");
    let mut second = row("notes", Scope::Project, Some("p1"), "second version", 100);
    second.id = "another-id".into();
    second.memory_type = MemoryType::Reference;
    second.entry_count = 2;
    let out = ix.upsert(&second).expect("update");
    assert!(!out.created);
    assert_eq!(out.id, first.id, "existing id kept");
    let got = ix
        .get(Scope::Project, Some("p1"), &key("notes"))
        .expect("get")
        .expect("present");
    assert_eq!(got.id, first.id);
    assert_eq!(got.created_at, first.created_at, "created_at kept");
    assert_eq!(got.access_count, 1, "access_count kept");
    assert_eq!(got.last_accessed_at, Some(at(1)), "last access kept");
    assert_eq!(got.updated_at, at(100));
    assert_eq!(
        (got.content.as_str(), got.memory_type, got.entry_count),
        ("second version", MemoryType::Reference, 2)
    );
    assert_eq!(got.source_provider, None, "provenance follows the latest store");
    assert_eq!(ix.count().expect("count"), 1);

    assert!(ix.delete(Scope::Project, Some("p1"), &key("notes")).expect("delete"));
    assert!(
        !ix.delete(Scope::Project, Some("p1"), &key("notes"))
            .expect("delete again")
    );
    assert!(
        ix.get(Scope::Project, Some("p1"), &key("notes"))
            .expect("get")
            .is_none()
    );
    assert!(
        ix.bm25_pool(&Visibility::all(), None, "version", 10, &Bm25::DEFAULT)
            .expect("bm25")
            .is_empty()
    );
    assert!(
        ix.metadata_pool(&Visibility::all(), None, "version", 10)
            .expect("meta")
            .is_empty()
    );
}

#[test]
fn global_identities_without_scope_id_are_unique() {
    let db = TestDb::new();
    db.index.upsert(&global("same", "one", 0)).expect("insert");
    db.index.upsert(&global("same", "two", 1)).expect("upsert");
    assert_eq!(db.index.count().expect("count"), 1);
    assert_eq!(
        db.index
            .get(Scope::Global, None, &key("same"))
            .expect("get")
            .expect("row")
            .content,
        "two"
    );
}

#[test]
fn compile_time_and_related_keys_are_kept_unless_given() {
    let db = TestDb::new();
    let mut r = global("k", "c", 0);
    r.last_compiled_at = Some(at(5));
    r.related_keys = Some("x,y".into());
    db.index.upsert(&r).expect("insert");
    db.index.upsert(&global("k", "c2", 10)).expect("update with None");
    let got = db.index.get(Scope::Global, None, &key("k")).expect("get").expect("row");
    assert_eq!(got.last_compiled_at, Some(at(5)));
    assert_eq!(got.related_keys.as_deref(), Some("x,y"));
    let mut long = global("k", "c3", 11);
    long.related_keys = Some("x".repeat(1024));
    assert!(
        db.index.upsert(&long).is_err(),
        "the reference's CHECK limit is enforced before writing"
    );
}

#[test]
fn bm25_ranks_more_query_term_hits_higher() {
    let db = TestDb::new();
    let ix = &db.index;
    // Content only (context weight 0): the neighbours' text in the context field does not count here.
    let content_only = Bm25::new(0.9, 0.25, 0.0).expect("valid");
    ix.upsert(&global("both", "tokio runtime tuning notes", 0))
        .expect("upsert");
    ix.upsert(&global("one", "tokio is used here for background notes", 1))
        .expect("upsert");
    ix.upsert(&global("none", "completely unrelated words", 2))
        .expect("upsert");
    for i in 0..6 {
        ix.upsert(&global(
            &format!("filler-{i}"),
            "unrelated filler text about gardens",
            3 + i,
        ))
        .expect("upsert");
    }
    let hits = ix
        .bm25_pool(&Visibility::all(), None, "Tokio RUNTIME", 10, &content_only)
        .expect("bm25");
    let order: Vec<&str> = hits.iter().map(|(r, _)| r.key.as_str()).collect();
    assert_eq!(order, ["both", "one"], "only docs sharing a token, best first");
    assert!(
        hits[0].1 > hits[1].1 && hits[1].1 > 0.0,
        "raw scores: higher is better: {hits:?}"
    );
    assert_eq!(
        ix.bm25_pool(&Visibility::all(), None, "tokio runtime", 1, &content_only)
            .expect("bm25")
            .len(),
        1,
        "limit"
    );
    assert!(
        ix.bm25_pool(&Visibility::all(), None, "!!! ...", 10, &content_only)
            .expect("bm25")
            .is_empty(),
        "no tokens"
    );
    assert!(
        ix.bm25_pool(&Visibility::all(), None, "absentword", 10, &content_only)
            .expect("bm25")
            .is_empty()
    );
    let typed = ix
        .bm25_pool(&Visibility::all(), Some(MemoryType::User), "tokio", 10, &content_only)
        .expect("bm25");
    assert!(typed.is_empty(), "memory_type filter applies");
    // With the default context weight, "one" also has "runtime" through its neighbour "both", which raises its
    // score; "none" has "tokio" only through its neighbour "one", so it is no hit: a memory matches through its own
    // text only.
    let with_context = ix
        .bm25_pool(&Visibility::all(), None, "Tokio RUNTIME", 10, &Bm25::DEFAULT)
        .expect("bm25");
    let order: Vec<&str> = with_context.iter().map(|(r, _)| r.key.as_str()).collect();
    assert_eq!(order, ["both", "one"], "{with_context:?}");
    assert!(
        with_context[1].1 > hits[1].1,
        "the neighbour's \"runtime\" adds to \"one\": {} vs {}",
        with_context[1].1,
        hits[1].1
    );
    let runtime: Vec<String> = ix
        .bm25_pool(&Visibility::all(), None, "runtime", 10, &Bm25::DEFAULT)
        .expect("bm25")
        .into_iter()
        .map(|(r, _)| r.key.to_string())
        .collect();
    assert_eq!(runtime, ["both"], "only the row that has the word, not its neighbours");
}

#[test]
fn stop_words_are_neither_indexed_nor_searched() {
    let db = TestDb::new();
    let ix = &db.index;
    ix.upsert(&global("a", "the plan is what we do", 0)).expect("upsert");
    ix.upsert(&global("b", "kafka is the plan", 1)).expect("upsert");
    let keys = |q: &str| -> Vec<String> {
        ix.bm25_pool(
            &Visibility::all(),
            None,
            q,
            10,
            &Bm25::new(0.9, 0.25, 0.0).expect("valid"),
        )
        .expect("bm25")
        .into_iter()
        .map(|(r, _)| r.key.to_string())
        .collect()
    };
    assert!(
        keys("what is the").is_empty(),
        "a query of only stop words matches nothing"
    );
    assert_eq!(keys("What is the Kafka plan?"), ["b", "a"], "stop words do not count");
}

#[test]
fn frequent_terms_are_scored_on_large_corpora() {
    let db = TestDb::new();
    let ix = &db.index;
    // "common" ends up in most documents: it still adds to every score, and a row that shares only it with the
    // query is a hit ranked after the rare match.
    ix.upsert(&global("rare-doc", "common rare", 0)).expect("upsert");
    ix.upsert(&global("c1", "common words", 1)).expect("upsert");
    ix.upsert(&global("c2", "common things", 2)).expect("upsert");
    ix.upsert(&global("other", "nothing shared", 3)).expect("upsert");
    let content_only = Bm25::new(0.9, 0.25, 0.0).expect("valid");
    let hits = ix
        .bm25_pool(&Visibility::all(), None, "common rare", 10, &content_only)
        .expect("bm25");
    let keys: Vec<&str> = hits.iter().map(|(r, _)| r.key.as_str()).collect();
    assert_eq!(keys.len(), 3);
    assert_eq!(keys[0], "rare-doc");
    for i in 0..1100 {
        let content = if i % 3 == 0 { "filler" } else { "common filler" };
        ix.upsert(&global(&format!("f{i}"), content, 10 + i)).expect("upsert");
    }
    let hits = ix
        .bm25_pool(&Visibility::all(), None, "common rare", 10, &content_only)
        .expect("bm25");
    assert_eq!(
        hits.len(),
        10,
        "the rare term matches one row; the common one fills the pool"
    );
    assert_eq!(hits[0].0.key.as_str(), "rare-doc");
    assert!(hits[0].1 > hits[1].1, "{hits:?}");
    assert!(
        hits[1..].iter().all(|(r, s)| r.content.contains("common") && *s > 0.0),
        "{hits:?}"
    );
    let only_common = ix
        .bm25_pool(&Visibility::all(), None, "common", 10, &content_only)
        .expect("bm25");
    assert_eq!(only_common.len(), 10, "a query of only common tokens keeps them");
}

#[test]
fn metadata_pool_semantics() {
    let db = TestDb::new();
    let ix = &db.index;
    let mut tagged = global("deploy-guide", "Run the Kubernetes DEPLOY on Fridays", 0);
    tagged.tags = "ops,k8s".into();
    ix.upsert(&tagged).expect("upsert");
    ix.upsert(&global("deploy-other", "deploy on Mondays", 10))
        .expect("upsert");
    ix.upsert(&global("unrelated", "nothing here about Größe", 20))
        .expect("upsert");
    let all = Visibility::all();
    let m = |q: &str| -> Vec<String> {
        ix.metadata_pool(&all, None, q, 10)
            .expect("meta")
            .into_iter()
            .map(|r| r.key.as_str().to_owned())
            .collect()
    };
    assert_eq!(
        m("DEPLOY"),
        ["deploy-other", "deploy-guide"],
        "newest first, case-insensitive"
    );
    assert_eq!(m("deploy kubernetes"), ["deploy-guide"], "every term must match");
    assert_eq!(m("deploy absent"), Vec::<String>::new());
    assert_eq!(m("k8s"), ["deploy-guide"], "tags are searched");
    assert_eq!(m("guide"), ["deploy-guide"], "the key is searched");
    assert_eq!(m("ubern"), ["deploy-guide"], "substrings inside words match");
    assert_eq!(
        m("ot"),
        ["unrelated", "deploy-other"],
        "two-letter term: 'nothing' and the key 'deploy-other'"
    );
    assert_eq!(m("ru"), ["deploy-guide"], "two-letter term: 'Run'");
    assert_eq!(m("ops on"), ["deploy-guide"], "long and short terms together");
    assert_eq!(m("fr"), ["deploy-guide"], "short-only query scans");
    assert_eq!(m("x"), Vec::<String>::new());
    assert_eq!(m("GRÖSSE"), Vec::<String>::new(), "no case folding beyond lowercase");
    assert_eq!(m("größe"), ["unrelated"], "non-ASCII lowercase");
    assert_eq!(m("GRÖßE"), ["unrelated"]);
    assert_eq!(
        m("\"quoted\" OR *"),
        Vec::<String>::new(),
        "FTS syntax in terms is literal text"
    );
    assert_eq!(
        m(""),
        ["unrelated", "deploy-other", "deploy-guide"],
        "empty query = recency"
    );
    assert_eq!(
        ix.metadata_pool(&all, None, "deploy", 1).expect("meta").len(),
        1,
        "limit"
    );
}

#[test]
fn visibility_isolates_sessions_agents_and_projects() {
    let db = TestDb::new();
    let ix = &db.index;
    ix.upsert(&row("mine", Scope::Session, Some("s1"), "secret plan alpha", 0))
        .expect("upsert");
    ix.upsert(&row("theirs", Scope::Session, Some("s2"), "secret plan alpha", 1))
        .expect("upsert");
    ix.upsert(&row(
        "agent-note",
        Scope::Agent,
        Some("reviewer"),
        "secret plan alpha",
        2,
    ))
    .expect("upsert");
    ix.upsert(&row("proj", Scope::Project, Some("p1"), "secret plan alpha", 3))
        .expect("upsert");
    ix.upsert(&row(
        "proj-alias",
        Scope::Project,
        Some("cwdhash"),
        "secret plan alpha",
        4,
    ))
    .expect("upsert");
    ix.upsert(&row("other-proj", Scope::Project, Some("p2"), "secret plan alpha", 5))
        .expect("upsert");
    ix.upsert(&global("glob", "secret plan alpha", 6)).expect("upsert");

    let vis = Visibility::none()
        .allow(Scope::Global, None)
        .allow(Scope::Federated, None)
        .allow(Scope::Session, Some("s1"))
        .allow(Scope::Project, Some("p1"))
        .allow(Scope::Project, Some("cwdhash"));
    let want = ["glob", "mine", "proj", "proj-alias"];
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    let recency = ix.recency_pool(&vis, None, 100).expect("recency");
    assert_eq!(keys(&recency), ["glob", "proj-alias", "proj", "mine"], "newest first");
    let bm25: Vec<String> = ix
        .bm25_pool(&vis, None, "secret plan", 100, &Bm25::DEFAULT)
        .expect("bm25")
        .into_iter()
        .map(|(r, _)| r.key.to_string())
        .collect();
    assert_eq!(sorted(bm25), want);
    let meta: Vec<String> = ix
        .metadata_pool(&vis, None, "secret", 100)
        .expect("meta")
        .into_iter()
        .map(|r| r.key.to_string())
        .collect();
    assert_eq!(sorted(meta), want);
    let short: Vec<String> = ix
        .metadata_pool(&vis, None, "pl", 100)
        .expect("meta")
        .into_iter()
        .map(|r| r.key.to_string())
        .collect();
    assert_eq!(sorted(short), want, "the scan fallback applies visibility too");
    let listed = ix
        .list(&ListFilter {
            visibility: vis.clone(),
            scope: Some(Scope::Session),
            memory_type: None,
            limit: None,
        })
        .expect("list");
    assert_eq!(keys(&listed), ["mine"]);

    assert!(
        ix.recency_pool(&Visibility::none(), None, 10)
            .expect("recency")
            .is_empty()
    );
    assert!(
        ix.bm25_pool(&Visibility::none(), None, "secret", 10, &Bm25::DEFAULT)
            .expect("bm25")
            .is_empty()
    );
    assert_eq!(ix.recency_pool(&Visibility::all(), None, 100).expect("all").len(), 7);
    let any_session = Visibility::none().allow_any(Scope::Session);
    assert_eq!(
        keys(&ix.recency_pool(&any_session, None, 100).expect("sessions")),
        ["theirs", "mine"]
    );
}

#[test]
fn recency_pool_orders_by_time_then_key_and_limits() {
    let db = TestDb::new();
    let ix = &db.index;
    ix.upsert(&global("b-same", "x", 5)).expect("upsert");
    ix.upsert(&global("a-same", "x", 5)).expect("upsert");
    ix.upsert(&global("old", "x", 1)).expect("upsert");
    ix.upsert(&row("sess", Scope::Session, Some("s"), "x", 9))
        .expect("upsert");
    let vis = Visibility::none()
        .allow(Scope::Global, None)
        .allow(Scope::Session, Some("s"));
    assert_eq!(
        keys(&ix.recency_pool(&vis, None, 10).expect("pool")),
        ["sess", "a-same", "b-same", "old"]
    );
    assert_eq!(keys(&ix.recency_pool(&vis, None, 2).expect("pool")), ["sess", "a-same"]);
    let mut user = global("typed", "x", 0);
    user.memory_type = MemoryType::User;
    ix.upsert(&user).expect("upsert");
    assert_eq!(
        keys(&ix.recency_pool(&vis, Some(MemoryType::User), 10).expect("pool")),
        ["typed"]
    );
}

#[test]
fn record_access_counts_at_most_once_per_minute() {
    let db = TestDb::new();
    let ix = &db.index;
    let r = global("k", "c", 0);
    ix.upsert(&r).expect("upsert");
    let other = global("other", "c", 0);
    ix.upsert(&other).expect("upsert");
    let count = |k: &str| {
        ix.get(Scope::Global, None, &key(k))
            .expect("get")
            .expect("row")
            .access_count
    };

    assert_eq!(
        ix.record_access(&[&r.id, &r.id, "no-such-id"], at(100), ACCESS_MIN_INTERVAL)
            .expect("bump"),
        1
    );
    assert_eq!(count("k"), 1, "a repeated id counts once");
    assert_eq!(
        ix.record_access(&[&r.id], at(159), ACCESS_MIN_INTERVAL).expect("bump"),
        0,
        "59 s later: no"
    );
    assert_eq!(
        ix.record_access(&[&r.id, &other.id], at(160), ACCESS_MIN_INTERVAL)
            .expect("bump"),
        2,
        "60 s: yes"
    );
    assert_eq!((count("k"), count("other")), (2, 1));
    let got = ix.get(Scope::Global, None, &key("k")).expect("get").expect("row");
    assert_eq!(got.last_accessed_at, Some(at(160)));
    assert_eq!(ix.record_access(&[], at(1000), ACCESS_MIN_INTERVAL).expect("empty"), 0);
}

#[test]
fn delete_scope_removes_only_that_scope_id() {
    let db = TestDb::new();
    let ix = &db.index;
    ix.upsert(&row("a", Scope::Session, Some("s1"), "shared word", 0))
        .expect("upsert");
    ix.upsert(&row("b", Scope::Session, Some("s1"), "shared word", 1))
        .expect("upsert");
    ix.upsert(&row("a", Scope::Session, Some("s2"), "shared word", 2))
        .expect("upsert");
    ix.upsert(&global("a", "shared word", 3)).expect("upsert");
    assert_eq!(ix.delete_scope(Scope::Session, Some("s1")).expect("clear"), 2);
    let left = ix
        .bm25_pool(&Visibility::all(), None, "shared", 10, &Bm25::DEFAULT)
        .expect("bm25");
    let mut ids: Vec<(Scope, Option<String>)> = left.into_iter().map(|(r, _)| (r.scope, r.scope_id)).collect();
    ids.sort();
    assert_eq!(ids, [(Scope::Global, None), (Scope::Session, Some("s2".to_owned()))]);
}

#[test]
fn index_rows_group_by_container() {
    let db = TestDb::new();
    let ix = &db.index;
    ix.upsert(&global("g", "x", 0)).expect("upsert");
    ix.upsert(&row("s", Scope::Session, Some("s1"), "x", 1))
        .expect("upsert");
    ix.upsert(&row("a", Scope::Agent, Some("rev"), "x", 2)).expect("upsert");
    ix.upsert(&row("p", Scope::Project, Some("p1"), "x", 3))
        .expect("upsert");
    ix.upsert(&row("q", Scope::Project, Some("p2"), "x", 4))
        .expect("upsert");
    ix.upsert(&row("f", Scope::Federated, None, "x", 5)).expect("upsert");
    assert_eq!(
        keys(&ix.index_rows("global").expect("rows")),
        ["a", "g", "s"],
        "ordered by scope name, then newest"
    );
    assert_eq!(keys(&ix.index_rows("p1").expect("rows")), ["p"]);
    assert_eq!(keys(&ix.index_rows("federated").expect("rows")), ["f"]);
    assert!(ix.index_rows("nope").expect("rows").is_empty());
    assert_eq!(ix.all_rows().expect("all").len(), 6);
}

#[test]
fn writes_mark_their_container_dirty() {
    let db = TestDb::new();
    let ix = &db.index;
    assert!(ix.take_dirty().expect("take").is_empty());
    ix.upsert(&row("s", Scope::Session, Some("s1"), "x", 1))
        .expect("upsert");
    ix.upsert(&row("p", Scope::Project, Some("p1"), "x", 3))
        .expect("upsert");
    assert_eq!(ix.take_dirty().expect("take"), ["global", "p1"]);
    assert!(ix.take_dirty().expect("take").is_empty(), "taking clears");

    ix.delete(Scope::Project, Some("p1"), &key("p")).expect("delete");
    let marks = ix.dirty_containers().expect("marks");
    assert_eq!(marks.len(), 1);
    ix.mark_dirty("p1").expect("mark again while a flush is running");
    assert!(!ix.clear_dirty(&marks[0]).expect("clear"), "a newer mark survives");
    let fresh = ix.dirty_containers().expect("marks");
    assert!(ix.clear_dirty(&fresh[0]).expect("clear"));
    assert!(ix.dirty_containers().expect("marks").is_empty());
    assert!(!ix.delete(Scope::Project, Some("p1"), &key("p")).expect("delete"));
    assert!(
        ix.dirty_containers().expect("marks").is_empty(),
        "a no-op delete marks nothing"
    );
}

#[test]
fn aliases_follow_the_reference_upsert() {
    let db = TestDb::new();
    let ix = &db.index;
    assert!(
        !ix.add_alias("p1", "p1", "cwd_hash", at(0)).expect("same"),
        "an id is not its own alias"
    );
    assert!(!ix.add_alias("", "h", "cwd_hash", at(0)).expect("empty"));
    assert!(ix.add_alias("p1", "hash-a", "cwd_hash", at(0)).expect("add"));
    assert!(
        !ix.add_alias("p1", "hash-a", "cwd_hash", at(5)).expect("again"),
        "idempotent"
    );
    assert!(ix.add_alias("p1", "hash-b", "cwd_hash", at(1)).expect("add"));
    let got: Vec<String> = ix
        .aliases("p1")
        .expect("aliases")
        .into_iter()
        .map(|a| a.alias)
        .collect();
    assert_eq!(got, ["hash-a", "hash-b"]);
    assert!(ix.add_alias("p2", "hash-a", "cwd_hash", at(9)).expect("repoint"));
    let a = ix.aliases("p2").expect("aliases");
    assert_eq!(
        (a.len(), a[0].created_at),
        (1, Some(at(0))),
        "repointed alias keeps created_at"
    );
    assert_eq!(ix.aliases("p1").expect("aliases").len(), 1);
}

#[test]
fn recording_a_known_alias_opens_no_write_transaction() {
    let db = TestDb::new();
    let ix = &db.index;
    let w0 = ix.write_transactions();
    assert!(ix.add_alias("p1", "hash-a", "cwd_hash", at(0)).expect("add"));
    assert_eq!(ix.write_transactions(), w0 + 1, "a new alias is one write");
    for n in 1..4 {
        assert!(!ix.add_alias("p1", "hash-a", "cwd_hash", at(n)).expect("again"));
    }
    assert_eq!(ix.write_transactions(), w0 + 1, "a known alias is not written again");
    assert_eq!(
        ix.clone().write_transactions(),
        ix.write_transactions(),
        "clones share the counter"
    );
    // Another handle on the same file (another process) reads the alias and writes nothing.
    let other = Index::open(&db.path()).expect("open");
    assert_eq!(other.write_transactions(), 0, "opening counts no write transaction");
    assert!(
        !other
            .add_alias("p1", "hash-a", "cwd_hash", at(9))
            .expect("known on disk")
    );
    assert_eq!(other.write_transactions(), 0);
    // A re-pointed alias is a write, from either handle.
    assert!(other.add_alias("p2", "hash-a", "cwd_hash", at(10)).expect("repoint"));
    assert_eq!(other.write_transactions(), 1);
    assert!(ix.add_alias("p1", "hash-a", "manual", at(11)).expect("new kind"));
    assert_eq!(ix.write_transactions(), w0 + 2);
    // Something that is not an alias never reaches the database.
    assert!(!ix.add_alias("p1", "p1", "cwd_hash", at(12)).expect("same"));
    assert_eq!(ix.write_transactions(), w0 + 2);
}

#[test]
fn many_visible_scope_ids_use_the_join_path_with_the_same_answers() {
    let db = TestDb::new();
    let ix = &db.index;
    // Interleave sessions with projects so their search partitions are not adjacent (20 separate ranges).
    for i in 0..21 {
        ix.upsert(&row(
            "note",
            Scope::Session,
            Some(&format!("s{i}")),
            "shared marker words",
            i,
        ))
        .expect("upsert");
        ix.upsert(&row(
            "note",
            Scope::Project,
            Some(&format!("p{i}")),
            "shared marker words",
            100 + i,
        ))
        .expect("upsert");
    }
    let vis = (0..20).fold(Visibility::none(), |v, i| {
        v.allow(Scope::Session, Some(&format!("s{i}")))
    });
    let mut want: Vec<String> = (0..20).map(|i| format!("s{i}")).collect();
    want.sort();
    let ids = |rows: Vec<cao_index::MemoryRow>| {
        let mut v: Vec<String> = rows.into_iter().map(|r| r.scope_id.expect("session id")).collect();
        v.sort();
        v
    };
    let bm25 = ix.bm25_pool(&vis, None, "marker", 100, &Bm25::DEFAULT).expect("bm25");
    assert_eq!(
        ids(bm25.into_iter().map(|(r, _)| r).collect()),
        want,
        "s20 and projects stay hidden"
    );
    assert_eq!(ids(ix.metadata_pool(&vis, None, "marker", 100).expect("meta")), want);
    assert!(
        ix.bm25_pool(&vis, Some(MemoryType::User), "marker", 100, &Bm25::DEFAULT)
            .expect("bm25")
            .is_empty()
    );
    let any = Visibility::none().allow_any(Scope::Session);
    assert_eq!(
        ix.bm25_pool(&any, None, "marker", 100, &Bm25::DEFAULT)
            .expect("bm25")
            .len(),
        21
    );
    assert_eq!(ix.metadata_pool(&any, None, "marker", 100).expect("meta").len(), 21);
}

#[test]
fn related_keys_and_access_count_change_alone_and_by_exact_identity() {
    let db = TestDb::new();
    let ix = &db.index;
    let mut a = row("notes", Scope::Project, Some("p1"), "text a", 0);
    a.related_keys = Some("x,y".into());
    let mut b = row("notes", Scope::Project, Some("p2"), "text b", 0);
    b.related_keys = Some("x,y".into());
    ix.upsert(&a).expect("a");
    ix.upsert(&b).expect("b");
    ix.record_access(&[a.id.as_str(), b.id.as_str()], at(100), ACCESS_MIN_INTERVAL)
        .expect("access");
    assert!(
        ix.set_related_keys(Scope::Project, Some("p1"), &key("notes"), Some("y"))
            .expect("set")
    );
    assert_eq!(
        ix.reset_access_count(Scope::Project, Some("p1"), &key("notes"))
            .expect("reset"),
        Some(1)
    );
    let got_a = ix
        .get(Scope::Project, Some("p1"), &key("notes"))
        .expect("get")
        .expect("a");
    let got_b = ix
        .get(Scope::Project, Some("p2"), &key("notes"))
        .expect("get")
        .expect("b");
    assert_eq!((got_a.related_keys.as_deref(), got_a.access_count), (Some("y"), 0));
    assert!(got_a.last_accessed_at.is_some(), "the access time is kept");
    assert_eq!(got_a.content, "text a", "nothing else changes");
    assert_eq!(
        (got_b.related_keys.as_deref(), got_b.access_count),
        (Some("x,y"), 1),
        "p2 untouched"
    );
    assert!(
        !ix.set_related_keys(Scope::Project, Some("p3"), &key("notes"), Some(""))
            .expect("absent")
    );
    assert_eq!(
        ix.reset_access_count(Scope::Project, Some("p3"), &key("notes"))
            .expect("absent"),
        None
    );
    let long = "k".repeat(1024);
    assert!(
        ix.set_related_keys(Scope::Project, Some("p1"), &key("notes"), Some(&long))
            .is_err(),
        "the reference's 1023-byte CHECK"
    );
}

#[test]
fn upsert_many_writes_all_rows_in_one_transaction_or_none() {
    let db = TestDb::new();
    let ix = &db.index;
    ix.upsert(&global("kept", "old text", 0)).expect("insert");
    let before = ix.write_transactions();
    let rows = vec![global("kept", "new text", 10), global("fresh", "brand new", 11)];
    let out = ix.upsert_many(&rows).expect("batch");
    assert_eq!(ix.write_transactions(), before + 1, "one transaction for the batch");
    assert_eq!(out.iter().map(|o| o.created).collect::<Vec<_>>(), [false, true]);
    assert_eq!(
        ix.get(Scope::Global, None, &key("kept"))
            .expect("get")
            .expect("row")
            .content,
        "new text"
    );
    // Content only: "kept" is "fresh"'s neighbour and has "brand" in its context.
    let content_only = Bm25::new(0.9, 0.25, 0.0).expect("valid");
    let hits = ix
        .bm25_pool(&Visibility::all(), None, "brand", 10, &content_only)
        .expect("bm25");
    assert_eq!(
        hits.iter().map(|(r, _)| r.key.as_str()).collect::<Vec<_>>(),
        ["fresh"],
        "search tables written in the batch"
    );
    let mut bad = global("late", "x", 12);
    bad.related_keys = Some("k".repeat(2000));
    assert!(ix.upsert_many(&[global("early", "y", 12), bad]).is_err());
    assert!(
        ix.get(Scope::Global, None, &key("early")).expect("get").is_none(),
        "a refused batch writes nothing"
    );
    assert!(ix.upsert_many(&[]).expect("empty batch").is_empty());
}

#[test]
fn a_write_follow_up_commits_with_the_row_and_a_failed_one_undoes_only_its_own_writes() {
    let db = TestDb::new();
    let ix = &db.index;
    let note = |r: &cao_index::MemoryRow| cao_index::JournalNote {
        text: r.content.clone(),
        writer: cao_index::JournalWriter::default(),
        at: r.updated_at,
    };
    let before = ix.write_transactions();
    let a = row("follow-a", Scope::Global, None, "alpha beta gamma", 0);
    let (_, entry, followed) = ix
        .upsert_journaled_then(&a, &note(&a), cao_index::AppendWhen::Always, None, |f| {
            let changed = f.set_related_keys(Scope::Global, None, &a.key, Some("elsewhere"))?;
            assert!(changed, "the follow-up sees the row its write has just inserted");
            Err::<(), cao_index::IndexError>(cao_index::IndexError::Invalid("refused".into()))
        })
        .expect("the write itself succeeds");
    assert!(
        matches!(followed, Err(cao_index::IndexError::Invalid(_))),
        "{followed:?}"
    );
    assert_eq!(entry, Some(0), "the journal entry is appended");
    assert_eq!(ix.write_transactions(), before + 1, "one transaction");
    let stored = ix
        .get(Scope::Global, None, &a.key)
        .expect("get")
        .expect("the row is committed");
    assert_eq!(stored.related_keys, None, "the failed follow-up's write is rolled back");

    let b = row("follow-b", Scope::Global, None, "alpha beta delta", 1);
    let (_, _, followed) = ix
        .upsert_journaled_then(&b, &note(&b), cao_index::AppendWhen::Always, None, |f| {
            let pool = f.bm25_pool_budgeted(
                &cao_index::Visibility::none().allow(Scope::Global, None),
                None,
                &["alpha".to_owned()],
                5,
                &Bm25::DEFAULT,
                cao_index::PoolBudget::RECALL,
            )?;
            f.set_related_keys(Scope::Global, None, &b.key, Some("follow-a"))?;
            Ok::<usize, cao_index::IndexError>(pool.len())
        })
        .expect("write");
    assert_eq!(followed.expect("follow-up"), 2, "the pool counts the row being written");
    assert_eq!(ix.write_transactions(), before + 2);
    let stored = ix.get(Scope::Global, None, &b.key).expect("get").expect("row");
    assert_eq!(
        stored.related_keys.as_deref(),
        Some("follow-a"),
        "committed with the row"
    );
}

#[test]
fn memories_stored_within_one_second_are_neighbours_in_the_order_they_were_stored() {
    let db = TestDb::new();
    // Stored in this order, all in one second; the key order (d1-1, d1-10, d1-2, d1-3) is a different one.
    for (key, content) in [
        ("d1-10", "alpha"),
        ("d1-2", "bravo"),
        ("d1-1", "charlie"),
        ("d1-3", "delta"),
    ] {
        db.index.upsert(&global(key, content, 0)).expect("upsert");
    }
    let conn = rusqlite::Connection::open(db.path()).expect("raw");
    let near = |key: &str| -> String {
        conn.query_row(
            "SELECT f.near FROM cao_memory_fts f JOIN memory_metadata m ON m.search_rowid = f.rowid WHERE m.\"key\" = ?1",
            [key],
            |r| r.get(0),
        )
        .expect("indexed row")
    };
    let terms = |texts: &[&str]| -> String {
        texts
            .iter()
            .flat_map(|t| cao_core::text::index_terms(t))
            .collect::<Vec<_>>()
            .join(" ")
    };
    // Before it, nearest first: d1-2 then d1-10; after it: d1-3.
    assert_eq!(near("d1-1"), terms(&["bravo", "alpha", "delta"]));
    assert_eq!(near("d1-10"), terms(&["bravo", "charlie"]));
    assert_eq!(near("d1-3"), terms(&["charlie", "bravo"]));
    // A rebuild from the stored rows gives every row the same neighbours.
    let before: Vec<String> = ["d1-10", "d1-2", "d1-1", "d1-3"].iter().map(|k| near(k)).collect();
    db.index.rebuild_search_index().expect("rebuild");
    let after: Vec<String> = ["d1-10", "d1-2", "d1-1", "d1-3"].iter().map(|k| near(k)).collect();
    assert_eq!(after, before);
}

#[test]
fn a_nul_in_a_query_separates_words_instead_of_failing_the_search() {
    let db = TestDb::new();
    db.index
        .upsert(&global("sunrise", "we painted a sunrise", 0))
        .expect("upsert");
    let hits = db
        .index
        .metadata_pool(&Visibility::all(), None, "paint\0sunrise", 5)
        .expect("a NUL is not a query error");
    assert_eq!(keys(&hits), ["sunrise"]);
    let hits = db
        .index
        .bm25_pool(&Visibility::all(), None, "\0sunrise\0", 5, &Bm25::DEFAULT)
        .expect("bm25");
    assert_eq!(hits.len(), 1);
}

/// Deleting a row drops its key from the `related_keys` of the rows of its scope and scope id, in the delete's
/// transaction: other keys keep their order, a csv left empty reads `""` (computed), a key that only starts with
/// the deleted one stays, and rows of another scope id (whose own `gone` still exists) are untouched.
#[test]
fn a_delete_drops_its_key_from_the_related_keys_of_its_container() {
    let db = TestDb::new();
    let ix = &db.index;
    let with = |k: &str, scope_id: &str, related: Option<&str>| {
        let mut r = row(k, Scope::Project, Some(scope_id), &format!("text {k}"), 0);
        r.related_keys = related.map(str::to_owned);
        ix.upsert(&r).expect("upsert");
    };
    with("gone", "p1", Some(""));
    with("first", "p1", Some("gone,gone-2,other"));
    with("middle", "p1", Some("other,gone,last"));
    with("only", "p1", Some("gone"));
    with("never", "p1", None);
    with("gone-2", "p1", Some("other"));
    with("other", "p1", Some(""));
    with("gone", "p2", Some(""));
    with("holder", "p2", Some("gone,x"));
    assert!(ix.delete(Scope::Project, Some("p1"), &key("gone")).expect("delete"));
    let related = |k: &str, scope_id: &str| {
        ix.get(Scope::Project, Some(scope_id), &key(k))
            .expect("get")
            .expect("row")
            .related_keys
    };
    assert_eq!(related("first", "p1").as_deref(), Some("gone-2,other"));
    assert_eq!(related("middle", "p1").as_deref(), Some("other,last"));
    assert_eq!(related("only", "p1").as_deref(), Some(""), "computed, none left");
    assert_eq!(related("never", "p1"), None, "never computed stays NULL");
    assert_eq!(related("gone-2", "p1").as_deref(), Some("other"));
    assert_eq!(related("holder", "p2").as_deref(), Some("gone,x"), "another scope id");
    assert!(
        !ix.delete(Scope::Project, Some("p1"), &key("gone"))
            .expect("delete again")
    );
}

/// A change made through another connection (another process) is not a checksum mismatch to this one: the integrity
/// check does not compare the full-text index against a structure a pooled connection cached before the change.
#[test]
fn the_integrity_check_sees_changes_made_through_another_connection() {
    let db = TestDb::new();
    let a = &db.index;
    a.upsert(&row("kept", Scope::Project, Some("p"), "A memory indexed as usual", 0))
        .expect("upsert");
    a.upsert(&row(
        "ahead",
        Scope::Project,
        Some("p"),
        "A memory written ahead of its row",
        1,
    ))
    .expect("upsert");
    assert_eq!(a.quick_check().expect("check"), None, "sound before");
    let b = Index::open(&db.path()).expect("second handle");
    assert!(
        b.delete(
            Scope::Project,
            Some("p"),
            &cao_core::Key::parse_strict("ahead").expect("key")
        )
        .expect("delete")
    );
    assert_eq!(b.quick_check().expect("check"), None, "the deleting handle");
    assert_eq!(
        a.quick_check().expect("check"),
        None,
        "the handle that read before the delete"
    );
}
