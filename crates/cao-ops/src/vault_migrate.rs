//! `cao memory vault migrate` and `cao memory repair --receipt` (spec/vault-facts.md section 7; conformance
//! `vault_migrate.json`): native memories of a vault-bound scope move into the vault's managed folder, one note per
//! key, each recorded by a migration receipt; a receipt is rolled back by restoring the statuses of the native
//! edges the move superseded.
//!
//! - The scope must be bound to the writable mapping ("scope '<s>' is not mapped to a configured vault; migration
//!   requires a vault binding" / "scope '<s>' vault mapping is not writable").
//! - A dry run (the default) reads the native topic files and the stored edges and reports what an apply would do;
//!   it writes nothing and counts no access.
//! - Per native memory, ordered by key, [`cao_vault::migrate::plan_item`] gives the note (body sections within
//!   `max_note_bytes - max_frontmatter_bytes`, the edges as `cao.links`, `tags` and `created` seeds) and what is
//!   lost; an existing receipt skips the key ([`cao_vault::migrate::skip_reason`]).
//! - An apply takes the projection lock, publishes every note (expected absent: an existing note of that key is a
//!   per-key failure, never overwritten), reconciles once, then records one receipt per published note (native path
//!   and hash, managed path, note uid, published hash, the copied native edges with their prior statuses) and marks
//!   those edges `superseded` in the same transaction. `delete_source` then removes each migrated native memory.
//!   One key's failure does not stop the others.

use crate::vault::{StoreProjects, active, projection_lock, reconcile_locked, settings_of};
use cao_core::{Scope, TerminalContext};
use cao_store::{MemoryError, RelStatus, RelationshipFilter, Store, VaultReceiptRow, vault_unsupported};
use cao_vault::links::{EdgeOrigin, EdgeStatus, EdgeType};
use cao_vault::migrate::{NativeEdge, NativeMemory, ReceiptState, plan_item, skip_reason};
use cao_vault::writer::{Expected, WriteLimits, publish, read_managed, render_managed};
use serde::Serialize;
use std::collections::BTreeMap;

/// The report of a migration (`cao.memory.vault-migrate/1`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MigrateReport {
    /// Native memories of the scope.
    pub planned: usize,
    /// Notes published and recorded by a receipt (0 in a dry run).
    pub migrated: usize,
    /// Native memories removed after their move (`--delete-source`).
    pub deleted_source: usize,
    /// Keys that failed.
    pub failed: usize,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// Per failed key, the reason.
    pub errors: BTreeMap<String, String>,
    /// Per key, what does not survive the move (field -> count).
    pub lossy_fields: BTreeMap<String, BTreeMap<String, u64>>,
    /// Per key skipped because a receipt makes the vault authoritative, the reason.
    pub skipped_vault_authoritative: BTreeMap<String, String>,
    /// The receipt ids recorded by this run.
    pub receipts: Vec<String>,
}

/// One edge a receipt superseded, with the status it had (what a rollback restores).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SupersededEdge {
    /// The relationship id.
    pub id: String,
    /// Its status before the migration.
    pub status: String,
}

fn edge_of(r: &cao_store::RelationshipRow) -> Option<NativeEdge> {
    let attributes: Option<serde_json::Value> = r.attributes_json.as_deref().and_then(|a| serde_json::from_str(a).ok());
    Some(NativeEdge {
        target_key: r.target_key.as_str().to_owned(),
        edge_type: EdgeType::parse(r.rel_type.as_str())?,
        status: EdgeStatus::parse(r.status.as_str())?,
        origin: EdgeOrigin::parse(r.origin.as_str())?,
        authored_origin: attributes
            .as_ref()
            .and_then(|a| a.get("authored_origin"))
            .and_then(|v| v.as_str())
            .map(str::to_owned),
        confidence: r.confidence,
    })
}

fn sha256_of_text(text: &str) -> String {
    cao_vault::hash::sha256_hex(
        cao_vault::note::normalize_text(text.as_bytes())
            .unwrap_or_default()
            .as_bytes(),
    )
}

/// Migrate the native memories of `(scope, scope_id)` into the managed folder (module docs); a dry run unless
/// `apply`. `delete_source` needs `apply`.
///
/// Errors (nothing written): `--delete-source` without `--apply`; as [`crate::vault::settings`] and
/// [`active`]; the scope not bound, or bound to a mapping that is not writable; [`vault_unsupported`]; the lock;
/// store errors. Per-key failures are in the report.
pub fn migrate(
    store: &Store,
    loaded: &cao_core::Settings,
    ctx: &TerminalContext,
    scope: Scope,
    scope_id: Option<&str>,
    apply: bool,
    delete_source: bool,
) -> Result<MigrateReport, MemoryError> {
    if delete_source && !apply {
        return Err(MemoryError::Invalid("--delete-source requires --apply".to_owned()));
    }
    let s = settings_of(store, loaded)?;
    let vault = active(&s)?.clone();
    let snapshot = store.read()?;
    if !snapshot.supports_vault() {
        return Err(vault_unsupported().into());
    }
    let projects = StoreProjects { snapshot };
    let (bound_id, writable) =
        match cao_vault::binding::bind(&s, scope, scope_id, &projects).map_err(crate::vault::unavailable)? {
            cao_vault::binding::Binding::Vault {
                scope_id,
                writable,
                index,
                ..
            } => (scope_id, writable && index),
            cao_vault::binding::Binding::Native { .. } => {
                return Err(MemoryError::Invalid(format!(
                    "scope '{scope}' is not mapped to a configured vault; migration requires a vault binding"
                )));
            }
        };
    if !writable {
        return Err(MemoryError::Invalid(format!(
            "scope '{scope}' vault mapping is not writable"
        )));
    }
    let _lock = if apply {
        Some(projection_lock(store, &vault)?)
    } else {
        None
    };
    let snapshot = store.read()?;
    let mut natives = snapshot.list(&cao_store::ListFilter {
        visibility: cao_store::Visibility::none().allow(scope, scope_id),
        scope: Some(scope),
        memory_type: None,
        limit: None,
    })?;
    natives.sort_by(|a, b| a.key.as_str().cmp(b.key.as_str()));
    let receipts: BTreeMap<String, VaultReceiptRowLite> = snapshot
        .vault_receipts(&vault.id)?
        .into_iter()
        .map(|r| (r.receipt_id.clone(), VaultReceiptRowLite::from(&r)))
        .collect();
    let mut report = MigrateReport {
        planned: natives.len(),
        dry_run: !apply,
        ..MigrateReport::default()
    };
    // What to record once the notes are indexed: (row, receipt, edges to supersede).
    let mut published: Vec<(cao_store::MemoryRow, VaultReceiptRow, Vec<String>)> = Vec::new();
    for row in &natives {
        let key = row.key.as_str().to_owned();
        let bytes = match std::fs::read(&row.file_path) {
            Ok(b) => b,
            Err(e) => {
                report.failed += 1;
                report
                    .errors
                    .insert(key, format!("cannot read the native topic file: {e}"));
                continue;
            }
        };
        let records = snapshot.relationships(&RelationshipFilter {
            scope: Some(scope),
            scope_id: row.scope_id.clone(),
            source_key: Some(row.key.clone()),
            ..RelationshipFilter::default()
        })?;
        let copied: Vec<&cao_store::RelationshipRow> = records
            .iter()
            .map(|r| &r.row)
            .filter(|r| edge_of(r).is_some())
            .collect();
        let edges: Vec<NativeEdge> = copied.iter().filter_map(|r| edge_of(r)).collect();
        let native = NativeMemory {
            key: key.clone(),
            memory_type: row.memory_type.as_str().to_owned(),
            tags: row.tags.clone(),
            created_at: row.created_at.naive_utc(),
            file_bytes: bytes,
            access_count: u64::try_from(row.access_count).unwrap_or(0),
            last_accessed_at: row.last_accessed_at.is_some(),
            last_compiled_at: row.last_compiled_at.is_some(),
            source_provider: row.source_provider.is_some(),
            source_terminal_id: row.source_terminal_id.is_some(),
            related_keys: row.related_keys.as_deref().is_some_and(|k| !k.is_empty() && k != "[]"),
        };
        let item = plan_item(
            &vault.id,
            scope.as_str(),
            bound_id.as_deref(),
            &native,
            &edges,
            vault.max_note_bytes,
            vault.max_frontmatter_bytes,
        );
        let target = match read_managed(&vault, &key) {
            Ok(t) => t.filter(|t| !t.is_empty()).map(|t| sha256_of_text(&t)),
            Err(e) => {
                report.failed += 1;
                report.errors.insert(key, e.to_string());
                continue;
            }
        };
        let receipt = receipts.get(&item.receipt_id).map(|r| &r.state);
        if let Some(reason) = skip_reason(receipt, &item.native_sha256, target.as_deref()) {
            report.skipped_vault_authoritative.insert(key, reason.to_owned());
            continue;
        }
        if !item.lossy.is_empty() {
            report.lossy_fields.insert(key.clone(), item.lossy.clone());
        }
        if !apply {
            continue;
        }
        let relpath = format!("{}/{key}.md", vault.managed_folder);
        let path = vault.root.join(&relpath);
        let rendered = match render_managed(None, &item.request, WriteLimits::of(&vault), &path)
            .and_then(|r| publish(&vault, &key, &r.text, &Expected::New).map(|_| r))
        {
            Ok(r) => r,
            Err(e) => {
                report.failed += 1;
                report.errors.insert(key, e.to_string());
                continue;
            }
        };
        let superseded: Vec<SupersededEdge> = copied
            .iter()
            .take(cao_vault::note::MAX_CAO_LINKS)
            .map(|r| SupersededEdge {
                id: r.id.clone(),
                status: r.status.as_str().to_owned(),
            })
            .collect();
        let receipt = VaultReceiptRow {
            receipt_id: item.receipt_id.clone(),
            scope,
            scope_id: bound_id.clone(),
            key: key.clone(),
            native_relpath: row.file_path.clone(),
            native_content_sha256: Some(item.native_sha256.clone()),
            managed_relpath: relpath,
            vault_note_uid: cao_vault::identity::note_uid(&vault.id, scope.as_str(), bound_id.as_deref(), &key),
            published_content_sha256: Some(rendered.content_sha256.clone()),
            superseded_edges: serde_json::to_string(&superseded).unwrap_or_else(|_| "[]".to_owned()),
            status: "active".to_owned(),
            created_at: None,
        };
        let supersede = superseded
            .iter()
            .filter(|e| e.status != RelStatus::Superseded.as_str())
            .map(|e| e.id.clone())
            .collect();
        published.push((row.clone(), receipt, supersede));
    }
    if published.is_empty() {
        return Ok(report);
    }
    // The published notes enter the projection before their receipts are recorded.
    if let Err(e) = reconcile_locked(store, &s, &vault, true, false) {
        for (row, _, _) in &published {
            report.failed += 1;
            report.errors.insert(
                row.key.as_str().to_owned(),
                format!(
                    "the note was written but the vault refresh failed: {e}; run `cao memory vault reconcile --apply`"
                ),
            );
        }
        return Ok(report);
    }
    let now = store.now();
    for (row, receipt, supersede) in published {
        let key = row.key.as_str().to_owned();
        if let Err(e) = store.write().vault_put_receipt(&vault.id, &receipt, &supersede, now) {
            report.failed += 1;
            report
                .errors
                .insert(key, format!("the note was written but its receipt was not: {e}"));
            continue;
        }
        report.migrated += 1;
        report.receipts.push(receipt.receipt_id);
        if delete_source {
            match crate::write::remove(
                store,
                cao_store::audit::actor_of(ctx),
                &crate::write::writer_of(ctx),
                &row.memory_ref(),
            ) {
                Ok(_) => report.deleted_source += 1,
                Err(e) => {
                    report
                        .errors
                        .insert(key, format!("migrated, but the native memory was not removed: {e}"));
                }
            }
        }
    }
    Ok(report)
}

/// What the skip decision needs of a stored receipt.
struct VaultReceiptRowLite {
    state: ReceiptState,
}

impl From<&VaultReceiptRow> for VaultReceiptRowLite {
    fn from(r: &VaultReceiptRow) -> Self {
        VaultReceiptRowLite {
            state: ReceiptState {
                status: r.status.clone(),
                native_sha256: r.native_content_sha256.clone().unwrap_or_default(),
                published_sha256: r.published_content_sha256.clone().unwrap_or_default(),
            },
        }
    }
}

/// The plan (and, applied, the result) of rolling back a migration receipt (`cao memory repair --receipt`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RollbackReport {
    /// The receipt id.
    pub receipt_id: String,
    /// The migrated key.
    pub key: String,
    /// The edges whose prior statuses are (or would be) restored.
    pub restore: Vec<SupersededEdge>,
    /// Whether the rollback was applied.
    pub applied: bool,
}

/// Plan, and with `apply` perform, the rollback of receipt `receipt_id`: each native edge the migration superseded
/// gets its prior status back and the receipt becomes `rolled_back`. The managed note is left in the vault (it is
/// the user's file now); forget it to de-index it.
///
/// Errors: as [`crate::vault::settings`] and [`active`]; no such receipt; a receipt that is not `active`; drift
/// (the managed note changed since it was published, or the native topic file since it was copied): refused,
/// nothing written; the lock; store errors.
pub fn roll_back(
    store: &Store,
    loaded: &cao_core::Settings,
    receipt_id: &str,
    apply: bool,
) -> Result<RollbackReport, MemoryError> {
    let s = settings_of(store, loaded)?;
    let vault = active(&s)?.clone();
    let _lock = if apply {
        Some(projection_lock(store, &vault)?)
    } else {
        None
    };
    let snapshot = store.read()?;
    if !snapshot.supports_vault() {
        return Err(vault_unsupported().into());
    }
    let receipt = snapshot
        .vault_receipts(&vault.id)?
        .into_iter()
        .find(|r| r.receipt_id == receipt_id)
        .ok_or_else(|| MemoryError::Invalid(format!("no migration receipt {receipt_id:?}")))?;
    if receipt.status != "active" {
        return Err(MemoryError::Invalid(format!(
            "migration receipt {receipt_id:?} is {}, not active; nothing to roll back",
            receipt.status
        )));
    }
    let managed = match read_managed(&vault, &receipt.key) {
        Ok(t) => t.map(|t| sha256_of_text(&t)),
        Err(e) => return Err(MemoryError::Invalid(e.to_string())),
    };
    if managed.as_deref() != receipt.published_content_sha256.as_deref() {
        return Err(MemoryError::Invalid(format!(
            "migration receipt {receipt_id:?}: the managed note '{}' changed since it was published; rollback refused",
            receipt.managed_relpath
        )));
    }
    if let Ok(bytes) = std::fs::read(&receipt.native_relpath)
        && Some(cao_vault::hash::sha256_hex(&bytes)) != receipt.native_content_sha256
    {
        return Err(MemoryError::Invalid(format!(
            "migration receipt {receipt_id:?}: the native memory changed since it was migrated; rollback refused"
        )));
    }
    let restore: Vec<SupersededEdge> = serde_json::from_str(&receipt.superseded_edges).map_err(|e| {
        MemoryError::Invalid(format!(
            "migration receipt {receipt_id:?} has an unreadable edge snapshot: {e}"
        ))
    })?;
    if apply {
        let statuses: Vec<(String, RelStatus)> = restore
            .iter()
            .filter_map(|e| Some((e.id.clone(), e.status.parse::<RelStatus>().ok()?)))
            .collect();
        store
            .write()
            .vault_roll_back_receipt(receipt_id, &statuses, store.now())?;
    }
    Ok(RollbackReport {
        receipt_id: receipt_id.to_owned(),
        key: receipt.key,
        restore,
        applied: apply,
    })
}
