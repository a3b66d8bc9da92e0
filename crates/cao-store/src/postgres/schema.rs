//! The PostgreSQL schema: versioned migrations run at start, serialised across replicas by a transaction-level
//! advisory lock, each recorded in `cao_schema_migrations`. A database whose schema is newer than this build knows is
//! refused with a message naming both versions (an older replica must not write tables it does not understand).
//!
//! The tables mirror the embedded index's (cao-index `schema.rs`, same names and columns), with three differences:
//! - every text column is `text COLLATE "C"`: keys and timestamps order by bytes, as
//!   SQLite orders them, whatever the database's default collation;
//! - `scope_id` is `''` (never NULL) for memories without one, so every identity lookup is an index equality;
//! - the lexical documents live in plain tables: `cao_search_docs` (the three fields of each document, as stored
//!   in SQLite's FTS5 table, plus the substring-search text) and `cao_search_postings` (one row per distinct term of
//!   a document's own text, `body` and `meta`: what an FTS5 `{body meta}` match finds), next to the same term
//!   statistics (`cao_search_terms`, `cao_search_stats`) and search-rowid partitions;
//! - a memory's topic text (header and every entry, the topic file's bytes) is the row's `topic` column; the
//!   audit log is the `cao_audit_log` table.

use super::db::{Result, Sql};
use crate::error::StoreError;

/// The key of the advisory lock held while migrating.
const MIGRATION_LOCK: i64 = 0x6361_6f5f_6d69_6772;

/// Latest schema version this build knows.
pub(crate) const SCHEMA_VERSION: i64 = 1;

/// The migrations: `(version, SQL)`, applied in order. Never edit a released entry; append a new version.
const MIGRATIONS: &[(i64, &str)] = &[(1, V1)];

const V1: &str = r#"
CREATE TABLE memory_metadata (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id text COLLATE "C" PRIMARY KEY,
    "key" text COLLATE "C" NOT NULL,
    memory_type text COLLATE "C" NOT NULL,
    scope text COLLATE "C" NOT NULL,
    scope_id text COLLATE "C" NOT NULL,
    source_kind text COLLATE "C" NOT NULL DEFAULT 'native',
    file_path text COLLATE "C" NOT NULL,
    tags text COLLATE "C" NOT NULL,
    source_provider text COLLATE "C",
    source_terminal_id text COLLATE "C",
    token_estimate bigint,
    created_at text COLLATE "C",
    updated_at text COLLATE "C",
    access_count bigint NOT NULL DEFAULT 0,
    last_accessed_at text COLLATE "C",
    last_compiled_at text COLLATE "C",
    related_keys text COLLATE "C" CHECK (related_keys IS NULL OR octet_length(related_keys) < 1024),
    content text COLLATE "C" NOT NULL DEFAULT '',
    entry_count bigint NOT NULL DEFAULT 1,
    search_rowid bigint UNIQUE,
    topic text COLLATE "C" NOT NULL DEFAULT '',
    CONSTRAINT uq_memory_key_scope UNIQUE ("key", scope, scope_id, source_kind)
);
CREATE INDEX cao_idx_memory_recency ON memory_metadata (scope, scope_id, updated_at DESC, "key");
CREATE INDEX cao_idx_memory_scope_recency ON memory_metadata (scope, updated_at DESC, "key", scope_id);
CREATE INDEX cao_idx_memory_created ON memory_metadata (scope, scope_id, created_at, seq);
CREATE INDEX cao_idx_memory_updated ON memory_metadata (updated_at DESC, "key", scope, scope_id);
CREATE TABLE cao_search_docs (
    search_rowid bigint PRIMARY KEY,
    body text COLLATE "C" NOT NULL,
    meta text COLLATE "C" NOT NULL,
    near text COLLATE "C" NOT NULL,
    haystack text COLLATE "C" NOT NULL
);
CREATE TABLE cao_search_postings (
    term text COLLATE "C" NOT NULL,
    search_rowid bigint NOT NULL,
    PRIMARY KEY (term, search_rowid)
);
CREATE INDEX cao_search_postings_rowid ON cao_search_postings (search_rowid);
CREATE TABLE cao_search_terms (term text COLLATE "C" PRIMARY KEY, df bigint NOT NULL);
CREATE TABLE cao_search_stats (
    id integer PRIMARY KEY CHECK (id = 1),
    docs bigint NOT NULL,
    tokens bigint NOT NULL,
    context_tokens bigint NOT NULL
);
INSERT INTO cao_search_stats (id, docs, tokens, context_tokens) VALUES (1, 0, 0, 0);
CREATE TABLE cao_search_partitions (
    id bigint PRIMARY KEY,
    scope text COLLATE "C" NOT NULL,
    scope_id_key text COLLATE "C" NOT NULL,
    UNIQUE (scope, scope_id_key)
);
CREATE TABLE project_aliases (
    alias text COLLATE "C" PRIMARY KEY,
    project_id text COLLATE "C" NOT NULL,
    kind text COLLATE "C" NOT NULL,
    created_at text COLLATE "C"
);
CREATE INDEX ix_project_aliases_project_id ON project_aliases (project_id);
CREATE TABLE memory_relationships (
    id text COLLATE "C" PRIMARY KEY,
    scope text COLLATE "C" NOT NULL,
    scope_id text COLLATE "C" NOT NULL,
    source_key text COLLATE "C" NOT NULL,
    target_key text COLLATE "C" NOT NULL,
    type text COLLATE "C" NOT NULL,
    origin text COLLATE "C" NOT NULL,
    status text COLLATE "C" NOT NULL,
    confidence double precision CHECK (confidence IS NULL OR (confidence >= 0 AND confidence <= 1)),
    rank bigint,
    attributes_json text COLLATE "C" CHECK (attributes_json IS NULL OR octet_length(attributes_json) <= 2048),
    source_updated_at text COLLATE "C",
    created_at text COLLATE "C",
    updated_at text COLLATE "C",
    CONSTRAINT uq_memory_rel UNIQUE (scope, scope_id, source_key, target_key, type, origin)
);
CREATE INDEX idx_memory_rel_lookup ON memory_relationships (scope, scope_id, source_key);
CREATE INDEX cao_idx_memory_rel_target ON memory_relationships (scope, scope_id, target_key);
CREATE INDEX cao_idx_memory_rel_status ON memory_relationships (status, scope, scope_id, source_key);
CREATE TABLE cao_terminals (
    id text COLLATE "C" PRIMARY KEY,
    provider text COLLATE "C" NOT NULL,
    session_name text COLLATE "C",
    agent_profile text COLLATE "C",
    cwd text COLLATE "C",
    created_at text COLLATE "C" NOT NULL,
    updated_at text COLLATE "C" NOT NULL
);
CREATE TABLE cao_journal_meta (
    container text COLLATE "C" PRIMARY KEY,
    entries bigint NOT NULL DEFAULT 0,
    view_end bigint NOT NULL DEFAULT 0,
    view_bytes bigint NOT NULL DEFAULT 0
);
CREATE TABLE cao_journal_entries (
    container text COLLATE "C" NOT NULL,
    id bigint NOT NULL,
    kind text COLLATE "C" NOT NULL CHECK (kind IN ('note', 'delete')),
    scope text COLLATE "C" NOT NULL,
    scope_id text COLLATE "C" NOT NULL,
    "key" text COLLATE "C" NOT NULL,
    text text COLLATE "C" NOT NULL,
    writer_terminal text COLLATE "C",
    writer_session text COLLATE "C",
    writer_pid bigint,
    written_at text COLLATE "C" NOT NULL,
    purged boolean NOT NULL DEFAULT false,
    next_id bigint,
    PRIMARY KEY (container, id)
);
CREATE INDEX cao_journal_entries_memory ON cao_journal_entries (container, scope, scope_id, "key", id);
CREATE TABLE cao_journal_lines (
    container text COLLATE "C" NOT NULL,
    id bigint NOT NULL,
    n bigint NOT NULL,
    text text COLLATE "C" NOT NULL,
    writer text COLLATE "C" NOT NULL,
    written_at text COLLATE "C" NOT NULL,
    PRIMARY KEY (container, id, n)
);
CREATE TABLE cao_journal_unwritten (container text COLLATE "C" NOT NULL, id bigint NOT NULL, PRIMARY KEY (container, id));
CREATE TABLE cao_journal_view (
    container text COLLATE "C" NOT NULL,
    id bigint NOT NULL,
    n bigint NOT NULL,
    bytes bigint NOT NULL,
    PRIMARY KEY (container, id)
);
CREATE INDEX cao_journal_view_size ON cao_journal_view (container, n, id);
CREATE TABLE cao_journal_ready (
    container text COLLATE "C" NOT NULL,
    id bigint NOT NULL,
    n bigint NOT NULL,
    PRIMARY KEY (container, id, n)
);
CREATE TABLE cao_journal_leases (
    container text COLLATE "C" NOT NULL,
    id bigint NOT NULL,
    n bigint NOT NULL,
    holder text COLLATE "C" NOT NULL,
    expires_at bigint NOT NULL,
    PRIMARY KEY (container, id, n)
);
CREATE TABLE cao_journal_snapshots (
    container text COLLATE "C" NOT NULL,
    session_id text COLLATE "C" NOT NULL,
    taken_at_entry bigint NOT NULL,
    taken_at text COLLATE "C" NOT NULL,
    view text COLLATE "C" NOT NULL,
    reminded_to bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (container, session_id)
);
CREATE TABLE workflow_outcomes (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id text COLLATE "C" PRIMARY KEY,
    session_name text COLLATE "C" NOT NULL,
    workflow_name text COLLATE "C",
    task_label text COLLATE "C" NOT NULL,
    agent_profile text COLLATE "C",
    source_terminal_id text COLLATE "C",
    success boolean NOT NULL,
    score bigint,
    friction_notes text COLLATE "C" NOT NULL,
    created_at text COLLATE "C" NOT NULL
);
CREATE INDEX ix_workflow_outcomes_session_created ON workflow_outcomes (session_name, created_at);
CREATE INDEX ix_workflow_outcomes_agent_created ON workflow_outcomes (agent_profile, created_at);
CREATE TABLE cao_decisions_named (
    conversation text COLLATE "C" NOT NULL,
    scope text COLLATE "C" NOT NULL,
    scope_id text COLLATE "C" NOT NULL,
    "key" text COLLATE "C" NOT NULL,
    named_at text COLLATE "C" NOT NULL,
    PRIMARY KEY (conversation, scope, scope_id, "key")
);
CREATE INDEX cao_decisions_named_at ON cao_decisions_named (named_at);
CREATE TABLE cao_memory_vectors (
    memory_id text COLLATE "C" PRIMARY KEY,
    model text COLLATE "C" NOT NULL,
    dim bigint NOT NULL,
    vector bytea,
    seq bigint NOT NULL
);
CREATE INDEX cao_memory_vectors_seq ON cao_memory_vectors (seq);
CREATE TABLE cao_vector_state (
    id integer PRIMARY KEY CHECK (id = 1),
    seq bigint NOT NULL,
    removals bigint NOT NULL
);
INSERT INTO cao_vector_state (id, seq, removals) VALUES (1, 0, 0);
CREATE TABLE cao_audit_log (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    day text COLLATE "C" NOT NULL,
    line text COLLATE "C" NOT NULL
);
CREATE INDEX cao_audit_log_day ON cao_audit_log (day, seq);
"#;

/// Bring the database to this build's schema, under the migration lock (any number of replicas may start at once:
/// the first does the work, the others then find it done).
///
/// Errors: [`StoreError::Invalid`] when the database's schema is newer than [`SCHEMA_VERSION`] (nothing is
/// changed); the client's errors.
pub(crate) fn migrate(sql: &mut Sql<'_>, shown: &str) -> Result<()> {
    sql.exec("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    sql.batch(
        "CREATE TABLE IF NOT EXISTS cao_schema_migrations (version bigint PRIMARY KEY, applied_at text NOT NULL)",
    )?;
    let applied: Vec<i64> = sql
        .query("SELECT version FROM cao_schema_migrations ORDER BY version", &[])?
        .iter()
        .map(|r| super::db::col::<i64>(r, 0))
        .collect::<Result<_>>()?;
    if let Some(newest) = applied.iter().max()
        && *newest > SCHEMA_VERSION
    {
        return Err(StoreError::Invalid(format!(
            "the database {shown} has schema version {newest}, newer than this build knows ({SCHEMA_VERSION}); \
             upgrade cao on this machine before starting it against that database"
        )));
    }
    for (version, ddl) in MIGRATIONS.iter().filter(|(v, _)| !applied.contains(v)) {
        sql.batch(ddl)?;
        let now = cao_index::format_db_ts(chrono::Utc::now());
        sql.exec(
            "INSERT INTO cao_schema_migrations (version, applied_at) VALUES ($1, $2)",
            &[version, &now],
        )?;
        tracing::info!(version, database = shown, "applied a schema migration");
    }
    Ok(())
}

/// The newest schema version recorded in the database, `None` when it holds no cao schema (no
/// `cao_schema_migrations` table, or an empty one). Reads only: nothing is created or locked.
///
/// Errors: the client's errors.
pub(crate) fn applied_version(sql: &mut Sql<'_>) -> Result<Option<i64>> {
    let exists: bool = super::db::col(
        &sql.one("SELECT to_regclass('cao_schema_migrations') IS NOT NULL", &[])?,
        0,
    )?;
    if !exists {
        return Ok(None);
    }
    super::db::col(&sql.one("SELECT max(version) FROM cao_schema_migrations", &[])?, 0)
}
