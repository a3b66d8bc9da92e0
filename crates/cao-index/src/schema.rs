//! Schema: the reference's shared tables, our additions to them, and our own versioned migrations.
//!
//! The migration runs in one `BEGIN IMMEDIATE` transaction, so any number of processes may open the same file at
//! once: the first one to take the write lock does the work, the others then find nothing to do. It ends by
//! recording the schema cookie and this build's fingerprint (`cao_schema_check`); an open that reads both unchanged
//! (`is_current`) skips the migration and takes no write lock.

use rusqlite::{Connection, OptionalExtension};

/// The reference's `memory_metadata` DDL, byte for byte as SQLAlchemy emits it (reference notes, section a).
pub(crate) const MEMORY_METADATA_DDL: &str = "CREATE TABLE memory_metadata (\n\tid VARCHAR NOT NULL, \n\t\"key\" VARCHAR NOT NULL, \n\tmemory_type VARCHAR NOT NULL, \n\tscope VARCHAR NOT NULL, \n\tscope_id VARCHAR, \n\tsource_kind VARCHAR DEFAULT 'native' NOT NULL, \n\tfile_path VARCHAR NOT NULL, \n\ttags VARCHAR NOT NULL, \n\tsource_provider VARCHAR, \n\tsource_terminal_id VARCHAR, \n\ttoken_estimate INTEGER, \n\tcreated_at DATETIME, \n\tupdated_at DATETIME, \n\taccess_count INTEGER DEFAULT '0' NOT NULL, \n\tlast_accessed_at DATETIME, \n\tlast_compiled_at DATETIME, \n\trelated_keys TEXT, \n\tPRIMARY KEY (id), \n\tCONSTRAINT uq_memory_key_scope UNIQUE (\"key\", scope, scope_id, source_kind), \n\tCONSTRAINT ck_related_keys_length CHECK (related_keys IS NULL OR length(related_keys) < 1024)\n)";

/// The reference's partial unique index for identities without a scope id (created with a new table only: an old
/// database with duplicate rows would make it fail, and our writes look identities up before inserting anyway).
const MEMORY_NULL_UNIQUE_DDL: &str = "CREATE UNIQUE INDEX uq_memory_key_scope_null ON memory_metadata (\"key\", scope, source_kind) WHERE scope_id IS NULL";

/// The reference's secondary indexes (its `_migrate_memory_indexes`), created when missing.
const MEMORY_REFERENCE_INDEXES: &str = "
CREATE INDEX IF NOT EXISTS idx_memory_scope ON memory_metadata (scope, scope_id);
CREATE INDEX IF NOT EXISTS idx_memory_updated ON memory_metadata (updated_at);
CREATE INDEX IF NOT EXISTS idx_memory_type ON memory_metadata (memory_type);
";

/// The reference's `project_aliases` DDL (alias-only primary key) and its index.
pub(crate) const PROJECT_ALIASES_DDL: &str = "CREATE TABLE project_aliases (\n\talias VARCHAR NOT NULL, \n\tproject_id VARCHAR NOT NULL, \n\tkind VARCHAR NOT NULL, \n\tcreated_at DATETIME, \n\tPRIMARY KEY (alias)\n)";
const PROJECT_ALIASES_INDEX_DDL: &str = "CREATE INDEX ix_project_aliases_project_id ON project_aliases (project_id)";

/// Columns we add to `memory_metadata` when missing. All have defaults (or are nullable) so the reference's
/// inserts, which do not name them, keep working.
const EXTRA_COLUMNS: [(&str, &str); 6] = [
    ("content", "TEXT NOT NULL DEFAULT ''"),
    ("entry_count", "INTEGER NOT NULL DEFAULT 1"),
    // The topic file's stamp (`cao_core::fs::FileStamp`: size, ctime in ns, inode) when the row was last brought
    // in line with the file; NULL = unknown. The store compares it with the file to pick up edits made outside the
    // tool without reading unchanged files.
    ("file_size", "INTEGER"),
    ("file_ctime_ns", "INTEGER"),
    ("file_ino", "INTEGER"),
    // Key of the row in both FTS tables (see `crate::partition`). The implicit rowid of a table without an INTEGER
    // PRIMARY KEY may be renumbered by VACUUM, so the FTS tables are keyed by this column instead. NULL = not
    // indexed (a row only the reference has written; `cao memory repair` indexes it).
    ("search_rowid", "INTEGER"),
];

/// Our indexes on the shared table, created when missing.
const OUR_INDEXES: &str = "
CREATE UNIQUE INDEX IF NOT EXISTS cao_uq_memory_search_rowid ON memory_metadata (search_rowid);
CREATE INDEX IF NOT EXISTS cao_idx_memory_recency
    ON memory_metadata (scope, scope_id, updated_at DESC, \"key\" ASC);
CREATE INDEX IF NOT EXISTS cao_idx_memory_type_recency
    ON memory_metadata (scope, scope_id, memory_type, updated_at DESC, \"key\" ASC);
CREATE INDEX IF NOT EXISTS cao_idx_memory_scope_recency
    ON memory_metadata (scope, updated_at DESC, \"key\" ASC, scope_id ASC);
CREATE INDEX IF NOT EXISTS cao_idx_memory_created
    ON memory_metadata (scope, scope_id, created_at, \"key\");
CREATE INDEX IF NOT EXISTS cao_idx_memory_created_seq
    ON memory_metadata (scope, scope_id, created_at);
";

/// Our versioned migrations: `(version, SQL)`. Applied in order, each recorded in `cao_schema_migrations`.
/// Never edit a released entry; append a new version instead.
const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        "
CREATE VIRTUAL TABLE cao_memory_fts USING fts5(body, tokenize='ascii');
CREATE VIRTUAL TABLE cao_memory_fts_vocab USING fts5vocab(cao_memory_fts, 'row');
CREATE VIRTUAL TABLE cao_memory_trigram USING fts5(body, content='', contentless_delete=1, tokenize='trigram case_sensitive 1');
CREATE TABLE cao_search_stats (id INTEGER PRIMARY KEY CHECK (id = 1), docs INTEGER NOT NULL);
CREATE TABLE cao_search_partitions (id INTEGER PRIMARY KEY, scope TEXT NOT NULL, scope_id_key TEXT NOT NULL,
    UNIQUE (scope, scope_id_key));
INSERT INTO cao_search_stats (id, docs) VALUES (1, 0);
CREATE TABLE cao_wiki_index_dirty (container TEXT PRIMARY KEY, since TEXT NOT NULL, generation INTEGER NOT NULL DEFAULT 1);
",
    ),
    (
        2,
        // Total tokens of the BM25 documents (FTS5's own total), so BM25 contributions can be computed outside FTS5;
        // document frequency per token, maintained on write (the vocabulary table counts by walking doclists).
        "
CREATE TABLE cao_search_terms (term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO cao_search_terms (term, df) SELECT term, doc FROM cao_memory_fts_vocab;
ALTER TABLE cao_search_stats ADD COLUMN tokens INTEGER NOT NULL DEFAULT 0;
UPDATE cao_search_stats SET tokens = (
    SELECT coalesce(sum(CASE WHEN body = '' THEN 0 ELSE length(body) - length(replace(body, ' ', '')) + 1 END), 0)
    FROM cao_memory_fts);
",
    ),
    (
        3,
        // The reference's `memory_relationships` table (reference notes, section a; byte-identical DDL), created only
        // when absent because a reference-written database may already hold it, plus our index for purging by target.
        "
CREATE TABLE IF NOT EXISTS memory_relationships (
\tid VARCHAR NOT NULL, 
\tscope VARCHAR NOT NULL, 
\tscope_id VARCHAR NOT NULL, 
\tsource_key VARCHAR NOT NULL, 
\ttarget_key VARCHAR NOT NULL, 
\ttype VARCHAR NOT NULL, 
\torigin VARCHAR NOT NULL, 
\tstatus VARCHAR NOT NULL, 
\tconfidence FLOAT, 
\trank INTEGER, 
\tattributes_json TEXT, 
\tsource_updated_at DATETIME, 
\tcreated_at DATETIME, 
\tupdated_at DATETIME, 
\tPRIMARY KEY (id), 
\tCONSTRAINT uq_memory_rel UNIQUE (scope, scope_id, source_key, target_key, type, origin), 
\tCONSTRAINT ck_memory_rel_confidence_range CHECK (confidence IS NULL OR (confidence >= 0 AND confidence <= 1)), 
\tCONSTRAINT ck_memory_rel_attributes_size CHECK (attributes_json IS NULL OR length(attributes_json) <= 2048)
);
CREATE UNIQUE INDEX IF NOT EXISTS uq_memory_rel ON memory_relationships (scope, scope_id, source_key, target_key, type, origin);
CREATE INDEX IF NOT EXISTS idx_memory_rel_lookup ON memory_relationships (scope, scope_id, source_key);
CREATE INDEX IF NOT EXISTS cao_idx_memory_rel_target ON memory_relationships (scope, scope_id, target_key);
",
    ),
    (
        4,
        // Terminals registered with cao-server (`POST /terminals`), so a terminal id resolves across restarts.
        "
CREATE TABLE cao_terminals (id TEXT PRIMARY KEY, provider TEXT NOT NULL, session_name TEXT, agent_profile TEXT,
    cwd TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
",
    ),
    (
        5,
        // The journal (spec 001; `crate::journal` documents every column): per container, its entries in append
        // order, the summary lines of the tree, the view state, the lines the view is waiting for, the leases of
        // summarizing processes and the session snapshots. Tables holding text have rowids (long rows); the small
        // state tables are WITHOUT ROWID.
        "
CREATE TABLE cao_journal_meta (container TEXT PRIMARY KEY, entries INTEGER NOT NULL DEFAULT 0,
    view_end INTEGER NOT NULL DEFAULT 0, view_bytes INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
CREATE TABLE cao_journal_entries (container TEXT NOT NULL, id INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('note', 'delete')), scope TEXT NOT NULL, scope_id TEXT, \"key\" TEXT NOT NULL,
    text TEXT NOT NULL, writer_terminal TEXT, writer_session TEXT, writer_pid INTEGER, written_at TEXT NOT NULL,
    purged INTEGER NOT NULL DEFAULT 0, next_id INTEGER, UNIQUE (container, id));
CREATE INDEX cao_journal_entries_memory ON cao_journal_entries (container, scope, scope_id, \"key\", id);
CREATE TABLE cao_journal_lines (container TEXT NOT NULL, id INTEGER NOT NULL, n INTEGER NOT NULL,
    text TEXT NOT NULL, writer TEXT NOT NULL, written_at TEXT NOT NULL, UNIQUE (container, id, n));
CREATE TABLE cao_journal_unwritten (container TEXT NOT NULL, id INTEGER NOT NULL, PRIMARY KEY (container, id))
    WITHOUT ROWID;
CREATE TABLE cao_journal_view (container TEXT NOT NULL, id INTEGER NOT NULL, n INTEGER NOT NULL,
    bytes INTEGER NOT NULL, PRIMARY KEY (container, id)) WITHOUT ROWID;
CREATE INDEX cao_journal_view_size ON cao_journal_view (container, n, id);
CREATE TABLE cao_journal_ready (container TEXT NOT NULL, id INTEGER NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (container, id, n)) WITHOUT ROWID;
CREATE TABLE cao_journal_leases (container TEXT NOT NULL, id INTEGER NOT NULL, n INTEGER NOT NULL,
    holder TEXT NOT NULL, expires_at INTEGER NOT NULL, PRIMARY KEY (container, id, n)) WITHOUT ROWID;
CREATE TABLE cao_journal_snapshots (container TEXT NOT NULL, session_id TEXT NOT NULL,
    taken_at_entry INTEGER NOT NULL, taken_at TEXT NOT NULL, view TEXT NOT NULL, UNIQUE (container, session_id));
",
    ),
    (
        6,
        // The stamp of each wiki scope directory whose files all agreed with their rows when it was recorded
        // (`crate::stamps`): the store lists only directories whose stamp changed since.
        "
CREATE TABLE cao_wiki_dirs (scope TEXT NOT NULL, scope_id_key TEXT NOT NULL, size INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL, ino INTEGER NOT NULL, PRIMARY KEY (scope, scope_id_key)) WITHOUT ROWID;
",
    ),
    (
        7,
        // How far a session's `# Memory updated` reminder has delivered entries (the reminder lists each entry
        // written elsewhere once; a new snapshot resets it).
        "ALTER TABLE cao_journal_snapshots ADD COLUMN reminded_to INTEGER NOT NULL DEFAULT 0;",
    ),
    (
        8,
        // The self-learning loop's outcomes (spec 004 "Phase 1 — outcome capture"; `crate::outcomes` documents every
        // column). The table keeps the reference's name, so it is created only when absent (a reference-written
        // database may already hold it), with the two indexes the listing uses: by session and by agent profile,
        // newest first.
        "
CREATE TABLE IF NOT EXISTS workflow_outcomes (
\tid VARCHAR NOT NULL, 
\tsession_name VARCHAR NOT NULL, 
\tworkflow_name VARCHAR, 
\ttask_label VARCHAR NOT NULL, 
\tagent_profile VARCHAR, 
\tsource_terminal_id VARCHAR, 
\tsuccess BOOLEAN NOT NULL, 
\tscore INTEGER, 
\tfriction_notes TEXT NOT NULL, 
\tcreated_at DATETIME NOT NULL, 
\tPRIMARY KEY (id)
);
CREATE INDEX IF NOT EXISTS ix_workflow_outcomes_session_created ON workflow_outcomes (session_name, created_at);
CREATE INDEX IF NOT EXISTS ix_workflow_outcomes_agent_created ON workflow_outcomes (agent_profile, created_at);
",
    ),
    (
        9,
        // The two-field lexical document (docs/decisions/0009-lexical-ranking.md): the BM25 table holds `body` (the
        // content), `meta` (key, tags, stored date) and `near` (the neighbouring memories' text), all as indexed
        // terms without stop words; `meta` and `near` together are the context field, whose length the statistics
        // count next to the content's. The search tables are emptied here and refilled from the stored rows right
        // after this step (`crate::write::rebuild_in`). `near` is stored unindexed (as migration 14 makes it for
        // indexes that took this step before).
        "
DROP TABLE IF EXISTS cao_memory_fts_vocab;
DROP TABLE IF EXISTS cao_memory_fts;
CREATE VIRTUAL TABLE cao_memory_fts USING fts5(body, meta, near UNINDEXED, tokenize='ascii');
CREATE VIRTUAL TABLE cao_memory_fts_vocab USING fts5vocab(cao_memory_fts, 'row');
ALTER TABLE cao_search_stats ADD COLUMN context_tokens INTEGER NOT NULL DEFAULT 0;
",
    ),
    (
        10,
        // The memories recall advice has named per conversation (spec 001 "Relevance from the decision engine": a
        // memory is named once per conversation); `crate::decisions` documents the columns.
        "
CREATE TABLE cao_decisions_named (conversation TEXT NOT NULL, scope TEXT NOT NULL, scope_id TEXT NOT NULL,
    \"key\" TEXT NOT NULL, named_at TEXT NOT NULL, PRIMARY KEY (conversation, scope, scope_id, \"key\")) WITHOUT ROWID;
CREATE INDEX cao_decisions_named_at ON cao_decisions_named (named_at);
",
    ),
    (
        11,
        // Dense vectors of memories and the change counters readers catch up from (`crate::vectors` documents the
        // columns; docs/decisions/0011-dense-recall.md). Created only when absent.
        "
CREATE TABLE IF NOT EXISTS cao_memory_vectors (memory_id TEXT PRIMARY KEY, model TEXT NOT NULL,
    dim INTEGER NOT NULL, vector BLOB, seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS cao_memory_vectors_seq ON cao_memory_vectors (seq);
CREATE TABLE IF NOT EXISTS cao_vector_state (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL,
    removals INTEGER NOT NULL);
INSERT OR IGNORE INTO cao_vector_state (id, seq, removals) VALUES (1, 0, 0);
",
    ),
    (
        12,
        // Indexes the operator UI's lists page on. The relationship queue lists one status in the listing order
        // (`crate::relationships`: scope, scope id, source, rank with NULL last, target, type, origin), so a page is
        // an index walk instead of a sort of every edge of that status; the containers overview counts rows per
        // `(scope, scope_id)` of one source kind, which this index answers without reading the rows.
        "
CREATE INDEX IF NOT EXISTS cao_idx_memory_rel_status ON memory_relationships
    (status, scope, scope_id, source_key, rank IS NULL, rank, target_key, type, origin);
CREATE INDEX IF NOT EXISTS cao_idx_memory_scope_kind ON memory_metadata (scope, scope_id, source_kind);
",
    ),
    (
        13,
        // The context field takes the text of two neighbours on each side instead of one (`NEIGHBOUR_WINDOW`,
        // docs/decisions/0009-lexical-ranking.md): no schema change; the indexed rows are re-indexed right after
        // this step (`REINDEX_WITH`).
        "-- re-index only",
    ),
    (
        14,
        // The neighbours' text (`near`) is stored with each lexical document but no longer indexed by FTS5
        // (`UNINDEXED`): nothing matches on it (a match needs a term of the memory's own text, `{body meta}`), its
        // term statistics live in `cao_search_terms` and `cao_search_stats`, and indexing it made every doclist
        // about five times longer and every store re-index its neighbours' postings (docs/decisions/0009). The
        // documents are copied as stored, so scores do not change.
        "
DROP TABLE IF EXISTS cao_memory_fts_vocab;
CREATE VIRTUAL TABLE cao_memory_fts_v14 USING fts5(body, meta, near UNINDEXED, tokenize='ascii');
INSERT INTO cao_memory_fts_v14 (rowid, body, meta, near) SELECT rowid, body, meta, near FROM cao_memory_fts;
DROP TABLE cao_memory_fts;
ALTER TABLE cao_memory_fts_v14 RENAME TO cao_memory_fts;
CREATE VIRTUAL TABLE cao_memory_fts_vocab USING fts5vocab(cao_memory_fts, 'row');
",
    ),
    (
        15,
        // Rows created within one second are each other's neighbours in insertion order (the rowid, read through
        // `cao_idx_memory_created_seq`), not in key order (`crate::write`): no schema change here (the index is one
        // of ours, created at every open when missing); the indexed rows are re-indexed right after this step.
        "-- re-index only",
    ),
];

/// The migrations after which every indexed row is re-tokenised from its stored text (once, however many ran).
const REINDEX_WITH: [i64; 3] = [9, 13, 15];

/// Latest schema version this build knows.
pub const SCHEMA_VERSION: i64 = 15;

/// The versions of every migration this build knows, ascending (not necessarily contiguous: a version is a name,
/// and builds made from different lines of work may know different sets).
pub fn known_migrations() -> impl Iterator<Item = i64> {
    MIGRATIONS.iter().map(|(v, _)| *v)
}

/// Bring the database to the current schema. Must run inside `BEGIN IMMEDIATE`.
///
/// Every known migration whose version is not yet recorded in `cao_schema_migrations` runs, in ascending order,
/// and is recorded; a version missing below the highest recorded one (a migration another build did not know)
/// is applied too, so migrations that do not depend on each other may be released in either order.
pub(crate) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS cao_schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
    )?;
    conn.execute_batch(SCHEMA_CHECK_DDL)?;
    reconcile_shared_tables(conn)?;
    // The vault tables (spec/vault-facts.md section 11) are created when missing at every open, like the shared
    // tables: the reference may have created them already.
    crate::vault::ensure_tables(conn)?;
    let applied: Vec<i64> = {
        let mut stmt = conn.prepare("SELECT version FROM cao_schema_migrations")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let mut reindex = false;
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| !applied.contains(v)) {
        conn.execute_batch(sql)?;
        conn.execute(
            "INSERT INTO cao_schema_migrations (version, applied_at) VALUES (?1, strftime('%Y-%m-%d %H:%M:%f', 'now'))",
            [version],
        )?;
        reindex |= REINDEX_WITH.contains(version);
    }
    if reindex {
        crate::write::rebuild_in(conn, crate::write::Rebuild::Indexed).map_err(|e| match e {
            crate::IndexError::Sqlite(e) => e,
            // Only the partition allocator's capacity error is possible here (billions of rows).
            other => rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
                Some(other.to_string()),
            ),
        })?;
    }
    record_current(conn)
}

/// `cao_schema_check`: the schema cookie (`PRAGMA schema_version`) the database had when [`migrate`] last finished,
/// and the [`fingerprint`] of the build that ran it.
const SCHEMA_CHECK_DDL: &str = "CREATE TABLE IF NOT EXISTS cao_schema_check (id INTEGER PRIMARY KEY CHECK (id = 1), \
     schema_cookie INTEGER NOT NULL, fingerprint TEXT NOT NULL)";

/// A digest of every statement [`migrate`] may run (the reference's DDL, our columns, indexes and migrations, the
/// vault tables): a build whose migration differs in any way has another fingerprint, so it migrates on its first
/// open instead of trusting what another build recorded. Hex SHA-256.
fn fingerprint() -> &'static str {
    static FINGERPRINT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        let fixed = [
            MEMORY_METADATA_DDL,
            MEMORY_NULL_UNIQUE_DDL,
            MEMORY_REFERENCE_INDEXES,
            PROJECT_ALIASES_DDL,
            PROJECT_ALIASES_INDEX_DDL,
            OUR_INDEXES,
            SCHEMA_CHECK_DDL,
        ];
        let columns = EXTRA_COLUMNS.iter().flat_map(|(n, d)| [*n, *d]);
        let migrations = MIGRATIONS.iter().map(|(_, sql)| *sql);
        for text in fixed
            .into_iter()
            .chain(columns)
            .chain(migrations)
            .chain(crate::vault::ddl_texts())
        {
            h.update(text.as_bytes());
            h.update([0]);
        }
        for (v, _) in MIGRATIONS {
            h.update(v.to_le_bytes());
        }
        for v in REINDEX_WITH {
            h.update(v.to_le_bytes());
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    });
    FINGERPRINT.as_str()
}

/// Record that the schema is current for this build (the last step of [`migrate`], inside its transaction): every
/// DDL statement has run, so the cookie read now is the one the commit leaves.
fn record_current(conn: &Connection) -> rusqlite::Result<()> {
    let cookie: i64 = conn.query_row("PRAGMA schema_version", [], |r| r.get(0))?;
    conn.execute(
        "INSERT INTO cao_schema_check (id, schema_cookie, fingerprint) VALUES (1, ?1, ?2)
         ON CONFLICT (id) DO UPDATE SET schema_cookie = excluded.schema_cookie, fingerprint = excluded.fingerprint",
        rusqlite::params![cookie, fingerprint()],
    )?;
    Ok(())
}

/// Whether [`migrate`] has nothing to do, decided by reading only (no write lock, so the open of a process that
/// finds the schema current costs three reads instead of a write transaction and a dozen schema checks): the
/// database's schema cookie is the one recorded when this build's migration last finished, and every migration
/// this build knows is recorded as applied. SQLite changes the
/// cookie at every schema change by any program (the reference creating or rebuilding a table, a `VACUUM`), so
/// any such change, or another build's migration, makes this `false` and the open migrates as before.
///
/// Errors: SQLite errors reading the database (not a database, locked past the busy timeout).
pub(crate) fn is_current(conn: &Connection) -> rusqlite::Result<bool> {
    // One read transaction, so the cookie and the recorded row are of one snapshot.
    let tx = conn.unchecked_transaction()?;
    let cookie: i64 = tx.query_row("PRAGMA schema_version", [], |r| r.get(0))?;
    if !table_exists(&tx, "cao_schema_check")? {
        return Ok(false);
    }
    let recorded: Option<(i64, String)> = tx
        .query_row(
            "SELECT schema_cookie, fingerprint FROM cao_schema_check WHERE id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    if !recorded.is_some_and(|(c, f)| c == cookie && f == fingerprint()) {
        return Ok(false);
    }
    // Every known migration recorded (a row removed by hand is a migration to run again).
    let applied: Vec<i64> = tx
        .prepare("SELECT version FROM cao_schema_migrations")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(known_migrations().all(|v| applied.contains(&v)))
}

fn table_exists(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [name],
        |_| Ok(()),
    )
    .optional()
    .map(|o| o.is_some())
}

fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<(String, i64)>> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info(\"{table}\")"))?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(1)?, r.get::<_, i64>(5)?)))?;
    rows.collect()
}

/// Shape the tables we share with the reference: create them as the reference would, add our columns, and
/// recover from a rebuild of `memory_metadata` by another program (which drops our columns).
fn reconcile_shared_tables(conn: &Connection) -> rusqlite::Result<()> {
    if !table_exists(conn, "memory_metadata")? {
        conn.execute_batch(MEMORY_METADATA_DDL)?;
        conn.execute_batch(MEMORY_NULL_UNIQUE_DDL)?;
    }
    conn.execute_batch(MEMORY_REFERENCE_INDEXES)?;

    let have: Vec<String> = columns(conn, "memory_metadata")?.into_iter().map(|(n, _)| n).collect();
    let mut lost_search_keys = false;
    for (name, decl) in EXTRA_COLUMNS {
        if !have.iter().any(|c| c == name) {
            conn.execute_batch(&format!("ALTER TABLE memory_metadata ADD COLUMN {name} {decl}"))?;
            lost_search_keys |= name == "search_rowid";
        }
    }
    if lost_search_keys && table_exists(conn, "cao_memory_fts")? {
        // The table was rebuilt without our columns: the FTS entries point at nothing now. Start the search
        // tables empty; rows become searchable again as they are re-stored or repaired.
        conn.execute_batch(
            "DELETE FROM cao_memory_fts;
             INSERT INTO cao_memory_trigram (cao_memory_trigram) VALUES ('delete-all');
             UPDATE cao_search_stats SET docs = 0;
             DELETE FROM cao_search_partitions;",
        )?;
        // Only present from version 2 on; migration 2 computes it from the (now empty) table otherwise.
        let stats = columns(conn, "cao_search_stats")?;
        if stats.iter().any(|(n, _)| n == "tokens") {
            conn.execute_batch("UPDATE cao_search_stats SET tokens = 0; DELETE FROM cao_search_terms;")?;
        }
        if stats.iter().any(|(n, _)| n == "context_tokens") {
            conn.execute_batch("UPDATE cao_search_stats SET context_tokens = 0;")?;
        }
        // The recorded file stamps went with the columns: no directory is known to agree with its rows.
        if table_exists(conn, "cao_wiki_dirs")? {
            conn.execute_batch("DELETE FROM cao_wiki_dirs")?;
        }
    }
    conn.execute_batch(OUR_INDEXES)?;

    if table_exists(conn, "project_aliases")? {
        let pk: Vec<String> = columns(conn, "project_aliases")?
            .into_iter()
            .filter(|(_, pk)| *pk > 0)
            .map(|(n, _)| n)
            .collect();
        if pk != ["alias"] {
            // A pre-2.5 composite primary key: the reference drops and recreates it too (it is a cache rebuilt on
            // every project resolution).
            conn.execute_batch("DROP TABLE project_aliases")?;
        }
    }
    if !table_exists(conn, "project_aliases")? {
        conn.execute_batch(PROJECT_ALIASES_DDL)?;
        conn.execute_batch(PROJECT_ALIASES_INDEX_DDL)?;
    }
    Ok(())
}
