//! Opening, migrations and coexistence with a database the reference implementation wrote.

use crate::common::*;
use cao_core::{MemoryType, Scope};
use cao_index::{Index, IndexError, Visibility};
use cao_rank::Bm25;
use rusqlite::Connection;
use std::path::Path;
use std::sync::{Arc, Barrier};

fn schema_dump(path: &Path) -> Vec<(String, String)> {
    let conn = Connection::open(path).expect("open raw");
    let mut stmt = conn
        .prepare("SELECT name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name")
        .expect("prepare");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

fn versions(path: &Path) -> Vec<i64> {
    let conn = Connection::open(path).expect("open raw");
    let mut stmt = conn
        .prepare("SELECT version FROM cao_schema_migrations ORDER BY version")
        .expect("prepare");
    stmt.query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

fn column_names(conn: &Connection, table: &str) -> Vec<String> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({table})")).expect("prepare");
    stmt.query_map([], |r| r.get(1))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

#[test]
fn open_creates_the_directory_and_reopening_changes_nothing() {
    let db = TestDb::new();
    let path = db.path();
    assert!(path.is_file(), "database file created under a new db/ directory");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "database is owner-only");
    }
    db.index.upsert(&global("kept", "survives reopen", 0)).expect("upsert");
    let before = schema_dump(&path);
    let known: Vec<i64> = cao_index::known_migrations().collect();
    assert!(
        known.starts_with(&[1, 2, 3, 4, 5, 6, 7])
            && known.windows(2).all(|w| w[0] < w[1])
            && known.last() == Some(&cao_index::SCHEMA_VERSION),
        "{known:?}"
    );
    assert_eq!(versions(&path), known);
    drop(db.index);
    for _ in 0..3 {
        let again = Index::open(&path).expect("reopen");
        assert_eq!(again.count().expect("count"), 1);
    }
    assert_eq!(schema_dump(&path), before, "reopening is a no-op");
    assert_eq!(versions(&path), cao_index::known_migrations().collect::<Vec<_>>());
    let conn = Connection::open(&path).expect("raw");
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).expect("pragma");
    assert_eq!(mode, "wal");
}

#[test]
fn reopening_a_current_schema_takes_no_write_lock() {
    let db = TestDb::new();
    let path = db.path();
    db.index.upsert(&global("kept", "survives reopen", 0)).expect("upsert");
    drop(db.index);
    // Another connection holds SQLite's write lock for longer than the open waits for it (BUSY_TIMEOUT): an open
    // that migrated under `BEGIN IMMEDIATE` would fail; one that finds the schema current only reads.
    let holder = Connection::open(&path).expect("raw");
    holder.execute_batch("BEGIN IMMEDIATE").expect("write lock");
    let started = std::time::Instant::now();
    let again = Index::open(&path).expect("reopen while another connection writes");
    assert!(
        started.elapsed() < cao_index::BUSY_TIMEOUT,
        "the open waited for the write lock ({:?})",
        started.elapsed()
    );
    assert_eq!(again.count().expect("count"), 1);
    holder.execute_batch("ROLLBACK").expect("release");
}

#[test]
fn a_schema_change_by_another_program_is_migrated_at_the_next_open() {
    let db = TestDb::new();
    let path = db.path();
    drop(db.index);
    let before = schema_dump(&path);
    // Another program drops one of our indexes and forgets a migration's record: both come back at the next open.
    Connection::open(&path)
        .expect("raw")
        .execute_batch("DROP INDEX cao_idx_memory_recency;")
        .expect("drop index");
    assert_ne!(schema_dump(&path), before);
    drop(Index::open(&path).expect("reopen"));
    assert_eq!(schema_dump(&path), before, "the dropped index is created again");
    Connection::open(&path)
        .expect("raw")
        .execute_batch("DELETE FROM cao_schema_migrations WHERE version = 11")
        .expect("unrecord");
    drop(Index::open(&path).expect("reopen"));
    assert_eq!(versions(&path), cao_index::known_migrations().collect::<Vec<_>>());
}

#[test]
fn eight_processes_opening_a_new_file_at_once_all_succeed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = db_path(&dir);
    let barrier = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let path = path.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                let index = Index::open(&path).expect("concurrent open");
                index
                    .upsert(&global(&format!("k{i}"), &format!("written by opener {i}"), i))
                    .expect("upsert");
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread");
    }
    let index = Index::open(&path).expect("open");
    assert_eq!(index.count().expect("count"), 8);
    assert_eq!(
        versions(&path),
        cao_index::known_migrations().collect::<Vec<_>>(),
        "each migration applied once"
    );
    let hits = index
        .bm25_pool(&Visibility::all(), None, "opener", 20, &Bm25::DEFAULT)
        .expect("bm25");
    assert_eq!(hits.len(), 8);
}

/// The reference's exact DDL (reference notes, section a) and two rows in its formats.
fn make_reference_db(path: &Path) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    let conn = Connection::open(path).expect("raw open");
    conn.execute_batch(
        "CREATE TABLE memory_metadata (
	id VARCHAR NOT NULL, 
	\"key\" VARCHAR NOT NULL, 
	memory_type VARCHAR NOT NULL, 
	scope VARCHAR NOT NULL, 
	scope_id VARCHAR, 
	source_kind VARCHAR DEFAULT 'native' NOT NULL, 
	file_path VARCHAR NOT NULL, 
	tags VARCHAR NOT NULL, 
	source_provider VARCHAR, 
	source_terminal_id VARCHAR, 
	token_estimate INTEGER, 
	created_at DATETIME, 
	updated_at DATETIME, 
	access_count INTEGER DEFAULT '0' NOT NULL, 
	last_accessed_at DATETIME, 
	last_compiled_at DATETIME, 
	related_keys TEXT, 
	PRIMARY KEY (id), 
	CONSTRAINT uq_memory_key_scope UNIQUE (\"key\", scope, scope_id, source_kind), 
	CONSTRAINT ck_related_keys_length CHECK (related_keys IS NULL OR length(related_keys) < 1024)
);
CREATE UNIQUE INDEX uq_memory_key_scope_null ON memory_metadata (\"key\", scope, source_kind) WHERE scope_id IS NULL;
CREATE INDEX idx_memory_scope ON memory_metadata (scope, scope_id);
CREATE INDEX idx_memory_updated ON memory_metadata (updated_at);
CREATE INDEX idx_memory_type ON memory_metadata (memory_type);
CREATE TABLE project_aliases (
	alias VARCHAR NOT NULL, 
	project_id VARCHAR NOT NULL, 
	kind VARCHAR NOT NULL, 
	created_at DATETIME, 
	PRIMARY KEY (alias)
);
CREATE INDEX ix_project_aliases_project_id ON project_aliases (project_id);
INSERT INTO memory_metadata (id, \"key\", memory_type, scope, scope_id, file_path, tags, token_estimate, created_at,
    updated_at, last_accessed_at)
VALUES ('7d6fc0e6-f215-4448-8a63-6a2bd14e392f', 'prefer-pytest', 'feedback', 'global', NULL,
    '/tmp/h/memory/global/wiki/global/prefer-pytest.md', 'testing,python', 11, '2026-11-29 18:38:19.337303',
    '2026-11-29 18:38:26.024166', '2026-11-29 18:38:33'),
   ('ca9f9e0f-ce9d-4135-a8a2-4986456a93e6', 'build-commands', 'reference', 'project', 'fixture-proj',
    '/tmp/h/memory/fixture-proj/wiki/project/build-commands.md', 'build,cargo', 23, '2026-11-29 18:38:21.557424',
    '2026-11-29 18:38:27.147194', NULL);
INSERT INTO project_aliases VALUES ('d8002bad68a2', 'fixture-proj', 'cwd_hash', '2026-11-29 18:38:21.549350');",
    )
    .expect("reference schema");
}

#[test]
fn a_reference_database_gains_our_columns_and_keeps_its_rows() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = db_path(&dir);
    make_reference_db(&path);
    let index = Index::open(&path).expect("open reference db");

    let conn = Connection::open(&path).expect("raw");
    let cols = column_names(&conn, "memory_metadata");
    for c in ["content", "entry_count", "search_rowid", "related_keys", "source_kind"] {
        assert!(cols.iter().any(|x| x == c), "column {c} present: {cols:?}");
    }
    assert_eq!(index.count().expect("count"), 2);
    assert_eq!(
        index.unindexed_count().expect("unindexed"),
        2,
        "reference rows are not searchable yet"
    );

    let got = index
        .get(Scope::Global, None, &key("prefer-pytest"))
        .expect("get")
        .expect("row kept");
    assert_eq!(got.id, "7d6fc0e6-f215-4448-8a63-6a2bd14e392f");
    assert_eq!(got.memory_type, MemoryType::Feedback);
    assert_eq!(cao_index::format_db_ts(got.updated_at), "2026-11-29 18:38:26.024166");
    assert_eq!(
        got.last_accessed_at.map(cao_index::format_db_ts_secs).as_deref(),
        Some("2026-11-29 18:38:33")
    );
    assert_eq!((got.content.as_str(), got.entry_count, got.token_estimate), ("", 1, 11));
    let aliases = index.aliases("fixture-proj").expect("aliases");
    assert_eq!(aliases.len(), 1);
    assert_eq!(aliases[0].alias, "d8002bad68a2");

    // An upsert of the same identity adopts the reference row: same id, created_at kept, now searchable.
    let mut update = global("prefer-pytest", "Always use pytest fixtures", 0);
    update.memory_type = MemoryType::Feedback;
    let out = index.upsert(&update).expect("upsert");
    assert!(!out.created);
    assert_eq!(out.id, "7d6fc0e6-f215-4448-8a63-6a2bd14e392f");
    let adopted = index
        .get(Scope::Global, None, &key("prefer-pytest"))
        .expect("get")
        .expect("row");
    assert_eq!(
        cao_index::format_db_ts(adopted.created_at),
        "2026-11-29 18:38:19.337303"
    );
    assert_eq!(index.unindexed_count().expect("unindexed"), 1);
    assert_eq!(
        index
            .bm25_pool(&Visibility::all(), None, "fixtures", 5, &Bm25::DEFAULT)
            .expect("bm25")
            .len(),
        1
    );

    // What we write, the reference can read: the same text format and its columns filled.
    let (updated, tags): (String, String) = conn
        .query_row(
            "SELECT updated_at, tags FROM memory_metadata WHERE \"key\" = 'prefer-pytest'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("raw row");
    assert_eq!(updated, "2026-03-01 12:00:00.000000");
    assert_eq!(tags, "");

    // A rebuild of the search tables indexes the remaining reference row (key and tags only; no content yet).
    assert_eq!(index.rebuild_search_index().expect("rebuild"), 2);
    assert_eq!(index.unindexed_count().expect("unindexed"), 0);
    let hits = index
        .bm25_pool(&Visibility::all(), None, "cargo", 5, &Bm25::DEFAULT)
        .expect("bm25");
    assert_eq!(
        keys(&hits.into_iter().map(|(r, _)| r).collect::<Vec<_>>()),
        ["build-commands"]
    );
}

#[test]
fn the_reference_fixture_database_opens_and_keeps_every_row() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/reference-home/db/cli-agent-orchestrator.db");
    assert!(root.is_file(), "fixture database missing at {}", root.display());
    let dir = tempfile::tempdir().expect("temp dir");
    let path = db_path(&dir);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::copy(&root, &path).expect("copy fixture");
    let index = Index::open(&path).expect("open fixture copy");
    let rows = index.all_rows().expect("rows");
    assert_eq!(rows.len(), 7);
    assert!(index.invalid_rows().expect("invalid").is_empty());
    let session = rows
        .iter()
        .find(|r| r.key.as_str() == "current-task")
        .expect("session row");
    assert_eq!(
        (session.scope, session.scope_id.as_deref()),
        (Scope::Session, Some("sess-1"))
    );
    assert_eq!(index.aliases("fixture-proj").expect("aliases").len(), 1);
}

#[test]
fn a_rebuilt_shared_table_drops_stale_search_entries() {
    let db = TestDb::new();
    db.index.upsert(&global("alpha", "zebra crossing", 0)).expect("upsert");
    let dir_stamp = cao_core::fs::FileStamp {
        size: 1,
        changed_ns: 2,
        inode: 3,
    };
    db.index
        .set_wiki_dir_stamp(Scope::Global, None, Some(dir_stamp))
        .expect("dir stamp");
    let path = db.path();
    let TestDb { dir: _dir, index } = db;
    drop(index);
    {
        // Another program rebuilds memory_metadata with only the reference's columns (as its migrations can).
        let conn = Connection::open(&path).expect("raw");
        conn.execute_batch(
            "BEGIN;
             CREATE TABLE mm_new AS SELECT id, \"key\", memory_type, scope, scope_id, source_kind, file_path, tags,
                 source_provider, source_terminal_id, token_estimate, created_at, updated_at, access_count,
                 last_accessed_at, last_compiled_at, related_keys FROM memory_metadata;
             DROP TABLE memory_metadata;
             ALTER TABLE mm_new RENAME TO memory_metadata;
             COMMIT;",
        )
        .expect("rebuild");
    }
    let index = Index::open(&path).expect("reopen");
    assert_eq!(index.count().expect("count"), 1);
    assert_eq!(index.unindexed_count().expect("unindexed"), 1);
    assert!(
        index.wiki_dir_stamps().expect("dir stamps").is_empty(),
        "the rows' file stamps are gone, so no directory is known to agree with them"
    );
    assert!(
        index
            .bm25_pool(&Visibility::all(), None, "zebra", 5, &Bm25::DEFAULT)
            .expect("bm25")
            .is_empty()
    );
    index.upsert(&global("beta", "zebra again", 1)).expect("upsert");
    let hits = index
        .bm25_pool(&Visibility::all(), None, "zebra", 5, &Bm25::DEFAULT)
        .expect("bm25");
    assert_eq!(
        hits.len(),
        1,
        "only the re-stored row is found, no stale entry points at another row"
    );
    assert_eq!(hits[0].0.key.as_str(), "beta");
}

#[test]
fn a_corrupt_file_is_an_open_error_naming_the_path_and_the_recovery() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = db_path(&dir);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, vec![0x42u8; 8192]).expect("garbage");
    let err = Index::open(&path).expect_err("garbage is not a database");
    assert!(matches!(err, IndexError::Open { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(
        msg.contains("move the file aside") && msg.contains("rebuilt from the wiki files"),
        "{msg}"
    );
    assert!(!msg.contains('\n'), "one line: {msg}");
}

#[test]
fn an_unusable_directory_is_an_open_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let blocker = dir.path().join("db");
    std::fs::write(&blocker, b"a file where the db directory should be").expect("write");
    let err = Index::open(&blocker.join(cao_index::DB_FILE_NAME)).expect_err("cannot create dir");
    assert!(matches!(err, IndexError::Open { .. }), "{err:?}");
}

/// An index as the builds before the two-field lexical document left it: one-field FTS table of stemmed key, tags
/// and content, statistics without the context count, migration 9 not recorded.
fn downgrade_to_one_field_document(path: &Path) {
    let conn = Connection::open(path).expect("raw");
    conn.execute_batch(
        "DROP TABLE cao_memory_fts_vocab;
         DROP TABLE cao_memory_fts;
         CREATE VIRTUAL TABLE cao_memory_fts USING fts5(body, tokenize='ascii');
         CREATE VIRTUAL TABLE cao_memory_fts_vocab USING fts5vocab(cao_memory_fts, 'row');
         INSERT INTO cao_memory_fts (rowid, body)
             SELECT search_rowid, \"key\" || ' ' || content FROM memory_metadata WHERE search_rowid IS NOT NULL;
         ALTER TABLE cao_search_stats DROP COLUMN context_tokens;
         DELETE FROM cao_schema_migrations WHERE version = 9;",
    )
    .expect("downgrade");
}

#[test]
fn the_two_field_migration_reindexes_existing_rows_once() {
    let db = TestDb::new();
    let path = db.path();
    db.index
        .upsert(&global("first", "we painted a sunrise", 0))
        .expect("upsert");
    db.index
        .upsert(&global("second", "lovely colours", 10))
        .expect("upsert");
    drop(db.index);
    downgrade_to_one_field_document(&path);
    assert!(!versions(&path).contains(&9));

    let index = Index::open(&path).expect("reopen applies migration 9");
    assert_eq!(versions(&path), cao_index::known_migrations().collect::<Vec<_>>());
    let conn = Connection::open(&path).expect("raw");
    assert!(column_names(&conn, "cao_search_stats").contains(&"context_tokens".to_owned()));
    let (body, meta, near): (String, String, String) = conn
        .query_row(
            "SELECT f.body, f.meta, f.near FROM cao_memory_fts f JOIN memory_metadata m ON m.search_rowid = f.rowid
             WHERE m.\"key\" = 'second'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("re-indexed row");
    assert_eq!(body, "love colour", "content field: stemmed, stop words left out");
    assert!(
        meta.starts_with("second ") && meta.ends_with(" 2026"),
        "key and day: {meta}"
    );
    assert_eq!(near, "paint sunris", "the neighbour's text");
    let hits = index
        .bm25_pool(&Visibility::all(), None, "sunrise", 5, &Bm25::DEFAULT)
        .expect("bm25");
    assert_eq!(keys(&hits.iter().map(|h| h.0.clone()).collect::<Vec<_>>())[0], "first");
    drop(index);
    let before = schema_dump(&path);
    Index::open(&path).expect("reopen");
    assert_eq!(
        schema_dump(&path),
        before,
        "applied once: a second open changes nothing"
    );
}

#[test]
fn a_migration_another_build_recorded_is_kept_and_missing_known_ones_still_apply() {
    let db = TestDb::new();
    let path = db.path();
    db.index.upsert(&global("kept", "survives", 0)).expect("upsert");
    drop(db.index);
    downgrade_to_one_field_document(&path);
    // A build that knows a migration this one does not (version 1000) recorded it; this build's 9 is still missing.
    Connection::open(&path)
        .expect("raw")
        .execute_batch("INSERT INTO cao_schema_migrations (version, applied_at) VALUES (1000, '2026-01-01 00:00:00')")
        .expect("record");
    let index = Index::open(&path).expect("open");
    let mut want: Vec<i64> = cao_index::known_migrations().collect();
    want.push(1000);
    assert_eq!(versions(&path), want, "9 applied below the recorded 1000; 1000 kept");
    let hits = index
        .bm25_pool(&Visibility::all(), None, "survives", 5, &Bm25::DEFAULT)
        .expect("bm25");
    assert_eq!(hits.len(), 1, "the re-index ran");
}

/// The stored lexical documents, `(rowid, body, meta, near)` in rowid order.
fn lexical_documents(path: &Path) -> Vec<(i64, String, String, String)> {
    let conn = Connection::open(path).expect("raw");
    let mut stmt = conn
        .prepare("SELECT rowid, body, meta, near FROM cao_memory_fts ORDER BY rowid")
        .expect("prepare");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

#[test]
fn the_unindexed_neighbour_migration_keeps_every_document_and_score() {
    let db = TestDb::new();
    let path = db.path();
    for (i, (key, content)) in [
        ("first", "we painted a sunrise over the lake"),
        ("second", "lovely colours in the morning"),
        ("third", "the kayak trip was cold"),
    ]
    .into_iter()
    .enumerate()
    {
        db.index.upsert(&global(key, content, i as i64 * 10)).expect("upsert");
    }
    let score = |index: &Index| {
        index
            .bm25_pool(&Visibility::all(), None, "lovely sunrise kayak lake", 5, &Bm25::DEFAULT)
            .expect("bm25")
            .into_iter()
            .map(|(row, s)| (row.key, s))
            .collect::<Vec<_>>()
    };
    let scores = score(&db.index);
    drop(db.index);
    let documents = lexical_documents(&path);
    assert!(
        documents.iter().any(|d| d.3.contains("kayak")),
        "a neighbour's text is stored: {documents:?}"
    );
    // The index as builds before migration 14 left it: the neighbours' text in FTS5's inverted index.
    Connection::open(&path)
        .expect("raw")
        .execute_batch(
            "DROP TABLE cao_memory_fts_vocab;
             CREATE VIRTUAL TABLE old_fts USING fts5(body, meta, near, tokenize='ascii');
             INSERT INTO old_fts (rowid, body, meta, near) SELECT rowid, body, meta, near FROM cao_memory_fts;
             DROP TABLE cao_memory_fts;
             ALTER TABLE old_fts RENAME TO cao_memory_fts;
             CREATE VIRTUAL TABLE cao_memory_fts_vocab USING fts5vocab(cao_memory_fts, 'row');
             DELETE FROM cao_schema_migrations WHERE version = 14;",
        )
        .expect("downgrade");
    let count = |sql: &str| -> i64 {
        Connection::open(&path)
            .expect("raw")
            .query_row(sql, [], |r| r.get(0))
            .expect("count")
    };
    assert_eq!(
        count("SELECT doc FROM cao_memory_fts_vocab WHERE term = 'kayak'"),
        3,
        "before: the two neighbours' documents hold the word in FTS5's index too"
    );

    let index = Index::open(&path).expect("reopen applies migration 14");
    assert!(versions(&path).contains(&14));
    assert_eq!(lexical_documents(&path), documents, "every document copied as stored");
    assert_eq!(score(&index), scores, "the same pool and scores");
    assert_eq!(
        count("SELECT doc FROM cao_memory_fts_vocab WHERE term = 'kayak'"),
        1,
        "only the memory holding the word counts for FTS5 now"
    );
    let hits = index
        .bm25_pool(&Visibility::all(), None, "kayak", 5, &Bm25::DEFAULT)
        .expect("bm25");
    assert_eq!(hits.len(), 1, "a neighbour's word is never a hit");
    assert_eq!(hits[0].0.key.as_str(), "third");
}
