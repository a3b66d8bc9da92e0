//! `cao-lifecycle`: typed relationships between memories (layer 3; depends on `cao-core` and `cao-store` only).
//!
//! Memories are linked by durable, provenance-tagged edges (`relates_to`, `contradiction`, `supersedes`) held in the
//! `memory_relationships` table (spec 000 "Typed relationships"). [`RelationshipService`] is the one writer of that
//! table above the index: human edges ([`RelationshipService::create`]), producer recomputes
//! ([`RelationshipService::recompute`]), operator curation ([`RelationshipService::promote`],
//! [`RelationshipService::reject`], [`RelationshipService::soft_delete`]), mirroring of the legacy `related_keys`
//! csv ([`RelationshipService::mirror_legacy_related_keys`]) and the purge of a forgotten memory's edges.
//!
//! Invariants:
//! - Every argument is validated before any write (type, origin, status, confidence in `[0, 1]`, attributes a JSON
//!   object of at most 2048 bytes, keys, scope id shape); a bad argument writes nothing.
//! - The attributes of a federated edge pass the secret gate like federated content ([`cao_core::secret::scan`] over
//!   the encoded object and over every key and string value in it): [`RelationshipService::create`] refuses them
//!   ([`LifecycleError::Secret`]), a recompute skips the edge ([`SkipReason::SecretDetected`]).
//! - Both ends of an edge are existing memories of the same scope and scope id; self-links are refused.
//! - A producer recompute replaces only rows of its own origin and type for one source; it never writes the
//!   `human` origin, so no recompute changes a human edge.
//! - `rejected` and `deleted` are operator verdicts: a recompute neither resurrects nor removes such a row and reports
//!   each one back; `promote` refuses them (re-create the edge instead).
//! - An edge is stale when it was computed before its source memory's last edit
//!   (`source_updated_at < memory updated_at`); unknown times are never stale.
//! - Outputs are content-free: keys, vocabulary, numbers and times, never a memory body.
//!
//! The [`eligibility`] module holds the injection eligibility registry and the built-in `lifecycle.supersedes`
//! source (off unless `memory.lifecycle.enabled`).

use cao_core::{Clock, Key, Scope};
use cao_store::{ProducerEdge, RelationshipRecord, RelationshipRow, StatusChange, Store, StoreError};
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::sync::Arc;

pub mod eligibility;

pub use cao_store::{MAX_ATTRIBUTES_BYTES, RelOrigin, RelStatus, RelType, RelationshipFilter};

/// Most edges one recompute may carry (the reference's `MAX_EDGES_PER_MUTATION`).
pub const MAX_EDGES_PER_RECOMPUTE: usize = 64;

/// Most targets mirrored from a legacy `related_keys` csv (the reference reads at most three).
pub const MAX_LEGACY_RELATED_KEYS: usize = 3;

/// Bytes of a legacy `related_keys` csv that are read (the reference's column limit).
pub const MAX_LEGACY_RELATED_KEYS_BYTES: usize = 1024;

/// Why a relationship operation failed. Each message is one line naming the offending value.
#[derive(Debug, thiserror::Error)]
pub enum LifecycleError {
    /// A caller argument is invalid (bad vocabulary, confidence, attributes, key, scope id, self-link, too many
    /// edges, a producer using the `human` origin). Nothing was written.
    #[error("{0}")]
    Invalid(String),
    /// No relationship has this id.
    #[error("relationship not found: {id}")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// An endpoint memory does not exist in the edge's scope and scope id. Nothing was written.
    #[error("no memory {key:?} in scope {scope} (scope id {scope_id:?}); both ends of an edge must exist in one scope")]
    MissingMemory {
        /// The missing key.
        key: String,
        /// The scope searched.
        scope: Scope,
        /// The scope id searched (`""` for global and federated).
        scope_id: String,
    },
    /// The attributes of a federated edge match a secret pattern (named; the matched text is never echoed). Nothing
    /// was written.
    #[error(
        "refused: the attributes match secret pattern {pattern}; federated relationships must not contain credentials"
    )]
    Secret {
        /// The name of the first matching pattern ([`cao_core::secret::PATTERN_NAMES`]).
        pattern: &'static str,
    },
    /// `promote` on a rejected or deleted edge. Nothing was written.
    #[error("cannot promote relationship {id}: it is {status}; re-create it instead")]
    Refused {
        /// The edge.
        id: String,
        /// Its current status.
        status: RelStatus,
    },
    /// The store failed (database busy, unreadable row, an endpoint deleted concurrently).
    #[error(transparent)]
    Store(StoreError),
}

impl LifecycleError {
    /// Stable snake_case code of the variant (for payloads and HTTP bodies).
    pub fn kind(&self) -> &'static str {
        match self {
            LifecycleError::Invalid(_) => "invalid",
            LifecycleError::NotFound { .. } => "not_found",
            LifecycleError::MissingMemory { .. } => "missing_memory",
            LifecycleError::Refused { .. } => "refused",
            LifecycleError::Secret { .. } => "secret_detected",
            LifecycleError::Store(_) => "index",
        }
    }
}

pub mod audit;
pub use audit::{RelationshipAudit, RelationshipChange, RelationshipEvent};

/// Result alias of this crate.
pub type Result<T, E = LifecycleError> = std::result::Result<T, E>;

/// An edge as shown to callers (the reference's `RelationshipDTO`, same field names and order). Content-free.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Relationship {
    /// Edge id (uuid4 string).
    pub id: String,
    /// Scope of both ends.
    pub scope: Scope,
    /// Scope id of both ends; `null` for global and federated.
    pub scope_id: Option<String>,
    /// Source memory key.
    pub source_key: String,
    /// Target memory key.
    pub target_key: String,
    /// Kind of edge.
    #[serde(rename = "type", serialize_with = "display")]
    pub rel_type: RelType,
    /// Who wrote it.
    #[serde(serialize_with = "display")]
    pub origin: RelOrigin,
    /// Curation state.
    #[serde(serialize_with = "display")]
    pub status: RelStatus,
    /// Evidence in `[0, 1]`, or `null` (no evidence).
    pub confidence: Option<f64>,
    /// Ordering hint, or `null`.
    pub rank: Option<i64>,
    /// The attributes object, or `null` (also when the stored text is not valid JSON).
    pub attributes: Option<serde_json::Value>,
    /// The source memory's `updated_at` when the edge was computed. Times serialise as `YYYY-MM-DDTHH:MM:SSZ`
    /// ([`cao_core::time::serde_ts_opt`]).
    #[serde(serialize_with = "cao_core::time::serde_ts_opt")]
    pub source_updated_at: Option<DateTime<Utc>>,
    /// First write.
    #[serde(serialize_with = "cao_core::time::serde_ts_opt")]
    pub created_at: Option<DateTime<Utc>>,
    /// Last change.
    #[serde(serialize_with = "cao_core::time::serde_ts_opt")]
    pub updated_at: Option<DateTime<Utc>>,
    /// Computed before the source memory's last edit (a recompute is due).
    pub stale: bool,
}

fn display<T: std::fmt::Display, S: serde::Serializer>(v: &T, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_str(v)
}

impl From<RelationshipRecord> for Relationship {
    fn from(rec: RelationshipRecord) -> Self {
        let stale = rec.is_stale();
        let r = rec.row;
        Relationship {
            attributes: r.attributes_json.as_deref().and_then(|a| serde_json::from_str(a).ok()),
            id: r.id,
            scope: r.scope,
            scope_id: r.scope_id,
            source_key: r.source_key.to_string(),
            target_key: r.target_key.to_string(),
            rel_type: r.rel_type,
            origin: r.origin,
            status: r.status,
            confidence: r.confidence,
            rank: r.rank,
            source_updated_at: r.source_updated_at,
            created_at: r.created_at,
            updated_at: r.updated_at,
            stale,
        }
    }
}

/// Arguments of [`RelationshipService::create`]. Vocabulary fields are raw strings so they are validated in one
/// place with one-line errors.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRelationship {
    /// Scope of both ends.
    pub scope: Scope,
    /// Scope id of both ends: `None` for global and federated, the project id / session / agent name otherwise.
    pub scope_id: Option<String>,
    /// Source key (sanitised with the service rule, [`Key::sanitize`]).
    pub source_key: String,
    /// Target key (sanitised likewise; must differ from the source).
    pub target_key: String,
    /// `relates_to`, `contradiction` or `supersedes`.
    pub rel_type: String,
    /// Origin; `None` = `human`.
    pub origin: Option<String>,
    /// Status; `None` = `active` (the reference's default). `superseded` is refused.
    pub status: Option<String>,
    /// Evidence in `[0, 1]`, or `None`.
    pub confidence: Option<f64>,
    /// Ordering hint.
    pub rank: Option<i64>,
    /// A JSON object of at most [`MAX_ATTRIBUTES_BYTES`] bytes when encoded compactly.
    pub attributes: Option<serde_json::Value>,
}

/// One edge of a producer's full current set for a source.
#[derive(Debug, Clone, PartialEq)]
pub struct ProducerEdgeInput {
    /// Target key (sanitised with [`Key::sanitize`]).
    pub target_key: String,
    /// `proposal` or `active`; anything else is skipped and reported.
    pub status: RelStatus,
    /// Evidence in `[0, 1]`, or `None`.
    pub confidence: Option<f64>,
    /// Ordering hint.
    pub rank: Option<i64>,
    /// A JSON object of at most [`MAX_ATTRIBUTES_BYTES`] bytes.
    pub attributes: Option<serde_json::Value>,
}

/// Why a producer edge was not written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// The target key has nothing left after sanitising.
    InvalidKey,
    /// The target is the source.
    SelfLink,
    /// No such memory in the source's scope and scope id.
    Dangling,
    /// Status other than proposal/active, confidence outside `[0, 1]`, or invalid/oversized attributes.
    InvalidValue,
    /// The attributes of a federated edge match a secret pattern.
    SecretDetected,
}

/// A producer edge that was not written, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedEdge {
    /// The target as given (or sanitised, when sanitising succeeded).
    pub target_key: String,
    /// Why.
    pub reason: SkipReason,
}

/// An edge of the producer's own origin and type that an operator rejected or deleted, left untouched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PreservedEdge {
    /// Its target.
    pub target_key: String,
    /// `rejected` or `deleted`.
    #[serde(serialize_with = "display")]
    pub status: RelStatus,
}

/// What a recompute did (content-free). `preserved` and `skipped` are the refusals reported back to the producer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RecomputeReport {
    /// Rows inserted.
    pub added: usize,
    /// Rows rewritten.
    pub updated: usize,
    /// Rows deleted (the producer stopped reporting their target).
    pub removed: usize,
    /// Operator verdicts left untouched.
    pub preserved: Vec<PreservedEdge>,
    /// Edges not written.
    pub skipped: Vec<SkippedEdge>,
}

/// The relationship service over one index. Cheap to clone; `Send + Sync`. With a sink attached
/// ([`RelationshipService::with_audit`]) every committed change is reported to it, one [`RelationshipChange`] per edge.
#[derive(Debug, Clone)]
pub struct RelationshipService {
    store: Store,
    clock: Arc<dyn Clock>,
    audit: Option<Arc<dyn RelationshipAudit>>,
}

impl RelationshipService {
    /// A service writing to `index`, stamping times from `clock`.
    pub fn new(store: Store, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            audit: None,
        }
    }

    /// This service reporting every committed change to `sink` (see [`audit`]).
    #[must_use]
    pub fn with_audit(mut self, sink: Arc<dyn RelationshipAudit>) -> Self {
        self.audit = Some(sink);
        self
    }

    fn report(&self, event: RelationshipEvent, rel: &Relationship, outcome: &str) {
        if let Some(sink) = &self.audit {
            sink.record(&RelationshipChange {
                event,
                id: &rel.id,
                scope: rel.scope,
                scope_id: rel.scope_id.as_deref(),
                source_key: &rel.source_key,
                target_key: &rel.target_key,
                rel_type: rel.rel_type.as_str(),
                outcome,
            });
        }
    }

    /// The edges of one producer's `(scope, scope_id, source, origin, type)`, by target; empty without an audit sink
    /// (the snapshot exists only to report a recompute's changes).
    fn producer_snapshot(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        source: &Key,
        origin: RelOrigin,
        rel_type: RelType,
    ) -> Result<std::collections::BTreeMap<String, Relationship>> {
        if self.audit.is_none() {
            return Ok(std::collections::BTreeMap::new());
        }
        let filter = RelationshipFilter {
            scope: Some(scope),
            scope_id: Some(scope_id.unwrap_or_default().to_owned()),
            source_key: Some(source.clone()),
            target_key: None,
            status: None,
            stale: false,
        };
        Ok(self
            .list(&filter)?
            .into_iter()
            .filter(|r| r.origin == origin && r.rel_type == rel_type)
            .map(|r| (r.target_key.clone(), r))
            .collect())
    }

    /// Create (or re-create) one edge, by default a `human`, `active` one. An edge with the same identity
    /// `(scope, scope_id, source, target, type, origin)` is overwritten in place (same id): re-creating is how a
    /// rejected or deleted edge comes back.
    ///
    /// Errors: [`LifecycleError::Invalid`] (vocabulary, confidence, attributes, keys, scope id, self-link, status
    /// `superseded`); [`LifecycleError::MissingMemory`] when an end does not exist in the scope;
    /// [`LifecycleError::Store`].
    pub fn create(&self, req: NewRelationship) -> Result<Relationship> {
        let rel_type = parse_vocab::<RelType>(&req.rel_type)?;
        let origin = match req.origin.as_deref() {
            None => RelOrigin::Human,
            Some(o) => parse_vocab::<RelOrigin>(o)?,
        };
        let status = match req.status.as_deref() {
            None => RelStatus::Active,
            Some(s) => parse_vocab::<RelStatus>(s)?,
        };
        if status == RelStatus::Superseded {
            return Err(LifecycleError::Invalid(
                "status superseded is set only by lifecycle migrations; use proposal, active, rejected or deleted"
                    .to_owned(),
            ));
        }
        let confidence = check_confidence(req.confidence)?;
        let attributes_json = encode_attributes(req.attributes.as_ref())?;
        check_attribute_secrets(req.scope, req.attributes.as_ref())?;
        let scope_id = check_scope_id(req.scope, req.scope_id)?;
        let source_key = sanitize_key(&req.source_key)?;
        let target_key = sanitize_key(&req.target_key)?;
        if source_key == target_key {
            return Err(LifecycleError::Invalid(format!(
                "self-link refused: source and target are both {:?}",
                source_key.as_str()
            )));
        }
        for key in [&source_key, &target_key] {
            self.require_memory(req.scope, scope_id.as_deref(), key)?;
        }
        let source_updated_at = self
            .store
            .snapshot()
            .get(req.scope, scope_id.as_deref(), &source_key)?
            .map(|m| m.updated_at);
        let row = RelationshipRow {
            id: uuid::Uuid::new_v4().to_string(),
            scope: req.scope,
            scope_id,
            source_key,
            target_key,
            rel_type,
            origin,
            status,
            confidence,
            rank: req.rank,
            attributes_json,
            source_updated_at,
            created_at: None,
            updated_at: None,
        };
        let rel: Relationship = self.store.write().upsert_relationship(&row, self.clock.now())?.into();
        self.report(RelationshipEvent::Create, &rel, rel.status.as_str());
        Ok(rel)
    }

    /// Replace producer `origin`'s edges of `rel_type` leaving `source_key` with `edges`, its full current set
    /// (see [`cao_store::Writes::replace_producer_edges`] for the row rules). Edges that cannot be written are
    /// skipped and reported; rejected and deleted rows are preserved and reported.
    ///
    /// Errors: [`LifecycleError::Invalid`] when `origin` is `human` (human edges are written only by
    /// [`RelationshipService::create`]), there are more than [`MAX_EDGES_PER_RECOMPUTE`] edges, or the source key or
    /// scope id is invalid; [`LifecycleError::MissingMemory`] when the source does not exist;
    /// [`LifecycleError::Store`].
    pub fn recompute(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        source_key: &str,
        origin: RelOrigin,
        rel_type: RelType,
        edges: Vec<ProducerEdgeInput>,
    ) -> Result<RecomputeReport> {
        let checked = check_recompute(scope, scope_id, source_key, origin, edges)?;
        self.require_memory(scope, checked.scope_id.as_deref(), &checked.source)?;
        let before = self.producer_snapshot(scope, checked.scope_id.as_deref(), &checked.source, origin, rel_type)?;
        let out = self.store.write().replace_producer_edges(
            scope,
            checked.scope_id.as_deref(),
            &checked.source,
            origin,
            rel_type,
            &checked.valid,
            self.clock.now(),
        )?;
        self.recompute_report(scope, origin, rel_type, checked, &before, out)
    }

    /// [`RelationshipService::recompute`] of many sources' edges (one producer, one type) in one index transaction:
    /// a bulk writer (an import's related-memory pass) instead of one transaction per source. Each item is checked
    /// and written by the same rules and gets its own result: an invalid item or one whose source memory does not
    /// exist fails alone (nothing written for it).
    ///
    /// Errors: the whole call fails only on [`LifecycleError::Store`] (nothing written).
    pub fn recompute_many(
        &self,
        origin: RelOrigin,
        rel_type: RelType,
        items: Vec<RecomputeItem>,
    ) -> Result<Vec<Result<RecomputeReport>>> {
        let mut checked: Vec<Result<CheckedRecompute>> = Vec::with_capacity(items.len());
        for item in items {
            checked.push(check_recompute(
                item.scope,
                item.scope_id.as_deref(),
                &item.source_key,
                origin,
                item.edges,
            ));
        }
        let mut befores = Vec::with_capacity(checked.len());
        for c in checked.iter().flatten() {
            befores.push(self.producer_snapshot(c.scope, c.scope_id.as_deref(), &c.source, origin, rel_type)?);
        }
        let batch: Vec<cao_store::ProducerReplace<'_>> = checked
            .iter()
            .flatten()
            .map(|c| cao_store::ProducerReplace {
                scope: c.scope,
                scope_id: c.scope_id.as_deref(),
                source_key: &c.source,
                edges: &c.valid,
            })
            .collect();
        let mut outs = self
            .store
            .write()
            .replace_producer_edges_many(origin, rel_type, &batch, self.clock.now())?
            .into_iter();
        drop(batch);
        let mut befores = befores.into_iter();
        let mut reports = Vec::with_capacity(checked.len());
        for c in checked {
            let c = match c {
                Ok(c) => c,
                Err(e) => {
                    reports.push(Err(e));
                    continue;
                }
            };
            let before = befores.next().unwrap_or_default();
            let report = match outs.next().flatten() {
                Some(out) => self.recompute_report(c.scope, origin, rel_type, c, &before, out),
                None => Err(LifecycleError::MissingMemory {
                    key: c.source.to_string(),
                    scope: c.scope,
                    scope_id: c.scope_id.clone().unwrap_or_default(),
                }),
            };
            reports.push(report);
        }
        Ok(reports)
    }

    /// Audit what a recompute changed (when this service has a sink) and build its report.
    fn recompute_report(
        &self,
        scope: Scope,
        origin: RelOrigin,
        rel_type: RelType,
        checked: CheckedRecompute,
        before: &std::collections::BTreeMap<String, Relationship>,
        out: cao_store::ReplaceOutcome,
    ) -> Result<RecomputeReport> {
        let CheckedRecompute {
            scope_id,
            source,
            mut skipped,
            ..
        } = checked;
        if self.audit.is_some() && out.added + out.updated + out.removed > 0 {
            let after = self.producer_snapshot(scope, scope_id.as_deref(), &source, origin, rel_type)?;
            for (target, rel) in &after {
                match before.get(target).filter(|old| old.id == rel.id) {
                    None => self.report(RelationshipEvent::Recompute, rel, "added"),
                    Some(old) if !same_values(old, rel) => self.report(RelationshipEvent::Recompute, rel, "updated"),
                    Some(_) => {}
                }
            }
            for (target, rel) in before {
                if after.get(target).is_none_or(|new| new.id != rel.id) {
                    self.report(RelationshipEvent::Recompute, rel, "removed");
                }
            }
        }
        skipped.extend(out.dangling.into_iter().map(|k| SkippedEdge {
            target_key: k.to_string(),
            reason: SkipReason::Dangling,
        }));
        Ok(RecomputeReport {
            added: out.added,
            updated: out.updated,
            removed: out.removed,
            preserved: out
                .preserved
                .into_iter()
                .map(|(k, status)| PreservedEdge {
                    target_key: k.to_string(),
                    status,
                })
                .collect(),
            skipped,
        })
    }

    /// Mirror a memory's legacy `related_keys` csv as `relates_to` edges of origin `legacy_related_keys` (status
    /// active, no confidence, rank = position), replacing the previous mirror of that memory. The csv is read as the
    /// reference reads it: the first [`MAX_LEGACY_RELATED_KEYS_BYTES`] bytes, split on `,`, trimmed, empty parts and
    /// parts that are not already valid keys dropped, duplicates dropped, at most [`MAX_LEGACY_RELATED_KEYS`]
    /// targets. `None` or `""` mirrors nothing (and removes an earlier mirror).
    ///
    /// Errors: as [`RelationshipService::recompute`].
    pub fn mirror_legacy_related_keys(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        key: &Key,
        related_keys: Option<&str>,
    ) -> Result<RecomputeReport> {
        let edges = parse_related_keys(related_keys.unwrap_or(""))
            .into_iter()
            .enumerate()
            .map(|(i, k)| ProducerEdgeInput {
                target_key: k.to_string(),
                status: RelStatus::Active,
                confidence: None,
                rank: i64::try_from(i).ok(),
                attributes: None,
            })
            .collect();
        self.recompute(
            scope,
            scope_id,
            key.as_str(),
            RelOrigin::LegacyRelatedKeys,
            RelType::RelatesTo,
            edges,
        )
    }

    /// proposal (or any status but rejected/deleted) -> active.
    ///
    /// Errors: [`LifecycleError::NotFound`]; [`LifecycleError::Refused`] for a rejected or deleted edge (nothing
    /// written); [`LifecycleError::Store`].
    pub fn promote(&self, id: &str) -> Result<Relationship> {
        match self.store.write().set_relationship_status(
            id,
            RelStatus::Active,
            &RelStatus::CURATION_TERMINAL,
            self.clock.now(),
        )? {
            StatusChange::Changed(rec) => {
                let rel: Relationship = rec.into();
                self.report(RelationshipEvent::Promote, &rel, rel.status.as_str());
                Ok(rel)
            }
            StatusChange::Refused(rec) => Err(LifecycleError::Refused {
                id: rec.row.id,
                status: rec.row.status,
            }),
            StatusChange::NotFound => Err(LifecycleError::NotFound { id: id.to_owned() }),
        }
    }

    /// Any status -> rejected (durable: producers never overwrite or remove it).
    ///
    /// Errors: [`LifecycleError::NotFound`]; [`LifecycleError::Store`].
    pub fn reject(&self, id: &str) -> Result<Relationship> {
        let rel = self.set_status(id, RelStatus::Rejected)?;
        self.report(RelationshipEvent::Reject, &rel, rel.status.as_str());
        Ok(rel)
    }

    /// Any status -> deleted (soft delete: the row is kept for audit; producers never overwrite or remove it).
    ///
    /// Errors: [`LifecycleError::NotFound`]; [`LifecycleError::Store`].
    pub fn soft_delete(&self, id: &str) -> Result<Relationship> {
        let rel = self.set_status(id, RelStatus::Deleted)?;
        self.report(RelationshipEvent::Delete, &rel, rel.status.as_str());
        Ok(rel)
    }

    /// The edge with this id, if any. Errors: [`LifecycleError::Store`].
    pub fn get(&self, id: &str) -> Result<Option<Relationship>> {
        Ok(self.store.snapshot().relationship(id)?.map(Into::into))
    }

    /// Every edge matching `filter` (see [`RelationshipFilter`]), in identity order.
    /// Errors: [`LifecycleError::Store`].
    pub fn list(&self, filter: &RelationshipFilter) -> Result<Vec<Relationship>> {
        Ok(self
            .store
            .snapshot()
            .relationships(filter)?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// One page of [`RelationshipService::list`]: at most `limit` edges after the first `offset`, and how many match
    /// in all (the page is cut in SQL unless `filter.stale` is set). Errors: [`LifecycleError::Store`].
    pub fn list_page(
        &self,
        filter: &RelationshipFilter,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<Relationship>, usize)> {
        let (page, total) = self.store.snapshot().relationships_page(filter, offset, limit)?;
        Ok((page.into_iter().map(Into::into).collect(), total))
    }

    /// `limit` edges matching `filter` from `offset` of the listing order, without counting them all (a page of a
    /// long list costs the page). Errors: [`LifecycleError::Store`].
    pub fn list_slice(&self, filter: &RelationshipFilter, offset: usize, limit: usize) -> Result<Vec<Relationship>> {
        Ok(self
            .store
            .snapshot()
            .relationships_slice(filter, offset, limit)?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// How many edges match `filter` (the stale filter ignored), counted no further than `cap`.
    /// Errors: [`LifecycleError::Store`].
    pub fn count_capped(&self, filter: &RelationshipFilter, cap: usize) -> Result<usize> {
        Ok(self.store.snapshot().relationships_count_capped(filter, cap)?)
    }

    /// Delete every edge (any origin, any status) into or out of the memory `(key, scope, scope_id)`; called when it
    /// is forgotten. Returns the number of rows deleted; each is reported to the audit sink as a purge.
    /// Errors: [`LifecycleError::Store`].
    pub fn purge_memory(&self, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<usize> {
        let Some(sink) = &self.audit else {
            return Ok(self.store.write().purge_relationships(scope, scope_id, key)?);
        };
        let gone = self.store.write().purge_relationships_returning(scope, scope_id, key)?;
        for e in &gone {
            sink.record(&RelationshipChange {
                event: RelationshipEvent::Purge,
                id: &e.id,
                scope,
                scope_id,
                source_key: &e.source_key,
                target_key: &e.target_key,
                rel_type: &e.rel_type,
                outcome: "purged",
            });
        }
        Ok(gone.len())
    }

    fn set_status(&self, id: &str, to: RelStatus) -> Result<Relationship> {
        match self
            .store
            .write()
            .set_relationship_status(id, to, &[], self.clock.now())?
        {
            StatusChange::Changed(rec) | StatusChange::Refused(rec) => Ok(rec.into()),
            StatusChange::NotFound => Err(LifecycleError::NotFound { id: id.to_owned() }),
        }
    }

    fn require_memory(&self, scope: Scope, scope_id: Option<&str>, key: &Key) -> Result<()> {
        if self.store.snapshot().get(scope, scope_id, key)?.is_some() {
            Ok(())
        } else {
            Err(LifecycleError::MissingMemory {
                key: key.to_string(),
                scope,
                scope_id: scope_id.unwrap_or_default().to_owned(),
            })
        }
    }
}

/// Whether a recompute left an edge's values as they were (its `updated_at` is rewritten either way).
fn same_values(a: &Relationship, b: &Relationship) -> bool {
    a.status == b.status
        && a.confidence == b.confidence
        && a.rank == b.rank
        && a.attributes == b.attributes
        && a.source_updated_at == b.source_updated_at
}

fn parse_vocab<T: std::str::FromStr>(s: &str) -> Result<T>
where
    StoreError: From<T::Err>,
{
    s.parse::<T>().map_err(|e| LifecycleError::from(StoreError::from(e)))
}

impl From<StoreError> for LifecycleError {
    /// A value the store refused is the caller's fault ([`LifecycleError::Invalid`]); any other failure is the
    /// store's ([`LifecycleError::Store`]).
    fn from(e: StoreError) -> Self {
        match e.invalid_argument() {
            Some(m) => LifecycleError::Invalid(m.to_owned()),
            None => LifecycleError::Store(e),
        }
    }
}

fn sanitize_key(raw: &str) -> Result<Key> {
    Key::sanitize(raw).map_err(|e| LifecycleError::Invalid(e.to_string()))
}

/// `None`/`""` for global and federated; a non-empty id for project, session and agent.
fn check_scope_id(scope: Scope, scope_id: Option<String>) -> Result<Option<String>> {
    let scope_id = scope_id.filter(|s| !s.is_empty());
    match (scope.needs_scope_id(), scope_id) {
        (true, None) => Err(LifecycleError::Invalid(format!(
            "scope {scope} needs a scope id (project id, session or agent name)"
        ))),
        (false, Some(id)) => Err(LifecycleError::Invalid(format!(
            "scope {scope} has no scope id; got {id:?}"
        ))),
        (_, id) => Ok(id),
    }
}

fn check_confidence(c: Option<f64>) -> Result<Option<f64>> {
    match c {
        Some(v) if !(0.0..=1.0).contains(&v) => {
            Err(LifecycleError::Invalid(format!("confidence {v} is outside [0, 1]")))
        }
        other => Ok(other),
    }
}

/// Compact JSON with sorted keys (serde_json's map order), at most [`MAX_ATTRIBUTES_BYTES`] bytes.
fn encode_attributes(a: Option<&serde_json::Value>) -> Result<Option<String>> {
    let Some(v) = a else { return Ok(None) };
    if !v.is_object() {
        return Err(LifecycleError::Invalid(format!(
            "attributes must be a JSON object; got {}",
            json_kind(v)
        )));
    }
    let text = serde_json::to_string(v).map_err(|e| LifecycleError::Invalid(format!("attributes: {e}")))?;
    if text.len() > MAX_ATTRIBUTES_BYTES {
        return Err(LifecycleError::Invalid(format!(
            "attributes are {} bytes; the maximum is {MAX_ATTRIBUTES_BYTES}",
            text.len()
        )));
    }
    Ok(Some(text))
}

/// The secret gate on a federated edge's attributes: the first pattern matching the compact encoding or any key or
/// string value (so a credential split by JSON escaping is still judged as written). Other scopes pass.
///
/// Errors: [`LifecycleError::Secret`] naming the pattern.
fn check_attribute_secrets(scope: Scope, attributes: Option<&serde_json::Value>) -> Result<()> {
    let Some(v) = attributes.filter(|_| scope == Scope::Federated) else {
        return Ok(());
    };
    let mut texts = vec![v.to_string()];
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            serde_json::Value::String(s) => texts.push(s.clone()),
            serde_json::Value::Array(items) => stack.extend(items),
            serde_json::Value::Object(map) => {
                texts.extend(map.keys().cloned());
                stack.extend(map.values());
            }
            _ => {}
        }
    }
    match texts.iter().find_map(|t| cao_core::secret::scan(t)) {
        Some(pattern) => Err(LifecycleError::Secret { pattern }),
        None => Ok(()),
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// The reference's reading of a `related_keys` csv (see [`RelationshipService::mirror_legacy_related_keys`]).
pub fn parse_related_keys(raw: &str) -> Vec<Key> {
    let mut end = raw.len().min(MAX_LEGACY_RELATED_KEYS_BYTES);
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    let mut out: Vec<Key> = Vec::new();
    for part in raw[..end].split(',') {
        let Ok(k) = Key::parse_strict(part.trim()) else {
            continue;
        };
        if !out.contains(&k) {
            out.push(k);
            if out.len() >= MAX_LEGACY_RELATED_KEYS {
                break;
            }
        }
    }
    out
}

/// One source of [`RelationshipService::recompute_many`].
#[derive(Debug, Clone, PartialEq)]
pub struct RecomputeItem {
    /// The source memory's scope.
    pub scope: Scope,
    /// Its scope id (`None` for global and federated).
    pub scope_id: Option<String>,
    /// Its key (sanitised with [`Key::sanitize`]).
    pub source_key: String,
    /// The producer's full current edge set leaving it.
    pub edges: Vec<ProducerEdgeInput>,
}

/// A recompute's arguments after `check_recompute`.
/// The edges a [`RelationshipService::recompute`] of `edges` would write, checked by the same rules (edges that
/// fail a rule are left out, as the recompute skips them), for a caller that writes them itself inside a write it
/// already holds ([`cao_store::FollowUpOps::replace_producer_edges`]: the related-memory pass of a store). No I/O.
///
/// Errors: [`LifecycleError::Invalid`] as [`RelationshipService::recompute`] (human origin, too many edges, an
/// invalid source key or scope id).
pub fn checked_producer_edges(
    scope: Scope,
    scope_id: Option<&str>,
    source_key: &str,
    origin: RelOrigin,
    edges: Vec<ProducerEdgeInput>,
) -> Result<Vec<ProducerEdge>> {
    Ok(check_recompute(scope, scope_id, source_key, origin, edges)?.valid)
}

struct CheckedRecompute {
    scope: Scope,
    scope_id: Option<String>,
    source: Key,
    valid: Vec<ProducerEdge>,
    skipped: Vec<SkippedEdge>,
}

/// Every rule of a recompute that needs no I/O: the producer, the edge count, the source key and scope id, and each
/// edge (sanitised target, no self-link, status, confidence, attributes, secrets); edges that fail are skipped.
///
/// Errors: [`LifecycleError::Invalid`] (see [`RelationshipService::recompute`]).
fn check_recompute(
    scope: Scope,
    scope_id: Option<&str>,
    source_key: &str,
    origin: RelOrigin,
    edges: Vec<ProducerEdgeInput>,
) -> Result<CheckedRecompute> {
    if origin == RelOrigin::Human {
        return Err(LifecycleError::Invalid(
            "origin human is not a producer: human edges are written only by create".to_owned(),
        ));
    }
    if edges.len() > MAX_EDGES_PER_RECOMPUTE {
        return Err(LifecycleError::Invalid(format!(
            "a recompute carries {} edges; the maximum is {MAX_EDGES_PER_RECOMPUTE}",
            edges.len()
        )));
    }
    let scope_id = check_scope_id(scope, scope_id.map(str::to_owned))?;
    let source = sanitize_key(source_key)?;
    let mut skipped = Vec::new();
    let mut valid = Vec::new();
    for e in edges {
        let Ok(target) = Key::sanitize(&e.target_key) else {
            skipped.push(SkippedEdge {
                target_key: e.target_key,
                reason: SkipReason::InvalidKey,
            });
            continue;
        };
        let skip = |reason| SkippedEdge {
            target_key: target.to_string(),
            reason,
        };
        if target == source {
            skipped.push(skip(SkipReason::SelfLink));
            continue;
        }
        let values = (
            matches!(e.status, RelStatus::Proposal | RelStatus::Active),
            check_confidence(e.confidence),
            encode_attributes(e.attributes.as_ref()),
        );
        let (true, Ok(confidence), Ok(attributes_json)) = values else {
            skipped.push(skip(SkipReason::InvalidValue));
            continue;
        };
        if check_attribute_secrets(scope, e.attributes.as_ref()).is_err() {
            skipped.push(skip(SkipReason::SecretDetected));
            continue;
        }
        valid.push(ProducerEdge {
            new_id: uuid::Uuid::new_v4().to_string(),
            target_key: target,
            status: e.status,
            confidence,
            rank: e.rank,
            attributes_json,
        });
    }
    Ok(CheckedRecompute {
        scope,
        scope_id,
        source,
        valid,
        skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn related_keys_are_read_as_the_reference_reads_them() {
        let keys = |s: &str| -> Vec<String> { parse_related_keys(s).iter().map(|k| k.to_string()).collect() };
        assert_eq!(keys(" a , b,,a, Bad Key ,c,d"), ["a", "b", "c"]);
        assert!(keys("").is_empty());
        assert_eq!(keys("../x,y"), ["y"], "a part that needs sanitising is dropped");
        let long = format!("{},late", "x,".repeat(600));
        assert_eq!(keys(&long), ["x"]);
    }

    #[test]
    fn argument_checks_name_the_value() {
        assert!(check_confidence(Some(0.0)).is_ok() && check_confidence(None).is_ok());
        let e = check_confidence(Some(1.01)).expect_err("range");
        assert!(e.to_string().contains("1.01"), "{e}");
        assert!(check_confidence(Some(f64::INFINITY)).is_err());
        let e = encode_attributes(Some(&serde_json::json!([1]))).expect_err("not an object");
        assert!(e.to_string().contains("an array"), "{e}");
        let ok = encode_attributes(Some(&serde_json::json!({"b": 1, "a": "x"}))).expect("small object");
        assert_eq!(ok.as_deref(), Some(r#"{"a":"x","b":1}"#), "compact, sorted keys");
        let big = serde_json::json!({ "k": "x".repeat(MAX_ATTRIBUTES_BYTES) });
        let e = encode_attributes(Some(&big)).expect_err("too big");
        assert!(e.to_string().contains("2056 bytes"), "{e}");
        assert!(check_scope_id(Scope::Project, None).is_err());
        assert!(check_scope_id(Scope::Global, Some("p".into())).is_err());
        assert_eq!(check_scope_id(Scope::Global, Some(String::new())).ok(), Some(None));
        assert_eq!(parse_vocab::<RelType>("supersedes").ok(), Some(RelType::Supersedes));
        let e = parse_vocab::<RelOrigin>("robot").expect_err("unknown origin");
        assert!(
            matches!(e, LifecycleError::Invalid(_)) && e.to_string().contains("\"robot\""),
            "{e}"
        );
    }
}
