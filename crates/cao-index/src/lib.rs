//! `cao-index`: the SQLite index of the cao memory system (layer 1; depends on `cao-core` only).
//!
//! The database lives at `<home>/db/cli-agent-orchestrator.db`, the same file the reference implementation uses.
//! It holds the shared `memory_metadata` table (the reference's exact DDL plus our columns `content`,
//! `entry_count` and `search_rowid`), the reference's `project_aliases` table, and our own tables, all named
//! `cao_*`: `cao_schema_migrations`, two FTS5 tables (`cao_memory_fts`: the two-field lexical document, `body` =
//! content terms, `meta` = key, tags and stored date terms and `near` = the neighbouring memories' terms (`meta`
//! and `near` are the context field; `near` is stored `UNINDEXED`: FTS5 never matches on it), with the `ascii` tokenizer; `cao_memory_trigram`: substring search), `cao_memory_fts_vocab`, `cao_search_terms` (document
//! frequency per term), `cao_search_stats` (indexed documents and the total terms of each field),
//! `cao_search_partitions` (search-rowid partitions per scope and scope id) and `cao_wiki_index_dirty` (the
//! index.md refresh queue). It also holds the reference's `memory_relationships` table: typed edges between memories
//! (see [`RelationshipRow`]; created with the reference's DDL when absent), and `cao_terminals`: terminals registered
//! with `cao-server` ([`TerminalRow`]), and the journal's `cao_journal_*` tables (entries, summary lines, view state,
//! leases, snapshots; see [`journal`]), `cao_memory_vectors` and `cao_vector_state`: dense vectors of memories
//! (see `vectors.rs`; [`Index::dense_top`]), `cao_wiki_dirs`: the stamps of wiki scope directories whose files agreed
//! with their rows (see [`WikiDirStamp`]), and the reference's `workflow_outcomes` table: outcomes reported through
//! the self-learning loop ([`OutcomeRow`]).
//! See `docs/decisions/0001-fts5-search-index.md` for why FTS5 and `docs/decisions/0009-lexical-ranking.md` for the
//! lexical document and ranking (FTS5 finds candidates; the caller's `LexicalScorer`, `cao_rank::Bm25`, scores them
//! from these statistics).
//!
//! Invariants:
//! - Every write is one `BEGIN IMMEDIATE` transaction covering the row, both FTS tables, the document count and
//!   the dirty mark of the row's wiki container, so readers never see a row without its search entries or the
//!   other way round.
//! - A native row is indexed iff its `search_rowid` is not NULL; then `cao_memory_fts` holds `body` =
//!   `index_terms(content)`, `meta` = `index_terms(key, tags, stored day)` and `near` = the first 100
//!   `index_terms` of the content of each of the `NEIGHBOUR_WINDOW` (2) memories stored just before and the 2 stored
//!   just after it in its scope and scope id (`cao_core::text::index_terms`: the reference's tokens without stop words, reduced to English Snowball
//!   stems), each joined by single spaces, and
//!   `cao_memory_trigram` holds `lowercase(key + " " + tags + " " + content)`, both under that rowid;
//!   `cao_search_stats` holds the number of such rows and the sum of each field's term counts (context = `meta` + `near`), and
//!   `cao_search_terms` the number of them containing each term in any column (FTS5's own statistics, `cao_memory_fts_vocab`, count `body` and `meta` only). The rowid's partition is the row's `(scope, scope_id)` and memory type. Rows written only by the reference are not indexed (and have `content = ""`) until they are
//!   re-stored or repaired ([`Index::unindexed_count`]).
//! - Only rows with `source_kind = 'native'` are read or written, except the vault rows (`source_kind = 'vault'`),
//!   which only the vault module writes ([`Index::vault_apply`]) and which a read returns only through a vault term
//!   of its [`Visibility`] ([`Visibility::allow_vault`]); an upsert keeps `id`, `created_at`, `access_count` and
//!   `last_accessed_at` of an existing identity. The vault tables are described in `vault.rs`.
//! - Datetimes are written in the reference's text format (`YYYY-MM-DD HH:MM:SS.ffffff`, naive UTC;
//!   `last_accessed_at` with whole seconds as SQLite's `datetime('now')`) and read in any of its shapes.
//! - Opening is safe with any number of concurrent openers: migrations run under `BEGIN IMMEDIATE` and only add.
//!   Every pooled connection uses WAL, `synchronous = NORMAL`, foreign keys and memory-mapped reads (1 GiB,
//!   docs/decisions/0004).
//! - [`Index::bm25_scores`] scores any row exactly as [`Index::bm25_pool`] would (same terms, corpus statistics and
//!   scorer), so rows from different pools share one lexical scale.
//! - No query text contains caller values: keys, ids and search terms are bound parameters (FTS5 query strings are
//!   built from quoted, escaped terms and bound too).
//!   Row limits are the one exception, written as integer literals (a bound `LIMIT` makes SQLite plan the statement
//!   again at every execution).

mod aliases;
mod decisions;
mod dirty;
mod edges;
pub mod error;
mod follow_up;
pub mod integrity;
pub mod journal;
mod lexical;
mod outcomes;
pub mod partition;
mod relationships;
mod row;
mod scan;
mod schema;
mod search;
mod stamps;
mod terminals;
mod vault;
mod vectors;
mod visibility;
mod write;

pub use aliases::{KNOWN_ALIAS_TTL, ProjectAlias};
pub use dirty::DirtyMark;
pub use edges::{EdgeIdentity, RelatedKeys};
pub use error::{IndexError, Result};
pub use follow_up::FollowUp;
pub use journal::{
    AppendHook, AppendWhen, Checkpoint, EntryKind, EntryRow, ImportCandidate, JournalMeta, JournalNote, JournalTx,
    JournalWriter, LeaseRow, LineRow, NewEntry, SnapshotRow, ViewItem, ViewRow,
};
pub use lexical::{CandidateSource, Doc, PoolBudget, QueryTerm, TermFilter, pool_top, score_doc, search_tokens};
pub use outcomes::{OutcomeFilter, OutcomeRow};
pub use relationships::{
    GLOBAL_SCOPE_ID, MAX_ATTRIBUTES_BYTES, ProducerEdge, ProducerReplace, RelOrigin, RelStatus, RelType,
    RelationshipFilter, RelationshipRecord, RelationshipRow, ReplaceOutcome, StatusChange, SupersedesLookup,
    check_edge_values, check_producer_edges,
};
pub use row::{
    ACCESS_MIN_INTERVAL, InvalidRow, MemoryRow, RowColumns, RowStamp, decode_columns, format_db_ts, format_db_ts_secs,
    parse_db_ts, token_estimate,
};
pub use scan::dot;
pub use schema::{SCHEMA_VERSION, known_migrations};
pub use search::{ListFilter, RecencyCursor, matches_all_terms};
pub use stamps::WikiDirStamp;
pub use terminals::TerminalRow;
pub use vault::{
    VaultApplied, VaultApply, VaultEdge, VaultFindingRow, VaultForgotten, VaultMetadata, VaultNoteRow, VaultReceiptRow,
    VaultStamp, VaultState,
};
pub use vectors::{MAX_VECTOR_DIM, VectorCounts, VectorWrite, check_vector, decode_vector, encode_vector};
pub use visibility::Visibility;
pub use write::UpsertOutcome;
pub use write::{
    NEIGHBOUR_TERMS_MAX, NEIGHBOUR_WINDOW, body_tokens, content_field, distinct_terms, meta_field, near_field,
    trigram_body,
};

use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::{Connection, TransactionBehavior};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// File name of the database inside `<home>/db/` (shared with the reference implementation).
pub const DB_FILE_NAME: &str = "cli-agent-orchestrator.db";

/// How long a statement waits for another process's lock before failing (`PRAGMA busy_timeout`).
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Maximum pooled connections per [`Index`].
pub const POOL_MAX_SIZE: u32 = 8;

/// A handle on the index database: a pool of up to [`POOL_MAX_SIZE`] connections. Cheap to clone; `Send + Sync`.
/// Clones share the pool, the write counter and the cache of recorded project aliases.
#[derive(Clone)]
pub struct Index {
    pool: r2d2::Pool<SqliteConnectionManager>,
    path: PathBuf,
    /// `BEGIN IMMEDIATE` transactions begun through this handle and its clones.
    writes: Arc<AtomicU64>,
    /// Project aliases known to be recorded (see `aliases.rs`).
    known_aliases: Arc<aliases::KnownAliases>,
    /// This process's copy of one model's vectors (see `vectors.rs`).
    vectors: Arc<std::sync::Mutex<vectors::VectorCache>>,
    /// The maintenance run after appends to a journal ([`Index::set_append_hook`]).
    append_hook: Arc<std::sync::OnceLock<journal::AppendHook>>,
}

impl fmt::Debug for Index {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Index")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Sets the per-connection pragmas on every pooled connection.
#[derive(Debug)]
struct Pragmas;

impl r2d2::CustomizeConnection<Connection, rusqlite::Error> for Pragmas {
    fn on_acquire(&self, conn: &mut Connection) -> std::result::Result<(), rusqlite::Error> {
        apply_pragmas(conn)
    }
}

/// `busy_timeout` first (so the journal-mode switch waits for other openers), then WAL, NORMAL sync, foreign keys.
fn apply_pragmas(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE_CAPACITY);
    let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")?;
    // Reads map the database file instead of copying pages through each connection's 2 MB cache (the database is
    // ~190 MB at 100k memories): HTTP recall throughput +30-40% at 1k-100k (docs/decisions/0004). SQLite keeps
    // writes going through the WAL, so WAL's multi-process safety is unchanged.
    let bytes = read_map_bytes();
    let _size: i64 = conn.query_row(&format!("PRAGMA mmap_size = {bytes}"), [], |r| r.get(0))?;
    Ok(())
}

/// Bytes of the database file each connection may memory-map for reads (1 GiB), unless the process lowered it
/// ([`limit_read_mapping`]).
const MMAP_SIZE: i64 = 1 << 30;

/// Page cache of a connection during a bulk write transaction ([`Index::write_bulk`]), in KiB (64 MiB).
const BULK_CACHE_KIB: u32 = 64 * 1024;

/// SQLite's default page cache per connection, in KiB (`PRAGMA cache_size = -2000`), restored after a bulk write.
const DEFAULT_CACHE_KIB: u32 = 2000;

/// The process's mapping limit for connections opened from now on ([`limit_read_mapping`]).
static READ_MAP_BYTES: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(MMAP_SIZE);

/// Lower, for the rest of this process, the bytes of the database file that each connection opened from now on
/// maps for reads (at most the default 1 GiB; `0` = read every page through SQLite's page cache). For one-shot
/// whole-corpus scans (`cao memory lint`, `heal`): a scan touches pages all over the file, and every mapped page it
/// touches (with the kernel's fault-around, its neighbours too) stays in the process's resident set, so a mapped
/// 100,000-memory index put ~380 MB of file pages in lint's RSS (`bench --only lint`). Call it before the index is
/// opened: connections already open keep their mapping.
pub fn limit_read_mapping(bytes: u64) {
    let bytes = i64::try_from(bytes).unwrap_or(MMAP_SIZE).min(MMAP_SIZE);
    READ_MAP_BYTES.store(bytes, std::sync::atomic::Ordering::SeqCst);
}

/// The mapping limit of connections opened now: the default 1 GiB, or what [`limit_read_mapping`] set.
pub(crate) fn read_map_bytes() -> i64 {
    READ_MAP_BYTES.load(std::sync::atomic::Ordering::SeqCst)
}

/// Prepared statements each connection keeps (`prepare_cached`). One store runs about 40 distinct statements (the
/// row, its search documents and term counts, the neighbours' re-index, the journal entry, the related-memory pass)
/// and a recall a dozen more; with rusqlite's default of 16 the least recently used ones were evicted and compiled
/// again on every call.
const STATEMENT_CACHE_CAPACITY: usize = 256;

impl Index {
    /// Open (creating when missing) the database at `db_path` and bring its schema up to date.
    ///
    /// Creates the parent directory (mode 0700) and a new database file with mode 0600. Coexists with a database the
    /// reference has written: missing tables are created with the reference's DDL and our columns are added with
    /// `ALTER TABLE`; existing rows are kept.
    ///
    /// Errors: [`IndexError::Open`] naming `db_path` when the directory cannot be created, the file cannot be opened,
    /// is not a SQLite database or is corrupt, or the migration fails.
    pub fn open(db_path: &Path) -> Result<Index> {
        let open_err = |reason: String| IndexError::Open {
            path: db_path.to_owned(),
            reason: match db_path.parent().and_then(cao_core::fs::fault::disk_state) {
                // SQLite says only "unable to open database file" when it cannot create its WAL files.
                Some(cao_core::fs::fault::StorageFault::ReadOnly) => format!("{reason} (Read-only file system)"),
                Some(cao_core::fs::fault::StorageFault::Full) => format!("{reason} (No space left on device)"),
                None => reason,
            },
        };
        if let Some(parent) = db_path.parent().filter(|p| !p.as_os_str().is_empty()) {
            cao_core::fs::create_private_dir_all(parent)
                .map_err(|e| open_err(format!("cannot create {}: {e}", parent.display())))?;
        }
        // SQLite gives the `-wal` and `-shm` files the mode of the database file, so they are owner-only too.
        cao_core::fs::create_private_file(db_path).map_err(|e| open_err(format!("cannot create the file: {e}")))?;
        // SQLite reports some lock conflicts between connections that open a new file at the same moment (WAL
        // switch, WAL recovery) without calling the busy handler, so the whole step is retried until BUSY_TIMEOUT.
        let started = std::time::Instant::now();
        loop {
            match open_and_migrate(db_path) {
                Ok(()) => break,
                Err(e) if is_busy(&e) && started.elapsed() < BUSY_TIMEOUT => {
                    std::thread::sleep(Duration::from_millis(25));
                }
                Err(e) => return Err(open_err(e.to_string())),
            }
        }
        let manager = SqliteConnectionManager::file(db_path);
        let pool = r2d2::Pool::builder()
            .max_size(POOL_MAX_SIZE)
            .min_idle(Some(0))
            .connection_timeout(Duration::from_secs(30))
            .connection_customizer(Box::new(Pragmas))
            .build(manager)
            .map_err(|e| open_err(e.to_string()))?;
        Ok(Index {
            pool,
            path: db_path.to_owned(),
            writes: Arc::new(AtomicU64::new(0)),
            known_aliases: Arc::default(),
            vectors: Arc::default(),
            append_hook: Arc::default(),
        })
    }

    /// The database file this index was opened on.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many write transactions (`BEGIN IMMEDIATE`, which take SQLite's write lock; the journal's included) this
    /// handle and its clones have begun since it was opened. For tests and diagnostics: read paths that need no write add nothing.
    pub fn write_transactions(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    /// Run `f` in one `BEGIN IMMEDIATE` transaction and commit it.
    fn write<T>(&self, f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut conn = self.pool.get()?;
        self.write_on(&mut conn, f)
    }

    /// [`Index::write`] on the connection `conn`.
    fn write_on<T>(&self, conn: &mut Connection, f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>) -> Result<T> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        injected_fault(&self.path)?;
        tx.commit()?;
        Ok(out)
    }

    /// [`Index::write`] for a bulk transaction (rows rebuilt from many files at once): the connection's page cache
    /// may hold [`BULK_CACHE_KIB`] of pages during it, so the transaction's dirty pages stay in memory until the
    /// commit writes each once (with the default 2 MB cache SQLite spills them to the write-ahead log mid-way and
    /// writes pages again); the default is restored afterwards, which frees the cache.
    fn write_bulk<T>(&self, f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut conn = self.pool.get()?;
        conn.execute_batch(&format!("PRAGMA cache_size = -{BULK_CACHE_KIB}"))?;
        let out = self.write_on(&mut conn, f);
        let restored = conn.execute_batch(&format!("PRAGMA cache_size = -{DEFAULT_CACHE_KIB}"));
        let out = out?;
        restored?;
        Ok(out)
    }

    /// Run `f` in one read transaction (one consistent snapshot).
    fn read<T>(&self, f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut conn = self.pool.get()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
        let out = f(&tx)?;
        tx.finish()?;
        Ok(out)
    }
}

/// One attempt to open the file, set the pragmas and, unless the schema is known current for this build
/// (`schema::is_current`: two reads, no lock), run the migrations under `BEGIN IMMEDIATE`.
fn open_and_migrate(db_path: &Path) -> rusqlite::Result<()> {
    let mut conn = Connection::open(db_path)?;
    apply_pragmas(&conn)?;
    if schema::is_current(&conn)? {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    schema::migrate(&tx)?;
    tx.commit()
}

/// The error SQLite gives a commit on a full or read-only file system (`SQLITE_FULL` / `SQLITE_READONLY`), when
/// such a fault is injected for `db_path` (`cao_core::fs::fault::inject`, tests only): the caller drops the
/// transaction, which rolls it back, as SQLite does when the commit fails for real.
///
/// Errors: the injected fault as a [`rusqlite::Error::SqliteFailure`].
pub(crate) fn injected_fault(db_path: &Path) -> rusqlite::Result<()> {
    use cao_core::fs::fault::StorageFault;
    let (code, message) = match cao_core::fs::fault::sqlite_commit_fault(db_path) {
        None => return Ok(()),
        Some(StorageFault::Full) => (rusqlite::ffi::SQLITE_FULL, "database or disk is full"),
        Some(StorageFault::ReadOnly) => (rusqlite::ffi::SQLITE_READONLY, "attempt to write a readonly database"),
    };
    Err(rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(code),
        Some(message.to_owned()),
    ))
}

/// Whether an error is a lock conflict with another connection (worth retrying).
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Serialises the tests that read or change the process-wide mapping limit (`cargo test` runs tests as
    /// threads of one process).
    static MAPPING: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// A process that lowered its mapping limit opens connections that map that much (none for `0`), the integrity
    /// check included, and reads still answer; a limit over the default is held to the default.
    #[test]
    fn a_lowered_read_mapping_applies_to_connections_opened_afterwards() {
        let _serial = MAPPING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let dir = tempfile::tempdir().expect("tempdir");
        limit_read_mapping(0);
        let ix = Index::open(&dir.path().join("db").join("t.db"));
        let lowered = ix.as_ref().map(|ix| {
            let mmap = ix.read(|tx| Ok(tx.query_row("PRAGMA mmap_size", [], |r| r.get::<_, i64>(0))?));
            (mmap, ix.quick_check())
        });
        limit_read_mapping(u64::MAX);
        let (mmap, check) = lowered.expect("open");
        assert_eq!(mmap.expect("read"), 0);
        assert_eq!(check.expect("quick check"), None);
        assert_eq!(read_map_bytes(), MMAP_SIZE, "a limit over the default is the default");
    }

    /// Every pooled connection maps the file for reads, and the bundled SQLite is built with the workspace's
    /// `LIBSQLITE3_FLAGS` (.cargo/config.toml): no process-wide memory manager, no allocation statistics.
    #[test]
    fn connections_use_mmap_and_the_lean_sqlite_build() {
        let _serial = MAPPING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let dir = tempfile::tempdir().expect("tempdir");
        let ix = Index::open(&dir.path().join("db").join("t.db")).expect("open");
        let (mmap, options) = ix
            .read(|tx| {
                let mmap: i64 = tx.query_row("PRAGMA mmap_size", [], |r| r.get(0))?;
                let mut stmt = tx.prepare("PRAGMA compile_options")?;
                let options = stmt
                    .query_map([], |r| r.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                Ok((mmap, options))
            })
            .expect("read");
        assert_eq!(mmap, MMAP_SIZE);
        assert!(
            !options.iter().any(|o| o == "ENABLE_MEMORY_MANAGEMENT"),
            "built with the memory manager: {options:?}"
        );
        assert!(options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"), "{options:?}");
    }
}
