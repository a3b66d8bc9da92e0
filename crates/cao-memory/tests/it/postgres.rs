//! The PostgreSQL backend against the embedded store: the same sequence of writes through the service on both gives
//! the same rows, the same lexical documents' scores, the same recall results in every search mode and order, the
//! same listings, journal views and topic texts (docs/decisions/0014-postgres-backend.md). Each test gets a fresh
//! database on the server of `CAO_TEST_DATABASE_URL` (`cao_testkit::postgres`; skipped without it, except in CI).

use cao_core::{Container, Key, MemoryRef, Scope, TerminalContext};
use cao_memory::{ForgetArgs, JournalTarget, ListRequest, MemoryService, RecallArgs, StoreArgs};
use cao_store::{PoolBudget, Visibility};
use cao_testkit::postgres::TestDatabase;
use cao_testkit::service::{ServiceFixture, utc};

const WORDS: [&str; 16] = [
    "kafka", "queue", "deploy", "rust", "python", "cache", "retry", "budget", "lunch", "garden", "painting", "camping",
    "guitar", "museum", "zebra", "release",
];

/// A deterministic text of `n` words chosen by `seed` (some words frequent, some rare).
fn text(seed: usize, n: usize) -> String {
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(17);
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let r = x >> 33;
            // Skewed: low indices far more often.
            WORDS[(r % 16).min(r % 7 + r % 3)]
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The same writes on `fx`: stores in three scopes (with upserts, some within one second), then forgets.
fn write_history(fx: &ServiceFixture, session: &TerminalContext) {
    for i in 0..48 {
        let key = format!("k{}", if i % 7 == 6 { i - 3 } else { i });
        let scope = match i % 5 {
            0 => "global",
            4 => "session",
            _ => "project",
        };
        let ctx = if scope == "session" { session } else { &fx.ctx };
        fx.svc
            .store(
                ctx,
                StoreArgs {
                    content: format!("{} {}", text(i, 6 + i % 9), if i % 11 == 0 { "zebra" } else { "" }),
                    scope: Some(scope.parse().expect("a valid scope")),
                    key: Some(key.clone()),
                    tags: (i % 3 == 0).then(|| "ops,deploy".to_owned()),
                    ..Default::default()
                },
            )
            .unwrap_or_else(|e| panic!("store {key}: {e}"));
        if i % 4 != 3 {
            fx.clock.advance(chrono::Duration::seconds(1));
        }
    }
    for key in ["k5", "k9"] {
        fx.svc
            .forget(
                &fx.ctx,
                ForgetArgs {
                    key: key.into(),
                    scope: Some(cao_core::Scope::Project),
                },
            )
            .expect("forget");
    }
}

/// `v` without the fields that differ by construction between backends (ids, file paths vs locators).
fn strip(mut v: serde_json::Value) -> serde_json::Value {
    match &mut v {
        serde_json::Value::Object(m) => {
            m.remove("id");
            m.remove("file_path");
            for (_, x) in m.iter_mut() {
                *x = strip(x.take());
            }
        }
        serde_json::Value::Array(a) => {
            for x in a.iter_mut() {
                *x = strip(x.take());
            }
        }
        _ => {}
    }
    v
}

fn fixture(db: Option<&TestDatabase>) -> (ServiceFixture, TerminalContext) {
    let mut b = ServiceFixture::builder().at(utc(2026, 3, 1, 9, 0, 0)).project("p1");
    if let Some(db) = db {
        b = b.database(db.url.clone());
    }
    let fx = b.open();
    let session = TerminalContext {
        session_name: Some("s1".into()),
        ..fx.ctx.clone()
    };
    (fx, session)
}

/// Everything a caller can observe of one service, as JSON (ids and paths left out).
fn observe(svc: &MemoryService, ctx: &TerminalContext, session: &TerminalContext) -> Vec<(String, serde_json::Value)> {
    let mut out = Vec::new();
    for query in [
        "kafka retry",
        "deploy budget",
        "garden",
        "rust python cache",
        "zebra",
        "museum lunch guitar",
        "",
    ] {
        for mode in ["bm25", "hybrid", "metadata"] {
            for sort in ["recency", "score", "usage", "relevance"] {
                for who in [ctx, session] {
                    let r = svc.recall(
                        who,
                        RecallArgs {
                            query: Some(query.into()),
                            search_mode: Some(mode.parse().expect("a valid search_mode")),
                            sort_by: Some(sort.parse().expect("a valid sort_by")),
                            limit: Some(7),
                            include_related: Some(true),
                            ..Default::default()
                        },
                    );
                    let v = match r {
                        Ok(r) => serde_json::to_value(&r.memories).expect("json"),
                        Err(e) => serde_json::Value::String(format!("error {}", e.kind())),
                    };
                    out.push((
                        format!("recall {query:?} {mode} {sort} {:?}", who.session_name),
                        strip(v),
                    ));
                }
            }
        }
    }
    let list = svc
        .list(
            ctx,
            ListRequest {
                all: true,
                limit: Some(100),
                ..Default::default()
            },
        )
        .expect("list");
    out.push(("list".into(), strip(serde_json::to_value(&list).expect("json"))));
    for c in ["p1", "global"] {
        let view = svc
            .view(
                ctx,
                &JournalTarget {
                    scope: None,
                    container: Some(c.into()),
                },
            )
            .expect("view");
        out.push((
            format!("view {c}"),
            serde_json::json!([view.view, view.entries, view.lines]),
        ));
    }
    // The store's own lexical scores and pools, exactly.
    let snap = svc.storage().read().expect("read");
    for q in ["kafka retry deploy", "zebra garden", "cache"] {
        let terms = cao_store::search_tokens(q);
        let pool = snap
            .bm25_pool_budgeted(
                &Visibility::all(),
                None,
                &terms,
                20,
                &cao_rank::Bm25::DEFAULT,
                PoolBudget::RECALL,
            )
            .expect("pool");
        let pool: Vec<(String, String, f64)> = pool
            .into_iter()
            .map(|(r, s)| (r.key.to_string(), r.scope.to_string(), s))
            .collect();
        out.push((format!("pool {q:?}"), serde_json::to_value(pool).expect("json")));
    }
    // Topic texts, the header's random id aside.
    for row in snap
        .list(&cao_store::ListFilter {
            visibility: Visibility::all(),
            ..Default::default()
        })
        .expect("rows")
    {
        let memory = MemoryRef::new(row.scope, row.scope_id.clone(), row.key.clone());
        let topic = svc.storage().topic(&memory).expect("topic").expect("a topic per row");
        let id = topic.header().id.clone();
        out.push((
            format!("topic {memory}"),
            serde_json::json!(topic.render().replace(&id, "ID")),
        ));
    }
    out
}

#[test]
fn the_postgres_backend_answers_as_the_embedded_store() {
    let Some(db) = TestDatabase::create() else { return };
    let (embedded, e_session) = fixture(None);
    let (pg, p_session) = fixture(Some(&db));
    write_history(&embedded, &e_session);
    write_history(&pg, &p_session);
    let want = observe(&embedded.svc, &embedded.ctx, &e_session);
    let got = observe(&pg.svc, &pg.ctx, &p_session);
    assert_eq!(want.len(), got.len());
    let filled = |prefix: &str| {
        want.iter()
            .filter(|(w, v)| w.starts_with(prefix) && v.as_array().is_some_and(|a| !a.is_empty()))
            .count()
    };
    assert!(
        filled("recall") > 100,
        "the comparison covers real results: {}",
        filled("recall")
    );
    assert_eq!(filled("pool"), 3, "every lexical pool finds rows");
    assert!(filled("topic") == 0 && want.iter().filter(|(w, _)| w.starts_with("topic")).count() > 30);
    for ((what, w), (_, g)) in want.iter().zip(&got) {
        assert_eq!(g, w, "{what}");
    }
    // Both backends counted the same accesses on the way.
    assert_eq!(
        observe(&pg.svc, &pg.ctx, &p_session),
        observe(&embedded.svc, &embedded.ctx, &e_session)
    );
}

#[test]
fn a_second_replica_reads_what_the_first_wrote_and_journal_ids_stay_dense() {
    let Some(db) = TestDatabase::create() else { return };
    let (a, _) = fixture(Some(&db));
    let (b, _) = fixture(Some(&db));
    let threads: Vec<_> = [&a, &b]
        .into_iter()
        .enumerate()
        .map(|(n, fx)| {
            let svc = fx.svc.clone();
            let ctx = fx.ctx.clone();
            std::thread::spawn(move || {
                for i in 0..20 {
                    svc.store(
                        &ctx,
                        StoreArgs {
                            content: format!("replica {n} note {i} about kafka"),
                            scope: Some(cao_core::Scope::Project),
                            key: Some(format!("r{n}-{i}")),
                            ..Default::default()
                        },
                    )
                    .expect("store");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("writer");
    }
    let seen = b
        .svc
        .recall(
            &b.ctx,
            RecallArgs {
                query: Some("kafka".into()),
                limit: Some(100),
                ..Default::default()
            },
        )
        .expect("recall");
    assert_eq!(
        seen.memories.len(),
        40,
        "every write of both replicas is read by either"
    );
    let ids = a
        .svc
        .storage()
        .read()
        .expect("read")
        .journal(|j| {
            let entries = j.entries_from("p1", 0, 1000)?;
            Ok::<_, cao_store::StoreError>(entries.iter().map(|e| e.id).collect::<Vec<_>>())
        })
        .expect("journal");
    assert_eq!(ids, (0..40).collect::<Vec<u64>>(), "dense from 0, in commit order");
    let key = Key::parse_strict("r0-3").expect("key");
    let topic = b
        .svc
        .storage()
        .topic(&MemoryRef::new(Scope::Project, Some("p1".into()), key))
        .expect("topic")
        .expect("present");
    assert_eq!(topic.current_content(), "replica 0 note 3 about kafka");
    assert_eq!(Container::of(Scope::Project, Some("p1")).as_str(), "p1");
}

#[test]
fn hostile_values_are_stored_as_values() {
    let Some(db) = TestDatabase::create() else { return };
    let (fx, _) = fixture(Some(&db));
    let hostile = "'); DROP TABLE memory_metadata; -- \" \\ $1 ${x} %s";
    fx.store("project", "hostile", hostile);
    let got = fx
        .svc
        .recall(
            &fx.ctx,
            RecallArgs {
                query: Some("DROP TABLE".into()),
                search_mode: Some(cao_core::SearchMode::Metadata),
                ..Default::default()
            },
        )
        .expect("recall");
    assert_eq!(got.memories.len(), 1);
    assert_eq!(got.memories[0].content, hostile);
    assert!(
        got.memories[0].file_path.starts_with("postgres:/p1/wiki/"),
        "a locator, not a file: {}",
        got.memories[0].file_path
    );
}

#[test]
fn an_unreachable_database_is_store_unavailable_and_its_password_is_not_shown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = cao_core::DatabaseUrl::parse(&format!(
        "postgresql://cao:hunter2@/cao?host={}&sslmode=disable",
        dir.path().join("no-server-here").display()
    ))
    .expect("url");
    let home = cao_core::CaoHome::new(dir.path().join("home")).with_database(Some(url));
    let err = MemoryService::open(home).expect_err("nothing listens there");
    assert_eq!(err.kind(), "store_unavailable", "{err}");
    assert_eq!(err.code().http_status().as_u16(), 503);
    assert!(!err.to_string().contains("hunter2"), "{err}");
    assert!(
        err.to_string().contains("cao:***@"),
        "names the database without its password: {err}"
    );
}

/// `url` with its user info replaced by `user_info` (`user:password`).
fn with_user_info(url: &str, user_info: &str) -> String {
    let start = url.find("://").map_or(0, |i| i + 3);
    let authority_end = url[start..].find(['/', '?']).map_or(url.len(), |i| start + i);
    let host_start = url[start..authority_end].rfind('@').map_or(start, |i| start + i + 1);
    format!("{}{user_info}@{}", &url[..start], &url[host_start..])
}

#[test]
fn a_refused_login_names_the_user_and_the_servers_reason_never_the_password() {
    let Some(db) = TestDatabase::create() else { return };
    let url = with_user_info(db.url.expose(), "cao_no_such_role:hunter2");
    let dir = tempfile::tempdir().expect("tempdir");
    let home = cao_core::CaoHome::new(dir.path().join("home"))
        .with_database(Some(cao_core::DatabaseUrl::parse(&url).expect("url")));
    let err = MemoryService::open(home).expect_err("the server refuses an unknown role");
    assert_eq!(err.kind(), "store_unavailable", "{err}");
    let text = err.to_string();
    assert!(!text.contains("hunter2"), "{text}");
    assert!(
        text.contains("cao_no_such_role:***@"),
        "names the user and the server (the URL without its password): {text}"
    );
    assert!(
        text.contains("role \"cao_no_such_role\" does not exist"),
        "gives the server's reason, not just \"db error\": {text}"
    );
}
