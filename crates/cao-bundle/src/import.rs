//! OKF import: a bundle directory or `.tar.gz` archive into the global, project or federated scope (spec 000
//! "cao memory import"; spec/reference-facts.md "OKF bundles"; conformance `okf_import.json`). The bundle is
//! untrusted input.
//!
//! 1. The target scope must be global, project or federated ([`cao_okf::import::check_import_scope`]); a project
//!    target resolves the caller's project like every command (recording its alias only on a real run).
//! 2. The bundle is read within hard limits ([`crate::bundle::read_bundle`]: no link followed, nothing extracted,
//!    a bundle over a limit refused whole).
//! 3. `cao-okf` plans every path against the target's current topics ([`cao_okf::plan_import`]: path rules,
//!    frontmatter, escaping, See Also, the federated secret gate, the conflict policy, timestamp clamping). A merge
//!    whose text the existing topic already holds as an entry becomes a skipped conflict
//!    ([`cao_okf::same_entry_text`]), so importing one bundle again with `--conflict merge` appends nothing.
//! 4. Every planned write then passes the store's own rules, the same function `memory_store` runs
//!    ([`write::prepare`]: content size and NUL bytes, tag size and shape, key, write authorisation, federated
//!    secret gate); a refusal becomes that file's rejection. The report is computed from this final plan, so a
//!    dry run reports exactly what a real run does and writes nothing (no file, row, alias or audit line).
//! 5. A real run executes the plan in batches ([`write::commit_batch`]: per-topic locks, one batch file write and one index
//!    transaction per batch, then the related-memory pass of the batch in two more; a replace first forgets the memory, purging its relationships, as the reference
//!    does). Each write is audited. A write the store refuses becomes a rejection; after a storage failure (I/O,
//!    index) the remaining writes are not attempted: they are reported as rejected and
//!    [`ImportOutcome::stopped`] names the failure.
//!
//! The plan is made against the target's state when the import starts; a key another process stores meanwhile is
//! appended to (as a store would) rather than conflicting.

use crate::bundle;
use cao_core::time::truncate_secs;
use cao_core::{Key, MemoryRef, Scope, Settings, TerminalContext};
use cao_okf::import::{ConflictPolicy, FileOutcome, ImportOptions, ImportReport, WriteAction, check_import_scope};
use cao_ops::types::{Progress, StoreRequest};
use cao_ops::write;
use cao_store::MemoryError;
use cao_store::Store;
use cao_store::audit::{self, AuditEvent, actor_of};
use cao_store::visibility;
use cao_store::{ListFilter, Visibility};
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::HashMap;
use std::path::PathBuf;

/// Schema name of [`ImportOutcome`] (docs/schemas/cao.memory.import-1.json).
pub const IMPORT_SCHEMA: &str = "cao.memory.import/1";

/// Topics written per batch (one batch file write and one index transaction each).
const WRITE_BATCH: usize = 500;

/// What to import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportRequest {
    /// The bundle: a directory, or a gzip-compressed tar archive.
    pub source: PathBuf,
    /// The target scope: global, project or federated.
    pub scope: Scope,
    /// What to do with a key the target already holds.
    pub conflict: ConflictPolicy,
    /// Plan and report only; write nothing.
    pub dry_run: bool,
}

/// The result of an import (`cao.memory.import/1`): the reference's report and how the run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportOutcome {
    /// Always [`IMPORT_SCHEMA`].
    pub schema: &'static str,
    /// The bundle as given.
    pub source: String,
    /// Whether the bundle was an archive (else a directory).
    pub archive: bool,
    /// The report: `imported`, `skipped_conflict`, `replaced`, `merged`, `rejected`, `see_also_dropped`,
    /// `bodies_escaped`, `timestamps_clamped`, `past_retention`, `errors` (bundle path -> reason), `target_scope`,
    /// `target_scope_id`, `dry_run`.
    #[serde(flatten)]
    pub report: ImportReport,
    /// The storage failure that stopped a real run early (the writes not attempted are in `errors`), else `None`.
    pub stopped: Option<String>,
}

/// Import `req` (module documentation). Memory must be enabled (the facade checks).
///
/// Errors (nothing written): [`MemoryError::Invalid`] for a session or agent target or an unresolvable project;
/// [`MemoryError::Bundle`] for a bundle refused whole; index errors reading the target's topics.
pub fn import(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    req: &ImportRequest,
    progress: &dyn Progress,
) -> Result<ImportOutcome, MemoryError> {
    check_import_scope(req.scope).map_err(|e| MemoryError::Invalid(e.to_string()))?;
    let scope_id = if req.dry_run {
        ctx.scope_id_for(req.scope, settings)?
    } else {
        visibility::target_scope_id(store, ctx, req.scope, settings)?
    };
    let read = bundle::read_bundle(&req.source)?;
    let rows = store.snapshot().list(&ListFilter {
        visibility: Visibility::none().allow(req.scope, scope_id.as_deref()),
        scope: Some(req.scope),
        memory_type: None,
        limit: None,
    })?;
    let existing: HashMap<Key, DateTime<Utc>> =
        rows.into_iter().map(|r| (r.key, truncate_secs(r.updated_at))).collect();
    let opts = ImportOptions {
        target_scope: req.scope,
        target_scope_id: scope_id.clone(),
        conflict: req.conflict,
        dry_run: req.dry_run,
        now: store.now(),
    };
    let mut plan = cao_okf::plan_import(
        &opts,
        read.entries.iter().map(bundle::ReadEntry::as_bundle_entry),
        &existing,
    )
    .map_err(|e| MemoryError::Invalid(e.to_string()))?;
    // A merge whose text the topic already holds appends nothing (re-importing a bundle is idempotent).
    for file in &mut plan.files {
        let FileOutcome::Write(w) = &file.outcome else { continue };
        if w.action != WriteAction::Merge {
            continue;
        }
        let present = store
            .topic(&cao_core::MemoryRef::new(req.scope, scope_id.clone(), w.key.clone()))
            .ok()
            .flatten()
            .is_some_and(|t| {
                t.entries()
                    .iter()
                    .any(|e| cao_okf::same_entry_text(&e.content, &w.content))
            });
        if present {
            file.skip_present_merge();
        }
    }
    // Step 4: the store's own rules for every planned write.
    let mut prepared: Vec<Option<write::Prepared>> = Vec::with_capacity(plan.files.len());
    for file in &mut plan.files {
        let FileOutcome::Write(w) = &file.outcome else {
            prepared.push(None);
            continue;
        };
        let checked = write::prepare(&StoreRequest {
            content: w.content.clone(),
            scope: Some(req.scope.as_str().to_owned()),
            memory_type: Some(w.memory_type.as_str().to_owned()),
            key: Some(w.key.as_str().to_owned()),
            tags: Some(w.tags.clone()),
            caller_scope: None,
        });
        match checked {
            Ok(p) => prepared.push(Some(p)),
            Err(e) => {
                file.reject_after_planning(e.to_string());
                prepared.push(None);
            }
        }
    }
    let mut stopped = None;
    if !req.dry_run {
        stopped = execute(store, ctx, &mut plan.files, &prepared, scope_id.as_deref(), progress);
    }
    let mut report = ImportReport::from_plans(&opts, &plan.files);
    report.past_retention = past_retention(req.scope, &plan.files, opts.now);
    Ok(ImportOutcome {
        schema: IMPORT_SCHEMA,
        source: req.source.display().to_string(),
        archive: read.archive,
        report,
        stopped,
    })
}

/// How many written (or, in a dry run, planned) topics of `files` are already expired at `now` by the retention
/// rule of `scope` ([`cao_core::retention::is_expired`] on the entry time: an imported topic is last updated at its
/// bundle timestamp), so the next retention cleanup removes them.
fn past_retention(scope: Scope, files: &[cao_okf::FilePlan], now: DateTime<Utc>) -> usize {
    files
        .iter()
        .filter(|f| match &f.outcome {
            FileOutcome::Write(w) => cao_core::retention::is_expired(scope, w.memory_type, w.entry_time, now),
            _ => false,
        })
        .count()
}

/// Step 5: run the planned writes in batches; returns the storage failure that stopped the run, if any.
fn execute(
    store: &Store,
    ctx: &TerminalContext,
    files: &mut [cao_okf::FilePlan],
    prepared: &[Option<write::Prepared>],
    scope_id: Option<&str>,
    progress: &dyn Progress,
) -> Option<String> {
    let todo: Vec<usize> = (0..files.len()).filter(|&i| prepared[i].is_some()).collect();
    progress.start("importing", todo.len() as u64);
    let mut stopped: Option<String> = None;
    for batch in todo.chunks(WRITE_BATCH) {
        if let Some(first) = &stopped {
            for &i in batch {
                files[i].reject_after_planning(format!(
                    "not written: the import stopped after a storage error ({first})"
                ));
            }
            continue;
        }
        let mut items = Vec::with_capacity(batch.len());
        let mut slots = Vec::with_capacity(batch.len());
        for &i in batch {
            let (Some(p), FileOutcome::Write(w)) = (&prepared[i], &files[i].outcome) else {
                continue;
            };
            if w.action == WriteAction::Replace {
                let memory = MemoryRef::new(p.scope, scope_id.map(str::to_owned), p.key.clone());
                match write::remove(store, actor_of(ctx), &write::writer_of(ctx), &memory) {
                    Ok(r) => audit::record(
                        store,
                        AuditEvent::Delete,
                        actor_of(ctx),
                        p.scope,
                        scope_id,
                        p.key.as_str(),
                        r.action,
                    ),
                    Err(e) => {
                        note_failure(&mut stopped, &e);
                        files[i].reject_after_planning(e.to_string());
                        continue;
                    }
                }
            }
            items.push((p, Some(w.entry_time)));
            slots.push(i);
        }
        let results = write::commit_batch(store, ctx, &items, scope_id);
        for (i, result) in slots.into_iter().zip(results) {
            if let Err(e) = result {
                note_failure(&mut stopped, &e);
                files[i].reject_after_planning(e.to_string());
            }
        }
        progress.advance(batch.len() as u64);
    }
    progress.finish();
    stopped
}

/// Remember the first storage failure (anything but a refusal of this one topic).
fn note_failure(stopped: &mut Option<String>, e: &MemoryError) {
    let topic_only = e.is_client_error() || matches!(e, MemoryError::Corrupt { .. });
    if stopped.is_none() && !topic_only {
        *stopped = Some(e.to_string());
    }
}
