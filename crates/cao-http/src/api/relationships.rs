//! `/memory/relationships`: list, create (human origin), patch, promote, reject and soft-delete typed edges
//! between memories, through `cao_lifecycle::RelationshipService`.

use super::memory::strict_key;
use super::{ApiError, ApiResult, ApiState, ErrorBody, ScopeParam, with_service};
use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use cao_core::Scope;
use cao_core::time::format_ts;
use cao_lifecycle::{NewRelationship, RelStatus, Relationship, RelationshipFilter, RelationshipService};
use cao_memory::MemoryService;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Longest accepted relationship id (ids are uuid4 strings).
pub const MAX_ID_LEN: usize = 128;

/// A relationship status as spelled in queries and bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum StatusParam {
    /// Suggested, awaiting review.
    Proposal,
    /// In force.
    Active,
    /// Refused by an operator.
    Rejected,
    /// Retired by a lifecycle migration (filter only).
    Superseded,
    /// Soft-deleted.
    Deleted,
}

impl From<StatusParam> for RelStatus {
    fn from(s: StatusParam) -> Self {
        match s {
            StatusParam::Proposal => RelStatus::Proposal,
            StatusParam::Active => RelStatus::Active,
            StatusParam::Rejected => RelStatus::Rejected,
            StatusParam::Superseded => RelStatus::Superseded,
            StatusParam::Deleted => RelStatus::Deleted,
        }
    }
}

/// A relationship kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TypeParam {
    /// Related memories.
    RelatesTo,
    /// The memories contradict each other.
    Contradiction,
    /// The source supersedes the target.
    Supersedes,
}

impl TypeParam {
    fn as_str(self) -> &'static str {
        match self {
            TypeParam::RelatesTo => "relates_to",
            TypeParam::Contradiction => "contradiction",
            TypeParam::Supersedes => "supersedes",
        }
    }
}

/// One edge (content-free), as `cao memory relationships inspect --format json` shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RelationshipView {
    /// Edge id.
    pub id: String,
    /// Scope of both ends.
    pub scope: ScopeParam,
    /// Scope id of both ends (`null` for global and federated).
    pub scope_id: Option<String>,
    /// Source key.
    pub source_key: String,
    /// Target key.
    pub target_key: String,
    /// `relates_to`, `contradiction` or `supersedes`.
    #[serde(rename = "type")]
    #[schema(rename = "type")]
    pub rel_type: String,
    /// `human` or a producer origin.
    pub origin: String,
    /// `proposal`, `active`, `rejected`, `superseded` or `deleted`.
    pub status: String,
    /// Evidence in `[0, 1]`.
    pub confidence: Option<f64>,
    /// Ordering hint.
    pub rank: Option<i64>,
    /// Attributes object.
    #[schema(value_type = Option<Object>)]
    pub attributes: Option<serde_json::Value>,
    /// The source memory's `updated_at` when the edge was computed.
    pub source_updated_at: Option<String>,
    /// First write.
    pub created_at: Option<String>,
    /// Last change.
    pub updated_at: Option<String>,
    /// Computed before the source memory's last edit.
    pub stale: bool,
}

impl From<Relationship> for RelationshipView {
    fn from(r: Relationship) -> Self {
        Self {
            id: r.id,
            scope: super::memory::scope_param(r.scope),
            scope_id: r.scope_id,
            source_key: r.source_key,
            target_key: r.target_key,
            rel_type: r.rel_type.to_string(),
            origin: r.origin.to_string(),
            status: r.status.to_string(),
            confidence: r.confidence,
            rank: r.rank,
            attributes: r.attributes,
            source_updated_at: r.source_updated_at.map(format_ts),
            created_at: r.created_at.map(format_ts),
            updated_at: r.updated_at.map(format_ts),
            stale: r.stale,
        }
    }
}

/// `GET /memory/relationships` response.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RelationshipList {
    /// Matching edges, in identity order.
    pub relationships: Vec<RelationshipView>,
}

/// Query of `GET /memory/relationships` (the filters of `cao memory relationships list`).
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RelListQuery {
    /// Only this scope.
    pub scope: Option<ScopeParam>,
    /// Only this scope id; needs `scope`.
    pub scope_id: Option<String>,
    /// Only edges leaving this key.
    pub source_key: Option<String>,
    /// Only this status (default `active`).
    pub status: Option<StatusParam>,
    /// Only stale edges.
    pub stale: Option<bool>,
}

/// Body of `POST /memory/relationships` (origin is always `human`).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct CreateRelationshipBody {
    /// Scope of both ends.
    pub scope: ScopeParam,
    /// Scope id of both ends (required for project, session, agent).
    pub scope_id: Option<String>,
    /// Source key (`^[a-z0-9-]{1,60}$`).
    pub source_key: String,
    /// Target key (`^[a-z0-9-]{1,60}$`).
    pub target_key: String,
    /// Kind of edge.
    #[serde(rename = "type")]
    #[schema(rename = "type")]
    pub rel_type: TypeParam,
    /// Initial status (default `active`; `superseded` is refused).
    pub status: Option<StatusParam>,
    /// Evidence in `[0, 1]`.
    pub confidence: Option<f64>,
    /// Ordering hint.
    pub rank: Option<i64>,
    /// Attributes object (at most 2048 bytes as compact JSON).
    #[schema(value_type = Option<Object>)]
    pub attributes: Option<serde_json::Value>,
}

/// Body of `PATCH /memory/relationships/{id}`: any of status, confidence, attributes.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct PatchRelationshipBody {
    /// New status: `active` (as promote: refused for rejected or deleted edges), `proposal`, `rejected`,
    /// `deleted`.
    pub status: Option<StatusParam>,
    /// New confidence in `[0, 1]`.
    pub confidence: Option<f64>,
    /// New attributes object.
    #[schema(value_type = Option<Object>)]
    pub attributes: Option<serde_json::Value>,
}

/// The relationship service, auditing every change as the operator (the API has no terminal identity).
fn service(svc: &MemoryService) -> RelationshipService {
    svc.relationships(cao_memory::audit::actor_of(&cao_core::TerminalContext::default()))
}

/// The rule of a relationship id in a path: 1..=[`MAX_ID_LEN`] characters without control characters (422
/// otherwise).
pub(crate) fn check_id(id: &str) -> ApiResult<()> {
    if id.is_empty() || id.len() > MAX_ID_LEN || id.chars().any(char::is_control) {
        return Err(ApiError::invalid(format!(
            "invalid relationship id: 1..={MAX_ID_LEN} characters without control characters"
        )));
    }
    Ok(())
}

/// List relationships.
#[utoipa::path(get, path = "/memory/relationships", tag = "relationships", params(RelListQuery),
    responses(
        (status = 200, description = "Edges", body = RelationshipList),
        (status = 400, description = "Malformed query", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid key, or scope_id without scope", body = ErrorBody),
    ))]
pub async fn list_relationships(
    State(state): State<ApiState>,
    query: Result<Query<RelListQuery>, QueryRejection>,
) -> ApiResult<Json<RelationshipList>> {
    let Query(q) = query?;
    let scope_id = super::nonempty(q.scope_id);
    if q.scope.is_none() && scope_id.is_some() {
        return Err(ApiError::invalid("scope_id needs scope"));
    }
    let filter = RelationshipFilter {
        scope: q.scope.map(Scope::from),
        scope_id,
        source_key: q.source_key.as_deref().map(strict_key).transpose()?,
        target_key: None,
        status: Some(q.status.map_or(RelStatus::Active, RelStatus::from)),
        stale: q.stale.unwrap_or(false),
    };
    with_service(&state, move |svc| {
        let list = service(&svc).list(&filter)?;
        Ok(Json(RelationshipList {
            relationships: list.into_iter().map(Into::into).collect(),
        }))
    })
    .await
}

/// Create (or re-create) a human edge.
#[utoipa::path(post, path = "/memory/relationships", tag = "relationships", request_body = CreateRelationshipBody,
    responses(
        (status = 201, description = "Created", body = RelationshipView),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid argument or a missing endpoint memory", body = ErrorBody),
    ))]
pub async fn create_relationship(
    State(state): State<ApiState>,
    body: Result<Json<CreateRelationshipBody>, JsonRejection>,
) -> ApiResult<(StatusCode, Json<RelationshipView>)> {
    let Json(b) = body?;
    strict_key(&b.source_key)?;
    strict_key(&b.target_key)?;
    let req = NewRelationship {
        scope: b.scope.into(),
        scope_id: super::nonempty(b.scope_id),
        source_key: b.source_key,
        target_key: b.target_key,
        rel_type: b.rel_type.as_str().to_owned(),
        origin: None,
        status: b.status.map(|s| RelStatus::from(s).to_string()),
        confidence: b.confidence,
        rank: b.rank,
        attributes: b.attributes,
    };
    with_service(&state, move |svc| {
        let rel = service(&svc).create(req)?;
        Ok((StatusCode::CREATED, Json(rel.into())))
    })
    .await
}

/// Change status, confidence or attributes of an edge.
#[utoipa::path(patch, path = "/memory/relationships/{id}", tag = "relationships",
    params(("id" = String, Path, description = "Relationship id")),
    request_body = PatchRelationshipBody,
    responses(
        (status = 200, description = "Updated", body = RelationshipView),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 404, description = "No such relationship, or memory disabled", body = ErrorBody),
        (status = 409, description = "Activating a rejected or deleted edge", body = ErrorBody),
        (status = 422, description = "Invalid argument", body = ErrorBody),
    ))]
pub async fn patch_relationship(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    body: Result<Json<PatchRelationshipBody>, JsonRejection>,
) -> ApiResult<Json<RelationshipView>> {
    let Json(b) = body?;
    check_id(&id)?;
    if b.status == Some(StatusParam::Superseded) {
        return Err(ApiError::invalid(
            "status superseded is set only by lifecycle migrations; use proposal, active, rejected or deleted",
        ));
    }
    with_service(&state, move |svc| {
        let rels = service(&svc);
        let current = rels
            .get(&id)?
            .ok_or_else(|| ApiError::not_found(format!("relationship not found: {id}")))?;
        // Confidence, attributes and the proposal status are written by re-creating the edge with the same
        // identity (which keeps its id); active, rejected and deleted go through promote / reject / soft delete.
        let recreate_status = match b.status {
            Some(StatusParam::Proposal) => Some(RelStatus::Proposal),
            _ => None,
        };
        let mut rel = current.clone();
        if b.confidence.is_some() || b.attributes.is_some() || recreate_status.is_some() {
            let status = recreate_status.unwrap_or(current.status);
            rel = rels.create(NewRelationship {
                scope: current.scope,
                scope_id: current.scope_id.clone(),
                source_key: current.source_key.clone(),
                target_key: current.target_key.clone(),
                rel_type: current.rel_type.to_string(),
                origin: Some(current.origin.to_string()),
                status: Some(status.to_string()),
                confidence: b.confidence.or(current.confidence),
                rank: current.rank,
                attributes: b.attributes.or(current.attributes.clone()),
            })?;
        }
        rel = match b.status {
            Some(StatusParam::Active) => rels.promote(&id)?,
            Some(StatusParam::Rejected) => rels.reject(&id)?,
            Some(StatusParam::Deleted) => rels.soft_delete(&id)?,
            _ => rel,
        };
        Ok(Json(rel.into()))
    })
    .await
}

/// Promote an edge to active.
#[utoipa::path(post, path = "/memory/relationships/{id}/promote", tag = "relationships",
    params(("id" = String, Path, description = "Relationship id")),
    responses(
        (status = 200, description = "Promoted", body = RelationshipView),
        (status = 404, description = "No such relationship, or memory disabled", body = ErrorBody),
        (status = 409, description = "The edge is rejected or deleted (re-create it instead)", body = ErrorBody),
        (status = 422, description = "Invalid id", body = ErrorBody),
    ))]
pub async fn promote_relationship(
    State(state): State<ApiState>,
    Path(id): Path<String>,
) -> ApiResult<Json<RelationshipView>> {
    check_id(&id)?;
    with_service(&state, move |svc| Ok(Json(service(&svc).promote(&id)?.into()))).await
}

/// Reject an edge (durable: producers never bring it back).
#[utoipa::path(post, path = "/memory/relationships/{id}/reject", tag = "relationships",
    params(("id" = String, Path, description = "Relationship id")),
    responses(
        (status = 200, description = "Rejected", body = RelationshipView),
        (status = 404, description = "No such relationship, or memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid id", body = ErrorBody),
    ))]
pub async fn reject_relationship(
    State(state): State<ApiState>,
    Path(id): Path<String>,
) -> ApiResult<Json<RelationshipView>> {
    check_id(&id)?;
    with_service(&state, move |svc| Ok(Json(service(&svc).reject(&id)?.into()))).await
}

/// Soft-delete an edge (status `deleted`; the row is kept).
#[utoipa::path(delete, path = "/memory/relationships/{id}", tag = "relationships",
    params(("id" = String, Path, description = "Relationship id")),
    responses(
        (status = 200, description = "Soft-deleted", body = RelationshipView),
        (status = 404, description = "No such relationship, or memory disabled", body = ErrorBody),
        (status = 422, description = "Invalid id", body = ErrorBody),
    ))]
pub async fn delete_relationship(
    State(state): State<ApiState>,
    Path(id): Path<String>,
) -> ApiResult<Json<RelationshipView>> {
    check_id(&id)?;
    with_service(&state, move |svc| Ok(Json(service(&svc).soft_delete(&id)?.into()))).await
}
