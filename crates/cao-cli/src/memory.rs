//! `cao memory ...`: each subcommand validates its arguments (no I/O), asks for confirmation when destructive,
//! opens the [`MemoryService`] on the home from the environment, runs one service call, prints the result, and
//! refreshes every dirty `index.md` before returning, so the wiki's human-readable index is current when the
//! process exits.
//!
//! Order of checks: usage errors (exit 2) never touch the disk; a disabled memory system (exit 1, naming
//! `memory.enabled`) is detected from `settings.json`/env before the store is opened, so nothing is created.
//!
//! `list --query Q --explain` (spec 000 "On-demand relevance explain") also checks `memory.explain_enabled` before
//! opening the store (exit 1 naming it), never counts an access, and reports any other service error by its kind
//! and a hint only; the error's detail goes to stderr only when `CAO_LOG_LEVEL` is `DEBUG` (any case). No logging
//! handler is installed for this: the detail is written directly.

use crate::cli::{
    ClearArgs, DeleteArgs, ExplainArgs, ExplainFormat, LIST_ROWS, ListMode, ListPage, MemoryCommand, PurgeArgs,
    RepairArgs, ShowArgs, TextFormat, ViewArgs,
};
use crate::confirm::{Prompter, confirm};
use crate::error::CliError;
use crate::output;
use crate::output::emit;
use crate::relationships::RelPlan;
use cao_core::{CaoHome, Key, Scope, Settings, TerminalContext};
use cao_memory::{ExplainRequest, JournalTarget, ListRequest, MemoryError, MemoryService};
use std::io::Write;

/// Run one memory subcommand, writing its result to `out`.
///
/// Errors: see [`CliError`]; each variant documents its exit code.
pub(crate) fn run(cmd: MemoryCommand, out: &mut dyn Write, prompter: &mut dyn Prompter) -> Result<(), CliError> {
    // Context and hooks have their own rules (no store creation, hooks never fail).
    let cmd = match cmd {
        MemoryCommand::Context(a) => return crate::context::run_context(a, out),
        MemoryCommand::Hook(h) => return crate::context::run_hook_stdin(h, out),
        MemoryCommand::Inject(a) => return crate::inject::run(a, out),
        MemoryCommand::Lint(a) => return crate::lint::run_lint(a, out),
        MemoryCommand::Heal(a) => return crate::lint::run_heal(a, out),
        MemoryCommand::Inspect(a) => return crate::inspect::run(a),
        MemoryCommand::Compact(a) => return crate::lint::run_compact(a, out),
        MemoryCommand::Embed(a) => return crate::models::run_embed(a, out),
        MemoryCommand::Vault(c) => return crate::vault::run(c, out),
        other => other,
    };
    // Validation and confirmation first: neither needs the store.
    let plan = Plan::new(cmd, prompter)?;
    let home = CaoHome::from_env();
    if let Plan::Explain(a) = &plan {
        return run_explain(a, home, out);
    }
    if !Settings::load(&home).memory_enabled() {
        return Err(MemoryError::Disabled.into());
    }
    if let Plan::Repair(a) = &plan
        && a.receipt.is_none()
    {
        // A damaged database is moved aside before the store opens (opening fails on a file that is not a
        // database); the open then rebuilds the index from the wiki files into a fresh one.
        if let Some(damaged) = cao_memory::recover_damaged_index(&home, chrono::Utc::now())? {
            match a.format {
                TextFormat::Text => emit(out, &damaged.to_string())?,
                // The JSON on stdout stays the repair report; what was moved and lost goes to stderr.
                TextFormat::Json => eprint!("{damaged}"),
            }
        }
    }
    let svc = MemoryService::open(home)?;
    let ctx = TerminalContext::from_env();
    let result = plan.execute(&svc, &ctx, out);
    let flushed = svc.flush_index_md();
    match (result, flushed) {
        (Ok(()), Ok(n)) => {
            tracing::debug!(refreshed = n, "index.md files refreshed");
            Ok(())
        }
        (Ok(()), Err(e)) if plan.writes() => Err(CliError::failure_with_hint(
            format!("the change was saved but index.md could not be refreshed: {e}"),
            "run `cao memory repair` to rebuild it",
        )),
        (Ok(()), Err(e)) => {
            tracing::warn!(error = %e, "index.md could not be refreshed");
            Ok(())
        }
        (Err(e), Err(fe)) => {
            tracing::warn!(error = %fe, "index.md could not be refreshed");
            Err(e)
        }
        (Err(e), Ok(_)) => Err(e),
    }
}

/// A validated command, ready to run against the store.
enum Plan {
    List {
        all: bool,
        scope: Option<Scope>,
        memory_type: Option<cao_core::MemoryType>,
        json: bool,
        page: ListPage,
    },
    Explain(ExplainArgs),
    Show {
        key: Key,
        scope: Option<Scope>,
        format: TextFormat,
    },
    Delete {
        key: Key,
        scope: Scope,
    },
    Clear {
        scope: Scope,
    },
    Repair(RepairArgs),
    Relationships(RelPlan),
    Cleanup(crate::cleanup::CleanupArgs),
    Export(crate::bundle::ExportPlan),
    Import(crate::bundle::ImportPlan),
    Outcomes(crate::learning::OutcomesCommand),
    Promote(crate::learning::PromoteArgs),
    View {
        target: JournalTarget,
        format: TextFormat,
    },
    Purge {
        key: Key,
        scope: Scope,
        format: TextFormat,
    },
}

/// Schema name of `cao memory view --format json` (docs/schemas/cao.memory.view-1.json).
pub(crate) const VIEW_SCHEMA: &str = "cao.memory.view/1";

/// Schema name of `cao memory purge --format json` (docs/schemas/cao.memory.purge-1.json).
pub(crate) const PURGE_SCHEMA: &str = "cao.memory.purge/1";

/// `value` (a service result object) as a schema'd report: its `success` field replaced by `schema`.
fn schema_object(schema: &str, value: impl serde::Serialize) -> Result<String, CliError> {
    let mut v = serde_json::to_value(value).map_err(|e| CliError::failure(e.to_string()))?;
    if let Some(map) = v.as_object_mut() {
        map.remove("success");
        map.insert("schema".to_owned(), serde_json::Value::String(schema.to_owned()));
    }
    output::json(&v).map_err(CliError::failure)
}

impl Plan {
    fn new(cmd: MemoryCommand, prompter: &mut dyn Prompter) -> Result<Plan, CliError> {
        Ok(match cmd {
            MemoryCommand::List(a) => match a.mode()? {
                ListMode::List {
                    all,
                    scope,
                    memory_type,
                    json,
                    page,
                } => Plan::List {
                    all,
                    scope,
                    memory_type,
                    json,
                    page,
                },
                ListMode::Explain(e) => Plan::Explain(e),
            },
            MemoryCommand::Show(ShowArgs { key, scope, format }) => Plan::Show {
                key: parse_key(&key)?,
                scope: scope.map(Scope::from),
                format,
            },
            MemoryCommand::Delete(DeleteArgs { key, scope, yes }) => {
                let key = parse_key(&key)?;
                confirm(prompter, &format!("Delete memory '{key}'?"), yes, "delete")?;
                Plan::Delete {
                    key,
                    scope: scope.into(),
                }
            }
            MemoryCommand::Clear(ClearArgs { scope, yes }) => {
                let scope = Scope::from(scope);
                confirm(prompter, &format!("Clear all {scope}-scoped memories?"), yes, "clear")?;
                Plan::Clear { scope }
            }
            MemoryCommand::Repair(a) => Plan::Repair(a),
            MemoryCommand::Relationships(c) => Plan::Relationships(RelPlan::new(c)?),
            MemoryCommand::Context(_)
            | MemoryCommand::Hook(_)
            | MemoryCommand::Inject(_)
            | MemoryCommand::Lint(_)
            | MemoryCommand::Heal(_)
            | MemoryCommand::Inspect(_)
            | MemoryCommand::Embed(_)
            | MemoryCommand::Vault(_)
            | MemoryCommand::Compact(_) => {
                return Err(CliError::failure(
                    "context, hook, inject, lint, heal, compact, embed, vault and inspect commands do not run through the store plan",
                ));
            }
            MemoryCommand::Cleanup(a) => Plan::Cleanup(a),
            MemoryCommand::Export(a) => Plan::Export(crate::bundle::export_plan(a)?),
            MemoryCommand::Import(a) => Plan::Import(crate::bundle::import_plan(a)?),
            MemoryCommand::View(ViewArgs {
                container,
                scope,
                format,
            }) => {
                if let Some(c) = container
                    .as_deref()
                    .filter(|c| !cao_core::container::is_safe_segment(c))
                {
                    return Err(CliError::Usage(format!(
                        "--container {:?} is not global, federated or a project id (1 to 255 bytes of \
                         [A-Za-z0-9._-], not . or ..)",
                        c.chars().take(64).collect::<String>()
                    )));
                }
                Plan::View {
                    target: JournalTarget {
                        scope: scope.map(Scope::from),
                        container,
                    },
                    format,
                }
            }
            MemoryCommand::Purge(PurgeArgs {
                key,
                scope,
                yes,
                format,
            }) => {
                let key = parse_key(&key)?;
                confirm(
                    prompter,
                    &format!(
                        "Purge memory '{key}'? Its text is erased from every version in the journal and from every \
                         summary; this cannot be undone."
                    ),
                    yes,
                    "purge",
                )?;
                Plan::Purge {
                    key,
                    scope: scope.into(),
                    format,
                }
            }
            MemoryCommand::Outcomes(c) => Plan::Outcomes(c),
            MemoryCommand::Promote(a) => {
                cao_learn::profile::validate_name(&a.agent).map_err(|e| CliError::Usage(e.to_string()))?;
                for key in &a.remove {
                    cao_learn::learned::lesson_key(key).map_err(|e| CliError::Usage(e.to_string()))?;
                }
                Plan::Promote(a)
            }
        })
    }

    /// Whether the command changes the store (then a failed index.md refresh is a failure).
    fn writes(&self) -> bool {
        matches!(
            self,
            Plan::Delete { .. } | Plan::Clear { .. } | Plan::Repair(_) | Plan::Purge { .. }
        ) || matches!(self, Plan::Cleanup(a) if !a.dry_run)
            || matches!(self, Plan::Import(p) if p.writes())
    }

    fn execute(&self, svc: &MemoryService, ctx: &TerminalContext, out: &mut dyn Write) -> Result<(), CliError> {
        match self {
            Plan::List {
                all,
                scope,
                memory_type,
                json,
                page,
            } => {
                let (limit, offset) = match page {
                    ListPage::From(offset) => (LIST_ROWS, *offset),
                    ListPage::All => (usize::MAX, 0),
                };
                let req = ListRequest {
                    scope: *scope,
                    memory_type: *memory_type,
                    all: *all,
                    limit: Some(limit),
                    offset,
                    // Operator view: spec 000 "Non-accessing operator inspection".
                    record_access: !svc.settings().non_accessing_inspection(),
                    cursor: None,
                };
                let memories = svc.list(ctx, req.clone())?;
                if memories.len() == LIST_ROWS && *page != ListPage::All {
                    // Is there more? One row past the cut, read without counting an access.
                    let probe = ListRequest {
                        limit: Some(LIST_ROWS + 1),
                        record_access: false,
                        ..req
                    };
                    if svc.list(ctx, probe)?.len() > LIST_ROWS {
                        let next = offset + LIST_ROWS;
                        let shown = if offset == 0 {
                            format!("the first {LIST_ROWS} memories")
                        } else {
                            format!("memories {} to {next}", offset + 1)
                        };
                        tracing::warn!(
                            "showing {shown} (scope precedence, then newest first); the next page is --offset {next}, \
                             --all-rows shows every row, --scope or --type narrow the listing"
                        );
                    }
                }
                let text = if *json {
                    output::json(&memories).map_err(CliError::failure)?
                } else {
                    output::list_table(&memories)
                };
                emit(out, &text)
            }
            // Dispatched to `run_explain` before the store is opened.
            Plan::Explain(_) => Err(CliError::failure("explain does not run through the store plan")),
            Plan::Show { key, scope, format } => {
                let record_access = !svc.settings().non_accessing_inspection();
                let Some(memory) = svc.show(
                    ctx,
                    cao_memory::ShowRequest {
                        target: cao_memory::MemoryTarget::key(key, *scope),
                        record_access,
                    },
                )?
                else {
                    return Err(CliError::failure(match scope {
                        Some(s) => format!("memory '{key}' not found in scope '{s}'"),
                        None => format!("memory '{key}' not found"),
                    }));
                };
                let text = match format {
                    TextFormat::Text => output::show_text(&memory),
                    TextFormat::Json => output::json(&memory).map_err(CliError::failure)?,
                };
                emit(out, &text)
            }
            Plan::Delete { key, scope } => {
                let result = match svc.delete(ctx, cao_memory::MemoryTarget::key(key, Some(*scope))) {
                    Err(MemoryError::NotFound { .. }) => None,
                    other => Some(other?),
                };
                match result {
                    // A vault-bound scope keeps the note file (spec/vault-facts.md section 5 "Forget"): the
                    // reference's words, with the vault-relative path.
                    Some(r) if r.action == "deindexed" => emit(
                        out,
                        &format!(
                            "De-indexed '{key}'; the file is retained in your vault at {}.\n",
                            output::one_line(&r.path)
                        ),
                    ),
                    Some(r) if r.action == "deleted_and_deindexed" => emit(
                        out,
                        &format!(
                            "Deleted native memory '{key}' and de-indexed the retained vault file at {}.\n",
                            output::one_line(&r.path)
                        ),
                    ),
                    Some(r) if r.deleted => emit(out, &format!("Deleted memory '{key}' (scope: {scope}).\n")),
                    _ => Err(CliError::failure(format!(
                        "memory '{key}' not found in scope '{scope}'"
                    ))),
                }
            }
            Plan::Clear { scope } => {
                let n = svc.clear(ctx, *scope)?;
                let text = if n == 0 {
                    format!("No {scope}-scoped memories to clear.\n")
                } else {
                    format!("Cleared {n} {scope}-scoped memory(ies).\n")
                };
                emit(out, &text)
            }
            Plan::Repair(a) if a.receipt.is_some() => {
                let id = a.receipt.as_deref().unwrap_or_default();
                let settings = svc.storage().settings();
                let r = cao_memory::vault_migrate::roll_back(svc.storage(), &settings, id, a.apply)?;
                let text = match a.format {
                    TextFormat::Text => {
                        let mut t = format!(
                            "receipt: {}\nkey: {}\napplied: {}\n",
                            r.receipt_id,
                            r.key,
                            if r.applied { "True" } else { "False" }
                        );
                        for e in &r.restore {
                            t.push_str(&format!("restore: {} -> {}\n", e.id, e.status));
                        }
                        t
                    }
                    TextFormat::Json => output::json(&r).map_err(CliError::failure)?,
                };
                emit(out, &text)
            }
            Plan::Repair(a) => {
                let report = svc.repair()?;
                let text = match a.format {
                    TextFormat::Text => report.to_string(),
                    TextFormat::Json => output::json(&report).map_err(CliError::failure)?,
                };
                emit(out, &text)
            }
            Plan::Relationships(p) => emit(out, &p.execute(svc, ctx)?),
            Plan::Cleanup(a) => {
                let (text, failed) = crate::cleanup::execute(svc, a)?;
                emit(out, &text)?;
                failed.map_or(Ok(()), Err)
            }
            Plan::Export(p) => emit(out, &crate::bundle::run_export(svc, ctx, p)?),
            Plan::View { target, format } => {
                let view = svc.view(ctx, target)?;
                let text = match format {
                    TextFormat::Text => format!("{}\n", view.view),
                    TextFormat::Json => schema_object(VIEW_SCHEMA, &view)?,
                };
                emit(out, &text)
            }
            Plan::Purge { key, scope, format } => {
                let r = svc.purge(ctx, cao_memory::MemoryTarget::key(key, Some(*scope)))?;
                if !r.file_deleted && !r.row_deleted && r.versions_purged == 0 && r.audit_lines_scrubbed == 0 {
                    return Err(CliError::failure(format!(
                        "memory '{key}' not found in scope '{scope}' (no file, no index row, no journal entry)"
                    )));
                }
                if r.wal_busy {
                    tracing::warn!(
                        "another process kept the WAL from being truncated; its old frames are overwritten by the \
                         next checkpoint (run the purge again to force it)"
                    );
                }
                let text = match format {
                    TextFormat::Text => format!(
                        "Purged memory '{key}' (scope: {scope}): {} version(s) erased from the journal, {} summary \
                         line(s) dropped, file {}, index row {}, {} audit line(s) scrubbed.\n",
                        r.versions_purged,
                        r.lines_dropped,
                        if r.file_deleted { "removed" } else { "absent" },
                        if r.row_deleted { "removed" } else { "absent" },
                        r.audit_lines_scrubbed,
                    ),
                    TextFormat::Json => schema_object(PURGE_SCHEMA, &r)?,
                };
                emit(out, &text)
            }
            Plan::Outcomes(c) => emit(out, &crate::learning::run_outcomes(svc, c)?),
            Plan::Promote(a) => emit(out, &crate::learning::run_promote(svc, a)?),
            Plan::Import(p) => {
                let (text, failed) = crate::bundle::run_import(svc, ctx, p)?;
                emit(out, &text)?;
                failed.map_or(Ok(()), Err)
            }
        }
    }
}

/// `cao memory list --query Q --explain`: the settings checks (memory, then explain; exit 1 naming the key, nothing
/// created), one [`MemoryService::explain`] call, the report as a table or JSON.
///
/// Errors: [`MemoryError::Disabled`] and [`MemoryError::ExplainDisabled`] keep their messages (they name the
/// setting); every other service error, including a store that cannot be opened, is reported by
/// [`explain_failure`]. An empty pool is a success.
fn run_explain(a: &ExplainArgs, home: CaoHome, out: &mut dyn Write) -> Result<(), CliError> {
    let settings = Settings::load(&home);
    if !settings.memory_enabled() {
        return Err(MemoryError::Disabled.into());
    }
    if !settings.explain_enabled() {
        return Err(MemoryError::ExplainDisabled.into());
    }
    // The settings just checked serve the whole call (one settings.json read).
    let svc = MemoryService::open(home)
        .map_err(|e| explain_failure(&e))?
        .with_settings(settings);
    let ctx = TerminalContext::from_env();
    let req = ExplainRequest {
        query: a.query.clone(),
        scope: a.scope,
        memory_type: a.memory_type,
        all: a.all,
        limit: a.limit,
    };
    let result = svc.explain(&ctx, req);
    // Opening may have rebuilt the index from the wiki; keep index.md current like every other command. Only the
    // error's kind is logged: explain's normal stderr carries no error detail.
    if let Err(e) = svc.flush_index_md() {
        tracing::warn!(kind = e.kind(), "index.md could not be refreshed");
    }
    let report = result.map_err(|e| explain_failure(&e))?;
    let text = match a.format {
        ExplainFormat::Table => cao_memory::render_explain_table(&report),
        ExplainFormat::Json => output::json(&report).map_err(CliError::failure)?,
    };
    emit(out, &text)
}

/// The outcome of a failed explain (spec 000: "Service errors report only the exception type and an actionable
/// hint"): the two disabled errors keep their messages; any other error becomes `relevance explain failed:
/// <kind>` with a hint chosen by its kind. Its detail (the error's message) is written to stderr only when
/// `CAO_LOG_LEVEL` is `DEBUG` (any case).
fn explain_failure(e: &MemoryError) -> CliError {
    match e {
        MemoryError::Disabled => return MemoryError::Disabled.into(),
        MemoryError::ExplainDisabled => return MemoryError::ExplainDisabled.into(),
        _ => {}
    }
    if debug_detail_enabled(std::env::var("CAO_LOG_LEVEL").ok().as_deref()) {
        let line = format!(
            "debug: relevance explain failed: {}: {}\n",
            e.kind(),
            crate::error::single_line(&e.to_string())
        );
        // Best effort: the error line below still reports the failure if stderr is gone.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }
    CliError::failure_with_hint(
        format!("relevance explain failed: {}", e.kind()),
        format!(
            "{}; set CAO_LOG_LEVEL=DEBUG and re-run to print the detail",
            explain_hint(e.kind())
        ),
    )
}

/// Whether `CAO_LOG_LEVEL` asks for the explain error detail: exactly `debug`, any case, surrounding blanks ignored.
fn debug_detail_enabled(level: Option<&str>) -> bool {
    level.is_some_and(|v| v.trim().eq_ignore_ascii_case("debug"))
}

/// What the operator can do about an explain failure of `kind` (a [`MemoryError::kind`] code).
fn explain_hint(kind: &str) -> &'static str {
    match kind {
        "invalid_argument" => {
            "check --query, --scope and the project id (`cao config get memory.project_id`, CAO_PROJECT_ID)"
        }
        "index_error" => {
            "if another process holds the database, retry when it is done; otherwise run `cao memory repair`"
        }
        "corrupt_topic_file" | "wiki_error" | "memory_metadata_partial_write" => "run `cao memory repair`, then retry",
        "io_error" => "check that the cao home (CAO_HOME) is readable and writable, then retry",
        _ => "retry; if it persists, run `cao memory repair`",
    }
}

/// Strict key check of operator input (`^[a-z0-9-]{1,60}$`); a bad key is a usage error.
fn parse_key(raw: &str) -> Result<Key, CliError> {
    Key::parse_strict(raw).map_err(|e| CliError::Usage(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_keys_are_usage_errors_with_one_line() {
        for bad in [
            "../x",
            "a\0b",
            "a\nb",
            "UPPER",
            "",
            &"k".repeat(61),
            &"a".repeat(10 * 1024),
        ] {
            let e = parse_key(bad).expect_err("rejected");
            let CliError::Usage(msg) = &e else {
                panic!("not a usage error: {e:?}")
            };
            assert!(!msg.contains('\n') && !msg.contains('\0'), "{msg:?}");
            assert!(msg.len() < 300, "message bounded: {} bytes", msg.len());
        }
        assert_eq!(parse_key("ok-key-1").map(|k| k.to_string()), Ok("ok-key-1".to_owned()));
    }

    struct FailingWriter(std::io::ErrorKind);
    impl Write for FailingWriter {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(self.0.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn explain_failures_name_only_the_kind_and_a_hint() {
        let e = MemoryError::Corrupt {
            path: "/secret/path/topic.md".into(),
            reason: "stored content here".into(),
        };
        let CliError::Failure { message, hint } = explain_failure(&e) else {
            panic!("not a failure")
        };
        assert_eq!(message, "relevance explain failed: corrupt_topic_file");
        let hint = hint.unwrap_or_default();
        assert!(
            hint.contains("cao memory repair") && hint.contains("CAO_LOG_LEVEL=DEBUG"),
            "{hint}"
        );
        assert!(!message.contains("secret") && !hint.contains("secret") && !hint.contains("stored"));
        for (disabled, setting) in [
            (MemoryError::Disabled, "memory.enabled"),
            (MemoryError::ExplainDisabled, "memory.explain_enabled"),
        ] {
            let CliError::Failure { message, .. } = explain_failure(&disabled) else {
                panic!("not a failure")
            };
            assert!(message.contains(setting), "{message}");
        }
    }

    #[test]
    fn only_debug_in_any_case_prints_the_detail() {
        for on in ["DEBUG", "debug", " Debug "] {
            assert!(debug_detail_enabled(Some(on)), "{on:?}");
        }
        for off in [
            None,
            Some(""),
            Some("info"),
            Some("trace"),
            Some("warn"),
            Some("cao=debug"),
        ] {
            assert!(!debug_detail_enabled(off), "{off:?}");
        }
    }

    #[test]
    fn broken_pipe_is_quiet_other_write_errors_fail() {
        assert_eq!(emit(&mut FailingWriter(std::io::ErrorKind::BrokenPipe), "x"), Ok(()));
        assert!(emit(&mut FailingWriter(std::io::ErrorKind::StorageFull), "x").is_err());
    }
}
