//! `cao memory inject --provider P --cwd DIR`: write the `<cao-memory>` block into the provider's config file in
//! DIR, as creating a terminal of that provider does (`cao_memory::write_provider_file`): claude_code ->
//! `DIR/.claude/CLAUDE.md` and codex -> `DIR/AGENTS.md` (only the delimited block changes), kiro_cli ->
//! `DIR/.kiro/steering/cao-memory.md` (the whole file).
//!
//! The caller's identity is the environment's (`CAO_SESSION_NAME`, `CAO_AGENT_PROFILE`, `CAO_PROJECT_ID`), each
//! overridable by a flag; the project is derived from DIR. A relative DIR is taken from the current directory.
//!
//! Output: one line on stdout, `written: <path>`, `unchanged: <path>`, `skipped: empty (...)` or
//! `skipped: memory disabled (...)` (exit 0), or with `--format json` the outcome object. A refusal (DIR missing
//! or not a directory, a symlink escaping DIR, ...) prints `error: refused: <reason>` and exits 1; so does a failed
//! fetch or write. In every case but `written` the file is left exactly as it was.
//!
//! Like `cao memory context`, this never creates the store: with no memory directory there is nothing to inject.

use crate::cli::TextFormat;
use crate::error::CliError;
use crate::output;
use crate::output::emit;
use cao_core::{CaoHome, Settings, TerminalContext};
use cao_memory::{
    ContextRequest, MemoryService, Provider, ProviderWrite, SkipReason, write_provider_block, write_provider_file_with,
};
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `cao memory inject`.
#[derive(Debug, Args)]
pub(crate) struct InjectArgs {
    /// The agent CLI whose config file receives the block.
    #[arg(long, value_enum, value_name = "PROVIDER")]
    pub provider: ProviderArg,
    /// The terminal's working directory (the project root the provider reads its config file from).
    #[arg(long, value_name = "DIR")]
    pub cwd: PathBuf,
    /// Session name (scope id of session memories); default `$CAO_SESSION_NAME`.
    #[arg(long, value_name = "S")]
    pub session: Option<String>,
    /// Agent profile; default `$CAO_AGENT_PROFILE`.
    #[arg(long, value_name = "A")]
    pub agent: Option<String>,
    /// Explicit project id; default `$CAO_PROJECT_ID`, then `memory.project_id`, git remote, DIR hash.
    #[arg(long, value_name = "P")]
    pub project_id: Option<String>,
    /// Total character budget, 1-1000000 (the HTTP context routes' rule); each of the three scopes gets
    /// min(1000, N / 3).
    #[arg(long, value_name = "N", default_value_t = cao_memory::DEFAULT_CONTEXT_BUDGET,
        value_parser = crate::context::parse_budget)]
    pub budget: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TextFormat::Text)]
    pub format: TextFormat,
}

/// `--provider` values (the provider names of `POST /terminals`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderArg {
    /// Claude Code: DIR/.claude/CLAUDE.md.
    #[value(name = "claude_code")]
    ClaudeCode,
    /// Codex CLI: DIR/AGENTS.md.
    #[value(name = "codex")]
    Codex,
    /// Kiro CLI: DIR/.kiro/steering/cao-memory.md.
    #[value(name = "kiro_cli")]
    KiroCli,
}

impl From<ProviderArg> for Provider {
    fn from(p: ProviderArg) -> Self {
        match p {
            ProviderArg::ClaudeCode => Provider::ClaudeCode,
            ProviderArg::Codex => Provider::Codex,
            ProviderArg::KiroCli => Provider::KiroCli,
        }
    }
}

/// Run `cao memory inject` and print what it did.
///
/// Errors: a refusal, a failed fetch or a failed write (exit 1; the file is unchanged), a failed write to `out`.
pub(crate) fn run(args: InjectArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let provider = Provider::from(args.provider);
    let cwd = std::path::absolute(&args.cwd)
        .map_err(|e| CliError::failure(format!("cannot resolve --cwd {}: {e}", args.cwd.display())))?;
    let mut ctx = TerminalContext::from_env();
    if let Some(s) = args.session {
        ctx.session_name = Some(s);
    }
    if let Some(a) = args.agent {
        ctx.agent_profile = Some(a);
    }
    if let Some(p) = args.project_id {
        ctx.project_id = Some(p);
    }
    ctx.cwd = Some(cwd.clone());
    ctx.provider = Some(provider.as_str().to_owned());

    let outcome = write_block(provider, &cwd, &ctx, args.budget)?;
    let unchanged_hint = "the previous file is unchanged";

    let text = match args.format {
        TextFormat::Text if outcome.is_success() => format!("{outcome}\n"),
        TextFormat::Text => String::new(),
        TextFormat::Json => output::json(&outcome).map_err(CliError::failure)?,
    };
    if !text.is_empty() {
        emit(out, &text)?;
    }
    match outcome {
        ProviderWrite::Refused { .. } => Err(CliError::failure_with_hint(outcome.to_string(), unchanged_hint)),
        _ => Ok(()),
    }
}

/// Write the block for `ctx` into `provider`'s file in `cwd` (the four cases of `cao memory inject`: memory disabled,
/// a remote owner, no store yet, the local store); what happened. `cao setup kiro` writes Kiro's steering file with
/// it.
///
/// Errors: a failed fetch or write (the previous file is unchanged); a refusal is an `Ok` outcome.
pub(crate) fn write_block(
    provider: Provider,
    cwd: &std::path::Path,
    ctx: &TerminalContext,
    budget: usize,
) -> Result<ProviderWrite, CliError> {
    let home = CaoHome::from_env();
    let unchanged_hint = "the previous file is unchanged";
    Ok(if !Settings::load(&home).memory_enabled() {
        // Validate DIR all the same, so a bad --cwd is reported whatever the switch.
        match write_provider_block(provider, cwd, None)? {
            ProviderWrite::Skipped { .. } => ProviderWrite::Skipped {
                reason: SkipReason::Disabled,
            },
            other => other,
        }
    } else if let Some(owner) = crate::remote::owner()? {
        // Validate DIR before asking the owner, as the local path does.
        match write_provider_block(provider, cwd, None)? {
            refused @ ProviderWrite::Refused { .. } => refused,
            _ => {
                let block = crate::remote::block(owner, ctx, budget)
                    .map_err(|e| CliError::failure_with_hint(e, unchanged_hint))?;
                write_provider_block(provider, cwd, block.as_deref())
                    .map_err(|e| CliError::failure_with_hint(e.to_string(), unchanged_hint))?
            }
        }
    } else if !home.memory_dir().is_dir() {
        write_provider_block(provider, cwd, None)?
    } else {
        let svc = MemoryService::open(home)?;
        write_provider_file_with(
            &svc,
            provider,
            ctx,
            ContextRequest {
                budget: Some(budget),
                ..Default::default()
            },
        )
        .map_err(|e| CliError::failure_with_hint(e.to_string(), unchanged_hint))?
    })
}
