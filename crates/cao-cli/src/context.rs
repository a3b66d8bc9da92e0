//! `cao memory context` and `cao memory hook claude-code <event>`: the `<cao-memory>` block for a new session.
//!
//! - `context` prints the block for the caller (environment: `CAO_SESSION_NAME`, `CAO_AGENT_PROFILE`,
//!   `CAO_PROJECT_ID`, the process cwd; each overridable by a flag) followed by a newline. Nothing to inject, or
//!   memory disabled, prints nothing and exits 0, so `cao memory context > file` never fails for an empty store.
//!   `--terminal-id ID` takes the caller from a terminal registered with `POST /terminals` (its session, agent
//!   profile and cwd, from the index's `cao_terminals` table) instead; an unknown id fails (exit 1).
//! - `hook claude-code` is a Claude Code command hook. It reads the hook's JSON from stdin (`cwd`,
//!   `hook_event_name`, `session_id`, `source`, ...) and prints
//!   `{"hookSpecificOutput":{"hookEventName":<event>,"additionalContext":<text>}}` (Claude Code adds
//!   `additionalContext` to the model's context). What `<text>` is follows `memory.injection.mode` (spec 001 "When
//!   the view changes"):
//!   - `SessionStart` (sources startup, resume, clear and compact alike): the block (`block`), the journal's view
//!     of the hook's project (`view`) or both; with the view, the view taken is recorded as the snapshot of the
//!     hook's `session_id`, so it holds still until the next SessionStart (a resume, clear or compact rebuilds it);
//!   - `UserPromptSubmit`: the block (`block`, `both`) and, with the view, a `# Memory updated` reminder listing one
//!     row per journal entry written since the snapshot by someone else (`- <id>+1 note <key>: <first line>`),
//!     each entry once; entries written from this terminal (`CAO_TERMINAL_ID`, else `CAO_SESSION_NAME`) are left
//!     out. With `memory.decisions.recall = advise` and a configured model, a `# Memory advice` reminder follows,
//!     naming up to 3 memories the model finds relevant to the hook's `prompt`, each once per `session_id`
//!     (`MemoryService::advise`, within `memory.decisions.timeout_ms`; nothing when the model fails).
//!
//!   It never fails the hook: any problem (bad JSON, unknown event, unreadable store) is logged on stderr, nothing
//!   is printed, and the exit code is 0, because exit code 2 would block the user's prompt. Claude Code's
//!   `session_id` names the snapshot only; the session scope of memories comes from `CAO_SESSION_NAME` when cao
//!   started the terminal. With a remote memory owner (`CAO_MEMORY_API_URL`) the hook prints the owner's context
//!   (which follows the owner's mode) and keeps no snapshot: snapshots and reminders live with the local journal.
//!
//! Neither command creates the store: when the memory directory does not exist there is nothing to inject. With
//! `CAO_MEMORY_API_URL` set (and memory enabled locally) the block comes from that memory owner ([`crate::remote`]).

use crate::error::CliError;
use crate::output::emit;
use cao_core::{CaoHome, Settings, TerminalContext};
use cao_memory::{ContextRequest, JournalTarget, MemoryService, WriterFilter};
use clap::{Args, Subcommand};
use std::io::{Read, Write};
use std::path::PathBuf;

/// Largest hook input read from stdin; Claude Code's payloads are far smaller (the prompt is the largest field).
pub(crate) const MAX_HOOK_INPUT_BYTES: u64 = 8 * 1024 * 1024;

/// Arguments of `cao memory context`.
#[derive(Debug, Args)]
pub(crate) struct ContextArgs {
    /// A terminal registered with cao-server (`POST /terminals`): its session, agent profile and cwd are used.
    /// Excludes --session, --agent and --cwd.
    #[arg(long, value_name = "ID", value_parser = clap::builder::NonEmptyStringValueParser::new(),
        conflicts_with_all = ["session", "agent", "cwd"])]
    pub terminal_id: Option<String>,
    /// Session name (scope id of session memories); default `$CAO_SESSION_NAME`.
    #[arg(long, value_name = "S")]
    pub session: Option<String>,
    /// Agent profile; default `$CAO_AGENT_PROFILE`. Agent memories are not injected; the profile only
    /// identifies the caller.
    #[arg(long, value_name = "A")]
    pub agent: Option<String>,
    /// Working directory the project is derived from; default the current directory.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Explicit project id; default `$CAO_PROJECT_ID`, then `memory.project_id`, git remote, cwd hash.
    #[arg(long, value_name = "P")]
    pub project_id: Option<String>,
    /// Total character budget, 1-1000000 (the HTTP context routes' rule); each of the three scopes gets
    /// min(1000, N / 3).
    #[arg(long, value_name = "N", default_value_t = cao_memory::DEFAULT_CONTEXT_BUDGET, value_parser = parse_budget)]
    pub budget: usize,
}

/// `--budget`: an integer checked by [`cao_memory::validate_context_budget`], the one budget rule (a bad value is a
/// usage error, exit 2).
pub(crate) fn parse_budget(raw: &str) -> Result<usize, String> {
    let n: i64 = raw.trim().parse().map_err(|e| format!("not an integer: {e}"))?;
    cao_memory::validate_context_budget(n).map_err(|e| e.to_string())
}

/// `cao memory hook <agent-cli>`.
#[derive(Debug, Subcommand)]
pub(crate) enum HookCommand {
    /// Claude Code command hook for SessionStart and UserPromptSubmit: reads the hook JSON on stdin and prints
    /// the additionalContext JSON. Never blocks the prompt: problems are logged on stderr with exit 0.
    ClaudeCode(ClaudeCodeHookArgs),
}

/// Arguments of `cao memory hook claude-code`.
#[derive(Debug, Args)]
pub(crate) struct ClaudeCodeHookArgs {
    /// The hook event (SessionStart or UserPromptSubmit); default the input's `hook_event_name`.
    pub event: Option<String>,
}

/// Claude Code hook events that can add context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClaudeEvent {
    SessionStart,
    UserPromptSubmit,
}

impl ClaudeEvent {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "SessionStart" => Some(Self::SessionStart),
            "UserPromptSubmit" => Some(Self::UserPromptSubmit),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::SessionStart => "SessionStart",
            Self::UserPromptSubmit => "UserPromptSubmit",
        }
    }
}

/// Run `cao memory context`: print the block for the caller, or nothing.
///
/// Errors: an invalid project id, an unreadable index, or a failed write to `out` (exit 1).
pub(crate) fn run_context(args: ContextArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let home = CaoHome::from_env();
    let mut ctx = match &args.terminal_id {
        Some(id) => match registered_terminal(&home, id)? {
            Some(ctx) => ctx,
            None => return Ok(()),
        },
        None => TerminalContext::from_env(),
    };
    if let Some(s) = args.session {
        ctx.session_name = Some(s);
    }
    if let Some(a) = args.agent {
        ctx.agent_profile = Some(a);
    }
    if let Some(c) = args.cwd {
        ctx.cwd = Some(c);
    }
    if let Some(p) = args.project_id {
        ctx.project_id = Some(p);
    }
    if let Some(block) = build(home, &ctx, args.budget)? {
        emit(out, &format!("{block}\n"))?;
    }
    Ok(())
}

/// The context of the terminal `id` registered with `POST /terminals`; `None` when memory is disabled (nothing is
/// injected, so nothing is looked up).
///
/// Errors: no such terminal, or no store at all (exit 1); an unreadable index.
fn registered_terminal(home: &CaoHome, id: &str) -> Result<Option<TerminalContext>, CliError> {
    if !Settings::load(home).memory_enabled() {
        tracing::info!("memory is disabled (memory.enabled / CAO_MEMORY_ENABLED); no context");
        return Ok(None);
    }
    let unknown = || {
        CliError::failure_with_hint(
            format!("unknown terminal {id:?}"),
            "register it with cao-server (POST /terminals), or pass --session/--agent/--cwd",
        )
    };
    if !home.memory_dir().is_dir() {
        return Err(unknown());
    }
    let svc = MemoryService::open(home.clone())?;
    let row = svc.terminal(id)?;
    Ok(Some(row.ok_or_else(unknown)?.context()))
}

/// [`run_hook`] with this process's stdin as the input (empty when stdin is a terminal, so a manual run never
/// waits). Always `Ok`.
pub(crate) fn run_hook_stdin(cmd: HookCommand, out: &mut dyn Write) -> Result<(), CliError> {
    use std::io::IsTerminal;
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        run_hook(cmd, &mut std::io::empty(), out)
    } else {
        run_hook(cmd, &mut stdin.lock(), out)
    }
}

/// Run `cao memory hook ...`. Always `Ok`: a hook must not fail the agent CLI; problems are logged.
pub(crate) fn run_hook(cmd: HookCommand, input: &mut dyn Read, out: &mut dyn Write) -> Result<(), CliError> {
    match cmd {
        HookCommand::ClaudeCode(args) => match claude_code(args.event.as_deref(), input, CaoHome::from_env()) {
            Ok(Some(json)) => {
                if let Err(e) = emit(out, &format!("{json}\n")) {
                    tracing::warn!(error = ?e, "cao memory hook: could not write the hook output");
                }
            }
            Ok(None) => {}
            Err(reason) => tracing::warn!("cao memory hook claude-code: {reason}; no context added"),
        },
    }
    Ok(())
}

/// The hook output for Claude Code, `None` when there is nothing to add.
///
/// Errors: a one-line reason (bad input, unknown event, store error) for the log.
fn claude_code(event_arg: Option<&str>, input: &mut dyn Read, home: CaoHome) -> Result<Option<String>, String> {
    let mut raw = Vec::new();
    input
        .take(MAX_HOOK_INPUT_BYTES)
        .read_to_end(&mut raw)
        .map_err(|e| format!("cannot read the hook input on stdin: {e}"))?;
    let payload: serde_json::Value = if raw.iter().all(u8::is_ascii_whitespace) {
        serde_json::Value::Object(serde_json::Map::new())
    } else {
        serde_json::from_slice(&raw).map_err(|e| format!("the hook input on stdin is not JSON: {e}"))?
    };
    let event_name = event_arg
        .or_else(|| payload.get("hook_event_name").and_then(serde_json::Value::as_str))
        .ok_or("no event: pass SessionStart or UserPromptSubmit, or send hook_event_name on stdin")?;
    let event = ClaudeEvent::parse(event_name)
        .ok_or_else(|| format!("unsupported hook event {event_name:?}; expected SessionStart or UserPromptSubmit"))?;
    let mut ctx = TerminalContext::from_env();
    if let Some(cwd) = payload
        .get("cwd")
        .and_then(serde_json::Value::as_str)
        .filter(|c| !c.is_empty())
    {
        ctx.cwd = Some(PathBuf::from(cwd));
    }
    let session_id = payload
        .get("session_id")
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty());
    let prompt = payload
        .get("prompt")
        .and_then(serde_json::Value::as_str)
        .filter(|p| !p.trim().is_empty());
    let text = hook_text(home, &ctx, event, session_id, prompt).map_err(|e| match e {
        CliError::Failure { message, .. } | CliError::Usage(message) => message,
        CliError::Aborted => "aborted".to_owned(),
    })?;
    Ok(text.map(|b| {
        serde_json::json!({
            "hookSpecificOutput": {
                "hookEventName": event.name(),
                "additionalContext": b,
            }
        })
        .to_string()
    }))
}

/// What a hook event adds to the session (see the module documentation), `None` when nothing.
///
/// Errors: an invalid project or session id, an unreadable store.
fn hook_text(
    home: CaoHome,
    ctx: &TerminalContext,
    event: ClaudeEvent,
    session_id: Option<&str>,
    prompt: Option<&str>,
) -> Result<Option<String>, CliError> {
    let budget = cao_memory::DEFAULT_CONTEXT_BUDGET;
    let settings = Settings::load(&home);
    if !settings.memory_enabled() {
        tracing::info!("memory is disabled (memory.enabled / CAO_MEMORY_ENABLED); no context");
        return Ok(None);
    }
    if let Some(owner) = crate::remote::owner()? {
        return crate::remote::block(owner, ctx, budget).map_err(CliError::failure);
    }
    if !home.memory_dir().is_dir() {
        return Ok(None);
    }
    let svc = MemoryService::open(home)?.with_settings(settings.clone());
    let req = ContextRequest {
        budget: Some(budget),
        session_id: session_id.map(str::to_owned),
        block_only: false,
    };
    match event {
        ClaudeEvent::SessionStart => Ok(svc.context_block(ctx, req)?),
        ClaudeEvent::UserPromptSubmit => {
            let mode = settings.injection_mode();
            let block = svc.context_block(
                ctx,
                ContextRequest {
                    block_only: true,
                    ..req
                },
            )?;
            let reminder = match session_id {
                Some(id) if mode.view() => svc
                    .session(ctx, &JournalTarget::default(), id)
                    .reminder(own_writes(ctx).as_ref())?,
                _ => None,
            };
            let advice = match prompt {
                Some(message) if settings.decisions_recall_advised() => {
                    let req = cao_memory::AdviseArgs {
                        message: message.to_owned(),
                        conversation_id: session_id.map(str::to_owned),
                    };
                    // Advice failing adds nothing; the block and the reminder are still given.
                    svc.advise(ctx, &req).map_or_else(
                        |e| {
                            tracing::warn!(error = %e, "no memory advice for this prompt");
                            None
                        },
                        |a| a.reminder,
                    )
                }
                _ => None,
            };
            let parts: Vec<String> = [block, reminder, advice].into_iter().flatten().collect();
            Ok((!parts.is_empty()).then(|| parts.join("\n\n")))
        }
    }
}

/// The entries a reminder leaves out as this terminal's own: those written with its terminal id, else with its
/// session name; `None` (nothing left out) when neither is known.
fn own_writes(ctx: &TerminalContext) -> Option<WriterFilter> {
    match (&ctx.terminal_id, &ctx.session_name) {
        (Some(t), _) => Some(WriterFilter {
            terminal_id: Some(t.clone()),
            ..WriterFilter::default()
        }),
        (None, Some(s)) => Some(WriterFilter {
            session: Some(s.clone()),
            ..WriterFilter::default()
        }),
        (None, None) => None,
    }
}

/// The block for `ctx`, or `None` when memory is disabled or nothing is stored yet (the store is not created).
fn build(home: CaoHome, ctx: &TerminalContext, budget: usize) -> Result<Option<String>, CliError> {
    if !Settings::load(&home).memory_enabled() {
        tracing::info!("memory is disabled (memory.enabled / CAO_MEMORY_ENABLED); no context");
        return Ok(None);
    }
    if let Some(owner) = crate::remote::owner()? {
        return crate::remote::block(owner, ctx, budget).map_err(CliError::failure);
    }
    if !home.memory_dir().is_dir() {
        return Ok(None);
    }
    let svc = MemoryService::open(home)?;
    Ok(svc.context_block(
        ctx,
        ContextRequest {
            budget: Some(budget),
            ..Default::default()
        },
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(event: Option<&str>, stdin: &str) -> Result<Option<String>, String> {
        let dir = std::env::temp_dir().join("cao-cli-hook-unit-nonexistent-home");
        claude_code(event, &mut stdin.as_bytes(), CaoHome::new(dir))
    }

    #[test]
    fn hook_input_problems_are_reasons_not_panics() {
        assert!(hook(None, "{not json").expect_err("bad json").contains("not JSON"));
        assert!(hook(None, "{}").expect_err("no event").contains("no event"));
        let e = hook(Some("Stop"), "{}").expect_err("unsupported");
        assert!(e.contains("\"Stop\""), "{e}");
        let e = hook(None, r#"{"hook_event_name":"PreToolUse"}"#).expect_err("unsupported");
        assert!(e.contains("PreToolUse"), "{e}");
    }

    #[test]
    fn known_events_without_a_store_add_nothing() {
        assert_eq!(hook(Some("SessionStart"), ""), Ok(None));
        assert_eq!(
            hook(None, r#"{"hook_event_name":"UserPromptSubmit","cwd":"/tmp"}"#),
            Ok(None)
        );
    }
}
