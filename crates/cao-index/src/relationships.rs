//! `memory_relationships`: durable typed edges between two memories of one scope and scope id, in the table the
//! reference implementation shares (reference notes, section a).
//!
//! Storage rules (the reference's): `scope_id` is `""` for global and federated (the column is NOT NULL so the
//! identity `(scope, scope_id, source_key, target_key, type, origin)` is unique for every scope); datetimes are
//! written as [`crate::format_db_ts`]; `confidence` is NULL or in `[0, 1]`; `attributes_json` is NULL or at most
//! [`MAX_ATTRIBUTES_BYTES`] bytes.
//!
//! Invariants kept by this module:
//! - An edge is only written when both endpoints are native memories of the same scope and scope id (checked inside
//!   the write transaction).
//! - A producer replacement ([`Index::replace_producer_edges`]) touches only rows of its own
//!   `(scope, scope_id, source_key, origin, type)`; among those, `rejected` and `deleted` rows are neither changed
//!   nor removed, and each one is reported back.
//! - A status change ([`Index::set_relationship_status`]) checks the current status and writes in one transaction.

use crate::row::{format_db_ts, parse_db_ts};
use crate::{Index, IndexError, Result};
use cao_core::{Key, MemoryRef, Scope};
use chrono::{DateTime, Utc};
use rusqlite::types::{Value, ValueRef};
use rusqlite::{OptionalExtension, Transaction, params};
use std::fmt;
use std::str::FromStr;

/// A replacement for [`Index::active_supersedes_targets`]: given memory identities, the ones that are targets of
/// active same-scope `supersedes` edges, or a one-line reason it could not tell (callers fail open). Embedders that
/// keep edges elsewhere, and tests that need a failing edge store, provide one.
pub type SupersedesLookup =
    dyn Fn(&[&MemoryRef]) -> std::result::Result<std::collections::HashSet<MemoryRef>, String> + Send + Sync;

/// Maximum size of `attributes_json` in bytes (the reference's `ck_memory_rel_attributes_size` CHECK).
pub const MAX_ATTRIBUTES_BYTES: usize = 2048;

/// The stored `scope_id` of a scope without one (global, federated): the reference's sentinel.
pub const GLOBAL_SCOPE_ID: &str = "";

macro_rules! vocabulary {
    ($(#[$meta:meta])* $name:ident, $what:literal, { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stored (wire) spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = IndexError;

            /// Parse the exact stored spelling. Errors: [`IndexError::Invalid`] naming the value and the choices.
            fn from_str(s: &str) -> Result<Self> {
                match s {
                    $($text => Ok($name::$variant),)+
                    other => Err(IndexError::Invalid(format!(
                        concat!("invalid relationship ", $what, " {:?}; expected one of {}"),
                        other,
                        [$($text),+].join(", ")
                    ))),
                }
            }
        }
    };
}

vocabulary!(
    /// Kind of an edge (the reference's `VALID_TYPES`).
    RelType, "type", {
        /// The source memory is related to the target.
        RelatesTo => "relates_to",
        /// The two memories contradict each other (stored once, directed).
        Contradiction => "contradiction",
        /// The source memory replaces the target.
        Supersedes => "supersedes",
    }
);

vocabulary!(
    /// Who wrote an edge (the reference's `VALID_ORIGINS`). A producer only ever replaces rows of its own origin.
    RelOrigin, "origin", {
        /// The memory compiler.
        Compiler => "compiler",
        /// The wiki linter.
        WikiLint => "wiki_lint",
        /// An operator or agent, through the API or CLI.
        Human => "human",
        /// Mirrored from a memory's legacy `related_keys` csv.
        LegacyRelatedKeys => "legacy_related_keys",
        /// An importer (reserved).
        ExternalImport => "external_import",
        /// A vault note's links.
        Vault => "vault",
    }
);

vocabulary!(
    /// Curation state of an edge (the reference's `VALID_STATUSES`).
    RelStatus, "status", {
        /// Suggested; awaits `promote` or `reject`.
        Proposal => "proposal",
        /// In force.
        Active => "active",
        /// Refused by an operator; survives producer recomputes.
        Rejected => "rejected",
        /// Retired by a lifecycle migration of the reference (read only; never written by this crate's callers).
        Superseded => "superseded",
        /// Soft-deleted by an operator; the row is kept for audit and survives producer recomputes.
        Deleted => "deleted",
    }
);

impl RelStatus {
    /// Statuses an operator reached through an explicit command: a producer never overwrites or removes them, and
    /// `promote` refuses them (re-create the edge instead).
    pub const CURATION_TERMINAL: [RelStatus; 2] = [RelStatus::Rejected, RelStatus::Deleted];

    /// Whether this status is in [`RelStatus::CURATION_TERMINAL`].
    pub fn is_curation_terminal(self) -> bool {
        Self::CURATION_TERMINAL.contains(&self)
    }
}

/// One row of `memory_relationships`.
#[derive(Debug, Clone, PartialEq)]
pub struct RelationshipRow {
    /// Row id (a uuid4 string; the reference's API identifier).
    pub id: String,
    /// Scope of both endpoints.
    pub scope: Scope,
    /// Scope id of both endpoints; `None` for global and federated (stored as [`GLOBAL_SCOPE_ID`]).
    pub scope_id: Option<String>,
    /// Key of the source memory.
    pub source_key: Key,
    /// Key of the target memory.
    pub target_key: Key,
    /// Kind of edge.
    pub rel_type: RelType,
    /// Who wrote it.
    pub origin: RelOrigin,
    /// Curation state.
    pub status: RelStatus,
    /// Evidence in `[0, 1]`; `None` = no evidence (never coerced to 0).
    pub confidence: Option<f64>,
    /// Ordering hint among a source's edges (e.g. the position in a legacy `related_keys` csv).
    pub rank: Option<i64>,
    /// Compact JSON object, at most [`MAX_ATTRIBUTES_BYTES`] bytes.
    pub attributes_json: Option<String>,
    /// The source memory's `updated_at` when the edge was computed; basis of staleness.
    pub source_updated_at: Option<DateTime<Utc>>,
    /// When the row was first written (`None` when NULL or unreadable).
    pub created_at: Option<DateTime<Utc>>,
    /// When the row last changed (`None` when NULL or unreadable).
    pub updated_at: Option<DateTime<Utc>>,
}

impl RelationshipRow {
    /// The stored form of [`RelationshipRow::scope_id`].
    pub fn stored_scope_id(&self) -> &str {
        self.scope_id.as_deref().unwrap_or(GLOBAL_SCOPE_ID)
    }
}

/// A stored edge together with the current `updated_at` of its source memory (read in the same snapshot).
#[derive(Debug, Clone, PartialEq)]
pub struct RelationshipRecord {
    /// The row.
    pub row: RelationshipRow,
    /// `updated_at` of the source memory now; `None` when it no longer exists or has no time.
    pub source_memory_updated_at: Option<DateTime<Utc>>,
}

impl RelationshipRecord {
    /// Whether the edge was computed before its source memory was last edited: both times known and
    /// `source_updated_at < source memory updated_at` (the reference's rule; unknown times are never stale).
    pub fn is_stale(&self) -> bool {
        match (self.row.source_updated_at, self.source_memory_updated_at) {
            (Some(edge), Some(memory)) => edge < memory,
            _ => false,
        }
    }
}

/// Filter of [`Index::relationships`]. Every field narrows; the default lists every edge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RelationshipFilter {
    /// Only this scope.
    pub scope: Option<Scope>,
    /// Only this stored scope id (`""` = global/federated edges).
    pub scope_id: Option<String>,
    /// Only edges leaving this memory key.
    pub source_key: Option<Key>,
    /// Only edges into this memory key (served by the target index).
    pub target_key: Option<Key>,
    /// Only edges in this status.
    pub status: Option<RelStatus>,
    /// Only stale edges ([`RelationshipRecord::is_stale`]).
    pub stale: bool,
}

/// One edge of a producer's full current set for a source (see [`Index::replace_producer_edges`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ProducerEdge {
    /// Id to use if the edge is new (a uuid4 string chosen by the caller); ignored when the row exists.
    pub new_id: String,
    /// Target memory key (same scope and scope id as the source).
    pub target_key: Key,
    /// Status to write.
    pub status: RelStatus,
    /// Evidence in `[0, 1]`, or `None`.
    pub confidence: Option<f64>,
    /// Ordering hint.
    pub rank: Option<i64>,
    /// Compact JSON object of at most [`MAX_ATTRIBUTES_BYTES`] bytes.
    pub attributes_json: Option<String>,
}

/// What [`Index::replace_producer_edges`] did. Counts are rows of the producer's own origin and type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplaceOutcome {
    /// Rows inserted.
    pub added: usize,
    /// Existing rows rewritten with the producer's new values.
    pub updated: usize,
    /// Rows deleted because the producer no longer reports their target.
    pub removed: usize,
    /// Rows left untouched because an operator rejected or deleted them: `(target key, status)`, by target.
    pub preserved: Vec<(Key, RelStatus)>,
    /// Targets not written because no such memory exists in the source's scope and scope id.
    pub dangling: Vec<Key>,
}

/// Result of [`Index::set_relationship_status`].
#[derive(Debug, Clone, PartialEq)]
pub enum StatusChange {
    /// No row has this id.
    NotFound,
    /// The row's current status is one of the refused ones; nothing was written. Holds the row as it is.
    Refused(RelationshipRecord),
    /// The status was written. Holds the row after the change.
    Changed(RelationshipRecord),
}

/// Columns of every edge query, in [`decode`] order: the row (`r`) then the source memory's `updated_at` (`m`).
const EDGE_COLUMNS: &str = "r.id, r.scope, r.scope_id, r.source_key, r.target_key, r.type, r.origin, r.status, \
     r.confidence, r.rank, r.attributes_json, r.source_updated_at, r.created_at, r.updated_at, m.updated_at";

/// The edge table joined to its source memory (native row of the same scope; NULL scope id = `""`).
const EDGE_FROM: &str = "memory_relationships r LEFT JOIN memory_metadata m
     ON m.\"key\" = r.source_key AND m.scope = r.scope AND m.source_kind = 'native'
        AND coalesce(m.scope_id, '') = r.scope_id";

/// Total order of listings: scope, scope id, source, rank (NULL last), target, type, origin (the identity).
const EDGE_ORDER: &str = "r.scope, r.scope_id, r.source_key, r.rank IS NULL, r.rank, r.target_key, r.type, r.origin";

fn text(v: ValueRef<'_>) -> Option<String> {
    match v {
        ValueRef::Null => None,
        ValueRef::Text(b) | ValueRef::Blob(b) => Some(String::from_utf8_lossy(b).into_owned()),
        ValueRef::Integer(i) => Some(i.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
    }
}

fn real(v: ValueRef<'_>) -> Option<f64> {
    match v {
        ValueRef::Integer(i) => Some(i as f64),
        ValueRef::Real(f) => Some(f),
        ValueRef::Text(b) => std::str::from_utf8(b).ok().and_then(|s| s.trim().parse().ok()),
        ValueRef::Null | ValueRef::Blob(_) => None,
    }
}

fn int(v: ValueRef<'_>) -> Option<i64> {
    match v {
        ValueRef::Integer(i) => Some(i),
        // Saturating conversion is the intended lenient reading of a REAL rank.
        ValueRef::Real(f) => Some(f as i64),
        ValueRef::Text(b) => std::str::from_utf8(b).ok().and_then(|s| s.trim().parse().ok()),
        ValueRef::Null | ValueRef::Blob(_) => None,
    }
}

/// Decode a row selected with [`EDGE_COLUMNS`]. `Ok(Err(reason))` when it holds a value outside our vocabulary
/// (unknown scope, type, origin or status, or an invalid key), naming the column and value.
fn decode(r: &rusqlite::Row<'_>) -> rusqlite::Result<std::result::Result<RelationshipRecord, String>> {
    let t = |i: usize| -> rusqlite::Result<Option<String>> { Ok(text(r.get_ref(i)?)) };
    let ts = |i: usize| -> rusqlite::Result<Option<DateTime<Utc>>> { Ok(t(i)?.as_deref().and_then(parse_db_ts)) };
    let id = t(0)?.unwrap_or_default();
    let parsed = (|| -> std::result::Result<RelationshipRow, String> {
        let field = |i: usize| t(i).map_err(|e| e.to_string()).map(Option::unwrap_or_default);
        let scope_s = field(1)?;
        let scope = scope_s.parse::<Scope>().map_err(|_| format!("scope {scope_s:?}"))?;
        let scope_id = field(2)?;
        let key = |i: usize, col: &str| -> std::result::Result<Key, String> {
            let k = field(i)?;
            Key::parse_strict(&k).map_err(|_| format!("{col} {k:?}"))
        };
        let source_key = key(3, "source_key")?;
        let target_key = key(4, "target_key")?;
        let rel_type = field(5)?.parse::<RelType>().map_err(|e| e.to_string())?;
        let origin = field(6)?.parse::<RelOrigin>().map_err(|e| e.to_string())?;
        let status = field(7)?.parse::<RelStatus>().map_err(|e| e.to_string())?;
        let get = |i: usize| r.get_ref(i).map_err(|e| e.to_string());
        Ok(RelationshipRow {
            id: id.clone(),
            scope,
            scope_id: (scope_id != GLOBAL_SCOPE_ID).then_some(scope_id),
            source_key,
            target_key,
            rel_type,
            origin,
            status,
            confidence: real(get(8)?),
            rank: int(get(9)?),
            attributes_json: text(get(10)?),
            source_updated_at: ts(11).map_err(|e| e.to_string())?,
            created_at: ts(12).map_err(|e| e.to_string())?,
            updated_at: ts(13).map_err(|e| e.to_string())?,
        })
    })();
    Ok(match parsed {
        Ok(row) => Ok(RelationshipRecord {
            row,
            source_memory_updated_at: ts(14)?,
        }),
        Err(reason) => Err(format!("relationship {id:?} holds an unknown value: {reason}")),
    })
}

fn record_by_id(tx: &Transaction<'_>, id: &str) -> Result<Option<RelationshipRecord>> {
    let sql = format!("SELECT {EDGE_COLUMNS} FROM {EDGE_FROM} WHERE r.id = ?1");
    let found = tx.prepare_cached(&sql)?.query_row([id], decode).optional()?;
    match found {
        None => Ok(None),
        Some(Ok(rec)) => Ok(Some(rec)),
        Some(Err(reason)) => Err(IndexError::Invalid(reason)),
    }
}

/// `updated_at` of the native memory `(key, scope, stored scope id)`: `Some(None)` when it exists without a
/// readable time, `None` when it does not exist.
fn memory_updated_at(
    tx: &Transaction<'_>,
    scope: Scope,
    stored_scope_id: &str,
    key: &Key,
) -> rusqlite::Result<Option<Option<DateTime<Utc>>>> {
    tx.prepare_cached(
        "SELECT updated_at FROM memory_metadata
         WHERE \"key\" = ?1 AND scope = ?2 AND coalesce(scope_id, '') = ?3 AND source_kind = 'native' LIMIT 1",
    )?
    .query_row(params![key.as_str(), scope.as_str(), stored_scope_id], |r| {
        Ok(text(r.get_ref(0)?).as_deref().and_then(parse_db_ts))
    })
    .optional()
}

/// The value rules of an edge every backend applies before writing it: `confidence` in `[0, 1]` (NaN refused) and
/// `attributes_json` at most [`MAX_ATTRIBUTES_BYTES`] bytes.
///
/// Errors: the message naming the offending value.
pub fn check_edge_values(confidence: Option<f64>, attributes_json: Option<&str>) -> std::result::Result<(), String> {
    if let Some(c) = confidence
        && !(0.0..=1.0).contains(&c)
    {
        return Err(format!("relationship confidence {c} is outside [0, 1]"));
    }
    if let Some(a) = attributes_json
        && a.len() > MAX_ATTRIBUTES_BYTES
    {
        return Err(format!(
            "relationship attributes are {} bytes; the maximum is {MAX_ATTRIBUTES_BYTES}",
            a.len()
        ));
    }
    Ok(())
}

fn check_values(confidence: Option<f64>, attributes_json: Option<&str>) -> Result<()> {
    check_edge_values(confidence, attributes_json).map_err(IndexError::Invalid)
}

fn opt_ts(t: Option<DateTime<Utc>>) -> Value {
    t.map_or(Value::Null, |t| Value::Text(format_db_ts(t)))
}

impl Index {
    /// Write one edge: insert it, or, when a row with the same identity
    /// `(scope, scope_id, source_key, target_key, type, origin)` exists, overwrite that row's status, confidence,
    /// rank and attributes (and `source_updated_at` when `Some`), keeping its id and `created_at` (the reference's
    /// create-or-upsert). `created_at` (new rows) and `updated_at` are `now`. Returns the stored edge.
    ///
    /// Errors: [`IndexError::Invalid`] when `row.id` is empty, confidence is outside `[0, 1]`, attributes exceed
    /// [`MAX_ATTRIBUTES_BYTES`], or an endpoint is not a native memory of the edge's scope and scope id (checked in
    /// the same transaction as the write); [`IndexError::Sqlite`] / [`IndexError::Pool`] on database failure.
    pub fn upsert_relationship(&self, row: &RelationshipRow, now: DateTime<Utc>) -> Result<RelationshipRecord> {
        if row.id.is_empty() {
            return Err(IndexError::Invalid("empty relationship id".to_owned()));
        }
        check_values(row.confidence, row.attributes_json.as_deref())?;
        let sid = row.stored_scope_id();
        self.write(|tx| {
            for key in [&row.source_key, &row.target_key] {
                if memory_updated_at(tx, row.scope, sid, key)?.is_none() {
                    return Err(IndexError::Invalid(format!(
                        "no memory {:?} in scope {} (scope id {sid:?}); both ends of an edge must exist in one scope",
                        key.as_str(),
                        row.scope
                    )));
                }
            }
            let existing: Option<String> = tx
                .prepare_cached(
                    "SELECT id FROM memory_relationships WHERE scope = ?1 AND scope_id = ?2 AND source_key = ?3
                     AND target_key = ?4 AND type = ?5 AND origin = ?6",
                )?
                .query_row(
                    params![
                        row.scope.as_str(),
                        sid,
                        row.source_key.as_str(),
                        row.target_key.as_str(),
                        row.rel_type.as_str(),
                        row.origin.as_str()
                    ],
                    |r| r.get(0),
                )
                .optional()?;
            let id = match existing {
                Some(id) => {
                    tx.prepare_cached(
                        "UPDATE memory_relationships SET status = ?1, confidence = ?2, rank = ?3,
                             attributes_json = ?4, source_updated_at = coalesce(?5, source_updated_at), updated_at = ?6
                         WHERE id = ?7",
                    )?
                    .execute(params![
                        row.status.as_str(),
                        row.confidence,
                        row.rank,
                        row.attributes_json,
                        opt_ts(row.source_updated_at),
                        format_db_ts(now),
                        id
                    ])?;
                    id
                }
                None => {
                    tx.prepare_cached(
                        "INSERT INTO memory_relationships (id, scope, scope_id, source_key, target_key, type, origin,
                             status, confidence, rank, attributes_json, source_updated_at, created_at, updated_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?13)",
                    )?
                    .execute(params![
                        row.id,
                        row.scope.as_str(),
                        sid,
                        row.source_key.as_str(),
                        row.target_key.as_str(),
                        row.rel_type.as_str(),
                        row.origin.as_str(),
                        row.status.as_str(),
                        row.confidence,
                        row.rank,
                        row.attributes_json,
                        opt_ts(row.source_updated_at),
                        format_db_ts(now),
                    ])?;
                    row.id.clone()
                }
            };
            record_by_id(tx, &id)?.ok_or_else(|| IndexError::Invalid(format!("relationship {id:?} vanished")))
        })
    }

    /// The edge with this id, if any, with its source memory's current `updated_at`.
    ///
    /// Errors: [`IndexError::Invalid`] when the row holds a value outside the vocabulary (unknown scope, type,
    /// origin, status or an invalid key); [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn relationship(&self, id: &str) -> Result<Option<RelationshipRecord>> {
        self.read(|tx| record_by_id(tx, id))
    }

    /// Every edge matching `filter`, in the order scope, scope id, source key, rank (NULL last), target key, type,
    /// origin. Rows holding values outside the vocabulary (written by a newer program) are left out.
    ///
    /// Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn relationships(&self, filter: &RelationshipFilter) -> Result<Vec<RelationshipRecord>> {
        self.relationships_window(filter, None)
    }

    /// One page of [`Index::relationships`]: at most `limit` edges after the first `offset` of that order, and the
    /// number of matching edges in all. Without the stale filter the page is cut in SQL (only its rows are
    /// decoded); with it, after the stale check.
    ///
    /// Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn relationships_page(
        &self,
        filter: &RelationshipFilter,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<RelationshipRecord>, usize)> {
        if filter.stale {
            let all = self.relationships(filter)?;
            let total = all.len();
            return Ok((all.into_iter().skip(offset).take(limit).collect(), total));
        }
        let (sql_where, params) = relationship_where(filter);
        let total: i64 = self.read(|tx| {
            Ok(tx.query_row(
                &format!("SELECT count(*) FROM memory_relationships r {sql_where}"),
                rusqlite::params_from_iter(params.iter()),
                |r| r.get(0),
            )?)
        })?;
        let page = self.relationships_window(filter, Some((offset, limit)))?;
        Ok((page, usize::try_from(total).unwrap_or(0)))
    }

    /// `limit` edges of [`Index::relationships`]'s order from `offset`, cut in SQL and not counted: with a status
    /// filter the page is a walk of `cao_idx_memory_rel_status` (no sort), and only its rows join their memory
    /// for staleness. The stale filter is applied after decoding (as [`Index::relationships_page`]).
    /// Errors: [`IndexError::Sqlite`].
    pub fn relationships_slice(
        &self,
        filter: &RelationshipFilter,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<RelationshipRecord>> {
        if filter.stale {
            return Ok(self
                .relationships(filter)?
                .into_iter()
                .skip(offset)
                .take(limit)
                .collect());
        }
        self.relationships_window(filter, Some((offset, limit)))
    }

    /// How many edges match `filter` (the stale filter ignored), counting no further than `cap`: a bounded cost
    /// for a count shown next to a page ("at least `cap`"). Errors: [`IndexError::Sqlite`].
    pub fn relationships_count_capped(&self, filter: &RelationshipFilter, cap: usize) -> Result<usize> {
        let (sql_where, mut params) = relationship_where(filter);
        params.push(Value::Integer(i64::try_from(cap).unwrap_or(i64::MAX)));
        let n: i64 = self.read(|tx| {
            Ok(tx.query_row(
                &format!("SELECT count(*) FROM (SELECT 1 FROM memory_relationships r {sql_where} LIMIT ?)"),
                rusqlite::params_from_iter(params.iter()),
                |r| r.get(0),
            )?)
        })?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// [`Index::relationships`], optionally only `(offset, limit)` of the order (cut in SQL).
    fn relationships_window(
        &self,
        filter: &RelationshipFilter,
        window: Option<(usize, usize)>,
    ) -> Result<Vec<RelationshipRecord>> {
        let (where_sql, params) = relationship_where(filter);
        let cut = match window {
            Some((offset, limit)) => format!(" LIMIT {limit} OFFSET {offset}"),
            None => String::new(),
        };
        // The edges into one memory: without this the planner walks every edge of the scope id on the source index
        // (its order matches the listing's), which costs the whole scope instead of the memory's edges.
        let from = if filter.target_key.is_some() && filter.source_key.is_none() {
            EDGE_FROM.replacen(
                "memory_relationships r",
                "memory_relationships r INDEXED BY cao_idx_memory_rel_target",
                1,
            )
        } else {
            EDGE_FROM.to_owned()
        };
        let sql = format!("SELECT {EDGE_COLUMNS} FROM {from} {where_sql} ORDER BY {EDGE_ORDER}{cut}");
        self.read(|tx| {
            let mut stmt = tx.prepare(&sql)?;
            let decoded = stmt
                .query_map(rusqlite::params_from_iter(params.iter()), decode)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(decoded
                .into_iter()
                .filter_map(std::result::Result::ok)
                .filter(|rec| !filter.stale || rec.is_stale())
                .collect())
        })
    }
}

/// The edges leaving the memory `(key, scope, scope_id)` of one producer and type, inside an open transaction, in
/// [`Index::relationships`]'s order (rows holding values outside the vocabulary left out).
pub(crate) fn producer_edges_in(
    tx: &Transaction<'_>,
    scope: Scope,
    scope_id: Option<&str>,
    source_key: &Key,
    origin: RelOrigin,
    rel_type: RelType,
) -> Result<Vec<RelationshipRecord>> {
    let sql = format!(
        "SELECT {EDGE_COLUMNS} FROM {EDGE_FROM}
         WHERE r.scope = ?1 AND r.scope_id = ?2 AND r.source_key = ?3 AND r.origin = ?4 AND r.type = ?5
         ORDER BY {EDGE_ORDER}"
    );
    let mut stmt = tx.prepare_cached(&sql)?;
    let decoded = stmt
        .query_map(
            params![
                scope.as_str(),
                scope_id.unwrap_or(GLOBAL_SCOPE_ID),
                source_key.as_str(),
                origin.as_str(),
                rel_type.as_str()
            ],
            decode,
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(decoded.into_iter().filter_map(std::result::Result::ok).collect())
}

/// [`Index::replace_producer_edges`] inside an open write transaction (same checks, same errors).
#[allow(clippy::too_many_arguments)]
pub(crate) fn replace_producer_edges_in(
    tx: &Transaction<'_>,
    scope: Scope,
    scope_id: Option<&str>,
    source_key: &Key,
    origin: RelOrigin,
    rel_type: RelType,
    edges: &[ProducerEdge],
    now: DateTime<Utc>,
) -> Result<ReplaceOutcome> {
    check_producer_edges(edges).map_err(IndexError::Invalid)?;
    let now_text = format_db_ts(now);
    replace_in(tx, scope, scope_id, source_key, origin, rel_type, edges, &now_text)?.ok_or_else(|| {
        IndexError::Invalid(format!(
            "no memory {:?} in scope {scope} (scope id {:?}); cannot write its relationships",
            source_key.as_str(),
            scope_id.unwrap_or(GLOBAL_SCOPE_ID)
        ))
    })
}

/// The `WHERE` clause of a filter (every value bound; the stale filter is applied after decoding).
fn relationship_where(filter: &RelationshipFilter) -> (String, Vec<Value>) {
    let mut clauses: Vec<&str> = Vec::new();
    let mut params: Vec<Value> = Vec::new();
    if let Some(s) = filter.scope {
        clauses.push("r.scope = ?");
        params.push(Value::Text(s.as_str().to_owned()));
    }
    if let Some(id) = &filter.scope_id {
        clauses.push("r.scope_id = ?");
        params.push(Value::Text(id.clone()));
    }
    if let Some(k) = &filter.source_key {
        clauses.push("r.source_key = ?");
        params.push(Value::Text(k.as_str().to_owned()));
    }
    if let Some(k) = &filter.target_key {
        clauses.push("r.target_key = ?");
        params.push(Value::Text(k.as_str().to_owned()));
    }
    if let Some(st) = filter.status {
        clauses.push("r.status = ?");
        params.push(Value::Text(st.as_str().to_owned()));
    }
    let where_sql = if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clauses.join(" AND "))
    };
    (where_sql, params)
}

impl Index {
    /// Set the status of edge `id` to `to` (and `updated_at` to `now`) unless its current status is in `refuse`;
    /// the check and the write are one transaction.
    ///
    /// Errors: [`IndexError::Invalid`] when the row holds a value outside the vocabulary;
    /// [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn set_relationship_status(
        &self,
        id: &str,
        to: RelStatus,
        refuse: &[RelStatus],
        now: DateTime<Utc>,
    ) -> Result<StatusChange> {
        self.write(|tx| {
            let Some(current) = record_by_id(tx, id)? else {
                return Ok(StatusChange::NotFound);
            };
            if refuse.contains(&current.row.status) {
                return Ok(StatusChange::Refused(current));
            }
            tx.prepare_cached("UPDATE memory_relationships SET status = ?1, updated_at = ?2 WHERE id = ?3")?
                .execute(params![to.as_str(), format_db_ts(now), id])?;
            let after =
                record_by_id(tx, id)?.ok_or_else(|| IndexError::Invalid(format!("relationship {id:?} vanished")))?;
            Ok(StatusChange::Changed(after))
        })
    }

    /// Delete every edge of any origin and status whose source or target is the memory `(key, scope, scope_id)`
    /// (`scope_id` `None` for global/federated). Called when the memory is forgotten, so a later memory with the
    /// same key does not inherit its edges. Returns the number of rows deleted.
    ///
    /// Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn purge_relationships(&self, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<usize> {
        let sid = scope_id.unwrap_or(GLOBAL_SCOPE_ID);
        self.write(|tx| {
            Ok(tx
                .prepare_cached(
                    "DELETE FROM memory_relationships WHERE scope = ?1 AND scope_id = ?2
                     AND (source_key = ?3 OR target_key = ?3)",
                )?
                .execute(params![scope.as_str(), sid, key.as_str()])?)
        })
    }

    /// Which of `candidates` are the target of an `active` `supersedes` edge of the same scope and scope id (any
    /// origin). Proposals, rejected, deleted and superseded rows do not count. One read snapshot; at most one SQL
    /// statement per 300 candidates. Returns the matching identities (an edge whose stored target is not a valid key
    /// matches no candidate and is left out).
    ///
    /// Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn active_supersedes_targets(&self, candidates: &[&MemoryRef]) -> Result<std::collections::HashSet<MemoryRef>> {
        let mut out = std::collections::HashSet::new();
        if candidates.is_empty() {
            return Ok(out);
        }
        self.read(|tx| {
            for chunk in candidates.chunks(300) {
                let sql = supersedes_targets_sql(chunk.len());
                let params: Vec<Value> = chunk
                    .iter()
                    .flat_map(|m| {
                        [
                            Value::Text(m.scope.as_str().to_owned()),
                            Value::Text(m.scope_id().unwrap_or(GLOBAL_SCOPE_ID).to_owned()),
                            Value::Text(m.key.as_str().to_owned()),
                        ]
                    })
                    .collect();
                let mut stmt = tx.prepare_cached(&sql)?;
                let rows = stmt.query_map(rusqlite::params_from_iter(params.iter()), |r| {
                    Ok((text(r.get_ref(0)?), text(r.get_ref(1)?), text(r.get_ref(2)?)))
                })?;
                for row in rows {
                    let (Some(scope), sid, Some(key)) = row? else { continue };
                    let (Ok(scope), Ok(key)) = (scope.parse::<Scope>(), Key::parse_strict(&key)) else {
                        continue;
                    };
                    let sid = sid.filter(|s| s != GLOBAL_SCOPE_ID);
                    out.insert(MemoryRef::new(scope, sid, key));
                }
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Replace one producer's edges of one type leaving one source with `edges` (its full current set), in one
    /// transaction. Only rows of `(scope, scope_id, source_key, origin, rel_type)` are touched:
    /// - a row whose target is not in `edges` is deleted, unless its status is rejected or deleted (then it is kept
    ///   and reported in [`ReplaceOutcome::preserved`]);
    /// - a row whose target is in `edges` gets the new status, confidence, rank and attributes, unless its status is
    ///   rejected or deleted (kept as is and reported);
    /// - a target without a row is inserted with `new_id`, unless no such memory exists in the source's scope and
    ///   scope id (reported in [`ReplaceOutcome::dangling`]).
    ///
    /// Every written row gets `source_updated_at` = the source memory's `updated_at` and `updated_at = now`. A
    /// repeated target counts once (the first occurrence wins); a self-link is reported as dangling.
    ///
    /// Errors: [`IndexError::Invalid`] when the source memory does not exist or an edge has an empty `new_id`, a
    /// confidence outside `[0, 1]` or oversized attributes (nothing written); [`IndexError::Sqlite`] /
    /// [`IndexError::Pool`].
    #[allow(clippy::too_many_arguments)]
    pub fn replace_producer_edges(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        source_key: &Key,
        origin: RelOrigin,
        rel_type: RelType,
        edges: &[ProducerEdge],
        now: DateTime<Utc>,
    ) -> Result<ReplaceOutcome> {
        self.write(|tx| replace_producer_edges_in(tx, scope, scope_id, source_key, origin, rel_type, edges, now))
    }

    /// [`Index::replace_producer_edges`] for many sources of one producer and type in one transaction (a bulk
    /// writer: an import's related-memory pass). Each item is replaced by the same rules; an item whose source
    /// memory does not exist is `None` (nothing written for it) instead of failing the batch.
    ///
    /// Errors: [`IndexError::Invalid`] for an edge with an empty `new_id`, a confidence outside `[0, 1]` or
    /// oversized attributes (nothing written); [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn replace_producer_edges_many(
        &self,
        origin: RelOrigin,
        rel_type: RelType,
        items: &[ProducerReplace<'_>],
        now: DateTime<Utc>,
    ) -> Result<Vec<Option<ReplaceOutcome>>> {
        for item in items {
            check_producer_edges(item.edges).map_err(IndexError::Invalid)?;
        }
        let now_text = format_db_ts(now);
        self.write(|tx| {
            items
                .iter()
                .map(|i| {
                    replace_in(
                        tx,
                        i.scope,
                        i.scope_id,
                        i.source_key,
                        origin,
                        rel_type,
                        i.edges,
                        &now_text,
                    )
                })
                .collect()
        })
    }
}

/// One source's new edge set for [`Index::replace_producer_edges_many`].
#[derive(Debug, Clone, Copy)]
pub struct ProducerReplace<'a> {
    /// The source memory's scope.
    pub scope: Scope,
    /// Its scope id (`None` for global and federated).
    pub scope_id: Option<&'a str>,
    /// Its key.
    pub source_key: &'a Key,
    /// The producer's full current edge set leaving it.
    pub edges: &'a [ProducerEdge],
}

/// The body of [`Index::replace_producer_edges`] inside an open write transaction; `None` when the source memory
/// does not exist (nothing written). Edge values are checked by the caller.
#[allow(clippy::too_many_arguments)]
fn replace_in(
    tx: &Transaction<'_>,
    scope: Scope,
    scope_id: Option<&str>,
    source_key: &Key,
    origin: RelOrigin,
    rel_type: RelType,
    edges: &[ProducerEdge],
    now_text: &str,
) -> Result<Option<ReplaceOutcome>> {
    let sid = scope_id.unwrap_or(GLOBAL_SCOPE_ID);
    {
        let Some(src_updated) = memory_updated_at(tx, scope, sid, source_key)? else {
            return Ok(None);
        };
        let existing: Vec<(String, String, String)> = tx
            .prepare_cached(
                "SELECT id, target_key, status FROM memory_relationships
                     WHERE scope = ?1 AND scope_id = ?2 AND source_key = ?3 AND origin = ?4 AND type = ?5
                     ORDER BY target_key",
            )?
            .query_map(
                params![
                    scope.as_str(),
                    sid,
                    source_key.as_str(),
                    origin.as_str(),
                    rel_type.as_str()
                ],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?
            .collect::<rusqlite::Result<_>>()?;
        let mut wanted: Vec<&ProducerEdge> = Vec::new();
        for e in edges {
            if !wanted.iter().any(|w| w.target_key == e.target_key) {
                wanted.push(e);
            }
        }
        let mut out = ReplaceOutcome::default();
        let terminal = |status: &str| status.parse::<RelStatus>().is_ok_and(RelStatus::is_curation_terminal);
        let mut preserved_targets: Vec<&str> = Vec::new();
        for (id, target, status) in &existing {
            if terminal(status) {
                if let (Ok(k), Ok(st)) = (Key::parse_strict(target), status.parse::<RelStatus>()) {
                    out.preserved.push((k, st));
                }
                preserved_targets.push(target);
                continue;
            }
            if !wanted.iter().any(|w| w.target_key.as_str() == target) {
                tx.prepare_cached("DELETE FROM memory_relationships WHERE id = ?1")?
                    .execute([id])?;
                out.removed += 1;
            }
        }
        for e in wanted {
            let target = e.target_key.as_str();
            if preserved_targets.contains(&target) {
                continue;
            }
            let src_ts = opt_ts(src_updated);
            if let Some((id, _, _)) = existing.iter().find(|(_, t, _)| t == target) {
                tx.prepare_cached(
                    "UPDATE memory_relationships SET status = ?1, confidence = ?2, rank = ?3, attributes_json = ?4,
                             source_updated_at = ?5, updated_at = ?6 WHERE id = ?7",
                )?
                .execute(params![
                    e.status.as_str(),
                    e.confidence,
                    e.rank,
                    e.attributes_json,
                    src_ts,
                    now_text,
                    id
                ])?;
                out.updated += 1;
                continue;
            }
            if e.target_key == *source_key || memory_updated_at(tx, scope, sid, &e.target_key)?.is_none() {
                out.dangling.push(e.target_key.clone());
                continue;
            }
            tx.prepare_cached(
                "INSERT INTO memory_relationships (id, scope, scope_id, source_key, target_key, type, origin,
                         status, confidence, rank, attributes_json, source_updated_at, created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?13)",
            )?
            .execute(params![
                e.new_id,
                scope.as_str(),
                sid,
                source_key.as_str(),
                target,
                rel_type.as_str(),
                origin.as_str(),
                e.status.as_str(),
                e.confidence,
                e.rank,
                e.attributes_json,
                src_ts,
                now_text,
            ])?;
            out.added += 1;
        }
        Ok(Some(out))
    }
}

/// Validate one producer's replacement edges before anything is written (every backend): every edge needs a
/// non-empty `new_id`, a confidence in `[0, 1]` and attributes within their size limit ([`check_edge_values`]).
///
/// Errors: the message naming the first offending edge's target or value.
pub fn check_producer_edges(edges: &[ProducerEdge]) -> std::result::Result<(), String> {
    for e in edges {
        if e.new_id.is_empty() {
            return Err(format!("empty relationship id for target {:?}", e.target_key.as_str()));
        }
        check_edge_values(e.confidence, e.attributes_json.as_deref())?;
    }
    Ok(())
}

/// The query of [`Index::active_supersedes_targets`] for `n` candidates (3 bound values each: scope, scope id, key).
///
/// Each candidate is looked up on the target index. Named, because without table statistics SQLite otherwise picks
/// the status-first listing index (`cao_idx_memory_rel_status`), whose prefix `(status, scope, scope_id)` matches every
/// active edge of the project: one walk of all of them per candidate (tens of milliseconds per recall at 100,000
/// memories with their compiler-made `relates_to` edges).
fn supersedes_targets_sql(n: usize) -> String {
    let values = vec!["(?, ?, ?)"; n].join(", ");
    format!(
        "WITH c(scope, sid, k) AS (VALUES {values})
         SELECT DISTINCT r.scope, r.scope_id, r.target_key
           FROM c JOIN memory_relationships r INDEXED BY cao_idx_memory_rel_target
             ON r.scope = c.scope AND r.scope_id = c.sid AND r.target_key = c.k
          WHERE r.type = 'supersedes' AND r.status = 'active'"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supersedes_lookup_walks_the_target_index() {
        let dir = tempfile::tempdir().expect("tempdir");
        let index = Index::open(&dir.path().join("index.db")).expect("open");
        let plan: Vec<String> = index
            .read(|tx| {
                let mut stmt = tx.prepare(&format!("EXPLAIN QUERY PLAN {}", supersedes_targets_sql(2)))?;
                let rows = stmt.query_map(rusqlite::params!["project", "p", "a", "project", "p", "b"], |r| {
                    r.get::<_, String>(3)
                })?;
                Ok(rows.collect::<rusqlite::Result<Vec<String>>>()?)
            })
            .expect("plan");
        assert!(
            plan.iter()
                .any(|l| l.contains("cao_idx_memory_rel_target (scope=? AND scope_id=? AND target_key=?)")),
            "{plan:?}"
        );
        assert!(
            !plan.iter().any(|l| l.contains("cao_idx_memory_rel_status")),
            "{plan:?}"
        );
    }

    #[test]
    fn vocabulary_round_trips_and_rejects_unknown_values() {
        for t in RelType::ALL {
            assert_eq!(t.as_str().parse::<RelType>().ok(), Some(*t));
        }
        for o in RelOrigin::ALL {
            assert_eq!(o.as_str().parse::<RelOrigin>().ok(), Some(*o));
        }
        for s in RelStatus::ALL {
            assert_eq!(s.as_str().parse::<RelStatus>().ok(), Some(*s));
        }
        let e = "Active".parse::<RelStatus>().expect_err("case matters");
        assert!(e.to_string().contains("\"Active\""), "{e}");
        assert!(
            e.to_string()
                .contains("proposal, active, rejected, superseded, deleted"),
            "{e}"
        );
        assert!("relates-to".parse::<RelType>().is_err());
        assert!("robot".parse::<RelOrigin>().is_err());
        assert!(RelStatus::Rejected.is_curation_terminal() && RelStatus::Deleted.is_curation_terminal());
        assert!(!RelStatus::Superseded.is_curation_terminal() && !RelStatus::Proposal.is_curation_terminal());
    }

    #[test]
    fn value_checks_name_the_offending_value() {
        assert!(check_values(Some(0.0), Some("{}")).is_ok());
        assert!(check_values(Some(1.0), None).is_ok());
        let e = check_values(Some(1.5), None).expect_err("out of range");
        assert!(e.to_string().contains("1.5"), "{e}");
        assert!(check_values(Some(f64::NAN), None).is_err(), "NaN is not in [0, 1]");
        let big = "x".repeat(MAX_ATTRIBUTES_BYTES + 1);
        let e = check_values(None, Some(&big)).expect_err("too big");
        assert!(e.to_string().contains("2049 bytes"), "{e}");
    }
}
