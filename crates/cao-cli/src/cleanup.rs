//! `cao memory cleanup [--dry-run] [--format text|json]`: apply the retention table now (project memories 90 days
//! after their last update, session memories 14 days; global, agent and federated memories and every `user` or
//! `feedback` memory are kept). `cao-server` runs the same cleanup once at start.
//!
//! Output: the [`cao_memory::CleanupReport`] as text (one summary line, then one line per memory) or pretty JSON.
//! Exit 1 when some expired memory could not be removed (the report is printed first; they are retried next run).

use crate::cli::TextFormat;
use crate::error::CliError;
use crate::output;
use cao_memory::MemoryService;
use clap::Args;

/// Arguments of `cao memory cleanup`.
#[derive(Debug, Args)]
pub(crate) struct CleanupArgs {
    /// Only report what would be removed; change nothing (no files, index rows or audit lines).
    #[arg(long)]
    pub dry_run: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TextFormat::Text)]
    pub format: TextFormat,
}

/// Run the cleanup and render its report.
///
/// Errors: the service's (memory disabled, index unreadable), and a failure naming how many expired memories could
/// not be removed; in that case the rendered report is returned with the error so it can be printed first.
pub(crate) fn execute(svc: &MemoryService, args: &CleanupArgs) -> Result<(String, Option<CliError>), CliError> {
    let report = svc.cleanup(args.dry_run)?;
    let text = match args.format {
        TextFormat::Text => report.to_string(),
        TextFormat::Json => output::json(&report).map_err(CliError::failure)?,
    };
    let failed = (!report.failed.is_empty()).then(|| {
        CliError::failure(format!(
            "{} expired memories could not be removed (listed above); they are retried on the next cleanup",
            report.failed.len()
        ))
    });
    Ok((text, failed))
}
