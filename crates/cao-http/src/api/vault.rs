//! `GET /memory/vault/status`: the durable status of the configured Obsidian vault (spec/vault-facts.md section
//! 8). An invalid, disabled or absent vault configuration answers `{"configured": false, "vaults": []}` (as the
//! reference does), never an error; an invalid one (fail closed: no vault is served) also names the reason in
//! `error` (`vault configuration unavailable: ...`), so an operator sees why the vault is off.

use super::{ApiResult, ApiState, ErrorBody, with_service};
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use cao_memory::MemoryError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::{IntoParams, ToSchema};

/// Query of `GET /memory/vault/status`.
#[derive(Debug, Deserialize, IntoParams)]
pub struct VaultStatusQuery {
    /// Only this vault (an unknown id gives an empty `vaults`).
    pub vault_id: Option<String>,
}

/// One vault's status.
#[derive(Debug, Serialize, ToSchema)]
pub struct VaultStatusEntry {
    /// Vault id.
    pub vault_id: String,
    /// `vault_note` rows per status.
    pub status_counts: BTreeMap<String, usize>,
    /// Finding rows per code.
    pub finding_counts: BTreeMap<String, usize>,
    /// Config warnings, then binding warnings.
    pub warnings: Vec<String>,
    /// Durable recall counters (non-zero ones).
    pub recall_counters: BTreeMap<String, i64>,
    /// Native project writes that missed every vault mapping, in this process.
    pub unmapped_project_writes: u64,
    /// Writes refused because the mapping is not writable, in this process.
    pub non_writable_write_refusals: u64,
    /// Writes refused by the secret gate, in this process.
    pub secret_gate_write_refusals: u64,
    /// Writes refused at the vault boundary, in this process.
    pub boundary_write_refusals: u64,
}

/// Body of `GET /memory/vault/status`.
#[derive(Debug, Serialize, ToSchema)]
pub struct VaultStatusBody {
    /// Whether a vault is configured and enabled (and the configuration valid).
    pub configured: bool,
    /// The configured vault (at most one in this release).
    pub vaults: Vec<VaultStatusEntry>,
    /// Why no vault is served when `memory.vault` does not validate (`vault configuration unavailable: <reason>`);
    /// absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The status of the configured Obsidian vault.
#[utoipa::path(get, path = "/memory/vault/status", tag = "memory", params(VaultStatusQuery),
    responses(
        (status = 200, description = "The vault status; `configured: false` when no valid enabled vault is configured", body = VaultStatusBody),
        (status = 400, description = "Malformed query", body = ErrorBody),
        (status = 404, description = "Memory disabled", body = ErrorBody),
    ))]
pub async fn vault_status(
    State(state): State<ApiState>,
    query: Result<Query<VaultStatusQuery>, QueryRejection>,
) -> ApiResult<Json<VaultStatusBody>> {
    let Query(q) = query?;
    with_service(&state, move |svc| {
        let status = match cao_memory::vault::status(svc.storage()) {
            Ok(s) => s,
            // Disabled, not configured, invalid configuration, or a store that holds no vault.
            Err(MemoryError::Invalid(reason)) => {
                return Ok(Json(VaultStatusBody {
                    configured: false,
                    vaults: Vec::new(),
                    error: reason.starts_with(cao_memory::vault::UNAVAILABLE).then_some(reason),
                }));
            }
            Err(MemoryError::Store(e)) if e.invalid_argument().is_some() => {
                return Ok(Json(VaultStatusBody {
                    configured: false,
                    vaults: Vec::new(),
                    error: None,
                }));
            }
            Err(e) => return Err(e.into()),
        };
        let vaults = if q.vault_id.as_deref().is_none_or(|id| id == status.vault_id) {
            vec![VaultStatusEntry {
                vault_id: status.vault_id,
                status_counts: status.status_counts,
                finding_counts: status.finding_counts,
                warnings: status.warnings,
                recall_counters: status.recall_counters,
                unmapped_project_writes: 0,
                non_writable_write_refusals: 0,
                secret_gate_write_refusals: 0,
                boundary_write_refusals: 0,
            }]
        } else {
            Vec::new()
        };
        Ok(Json(VaultStatusBody {
            configured: true,
            vaults,
            error: None,
        }))
    })
    .await
}
