//! The Obsidian vault over the store (spec/vault-facts.md sections 3, 8 and 11): the validated configuration of
//! this home, scan, reconcile (dry run or applied in one store transaction under the vault projection lock),
//! rebuild, and the durable status. The pure rules (what a note is, identity, links, the reconcile plan) are
//! `cao-vault`'s; this module reads the vault state from the store, plans, reads the bodies of new or changed notes
//! through the confined reader, and hands the complete state to [`cao_store::Writes::vault_apply`].
//!
//! Errors (the reference's wording, spec/vault-facts.md section 8): [`DISABLED`], [`NO_VAULT`], and
//! `vault configuration unavailable: <reason>` when `memory.vault` does not validate (fail closed). A store whose
//! backend holds no vault state (the PostgreSQL backend) refuses with [`cao_store::vault_unsupported`].

use cao_core::Key;
use cao_store::{
    MemoryError, MemoryRow, RelStatus, RelType, Snapshot, Store, VaultApply, VaultEdge, VaultFindingRow, VaultMetadata,
    VaultNoteRow, VaultStamp, VaultState, vault_unsupported,
};
use cao_vault::config::{
    ConfigContext, ProjectDirectory, ProjectLookup, VaultConfig, VaultSettings, apply_kill_switch, binding_warnings,
    config_warnings, from_settings,
};
use cao_vault::recall::{recall_body, recall_read_limit};
use cao_vault::reconcile::{
    IndexedNote, IndexedVault, ReconcileOptions, ReconcilePlan, ReconcileReport, plan_reconcile,
};
use cao_vault::scan::{NoteStatus, ScanOptions, ScanReport, read_note, scan_vault};
use chrono::{DateTime, NaiveDateTime, Utc};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// The refusal when `memory.vault.enabled` is false (or `CAO_MEMORY_VAULT_ENABLED` switched it off).
pub const DISABLED: &str = "memory vault is disabled by configuration";
/// The refusal when the vault is enabled but no vault is configured.
pub const NO_VAULT: &str = "memory vault has no configured vault";
/// The environment variable that can only switch a configured vault off.
pub const KILL_SWITCH_ENV: &str = "CAO_MEMORY_VAULT_ENABLED";

/// The project alias table of the store, as the vault configuration asks it: an id with recorded aliases is a
/// known project id; any other id is unknown (an alias is not resolved to its project here).
pub(crate) struct StoreProjects<'a> {
    pub(crate) snapshot: Snapshot<'a>,
}

impl ProjectDirectory for StoreProjects<'_> {
    fn lookup(&self, id: &str) -> Result<ProjectLookup, String> {
        let aliases = self.snapshot.aliases(id).map_err(|e| e.to_string())?;
        Ok(if aliases.is_empty() {
            ProjectLookup::Unknown
        } else {
            ProjectLookup::Canonical
        })
    }
}

/// The start of every fail-closed refusal: `vault configuration unavailable: <reason>`.
pub const UNAVAILABLE: &str = "vault configuration unavailable";

pub(crate) fn unavailable(reason: impl std::fmt::Display) -> MemoryError {
    MemoryError::Invalid(format!("{UNAVAILABLE}: {reason}"))
}

/// The validated `memory.vault` of this home's settings, the kill switch applied (disabled settings are returned,
/// not refused).
///
/// Errors: `vault configuration unavailable: <reason>` (invalid object, alias table unreadable); store errors.
pub fn settings(store: &Store) -> Result<VaultSettings, MemoryError> {
    settings_of(store, &store.settings())
}

/// [`settings`] from already loaded settings (a request reads `settings.json` once).
///
/// Errors: as [`settings`].
pub fn settings_of(store: &Store, loaded: &cao_core::Settings) -> Result<VaultSettings, MemoryError> {
    let snapshot = store.read()?;
    let projects = StoreProjects { snapshot };
    let ctx = ConfigContext::from_env(store.home().root(), &projects);
    let validated = from_settings(loaded, &ctx).map_err(unavailable)?;
    Ok(apply_kill_switch(
        validated,
        std::env::var(KILL_SWITCH_ENV).ok().as_deref(),
    ))
}

/// The active vault of `settings`.
///
/// Errors: [`DISABLED`], [`NO_VAULT`].
pub fn active(settings: &VaultSettings) -> Result<&VaultConfig, MemoryError> {
    if !settings.enabled {
        return Err(MemoryError::Invalid(DISABLED.to_owned()));
    }
    settings
        .active()
        .ok_or_else(|| MemoryError::Invalid(NO_VAULT.to_owned()))
}

/// The settings and active vault of this home, on a store that can hold a vault.
fn configured(store: &Store) -> Result<(VaultSettings, VaultConfig), MemoryError> {
    let s = settings(store)?;
    let vault = active(&s)?.clone();
    if !store.read()?.supports_vault() {
        return Err(vault_unsupported().into());
    }
    Ok((s, vault))
}

/// `cao memory vault scan`: the read-only scan of the configured vault. A note the scan finds indexable but whose
/// identity was forgotten (its stored row is `excluded`: the last applied reconcile kept it de-indexed) is listed
/// as `excluded`, not `indexed`, so the listing says what recall will serve.
///
/// Errors: as [`active`]; the vault root cannot be opened; store errors.
pub fn scan(store: &Store) -> Result<ScanReport, MemoryError> {
    let s = settings(store)?;
    let vault = active(&s)?;
    let mut report = scan_vault(vault, ScanOptions::default()).map_err(|e| MemoryError::Invalid(e.to_string()))?;
    let snapshot = store.read()?;
    if snapshot.supports_vault() {
        let state = snapshot.vault_state(&vault.id)?;
        let excluded: std::collections::HashSet<&str> = state
            .notes
            .iter()
            .filter(|n| n.note.status == NoteStatus::Excluded)
            .map(|n| n.note.relpath.as_str())
            .collect();
        for n in &mut report.notes {
            if n.status == NoteStatus::Indexed && excluded.contains(n.relpath.as_str()) {
                n.status = NoteStatus::Excluded;
            }
        }
    }
    Ok(report)
}

/// The exclusive vault projection lock (spec/vault-facts.md section 10), held while the returned file is open.
pub(crate) fn projection_lock(store: &Store, vault: &VaultConfig) -> Result<std::fs::File, MemoryError> {
    let path = cao_vault::writer::projection_lock_path(store.home().root(), &vault.root);
    if let Some(dir) = path.parent() {
        cao_core::fs::create_private_dir_all(dir)
            .map_err(|e| MemoryError::Invalid(format!("vault lock directory: {e}")))?;
    }
    cao_core::fs::lock_exclusive(&path)
        .map_err(|e| MemoryError::Invalid(format!("vault projection lock for '{}': {e}", vault.id)))
}

/// What a reconcile did: the reference's report, and whether it was applied.
#[derive(Debug, Clone, Serialize)]
pub struct Reconciled {
    /// The report (`vault_id`, `run_id`, counts, `deleted`, `rebuilt`).
    #[serde(flatten)]
    pub report: ReconcileReport,
    /// Whether the plan was written.
    pub applied: bool,
}

/// `cao memory vault reconcile [--apply]` / `rebuild --apply`: scan the vault, plan against the stored vault
/// state and, when `apply`, write the plan in one transaction under the projection lock. `rebuild` drops the
/// derived state first (exclusions and receipts survive).
///
/// Errors: as [`active`]; [`cao_store::vault_unsupported`]; the vault root cannot be opened; a note changed
/// between its scan and the read of its body (run again); store errors (nothing is written).
pub fn reconcile(store: &Store, apply: bool, rebuild: bool) -> Result<Reconciled, MemoryError> {
    let (s, vault) = configured(store)?;
    reconcile_with(store, &s, &vault, apply, rebuild)
}

/// [`reconcile`] of `vault` under already validated settings `s`.
fn reconcile_with(
    store: &Store,
    s: &VaultSettings,
    vault: &VaultConfig,
    apply: bool,
    rebuild: bool,
) -> Result<Reconciled, MemoryError> {
    let _lock = if apply {
        Some(projection_lock(store, vault)?)
    } else {
        None
    };
    reconcile_locked(store, s, vault, apply, rebuild)
}

/// [`reconcile_with`] when the caller already holds the projection lock (or does not apply).
pub(crate) fn reconcile_locked(
    store: &Store,
    s: &VaultSettings,
    vault: &VaultConfig,
    apply: bool,
    rebuild: bool,
) -> Result<Reconciled, MemoryError> {
    let vault = vault.clone();
    let state = store.read()?.vault_state(&vault.id)?;
    let current = indexed_vault(&state);
    let scan = scan_vault(&vault, ScanOptions::default()).map_err(|e| MemoryError::Invalid(e.to_string()))?;
    let now = store.now();
    let plan = plan_reconcile(
        &vault,
        &scan,
        &current,
        ReconcileOptions {
            run_started_at: now,
            apply,
            rebuild,
        },
    );
    if apply {
        let write = apply_of(&vault, s.max_recall_body_chars, &scan, &state, &plan, rebuild, now)?;
        store.write().vault_apply(&vault.id, &write, now)?;
    }
    Ok(Reconciled {
        report: plan.report,
        applied: apply,
    })
}

/// The stored vault state as the planner's input (the store leaves out rows of an unknown scope or status).
fn indexed_vault(state: &VaultState) -> IndexedVault {
    IndexedVault {
        notes: state.notes.iter().map(|n| n.note.clone()).collect(),
        exclusions: state.exclusions.clone(),
        aliases: state.aliases.clone(),
    }
}

fn utc(t: NaiveDateTime) -> DateTime<Utc> {
    DateTime::from_naive_utc_and_offset(t, Utc)
}

fn invalid_key(key: &str) -> MemoryError {
    MemoryError::Invalid(format!("vault key {key:?} is not a memory key"))
}

/// The complete state a plan asks the store to hold.
#[allow(
    clippy::too_many_arguments,
    reason = "the vault, its limits, the scan, the stored state and the plan"
)]
fn apply_of(
    vault: &VaultConfig,
    max_recall_body_chars: u32,
    scan: &ScanReport,
    stored: &VaultState,
    plan: &ReconcilePlan,
    rebuild: bool,
    now: DateTime<Utc>,
) -> Result<VaultApply, MemoryError> {
    let scanned: HashMap<&str, _> = scan.notes.iter().map(|n| (n.relpath.as_str(), n)).collect();
    let before: HashMap<&str, &VaultNoteRow> = stored.notes.iter().map(|n| (n.note.note_uid.as_str(), n)).collect();
    let notes: Vec<VaultNoteRow> = plan
        .notes
        .iter()
        .map(|p| {
            let n = &p.row;
            let stamp = scanned
                .get(n.relpath.as_str())
                .and_then(|s| s.stamp)
                .map(|s| VaultStamp {
                    dev: i64::try_from(s.dev).unwrap_or(i64::MAX),
                    ino: i64::try_from(s.ino).unwrap_or(i64::MAX),
                    ctime_ns: s.ctime_ns,
                });
            VaultNoteRow {
                note: n.clone(),
                last_reconciled_at: Some(now),
                stamp,
            }
        })
        .collect();
    let by_uid: HashMap<&str, &VaultNoteRow> = notes.iter().map(|n| (n.note.note_uid.as_str(), n)).collect();
    let mut metadata = Vec::with_capacity(plan.metadata.len());
    for m in &plan.metadata {
        let note = by_uid.get(m.note_uid.as_str());
        // The stored body is still the note's when the note was indexed before with the same text.
        let unchanged = !rebuild
            && note.zip(before.get(m.note_uid.as_str())).is_some_and(|(now_row, was)| {
                was.note.status == NoteStatus::Indexed && was.note.content_sha256 == now_row.note.content_sha256
            });
        let content = if unchanged {
            String::new()
        } else {
            body_of(vault, max_recall_body_chars, &m.file_path)?
        };
        let key = Key::parse_strict(&m.key).map_err(|_| invalid_key(&m.key))?;
        let mut row = MemoryRow::new(
            m.id.clone(),
            m.scope,
            m.scope_id.clone(),
            key,
            m.memory_type,
            m.file_path.clone(),
            m.tags.clone(),
            content,
            utc(m.updated_at),
        );
        row.source_kind = cao_core::SourceKind::Vault;
        row.token_estimate = i64::try_from(m.token_estimate).unwrap_or(i64::MAX);
        row.created_at = utc(m.created_at);
        row.updated_at = utc(m.updated_at);
        metadata.push(VaultMetadata {
            row,
            content_read: !unchanged,
        });
    }
    let mut edges = Vec::with_capacity(plan.edges.len());
    for e in &plan.edges {
        let (Ok(rel_type), Ok(status)) = (
            e.edge_type.as_str().parse::<RelType>(),
            e.status.as_str().parse::<RelStatus>(),
        ) else {
            continue;
        };
        let (Ok(source_key), Ok(target_key)) = (Key::parse_strict(&e.source_key), Key::parse_strict(&e.target_key))
        else {
            continue;
        };
        edges.push(VaultEdge {
            new_id: uuid::Uuid::new_v4().to_string(),
            scope: e.scope,
            scope_id: e.scope_id.clone(),
            source_key,
            target_key,
            rel_type,
            status,
            confidence: e.confidence,
            attributes_json: e
                .attributes
                .as_ref()
                .map(|a| serde_json::Value::Object(a.clone()).to_string()),
            source_updated_at: utc(e.source_updated_at),
        });
    }
    Ok(VaultApply {
        notes,
        exclusions: plan.exclusions.clone(),
        aliases: plan.aliases.clone(),
        findings: plan
            .findings
            .iter()
            .map(|f| VaultFindingRow {
                id: f.id.clone(),
                relpath: f.relpath.clone(),
                code: f.code.as_str().to_owned(),
                severity: f.severity.as_str().to_owned(),
                detail: f.detail.clone(),
                run_id: f.run_id.clone(),
            })
            .collect(),
        metadata,
        edges,
        rebuild,
    })
}

/// The recall body of the note at `relpath`, read through the confined reader.
///
/// Errors: the note cannot be read as it was scanned (changed or replaced since): the reconcile is refused.
pub fn body_of(vault: &VaultConfig, max_recall_body_chars: u32, relpath: &str) -> Result<String, MemoryError> {
    let limit = recall_read_limit(max_recall_body_chars) as u64;
    let changed = || {
        MemoryError::Invalid(format!(
            "vault note {relpath:?} changed while the vault was reconciled; run the reconcile again"
        ))
    };
    let (bytes, _) = read_note(vault, relpath, limit).map_err(|_| changed())?;
    let body = recall_body(&bytes, max_recall_body_chars, vault.max_frontmatter_bytes as usize).ok_or_else(changed)?;
    Ok(body.content)
}

/// The durable status of the configured vault (`cao memory vault status`, `GET /memory/vault/status`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VaultStatus {
    /// Vault id.
    pub vault_id: String,
    /// Rows per `vault_note` status, by status name.
    pub status_counts: BTreeMap<String, usize>,
    /// Finding rows per code, by code.
    pub finding_counts: BTreeMap<String, usize>,
    /// Durable recall counters (non-zero ones), by name.
    pub recall_counters: BTreeMap<String, i64>,
    /// Migration receipts with status `active`.
    pub receipts_active: usize,
    /// Migration receipts with any other status than `active` or `rolled_back`.
    pub receipts_inconsistent: usize,
    /// One line per `index: false` mapping, with its residual rows.
    pub inert_mappings: Vec<String>,
    /// Config warnings, then binding warnings.
    pub warnings: Vec<String>,
}

/// The status of the configured vault.
///
/// Errors: as [`active`]; [`cao_store::vault_unsupported`]; `vault configuration unavailable: ...` when the alias
/// table cannot be read; store errors.
pub fn status(store: &Store) -> Result<VaultStatus, MemoryError> {
    let (s, vault) = configured(store)?;
    let snapshot = store.read()?;
    let state = snapshot.vault_state(&vault.id)?;
    let findings = snapshot.vault_findings(&vault.id)?;
    let counters = snapshot.vault_counters(&vault.id)?;
    let receipts = snapshot.vault_receipts(&vault.id)?;
    let mut status_counts = BTreeMap::new();
    for n in &state.notes {
        *status_counts.entry(n.note.status.as_str().to_owned()).or_insert(0) += 1;
    }
    let mut finding_counts = BTreeMap::new();
    for f in &findings {
        *finding_counts.entry(f.code.clone()).or_insert(0) += 1;
    }
    let mut warnings = config_warnings(&s);
    let projects = StoreProjects { snapshot };
    warnings.extend(
        binding_warnings(&s, &projects)
            .map_err(unavailable)?
            .into_iter()
            .map(|w| w.detail),
    );
    let inert_mappings = vault
        .mappings
        .iter()
        .filter(|m| !m.index)
        .map(|m| {
            let scope = match &m.scope_id {
                Some(id) => format!("{}:{id}", m.scope.as_str()),
                None => m.scope.as_str().to_owned(),
            };
            let residual = state
                .notes
                .iter()
                .filter(|n| cao_vault::path::is_within(&n.note.relpath, &m.folder))
                .count();
            format!(
                "{} ({scope}) inert: recall=off inject=off write=off; residual_rows={residual}",
                m.folder
            )
        })
        .collect();
    Ok(VaultStatus {
        vault_id: vault.id.clone(),
        status_counts,
        finding_counts,
        recall_counters: counters.into_iter().collect(),
        receipts_active: receipts.iter().filter(|r| r.status == "active").count(),
        receipts_inconsistent: receipts
            .iter()
            .filter(|r| r.status != "active" && r.status != "rolled_back")
            .count(),
        inert_mappings,
        warnings,
    })
}

/// Route the vault-bound scope groups of a read to their vault rows (spec/vault-facts.md section 5 "Sources per
/// recall"): with an active vault, a group whose scope and (first, canonical) scope id a mapping binds reads that
/// mapping's vault rows instead of native rows (nothing when the mapping has `index: false`). Groups with every
/// scope id (`scan_all`) and session and federated groups stay native. Nothing changes when the vault is
/// disabled or not configured, or on a store without vault support.
///
/// Fail closed: when the vault configuration does not validate, every group is dropped (the read returns nothing,
/// native rows included) and a warning is logged.
pub fn bind_groups(store: &Store, loaded: &cao_core::Settings, groups: &mut Vec<cao_store::visibility::ScopeGroup>) {
    bind_groups_for(store, loaded, groups, false);
}

/// [`bind_groups`] for the context block (spec/vault-facts.md section 5 "Injection"): a vault-bound group reads
/// only the rows of a mapping with `inject: true` (and `index: true`); agent mappings are never injected. A group
/// bound to any other mapping reads nothing (its native rows stay hidden).
pub fn bind_injection_groups(
    store: &Store,
    loaded: &cao_core::Settings,
    groups: &mut Vec<cao_store::visibility::ScopeGroup>,
) {
    bind_groups_for(store, loaded, groups, true);
}

fn bind_groups_for(
    store: &Store,
    loaded: &cao_core::Settings,
    groups: &mut Vec<cao_store::visibility::ScopeGroup>,
    injection: bool,
) {
    let s = match settings_of(store, loaded) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "vault configuration unavailable: the read returns nothing");
            groups.clear();
            return;
        }
    };
    if s.active().is_none() || !store.read().is_ok_and(|r| r.supports_vault()) {
        return;
    }
    let Ok(snapshot) = store.read() else { return };
    let projects = StoreProjects { snapshot };
    let mut bound = false;
    for g in groups.iter_mut() {
        let id = match (&g.ids, g.scope.needs_scope_id()) {
            (None, false) => None,
            (Some(ids), true) => match ids.first() {
                Some(id) => Some(id.as_str()),
                None => continue,
            },
            _ => continue,
        };
        match cao_vault::binding::bind(&s, g.scope, id, &projects) {
            Ok(cao_vault::binding::Binding::Vault {
                index,
                inject,
                scope,
                scope_id,
                ..
            }) => {
                g.vault = true;
                let index = index && (!injection || (inject && scope != cao_core::Scope::Agent));
                bound |= index;
                g.ids = match (index, scope_id) {
                    (false, _) => Some(Vec::new()),
                    (true, None) => None,
                    (true, Some(id)) => Some(vec![id]),
                };
            }
            Ok(cao_vault::binding::Binding::Native { .. }) => {}
            Err(e) => {
                tracing::warn!(error = %e, "vault configuration unavailable: the read returns nothing");
                groups.clear();
                return;
            }
        }
    }
    if bound
        && let Some(vault) = s.active()
        && let Err(e) = pickup_with(store, &s, vault, true)
    {
        // The read goes on with the last applied projection.
        tracing::warn!(error = %e, "vault edits could not be picked up");
    }
}

/// How long a long-running process lets a vault go unwalked between reads: 1000 ms (see
/// [`cao_store::Store::set_vault_walk_interval`]). An edit is then recalled fresh at the first read that starts at
/// least this long after the last walk; the payload's `index_freshness` says when a served row is older than its file.
pub const DEFAULT_WALK_INTERVAL: std::time::Duration = std::time::Duration::from_millis(1000);

/// What one pickup check did ([`pickup_checked`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pickup {
    /// Nothing: the store has a walk interval ([`cao_store::Store::set_vault_walk_interval`]) and the last walk of
    /// the vault in this process ended less than that interval ago.
    Throttled,
    /// The vault was walked and its listing is the one the last check of this process found equal to the stored
    /// note rows, and the stored projection token is unchanged since: no stored row was loaded.
    Remembered,
    /// The vault was walked and the stored note rows were loaded: they match the listing.
    Checked,
    /// The listing differed from the stored note rows: a reconcile was applied.
    Reconciled,
}

/// Pick up vault edits before a read: list the vault (a directory walk, no note is read) and, when a note was
/// added, removed or written since the last applied reconcile (its device, inode or change time differs, or the
/// set of listed notes does), reconcile with `--apply` semantics. Whether a reconcile ran. Always walks (the walk
/// interval of long-running processes applies to the reads' own checks only).
///
/// Errors: as [`reconcile`].
pub fn pickup(store: &Store) -> Result<bool, MemoryError> {
    Ok(pickup_checked(store)? == Pickup::Reconciled)
}

/// [`pickup`], saying what the check did ([`Pickup`]; never [`Pickup::Throttled`]).
///
/// Errors: as [`reconcile`].
pub fn pickup_checked(store: &Store) -> Result<Pickup, MemoryError> {
    let (s, vault) = configured(store)?;
    pickup_with(store, &s, &vault, false)
}

/// [`pickup`] of `vault` under already validated settings `s`; `throttle`: honour the store's walk interval.
///
/// The stored note rows are loaded only when the listing's digest or the stored projection token differs from
/// what this process remembers of its last matching check (`cao_store::vault_pickup`). Sound because the token is
/// read before the rows and is replaced in the same transaction as every write of the note rows, by any process:
/// a remembered `(digest, token)` pair was taken when rows at least as new as that token matched a listing with
/// that digest, so while the token is unchanged the rows are those rows, and an equal digest means equal stamps.
fn pickup_with(store: &Store, s: &VaultSettings, vault: &VaultConfig, throttle: bool) -> Result<Pickup, MemoryError> {
    let mut memo = store.vault_pickup_memo(&vault.id);
    if throttle
        && let Some(interval) = store.vault_walk_interval()
        && memo.walked_within(interval, std::time::Instant::now())
    {
        return Ok(Pickup::Throttled);
    }
    let listing = cao_vault::scan::list_vault(vault).map_err(|e| MemoryError::Invalid(e.to_string()))?;
    let listed = listing.stamps();
    drop(listing);
    let digest = cao_vault::scan::stamps_digest(&listed);
    let snapshot = store.read()?;
    // The token first: rows read after it are at least as new as it (see above).
    let token = snapshot.vault_projection_token(&vault.id)?;
    if let (Some((d, t)), Some(now)) = (&memo.matched, &token)
        && *d == digest
        && t == now
    {
        memo.walked_at = Some(std::time::Instant::now());
        store.set_vault_pickup_memo(&vault.id, memo);
        return Ok(Pickup::Remembered);
    }
    let state = snapshot.vault_state(&vault.id)?;
    let stored: HashMap<&str, VaultStamp> = state
        .notes
        .iter()
        .filter_map(|n| n.stamp.map(|s| (n.note.relpath.as_str(), s)))
        .collect();
    let unchanged = listed.len() == stored.len()
        && listed.iter().all(|(path, s)| {
            stored.get(path.as_str()).is_some_and(|t| {
                i64::try_from(s.dev).is_ok_and(|d| d == t.dev)
                    && i64::try_from(s.ino).is_ok_and(|i| i == t.ino)
                    && s.ctime_ns == t.ctime_ns
            })
        });
    let outcome = if unchanged {
        memo.matched = token.map(|t| (digest, t));
        Pickup::Checked
    } else {
        reconcile_with(store, s, vault, true, false)?;
        // The reconcile's own scan may have seen a newer listing than ours: the next check loads the rows once.
        memo.matched = None;
        Pickup::Reconciled
    };
    memo.walked_at = Some(std::time::Instant::now());
    store.set_vault_pickup_memo(&vault.id, memo);
    Ok(outcome)
}

/// What forgetting a key of a vault-bound scope did (spec/vault-facts.md section 5 "Forget").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VaultForget {
    /// No note of the bound mapping has that key (a native memory of the scope is not touched).
    Absent,
    /// The note was de-indexed (exclusion recorded, metadata row and vault edges deleted); its file is kept.
    Deindexed {
        /// The note's vault-relative path.
        relpath: String,
    },
}

/// Forget `key` in `(scope, scope_id)` when that scope is vault-bound: `None` when it is not (the vault is off or
/// not configured, the scope is not mapped, or the store holds no vault), so the caller forgets a native memory.
/// Takes the vault projection lock.
///
/// Errors: `vault configuration unavailable: ...` (fail closed); the lock; store errors (nothing written).
pub fn forget(
    store: &Store,
    loaded: &cao_core::Settings,
    scope: cao_core::Scope,
    scope_id: Option<&str>,
    key: &str,
) -> Result<Option<VaultForget>, MemoryError> {
    let s = settings_of(store, loaded)?;
    let Some(vault) = s.active() else { return Ok(None) };
    let snapshot = store.read()?;
    if !snapshot.supports_vault() {
        return Ok(None);
    }
    let projects = StoreProjects { snapshot };
    let bound_id = match cao_vault::binding::bind(&s, scope, scope_id, &projects).map_err(unavailable)? {
        cao_vault::binding::Binding::Vault { scope_id, .. } => scope_id,
        cao_vault::binding::Binding::Native { .. } => return Ok(None),
    };
    let _lock = projection_lock(store, vault)?;
    let state = store.read()?.vault_state(&vault.id)?;
    match cao_vault::reconcile::plan_forget(&indexed_vault(&state), scope, bound_id.as_deref(), key) {
        cao_vault::reconcile::ForgetPlan::Absent => Ok(Some(VaultForget::Absent)),
        cao_vault::reconcile::ForgetPlan::Deindex {
            note_uid,
            relpath,
            exclusion,
        } => {
            store
                .write()
                .vault_forget(&vault.id, &note_uid, &exclusion, store.now())?;
            Ok(Some(VaultForget::Deindexed { relpath }))
        }
    }
}

/// A store that went to the managed folder of the vault (spec/vault-facts.md section 6 "MemoryService.store").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VaultStored {
    /// `created` (a new note) or `updated` (an entry appended to the existing note).
    pub action: &'static str,
    /// The note's absolute path.
    pub file_path: String,
    /// The note's vault-relative path.
    pub relpath: String,
    /// The scope id of the binding (the mapping's canonical id; `None` for global).
    pub scope_id: Option<String>,
}

/// Whether a valid migration receipt covers the native memory `native` of `key` in the bound scope, so that a
/// vault write of that key is not a cross-tier collision (spec/vault-facts.md section 6 "MemoryService.store":
/// "... unless a valid migration receipt covers it"; section 7: the native copy kept by a migration without
/// `--delete-source` is the managed note's source). Valid means, as the migration's own skip rule reads a receipt
/// ([`cao_vault::migrate::skip_reason`]): the receipt of this identity (`sha256(vault_id NUL scope NUL scope_id
/// NUL key)`) is `active` (not rolled back) and the native topic file is still byte for byte the one migrated
/// (its SHA-256 equals the receipt's `native_content_sha256`). A native memory written after the migration, or
/// one whose receipt was rolled back, stays a collision.
///
/// Errors: store errors reading the receipts. An unreadable native file is not covered (a collision).
fn receipt_covers(
    snapshot: &Snapshot<'_>,
    vault: &VaultConfig,
    scope: cao_core::Scope,
    scope_id: Option<&str>,
    key: &Key,
    native: &MemoryRow,
) -> Result<bool, MemoryError> {
    let id = cao_vault::migrate::receipt_id(&vault.id, scope.as_str(), scope_id, key.as_str());
    let Some(receipt) = snapshot
        .vault_receipts(&vault.id)?
        .into_iter()
        .find(|r| r.receipt_id == id && r.status == "active")
    else {
        return Ok(false);
    };
    let Ok(bytes) = std::fs::read(&native.file_path) else {
        return Ok(false);
    };
    Ok(receipt.native_content_sha256.as_deref() == Some(cao_vault::hash::sha256_hex(&bytes).as_str()))
}

fn write_refused(e: cao_vault::writer::WriteError) -> MemoryError {
    match e {
        cao_vault::writer::WriteError::Secret(pattern) => MemoryError::Secret { pattern },
        other => MemoryError::Invalid(other.to_string()),
    }
}

/// Store `content` under `key` in `(scope, scope_id)` when that scope is vault-bound: the entry is appended to the
/// managed note `<root>/<managed_folder>/<key>.md` (a new note gets `tags` and its `cao` block with `type`, `key`
/// and `managed: true`), published atomically against the indexed hash, and a refresh reconcile is applied under
/// the same projection lock, so the next recall sees it. `None` when the scope is not vault-bound (the vault is off
/// or not configured, the scope is not mapped, session and federated scopes, or the store holds no vault): the
/// caller stores natively.
///
/// Errors (nothing is written): `vault configuration unavailable: ...` (fail closed); `vault mapping '<folder>' is
/// not writable`; an agent-scope write without an identified non-curator terminal; the cross-tier collision with a
/// native memory of the key (unless a valid migration receipt covers it: `receipt_covers`); a key already minted
/// by another note of the mapping; the writer's refusals
/// (conflict with an edited note, size, secret under `reject` as [`MemoryError::Secret`], boundary). A failed
/// refresh after the publish is [`MemoryError::PartialWrite`].
#[allow(clippy::too_many_arguments)]
pub fn store(
    store: &Store,
    loaded: &cao_core::Settings,
    ctx: &cao_core::TerminalContext,
    scope: cao_core::Scope,
    scope_id: Option<&str>,
    key: &Key,
    memory_type: cao_core::MemoryType,
    tags: &str,
    content: &str,
) -> Result<Option<VaultStored>, MemoryError> {
    use cao_vault::writer::{BodyEdit, Expected, WriteLimits, WriteRequest, publish, read_managed, render_managed};
    if loaded.file_value("memory.vault").is_none() {
        // No vault configured: every scope is native (and no snapshot is taken for the question).
        return Ok(None);
    }
    let s = settings_of(store, loaded)?;
    let Some(vault) = s.active() else { return Ok(None) };
    let snapshot = store.read()?;
    if !snapshot.supports_vault() {
        return Ok(None);
    }
    let projects = StoreProjects { snapshot };
    let (folder, bound_id, index, writable) =
        match cao_vault::binding::bind(&s, scope, scope_id, &projects).map_err(unavailable)? {
            cao_vault::binding::Binding::Vault {
                folder,
                scope_id,
                index,
                writable,
                ..
            } => (folder, scope_id, index, writable),
            cao_vault::binding::Binding::Native { .. } => return Ok(None),
        };
    if !(index && writable) {
        return Err(MemoryError::Invalid(format!(
            "vault mapping '{folder}' is not writable"
        )));
    }
    if scope == cao_core::Scope::Agent && (ctx.terminal_id.is_none() || crate::eligibility::is_curator(ctx)) {
        return Err(MemoryError::Invalid(
            "an agent-scoped vault write needs an identified terminal that is not the curator".to_owned(),
        ));
    }
    let _lock = projection_lock(store, vault)?;
    let snapshot = store.read()?;
    if let Some(native) = snapshot.get(scope, bound_id.as_deref(), key)?
        && !receipt_covers(&snapshot, vault, scope, bound_id.as_deref(), key, &native)?
    {
        return Err(MemoryError::Invalid(format!(
            "memory key '{key}' already exists in the native store for '{scope}'; resolve the cross-tier collision \
             before writing"
        )));
    }
    let state = snapshot.vault_state(&vault.id)?;
    let relpath = format!("{}/{key}.md", vault.managed_folder);
    let same_scope =
        |n: &&IndexedNote| n.scope == scope && n.scope_id.as_deref().unwrap_or("") == bound_id.as_deref().unwrap_or("");
    if let Some(other) = state
        .notes
        .iter()
        .map(|n| &n.note)
        .filter(same_scope)
        .find(|n| n.key == key.as_str() && n.relpath != relpath && n.status != NoteStatus::Excluded)
    {
        return Err(MemoryError::Invalid(format!(
            "key '{key}' is already minted by '{}' in this mapping; choose another key or rename that note",
            other.relpath
        )));
    }
    let existing = read_managed(vault, key.as_str()).map_err(write_refused)?;
    let existing = existing.filter(|t| !t.is_empty());
    let now = DateTime::<Utc>::from_timestamp(store.now().timestamp(), 0).unwrap_or_else(Utc::now);
    let request = WriteRequest {
        key: key.as_str().to_owned(),
        cao: vec![(
            "type".to_owned(),
            cao_vault::yaml::Yaml::Str(memory_type.as_str().to_owned()),
        )],
        seeds: if existing.is_none() && !tags.is_empty() {
            vec![("tags".to_owned(), cao_vault::yaml::Yaml::Str(tags.to_owned()))]
        } else {
            Vec::new()
        },
        body: BodyEdit::Append {
            content: content.to_owned(),
            occurred_at: None,
            now,
        },
    };
    let path = vault.root.join(&relpath);
    let rendered =
        render_managed(existing.as_deref(), &request, WriteLimits::of(vault), &path).map_err(write_refused)?;
    let expected = match &existing {
        None => Expected::New,
        Some(_) => Expected::Hash(
            state
                .notes
                .iter()
                .find(|n| n.note.relpath == relpath)
                .and_then(|n| n.note.content_sha256.clone())
                .unwrap_or_default(),
        ),
    };
    let written = publish(vault, key.as_str(), &rendered.text, &expected).map_err(write_refused)?;
    reconcile_locked(store, &s, vault, true, false).map_err(|e| MemoryError::PartialWrite {
        path: written.clone(),
        reason: format!("the vault refresh failed: {e}; run `cao memory vault reconcile --apply`"),
    })?;
    Ok(Some(VaultStored {
        action: if existing.is_some() { "updated" } else { "created" },
        file_path: written.to_string_lossy().into_owned(),
        relpath,
        scope_id: bound_id,
    }))
}
