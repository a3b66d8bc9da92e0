//! `cao memory lint [--scope S] [--repo-root DIR] [--format text|json]` and `cao memory heal [--scope S] [--apply]
//! [--aggressive] [--repo-root DIR] [--format text|json]` (spec 000 "CLI Commands", "Typed relationships"; the detectors and fixes are
//! `cao_memory::lint` and `cao_memory::heal`).
//!
//! - lint is read-only: it opens the store, lints, prints, and refreshes nothing (no `index.md` flush, no access
//!   counted). Exit 1 when any finding is an error (the report is printed first), else 0.
//! - heal prints its plan (a dry run) or, with `--apply`, carries it out and refreshes `index.md`. Exit 1 when
//!   another heal holds the lock (`error:` names the lock file; nothing done) or when an action failed (the report
//!   is printed first).
//! - compact asks the configured model for one consolidated article per topic with several entries and writes the
//!   accepted ones (`--dry-run`: asks and checks, writes nothing); then refreshes `index.md`. With the `none`
//!   provider it says there is nothing to do (exit 0). Exit 1 when an answer was refused or a topic failed (the
//!   report is printed first), or for a model configuration error or an unknown `--key`.
//! - Text output is a table for people; `--format json` is `cao.memory.lint/1` / `cao.memory.heal/1` /
//!   `cao.memory.compact/1`
//!   (docs/schemas/). A progress bar ([`crate::progress::Bar`]) is drawn on stderr only when stderr is a terminal;
//!   stdout carries only the report.

use crate::cli::{ScopeArg, TextFormat};
use crate::error::CliError;
use crate::output::{self, emit};
use crate::progress::Bar;
use cao_core::{CaoHome, Scope, Settings, TerminalContext};
use cao_memory::{CompactRequest, HealRequest, LintRequest, MemoryError, MemoryService};
use clap::Args;
use std::io::Write;

/// Arguments of `cao memory lint`.
#[derive(Debug, Args)]
pub(crate) struct LintArgs {
    /// Only this scope (default: every scope visible from here).
    #[arg(long, value_enum, value_name = "SCOPE")]
    pub scope: Option<ScopeArg>,
    /// The repository that relative paths and code symbols are checked against (default: the nearest ancestor of
    /// the working directory holding `.git`; outside a repository they are not checked).
    #[arg(long, value_name = "DIR")]
    pub repo_root: Option<std::path::PathBuf>,
    /// Output format: a table, or the cao.memory.lint/1 JSON report.
    #[arg(long, value_enum, default_value_t = TextFormat::Text)]
    pub format: TextFormat,
}

/// Arguments of `cao memory heal`.
#[derive(Debug, Args)]
pub(crate) struct HealArgs {
    /// Only this scope (default: every scope visible from here).
    #[arg(long, value_enum, value_name = "SCOPE")]
    pub scope: Option<ScopeArg>,
    /// Carry the plan out (default: only print it).
    #[arg(long)]
    pub apply: bool,
    /// Also reset poisoned access counts to 0.
    #[arg(long)]
    pub aggressive: bool,
    /// The repository that relative paths and code symbols are checked against (default: the nearest ancestor of
    /// the working directory holding `.git`; outside a repository they are not checked).
    #[arg(long, value_name = "DIR")]
    pub repo_root: Option<std::path::PathBuf>,
    /// With --apply: apply only the plan a dry run printed as `plan digest: <HEX>`; when the plan made now differs
    /// (files or memories changed meanwhile), nothing is applied and the command fails (exit 1).
    #[arg(long, value_name = "HEX", requires = "apply", value_parser = parse_plan_digest)]
    pub plan_digest: Option<String>,
    /// Output format: text, or the cao.memory.heal/1 JSON report.
    #[arg(long, value_enum, default_value_t = TextFormat::Text)]
    pub format: TextFormat,
}

/// A `--plan-digest` value: the 64 hexadecimal digits of a plan's SHA-256 ([`cao_memory::plan_digest`]).
///
/// Errors: anything else (a usage error naming the expected shape).
pub(crate) fn parse_plan_digest(s: &str) -> Result<String, String> {
    if s.len() == cao_memory::plan_digest::PLAN_DIGEST_LEN && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(s.to_ascii_lowercase())
    } else {
        Err(format!(
            "expected the {} hexadecimal digits a dry run prints as `plan digest: ...`",
            cao_memory::plan_digest::PLAN_DIGEST_LEN
        ))
    }
}

/// A dry run's closing lines: the plan's digest and the command that applies exactly that plan.
pub(crate) fn digest_lines(digest: &str, apply_command: &str) -> String {
    format!("\nplan digest: {digest}\napply exactly this plan: {apply_command} --apply --plan-digest {digest}\n")
}

/// `report` as JSON with its plan digest beside the report's own fields (`plan_digest`, 64 hex digits).
///
/// Errors: an encoding failure (message).
pub(crate) fn json_with_digest<T: serde::Serialize>(report: &T, digest: &str) -> Result<String, String> {
    /// The report's fields in their order, then the digest.
    #[derive(serde::Serialize)]
    struct WithDigest<'a, T> {
        #[serde(flatten)]
        report: &'a T,
        plan_digest: &'a str,
    }
    output::json(&WithDigest {
        report,
        plan_digest: digest,
    })
}

/// Arguments of `cao memory compact`.
#[derive(Debug, Args)]
pub(crate) struct CompactArgs {
    /// Only this scope (default: every scope visible from here).
    #[arg(long, value_enum, value_name = "SCOPE")]
    pub scope: Option<ScopeArg>,
    /// Only this memory key.
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,
    /// Ask the model and check its answers, but write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Output format: text, or the cao.memory.compact/1 JSON report.
    #[arg(long, value_enum, default_value_t = TextFormat::Text)]
    pub format: TextFormat,
}

/// Open the service for a lint or heal (memory must be enabled; checked before the store is opened).
fn open() -> Result<(MemoryService, TerminalContext), CliError> {
    let home = CaoHome::from_env();
    let settings = Settings::load(&home);
    if !settings.memory_enabled() {
        return Err(MemoryError::Disabled.into());
    }
    let svc = MemoryService::open(home)?.with_settings(settings);
    Ok((svc, TerminalContext::from_env()))
}

/// The `--repo-root` directory, made absolute; it must be an existing directory.
///
/// Errors: a usage error naming the path when it is not a readable directory.
fn repo_root(arg: Option<std::path::PathBuf>) -> Result<Option<std::path::PathBuf>, CliError> {
    let Some(dir) = arg else { return Ok(None) };
    match std::fs::canonicalize(&dir) {
        Ok(abs) if abs.is_dir() => Ok(Some(abs)),
        _ => Err(CliError::Usage(format!(
            "--repo-root {} is not an existing directory",
            dir.display()
        ))),
    }
}

/// Run `cao memory lint`.
///
/// Errors: the service's; a failure (exit 1) after printing when a finding is an error.
pub(crate) fn run_lint(args: LintArgs, out: &mut dyn Write) -> Result<(), CliError> {
    // A whole-corpus scan: read the index through SQLite's page cache, so lint's resident memory is the rows it
    // holds, not every page of the index file it touched (~380 MB at 100,000 memories, `bench --only lint`).
    cao_memory::limit_index_read_mapping(0);
    let (svc, ctx) = open()?;
    let req = LintRequest {
        scope: args.scope.map(Scope::from),
        repo_root: repo_root(args.repo_root)?,
        model: None,
    };
    let report = svc.lint(&ctx, req, &Bar::for_stderr());
    let report = report?;
    let text = match args.format {
        TextFormat::Text => cao_memory::render_lint_table(&report),
        TextFormat::Json => output::json(&report).map_err(CliError::failure)?,
    };
    emit(out, &text)?;
    if report.has_errors() {
        return Err(CliError::failure_with_hint(
            format!("lint found {} error findings", report.counts.error),
            "`cao memory heal` shows the fixes; `cao memory heal --apply` makes them",
        ));
    }
    Ok(())
}

/// Run `cao memory heal`.
///
/// Errors: the service's (another heal holding the lock among them); a failure (exit 1) after printing when an
/// action failed; an `index.md` refresh failure after `--apply`.
pub(crate) fn run_heal(args: HealArgs, out: &mut dyn Write) -> Result<(), CliError> {
    // Heal plans from the same whole-corpus scan as lint (see run_lint).
    cao_memory::limit_index_read_mapping(0);
    let (svc, ctx) = open()?;
    let repo_flag = args
        .repo_root
        .as_ref()
        .map(|p| format!(" --repo-root {}", output::one_line(&p.display().to_string())));
    let req = HealRequest {
        scope: args.scope.map(Scope::from),
        apply: args.apply,
        aggressive: args.aggressive,
        repo_root: repo_root(args.repo_root)?,
        plan_digest: args.plan_digest.clone(),
        model: None,
    };
    let report = svc.heal(&ctx, req, &Bar::for_stderr());
    let report = report?;
    if args.apply
        && let Err(e) = svc.flush_index_md()
    {
        return Err(CliError::failure_with_hint(
            format!("heal applied its actions but index.md could not be refreshed: {e}"),
            "run `cao memory repair` to rebuild it",
        ));
    }
    let digest = report.plan_digest();
    let text = match args.format {
        TextFormat::Text if args.apply || report.actions.is_empty() => cao_memory::render_heal_text(&report),
        TextFormat::Text => {
            let mut command = String::from("cao memory heal");
            if let Some(scope) = report.scope {
                command.push_str(&format!(" --scope {}", scope.as_str()));
            }
            if args.aggressive {
                command.push_str(" --aggressive");
            }
            command.push_str(repo_flag.as_deref().unwrap_or_default());
            format!(
                "{}{}",
                cao_memory::render_heal_text(&report),
                digest_lines(&digest, &command)
            )
        }
        TextFormat::Json => json_with_digest(&report, &digest).map_err(CliError::failure)?,
    };
    emit(out, &text)?;
    if report.has_failures() {
        return Err(CliError::failure(format!(
            "{} heal actions failed (listed above)",
            report.counts.failed
        )));
    }
    Ok(())
}

/// Run `cao memory compact`.
///
/// Errors: the service's (a model configuration error, an unknown or malformed key); a failure (exit 1) after
/// printing when an answer was refused or a topic failed; an `index.md` refresh failure after a compaction.
pub(crate) fn run_compact(args: CompactArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let (svc, ctx) = open()?;
    let req = CompactRequest {
        scope: args.scope.map(Scope::from),
        key: args.key,
        dry_run: args.dry_run,
        model: None,
    };
    let report = svc.compact(&ctx, req, &Bar::for_stderr())?;
    if report.counts.compacted > 0
        && let Err(e) = svc.flush_index_md()
    {
        return Err(CliError::failure_with_hint(
            format!("compact wrote its articles but index.md could not be refreshed: {e}"),
            "run `cao memory repair` to rebuild it",
        ));
    }
    let text = match args.format {
        TextFormat::Text => cao_memory::render_compact_text(&report),
        TextFormat::Json => output::json(&report).map_err(CliError::failure)?,
    };
    emit(out, &text)?;
    if report.has_problems() {
        return Err(CliError::failure(format!(
            "{} answers refused and {} topics failed (listed above); those topics are unchanged",
            report.counts.refused, report.counts.failed
        )));
    }
    Ok(())
}
