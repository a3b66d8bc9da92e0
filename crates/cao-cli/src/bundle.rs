//! `cao memory export` and `cao memory import`: OKF bundles (spec 000 "cao memory export/import", "Read-only
//! mirror"; the pipelines are `cao_memory`'s `export` and `import`).
//!
//! - `export --scope S -o DIR|FILE.tar.gz [--include-private] [--include-history] [--redact] [--prune]
//!   [--format okf] [--project-id P] [--json]`: a path ending in `.tar.gz` is an archive, anything else a
//!   directory; `--prune` only for a directory; session and agent only with `--include-private` (checked before
//!   anything is opened). The project is the current one (`--project-id`, `CAO_PROJECT_ID`, `memory.project_id`,
//!   git remote, cwd), as for every command.
//! - `import DIR|FILE.tar.gz --scope global|project|federated [--conflict skip|replace|merge] [--dry-run]
//!   [--format text|json] [--project-id P]`: the bundle is untrusted; per-file rejections are listed in the report
//!   and are not a failure (exit 0), a bundle refused whole is (exit 1), and so is a run stopped by a storage error
//!   (the report is printed first).
//!
//! Text reports have the reference CLI's lines; bundle paths and reasons in them pass [`crate::output::one_line`],
//! so a hostile file name cannot break a line or smuggle terminal escapes. `--json` / `--format json` print the
//! `cao.memory.export/1` / `cao.memory.import/1` objects (docs/schemas/). A progress bar is drawn on stderr when it
//! is a terminal and more than [`crate::progress::PROGRESS_MIN`] files or topics are written.

use crate::cli::{ScopeArg, TextFormat};
use crate::error::CliError;
use crate::output::{self, one_line};
use crate::progress::Bar;
use cao_core::{Scope, TerminalContext};
use cao_memory::{
    ConflictPolicy, ExportDestination, ExportOutcome, ExportRequest, ImportOutcome, ImportRequest, MemoryError,
    MemoryService,
};
use clap::{Args, ValueEnum};
use std::fmt::Write as _;
use std::path::PathBuf;

/// The archive formats (`okf` only, as the reference registers today).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ArchiveFormat {
    /// OKF: markdown topics with YAML frontmatter, `index.md`, `manifest.md`.
    Okf,
}

/// An import target (the private session and agent tiers are never imported into).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportScopeArg {
    /// Cross-project facts.
    Global,
    /// Facts of the current project.
    Project,
    /// The machine-wide shared tier (every topic passes the secret gate).
    Federated,
}

impl From<ImportScopeArg> for Scope {
    fn from(s: ImportScopeArg) -> Self {
        match s {
            ImportScopeArg::Global => Scope::Global,
            ImportScopeArg::Project => Scope::Project,
            ImportScopeArg::Federated => Scope::Federated,
        }
    }
}

/// A conflict policy as spelled on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConflictArg {
    /// Leave an existing memory alone.
    Skip,
    /// Forget the existing memory, then store the bundle's.
    Replace,
    /// Append the bundle's entry to the existing memory.
    Merge,
}

impl From<ConflictArg> for ConflictPolicy {
    fn from(c: ConflictArg) -> Self {
        match c {
            ConflictArg::Skip => ConflictPolicy::Skip,
            ConflictArg::Replace => ConflictPolicy::Replace,
            ConflictArg::Merge => ConflictPolicy::Merge,
        }
    }
}

/// Arguments of `cao memory export`.
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The scope to export (one bundle per scope).
    #[arg(long, value_enum, value_name = "SCOPE")]
    pub scope: ScopeArg,
    /// Destination directory, or a file path ending in .tar.gz for a reproducible archive.
    #[arg(short = 'o', long = "output", value_name = "DIR|FILE.tar.gz")]
    pub output: PathBuf,
    /// Required to export the private session and agent scopes.
    #[arg(long)]
    pub include_private: bool,
    // Help texts with the literal file and marker shapes, which rustdoc would read as HTML and links.
    /// Also write history/<topic>.md files with every earlier entry.
    #[arg(long)]
    #[allow(rustdoc::invalid_html_tags)]
    pub include_history: bool,
    /// Redact secret matches as [REDACTED:<name>] instead of skipping the topic.
    #[arg(long)]
    #[allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]
    pub redact: bool,
    /// Delete destination .md files no longer in the scope (directory output only; never index.md/manifest.md).
    #[arg(long)]
    pub prune: bool,
    /// Archive format.
    #[arg(long, value_enum, default_value_t = ArchiveFormat::Okf)]
    pub format: ArchiveFormat,
    /// The project to export (project scope only); default the current project.
    #[arg(long, value_name = "P")]
    pub project_id: Option<String>,
    /// Print the report as JSON (cao.memory.export/1).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `cao memory import`.
#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    /// The bundle: a directory, or a .tar.gz file.
    #[arg(value_name = "DIR|FILE.tar.gz")]
    pub path: PathBuf,
    /// Target scope (required: bundles carry no scope).
    #[arg(long, value_enum, value_name = "SCOPE")]
    pub scope: ImportScopeArg,
    /// What to do when a key already exists in the target scope.
    #[arg(long, value_enum, default_value_t = ConflictArg::Skip)]
    pub conflict: ConflictArg,
    /// Run the whole pipeline and report exactly what would happen; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Output format of the report.
    #[arg(long, value_enum, default_value_t = TextFormat::Text)]
    pub format: TextFormat,
    /// The project to import into (project scope only); default the current project.
    #[arg(long, value_name = "P")]
    pub project_id: Option<String>,
}

/// A validated `cao memory export`.
#[derive(Debug)]
pub(crate) struct ExportPlan {
    req: ExportRequest,
    dest: ExportDestination,
    output: PathBuf,
    json: bool,
}

/// A validated `cao memory import`.
#[derive(Debug)]
pub(crate) struct ImportPlan {
    req: ImportRequest,
    project_id: Option<String>,
    format: TextFormat,
}

impl ImportPlan {
    /// Whether the command writes (a real run).
    pub(crate) fn writes(&self) -> bool {
        !self.req.dry_run
    }
}

/// Whether `path` names an archive: its name ends in `.tar.gz` (the reference's rule).
fn is_archive(path: &std::path::Path) -> bool {
    path.to_str().is_some_and(|s| s.ends_with(".tar.gz"))
}

/// Check an export command line (no I/O).
///
/// Errors: [`CliError::Usage`] for `--prune` with an archive or `--project-id` with another scope;
/// the [`MemoryError::PrivateScope`] failure (exit 1, as the reference) for session/agent without
/// `--include-private`.
pub(crate) fn export_plan(a: ExportArgs) -> Result<ExportPlan, CliError> {
    let scope = Scope::from(a.scope);
    let ArchiveFormat::Okf = a.format;
    if a.project_id.is_some() && scope != Scope::Project {
        return Err(CliError::Usage("--project-id applies only to --scope project".into()));
    }
    if matches!(scope, Scope::Session | Scope::Agent) && !a.include_private {
        return Err(MemoryError::PrivateScope(scope).into());
    }
    let dest = if is_archive(&a.output) {
        if a.prune {
            return Err(CliError::Usage(
                "--prune applies only to a directory destination, not a .tar.gz archive".into(),
            ));
        }
        ExportDestination::Archive { path: a.output.clone() }
    } else {
        ExportDestination::Directory {
            path: a.output.clone(),
            prune: a.prune,
        }
    };
    Ok(ExportPlan {
        req: ExportRequest {
            scope,
            scope_id: a.project_id,
            include_private: a.include_private,
            include_history: a.include_history,
            redact: a.redact,
        },
        dest,
        output: a.output,
        json: a.json,
    })
}

/// Check an import command line (no I/O).
///
/// Errors: [`CliError::Usage`] for `--project-id` with another scope.
pub(crate) fn import_plan(a: ImportArgs) -> Result<ImportPlan, CliError> {
    let scope = Scope::from(a.scope);
    if a.project_id.is_some() && scope != Scope::Project {
        return Err(CliError::Usage("--project-id applies only to --scope project".into()));
    }
    Ok(ImportPlan {
        req: ImportRequest {
            source: a.path,
            scope,
            conflict: a.conflict.into(),
            dry_run: a.dry_run,
        },
        project_id: a.project_id,
        format: a.format,
    })
}

/// Run an export and render its report.
///
/// Errors: the service's (private scope, destination, I/O).
pub(crate) fn run_export(svc: &MemoryService, ctx: &TerminalContext, plan: &ExportPlan) -> Result<String, CliError> {
    let bar = Bar::for_stderr();
    let outcome = svc.export(ctx, &plan.req, &plan.dest, &bar)?;
    if plan.json {
        return output::json(&outcome).map_err(CliError::failure);
    }
    Ok(export_text(&outcome, &plan.output.display().to_string()))
}

/// Run an import and render its report; a run stopped by a storage error returns the report with the failure.
///
/// Errors: the service's (target scope, project, bundle refused whole).
pub(crate) fn run_import(
    svc: &MemoryService,
    ctx: &TerminalContext,
    plan: &ImportPlan,
) -> Result<(String, Option<CliError>), CliError> {
    let mut ctx = ctx.clone();
    if let Some(p) = &plan.project_id {
        ctx.project_id = Some(p.clone());
    }
    let bar = Bar::for_stderr();
    let outcome = svc.import(&ctx, &plan.req, &bar)?;
    let text = match plan.format {
        TextFormat::Text => import_text(&outcome, &plan.req.source.display().to_string()),
        TextFormat::Json => output::json(&outcome).map_err(CliError::failure)?,
    };
    let failed = outcome.stopped.as_ref().map(|e| {
        CliError::failure_with_hint(
            format!("the import stopped after a storage error: {e}"),
            "the topics written before it are listed as imported; fix the cause, run `cao memory repair`, then \
             import again with --conflict skip",
        )
    });
    Ok((text, failed))
}

/// The reference CLI's export report.
pub(crate) fn export_text(o: &ExportOutcome, output: &str) -> String {
    let r = &o.report;
    let mut s = format!("Exported scope '{}' to {}\n", o.scope, one_line(output));
    let _ = writeln!(
        s,
        "  exported: {}  unchanged: {}  skipped (secret): {}  redacted: {}  pruned: {}  links dropped: {}",
        r.exported, r.unchanged, r.skipped_secret, r.redacted, r.pruned, r.links_dropped
    );
    for (key, patterns) in &r.skip_reasons {
        let _ = writeln!(s, "  skipped '{key}': matched {}", patterns.join(", "));
    }
    s
}

/// The reference CLI's import report.
pub(crate) fn import_text(o: &ImportOutcome, source: &str) -> String {
    let r = &o.report;
    let mode = if r.dry_run {
        "DRY RUN \u{2014} nothing written"
    } else {
        "Imported"
    };
    let dest = match &r.target_scope_id {
        Some(id) => format!("{} (scope_id: {})", r.target_scope, one_line(id)),
        None => r.target_scope.clone(),
    };
    let mut s = format!("{mode}: {} -> scope {dest}\n", one_line(source));
    let _ = writeln!(
        s,
        "  imported: {}  replaced: {}  merged: {}  skipped (conflict): {}  rejected: {}",
        r.imported, r.replaced, r.merged, r.skipped_conflict, r.rejected
    );
    let _ = writeln!(
        s,
        "  see-also links dropped: {}  bodies escaped: {}  timestamps clamped: {}",
        r.see_also_dropped, r.bodies_escaped, r.timestamps_clamped
    );
    if r.types_defaulted + r.timestamps_ignored > 0 {
        let _ = writeln!(
            s,
            "  types defaulted: {}  timestamps ignored: {}",
            r.types_defaulted, r.timestamps_ignored
        );
    }
    for (rel, reason) in &r.errors {
        let _ = writeln!(s, "  rejected '{}': {}", one_line(rel), one_line(reason));
    }
    for (rel, notice) in &r.notices {
        let _ = writeln!(s, "  notice '{}': {}", one_line(rel), one_line(notice));
    }
    if r.past_retention > 0 {
        let days = r
            .target_scope
            .parse::<cao_core::Scope>()
            .ok()
            .and_then(cao_memory::retention::retention_days)
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "  warning: {} {} topic(s) were last updated more than {days} days ago, past the retention horizon: \
             the next retention cleanup (at every cao-server start, or `cao memory cleanup`) removes them; import \
             them into the global scope, or as type user or feedback, to keep them",
            r.past_retention,
            if r.dry_run { "planned" } else { "imported" },
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command, MemoryCommand};
    use clap::Parser;

    fn parse(argv: &[&str]) -> MemoryCommand {
        let mut full = vec!["cao", "memory"];
        full.extend_from_slice(argv);
        match Cli::try_parse_from(&full).expect("parses").command {
            Command::Memory(m) => m,
            Command::Config(_) | Command::Agents(_) | Command::Models(_) | Command::Setup(_) | Command::Store(_) => {
                panic!("not a memory command")
            }
        }
    }

    fn export(argv: &[&str]) -> Result<ExportPlan, CliError> {
        match parse(argv) {
            MemoryCommand::Export(a) => export_plan(a),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn export_lines_follow_the_flags() {
        let p = export(&["export", "--scope", "global", "-o", "out.tar.gz"]).expect("valid");
        assert!(matches!(p.dest, ExportDestination::Archive { .. }));
        let p = export(&["export", "--scope", "global", "-o", "out", "--prune"]).expect("valid");
        assert!(matches!(p.dest, ExportDestination::Directory { prune: true, .. }));
        assert!(matches!(
            export(&["export", "--scope", "global", "-o", "out.tar.gz", "--prune"]),
            Err(CliError::Usage(_))
        ));
        assert!(matches!(
            export(&["export", "--scope", "global", "-o", "x", "--project-id", "p"]),
            Err(CliError::Usage(_))
        ));
        let Err(CliError::Failure { message, .. }) = export(&["export", "--scope", "agent", "-o", "x"]) else {
            panic!("private scope without the flag")
        };
        assert!(message.contains("--include-private"), "{message}");
        assert!(export(&["export", "--scope", "agent", "-o", "x", "--include-private"]).is_ok());
        for bad in [
            &["export", "--scope", "global"][..],
            &["export", "-o", "x"],
            &["export", "--scope", "global", "-o", "x", "--format", "cao"],
            &["import", "b", "--scope", "session"],
            &["import", "b", "--scope", "global", "--conflict", "overwrite"],
            &["import", "--scope", "global"],
        ] {
            let mut full = vec!["cao", "memory"];
            full.extend_from_slice(bad);
            assert_eq!(Cli::try_parse_from(&full).expect_err("usage").exit_code(), 2, "{bad:?}");
        }
    }

    #[test]
    fn hostile_names_cannot_break_report_lines() {
        let outcome = ImportOutcome {
            schema: cao_memory::IMPORT_SCHEMA,
            source: "b".into(),
            archive: false,
            report: cao_memory::ImportReport {
                rejected: 1,
                errors: [("evil\n\u{1b}[31m.md".to_owned(), "bad\r\nreason".to_owned())].into(),
                target_scope: "global".into(),
                ..Default::default()
            },
            stopped: None,
        };
        let text = import_text(&outcome, "b");
        assert_eq!(text.lines().count(), 4, "{text}");
        assert!(!text.contains('\u{1b}'));
        assert!(
            text.ends_with("  rejected 'evil\\n\\u{1b}[31m.md': bad\\r\\nreason\n"),
            "{text}"
        );
    }
}
