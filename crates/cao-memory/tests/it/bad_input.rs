//! Bad input gets a specific error and writes nothing.

use cao_core::{CaoHome, Scope, Settings, SystemClock, TerminalContext};
use cao_memory::{Call, CallOptions, ForgetArgs, MemoryError, MemoryService, RecallArgs, StoreArgs};
use cao_protocol::{Tool, ToolCall};
use cao_testkit::service::ServiceFixture;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

/// The fixture's temp dir, and its database when the suite runs on PostgreSQL (kept as long as the service).
struct Dir {
    dir: tempfile::TempDir,
    _database: Option<cao_testkit::postgres::TestDatabase>,
}

impl Dir {
    fn path(&self) -> &Path {
        self.dir.path()
    }
}

fn setup() -> (Dir, MemoryService, TerminalContext) {
    let ServiceFixture {
        dir,
        svc,
        ctx,
        database,
        ..
    } = ServiceFixture::builder().project("p").open();
    (
        Dir {
            dir,
            _database: database,
        },
        svc,
        ctx,
    )
}

/// Every file under `dir` (relative paths), to prove a failed call wrote nothing.
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if !p.to_string_lossy().contains("/db/") {
                out.push(p.strip_prefix(dir).expect("inside").to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

fn store(content: &str) -> StoreArgs {
    StoreArgs {
        content: content.into(),
        ..Default::default()
    }
}

#[test]
fn invalid_store_arguments_write_nothing() {
    let (dir, svc, ctx) = setup();
    let before = files(dir.path());
    let plain: Vec<(StoreArgs, &str)> = vec![
        (
            StoreArgs {
                key: Some("---".into()),
                ..store("x")
            },
            "invalid key",
        ),
        (
            StoreArgs {
                key: Some("\0\0".into()),
                ..store("x")
            },
            "invalid key",
        ),
        (store(""), "must not be empty"),
        (store("   \n\t"), "must not be empty"),
        (
            store(&"a".repeat(cao_memory::MAX_CONTENT_BYTES + 1)),
            "the maximum is 65536",
        ),
        (store("nul \0 byte"), "NUL"),
        (store("中文 内容"), "cannot derive a key"),
        (
            StoreArgs {
                tags: Some("a\nb".into()),
                ..store("x")
            },
            "tags",
        ),
        (
            StoreArgs {
                tags: Some("x -->".into()),
                ..store("x")
            },
            "tags",
        ),
        (
            StoreArgs {
                scope: Some(Scope::Session),
                ..store("x")
            },
            "session_name",
        ),
        (
            StoreArgs {
                scope: Some(Scope::Agent),
                ..store("x")
            },
            "agent_profile",
        ),
        (
            StoreArgs {
                scope: Some(Scope::Federated),
                ..store("key AKIAABCDEFGHIJKLMNOP")
            },
            "aws_access_key",
        ),
    ];
    let cases: Vec<(Call<StoreArgs>, &str)> = [(
        Call::new(
            StoreArgs {
                scope: Some(Scope::Global),
                ..store("x")
            },
            CallOptions {
                caller_scope: Some(Scope::Session),
                ..Default::default()
            },
        ),
        "may not write",
    )]
    .into_iter()
    .chain(plain.into_iter().map(|(args, want)| (Call::from(args), want)))
    .collect();
    for (req, want) in cases {
        let err = svc.store(&ctx, req.clone()).expect_err(&format!("{req:?} must fail"));
        assert!(
            err.to_string().contains(want),
            "{req:?}: error {err:?} should mention {want:?}"
        );
        assert!(err.is_client_error(), "{err:?} is the caller's fault");
    }
    // Names outside a closed set are refused where the strings are read (an agent's call, the CLI's flags), with
    // the message the service has always given; the call never reaches the store.
    for (args, want) in [
        (json!({"content": "x", "scope": "user"}), "invalid scope \"user\""),
        (
            json!({"content": "x", "memory_type": "bogus"}),
            "invalid memory_type \"bogus\"",
        ),
    ] {
        let err = store_call(&svc, &ctx, args.clone()).expect_err(&format!("{args} must fail"));
        assert!(err.contains(want), "{args}: error {err:?} should mention {want:?}");
    }
    assert_eq!(files(dir.path()), before, "failed stores wrote files");
}

/// A `memory_store` call as an agent sends it: the arguments read as `ToolCall::parse` reads them, then stored.
fn store_call(svc: &MemoryService, ctx: &TerminalContext, args: serde_json::Value) -> Result<(), String> {
    let ToolCall::Store(args) = ToolCall::parse(Tool::Store, args).map_err(|e| e.to_string())? else {
        return Err("not a store call".into());
    };
    svc.store(ctx, args).map(drop).map_err(|e| e.to_string())
}

/// A `memory_recall` call as an agent sends it (see [`store_call`]).
fn recall_call(svc: &MemoryService, ctx: &TerminalContext, args: serde_json::Value) -> Result<(), String> {
    let ToolCall::Recall(args) = ToolCall::parse(Tool::Recall, args).map_err(|e| e.to_string())? else {
        return Err("not a recall call".into());
    };
    svc.recall(ctx, Call::tool(args)).map(drop).map_err(|e| e.to_string())
}

#[test]
fn hostile_keys_stay_inside_the_home() {
    let (dir, svc, ctx) = setup();
    for key in [
        "../../etc/passwd",
        "/abs/path",
        "a/../../b",
        &"k".repeat(10_000),
        "..\\..\\x",
    ] {
        let r = svc
            .store(
                &ctx,
                StoreArgs {
                    key: Some(key.into()),
                    scope: Some(Scope::Global),
                    ..store("content")
                },
            )
            .expect("sanitised keys are stored");
        // A topic file inside the home's memory directory, or on PostgreSQL a locator of the global container.
        let inside = if cao_testkit::service::on_postgres() {
            r.file_path.starts_with("postgres:/global/wiki/") && !r.file_path.contains("..")
        } else {
            Path::new(&r.file_path).starts_with(dir.path().join("home").join("memory"))
        };
        assert!(inside, "{key:?} -> {}", r.file_path);
        assert!(
            r.key.len() <= 60
                && r.key
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        );
    }
}

#[test]
fn invalid_recall_arguments_are_refused_before_io() {
    let (_dir, svc, ctx) = setup();
    let bad = [
        RecallArgs {
            limit: Some(0),
            ..Default::default()
        },
        RecallArgs {
            limit: Some(101),
            ..Default::default()
        },
        RecallArgs {
            query: Some("q".repeat(5000)),
            ..Default::default()
        },
    ];
    for req in bad {
        assert!(
            matches!(svc.recall(&ctx, req.clone()), Err(MemoryError::Invalid(_))),
            "{req:?}"
        );
    }
    for (args, want) in [
        (json!({"search_mode": "semantic"}), "invalid search_mode \"semantic\""),
        (json!({"sort_by": "random"}), "invalid sort_by \"random\""),
        (json!({"scope": "everywhere"}), "invalid scope \"everywhere\""),
        (json!({"memory_type": "x"}), "invalid memory_type \"x\""),
    ] {
        let err = recall_call(&svc, &ctx, args.clone()).expect_err(&format!("{args} must fail"));
        assert!(err.contains(want), "{args}: error {err:?} should mention {want:?}");
    }
    let err = svc
        .forget(
            &ctx,
            ForgetArgs {
                key: "///".into(),
                scope: None,
            },
        )
        .expect_err("empty key");
    assert!(matches!(err, MemoryError::Invalid(_)));
}

#[test]
fn corrupt_topic_file_is_reported_and_left_alone() {
    if cao_testkit::service::skip_on_postgres(
        "writes a corrupt topic file by hand; a PostgreSQL store keeps no topic files",
    ) {
        return;
    }
    let (_dir, svc, ctx) = setup();
    let r = svc
        .store(
            &ctx,
            StoreArgs {
                key: Some("k".into()),
                ..store("first")
            },
        )
        .expect("store");
    std::fs::write(&r.file_path, "garbage without any heading\n").expect("corrupt it");
    let err = svc
        .store(
            &ctx,
            StoreArgs {
                key: Some("k".into()),
                ..store("second")
            },
        )
        .expect_err("corrupt");
    assert!(matches!(err, MemoryError::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("cao memory repair"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&r.file_path).expect("read"),
        "garbage without any heading\n"
    );
    let report = svc.repair().expect("repair");
    assert_eq!(report.unparsable.len(), 1, "{report}");
}

#[test]
fn disabled_memory_refuses_every_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let settings = Settings::from_value(serde_json::json!({"memory": {"enabled": false}}));
    let svc =
        MemoryService::open_with(CaoHome::new(dir.path().join("home")), settings, Arc::new(SystemClock)).expect("open");
    let ctx = TerminalContext::default();
    assert!(matches!(svc.store(&ctx, store("x")), Err(MemoryError::Disabled)));
    assert!(matches!(
        svc.recall(&ctx, RecallArgs::default()),
        Err(MemoryError::Disabled)
    ));
    assert!(matches!(
        svc.forget(
            &ctx,
            ForgetArgs {
                key: "x".into(),
                scope: None
            }
        ),
        Err(MemoryError::Disabled)
    ));
}

#[test]
fn federated_secrets_are_refused_in_tags_and_keys_too() {
    let (dir, svc, ctx) = setup();
    let before = files(dir.path());
    for req in [
        StoreArgs {
            scope: Some(Scope::Federated),
            tags: Some("AKIAABCDEFGHIJKLMNOP".into()),
            ..store("fine")
        },
        StoreArgs {
            scope: Some(Scope::Federated),
            key: Some("ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".into()),
            ..store("fine")
        },
    ] {
        assert!(matches!(svc.store(&ctx, req), Err(MemoryError::Secret { .. })));
    }
    assert_eq!(files(dir.path()), before);
}

#[test]
fn a_missing_index_is_rebuilt_from_the_wiki_files_on_open() {
    if cao_testkit::service::skip_on_postgres(
        "removes the SQLite index and rebuilds it from the wiki files; a PostgreSQL store has neither",
    ) {
        return;
    }
    let (dir, svc, ctx) = setup();
    for k in ["a", "b", "c"] {
        svc.store(
            &ctx,
            StoreArgs {
                key: Some(k.into()),
                scope: Some(Scope::Global),
                ..store(k)
            },
        )
        .expect("store");
    }
    svc.flush_index_md().expect("flush");
    let home = svc.home().clone();
    drop(svc);
    std::fs::remove_dir_all(home.root().join("db")).expect("delete the database");
    let svc = MemoryService::open_with(home, Settings::default(), Arc::new(SystemClock)).expect("reopen");
    let listed = svc.list(&ctx, cao_memory::ListRequest::default()).expect("list");
    assert_eq!(listed.len(), 3, "rebuilt from the files");
    let index_md = std::fs::read_to_string(dir.path().join("home/memory/global/wiki/index.md")).expect("index.md");
    assert_eq!(
        index_md.matches("- [").count(),
        3,
        "index.md still lists every memory:\n{index_md}"
    );
}

#[test]
fn writes_through_a_replaced_database_are_refused() {
    if cao_testkit::service::skip_on_postgres("replaces the SQLite index file under a running service") {
        return;
    }
    let (_dir, svc, ctx) = setup();
    svc.store(&ctx, store("before")).expect("store");
    let db = svc.home().db_path();
    std::fs::remove_file(&db).expect("delete the database under the running service");
    let err = svc.store(&ctx, store("after")).expect_err("stale database");
    assert!(err.to_string().contains("removed or replaced"), "{err}");
}

/// NUL and every other control character in tags are refused before any I/O (a tag is one line of a header
/// comment and a table cell; content keeps its line breaks and tabs).
#[test]
fn control_characters_in_tags_are_refused() {
    let (dir, svc, ctx) = setup();
    let before = files(dir.path());
    for tags in [
        "a\0b",
        "nul\0",
        "esc\u{1b}[31m",
        "bell\u{7}",
        "tab\tbed",
        "c1\u{9b}x",
        "del\u{7f}",
    ] {
        let err = svc
            .store(
                &ctx,
                StoreArgs {
                    tags: Some(tags.into()),
                    ..store("fine")
                },
            )
            .expect_err(&format!("tags {tags:?} must be refused"));
        assert!(matches!(err, MemoryError::Invalid(_)), "{tags:?}: {err:?}");
        assert!(err.to_string().contains("tags"), "{tags:?}: {err}");
    }
    assert_eq!(files(dir.path()), before, "refused stores wrote files");
}

/// Federated content is judged after Unicode NFKC normalisation too, and every PEM private key header is a secret.
#[test]
fn federated_secrets_in_compatibility_forms_and_every_pem_header_are_refused() {
    let (dir, svc, ctx) = setup();
    let before = files(dir.path());
    for content in [
        "key \u{FF21}\u{FF2B}\u{FF29}\u{FF21}ABCDEFGHIJKLMNOP here",
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI",
        "-----BEGIN DSA PRIVATE KEY-----",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----",
    ] {
        let err = svc
            .store(
                &ctx,
                StoreArgs {
                    scope: Some(Scope::Federated),
                    ..store(content)
                },
            )
            .expect_err(&format!("{content:?} must be refused"));
        assert!(matches!(err, MemoryError::Secret { .. }), "{content:?}: {err:?}");
    }
    assert_eq!(files(dir.path()), before);
}

/// Reads through a database file that was removed or replaced after the service opened it answer an error naming
/// `cao memory repair`, like writes do, instead of answering from the unlinked file.
#[test]
fn reads_through_a_removed_or_replaced_database_are_refused() {
    if cao_testkit::service::skip_on_postgres("removes or replaces the SQLite index file under a running service") {
        return;
    }
    for replace in [false, true] {
        let (_dir, svc, ctx) = setup();
        svc.store(
            &ctx,
            StoreArgs {
                key: Some("k".into()),
                scope: Some(Scope::Global),
                ..store("the build uses cargo")
            },
        )
        .expect("store");
        let db = svc.home().db_path();
        std::fs::remove_file(&db).expect("delete the database under the running service");
        if replace {
            std::fs::write(&db, b"").expect("an empty file in its place");
        }
        let recall = svc.recall(
            &ctx,
            RecallArgs {
                query: Some("cargo".into()),
                ..Default::default()
            },
        );
        let list = svc.list(&ctx, cao_memory::ListRequest::default()).map(|_| ());
        let key = cao_core::Key::parse_strict("k").expect("key");
        let show = svc.show(&ctx, cao_memory::ShowRequest::key(&key, None)).map(|_| ());
        let block = svc.context_block(&ctx, Default::default()).map(|_| ());
        for (call, result) in [
            ("recall", recall.map(|_| ())),
            ("list", list),
            ("show", show),
            ("context", block),
        ] {
            let err = result.expect_err(&format!("{call} (replaced: {replace}) must refuse the stale database"));
            assert!(err.to_string().contains("cao memory repair"), "{call}: {err}");
        }
    }
}
