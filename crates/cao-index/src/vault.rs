//! The vault tables: the derived state of an Obsidian vault projected into memory (spec/vault-facts.md section 11
//! "Database tables"), and the vault rows of `memory_metadata` (`source_kind = 'vault'`) with their search entries.
//!
//! Tables (created at every open when missing; rows of one vault are keyed by `vault_id`; a global scope id is
//! `''` here and NULL in `memory_metadata`, as the reference stores them):
//! - `vault_note`: one row per listed note of the last applied reconcile (every status), keyed by `note_uid`,
//!   unique by `(vault_id, vault_relpath)` and `(vault_id, scope, scope_id, cao_key)`; our columns `stamp_dev`,
//!   `stamp_ino`, `stamp_ctime_ns` keep the listing stamp, so an unchanged vault is recognised without reading a note.
//! - `vault_exclusion`: identities forgotten by an operator or agent (kept de-indexed; survive rebuild).
//! - `vault_note_alias`: former paths of renamed notes.
//! - `vault_finding`: the findings of the last applied run, folded per `(path, code, severity)`.
//! - `vault_recall_counter`: durable counters (`path_escapes_root`, `recall_body_truncated`, ...).
//! - `vault_migration_receipt`: native memories moved into the managed folder (`cao memory vault migrate`).
//! - `vault_projection` (ours): one random token per vault, replaced in the same transaction as every write of
//!   the vault's note rows ([`Index::vault_apply`], [`Index::vault_forget`]), so a reader that remembers the token
//!   knows, with one row read, whether any process changed the projection since ([`Index::vault_projection_token`]).
//!   A database recreated from scratch holds no token, so a remembered one never matches it.
//!
//! A reconcile is applied by [`Index::vault_apply`] in one transaction: the note, exclusion, alias and finding rows
//! are replaced with the plan's; vault metadata rows are updated only where they changed (their search entries are
//! rebuilt with them, in partitions of their own: `crate::partition`); edges of origin `vault` are brought to the
//! plan's set keeping the id of every edge that stays (so edges are stable across repeated applies), and edges an
//! operator rejected or deleted are neither changed nor removed.

use crate::relationships::{GLOBAL_SCOPE_ID, RelStatus, RelType};
use crate::row::{MemoryRow, ROW_COLUMNS, decode_row, format_db_ts, parse_db_ts};
use crate::write::{SearchText, index_search, unindex_search};
use crate::{Index, IndexError, Result, partition};
use cao_core::vault::{Exclusion, IndexedNote, KeySource, NoteAlias, NoteStatus};
use cao_core::{Key, Scope, SourceKind};
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use std::collections::{HashMap, HashSet};

/// The vault tables' DDL, created when missing (a database the reference wrote may already hold its own).
const VAULT_DDL: &str = "
CREATE TABLE IF NOT EXISTS vault_note (
    note_uid VARCHAR NOT NULL PRIMARY KEY,
    vault_id VARCHAR NOT NULL,
    vault_relpath VARCHAR NOT NULL,
    scope VARCHAR NOT NULL,
    scope_id VARCHAR NOT NULL DEFAULT '',
    cao_key VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    managed BOOLEAN NOT NULL DEFAULT 0,
    key_source VARCHAR NOT NULL,
    key_source_reason VARCHAR,
    content_sha256 VARCHAR,
    frontmatter_sha256 VARCHAR,
    size_bytes INTEGER,
    mtime_ns INTEGER,
    last_reconciled_at DATETIME,
    CONSTRAINT uq_vault_note_identity UNIQUE (vault_id, scope, scope_id, cao_key),
    CONSTRAINT uq_vault_note_relpath UNIQUE (vault_id, vault_relpath)
);
CREATE TABLE IF NOT EXISTS vault_exclusion (
    vault_id VARCHAR NOT NULL,
    scope VARCHAR NOT NULL,
    scope_id VARCHAR NOT NULL DEFAULT '',
    cao_key VARCHAR NOT NULL,
    last_known_relpath VARCHAR NOT NULL,
    content_sha256 VARCHAR,
    key_source VARCHAR NOT NULL,
    key_source_reason VARCHAR,
    created_at DATETIME,
    PRIMARY KEY (vault_id, scope, scope_id, cao_key)
);
CREATE TABLE IF NOT EXISTS vault_note_alias (
    vault_id VARCHAR NOT NULL,
    former_relpath VARCHAR NOT NULL,
    cao_key VARCHAR NOT NULL,
    scope VARCHAR NOT NULL,
    scope_id VARCHAR NOT NULL DEFAULT '',
    content_sha256 VARCHAR,
    created_at DATETIME,
    PRIMARY KEY (vault_id, former_relpath)
);
CREATE TABLE IF NOT EXISTS vault_finding (
    id VARCHAR NOT NULL PRIMARY KEY,
    vault_id VARCHAR NOT NULL,
    vault_relpath VARCHAR NOT NULL,
    code VARCHAR NOT NULL,
    severity VARCHAR NOT NULL,
    detail VARCHAR NOT NULL,
    reconcile_run_id VARCHAR NOT NULL,
    created_at DATETIME
);
CREATE INDEX IF NOT EXISTS ix_vault_finding_vault ON vault_finding (vault_id, vault_relpath);
CREATE TABLE IF NOT EXISTS vault_recall_counter (
    vault_id VARCHAR NOT NULL,
    name VARCHAR NOT NULL,
    value INTEGER NOT NULL DEFAULT 0,
    updated_at DATETIME,
    PRIMARY KEY (vault_id, name)
);
CREATE TABLE IF NOT EXISTS vault_migration_receipt (
    receipt_id VARCHAR NOT NULL PRIMARY KEY,
    vault_id VARCHAR NOT NULL,
    scope VARCHAR NOT NULL,
    scope_id VARCHAR NOT NULL DEFAULT '',
    cao_key VARCHAR NOT NULL,
    native_relpath VARCHAR NOT NULL,
    native_content_sha256 VARCHAR,
    managed_relpath VARCHAR NOT NULL,
    vault_note_uid VARCHAR NOT NULL,
    published_content_sha256 VARCHAR,
    superseded_edges TEXT NOT NULL DEFAULT '[]',
    status VARCHAR NOT NULL,
    created_at DATETIME,
    updated_at DATETIME
);
CREATE TABLE IF NOT EXISTS vault_projection (
    vault_id VARCHAR NOT NULL PRIMARY KEY,
    token VARCHAR NOT NULL
);
";

/// Our columns of `vault_note`, added when missing: the listing stamp (device, inode, ctime) beside the
/// reference's size and mtime.
const VAULT_NOTE_EXTRA: [(&str, &str); 3] = [
    ("stamp_dev", "INTEGER"),
    ("stamp_ino", "INTEGER"),
    ("stamp_ctime_ns", "INTEGER"),
];

/// The text of every statement [`ensure_tables`] may run, for the schema's fingerprint (`crate::schema`).
pub(crate) fn ddl_texts() -> impl Iterator<Item = &'static str> {
    std::iter::once(VAULT_DDL).chain(VAULT_NOTE_EXTRA.iter().flat_map(|(n, d)| [*n, *d]))
}

/// Create the vault tables when missing and add our columns. Inside the open's migration transaction.
pub(crate) fn ensure_tables(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(VAULT_DDL)?;
    let have: Vec<String> = conn
        .prepare("PRAGMA table_info(vault_note)")?
        .query_map([], |r| r.get::<_, String>(1))?
        .collect::<rusqlite::Result<_>>()?;
    for (name, decl) in VAULT_NOTE_EXTRA {
        if !have.iter().any(|c| c == name) {
            conn.execute_batch(&format!("ALTER TABLE vault_note ADD COLUMN {name} {decl}"))?;
        }
    }
    Ok(())
}

/// The stored scope id of a vault table (`''` for global).
fn stored_id(scope_id: Option<&str>) -> &str {
    scope_id.unwrap_or(GLOBAL_SCOPE_ID)
}

/// A scope id as read from a vault table (`''` = none).
fn read_id(stored: String) -> Option<String> {
    (!stored.is_empty()).then_some(stored)
}

/// A file's listing stamp beyond size and mtime: device, inode, change time (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VaultStamp {
    /// Device.
    pub dev: i64,
    /// Inode.
    pub ino: i64,
    /// Change time, nanoseconds since the Unix epoch.
    pub ctime_ns: i64,
}

/// One `vault_note` row: the planner's row ([`IndexedNote`], one definition in `cao-core`) and the columns only the
/// store keeps. A stored row whose scope or status is not one we know is left out when read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VaultNoteRow {
    /// The row's reference columns.
    pub note: IndexedNote,
    /// The run that wrote the row.
    pub last_reconciled_at: Option<DateTime<Utc>>,
    /// The listing stamp (our columns).
    pub stamp: Option<VaultStamp>,
}

/// The durable vault state of one vault: its `vault_note`, `vault_exclusion` and `vault_note_alias` rows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VaultState {
    /// Notes, by path.
    pub notes: Vec<VaultNoteRow>,
    /// Exclusions, by scope, scope id and key.
    pub exclusions: Vec<Exclusion>,
    /// Aliases, by former path.
    pub aliases: Vec<NoteAlias>,
}

/// One `vault_finding` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VaultFindingRow {
    /// `sha256("finding" NUL run_id NUL code NUL path NUL severity)`.
    pub id: String,
    /// Vault-relative path.
    pub relpath: String,
    /// Finding code.
    pub code: String,
    /// `info`, `warn` or `error`.
    pub severity: String,
    /// `count=<n>; code=<code>; detail=<details>`.
    pub detail: String,
    /// The run.
    pub run_id: String,
}

/// One edge of origin `vault` (both ends vault rows of one scope and scope id).
#[derive(Debug, Clone, PartialEq)]
pub struct VaultEdge {
    /// Id to use when the edge is new (a uuid chosen by the caller).
    pub new_id: String,
    /// Scope of both ends.
    pub scope: Scope,
    /// Scope id of both ends (`None` for global).
    pub scope_id: Option<String>,
    /// Source key.
    pub source_key: Key,
    /// Target key.
    pub target_key: Key,
    /// Type.
    pub rel_type: RelType,
    /// Status as authored.
    pub status: RelStatus,
    /// Confidence as authored.
    pub confidence: Option<f64>,
    /// Attributes (compact JSON object), if any.
    pub attributes_json: Option<String>,
    /// The source note's mtime.
    pub source_updated_at: DateTime<Utc>,
}

/// A vault metadata row to hold after an apply: the row (`source_kind` vault, `id` = `sha256("memory" NUL uid)`,
/// `file_path` the vault-relative path) and whether its `content` was read this run (`false`: the note's text is
/// unchanged; the stored content and search entries are kept).
#[derive(Debug, Clone, PartialEq)]
pub struct VaultMetadata {
    /// The row; its `content` is the note's recall body when `content_read`.
    pub row: MemoryRow,
    /// Whether `row.content` holds the body read this run.
    pub content_read: bool,
}

/// The complete vault state after a reconcile, applied by [`Index::vault_apply`] in one transaction.
#[derive(Debug, Clone, Default)]
pub struct VaultApply {
    /// Every `vault_note` row.
    pub notes: Vec<VaultNoteRow>,
    /// Every `vault_exclusion` row.
    pub exclusions: Vec<Exclusion>,
    /// Every `vault_note_alias` row.
    pub aliases: Vec<NoteAlias>,
    /// Every finding row of the run.
    pub findings: Vec<VaultFindingRow>,
    /// Every vault metadata row.
    pub metadata: Vec<VaultMetadata>,
    /// Every edge of origin `vault`.
    pub edges: Vec<VaultEdge>,
    /// Rebuild: every vault metadata row and vault edge is dropped first (access counts reset).
    pub rebuild: bool,
}

/// What [`Index::vault_apply`] changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VaultApplied {
    /// Metadata rows inserted.
    pub metadata_added: usize,
    /// Metadata rows rewritten.
    pub metadata_updated: usize,
    /// Metadata rows deleted.
    pub metadata_removed: usize,
    /// Edges inserted.
    pub edges_added: usize,
    /// Edges rewritten.
    pub edges_updated: usize,
    /// Edges deleted.
    pub edges_removed: usize,
}

/// What [`Index::vault_forget`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VaultForgotten {
    /// Whether a metadata row was deleted.
    pub metadata_removed: bool,
    /// Edges of origin `vault` deleted.
    pub edges_removed: usize,
}

/// One `vault_migration_receipt` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VaultReceiptRow {
    /// `sha256(vault_id NUL scope NUL scope_id NUL key)`.
    pub receipt_id: String,
    /// Scope.
    pub scope: Scope,
    /// Scope id (`None` for global).
    pub scope_id: Option<String>,
    /// Key.
    pub key: String,
    /// The native topic file, relative to the memory directory.
    pub native_relpath: String,
    /// SHA-256 of the native file's bytes when migrated.
    pub native_content_sha256: Option<String>,
    /// The managed note, vault-relative.
    pub managed_relpath: String,
    /// The managed note's uid.
    pub vault_note_uid: String,
    /// SHA-256 of the published note's normalised text.
    pub published_content_sha256: Option<String>,
    /// The native edges marked superseded (JSON array).
    pub superseded_edges: String,
    /// `active`, `rolled_back`, ...
    pub status: String,
    /// When it was recorded.
    pub created_at: Option<DateTime<Utc>>,
}

const NOTE_COLUMNS: &str = "note_uid, vault_relpath, scope, scope_id, cao_key, status, managed, key_source, \
     key_source_reason, content_sha256, frontmatter_sha256, size_bytes, mtime_ns, last_reconciled_at, stamp_dev, \
     stamp_ino, stamp_ctime_ns";

fn decode_note(r: &rusqlite::Row<'_>) -> rusqlite::Result<Option<VaultNoteRow>> {
    let scope: String = r.get(2)?;
    let Ok(scope) = scope.parse::<Scope>() else {
        return Ok(None);
    };
    let stamp = match (
        r.get::<_, Option<i64>>(14)?,
        r.get::<_, Option<i64>>(15)?,
        r.get::<_, Option<i64>>(16)?,
    ) {
        (Some(dev), Some(ino), Some(ctime_ns)) => Some(VaultStamp { dev, ino, ctime_ns }),
        _ => None,
    };
    let status: String = r.get(5)?;
    let Some(status) = NoteStatus::parse(&status) else {
        return Ok(None);
    };
    Ok(Some(VaultNoteRow {
        note: IndexedNote {
            note_uid: r.get(0)?,
            relpath: r.get(1)?,
            scope,
            scope_id: read_id(r.get::<_, Option<String>>(3)?.unwrap_or_default()),
            key: r.get(4)?,
            status,
            managed: r.get::<_, Option<bool>>(6)?.unwrap_or(false),
            key_source: KeySource::parse_lenient(&r.get::<_, String>(7)?),
            key_source_reason: r.get(8)?,
            content_sha256: r.get(9)?,
            frontmatter_sha256: r.get(10)?,
            size_bytes: r.get::<_, Option<i64>>(11)?.and_then(|v| u64::try_from(v).ok()),
            mtime_ns: r.get(12)?,
        },
        last_reconciled_at: r.get::<_, Option<String>>(13)?.as_deref().and_then(parse_db_ts),
        stamp,
    }))
}

fn insert_note(tx: &Connection, vault_id: &str, row: &VaultNoteRow) -> rusqlite::Result<()> {
    let n = &row.note;
    tx.prepare_cached(
        "INSERT INTO vault_note (note_uid, vault_id, vault_relpath, scope, scope_id, cao_key, status, managed,
             key_source, key_source_reason, content_sha256, frontmatter_sha256, size_bytes, mtime_ns,
             last_reconciled_at, stamp_dev, stamp_ino, stamp_ctime_ns)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
    )?
    .execute(params![
        n.note_uid,
        vault_id,
        n.relpath,
        n.scope.as_str(),
        stored_id(n.scope_id.as_deref()),
        n.key,
        n.status.as_str(),
        n.managed,
        n.key_source.as_str(),
        n.key_source_reason,
        n.content_sha256,
        n.frontmatter_sha256,
        n.size_bytes.and_then(|v| i64::try_from(v).ok()),
        n.mtime_ns,
        row.last_reconciled_at.map(format_db_ts),
        row.stamp.map(|s| s.dev),
        row.stamp.map(|s| s.ino),
        row.stamp.map(|s| s.ctime_ns),
    ])?;
    Ok(())
}

fn upsert_exclusion(tx: &Connection, vault_id: &str, e: &Exclusion, now: &str) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO vault_exclusion (vault_id, scope, scope_id, cao_key, last_known_relpath, content_sha256,
             key_source, key_source_reason, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT (vault_id, scope, scope_id, cao_key) DO UPDATE SET last_known_relpath = excluded.last_known_relpath,
             content_sha256 = excluded.content_sha256, key_source = excluded.key_source,
             key_source_reason = excluded.key_source_reason",
    )?
    .execute(params![
        vault_id,
        e.scope.as_str(),
        stored_id(e.scope_id.as_deref()),
        e.key,
        e.last_known_relpath,
        e.content_sha256,
        e.key_source.as_str(),
        e.key_source_reason,
        now,
    ])?;
    Ok(())
}

/// The stored vault metadata row with this id: its search rowid and the fields an apply compares.
struct StoredMeta {
    search_rowid: Option<i64>,
    row: MemoryRow,
}

fn stored_meta(tx: &Connection, id: &str) -> rusqlite::Result<Option<StoredMeta>> {
    let sql = format!(
        "SELECT {ROW_COLUMNS}, m.search_rowid FROM memory_metadata m WHERE m.id = ?1 AND m.source_kind = 'vault'"
    );
    let mut stmt = tx.prepare_cached(&sql)?;
    let mut rows = stmt.query([id])?;
    let Some(r) = rows.next()? else { return Ok(None) };
    let search_rowid: Option<i64> = r.get(22)?;
    Ok(decode_row(r, 0)?.ok().map(|row| StoredMeta { search_rowid, row }))
}

/// Delete one vault metadata row and its search entries.
fn delete_meta(tx: &Connection, id: &str, search_rowid: Option<i64>) -> rusqlite::Result<()> {
    if let Some(s) = search_rowid {
        unindex_search(tx, s)?;
    }
    tx.prepare_cached("DELETE FROM memory_metadata WHERE id = ?1 AND source_kind = 'vault'")?
        .execute([id])?;
    Ok(())
}

/// Insert or rewrite one vault metadata row and its search entries (`keep`: the stored row, whose access state and,
/// when the content was not read, content are kept).
fn write_meta(tx: &Connection, m: &VaultMetadata, keep: Option<&StoredMeta>) -> Result<()> {
    let row = &m.row;
    let content = match (m.content_read, keep) {
        (true, _) | (false, None) => row.content.as_str(),
        (false, Some(k)) => k.row.content.as_str(),
    };
    if let Some(k) = keep {
        delete_meta(tx, &row.id, k.search_rowid)?;
    }
    let part = partition::ensure_vault(tx, row.scope, row.scope_id.as_deref())?;
    let s = partition::allocate(tx, partition::slot(part, row.memory_type))?;
    let (access_count, last_accessed) = keep.map_or((0, None), |k| (k.row.access_count, k.row.last_accessed_at));
    tx.prepare_cached(
        "INSERT INTO memory_metadata (id, \"key\", memory_type, scope, scope_id, source_kind, file_path, tags,
             token_estimate, created_at, updated_at, access_count, last_accessed_at, content, entry_count,
             search_rowid)
         VALUES (?1, ?2, ?3, ?4, ?5, 'vault', ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, 1, ?14)",
    )?
    .execute(params![
        row.id,
        row.key.as_str(),
        row.memory_type.as_str(),
        row.scope.as_str(),
        row.scope_id,
        row.file_path,
        row.tags,
        row.token_estimate,
        format_db_ts(row.created_at),
        format_db_ts(row.updated_at),
        access_count,
        last_accessed.map(crate::row::format_db_ts_secs),
        content,
        s,
    ])?;
    let text = SearchText {
        key: row.key.as_str(),
        tags: &row.tags,
        content,
        stored: row.updated_at,
        neighbours: Vec::new(),
        vault: true,
    };
    index_search(tx, s, &text)?;
    Ok(())
}

/// Whether a stored row already holds what `m` asks for (nothing to write).
fn meta_current(m: &VaultMetadata, stored: &StoredMeta) -> bool {
    let (a, b) = (&m.row, &stored.row);
    stored.search_rowid.is_some()
        && (!m.content_read || a.content == b.content)
        && a.key == b.key
        && a.memory_type == b.memory_type
        && a.scope == b.scope
        && a.scope_id == b.scope_id
        && a.file_path == b.file_path
        && a.tags == b.tags
        && a.token_estimate == b.token_estimate
        && format_db_ts(a.created_at) == format_db_ts(b.created_at)
        && format_db_ts(a.updated_at) == format_db_ts(b.updated_at)
}

/// An edge of origin `vault` as stored: id, identity and the values an apply compares.
struct StoredEdge {
    id: String,
    status: String,
    confidence: Option<f64>,
    attributes_json: Option<String>,
    source_updated_at: Option<String>,
}

type EdgeIdentity = (String, String, String, String, String);

fn edge_identity(scope: Scope, scope_id: Option<&str>, source: &str, target: &str, ty: RelType) -> EdgeIdentity {
    (
        scope.as_str().to_owned(),
        stored_id(scope_id).to_owned(),
        source.to_owned(),
        target.to_owned(),
        ty.as_str().to_owned(),
    )
}

fn vault_edges_in(tx: &Connection) -> rusqlite::Result<HashMap<EdgeIdentity, StoredEdge>> {
    let mut stmt = tx.prepare_cached(
        "SELECT id, scope, scope_id, source_key, target_key, type, status, confidence, attributes_json,
             source_updated_at
         FROM memory_relationships WHERE origin = 'vault'",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?),
            StoredEdge {
                id: r.get(0)?,
                status: r.get(6)?,
                confidence: r.get(7)?,
                attributes_json: r.get(8)?,
                source_updated_at: r.get(9)?,
            },
        ))
    })?;
    rows.collect()
}

/// Bring the edges of origin `vault` to `wanted` (see the module documentation).
fn apply_edges(tx: &Connection, wanted: &[VaultEdge], now: &str, out: &mut VaultApplied) -> rusqlite::Result<()> {
    let existing = vault_edges_in(tx)?;
    let terminal = |status: &str| status.parse::<RelStatus>().is_ok_and(RelStatus::is_curation_terminal);
    let mut keep: HashSet<EdgeIdentity> = HashSet::with_capacity(wanted.len());
    for e in wanted {
        let identity = edge_identity(
            e.scope,
            e.scope_id.as_deref(),
            e.source_key.as_str(),
            e.target_key.as_str(),
            e.rel_type,
        );
        if !keep.insert(identity.clone()) {
            continue;
        }
        let source_ts = format_db_ts(e.source_updated_at);
        match existing.get(&identity) {
            Some(old) if terminal(&old.status) => {}
            Some(old) => {
                let same = old.status == e.status.as_str()
                    && old.confidence == e.confidence
                    && old.attributes_json == e.attributes_json
                    && old.source_updated_at.as_deref() == Some(source_ts.as_str());
                if !same {
                    tx.prepare_cached(
                        "UPDATE memory_relationships SET status = ?1, confidence = ?2, attributes_json = ?3,
                             source_updated_at = ?4, updated_at = ?5 WHERE id = ?6",
                    )?
                    .execute(params![
                        e.status.as_str(),
                        e.confidence,
                        e.attributes_json,
                        source_ts,
                        now,
                        old.id
                    ])?;
                    out.edges_updated += 1;
                }
            }
            None => {
                tx.prepare_cached(
                    "INSERT INTO memory_relationships (id, scope, scope_id, source_key, target_key, type, origin,
                         status, confidence, rank, attributes_json, source_updated_at, created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'vault', ?7, ?8, NULL, ?9, ?10, ?11, ?11)",
                )?
                .execute(params![
                    e.new_id,
                    e.scope.as_str(),
                    stored_id(e.scope_id.as_deref()),
                    e.source_key.as_str(),
                    e.target_key.as_str(),
                    e.rel_type.as_str(),
                    e.status.as_str(),
                    e.confidence,
                    e.attributes_json,
                    source_ts,
                    now,
                ])?;
                out.edges_added += 1;
            }
        }
    }
    for (identity, old) in &existing {
        if !keep.contains(identity) && !terminal(&old.status) {
            tx.prepare_cached("DELETE FROM memory_relationships WHERE id = ?1")?
                .execute([&old.id])?;
            out.edges_removed += 1;
        }
    }
    Ok(())
}

/// Replace the projection token of `vault_id` with a fresh random one (module documentation).
fn bump_projection(tx: &Transaction<'_>, vault_id: &str) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT OR REPLACE INTO vault_projection (vault_id, token) VALUES (?1, lower(hex(randomblob(16))))",
    )?
    .execute([vault_id])?;
    Ok(())
}

fn vault_apply_in(tx: &Transaction<'_>, vault_id: &str, plan: &VaultApply, now: DateTime<Utc>) -> Result<VaultApplied> {
    let now_text = format_db_ts(now);
    bump_projection(tx, vault_id)?;
    let mut out = VaultApplied::default();
    // Vault metadata rows: every stored one not in the plan goes (with a rebuild, every stored one).
    let stored: Vec<(String, Option<i64>)> = tx
        .prepare_cached("SELECT id, search_rowid FROM memory_metadata WHERE source_kind = 'vault'")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let planned: HashSet<&str> = plan.metadata.iter().map(|m| m.row.id.as_str()).collect();
    for (id, search_rowid) in &stored {
        if plan.rebuild || !planned.contains(id.as_str()) {
            delete_meta(tx, id, *search_rowid)?;
            out.metadata_removed += 1;
        }
    }
    if plan.rebuild {
        tx.prepare_cached("DELETE FROM memory_relationships WHERE origin = 'vault'")?
            .execute([])?;
    }
    for m in &plan.metadata {
        if m.row.source_kind != SourceKind::Vault {
            return Err(IndexError::Invalid(format!(
                "vault metadata row {:?} is not of source kind vault",
                m.row.key.as_str()
            )));
        }
        match stored_meta(tx, &m.row.id)? {
            Some(s) if meta_current(m, &s) => {}
            Some(s) => {
                write_meta(tx, m, Some(&s))?;
                out.metadata_updated += 1;
            }
            None => {
                if !m.content_read {
                    return Err(IndexError::Invalid(format!(
                        "new vault metadata row {:?} without its content",
                        m.row.key.as_str()
                    )));
                }
                write_meta(tx, m, None)?;
                out.metadata_added += 1;
            }
        }
    }
    // Note, exclusion, alias and finding rows: replaced whole.
    for table in ["vault_note", "vault_exclusion", "vault_note_alias", "vault_finding"] {
        tx.execute(&format!("DELETE FROM {table} WHERE vault_id = ?1"), [vault_id])?;
    }
    for n in &plan.notes {
        insert_note(tx, vault_id, n)?;
    }
    for e in &plan.exclusions {
        upsert_exclusion(tx, vault_id, e, &now_text)?;
    }
    for a in &plan.aliases {
        tx.prepare_cached(
            "INSERT OR REPLACE INTO vault_note_alias (vault_id, former_relpath, cao_key, scope, scope_id,
                 content_sha256, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?
        .execute(params![
            vault_id,
            a.former_relpath,
            a.key,
            a.scope.as_str(),
            stored_id(a.scope_id.as_deref()),
            a.content_sha256,
            now_text
        ])?;
    }
    for f in &plan.findings {
        tx.prepare_cached(
            "INSERT OR REPLACE INTO vault_finding (id, vault_id, vault_relpath, code, severity, detail,
                 reconcile_run_id, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?
        .execute(params![
            f.id, vault_id, f.relpath, f.code, f.severity, f.detail, f.run_id, now_text
        ])?;
    }
    apply_edges(tx, &plan.edges, &now_text, &mut out)?;
    Ok(out)
}

impl Index {
    /// Every `vault_note`, `vault_exclusion` and `vault_note_alias` row of `vault_id` (notes by path), in one
    /// snapshot. Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn vault_state(&self, vault_id: &str) -> Result<VaultState> {
        self.read(|tx| {
            let notes = tx
                .prepare_cached(&format!(
                    "SELECT {NOTE_COLUMNS} FROM vault_note WHERE vault_id = ?1 ORDER BY vault_relpath"
                ))?
                .query_map([vault_id], decode_note)?
                .filter_map(std::result::Result::transpose)
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let exclusions = tx
                .prepare_cached(
                    "SELECT scope, scope_id, cao_key, last_known_relpath, content_sha256, key_source,
                         key_source_reason FROM vault_exclusion WHERE vault_id = ?1
                     ORDER BY scope, scope_id, cao_key",
                )?
                .query_map([vault_id], |r| {
                    let scope: String = r.get(0)?;
                    Ok(scope.parse::<Scope>().ok().map(|scope| -> rusqlite::Result<_> {
                        Ok(Exclusion {
                            scope,
                            scope_id: read_id(r.get(1)?),
                            key: r.get(2)?,
                            last_known_relpath: r.get(3)?,
                            content_sha256: r.get(4)?,
                            key_source: KeySource::parse_lenient(&r.get::<_, String>(5)?),
                            key_source_reason: r.get(6)?,
                        })
                    }))
                })?
                .filter_map(|r| match r {
                    Ok(Some(inner)) => Some(inner),
                    Ok(None) => None,
                    Err(e) => Some(Err(e)),
                })
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let aliases = tx
                .prepare_cached(
                    "SELECT former_relpath, cao_key, scope, scope_id, content_sha256 FROM vault_note_alias
                     WHERE vault_id = ?1 ORDER BY former_relpath",
                )?
                .query_map([vault_id], |r| {
                    let scope: String = r.get(2)?;
                    Ok(scope.parse::<Scope>().ok().map(|scope| -> rusqlite::Result<_> {
                        Ok(NoteAlias {
                            former_relpath: r.get(0)?,
                            key: r.get(1)?,
                            scope,
                            scope_id: read_id(r.get(3)?),
                            content_sha256: r.get(4)?,
                        })
                    }))
                })?
                .filter_map(|r| match r {
                    Ok(Some(inner)) => Some(inner),
                    Ok(None) => None,
                    Err(e) => Some(Err(e)),
                })
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(VaultState {
                notes,
                exclusions,
                aliases,
            })
        })
    }

    /// The `vault_note` rows of `vault_id` named by `(scope, scope_id, key)` (for decorating recalled rows); unknown
    /// identities are left out. Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn vault_notes_by_identity(
        &self,
        vault_id: &str,
        identities: &[(Scope, Option<&str>, &str)],
    ) -> Result<Vec<VaultNoteRow>> {
        if identities.is_empty() {
            return Ok(Vec::new());
        }
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(&format!(
                "SELECT {NOTE_COLUMNS} FROM vault_note
                 WHERE vault_id = ?1 AND scope = ?2 AND scope_id = ?3 AND cao_key = ?4"
            ))?;
            let mut out = Vec::with_capacity(identities.len());
            for (scope, scope_id, key) in identities {
                let found = stmt
                    .query_row(
                        params![vault_id, scope.as_str(), stored_id(*scope_id), key],
                        decode_note,
                    )
                    .optional()?
                    .flatten();
                out.extend(found);
            }
            Ok(out)
        })
    }

    /// The vault metadata rows named by `(scope, scope_id, key)` (related-memory expansion through a vault
    /// binding); unknown ones are left out. Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn vault_rows(&self, identities: &[(Scope, Option<&str>, &str)]) -> Result<Vec<MemoryRow>> {
        if identities.is_empty() {
            return Ok(Vec::new());
        }
        self.read(|tx| {
            let sql = format!(
                "SELECT {ROW_COLUMNS} FROM memory_metadata m
                 WHERE m.\"key\" = ?1 AND m.scope = ?2 AND m.scope_id IS ?3 AND m.source_kind = 'vault'"
            );
            let mut stmt = tx.prepare_cached(&sql)?;
            let mut out = Vec::new();
            for (scope, scope_id, key) in identities {
                let mut rows = stmt.query(params![key, scope.as_str(), scope_id])?;
                if let Some(r) = rows.next()?
                    && let Ok(row) = decode_row(r, 0)?
                {
                    out.push(row);
                }
            }
            Ok(out)
        })
    }

    /// The finding rows of `vault_id` (by path, then code). Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn vault_findings(&self, vault_id: &str) -> Result<Vec<VaultFindingRow>> {
        self.read(|tx| {
            Ok(tx
                .prepare_cached(
                    "SELECT id, vault_relpath, code, severity, detail, reconcile_run_id FROM vault_finding
                     WHERE vault_id = ?1 ORDER BY vault_relpath, code, severity",
                )?
                .query_map([vault_id], |r| {
                    Ok(VaultFindingRow {
                        id: r.get(0)?,
                        relpath: r.get(1)?,
                        code: r.get(2)?,
                        severity: r.get(3)?,
                        detail: r.get(4)?,
                        run_id: r.get(5)?,
                    })
                })?
                .collect::<rusqlite::Result<_>>()?)
        })
    }

    /// The durable recall counters of `vault_id`, `(name, value)` by name. Errors: [`IndexError::Sqlite`] /
    /// [`IndexError::Pool`].
    pub fn vault_counters(&self, vault_id: &str) -> Result<Vec<(String, i64)>> {
        self.read(|tx| {
            Ok(tx
                .prepare_cached(
                    "SELECT name, value FROM vault_recall_counter WHERE vault_id = ?1 AND value <> 0 ORDER BY name",
                )?
                .query_map([vault_id], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?)
        })
    }

    /// Add `by` to each named counter of `vault_id`. Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn vault_bump_counters(&self, vault_id: &str, counts: &[(&str, i64)], now: DateTime<Utc>) -> Result<()> {
        if counts.iter().all(|(_, n)| *n == 0) {
            return Ok(());
        }
        self.write(|tx| {
            let now = format_db_ts(now);
            for (name, by) in counts.iter().filter(|(_, n)| *n != 0) {
                tx.prepare_cached(
                    "INSERT INTO vault_recall_counter (vault_id, name, value, updated_at) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (vault_id, name) DO UPDATE SET value = value + excluded.value,
                         updated_at = excluded.updated_at",
                )?
                .execute(params![vault_id, name, by, now])?;
            }
            Ok(())
        })
    }

    /// Apply a reconcile's complete vault state in one write transaction (module documentation).
    ///
    /// Errors: [`IndexError::Invalid`] for a metadata row that is not a vault row, or a new one without content;
    /// [`IndexError::Capacity`]; [`IndexError::Sqlite`] / [`IndexError::Pool`]. Nothing is written on error.
    pub fn vault_apply(&self, vault_id: &str, plan: &VaultApply, now: DateTime<Utc>) -> Result<VaultApplied> {
        self.write(|tx| vault_apply_in(tx, vault_id, plan, now))
    }

    /// Forget a vault note in one transaction: upsert its exclusion, mark its `vault_note` row (`note_uid`)
    /// `excluded`, delete its metadata row (and search entries) and every edge of origin `vault` from or to its key
    /// in its scope. Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn vault_forget(
        &self,
        vault_id: &str,
        note_uid: &str,
        exclusion: &Exclusion,
        now: DateTime<Utc>,
    ) -> Result<VaultForgotten> {
        self.write(|tx| {
            let now_text = format_db_ts(now);
            bump_projection(tx, vault_id)?;
            upsert_exclusion(tx, vault_id, exclusion, &now_text)?;
            tx.prepare_cached("UPDATE vault_note SET status = 'excluded' WHERE vault_id = ?1 AND note_uid = ?2")?
                .execute(params![vault_id, note_uid])?;
            let mut out = VaultForgotten::default();
            let found: Option<(String, Option<i64>)> = tx
                .prepare_cached(
                    "SELECT id, search_rowid FROM memory_metadata
                     WHERE \"key\" = ?1 AND scope = ?2 AND scope_id IS ?3 AND source_kind = 'vault'",
                )?
                .query_row(
                    params![exclusion.key, exclusion.scope.as_str(), exclusion.scope_id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            if let Some((id, s)) = found {
                delete_meta(tx, &id, s)?;
                out.metadata_removed = true;
            }
            out.edges_removed = tx
                .prepare_cached(
                    "DELETE FROM memory_relationships WHERE origin = 'vault' AND scope = ?1 AND scope_id = ?2
                         AND (source_key = ?3 OR target_key = ?3)",
                )?
                .execute(params![
                    exclusion.scope.as_str(),
                    stored_id(exclusion.scope_id.as_deref()),
                    exclusion.key
                ])?;
            Ok(out)
        })
    }

    /// The migration receipts of `vault_id`, by scope, scope id and key. Errors: [`IndexError::Sqlite`] /
    /// [`IndexError::Pool`].
    pub fn vault_receipts(&self, vault_id: &str) -> Result<Vec<VaultReceiptRow>> {
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT receipt_id, scope, scope_id, cao_key, native_relpath, native_content_sha256, managed_relpath,
                     vault_note_uid, published_content_sha256, superseded_edges, status, created_at
                 FROM vault_migration_receipt WHERE vault_id = ?1 ORDER BY scope, scope_id, cao_key",
            )?;
            let rows = stmt.query_map([vault_id], |r| {
                let scope: String = r.get(1)?;
                Ok(scope.parse::<Scope>().ok().map(|scope| -> rusqlite::Result<_> {
                    Ok(VaultReceiptRow {
                        receipt_id: r.get(0)?,
                        scope,
                        scope_id: read_id(r.get(2)?),
                        key: r.get(3)?,
                        native_relpath: r.get(4)?,
                        native_content_sha256: r.get(5)?,
                        managed_relpath: r.get(6)?,
                        vault_note_uid: r.get(7)?,
                        published_content_sha256: r.get(8)?,
                        superseded_edges: r.get(9)?,
                        status: r.get(10)?,
                        created_at: r.get::<_, Option<String>>(11)?.as_deref().and_then(parse_db_ts),
                    })
                }))
            })?;
            let mut out = Vec::new();
            for r in rows {
                if let Some(row) = r? {
                    out.push(row?);
                }
            }
            Ok(out)
        })
    }

    /// Record a migration receipt (replacing one with the same id) and, in the same transaction, set the status of
    /// each edge in `supersede` (edge ids) to `superseded`. Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn vault_put_receipt(
        &self,
        vault_id: &str,
        receipt: &VaultReceiptRow,
        supersede: &[String],
        now: DateTime<Utc>,
    ) -> Result<()> {
        self.write(|tx| {
            let now = format_db_ts(now);
            tx.prepare_cached(
                "INSERT OR REPLACE INTO vault_migration_receipt (receipt_id, vault_id, scope, scope_id, cao_key,
                     native_relpath, native_content_sha256, managed_relpath, vault_note_uid, published_content_sha256,
                     superseded_edges, status, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?13)",
            )?
            .execute(params![
                receipt.receipt_id,
                vault_id,
                receipt.scope.as_str(),
                stored_id(receipt.scope_id.as_deref()),
                receipt.key,
                receipt.native_relpath,
                receipt.native_content_sha256,
                receipt.managed_relpath,
                receipt.vault_note_uid,
                receipt.published_content_sha256,
                receipt.superseded_edges,
                receipt.status,
                now,
            ])?;
            for id in supersede {
                tx.prepare_cached(
                    "UPDATE memory_relationships SET status = 'superseded', updated_at = ?2 WHERE id = ?1",
                )?
                .execute(params![id, now])?;
            }
            Ok(())
        })
    }

    /// Roll a receipt back in one transaction: each `(edge id, prior status)` gets its prior status again (edges
    /// that no longer exist are skipped) and the receipt's status becomes `rolled_back`. Whether the receipt
    /// existed. Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn vault_roll_back_receipt(
        &self,
        receipt_id: &str,
        restore: &[(String, RelStatus)],
        now: DateTime<Utc>,
    ) -> Result<bool> {
        self.write(|tx| {
            let now = format_db_ts(now);
            let n = tx
                .prepare_cached(
                    "UPDATE vault_migration_receipt SET status = 'rolled_back', updated_at = ?2 WHERE receipt_id = ?1",
                )?
                .execute(params![receipt_id, now])?;
            for (id, status) in restore {
                tx.prepare_cached("UPDATE memory_relationships SET status = ?2, updated_at = ?3 WHERE id = ?1")?
                    .execute(params![id, status.as_str(), now])?;
            }
            Ok(n > 0)
        })
    }

    /// The projection token of `vault_id` (module documentation): a random text replaced by every write of the
    /// vault's note rows; `None` before the first one (or in a database written by a build without tokens).
    /// Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn vault_projection_token(&self, vault_id: &str) -> Result<Option<String>> {
        self.read(|tx| {
            Ok(tx
                .prepare_cached("SELECT token FROM vault_projection WHERE vault_id = ?1")?
                .query_row([vault_id], |r| r.get(0))
                .optional()?)
        })
    }

    /// How many vault metadata rows there are. Errors: [`IndexError::Sqlite`] /
    /// [`IndexError::Pool`].
    pub fn vault_row_count(&self) -> Result<usize> {
        self.read(|tx| {
            let n: i64 = tx.query_row(
                "SELECT count(*) FROM memory_metadata WHERE source_kind = 'vault'",
                [],
                |r| r.get(0),
            )?;
            Ok(usize::try_from(n).unwrap_or(0))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Visibility;
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

    fn meta(k: &str, content: &str, updated: i64) -> VaultMetadata {
        let mut row = MemoryRow::new(
            format!("vid-{k}"),
            Scope::Project,
            Some("demo".to_owned()),
            key(k),
            MemoryType::Reference,
            format!("Notes/{k}.md"),
            "",
            content,
            t(updated),
        );
        row.source_kind = SourceKind::Vault;
        VaultMetadata {
            row,
            content_read: true,
        }
    }

    fn note(k: &str) -> VaultNoteRow {
        VaultNoteRow {
            note: IndexedNote {
                note_uid: format!("uid-{k}"),
                relpath: format!("Notes/{k}.md"),
                scope: Scope::Project,
                scope_id: Some("demo".to_owned()),
                key: k.to_owned(),
                status: NoteStatus::Indexed,
                managed: false,
                key_source: KeySource::Derived,
                key_source_reason: None,
                content_sha256: Some(format!("sha-{k}")),
                frontmatter_sha256: None,
                size_bytes: Some(10),
                mtime_ns: Some(1),
            },
            last_reconciled_at: Some(t(0)),
            stamp: Some(VaultStamp {
                dev: 1,
                ino: 2,
                ctime_ns: 3,
            }),
        }
    }

    fn edge(from: &str, to: &str, id: &str) -> VaultEdge {
        VaultEdge {
            new_id: id.to_owned(),
            scope: Scope::Project,
            scope_id: Some("demo".to_owned()),
            source_key: key(from),
            target_key: key(to),
            rel_type: RelType::RelatesTo,
            status: RelStatus::Active,
            confidence: None,
            attributes_json: None,
            source_updated_at: t(0),
        }
    }

    fn plan() -> VaultApply {
        VaultApply {
            notes: vec![note("alpha"), note("beta")],
            metadata: vec![
                meta("alpha", "alpha body about widgets", 1),
                meta("beta", "beta body", 2),
            ],
            edges: vec![edge("alpha", "beta", "e-1")],
            findings: vec![VaultFindingRow {
                id: "f-1".to_owned(),
                relpath: "Notes/bad.md".to_owned(),
                code: "frontmatter_malformed".to_owned(),
                severity: "error".to_owned(),
                detail: "count=1; code=frontmatter_malformed; detail=invalid YAML".to_owned(),
                run_id: "run".to_owned(),
            }],
            ..VaultApply::default()
        }
    }

    fn vault_vis() -> Visibility {
        Visibility::none().allow_vault(Scope::Project, Some("demo"))
    }

    #[test]
    fn apply_is_idempotent_and_edges_keep_their_ids() {
        let (_d, ix) = open();
        let first = ix.vault_apply("v", &plan(), t(10)).expect("apply");
        assert_eq!((first.metadata_added, first.edges_added), (2, 1));
        // The same plan again, with a different proposed id for the same edge: nothing changes.
        let mut again = plan();
        again.edges[0].new_id = "e-2".to_owned();
        again.metadata.iter_mut().for_each(|m| m.content_read = false);
        let second = ix.vault_apply("v", &again, t(20)).expect("apply");
        assert_eq!(second, VaultApplied::default());
        let edges = ix.relationships(&crate::RelationshipFilter::default()).expect("edges");
        assert_eq!(edges.len(), 1);
        assert_eq!(edges[0].row.id, "e-1");
        let state = ix.vault_state("v").expect("state");
        assert_eq!(state.notes, vec![note("alpha"), note("beta")]);
        assert_eq!(ix.vault_findings("v").expect("findings").len(), 1);
        assert_eq!(ix.vault_row_count().expect("count"), 2);
    }

    #[test]
    fn vault_rows_are_read_only_through_a_vault_term() {
        let (_d, ix) = open();
        ix.vault_apply("v", &plan(), t(10)).expect("apply");
        let native = Visibility::none().allow(Scope::Project, Some("demo"));
        assert!(ix.recency_pool(&native, None, 10).expect("pool").is_empty());
        assert!(ix.recency_pool(&Visibility::all(), None, 10).expect("pool").is_empty());
        let rows = ix.recency_pool(&vault_vis(), None, 10).expect("pool");
        let keys: Vec<&str> = rows.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, vec!["beta", "alpha"]);
        let found = ix.metadata_pool(&vault_vis(), None, "widgets", 10).expect("pool");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].source_kind, SourceKind::Vault);
    }

    #[test]
    fn changed_content_is_reindexed_and_removed_notes_go() {
        let (_d, ix) = open();
        ix.vault_apply("v", &plan(), t(10)).expect("apply");
        let mut next = plan();
        next.metadata[0] = meta("alpha", "alpha now about gadgets", 5);
        next.metadata.truncate(1);
        next.notes.truncate(1);
        next.edges.clear();
        let out = ix.vault_apply("v", &next, t(20)).expect("apply");
        assert_eq!(
            (out.metadata_updated, out.metadata_removed, out.edges_removed),
            (1, 1, 1)
        );
        assert!(
            ix.metadata_pool(&vault_vis(), None, "widgets", 10)
                .expect("pool")
                .is_empty()
        );
        assert_eq!(
            ix.metadata_pool(&vault_vis(), None, "gadgets", 10).expect("pool").len(),
            1
        );
    }

    #[test]
    fn forget_deindexes_and_records_the_exclusion() {
        let (_d, ix) = open();
        ix.vault_apply("v", &plan(), t(10)).expect("apply");
        let exclusion = Exclusion {
            scope: Scope::Project,
            scope_id: Some("demo".to_owned()),
            key: "alpha".to_owned(),
            last_known_relpath: "Notes/alpha.md".to_owned(),
            content_sha256: Some("sha-alpha".to_owned()),
            key_source: KeySource::Derived,
            key_source_reason: None,
        };
        let out = ix.vault_forget("v", "uid-alpha", &exclusion, t(30)).expect("forget");
        assert_eq!(
            out,
            VaultForgotten {
                metadata_removed: true,
                edges_removed: 1
            }
        );
        let state = ix.vault_state("v").expect("state");
        assert_eq!(state.exclusions, vec![exclusion]);
        assert_eq!(state.notes[0].note.status, NoteStatus::Excluded);
        let rows = ix.recency_pool(&vault_vis(), None, 10).expect("pool");
        assert_eq!(rows.len(), 1);
    }
}
