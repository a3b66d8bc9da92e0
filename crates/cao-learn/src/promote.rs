//! Instruction promotion (spec 004 "Phase 2 — instruction promotion"): reinforced lessons of an agent's scope
//! copied into the "Learned Patterns" block of that agent's profile file. The gate and the block edit are
//! `cao-learn`'s ([`crate::gate`], [`crate::learned`], [`crate::profile_file`]); this module gathers
//! the candidates, resolves the profile, applies under a lock and audits.
//!
//! Steps:
//! 1. Arguments (no I/O): the agent is a profile name; `--remove` keys are lesson keys; `--apply` needs
//!    `memory.instruction_promotion_enabled` ([`MemoryError::PromotionDisabled`], before anything is read).
//! 2. The profile: `--profile-path` (must exist), else `<dir>/<agent>.md` in the first agent directory holding
//!    it. Built-in profiles are refused on both routes ([`MemoryError::ProfileRefused`]): a built-in name is a
//!    target only as a copy inside an agent directory (`cao agents install`).
//! 3. Candidates: every memory of scope `agent` with scope id = the agent (read without counting an access),
//!    judged by the gate with `--min-recalls` (default 3). Eligible lessons are offered most-recalled first (then
//!    by key), so at the 10-lesson cap the most reinforced ones get in.
//! 4. The plan is the block edit of the current file: add (new key), update (same key, new text), remove
//!    (`--remove`), unchanged, skipped (cap reached, or a remove of a key not in the block). Re-running proposes
//!    nothing unless a lesson's text changed. A lesson already in the block whose memory is gone or no longer
//!    eligible stays: removal is always explicit.
//! 5. `--apply` (when something changes): under `<home>/memory/.promote.lock` the file is read again and the plan
//!    made again; with a reviewed plan's digest ([`PromoteRequest::plan_digest`]) a plan with another digest is
//!    refused ([`MemoryError::PlanChanged`], nothing written); the file is edited and written atomically (through
//!    symlinks, keeping its mode), and one content-free audit line records the profile and the keys (event
//!    `promote`).
//!
//! Promotion never writes a memory; retention never touches a profile.

use crate::gate::{self, Candidate, Ineligible};
use crate::{builtin, learned, profile, profile_file};
use cao_core::key::sanitize_scope_id;
use cao_core::{Scope, Settings};
use cao_store::MemoryError;
use cao_store::Store;
use cao_store::audit::{self, AuditLog};
use cao_store::{MemoryRow, Visibility};
use chrono::SecondsFormat;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The schema name of a promotion report (`docs/schemas/cao.memory.promote-1.json`).
pub const PROMOTE_SCHEMA: &str = "cao.memory.promote/1";

/// Most agent-scope memories one run considers.
pub const MAX_CANDIDATES: usize = 10_000;

/// `cao memory promote` arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromoteRequest {
    /// The agent profile (its name; the scope id of its lessons).
    pub agent: String,
    /// Write the plan (needs `memory.instruction_promotion_enabled`); otherwise a dry run.
    pub apply: bool,
    /// Minimum access count; default [`gate::DEFAULT_MIN_RECALLS`].
    pub min_recalls: Option<u32>,
    /// The profile file; default `<agent dir>/<agent>.md`.
    pub profile_path: Option<PathBuf>,
    /// Lesson keys to remove from the block (explicit remove deltas).
    pub remove: Vec<String>,
    /// With `apply`: the digest of the plan the operator reviewed ([`PromotionReport::plan_digest`] of a dry run).
    /// The apply plans again under the lock and writes only when the new plan has this digest; otherwise nothing is
    /// written ([`MemoryError::PlanChanged`]). `None` writes whatever the run plans.
    pub plan_digest: Option<String>,
}

/// One change of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedChange {
    /// The lesson key.
    pub key: String,
    /// `add`, `update` or `remove`.
    pub action: &'static str,
    /// The new text (add, update).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The text in the block before (update, remove).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    /// The backing memory's access count (add, update).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_count: Option<i64>,
    /// Who wrote the backing memory's current version: its terminal, that terminal's registered agent profile and
    /// the session (add, update; [`crate::lesson_writer::LessonWriter`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written_by: Option<crate::lesson_writer::LessonWriter>,
}

/// A delta that was not applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedChange {
    /// The lesson key.
    pub key: String,
    /// `cap` (the block holds 10 lessons; nothing is evicted) or `not_in_block` (a remove of an absent key).
    pub reason: &'static str,
}

/// An agent-scope memory the gate refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IneligibleLesson {
    /// Its key.
    pub key: String,
    /// Its access count.
    pub access_count: i64,
    /// Why (`reason` tag plus details).
    #[serde(flatten)]
    pub why: Ineligible,
    /// The reason as one line.
    pub message: String,
}

/// The plan of a promotion (and, with `--apply`, what was written): `cao.memory.promote/1`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromotionReport {
    /// [`PROMOTE_SCHEMA`].
    pub schema: &'static str,
    /// The agent profile.
    pub agent: String,
    /// The profile file, as found or given.
    pub profile_path: String,
    /// The file edited (symlinks resolved).
    pub real_path: String,
    /// The access-count gate used.
    pub min_recalls: u32,
    /// Whether `--apply` was asked for.
    pub apply: bool,
    /// Whether the file was rewritten (only with `apply` and at least one change).
    pub written: bool,
    /// Adds, updates and removes, in the order they apply (removes first).
    pub changes: Vec<PlannedChange>,
    /// Eligible lessons already in the block with the same text.
    pub unchanged: Vec<String>,
    /// Deltas not applied.
    pub skipped: Vec<SkippedChange>,
    /// Agent-scope memories the gate refused, with the reason.
    pub ineligible: Vec<IneligibleLesson>,
    /// The profile's text before the edit (as read for the plan, or under the lock for an apply). Not part of the
    /// `cao.memory.promote/1` document; for showing the plan as a diff.
    #[serde(skip)]
    pub profile_before: String,
    /// The profile's text the plan leads to (equal to `profile_before` when nothing changes). Not serialized.
    #[serde(skip)]
    pub profile_after: String,
}

impl PromotionReport {
    /// Whether the plan changes the profile.
    pub fn has_changes(&self) -> bool {
        !self.changes.is_empty()
    }

    /// The digest of the plan ([`cao_store::plan_digest`]): lowercase hex SHA-256 of the compact JSON of the schema,
    /// the agent, the file edited (`real_path`) and, per change in order, its key, action, new text and previous
    /// text. Access counts, skipped and ineligible lessons are not part of it: they change nothing written.
    pub fn plan_digest(&self) -> String {
        #[derive(Serialize)]
        struct Canon<'a> {
            schema: &'static str,
            agent: &'a str,
            real_path: &'a str,
            changes: Vec<CanonChange<'a>>,
        }
        #[derive(Serialize)]
        struct CanonChange<'a> {
            key: &'a str,
            action: &'a str,
            text: Option<&'a str>,
            previous: Option<&'a str>,
        }
        cao_store::plan_digest::sha256_hex(&Canon {
            schema: PROMOTE_SCHEMA,
            agent: &self.agent,
            real_path: &self.real_path,
            changes: self
                .changes
                .iter()
                .map(|c| CanonChange {
                    key: &c.key,
                    action: c.action,
                    text: c.text.as_deref(),
                    previous: c.previous.as_deref(),
                })
                .collect(),
        })
    }
}

/// Plan, and with `req.apply` write, a promotion (steps in the module documentation).
///
/// Errors: [`MemoryError::Invalid`] (agent or key names), [`MemoryError::InvalidProfile`] (an unreadable or invalid
/// profile), [`MemoryError::Io`] (a failed write; nothing written), [`MemoryError::PlanChanged`] (nothing written), [`MemoryError::PromotionDisabled`],
/// [`MemoryError::ProfileNotFound`], [`MemoryError::ProfileRefused`],
/// I/O and index errors.
pub fn promote(store: &Store, settings: &Settings, req: &PromoteRequest) -> Result<PromotionReport, MemoryError> {
    profile::validate_name(&req.agent)?;
    let remove = req
        .remove
        .iter()
        .map(|k| learned::lesson_key(k))
        .collect::<Result<Vec<_>, _>>()?;
    if req.apply && !settings.instruction_promotion_enabled() {
        return Err(MemoryError::PromotionDisabled);
    }
    let min_recalls = req.min_recalls.unwrap_or(gate::DEFAULT_MIN_RECALLS);
    let dirs = settings.agent_dirs(store.home());
    let path = resolve_profile(&req.agent, req.profile_path.as_deref(), &dirs)?;

    let scope_id = sanitize_scope_id(&req.agent);
    let rows = store.snapshot().recency_pool(
        &Visibility::none().allow(Scope::Agent, Some(&scope_id)),
        None,
        MAX_CANDIDATES,
    )?;
    let mut eligible: Vec<(String, String, i64)> = Vec::new();
    let mut ineligible = Vec::new();
    for row in &rows {
        match judge(row, min_recalls) {
            Ok(text) => eligible.push((row.key.as_str().to_owned(), text, row.access_count)),
            Err(why) => ineligible.push(IneligibleLesson {
                key: row.key.as_str().to_owned(),
                access_count: row.access_count,
                message: why.to_string(),
                why,
            }),
        }
    }
    eligible.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    ineligible.sort_by(|a, b| a.key.cmp(&b.key));
    let add: Vec<(String, String)> = eligible.iter().map(|(k, t, _)| (k.clone(), t.clone())).collect();

    // An apply reads, plans, compares and writes under the lock, so what is written is the plan compared.
    let _lock = if req.apply {
        let lock_path = store.home().memory_dir().join(".promote.lock");
        Some(
            // A store on a shared database keeps no files under `memory/`, which then may not exist yet.
            cao_core::fs::create_dir_all(&store.home().memory_dir())
                .and_then(|()| cao_core::fs::lock_exclusive(&lock_path))
                .map_err(|source| MemoryError::Io {
                    context: format!("locking {}", lock_path.display()),
                    source,
                })?,
        )
    } else {
        None
    };
    let file = profile_file::read(&path)?;
    let edited = learned::apply_deltas(&file.content, &add, &remove)?;

    let before = |key: &str| edited.before.iter().find(|(k, _)| k == key).map(|(_, t)| t.clone());
    let count = |key: &str| eligible.iter().find(|(k, _, _)| k == key).map(|(_, _, n)| *n);
    let text = |key: &str| add.iter().find(|(k, _)| k == key).map(|(_, t)| t.clone());
    let writer = |key: &str| -> Result<Option<crate::lesson_writer::LessonWriter>, MemoryError> {
        match cao_core::Key::parse_strict(key) {
            Ok(k) => crate::lesson_writer::current_writer(store, Scope::Agent, Some(&scope_id), &k),
            Err(_) => Ok(None),
        }
    };
    let r = &edited.report;
    let mut changes = Vec::new();
    for key in &r.removed {
        changes.push(PlannedChange {
            key: key.clone(),
            action: "remove",
            text: None,
            previous: before(key),
            access_count: None,
            written_by: None,
        });
    }
    for key in &r.updated {
        changes.push(PlannedChange {
            key: key.clone(),
            action: "update",
            text: text(key),
            previous: before(key),
            access_count: count(key),
            written_by: writer(key)?,
        });
    }
    for key in &r.added {
        changes.push(PlannedChange {
            key: key.clone(),
            action: "add",
            text: text(key),
            previous: None,
            access_count: count(key),
            written_by: writer(key)?,
        });
    }
    let skipped = r
        .skipped
        .iter()
        .map(|key| SkippedChange {
            key: key.clone(),
            reason: if remove.contains(key) { "not_in_block" } else { "cap" },
        })
        .collect();
    let mut report = PromotionReport {
        schema: PROMOTE_SCHEMA,
        agent: req.agent.clone(),
        profile_path: file.path.display().to_string(),
        real_path: file.real_path.display().to_string(),
        min_recalls,
        apply: req.apply,
        written: false,
        changes,
        unchanged: r.unchanged.clone(),
        skipped,
        ineligible,
        profile_after: edited.content.clone().unwrap_or_else(|| file.content.clone()),
        profile_before: file.content.clone(),
    };
    if !req.apply {
        return Ok(report);
    }
    if let Some(reviewed) = &req.plan_digest {
        let current = report.plan_digest();
        if !cao_store::plan_digest::matches(reviewed, &current) {
            return Err(MemoryError::PlanChanged {
                reviewed: cao_store::plan_digest::shown(reviewed),
                current,
            });
        }
    }
    if let Some(new) = &edited.content {
        profile_file::write(&file, new)?;
        report.written = true;
        audit_promotion(
            &audit::log_of(store),
            store.now(),
            &req.agent,
            &file.real_path,
            &edited.report,
        );
    }
    Ok(report)
}

/// The promotion gate's verdict on one agent-scope memory with `min_recalls` ([`crate::gate::judge`]): the
/// lesson text it would be promoted as, or the first reason it is not. The one place promotion and the operator
/// UI's lessons page judge a lesson.
pub fn judge(row: &MemoryRow, min_recalls: u32) -> Result<String, Ineligible> {
    gate::judge(
        &Candidate {
            key: row.key.as_str(),
            content: &row.content,
            memory_type: row.memory_type,
            access_count: row.access_count,
        },
        min_recalls,
    )
}

/// The profile file promotion edits (step 2 of the module documentation).
///
/// Errors: [`MemoryError::ProfileNotFound`], [`MemoryError::ProfileRefused`], [`MemoryError::Invalid`] (name).
fn resolve_profile(agent: &str, given: Option<&Path>, dirs: &[PathBuf]) -> Result<PathBuf, MemoryError> {
    let refused = || {
        MemoryError::ProfileRefused(format!(
            "{agent} is a built-in profile and is never a promotion target; copy it into an agent directory first \
             (`cao agents install {agent}`) and promote the copy"
        ))
    };
    if let Some(path) = given {
        if !path.exists() {
            return Err(MemoryError::ProfileNotFound(format!(
                "profile file {} does not exist (promotion never creates profile files)",
                path.display()
            )));
        }
        if builtin::is_builtin(agent) && !inside_any(path, dirs) {
            return Err(refused());
        }
        return Ok(path.to_owned());
    }
    match profile::find_file(agent, dirs)? {
        Some(path) => Ok(path),
        None if builtin::is_builtin(agent) => Err(refused()),
        None => Err(MemoryError::ProfileNotFound(format!(
            "no agent profile {agent}.md in {} (agents.dirs); create it, or pass --profile-path",
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Whether `path` (symlinks resolved) lies inside one of `dirs` (symlinks resolved).
fn inside_any(path: &Path, dirs: &[PathBuf]) -> bool {
    let Ok(real) = std::fs::canonicalize(path) else {
        return false;
    };
    dirs.iter()
        .filter_map(|d| std::fs::canonicalize(d).ok())
        .any(|d| real.starts_with(&d))
}

/// The one content-free audit line of an applied promotion: the profile, the file and the keys of each kind.
fn audit_promotion(
    log: &AuditLog,
    at: chrono::DateTime<chrono::Utc>,
    agent: &str,
    path: &Path,
    report: &learned::DeltaReport,
) {
    #[derive(Serialize)]
    struct Line<'a> {
        ts: String,
        event: &'static str,
        profile: String,
        path: String,
        added: &'a [String],
        updated: &'a [String],
        removed: &'a [String],
        actor: &'static str,
    }
    let line = Line {
        ts: at.to_rfc3339_opts(SecondsFormat::Millis, true),
        event: "promote",
        profile: audit::bounded(agent),
        path: audit::bounded(&path.display().to_string()),
        added: &report.added,
        updated: &report.updated,
        removed: &report.removed,
        actor: "operator",
    };
    let text = match serde_json::to_string(&line) {
        Ok(mut s) => {
            s.push('\n');
            s
        }
        Err(_) => return,
    };
    if let Err(e) = log.append_line(at, &text) {
        tracing::warn!(error = %e, event = "promote", "could not write the audit log line; the profile was written");
    }
}
