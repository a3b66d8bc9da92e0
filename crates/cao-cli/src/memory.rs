//! `cao memory ...`: each subcommand validates its arguments (no I/O), asks for confirmation when destructive,
//! opens the [`MemoryService`] on the home from the environment, runs one service call, prints the result, and
//! refreshes every dirty `index.md` before returning, so the wiki's human-readable index is current when the
//! process exits.
//!
//! Order of checks: usage errors (exit 2) never touch the disk; a disabled memory system (exit 1, naming
//! `memory.enabled`) is detected from `settings.json`/env before the store is opened, so nothing is created.

use crate::cli::{ClearArgs, DeleteArgs, ListArgs, ListFormat, MemoryCommand, RepairArgs, ShowArgs, TextFormat};
use crate::confirm::{Prompter, confirm};
use crate::error::CliError;
use crate::output;
use crate::relationships::RelPlan;
use cao_core::{CaoHome, Key, Scope, Settings, TerminalContext};
use cao_memory::{ListRequest, MemoryError, MemoryService};
use std::io::Write;

/// Run one memory subcommand, writing its result to `out`.
///
/// Errors: see [`CliError`]; each variant documents its exit code.
pub fn run(cmd: MemoryCommand, out: &mut dyn Write, prompter: &mut dyn Prompter) -> Result<(), CliError> {
    // Context and hooks have their own rules (no store creation, hooks never fail).
    let cmd = match cmd {
        MemoryCommand::Context(a) => return crate::context::run_context(a, out),
        MemoryCommand::Hook(h) => return crate::context::run_hook_stdin(h, out),
        MemoryCommand::Inject(a) => return crate::inject::run(a, out),
        other => other,
    };
    // Validation and confirmation first: neither needs the store.
    let plan = Plan::new(cmd, prompter)?;
    let home = CaoHome::from_env();
    if !Settings::load(&home).memory_enabled() {
        return Err(MemoryError::Disabled.into());
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
    List(ListArgs),
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
}

impl Plan {
    fn new(cmd: MemoryCommand, prompter: &mut dyn Prompter) -> Result<Plan, CliError> {
        Ok(match cmd {
            MemoryCommand::List(a) => Plan::List(a),
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
            MemoryCommand::Context(_) | MemoryCommand::Hook(_) | MemoryCommand::Inject(_) => {
                return Err(CliError::failure(
                    "context and hook commands do not run through the store plan",
                ));
            }
            MemoryCommand::Cleanup(a) => Plan::Cleanup(a),
        })
    }

    /// Whether the command changes the store (then a failed index.md refresh is a failure).
    fn writes(&self) -> bool {
        matches!(self, Plan::Delete { .. } | Plan::Clear { .. } | Plan::Repair(_))
            || matches!(self, Plan::Cleanup(a) if !a.dry_run)
    }

    fn execute(&self, svc: &MemoryService, ctx: &TerminalContext, out: &mut dyn Write) -> Result<(), CliError> {
        match self {
            Plan::List(a) => {
                let req = ListRequest {
                    scope: a.scope.map(Into::into),
                    memory_type: a.memory_type.map(Into::into),
                    all: a.all,
                    limit: Some(usize::try_from(a.limit).unwrap_or(usize::MAX)),
                    // Operator view: spec 000 "Non-accessing operator inspection".
                    record_access: !svc.settings().non_accessing_inspection(),
                };
                let memories = svc.list(ctx, req)?;
                let text = match a.format {
                    ListFormat::Table => output::list_table(&memories),
                    ListFormat::Json => output::json(&memories).map_err(CliError::failure)?,
                };
                emit(out, &text)
            }
            Plan::Show { key, scope, format } => {
                let record_access = !svc.settings().non_accessing_inspection();
                let Some(memory) = svc.show_with_access(ctx, key, *scope, record_access)? else {
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
                let result = match svc.delete(ctx, key, Some(*scope)) {
                    Err(MemoryError::NotFound { .. }) => None,
                    other => Some(other?),
                };
                match result {
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
        }
    }
}

/// Strict key check of operator input (`^[a-z0-9-]{1,60}$`); a bad key is a usage error.
fn parse_key(raw: &str) -> Result<Key, CliError> {
    Key::parse_strict(raw).map_err(|e| CliError::Usage(e.to_string()))
}

/// Write `text` to `out`. A closed pipe (`cao memory list | head`) is not an error: the reader wanted no more.
///
/// Errors: any other write failure (e.g. disk full when redirected to a file).
fn emit(out: &mut dyn Write, text: &str) -> Result<(), CliError> {
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(CliError::failure(format!("cannot write the output: {e}"))),
    }
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
    fn broken_pipe_is_quiet_other_write_errors_fail() {
        assert_eq!(emit(&mut FailingWriter(std::io::ErrorKind::BrokenPipe), "x"), Ok(()));
        assert!(emit(&mut FailingWriter(std::io::ErrorKind::StorageFull), "x").is_err());
    }
}
