//! The store's table traits over PostgreSQL: [`Reads`] (each a read snapshot), [`Writes`] (each one write
//! transaction under the store's write lock), [`FollowUpOps`] (on a write's own transaction). Relationships,
//! outcomes, terminals, aliases, decisions and vectors are the embedded index's statements (cao-index
//! `relationships.rs`, `edges.rs`, `outcomes.rs`, `terminals.rs`, `aliases.rs`, `decisions.rs`, `vectors.rs`).

use super::db::{Mode, Param, Pool, Result, Sql, big, checkout, col, small};
use super::journal::PgJournal;
use super::rows::{self, Args, sid, unsid};
use crate::error::StoreError;
use crate::tables::{FollowUpOps, JournalOps, Reads, Writes};
use cao_core::lexical::LexicalScorer;
use cao_core::{Key, MemoryRef, MemoryType, Scope};
use cao_index::{
    Checkpoint, EdgeIdentity, ListFilter, MemoryRow, OutcomeFilter, OutcomeRow, PoolBudget, ProducerEdge,
    ProducerReplace, ProjectAlias, RecencyCursor, RelOrigin, RelStatus, RelType, RelatedKeys, RelationshipFilter,
    RelationshipRecord, RelationshipRow, ReplaceOutcome, StatusChange, TerminalRow, VectorCounts, VectorWrite,
    Visibility, check_edge_values, check_producer_edges, format_db_ts, parse_db_ts,
};
use chrono::{DateTime, Utc};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// The table operations of one PostgreSQL store (a pool and this process's caches).
pub(crate) struct PgTables {
    pub(crate) pool: Pool,
    /// Write transactions begun through this handle.
    writes: AtomicU64,
    /// This process's copy of one model's vectors.
    vectors: Mutex<VectorCopy>,
    /// Aliases known to be recorded (alias -> (project, kind, when)).
    aliases: Mutex<HashMap<String, (String, String, std::time::Instant)>>,
}

impl std::fmt::Debug for PgTables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTables").finish_non_exhaustive()
    }
}

impl PgTables {
    pub(crate) fn new(pool: Pool) -> PgTables {
        PgTables {
            pool,
            writes: AtomicU64::new(0),
            vectors: Mutex::default(),
            aliases: Mutex::default(),
        }
    }

    /// Run `f` in one read snapshot.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&mut Sql<'_>) -> Result<T>) -> Result<T> {
        let mut conn = checkout(&self.pool)?;
        let mut sql = Sql::begin(&mut conn, Mode::Read)?;
        let out = f(&mut sql)?;
        sql.commit()?;
        Ok(out)
    }

    /// Run `f` in one write transaction (under the store's write lock), committed when it returns `Ok`.
    pub(crate) fn write<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce(&mut Sql<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        self.write_counted(true, f)
    }

    /// [`PgTables::write`] for an audit line: not counted in [`PgTables::write_count`], as the embedded store's
    /// audit file appends are not index transactions (so both backends report the same write transactions).
    pub(crate) fn write_audit<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce(&mut Sql<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        self.write_counted(false, f)
    }

    fn write_counted<T, E: From<StoreError>>(
        &self,
        counted: bool,
        f: impl FnOnce(&mut Sql<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        let mut conn = checkout(&self.pool)?;
        if counted {
            self.writes.fetch_add(1, Ordering::Relaxed);
        }
        let mut sql = Sql::begin(&mut conn, Mode::Write)?;
        let out = f(&mut sql)?;
        sql.commit()?;
        Ok(out)
    }

    /// Write transactions begun so far.
    pub(crate) fn write_count(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    /// Record `alias` of `project_id` unless known (one read; a write only for a new or re-pointed alias).
    pub(crate) fn add_alias(&self, project_id: &str, alias: &str, kind: &str, now: DateTime<Utc>) -> Result<bool> {
        if project_id.is_empty() || alias.is_empty() || project_id == alias {
            return Ok(false);
        }
        let known = |m: &HashMap<String, (String, String, std::time::Instant)>| {
            m.get(alias)
                .is_some_and(|(p, k, at)| p == project_id && k == kind && at.elapsed() < cao_index::KNOWN_ALIAS_TTL)
        };
        let remember = || {
            let mut m = self.aliases.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if m.len() >= 1024 {
                m.clear();
            }
            m.insert(
                alias.to_owned(),
                (project_id.to_owned(), kind.to_owned(), std::time::Instant::now()),
            );
        };
        if known(&self.aliases.lock().unwrap_or_else(std::sync::PoisonError::into_inner)) {
            return Ok(false);
        }
        let select = "SELECT project_id, kind FROM project_aliases WHERE alias = $1";
        let current = self.read(|s| {
            s.opt(select, &[&alias])?
                .map(|r| Ok::<_, StoreError>((col::<String>(&r, 0)?, col::<String>(&r, 1)?)))
                .transpose()
        })?;
        if current.as_ref().is_some_and(|(p, k)| p == project_id && k == kind) {
            remember();
            return Ok(false);
        }
        let changed = self.write(|s| {
            let existing = s
                .opt(select, &[&alias])?
                .map(|r| Ok::<_, StoreError>((col::<String>(&r, 0)?, col::<String>(&r, 1)?)))
                .transpose()?;
            match existing {
                Some((p, k)) if p == project_id && k == kind => Ok::<_, StoreError>(false),
                Some(_) => {
                    s.exec(
                        "UPDATE project_aliases SET project_id = $1, kind = $2 WHERE alias = $3",
                        &[&project_id, &kind, &alias],
                    )?;
                    Ok(true)
                }
                None => {
                    s.exec(
                        "INSERT INTO project_aliases (alias, project_id, kind, created_at) VALUES ($1, $2, $3, $4)",
                        &[&alias, &project_id, &kind, &format_db_ts(now)],
                    )?;
                    Ok(true)
                }
            }
        })?;
        remember();
        Ok(changed)
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Relationships.

/// Columns of every edge query: the row (`r`) then the source memory's `updated_at` (`m`).
const EDGE_COLUMNS: &str = "r.id, r.scope, r.scope_id, r.source_key, r.target_key, r.type, r.origin, r.status, \
     r.confidence, r.rank, r.attributes_json, r.source_updated_at, r.created_at, r.updated_at, m.updated_at";

const EDGE_FROM: &str = "memory_relationships r LEFT JOIN memory_metadata m
     ON m.\"key\" = r.source_key AND m.scope = r.scope AND m.source_kind = 'native' AND m.scope_id = r.scope_id";

const EDGE_ORDER: &str = "r.scope, r.scope_id, r.source_key, (r.rank IS NULL), r.rank, r.target_key, r.type, r.origin";

fn decode_edge(r: &postgres::Row) -> Result<std::result::Result<RelationshipRecord, String>> {
    let ts = |i: usize| -> Result<Option<DateTime<Utc>>> {
        Ok(col::<Option<String>>(r, i)?.as_deref().and_then(parse_db_ts))
    };
    let id: String = col(r, 0)?;
    let parsed = (|| -> Result<std::result::Result<RelationshipRow, String>> {
        let scope_s: String = col(r, 1)?;
        let Ok(scope) = scope_s.parse::<Scope>() else {
            return Ok(Err(format!("scope {scope_s:?}")));
        };
        let scope_id: String = col(r, 2)?;
        let key = |i: usize, what: &str| -> Result<std::result::Result<Key, String>> {
            let k: String = col(r, i)?;
            Ok(Key::parse_strict(&k).map_err(|_| format!("{what} {k:?}")))
        };
        let source_key = match key(3, "source_key")? {
            Ok(k) => k,
            Err(e) => return Ok(Err(e)),
        };
        let target_key = match key(4, "target_key")? {
            Ok(k) => k,
            Err(e) => return Ok(Err(e)),
        };
        let (t, o, st): (String, String, String) = (col(r, 5)?, col(r, 6)?, col(r, 7)?);
        let (rel_type, origin, status) = match (t.parse::<RelType>(), o.parse::<RelOrigin>(), st.parse::<RelStatus>()) {
            (Ok(a), Ok(b), Ok(c)) => (a, b, c),
            (Err(e), _, _) => return Ok(Err(e.to_string())),
            (_, Err(e), _) => return Ok(Err(e.to_string())),
            (_, _, Err(e)) => return Ok(Err(e.to_string())),
        };
        Ok(Ok(RelationshipRow {
            id: id.clone(),
            scope,
            scope_id: unsid(scope_id),
            source_key,
            target_key,
            rel_type,
            origin,
            status,
            confidence: col(r, 8)?,
            rank: col(r, 9)?,
            attributes_json: col(r, 10)?,
            source_updated_at: ts(11)?,
            created_at: ts(12)?,
            updated_at: ts(13)?,
        }))
    })()?;
    Ok(match parsed {
        Ok(row) => Ok(RelationshipRecord {
            row,
            source_memory_updated_at: ts(14)?,
        }),
        Err(reason) => Err(format!("relationship {id:?} holds an unknown value: {reason}")),
    })
}

fn edge_by_id(s: &mut Sql<'_>, id: &str) -> Result<Option<RelationshipRecord>> {
    match s.opt(
        &format!("SELECT {EDGE_COLUMNS} FROM {EDGE_FROM} WHERE r.id = $1"),
        &[&id],
    )? {
        None => Ok(None),
        Some(r) => match decode_edge(&r)? {
            Ok(rec) => Ok(Some(rec)),
            Err(reason) => Err(StoreError::Invalid(reason)),
        },
    }
}

/// `updated_at` of the native memory `(key, scope, stored scope id)`: `Some(None)` when it has no readable time,
/// `None` when it does not exist.
fn memory_updated_at(s: &mut Sql<'_>, scope: Scope, stored: &str, key: &Key) -> Result<Option<Option<DateTime<Utc>>>> {
    s.opt(
        "SELECT updated_at FROM memory_metadata
         WHERE \"key\" = $1 AND scope = $2 AND scope_id = $3 AND source_kind = 'native' LIMIT 1",
        &[&key.as_str(), &scope.as_str(), &stored],
    )?
    .map(|r| col::<Option<String>>(&r, 0).map(|t| t.as_deref().and_then(parse_db_ts)))
    .transpose()
}

/// cao-index's value rules of an edge ([`check_edge_values`]), as this backend's error.
fn check_values(confidence: Option<f64>, attributes_json: Option<&str>) -> Result<()> {
    check_edge_values(confidence, attributes_json).map_err(StoreError::Invalid)
}

fn relationship_where(filter: &RelationshipFilter, args: &mut Args) -> String {
    let mut clauses: Vec<String> = Vec::new();
    if let Some(s) = filter.scope {
        clauses.push(format!("r.scope = {}", args.push(s.as_str().to_owned())));
    }
    if let Some(id) = &filter.scope_id {
        clauses.push(format!("r.scope_id = {}", args.push(id.clone())));
    }
    if let Some(k) = &filter.source_key {
        clauses.push(format!("r.source_key = {}", args.push(k.as_str().to_owned())));
    }
    if let Some(k) = &filter.target_key {
        clauses.push(format!("r.target_key = {}", args.push(k.as_str().to_owned())));
    }
    if let Some(st) = filter.status {
        clauses.push(format!("r.status = {}", args.push(st.as_str().to_owned())));
    }
    if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clauses.join(" AND "))
    }
}

fn relationships_window(
    s: &mut Sql<'_>,
    filter: &RelationshipFilter,
    window: Option<(usize, usize)>,
) -> Result<Vec<RelationshipRecord>> {
    let mut args = Args::default();
    let w = relationship_where(filter, &mut args);
    let cut = match window {
        Some((offset, limit)) => format!(
            " LIMIT {} OFFSET {}",
            args.push(big(limit as u64)?),
            args.push(big(offset as u64)?)
        ),
        None => String::new(),
    };
    let rows = s.query(
        &format!("SELECT {EDGE_COLUMNS} FROM {EDGE_FROM} {w} ORDER BY {EDGE_ORDER}{cut}"),
        &args.refs(),
    )?;
    let mut out = Vec::new();
    for r in &rows {
        if let Ok(rec) = decode_edge(r)?
            && (!filter.stale || rec.is_stale())
        {
            out.push(rec);
        }
    }
    Ok(out)
}

fn producer_edges_in(
    s: &mut Sql<'_>,
    scope: Scope,
    scope_id: Option<&str>,
    source_key: &Key,
    origin: RelOrigin,
    rel_type: RelType,
) -> Result<Vec<RelationshipRecord>> {
    let rows = s.query(
        &format!(
            "SELECT {EDGE_COLUMNS} FROM {EDGE_FROM}
             WHERE r.scope = $1 AND r.scope_id = $2 AND r.source_key = $3 AND r.origin = $4 AND r.type = $5
             ORDER BY {EDGE_ORDER}"
        ),
        &[
            &scope.as_str(),
            &sid(scope_id),
            &source_key.as_str(),
            &origin.as_str(),
            &rel_type.as_str(),
        ],
    )?;
    let mut out = Vec::new();
    for r in &rows {
        if let Ok(rec) = decode_edge(r)? {
            out.push(rec);
        }
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn replace_in(
    s: &mut Sql<'_>,
    scope: Scope,
    scope_id: Option<&str>,
    source_key: &Key,
    origin: RelOrigin,
    rel_type: RelType,
    edges: &[ProducerEdge],
    now_text: &str,
) -> Result<Option<ReplaceOutcome>> {
    let stored = sid(scope_id);
    let Some(src_updated) = memory_updated_at(s, scope, stored, source_key)? else {
        return Ok(None);
    };
    let existing: Vec<(String, String, String)> = s
        .query(
            "SELECT id, target_key, status FROM memory_relationships
             WHERE scope = $1 AND scope_id = $2 AND source_key = $3 AND origin = $4 AND type = $5
             ORDER BY target_key",
            &[
                &scope.as_str(),
                &stored,
                &source_key.as_str(),
                &origin.as_str(),
                &rel_type.as_str(),
            ],
        )?
        .iter()
        .map(|r| Ok((col(r, 0)?, col(r, 1)?, col(r, 2)?)))
        .collect::<Result<_>>()?;
    let mut wanted: Vec<&ProducerEdge> = Vec::new();
    for e in edges {
        if !wanted.iter().any(|w| w.target_key == e.target_key) {
            wanted.push(e);
        }
    }
    let mut out = ReplaceOutcome::default();
    let terminal = |status: &str| status.parse::<RelStatus>().is_ok_and(RelStatus::is_curation_terminal);
    let mut preserved: Vec<&str> = Vec::new();
    for (id, target, status) in &existing {
        if terminal(status) {
            if let (Ok(k), Ok(st)) = (Key::parse_strict(target), status.parse::<RelStatus>()) {
                out.preserved.push((k, st));
            }
            preserved.push(target);
            continue;
        }
        if !wanted.iter().any(|w| w.target_key.as_str() == target) {
            s.exec("DELETE FROM memory_relationships WHERE id = $1", &[id])?;
            out.removed += 1;
        }
    }
    let src_ts = src_updated.map(format_db_ts);
    for e in wanted {
        let target = e.target_key.as_str();
        if preserved.contains(&target) {
            continue;
        }
        if let Some((id, _, _)) = existing.iter().find(|(_, t, _)| t == target) {
            s.exec(
                "UPDATE memory_relationships SET status = $1, confidence = $2, rank = $3, attributes_json = $4,
                     source_updated_at = $5, updated_at = $6 WHERE id = $7",
                &[
                    &e.status.as_str(),
                    &e.confidence,
                    &e.rank,
                    &e.attributes_json,
                    &src_ts,
                    &now_text,
                    id,
                ],
            )?;
            out.updated += 1;
            continue;
        }
        if e.target_key == *source_key || memory_updated_at(s, scope, stored, &e.target_key)?.is_none() {
            out.dangling.push(e.target_key.clone());
            continue;
        }
        s.exec(
            "INSERT INTO memory_relationships (id, scope, scope_id, source_key, target_key, type, origin, status,
                 confidence, rank, attributes_json, source_updated_at, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13)",
            &[
                &e.new_id,
                &scope.as_str(),
                &stored,
                &source_key.as_str(),
                &target,
                &rel_type.as_str(),
                &origin.as_str(),
                &e.status.as_str(),
                &e.confidence,
                &e.rank,
                &e.attributes_json,
                &src_ts,
                &now_text,
            ],
        )?;
        out.added += 1;
    }
    Ok(Some(out))
}

#[allow(clippy::too_many_arguments)]
fn replace_producer_edges_in(
    s: &mut Sql<'_>,
    scope: Scope,
    scope_id: Option<&str>,
    source_key: &Key,
    origin: RelOrigin,
    rel_type: RelType,
    edges: &[ProducerEdge],
    now: DateTime<Utc>,
) -> Result<ReplaceOutcome> {
    check_producer_edges(edges).map_err(StoreError::Invalid)?;
    replace_in(
        s,
        scope,
        scope_id,
        source_key,
        origin,
        rel_type,
        edges,
        &format_db_ts(now),
    )?
    .ok_or_else(|| {
        StoreError::Invalid(format!(
            "no memory {:?} in scope {scope} (scope id {:?}); cannot write its relationships",
            source_key.as_str(),
            sid(scope_id)
        ))
    })
}

// ---------------------------------------------------------------------------------------------------------------
// Dense vectors: a copy per process caught up from `cao_vector_state`, scanned exactly with cao-index's `dot`.

#[derive(Debug, Default)]
struct VectorCopy {
    model: String,
    dim: usize,
    seq: i64,
    removals: i64,
    pos: HashMap<String, usize>,
    /// Per entry: id, scope, scope id, type, live.
    ids: Vec<String>,
    slices: Vec<(Scope, Option<String>)>,
    types: Vec<MemoryType>,
    live: Vec<bool>,
    data: Vec<f32>,
}

impl VectorCopy {
    fn apply(&mut self, id: String, scope: Scope, scope_id: Option<String>, ty: MemoryType, v: Option<Vec<f32>>) {
        match (self.pos.get(&id).copied(), v) {
            (Some(i), Some(v)) => {
                self.data[i * self.dim..(i + 1) * self.dim].copy_from_slice(&v);
                self.slices[i] = (scope, scope_id);
                self.types[i] = ty;
                self.live[i] = true;
            }
            (Some(i), None) => self.live[i] = false,
            (None, Some(v)) => {
                self.pos.insert(id.clone(), self.ids.len());
                self.ids.push(id);
                self.slices.push((scope, scope_id));
                self.types.push(ty);
                self.live.push(true);
                self.data.extend_from_slice(&v);
            }
            (None, None) => {}
        }
    }
}

impl PgTables {
    fn refresh_vectors<T>(&self, model: &str, dim: usize, f: impl FnOnce(&VectorCopy) -> T) -> Result<T> {
        let mut copy = self.vectors.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        self.read(|s| {
            let r = s.one("SELECT seq, removals FROM cao_vector_state WHERE id = 1", &[])?;
            let (seq, removals): (i64, i64) = (col(&r, 0)?, col(&r, 1)?);
            let fresh = copy.model != model || copy.dim != dim || copy.removals != removals || seq < copy.seq;
            if fresh {
                *copy = VectorCopy {
                    model: model.to_owned(),
                    dim,
                    removals,
                    ..VectorCopy::default()
                };
            }
            if fresh || seq > copy.seq {
                let since = copy.seq;
                let rows = s.query(
                    "SELECT v.memory_id, m.scope, m.scope_id, m.memory_type, v.vector, v.model, v.dim
                     FROM cao_memory_vectors v JOIN memory_metadata m ON m.id = v.memory_id AND m.source_kind = 'native'
                     WHERE v.seq > $1",
                    &[&since],
                )?;
                for r in &rows {
                    let (scope, ty): (String, String) = (col(r, 1)?, col(r, 3)?);
                    let (Ok(scope), Ok(ty)) = (scope.parse::<Scope>(), ty.parse::<MemoryType>()) else {
                        continue;
                    };
                    let (row_model, row_dim): (String, i64) = (col(r, 5)?, col(r, 6)?);
                    let v = if row_model == model && row_dim == dim as i64 {
                        col::<Option<Vec<u8>>>(r, 4)?.and_then(|b| cao_index::decode_vector(&b, dim))
                    } else {
                        None
                    };
                    copy.apply(col(r, 0)?, scope, unsid(col(r, 2)?), ty, v);
                }
                copy.seq = seq;
            }
            Ok(())
        })?;
        Ok(f(&copy))
    }
}

// ---------------------------------------------------------------------------------------------------------------

impl Reads for PgTables {
    fn get(&self, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<Option<MemoryRow>> {
        self.read(|s| rows::get(s, scope, scope_id, key))
    }

    fn find_key(&self, vis: &Visibility, key: &Key) -> Result<Option<MemoryRow>> {
        self.read(|s| rows::find_key(s, vis, key))
    }

    fn list(&self, filter: &ListFilter) -> Result<Vec<MemoryRow>> {
        self.read(|s| rows::list(s, filter))
    }

    fn rows_by_ids(&self, ids: &[&str]) -> Result<Vec<MemoryRow>> {
        self.read(|s| rows::by_ids(s, ids))
    }

    fn recency_pool(&self, vis: &Visibility, memory_type: Option<MemoryType>, limit: usize) -> Result<Vec<MemoryRow>> {
        self.read(|s| rows::recency(s, vis, memory_type, limit))
    }

    fn recency_pool_last(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        limit: usize,
    ) -> Result<Vec<MemoryRow>> {
        self.read(|s| rows::recency_last(s, vis, memory_type, limit))
    }

    fn recency_page(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        cursor: &RecencyCursor<'_>,
        limit: usize,
    ) -> Result<Option<Vec<MemoryRow>>> {
        self.read(|s| rows::recency_page(s, vis, memory_type, cursor, limit))
    }

    fn usage_pool(&self, vis: &Visibility, memory_type: Option<MemoryType>, limit: usize) -> Result<Vec<MemoryRow>> {
        self.read(|s| rows::usage(s, vis, memory_type, limit))
    }

    fn metadata_pool(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<MemoryRow>> {
        self.read(|s| rows::metadata(s, vis, memory_type, query, limit))
    }

    fn bm25_pool(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        query: &str,
        limit: usize,
        scorer: &dyn LexicalScorer,
    ) -> Result<Vec<(MemoryRow, f64)>> {
        let terms = cao_index::search_tokens(query);
        self.bm25_pool_budgeted(vis, memory_type, &terms, limit, scorer, PoolBudget::RECALL)
    }

    fn bm25_pool_terms(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        terms: &[String],
        limit: usize,
        scorer: &dyn LexicalScorer,
    ) -> Result<Vec<(MemoryRow, f64)>> {
        self.bm25_pool_budgeted(vis, memory_type, terms, limit, scorer, PoolBudget::RECALL)
    }

    fn bm25_pool_budgeted(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        terms: &[String],
        limit: usize,
        scorer: &dyn LexicalScorer,
        pool: PoolBudget,
    ) -> Result<Vec<(MemoryRow, f64)>> {
        if terms.is_empty() || vis.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        self.read(|s| super::lexical::pool(s, vis, memory_type, terms, limit, scorer, pool))
    }

    fn bm25_scores(&self, query: &str, rows: &[&MemoryRow], scorer: &dyn LexicalScorer) -> Result<Vec<Option<f64>>> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        self.read(|s| super::lexical::scores(s, query, rows, scorer))
    }

    fn dense_top(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        model: &str,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<(String, f32)>> {
        cao_index::check_vector(model, query).map_err(StoreError::Invalid)?;
        if vis.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        self.refresh_vectors(model, query.len(), |c| {
            let mut scored: Vec<(f32, usize)> = (0..c.ids.len())
                .filter(|&i| {
                    c.live[i]
                        && vis.allows(c.slices[i].0, c.slices[i].1.as_deref())
                        && memory_type.is_none_or(|t| t == c.types[i])
                })
                .map(|i| (cao_index::dot(&c.data[i * c.dim..(i + 1) * c.dim], query), i))
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| c.ids[a.1].cmp(&c.ids[b.1])));
            scored.truncate(k);
            scored.into_iter().map(|(s, i)| (c.ids[i].clone(), s)).collect()
        })
    }

    fn dense_scores(&self, model: &str, query: &[f32], ids: &[&str]) -> Result<Vec<Option<f32>>> {
        cao_index::check_vector(model, query).map_err(StoreError::Invalid)?;
        let dim = query.len();
        self.refresh_vectors(model, dim, |c| {
            ids.iter()
                .map(|id| {
                    let i = *c.pos.get(*id)?;
                    c.live[i].then(|| cao_index::dot(&c.data[i * dim..(i + 1) * dim], query))
                })
                .collect()
        })
    }

    fn vector_counts(&self, model: &str) -> Result<VectorCounts> {
        self.read(|s| {
            let r = s.one(
                "SELECT count(*), count(v.memory_id) FROM memory_metadata m LEFT JOIN cao_memory_vectors v
                     ON v.memory_id = m.id AND v.model = $1 AND v.vector IS NOT NULL
                 WHERE m.source_kind = 'native'",
                &[&model],
            )?;
            let (all, with): (i64, i64) = (col(&r, 0)?, col(&r, 1)?);
            let with = usize::try_from(with).unwrap_or(0);
            Ok(VectorCounts {
                with,
                without: usize::try_from(all).unwrap_or(0).saturating_sub(with),
            })
        })
    }

    fn rows_without_vector(&self, model: &str, after: Option<&str>, limit: usize) -> Result<Vec<MemoryRow>> {
        let limit = big(limit as u64)?;
        self.read(|s| {
            let text = format!(
                "SELECT {} FROM memory_metadata m LEFT JOIN cao_memory_vectors v
                     ON v.memory_id = m.id AND v.model = $1 AND v.vector IS NOT NULL
                 WHERE m.source_kind = 'native' AND v.memory_id IS NULL AND m.id > $2
                 ORDER BY m.id LIMIT $3",
                rows::ROW_COLUMNS
            );
            rows::rows_of(s, &text, &[&model, &after.unwrap_or(""), &limit])
        })
    }

    fn scope_counts(&self) -> Result<Vec<(Scope, Option<String>, u64)>> {
        self.read(rows::scope_counts)
    }

    fn created_per_day(&self, scope: Scope, scope_id: Option<&str>, since: &str) -> Result<Vec<(String, u64)>> {
        self.read(|s| rows::created_per_day(s, scope, scope_id, since))
    }

    fn change_marks(&self) -> Result<(u64, Vec<(String, u64)>)> {
        self.read(|s| {
            let docs = rows::docs(s)?;
            let heads = s
                .query(
                    "SELECT container, entries FROM cao_journal_meta ORDER BY container",
                    &[],
                )?
                .iter()
                .map(|r| Ok((col(r, 0)?, small(col(r, 1)?))))
                .collect::<Result<Vec<_>>>()?;
            Ok((docs, heads))
        })
    }

    fn related_keys_of(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        keys: &[&str],
    ) -> Result<HashMap<String, RelatedKeys>> {
        let keys: Vec<String> = keys.iter().take(400).map(|k| (*k).to_owned()).collect();
        let mut out: HashMap<String, RelatedKeys> = HashMap::new();
        if keys.is_empty() {
            return Ok(out);
        }
        self.read(|s| {
            for r in s.query(
                "SELECT \"key\", related_keys FROM memory_metadata
                 WHERE scope = $1 AND scope_id = $2 AND source_kind = 'native' AND \"key\" = ANY($3::text[])",
                &[&scope.as_str(), &sid(scope_id), &keys],
            )? {
                out.entry(col(&r, 0)?).or_default().related_keys_csv = col(&r, 1)?;
            }
            for r in s.query(
                "SELECT source_key, target_key FROM memory_relationships
                 WHERE scope = $1 AND scope_id = $2 AND type = 'relates_to' AND status = 'active'
                   AND source_key = ANY($3::text[])
                 ORDER BY source_key, (rank IS NULL), rank, target_key",
                &[&scope.as_str(), &sid(scope_id), &keys],
            )? {
                out.entry(col(&r, 0)?).or_default().edge_targets.push(col(&r, 1)?);
            }
            Ok(())
        })?;
        Ok(out)
    }

    fn aliases(&self, project_id: &str) -> Result<Vec<ProjectAlias>> {
        self.read(|s| {
            s.query(
                "SELECT alias, project_id, kind, created_at FROM project_aliases WHERE project_id = $1
                 ORDER BY created_at, alias",
                &[&project_id],
            )?
            .iter()
            .map(|r| {
                Ok(ProjectAlias {
                    alias: col(r, 0)?,
                    project_id: col(r, 1)?,
                    kind: col(r, 2)?,
                    created_at: col::<Option<String>>(r, 3)?.as_deref().and_then(parse_db_ts),
                })
            })
            .collect()
        })
    }

    fn relationship(&self, id: &str) -> Result<Option<RelationshipRecord>> {
        self.read(|s| edge_by_id(s, id))
    }

    fn relationships(&self, filter: &RelationshipFilter) -> Result<Vec<RelationshipRecord>> {
        self.read(|s| relationships_window(s, filter, None))
    }

    fn relationships_page(
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
        self.read(|s| {
            let mut args = Args::default();
            let w = relationship_where(filter, &mut args);
            let r = s.one(
                &format!("SELECT count(*) FROM memory_relationships r {w}"),
                &args.refs(),
            )?;
            let total: i64 = col(&r, 0)?;
            let page = relationships_window(s, filter, Some((offset, limit)))?;
            Ok((page, usize::try_from(total).unwrap_or(0)))
        })
    }

    fn relationships_slice(
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
        self.read(|s| relationships_window(s, filter, Some((offset, limit))))
    }

    fn relationships_count_capped(&self, filter: &RelationshipFilter, cap: usize) -> Result<usize> {
        self.read(|s| {
            let mut args = Args::default();
            let w = relationship_where(filter, &mut args);
            let c = args.push(big(cap as u64)?);
            let r = s.one(
                &format!("SELECT count(*) FROM (SELECT 1 FROM memory_relationships r {w} LIMIT {c}) AS x"),
                &args.refs(),
            )?;
            Ok(usize::try_from(col::<i64>(&r, 0)?).unwrap_or(0))
        })
    }

    fn active_supersedes_targets(&self, candidates: &[&MemoryRef]) -> Result<HashSet<MemoryRef>> {
        let mut out = HashSet::new();
        if candidates.is_empty() {
            return Ok(out);
        }
        let scopes: Vec<String> = candidates.iter().map(|m| m.scope.as_str().to_owned()).collect();
        let sids: Vec<String> = candidates.iter().map(|m| sid(m.scope_id()).to_owned()).collect();
        let keys: Vec<String> = candidates.iter().map(|m| m.key.as_str().to_owned()).collect();
        let rows = self.read(|s| {
            s.query(
                "SELECT DISTINCT r.scope, r.scope_id, r.target_key
                 FROM unnest($1::text[], $2::text[], $3::text[]) AS c(scope, sid, k)
                 JOIN memory_relationships r ON r.scope = c.scope AND r.scope_id = c.sid AND r.target_key = c.k
                 WHERE r.type = 'supersedes' AND r.status = 'active'",
                &[&scopes, &sids, &keys],
            )
        })?;
        for r in &rows {
            let (scope, scope_id, key): (String, String, String) = (col(r, 0)?, col(r, 1)?, col(r, 2)?);
            let (Ok(scope), Ok(key)) = (scope.parse::<Scope>(), Key::parse_strict(&key)) else {
                continue;
            };
            out.insert(MemoryRef::new(scope, unsid(scope_id), key));
        }
        Ok(out)
    }

    fn outcomes(&self, filter: &OutcomeFilter<'_>) -> Result<Vec<OutcomeRow>> {
        let mut args = Args::default();
        let mut text = String::from(
            "SELECT id, session_name, workflow_name, task_label, agent_profile, source_terminal_id, success, score,
                    friction_notes, created_at
             FROM workflow_outcomes WHERE true",
        );
        for (column, value) in [
            ("session_name", filter.session_name),
            ("agent_profile", filter.agent_profile),
            ("workflow_name", filter.workflow_name),
        ] {
            if let Some(v) = value {
                text.push_str(&format!(" AND {column} = {}", args.push(v.to_owned())));
            }
        }
        text.push_str(&format!(
            " ORDER BY created_at DESC, seq DESC LIMIT {}",
            args.push(big(filter.limit as u64)?)
        ));
        self.read(|s| {
            s.query(&text, &args.refs())?
                .iter()
                .map(|r| {
                    Ok(OutcomeRow {
                        id: col(r, 0)?,
                        session_name: col(r, 1)?,
                        workflow_name: col(r, 2)?,
                        task_label: col(r, 3)?,
                        agent_profile: col(r, 4)?,
                        source_terminal_id: col(r, 5)?,
                        success: col(r, 6)?,
                        score: col(r, 7)?,
                        friction_notes: col(r, 8)?,
                        created_at: col::<String>(r, 9).ok().as_deref().and_then(parse_db_ts),
                    })
                })
                .collect()
        })
    }

    fn outcome_counts(&self) -> Result<Vec<(Option<String>, u64, u64)>> {
        self.read(|s| {
            s.query(
                "SELECT agent_profile, count(*), count(*) FILTER (WHERE success) FROM workflow_outcomes
                 GROUP BY agent_profile ORDER BY agent_profile NULLS FIRST",
                &[],
            )?
            .iter()
            .map(|r| Ok((col(r, 0)?, small(col(r, 1)?), small(col(r, 2)?))))
            .collect()
        })
    }

    fn terminal(&self, id: &str) -> Result<Option<TerminalRow>> {
        self.read(|s| terminal_in(s, id))
    }

    fn decisions_named(&self, conversation: &str) -> Result<Vec<(Scope, Option<String>, String)>> {
        self.read(|s| {
            let mut out = Vec::new();
            for r in s.query(
                "SELECT scope, scope_id, \"key\" FROM cao_decisions_named WHERE conversation = $1
                 ORDER BY named_at, scope, scope_id, \"key\"",
                &[&conversation],
            )? {
                let (scope, scope_id, key): (String, String, String) = (col(&r, 0)?, col(&r, 1)?, col(&r, 2)?);
                if let Ok(scope) = scope.parse::<Scope>() {
                    out.push((scope, unsid(scope_id), key));
                }
            }
            Ok(out)
        })
    }

    fn journal_read_dyn(&self, f: &mut dyn FnMut(&dyn JournalOps) -> Result<()>) -> Result<()> {
        self.read(|s| {
            let j = PgJournal::new(s);
            f(&j)
        })
    }

    fn quick_check(&self) -> Result<Option<String>> {
        // The database keeps its own pages sound; a failed read is the only damage this backend can see.
        self.read(|s| s.one("SELECT 1", &[]).map(|_| None))
    }
}

fn terminal_in(s: &mut Sql<'_>, id: &str) -> Result<Option<TerminalRow>> {
    s.opt(
        "SELECT id, provider, session_name, agent_profile, cwd, created_at, updated_at FROM cao_terminals WHERE id = $1",
        &[&id],
    )?
    .map(|r| {
        Ok(TerminalRow {
            id: col(&r, 0)?,
            provider: col(&r, 1)?,
            session_name: col(&r, 2)?,
            agent_profile: col(&r, 3)?,
            cwd: col(&r, 4)?,
            created_at: col::<Option<String>>(&r, 5)?.as_deref().and_then(parse_db_ts),
            updated_at: col::<Option<String>>(&r, 6)?.as_deref().and_then(parse_db_ts),
        })
    })
    .transpose()
}

impl Writes for PgTables {
    fn upsert_relationship(&self, row: &RelationshipRow, now: DateTime<Utc>) -> Result<RelationshipRecord> {
        if row.id.is_empty() {
            return Err(StoreError::Invalid("empty relationship id".to_owned()));
        }
        check_values(row.confidence, row.attributes_json.as_deref())?;
        let stored = row.stored_scope_id().to_owned();
        self.write(|s| {
            for key in [&row.source_key, &row.target_key] {
                if memory_updated_at(s, row.scope, &stored, key)?.is_none() {
                    return Err(StoreError::Invalid(format!(
                        "no memory {:?} in scope {} (scope id {stored:?}); both ends of an edge must exist in one scope",
                        key.as_str(),
                        row.scope
                    )));
                }
            }
            let existing = s.opt(
                "SELECT id FROM memory_relationships WHERE scope = $1 AND scope_id = $2 AND source_key = $3
                 AND target_key = $4 AND type = $5 AND origin = $6",
                &[
                    &row.scope.as_str(),
                    &stored,
                    &row.source_key.as_str(),
                    &row.target_key.as_str(),
                    &row.rel_type.as_str(),
                    &row.origin.as_str(),
                ],
            )?;
            let source_ts = row.source_updated_at.map(format_db_ts);
            let now_text = format_db_ts(now);
            let id = match existing {
                Some(r) => {
                    let id: String = col(&r, 0)?;
                    s.exec(
                        "UPDATE memory_relationships SET status = $1, confidence = $2, rank = $3, attributes_json = $4,
                             source_updated_at = coalesce($5, source_updated_at), updated_at = $6
                         WHERE id = $7",
                        &[
                            &row.status.as_str(),
                            &row.confidence,
                            &row.rank,
                            &row.attributes_json,
                            &source_ts,
                            &now_text,
                            &id,
                        ],
                    )?;
                    id
                }
                None => {
                    s.exec(
                        "INSERT INTO memory_relationships (id, scope, scope_id, source_key, target_key, type, origin,
                             status, confidence, rank, attributes_json, source_updated_at, created_at, updated_at)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13)",
                        &[
                            &row.id,
                            &row.scope.as_str(),
                            &stored,
                            &row.source_key.as_str(),
                            &row.target_key.as_str(),
                            &row.rel_type.as_str(),
                            &row.origin.as_str(),
                            &row.status.as_str(),
                            &row.confidence,
                            &row.rank,
                            &row.attributes_json,
                            &source_ts,
                            &now_text,
                        ],
                    )?;
                    row.id.clone()
                }
            };
            edge_by_id(s, &id)?.ok_or_else(|| StoreError::Invalid(format!("relationship {id:?} vanished")))
        })
    }

    fn set_relationship_status(
        &self,
        id: &str,
        to: RelStatus,
        refuse: &[RelStatus],
        now: DateTime<Utc>,
    ) -> Result<StatusChange> {
        self.write(|s| {
            let Some(current) = edge_by_id(s, id)? else {
                return Ok(StatusChange::NotFound);
            };
            if refuse.contains(&current.row.status) {
                return Ok(StatusChange::Refused(current));
            }
            s.exec(
                "UPDATE memory_relationships SET status = $1, updated_at = $2 WHERE id = $3",
                &[&to.as_str(), &format_db_ts(now), &id],
            )?;
            let after =
                edge_by_id(s, id)?.ok_or_else(|| StoreError::Invalid(format!("relationship {id:?} vanished")))?;
            Ok(StatusChange::Changed(after))
        })
    }

    fn replace_producer_edges(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        source_key: &Key,
        origin: RelOrigin,
        rel_type: RelType,
        edges: &[ProducerEdge],
        now: DateTime<Utc>,
    ) -> Result<ReplaceOutcome> {
        self.write(|s| replace_producer_edges_in(s, scope, scope_id, source_key, origin, rel_type, edges, now))
    }

    fn replace_producer_edges_many(
        &self,
        origin: RelOrigin,
        rel_type: RelType,
        items: &[ProducerReplace<'_>],
        now: DateTime<Utc>,
    ) -> Result<Vec<Option<ReplaceOutcome>>> {
        for item in items {
            check_producer_edges(item.edges).map_err(StoreError::Invalid)?;
        }
        let now_text = format_db_ts(now);
        self.write(|s| {
            items
                .iter()
                .map(|i| {
                    replace_in(
                        s,
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

    fn purge_relationships(&self, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<usize> {
        Ok(self.purge_relationships_returning(scope, scope_id, key)?.len())
    }

    fn purge_relationships_returning(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        key: &Key,
    ) -> Result<Vec<EdgeIdentity>> {
        self.write(|s| {
            let args: [Param<'_>; 3] = [&scope.as_str(), &sid(scope_id), &key.as_str()];
            let gone = s
                .query(
                    "SELECT id, source_key, target_key, type FROM memory_relationships
                     WHERE scope = $1 AND scope_id = $2 AND (source_key = $3 OR target_key = $3)
                     ORDER BY source_key, target_key, type, origin",
                    &args,
                )?
                .iter()
                .map(|r| {
                    Ok(EdgeIdentity {
                        id: col(r, 0)?,
                        source_key: col(r, 1)?,
                        target_key: col(r, 2)?,
                        rel_type: col(r, 3)?,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            s.exec(
                "DELETE FROM memory_relationships WHERE scope = $1 AND scope_id = $2 AND (source_key = $3 OR target_key = $3)",
                &args,
            )?;
            Ok(gone)
        })
    }

    fn insert_outcome(&self, row: &OutcomeRow, at: DateTime<Utc>) -> Result<()> {
        let created = format_db_ts(row.created_at.unwrap_or(at));
        self.write(|s| {
            s.exec(
                "INSERT INTO workflow_outcomes (id, session_name, workflow_name, task_label, agent_profile,
                   source_terminal_id, success, score, friction_notes, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                &[
                    &row.id,
                    &row.session_name,
                    &row.workflow_name,
                    &row.task_label,
                    &row.agent_profile,
                    &row.source_terminal_id,
                    &row.success,
                    &row.score,
                    &row.friction_notes,
                    &created,
                ],
            )
            .map(|_| ())
        })
    }

    fn upsert_terminal(&self, row: &TerminalRow, now: DateTime<Utc>) -> Result<(TerminalRow, bool)> {
        let now_s = format_db_ts(now);
        self.write(|s| {
            let existed = s
                .opt("SELECT 1 FROM cao_terminals WHERE id = $1", &[&row.id])?
                .is_some();
            s.exec(
                "INSERT INTO cao_terminals (id, provider, session_name, agent_profile, cwd, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $6)
                 ON CONFLICT (id) DO UPDATE SET provider = excluded.provider, session_name = excluded.session_name,
                   agent_profile = excluded.agent_profile, cwd = excluded.cwd, updated_at = excluded.updated_at",
                &[
                    &row.id,
                    &row.provider,
                    &row.session_name,
                    &row.agent_profile,
                    &row.cwd,
                    &now_s,
                ],
            )?;
            let stored = terminal_in(s, &row.id)?.unwrap_or_else(|| TerminalRow {
                created_at: Some(now),
                updated_at: Some(now),
                ..row.clone()
            });
            Ok((stored, !existed))
        })
    }

    fn record_decisions_named(
        &self,
        conversation: &str,
        named: &[(Scope, Option<String>, String)],
        now: &str,
    ) -> Result<()> {
        let cutoff = parse_db_ts(now).map(|t| {
            (t - chrono::Duration::days(30))
                .format("%Y-%m-%dT%H:%M:%SZ")
                .to_string()
        });
        self.write(|s| {
            if let Some(cutoff) = &cutoff {
                s.exec("DELETE FROM cao_decisions_named WHERE named_at < $1", &[cutoff])?;
            }
            for (scope, scope_id, key) in named {
                s.exec(
                    "INSERT INTO cao_decisions_named (conversation, scope, scope_id, \"key\", named_at)
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                    &[&conversation, &scope.as_str(), &sid(scope_id.as_deref()), key, &now],
                )?;
            }
            Ok(())
        })
    }

    fn put_vector_if_current(&self, memory_id: &str, content: &str, vector: VectorWrite<'_>) -> Result<bool> {
        self.write(|s| {
            let current = s.opt(
                "SELECT content FROM memory_metadata WHERE id = $1 AND source_kind = 'native'",
                &[&memory_id],
            )?;
            let current: Option<String> = current.map(|r| col(&r, 0)).transpose()?;
            if current.as_deref() != Some(content) {
                return Ok(false);
            }
            rows::vector_put(s, memory_id, vector.model, vector.vector)?;
            Ok(true)
        })
    }

    fn journal_write_dyn(&self, f: &mut dyn FnMut(&dyn JournalOps) -> Result<()>) -> Result<()> {
        self.write(|s| {
            let j = PgJournal::new(s);
            f(&j)
        })
    }

    fn journal_write_secure_dyn(&self, f: &mut dyn FnMut(&dyn JournalOps) -> Result<()>) -> Result<Checkpoint> {
        self.journal_write_dyn(f)?;
        Ok(no_checkpoint())
    }

    fn vacuum(&self) -> Result<Checkpoint> {
        vacuum(&self.pool)?;
        Ok(no_checkpoint())
    }
}

/// What the embedded store's write-ahead-log checkpoint reports, for a backend without one.
pub(crate) fn no_checkpoint() -> Checkpoint {
    Checkpoint {
        busy: false,
        wal_frames: -1,
        checkpointed: 0,
    }
}

/// `VACUUM` the tables that hold memory text, so the space of deleted rows is reclaimed (outside a transaction).
///
/// Errors: the client's.
pub(crate) fn vacuum(pool: &Pool) -> Result<()> {
    let mut conn = checkout(pool)?;
    conn.vacuum()
}

/// The follow-up of a write on its own transaction.
pub(crate) struct PgFollowUp<'a, 'c> {
    pub(crate) sql: RefCell<&'a mut Sql<'c>>,
}

impl FollowUpOps for PgFollowUp<'_, '_> {
    fn bm25_pool_budgeted(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        terms: &[String],
        limit: usize,
        scorer: &dyn LexicalScorer,
        pool: PoolBudget,
    ) -> Result<Vec<(MemoryRow, f64)>> {
        super::lexical::pool(&mut self.sql.borrow_mut(), vis, memory_type, terms, limit, scorer, pool)
    }

    fn set_related_keys(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        key: &Key,
        related_keys: Option<&str>,
    ) -> Result<bool> {
        rows::set_related_keys_in(&mut self.sql.borrow_mut(), scope, scope_id, key, related_keys)
    }

    fn producer_edges(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        source_key: &Key,
        origin: RelOrigin,
        rel_type: RelType,
    ) -> Result<Vec<RelationshipRecord>> {
        producer_edges_in(
            &mut self.sql.borrow_mut(),
            scope,
            scope_id,
            source_key,
            origin,
            rel_type,
        )
    }

    fn replace_producer_edges(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        source_key: &Key,
        origin: RelOrigin,
        rel_type: RelType,
        edges: &[ProducerEdge],
        now: DateTime<Utc>,
    ) -> Result<ReplaceOutcome> {
        replace_producer_edges_in(
            &mut self.sql.borrow_mut(),
            scope,
            scope_id,
            source_key,
            origin,
            rel_type,
            edges,
            now,
        )
    }
}
