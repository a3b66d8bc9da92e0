//! `cao memory heal`: turn lint's findings into fixes, one fix per issue type (spec 000 "Typed relationships":
//! "heal consumes the findings from cao memory lint"; spec/reference-facts.md "Heal"). The report is
//! `cao.memory.heal/1` (docs/schemas/cao.memory.heal-1.json).
//!
//! A run: take the heal lock (`<home>/memory/.heal.lock`, non-blocking: a second heal fails at once naming it),
//! bring changes made outside the tool into the index (as every read does, so a topic file not indexed yet is
//! indexed rather than planned for deletion), lint the caller's groups (the run's target), plan, and with `apply` carry the plan out. Without `apply` nothing
//! but the lock file is written.
//!
//! | finding | fix |
//! |---|---|
//! | `orphan_page` `file_without_row` | delete the topic file (refused when a row appeared, or the file parses as a memory: the next read indexes it) |
//! | `orphan_page` `unparsable_file` | none: the memory lives in the index; the user fixes the file or deletes the memory |
//! | `orphan_page` `row_without_file` | delete the index row (refused when a file appeared) |
//! | `orphan_page` `missing_from_index_md`, `index_md_without_file` | rewrite the container's `index.md` from the index (one action per container) |
//! | `stale_claim` `path`, `symbol` | remove the first paragraph naming the claim (a new entry; refused when it is the memory's only paragraph) |
//! | `stale_claim` `related_key` | drop the key from the memory's `related_keys` |
//! | `contradiction` | delete the memory with the older `updated_at` (a tie: the smaller key survives) |
//! | `poison_frequency` | set the access count to 0, only with `aggressive` |
//! | `graph_density` | never changed |
//!
//! Invariants:
//! - **Never crosses containers.** Every finding names its container, scope and scope id; a finding whose
//!   `(scope, scope_id)` is not one of the run's groups is dropped, and every action acts on that exact identity,
//!   so a same-key memory of another project is never touched.
//! - **Applies what was reviewed.** With a plan digest ([`HealRequest::plan_digest`]) the apply plans again under
//!   the lock and carries the plan out only when its digest is the reviewed one; otherwise it applies nothing.
//! - **Bounded.** At most [`MAX_HEAL_ACTIONS`] actions per run; the rest are counted in `over_limit` and left for
//!   the next run.
//! - **Through the write protocol.** Every change goes through the store (topic lock, atomic file write, one index
//!   transaction); each precondition is checked again under the lock, and an action whose memory changed since
//!   lint is skipped with the reason.
//! - **Audited and recoverable.** Every applied action writes one `heal` audit line; whatever it deletes (a topic
//!   file's whole text, a row's content, a stripped paragraph up to 2 KiB, which also stays in the topic file's
//!   earlier entry) is in that line. A file too large to keep in the line ([`MAX_RECOVERABLE_BYTES`]) is not
//!   deleted.

use crate::lint;
use crate::lint_claims;
use crate::lint_report::{Corpus, FindingKind, Group, IssueType, LintFinding, LintRequest, Severity, one_line};
use cao_core::{Key, MemoryRef, Scope, Settings, TerminalContext};
use cao_model::{Model, ModelError};
use cao_ops::types::Progress;
use cao_ops::write;
use cao_store::MemoryError;
use cao_store::MemoryRow;
use cao_store::audit::{self, HealAuditRecord, MAX_REMOVED_PARAGRAPH_BYTES, actor_of};
use cao_store::{Presence, Recoverable, Store};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;

/// The `schema` value of a heal report.
pub const HEAL_SCHEMA: &str = "cao.memory.heal/1";
/// Most actions per run.
pub const MAX_HEAL_ACTIONS: usize = 200;
/// Largest topic file heal deletes (its text goes to the audit line).
pub const MAX_RECOVERABLE_BYTES: usize = 1 << 20;
/// The heal lock's file name, in `<home>/memory/`.
pub const HEAL_LOCK_FILE: &str = ".heal.lock";

/// Arguments of a heal run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HealRequest {
    /// Only this scope (default: every scope the caller sees).
    pub scope: Option<Scope>,
    /// Carry the plan out (default: only print it).
    pub apply: bool,
    /// Also reset poisoned access counts.
    pub aggressive: bool,
    /// The repository root for lint's path and symbol checks (see [`LintRequest::repo_root`]).
    pub repo_root: Option<PathBuf>,
    /// With `apply`: the digest of the plan the operator reviewed ([`HealReport::plan_digest`] of a dry run). The
    /// run plans again and applies only when the new plan has this digest; otherwise nothing is applied
    /// ([`MemoryError::PlanChanged`]). `None` applies whatever the run plans.
    pub plan_digest: Option<String>,
    /// The model to judge with instead of the configured one (`memory.model.*`); `None` = the configured one.
    pub model: Option<cao_model::SharedModel>,
}

/// What a heal action does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HealActionKind {
    /// Delete a topic file that has no index row.
    DeleteFile,
    /// Delete an index row that has no topic file.
    DeleteRow,
    /// Rewrite a container's `index.md` from the index.
    RefreshIndexMd,
    /// Remove the first paragraph naming a stale claim.
    StripParagraph,
    /// Drop a missing key from a memory's `related_keys`.
    DropRelatedKey,
    /// Set a poisoned access count to 0.
    ResetAccessCount,
    /// Delete the older memory of a contradicting pair.
    DeleteMemory,
}

impl HealActionKind {
    /// The wire name (`delete_file`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            HealActionKind::DeleteFile => "delete_file",
            HealActionKind::DeleteRow => "delete_row",
            HealActionKind::RefreshIndexMd => "refresh_index_md",
            HealActionKind::StripParagraph => "strip_paragraph",
            HealActionKind::DropRelatedKey => "drop_related_key",
            HealActionKind::ResetAccessCount => "reset_access_count",
            HealActionKind::DeleteMemory => "delete_memory",
        }
    }
}

/// Where an action stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionStatus {
    /// Planned (a dry run).
    Planned,
    /// Done and audited.
    Applied,
    /// Not done: its precondition no longer held (see `reason`).
    Skipped,
    /// Not done: it failed (see `reason`).
    Failed,
}

/// One fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HealAction {
    /// What it does.
    pub action: HealActionKind,
    /// The issue type of the finding it fixes.
    pub issue_type: IssueType,
    /// The memory's container.
    pub container: String,
    /// The memory's scope.
    pub scope: Scope,
    /// The memory's scope id.
    pub scope_id: Option<String>,
    /// The memory acted on (`None` for `refresh_index_md`).
    pub key: Option<String>,
    /// The other memory: the survivor of a contradiction, or the related key dropped.
    pub related_key: Option<String>,
    /// The stale claim whose paragraph is removed.
    pub claim: Option<String>,
    /// What the action does, in one line.
    pub detail: String,
    /// Planned, applied, skipped or failed.
    pub status: ActionStatus,
    /// Why it was skipped or failed.
    pub reason: Option<String>,
}

/// A finding without an action of its own, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WithoutAction {
    /// The finding's issue type.
    pub issue_type: IssueType,
    /// The finding's kind.
    pub kind: FindingKind,
    /// The finding's container.
    pub container: Option<String>,
    /// The finding's scope.
    pub scope: Option<Scope>,
    /// The finding's scope id.
    pub scope_id: Option<String>,
    /// The finding's key.
    pub key: Option<String>,
    /// Why there is no action for it.
    pub reason: String,
}

/// Actions per status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct HealCounts {
    /// Planned (dry run).
    pub planned: usize,
    /// Applied.
    pub applied: usize,
    /// Skipped.
    pub skipped: usize,
    /// Failed.
    pub failed: usize,
}

/// What heal planned or did (`cao.memory.heal/1`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HealReport {
    /// Always [`HEAL_SCHEMA`].
    pub schema: &'static str,
    /// The `--scope` filter, if any.
    pub scope: Option<Scope>,
    /// True when the plan was carried out (`--apply`).
    pub apply: bool,
    /// True with `--aggressive`.
    pub aggressive: bool,
    /// Lint findings considered (warnings and errors).
    pub findings: usize,
    /// Findings dropped because they belong to no group of this run.
    pub dropped: usize,
    /// Actions left out by [`MAX_HEAL_ACTIONS`] (the next run plans them).
    pub over_limit: usize,
    /// Actions per status.
    pub counts: HealCounts,
    /// The fixes, in lint's finding order.
    pub actions: Vec<HealAction>,
    /// Findings without an action of their own: resolved by an earlier action, reported only (graph density), or
    /// needing what this run lacks (`--aggressive`, a second paragraph).
    pub without_action: Vec<WithoutAction>,
}

impl HealReport {
    /// Whether some action failed (then `cao memory heal` exits 1).
    pub fn has_failures(&self) -> bool {
        self.counts.failed > 0
    }

    /// The digest of the plan ([`cao_store::plan_digest`]): lowercase hex SHA-256 of the compact JSON of the schema,
    /// the scope filter, `aggressive` and, per action in order, its kind, issue type, container, scope, scope id,
    /// key, related key, claim and detail. An action's status and reason are not part of it, so a dry run and the
    /// apply of the same plan have the same digest.
    pub fn plan_digest(&self) -> String {
        #[derive(Serialize)]
        struct Canon<'a> {
            schema: &'static str,
            scope: Option<Scope>,
            aggressive: bool,
            actions: Vec<CanonAction<'a>>,
        }
        #[derive(Serialize)]
        struct CanonAction<'a> {
            action: HealActionKind,
            issue_type: IssueType,
            container: &'a str,
            scope: Scope,
            scope_id: Option<&'a str>,
            key: Option<&'a str>,
            related_key: Option<&'a str>,
            claim: Option<&'a str>,
            detail: &'a str,
        }
        cao_store::plan_digest::sha256_hex(&Canon {
            schema: HEAL_SCHEMA,
            scope: self.scope,
            aggressive: self.aggressive,
            actions: self
                .actions
                .iter()
                .map(|a| CanonAction {
                    action: a.action,
                    issue_type: a.issue_type,
                    container: &a.container,
                    scope: a.scope,
                    scope_id: a.scope_id.as_deref(),
                    key: a.key.as_deref(),
                    related_key: a.related_key.as_deref(),
                    claim: a.claim.as_deref(),
                    detail: &a.detail,
                })
                .collect(),
        })
    }
}

/// Heal with the model configured by `settings` (for the contradiction pass).
///
/// Errors: as [`heal`].
pub fn heal_configured(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    req: &HealRequest,
    progress: &dyn Progress,
) -> Result<HealReport, MemoryError> {
    let model = cao_model::from_settings(settings);
    let model_ref = match &model {
        Ok(m) => Ok(&**m),
        Err(e) => Err(e),
    };
    heal(store, settings, ctx, req, model_ref, progress)
}

/// One heal run (see the module docs). Memory must be enabled (the caller checks).
///
/// Errors: [`MemoryError::HealBusy`] when another heal holds the lock (nothing done); [`MemoryError::PlanChanged`]
/// when `req.plan_digest` names another plan than the one made now (nothing done); [`MemoryError::Io`] when the
/// lock file cannot be opened; lint's errors. A failing action is reported in its row, not as an error, except
/// one that failed because the file system is full or read-only: that ends the run with its error (the actions
/// before it stay applied, the rest are not tried).
pub fn heal(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    req: &HealRequest,
    model: Result<&dyn Model, &ModelError>,
    progress: &dyn Progress,
) -> Result<HealReport, MemoryError> {
    let lock_path = store.home().memory_dir().join(HEAL_LOCK_FILE);
    // A store on a shared database keeps no files under `memory/`, which then may not exist yet.
    let _lock = match cao_core::fs::create_dir_all(&store.home().memory_dir())
        .and_then(|()| cao_core::fs::try_lock_exclusive(&lock_path))
    {
        Ok(Some(file)) => file,
        Ok(None) => return Err(MemoryError::HealBusy { lock: lock_path }),
        Err(e) => {
            return Err(MemoryError::Io {
                context: format!("opening the heal lock {}", lock_path.display()),
                source: e,
            });
        }
    };
    if let Some(problem) = store.snapshot().quick_check()? {
        return Err(MemoryError::Io {
            context: format!(
                "the index database {} fails its integrity check; heal changed nothing: run `cao memory repair` to \
                 rebuild it from the wiki files",
                store.home().db_path().display()
            ),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, problem),
        });
    }
    // As every read (and lint): a file the index has not picked up yet is indexed first, never planned as an
    // orphan to delete.
    store.read_now()?;
    let corpus = Corpus::load(store, settings, ctx, req.scope)?;
    let lint_req = LintRequest {
        scope: req.scope,
        repo_root: req.repo_root.clone(),
        model: req.model.clone(),
    };
    let report = lint::lint_corpus(store, &corpus, ctx, &lint_req, model, progress)?;
    let targets: HashSet<Group> = corpus.groups.iter().map(|(g, _)| g.clone()).collect();
    let rows: HashMap<(Group, &str), &MemoryRow> = corpus
        .groups
        .iter()
        .flat_map(|(g, rows)| rows.iter().map(move |r| ((g.clone(), r.key.as_str()), r)))
        .collect();
    let mut out = plan(&report.findings, &targets, &rows, req.aggressive);
    out.scope = req.scope;
    out.apply = req.apply;
    if req.apply
        && let Some(reviewed) = &req.plan_digest
    {
        let current = out.plan_digest();
        if !cao_store::plan_digest::matches(reviewed, &current) {
            return Err(MemoryError::PlanChanged {
                reviewed: cao_store::plan_digest::shown(reviewed),
                current,
            });
        }
    }
    if req.apply {
        progress.start("heal", out.actions.len() as u64);
        let actor = actor_of(ctx);
        for action in &mut out.actions {
            if let Some(fault) = apply(store, actor, action) {
                // A full or read-only file system fails every later action too: stop at the first, as a
                // `storage_full` / `storage_read_only` error (each action is whole or not done).
                progress.finish();
                return Err(fault);
            }
            progress.advance(1);
        }
        progress.finish();
    }
    out.counts = HealCounts::default();
    for a in &out.actions {
        match a.status {
            ActionStatus::Planned => out.counts.planned += 1,
            ActionStatus::Applied => out.counts.applied += 1,
            ActionStatus::Skipped => out.counts.skipped += 1,
            ActionStatus::Failed => out.counts.failed += 1,
        }
    }
    Ok(out)
}

/// The plan for `findings` (pure; see the module docs): actions in finding order, the findings without an action of their own (and why), and
/// how many findings were dropped for belonging to no group in `targets`. `rows` holds the current row of every
/// memory of the targets (for contradiction ages and the paragraph simulation).
pub fn plan(
    findings: &[LintFinding],
    targets: &HashSet<Group>,
    rows: &HashMap<(Group, &str), &MemoryRow>,
    aggressive: bool,
) -> HealReport {
    let mut report = HealReport {
        schema: HEAL_SCHEMA,
        scope: None,
        apply: false,
        aggressive,
        findings: 0,
        dropped: 0,
        over_limit: 0,
        counts: HealCounts::default(),
        actions: Vec::new(),
        without_action: Vec::new(),
    };
    let mut refreshed: HashMap<String, usize> = HashMap::new();
    let mut texts: HashMap<(Group, String), String> = HashMap::new();
    let mut deleted: BTreeSet<(Group, String)> = BTreeSet::new();
    let mut actions: Vec<HealAction> = Vec::new();
    for f in findings.iter().filter(|f| f.severity != Severity::Info) {
        report.findings += 1;
        let Some(scope) = f.scope else {
            continue; // a run-wide status row (incomplete pass): nothing to fix
        };
        let group = Group {
            scope,
            scope_id: f.scope_id.clone(),
        };
        if !targets.contains(&group) || f.container.as_deref() != Some(group.container().as_str()) {
            report.dropped += 1;
            continue;
        }
        let no_action = |reason: &str| WithoutAction {
            issue_type: f.issue_type,
            kind: f.kind,
            container: f.container.clone(),
            scope: f.scope,
            scope_id: f.scope_id.clone(),
            key: f.key.clone(),
            reason: reason.to_owned(),
        };
        let action = |kind: HealActionKind, detail: String| HealAction {
            action: kind,
            issue_type: f.issue_type,
            container: group.container().into_string(),
            scope,
            scope_id: f.scope_id.clone(),
            key: f.key.clone(),
            related_key: None,
            claim: None,
            detail,
            status: ActionStatus::Planned,
            reason: None,
        };
        let key = f.key.clone().unwrap_or_default();
        match (f.issue_type, f.kind) {
            (IssueType::OrphanPage, FindingKind::FileWithoutRow) => actions.push(action(
                HealActionKind::DeleteFile,
                // The finding says why the file has no row (it cannot be parsed, and the reason).
                format!("delete it: {} (its text goes to the audit log)", f.description),
            )),
            (IssueType::OrphanPage, FindingKind::UnparsableFile) => report.without_action.push(no_action(&format!(
                "the memory lives in the index (`cao memory show {key}` prints its last good text): fix the topic \
                 file by hand, or remove the memory with `cao memory delete {key}`; deleting the file alone would \
                 fix nothing"
            ))),
            (IssueType::OrphanPage, FindingKind::RowWithoutFile) => actions.push(action(
                HealActionKind::DeleteRow,
                "delete the index row that has no topic file (its content goes to the audit log)".to_owned(),
            )),
            (IssueType::OrphanPage, FindingKind::MissingFromIndexMd | FindingKind::IndexMdWithoutFile) => {
                let container = group.container().into_string();
                match refreshed.get(&container) {
                    Some(&i) => {
                        if let Some(a) = actions.get_mut(i) {
                            a.detail = format!("rewrite {container}/wiki/index.md from the index (several findings)");
                        }
                    }
                    None => {
                        let mut a = action(
                            HealActionKind::RefreshIndexMd,
                            format!("rewrite {container}/wiki/index.md from the index"),
                        );
                        a.key = None;
                        refreshed.insert(container, actions.len());
                        actions.push(a);
                    }
                }
            }
            (IssueType::StaleClaim, FindingKind::Path | FindingKind::Symbol) => {
                let Some(claim) = f.claim.clone() else { continue };
                let slot = (group.clone(), key.clone());
                if deleted.contains(&slot) {
                    continue;
                }
                let text = match texts.get(&slot) {
                    Some(t) => t.clone(),
                    None => match rows.get(&(group.clone(), key.as_str())) {
                        Some(r) => r.content.clone(),
                        None => {
                            report.without_action.push(no_action("the memory has no index row"));
                            continue;
                        }
                    },
                };
                match lint_claims::strip_paragraph(&text, &claim) {
                    None => report
                        .without_action
                        .push(no_action("resolved by an earlier action on the same memory")),
                    Some((kept, _)) if kept.trim().is_empty() => report.without_action.push(no_action(
                        "the claim is in the memory's only paragraph; edit the memory or delete it with \
                         `cao memory delete`",
                    )),
                    Some((kept, removed)) => {
                        let mut a = action(
                            HealActionKind::StripParagraph,
                            format!(
                                "remove the paragraph naming {claim} ({} bytes; kept in the audit log and the \
                                 topic file's history)",
                                removed.len()
                            ),
                        );
                        a.claim = Some(claim);
                        texts.insert(slot, kept);
                        actions.push(a);
                    }
                }
            }
            (IssueType::StaleClaim, FindingKind::RelatedKey) => {
                let Some(related) = f.related_key.clone() else { continue };
                let mut a = action(
                    HealActionKind::DropRelatedKey,
                    format!("drop {related} from related_keys"),
                );
                a.related_key = Some(related);
                actions.push(a);
            }
            (IssueType::PoisonFrequency, FindingKind::AccessCount) => {
                if aggressive {
                    actions.push(action(
                        HealActionKind::ResetAccessCount,
                        "set access_count to 0".to_owned(),
                    ));
                } else {
                    report
                        .without_action
                        .push(no_action("poisoned access counts are reset only with --aggressive"));
                }
            }
            (IssueType::GraphDensity, _) => report
                .without_action
                .push(no_action("graph density is reported only; heal never changes it")),
            (IssueType::Contradiction, FindingKind::ModelVerdict) => {
                let Some(other) = f.related_key.clone() else { continue };
                let (Some(a_row), Some(b_row)) = (
                    rows.get(&(group.clone(), key.as_str())),
                    rows.get(&(group.clone(), other.as_str())),
                ) else {
                    report
                        .without_action
                        .push(no_action("one of the two memories has no index row"));
                    continue;
                };
                // The newer survives; a tie keeps the smaller key.
                let a_survives = (a_row.updated_at, std::cmp::Reverse(a_row.key.as_str()))
                    > (b_row.updated_at, std::cmp::Reverse(b_row.key.as_str()));
                let (loser, survivor) = if a_survives { (b_row, a_row) } else { (a_row, b_row) };
                let loser_slot = (group.clone(), loser.key.to_string());
                let survivor_slot = (group.clone(), survivor.key.to_string());
                if deleted.contains(&loser_slot) || deleted.contains(&survivor_slot) {
                    report
                        .without_action
                        .push(no_action("resolved by an earlier action (one of the pair is deleted)"));
                    continue;
                }
                let mut a = action(
                    HealActionKind::DeleteMemory,
                    format!(
                        "delete {}, which the newer {} contradicts (its text goes to the audit log)",
                        loser.key, survivor.key
                    ),
                );
                a.key = Some(loser.key.to_string());
                a.related_key = Some(survivor.key.to_string());
                deleted.insert(loser_slot);
                actions.push(a);
            }
            _ => {}
        }
    }
    if actions.len() > MAX_HEAL_ACTIONS {
        report.over_limit = actions.len() - MAX_HEAL_ACTIONS;
        actions.truncate(MAX_HEAL_ACTIONS);
    }
    report.counts.planned = actions.len();
    report.actions = actions;
    report
}

/// Carry out one planned action; set its status (and reason); write its audit line when applied. Returns the
/// error when the action failed because the file system is full or read-only
/// ([`MemoryError::storage_fault`]), which ends the run.
fn apply(store: &Store, actor: &str, action: &mut HealAction) -> Option<MemoryError> {
    match apply_one(store, actor, action) {
        Ok(Done::Applied { removed }) => {
            action.status = ActionStatus::Applied;
            audit::record_heal(
                store,
                &HealAuditRecord {
                    ts: store.now(),
                    key: action.key.as_deref().unwrap_or("index.md"),
                    scope: action.scope,
                    scope_id: action.scope_id.as_deref(),
                    actor,
                    action: action.action.as_str(),
                    issue_type: action.issue_type.as_str(),
                    claim: action.claim.as_deref().or(action.related_key.as_deref()),
                    removed: removed.as_deref(),
                },
            );
        }
        Ok(Done::Skipped(reason)) => {
            action.status = ActionStatus::Skipped;
            action.reason = Some(reason);
        }
        Err(e) => {
            action.status = ActionStatus::Failed;
            action.reason = Some(one_line(&e.to_string(), 300));
            if e.storage_fault().is_some() {
                return Some(e);
            }
        }
    }
    None
}

enum Done {
    Applied { removed: Option<String> },
    Skipped(String),
}

fn apply_one(store: &Store, actor: &str, action: &HealAction) -> Result<Done, MemoryError> {
    if action.action == HealActionKind::RefreshIndexMd {
        store.refresh_index_md(&action.container)?;
        return Ok(Done::Applied { removed: None });
    }
    let key = Key::parse_strict(action.key.as_deref().unwrap_or_default())?;
    let memory = MemoryRef::new(action.scope, action.scope_id.clone(), key);
    let removal = |want: Presence| -> Result<Done, MemoryError> {
        Ok(
            match write::remove_recoverable(store, actor, &memory, want, MAX_RECOVERABLE_BYTES)? {
                Recoverable::Removed { text } => Done::Applied { removed: Some(text) },
                Recoverable::Refused(why) => Done::Skipped(why),
            },
        )
    };
    match action.action {
        HealActionKind::DeleteFile => removal(Presence::FileOnly),
        HealActionKind::DeleteRow => removal(Presence::RowOnly),
        HealActionKind::DeleteMemory => removal(Presence::Both),
        HealActionKind::StripParagraph => {
            let claim = action.claim.clone().unwrap_or_default();
            let mut removed: Option<String> = None;
            let mut skipped = "the memory is gone";
            let written = store.rewrite(&memory, |row| {
                Ok(match lint_claims::strip_paragraph(&row.content, &claim) {
                    None => {
                        skipped = "no paragraph names the claim any more";
                        None
                    }
                    Some((kept, _)) if kept.trim().is_empty() => {
                        skipped = "the claim is now in the memory's only paragraph";
                        None
                    }
                    Some((kept, paragraph)) => {
                        removed = Some(paragraph);
                        Some(kept)
                    }
                })
            })?;
            Ok(match (written, removed) {
                (Some(_), Some(paragraph)) => Done::Applied {
                    removed: Some(cut_bytes(&paragraph, MAX_REMOVED_PARAGRAPH_BYTES).to_owned()),
                },
                _ => Done::Skipped(skipped.to_owned()),
            })
        }
        HealActionKind::DropRelatedKey => {
            let related = action.related_key.clone().unwrap_or_default();
            let changed = store.edit_related_keys(&memory, |current| {
                let current = current?;
                let parts: Vec<&str> = current.split(',').map(str::trim).collect();
                if !parts.contains(&related.as_str()) {
                    return None;
                }
                Some(
                    parts
                        .into_iter()
                        .filter(|p| !p.is_empty() && *p != related)
                        .collect::<Vec<_>>()
                        .join(","),
                )
            })?;
            Ok(match changed {
                Some(_) => Done::Applied { removed: Some(related) },
                None => Done::Skipped("the key is no longer in related_keys".to_owned()),
            })
        }
        HealActionKind::ResetAccessCount => Ok(match store.reset_access_count(&memory)? {
            Some(before) => Done::Applied {
                removed: Some(format!("access_count {before}")),
            },
            None => Done::Skipped("the memory is gone".to_owned()),
        }),
        HealActionKind::RefreshIndexMd => Ok(Done::Skipped("handled above".to_owned())),
    }
}

/// `s` cut to at most `max` bytes at a character boundary.
fn cut_bytes(s: &str, max: usize) -> &str {
    &s[..s.floor_char_boundary(max)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    fn finding(issue_type: IssueType, kind: FindingKind, severity: Severity, g: &Group, key: &str) -> LintFinding {
        LintFinding {
            issue_type,
            kind,
            severity,
            container: Some(g.container().into_string()),
            scope: Some(g.scope),
            scope_id: g.scope_id.clone(),
            key: Some(key.to_owned()),
            related_key: None,
            claim: None,
            description: String::new(),
        }
    }

    fn row(g: &Group, key: &str, content: &str, secs: i64) -> MemoryRow {
        MemoryRow::new(
            format!("id-{key}"),
            g.scope,
            g.scope_id.clone(),
            Key::parse_strict(key).expect("key"),
            cao_core::MemoryType::Project,
            format!("/x/{key}.md"),
            "",
            content,
            Utc.timestamp_opt(1_700_000_000 + secs, 0).single().expect("time"),
        )
    }

    fn project(id: &str) -> Group {
        Group {
            scope: Scope::Project,
            scope_id: Some(id.to_owned()),
        }
    }

    #[test]
    fn findings_of_another_container_are_dropped() {
        let (a, b) = (project("proj-a"), project("proj-b"));
        let rows_a = [row(&a, "shared", "Intro.\n\nsee src/gone.rs", 0)];
        let rows: HashMap<(Group, &str), &MemoryRow> = rows_a.iter().map(|r| ((a.clone(), "shared"), r)).collect();
        let mut foreign = finding(IssueType::StaleClaim, FindingKind::Path, Severity::Error, &b, "shared");
        foreign.claim = Some("src/gone.rs".into());
        let mut own = foreign.clone();
        own.container = Some("proj-a".into());
        own.scope_id = Some("proj-a".into());
        let mut forged = foreign.clone();
        forged.container = Some("proj-a".into()); // container and scope id disagree
        let targets: HashSet<Group> = [a.clone()].into_iter().collect();
        let p = plan(&[foreign, own, forged], &targets, &rows, false);
        assert_eq!(p.dropped, 2);
        assert_eq!(p.actions.len(), 1);
        assert_eq!(p.actions[0].scope_id.as_deref(), Some("proj-a"));
        assert_eq!(p.actions[0].container, "proj-a");
        assert_eq!(p.actions[0].action, HealActionKind::StripParagraph);
    }

    #[test]
    fn one_fix_per_type_and_the_newer_memory_survives() {
        let g = project("p");
        let store = [
            row(&g, "old", "old text", 10),
            row(&g, "new", "new text", 20),
            row(&g, "tie-a", "x", 30),
            row(&g, "tie-b", "y", 30),
        ];
        let rows: HashMap<(Group, &str), &MemoryRow> = store.iter().map(|r| ((g.clone(), r.key.as_str()), r)).collect();
        let mut c1 = finding(
            IssueType::Contradiction,
            FindingKind::ModelVerdict,
            Severity::Warning,
            &g,
            "new",
        );
        c1.related_key = Some("old".into());
        let mut c2 = finding(
            IssueType::Contradiction,
            FindingKind::ModelVerdict,
            Severity::Warning,
            &g,
            "tie-b",
        );
        c2.related_key = Some("tie-a".into());
        let poison = finding(
            IssueType::PoisonFrequency,
            FindingKind::AccessCount,
            Severity::Error,
            &g,
            "old",
        );
        let dense = finding(
            IssueType::GraphDensity,
            FindingKind::RelatedKeys,
            Severity::Warning,
            &g,
            "new",
        );
        let m1 = finding(
            IssueType::OrphanPage,
            FindingKind::MissingFromIndexMd,
            Severity::Warning,
            &g,
            "new",
        );
        let m2 = finding(
            IssueType::OrphanPage,
            FindingKind::IndexMdWithoutFile,
            Severity::Warning,
            &g,
            "gone",
        );
        let info = finding(
            IssueType::PoisonFrequency,
            FindingKind::Skipped,
            Severity::Info,
            &g,
            "x",
        );
        let targets: HashSet<Group> = [g.clone()].into_iter().collect();
        let all = [m1, m2, poison.clone(), dense, c1, c2, info];
        let p = plan(&all, &targets, &rows, false);
        let kinds: Vec<(HealActionKind, Option<&str>)> =
            p.actions.iter().map(|a| (a.action, a.key.as_deref())).collect();
        assert_eq!(
            kinds,
            [
                (HealActionKind::RefreshIndexMd, None),
                (HealActionKind::DeleteMemory, Some("old")),
                (HealActionKind::DeleteMemory, Some("tie-b")),
            ]
        );
        assert_eq!(
            p.actions[2].related_key.as_deref(),
            Some("tie-a"),
            "a tie keeps the smaller key"
        );
        assert_eq!(p.without_action.len(), 2, "poison without --aggressive, graph density");
        assert_eq!(p.findings, 6, "info rows are not findings to fix");
        let p = plan(&all, &targets, &rows, true);
        assert!(p.actions.iter().any(|a| a.action == HealActionKind::ResetAccessCount));
    }

    #[test]
    fn stale_claims_strip_in_sequence_and_never_empty_a_memory() {
        let g = project("p");
        let store = [
            row(&g, "two", "Keep me.\n\nsee src/a.rs and src/b.rs", 0),
            row(&g, "only", "see src/c.rs", 0),
        ];
        let rows: HashMap<(Group, &str), &MemoryRow> = store.iter().map(|r| ((g.clone(), r.key.as_str()), r)).collect();
        let stale = |key: &str, claim: &str| {
            let mut f = finding(IssueType::StaleClaim, FindingKind::Path, Severity::Error, &g, key);
            f.claim = Some(claim.to_owned());
            f
        };
        let targets: HashSet<Group> = [g.clone()].into_iter().collect();
        let p = plan(
            &[
                stale("two", "src/a.rs"),
                stale("two", "src/b.rs"),
                stale("only", "src/c.rs"),
            ],
            &targets,
            &rows,
            false,
        );
        assert_eq!(p.actions.len(), 1, "{:?}", p.actions);
        assert_eq!(p.actions[0].claim.as_deref(), Some("src/a.rs"));
        let reasons: Vec<&str> = p.without_action.iter().map(|u| u.reason.as_str()).collect();
        assert!(reasons[0].contains("earlier action"), "{reasons:?}");
        assert!(reasons[1].contains("only paragraph"), "{reasons:?}");
    }

    #[test]
    fn at_most_two_hundred_actions() {
        let g = project("p");
        let targets: HashSet<Group> = [g.clone()].into_iter().collect();
        let findings: Vec<LintFinding> = (0..250)
            .map(|i| {
                finding(
                    IssueType::OrphanPage,
                    FindingKind::RowWithoutFile,
                    Severity::Warning,
                    &g,
                    &format!("k{i}"),
                )
            })
            .collect();
        let p = plan(&findings, &targets, &HashMap::new(), false);
        assert_eq!(p.actions.len(), MAX_HEAL_ACTIONS);
        assert_eq!(p.over_limit, 50);
    }

    #[test]
    fn cut_at_a_char_boundary() {
        assert_eq!(cut_bytes("héllo", 2), "h");
        assert_eq!(cut_bytes("abc", 10), "abc");
    }
}

#[cfg(test)]
mod apply_tests {
    use super::*;
    use cao_core::{CaoHome, FixedClock};
    use chrono::{TimeZone, Utc};
    use std::sync::Arc;

    /// A store on an empty temp home, and the path of topic `key` in project `p` (its directory created).
    fn store_and_path(dir: &std::path::Path, key: &str) -> (Store, PathBuf) {
        let clock = Arc::new(FixedClock::new(
            Utc.timestamp_opt(1_700_000_000, 0).single().expect("time"),
        ));
        let store = Store::open(
            CaoHome::new(dir),
            Some(Settings::default()),
            clock,
            Some(&cao_journal::RULES),
        )
        .expect("open");
        let path = store
            .locator(&cao_core::MemoryRef::new(
                Scope::Project,
                Some("p".into()),
                Key::parse_strict(key).expect("key"),
            ))
            .expect("path");
        std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
        (store, path)
    }

    fn delete_file(key: &str) -> HealAction {
        HealAction {
            action: HealActionKind::DeleteFile,
            issue_type: IssueType::OrphanPage,
            container: "p".into(),
            scope: Scope::Project,
            scope_id: Some("p".into()),
            key: Some(key.into()),
            related_key: None,
            claim: None,
            detail: String::new(),
            status: ActionStatus::Planned,
            reason: None,
        }
    }

    /// A file that parses but has no row yet (added by hand, or written ahead of its row) is a memory the next
    /// read indexes: the delete is re-checked under the topic lock and refused, even when a plan named it.
    #[test]
    fn delete_file_refuses_a_file_that_parses_as_a_memory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, path) = store_and_path(dir.path(), "hand-note");
        let text = "# hand-note\n<!-- id: 11111111-2222-3333-4444-555555555555 | scope: project | type: project | \
                    tags: ops -->\n\n## 2026-12-02T12:00:00Z\nThe staging DB password rotates every Monday.\n";
        std::fs::write(&path, text).expect("write");
        let mut action = delete_file("hand-note");
        apply(&store, "test", &mut action);
        assert_eq!(action.status, ActionStatus::Skipped, "{action:?}");
        assert!(
            action
                .reason
                .as_deref()
                .unwrap_or_default()
                .contains("parses as a memory"),
            "{action:?}"
        );
        assert_eq!(std::fs::read_to_string(&path).expect("kept"), text);
    }

    /// A stray file that cannot be parsed and has no row is still deleted (its text goes to the audit line).
    #[test]
    fn delete_file_removes_an_unparsable_stray() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, path) = store_and_path(dir.path(), "stray-note");
        std::fs::write(&path, "just some text\n").expect("write");
        let mut action = delete_file("stray-note");
        apply(&store, "test", &mut action);
        assert_eq!(action.status, ActionStatus::Applied, "{action:?}");
        assert!(!path.exists());
    }
}
