//! `cao setup <claude-code|codex|kiro>`: wire an agent CLI to cao in the agent's own config files, or take the
//! wiring out again (`--remove`).
//!
//! What is written, per agent and `--scope` (default `user`; `DIR` is the current directory, `~` is `$HOME`):
//!
//! | agent | scope | MCP server `cao-memory` | hooks (`cao memory hook claude-code <event>`) |
//! |---|---|---|---|
//! | claude-code | user | `~/.claude.json` `mcpServers` | `~/.claude/settings.json` |
//! | claude-code | local | `~/.claude.json` `projects[<project>].mcpServers` | `DIR/.claude/settings.local.json` |
//! | claude-code | project | `DIR/.mcp.json` `mcpServers` | `DIR/.claude/settings.json` |
//! | codex | user | `~/.codex/config.toml` `[mcp_servers.cao-memory]` | `~/.codex/hooks.json` |
//! | codex | project | `DIR/.codex/config.toml` | `DIR/.codex/hooks.json` |
//! | kiro | user | `~/.kiro/settings/mcp.json` `mcpServers` | none |
//! | kiro | project | `DIR/.kiro/settings/mcp.json` | the steering file `DIR/.kiro/steering/cao-memory.md` |
//!
//! (`$CLAUDE_CONFIG_DIR` and `$CODEX_HOME` move the user files as they move the agents'. Claude Code's `<project>`
//! is the repository root, the main checkout's for a git worktree, else the directory, as `claude mcp add --scope
//! local` keys it.) The hooks follow `--mode`: `SessionStart` for `block`, `SessionStart` and `UserPromptSubmit`
//! for `view` and `both` (the reminder of other sessions' writes); a given `--mode` is pinned into the hook commands
//! and the stdio server's environment (`CAO_MEMORY_INJECTION_MODE`), without it they follow
//! `memory.injection.mode`. `--transport http` points the agent at `cao-server`'s `/mcp` (`--url`, default
//! `http://127.0.0.1:9889/mcp`) with the agent's directory in `X-CAO-Cwd` (`${PWD}`, which Claude Code and Kiro
//! expand, or Codex's `env_http_headers`), so one entry serves every project.
//!
//! Invariants:
//! - Files are edited with real parsers and spliced, never re-rendered (`json_text`, `toml_text`): the user's
//!   other content, key order, comments, indentation and line endings stay as they were, and `--remove` after
//!   setup gives back every file byte for byte (a file setup created is deleted again), except that a container
//!   that was empty before setup (`"mcpServers": {}`) goes with the entry.
//! - Idempotent: a run that finds everything in place changes nothing ("unchanged").
//! - What is ours: the `cao-memory` MCP entry, hook groups holding exactly one hook whose command is
//!   `[VAR=value ...] <path>/cao memory hook claude-code <event>`, and Kiro's steering file (cao's alone, as for
//!   `cao memory inject`). A hook group that runs cao among other hooks is left alone and named in a note.
//! - All or nothing before writing: every file is read (at most 32 MiB, UTF-8) and checked first; one that is not
//!   valid JSON or TOML, or holds something of the wrong kind where the entry goes, is refused with its path and the
//!   parse error's line and column, and nothing is written (exit 1). Writes are atomic (`cao_core::fs`), keep an
//!   existing file's mode and go through a symlink to its target.
//! - It never approves on the user's behalf: Claude Code asks each user to approve a project's `.mcp.json` servers,
//!   Codex to trust new hooks and a project's `.codex/`; setup says so.
//! - `--dry-run` prints the unified diff of every file it would change and writes nothing.
//!
//! Output: one line per file (`created|changed|unchanged|deleted|absent: <path> (<what>)`) then `note:` lines; with
//! `--format json` the `cao.setup/1` object (docs/schemas/cao.setup-1.json).

pub(crate) mod json_text;
mod toml_text;

use crate::cli::TextFormat;
use crate::error::CliError;
use crate::output::emit;
use cao_core::settings::InjectionMode;
use cao_core::{CaoHome, Settings, TerminalContext};
use clap::{Args, ValueEnum};
use json_text::Node;
use serde::Serialize;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The MCP server name setup gives cao (as in the README).
pub(crate) const SERVER: &str = "cao-memory";
/// `--url` when none is given: `cao-server`'s default address.
pub(crate) const DEFAULT_URL: &str = "http://127.0.0.1:9889/mcp";
/// Largest config file setup reads.
const MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;
/// The variables Codex forwards to `cao-mcp-server` (it starts MCP servers with a reduced environment): the home,
/// the terminal context of a cao-started terminal, the remote memory owner.
const CODEX_ENV_VARS: [&str; 8] = [
    "CAO_HOME",
    "CAO_SESSION_NAME",
    "CAO_AGENT_PROFILE",
    "CAO_TERMINAL_ID",
    "CAO_PROVIDER",
    "CAO_PROJECT_ID",
    "CAO_MEMORY_API_URL",
    "CAO_MEMORY_API_TOKEN",
];
/// The hook events setup registers.
const EVENTS: [&str; 2] = ["SessionStart", "UserPromptSubmit"];

/// Arguments of `cao setup`.
#[derive(Debug, Args)]
pub(crate) struct SetupArgs {
    /// The agent CLI to wire.
    #[arg(value_enum)]
    pub agent: AgentArg,
    /// Whose config: user (every project), project (this directory, shared through the repository) or local (this
    /// directory, this user; Claude Code only).
    #[arg(long, value_enum, default_value_t = ScopeArg::User)]
    pub scope: ScopeArg,
    /// How the agent reaches cao: stdio (a cao-mcp-server per session) or http (a running cao-server).
    #[arg(long, value_enum, conflicts_with = "remove")]
    pub transport: Option<TransportArg>,
    /// cao-server's MCP URL for --transport http [default: http://127.0.0.1:9889/mcp].
    #[arg(long, value_name = "URL", conflicts_with = "remove")]
    pub url: Option<String>,
    /// What a new session starts with (memory.injection.mode), pinned into this wiring; default: follow the setting.
    #[arg(long, value_enum, conflicts_with = "remove")]
    pub mode: Option<ModeArg>,
    /// Print the diff of every file that would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Take out what setup adds (the cao-memory entry, cao's hooks, Kiro's steering file).
    #[arg(long)]
    pub remove: bool,
    /// Output format (json: the cao.setup/1 object).
    #[arg(long, value_enum, default_value_t = TextFormat::Text)]
    pub format: TextFormat,
}

/// The agent CLIs setup knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum AgentArg {
    /// Claude Code (`claude`).
    ClaudeCode,
    /// OpenAI Codex (`codex`).
    Codex,
    /// Kiro CLI (`kiro-cli`).
    Kiro,
}

/// `--scope` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ScopeArg {
    /// The user's own config, for every project.
    User,
    /// The project's config in the current directory, shared through the repository.
    Project,
    /// This user's config for the current project only (Claude Code).
    Local,
}

/// `--transport` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum TransportArg {
    /// `cao-mcp-server` started by the agent.
    Stdio,
    /// `cao-server`'s `/mcp`.
    Http,
}

/// `--mode` values (`memory.injection.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ModeArg {
    /// The `<cao-memory>` block.
    Block,
    /// The journal's view, and the reminder of other sessions' writes.
    View,
    /// The block, then the view.
    Both,
}

impl ModeArg {
    fn mode(self) -> InjectionMode {
        match self {
            ModeArg::Block => InjectionMode::Block,
            ModeArg::View => InjectionMode::View,
            ModeArg::Both => InjectionMode::Both,
        }
    }
}

/// What happened (or would happen, with `--dry-run`) to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Outcome {
    Created,
    Changed,
    Unchanged,
    Deleted,
    Absent,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Created => "created",
            Outcome::Changed => "changed",
            Outcome::Unchanged => "unchanged",
            Outcome::Deleted => "deleted",
            Outcome::Absent => "absent",
        }
    }
}

/// The syntax of a config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Syntax {
    Json,
    Toml,
}

/// One config file: its content before and after, and what changed in it.
#[derive(Debug)]
struct FileEdit {
    path: PathBuf,
    /// Where the bytes go: the path, or the target of a symlink at it.
    target: PathBuf,
    syntax: Syntax,
    before: Option<String>,
    after: Option<String>,
    changes: Vec<String>,
    /// Mode of a file setup creates: private for `~/.claude.json` (Claude Code's own choice), else as an editor.
    private: bool,
}

impl FileEdit {
    fn read(path: PathBuf, syntax: Syntax, private: bool) -> Result<FileEdit, CliError> {
        let target = match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone()),
            _ => path.clone(),
        };
        let before = match std::fs::metadata(&target) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(refusal(&path, &format!("cannot be read: {e}"))),
            Ok(m) if !m.is_file() => return Err(refusal(&path, "is not a regular file")),
            Ok(m) if m.len() > MAX_FILE_BYTES => {
                return Err(refusal(&path, &format!("is larger than {MAX_FILE_BYTES} bytes")));
            }
            Ok(_) => {
                let bytes = std::fs::read(&target).map_err(|e| refusal(&path, &format!("cannot be read: {e}")))?;
                let text = String::from_utf8(bytes).map_err(|e| {
                    refusal(
                        &path,
                        &format!("is not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
                    )
                })?;
                match syntax {
                    Syntax::Json => json_text::parse(&text).map_err(|e| refusal(&path, &e))?,
                    Syntax::Toml => toml_text::document_json(&text).map_err(|e| refusal(&path, &e))?,
                };
                Some(text)
            }
        };
        Ok(FileEdit {
            path,
            target,
            syntax,
            after: before.clone(),
            before,
            changes: Vec::new(),
            private,
        })
    }

    fn outcome(&self) -> Outcome {
        match (&self.before, &self.after) {
            (None, None) => Outcome::Absent,
            (None, Some(_)) => Outcome::Created,
            (Some(_), None) => Outcome::Deleted,
            (Some(a), Some(b)) if a == b => Outcome::Unchanged,
            _ => Outcome::Changed,
        }
    }

    /// Apply a JSON edit to the working text; `Err` names the file.
    fn json<T>(&mut self, f: impl FnOnce(Option<&str>) -> Result<T, String>) -> Result<T, CliError> {
        f(self.after.as_deref()).map_err(|e| refusal(&self.path, &e))
    }
}

/// A refusal naming `path`: nothing was written.
fn refusal(path: &Path, why: &str) -> CliError {
    CliError::failure_with_hint(
        format!("{} {why}", path.display()),
        "nothing was written; fix or move the file and run setup again",
    )
}

/// Where things go for one agent and scope.
struct Layout {
    agent: AgentArg,
    scope: ScopeArg,
    /// The current directory (the project).
    dir: PathBuf,
    /// The file and path of the MCP entry.
    server_file: PathBuf,
    server_syntax: Syntax,
    server_path: Vec<String>,
    /// The hooks file, when the agent has hooks.
    hooks_file: Option<PathBuf>,
    /// Kiro's steering file (project scope).
    steering: Option<PathBuf>,
    /// Whether the server file is `~/.claude.json`.
    private_server_file: bool,
}

fn env_dir(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

impl Layout {
    fn new(agent: AgentArg, scope: ScopeArg) -> Result<Layout, CliError> {
        let home =
            env_dir("HOME").ok_or_else(|| CliError::failure("HOME is not set: cannot find the agent's config"))?;
        let dir = std::env::current_dir()
            .and_then(std::fs::canonicalize)
            .map_err(|e| CliError::failure(format!("cannot resolve the current directory: {e}")))?;
        let server = vec!["mcpServers".to_owned(), SERVER.to_owned()];
        let layout = |server_file, server_syntax, server_path, hooks_file, steering, private_server_file| Layout {
            agent,
            scope,
            dir: dir.clone(),
            server_file,
            server_syntax,
            server_path,
            hooks_file,
            steering,
            private_server_file,
        };
        Ok(match (agent, scope) {
            (AgentArg::ClaudeCode, _) => {
                let (claude_json, settings) = match env_dir("CLAUDE_CONFIG_DIR") {
                    Some(c) => (c.join(".claude.json"), c.join("settings.json")),
                    None => (home.join(".claude.json"), home.join(".claude").join("settings.json")),
                };
                match scope {
                    ScopeArg::User => layout(claude_json, Syntax::Json, server, Some(settings), None, true),
                    ScopeArg::Local => {
                        let key = claude_project_key(&dir).to_string_lossy().into_owned();
                        let path = vec!["projects".to_owned(), key, "mcpServers".to_owned(), SERVER.to_owned()];
                        let hooks = dir.join(".claude").join("settings.local.json");
                        layout(claude_json, Syntax::Json, path, Some(hooks), None, true)
                    }
                    ScopeArg::Project => {
                        let hooks = dir.join(".claude").join("settings.json");
                        layout(dir.join(".mcp.json"), Syntax::Json, server, Some(hooks), None, false)
                    }
                }
            }
            (AgentArg::Codex, ScopeArg::Local) | (AgentArg::Kiro, ScopeArg::Local) => {
                return Err(CliError::Usage(format!(
                    "--scope local is Claude Code's; {} has user and project scopes",
                    agent_name(agent)
                )));
            }
            (AgentArg::Codex, _) => {
                let codex = match scope {
                    ScopeArg::User => env_dir("CODEX_HOME").unwrap_or_else(|| home.join(".codex")),
                    _ => dir.join(".codex"),
                };
                let path = vec!["mcp_servers".to_owned(), SERVER.to_owned()];
                layout(
                    codex.join("config.toml"),
                    Syntax::Toml,
                    path,
                    Some(codex.join("hooks.json")),
                    None,
                    false,
                )
            }
            (AgentArg::Kiro, _) => {
                let kiro = match scope {
                    ScopeArg::User => home.join(".kiro"),
                    _ => dir.join(".kiro"),
                };
                let steering = (scope == ScopeArg::Project).then(|| kiro.join("steering").join("cao-memory.md"));
                layout(
                    kiro.join("settings").join("mcp.json"),
                    Syntax::Json,
                    server,
                    None,
                    steering,
                    false,
                )
            }
        })
    }
}

/// The name of `agent` as typed.
fn agent_name(agent: AgentArg) -> &'static str {
    match agent {
        AgentArg::ClaudeCode => "claude-code",
        AgentArg::Codex => "codex",
        AgentArg::Kiro => "kiro",
    }
}

/// The key of `dir`'s entry in `~/.claude.json` `projects`: the repository's main checkout (git's common directory
/// without its `.git`, so a worktree shares its main checkout's entry), else `dir` itself; as Claude Code does.
fn claude_project_key(dir: &Path) -> PathBuf {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    let common = match out {
        Ok(o) if o.status.success() => PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()),
        _ => return dir.to_path_buf(),
    };
    match (common.file_name(), common.parent()) {
        (Some(name), Some(parent)) if name == ".git" => std::fs::canonicalize(parent).unwrap_or(parent.to_path_buf()),
        _ => dir.to_path_buf(),
    }
}

/// How to name the workspace binary `name` in a config: its bare name when `PATH` finds this very binary (the
/// usual installed case), else the absolute path of the one beside the running `cao` (a build directory, or another
/// program of that name first on `PATH`, such as the Python reference's), else the bare name.
fn command_for(name: &str) -> String {
    let sibling = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::canonicalize(p).ok())
        .and_then(|p| p.parent().map(|d| d.join(name)))
        .filter(|p| p.is_file());
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
            .and_then(|p| std::fs::canonicalize(p).ok())
    });
    match (sibling, on_path) {
        (Some(s), Some(p)) if s == p => name.to_owned(),
        (Some(s), _) => s.to_string_lossy().into_owned(),
        (None, _) => name.to_owned(),
    }
}

/// `cmd` split as a shell would, when it is `[NAME=value ...] <dir>/cao memory hook claude-code <event>`: the event.
pub(crate) fn hook_event_of(cmd: &str) -> Option<String> {
    let words = shlex::split(cmd)?;
    let mut rest = words.iter().skip_while(|w| {
        w.split_once('=')
            .is_some_and(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    });
    let program = rest.next()?;
    if Path::new(program).file_name()? != "cao" {
        return None;
    }
    let args: Vec<&str> = rest.map(String::as_str).collect();
    match args.as_slice() {
        ["memory", "hook", "claude-code", event] if EVENTS.contains(event) => Some((*event).to_owned()),
        _ => None,
    }
}

/// Whether a hook group is setup's own: exactly one hook, a command hook running `cao memory hook claude-code`.
fn is_our_group(group: &Value) -> bool {
    let Some(hooks) = group.get("hooks").and_then(Value::as_array) else {
        return false;
    };
    hooks.len() == 1
        && hooks[0]
            .get("command")
            .and_then(Value::as_str)
            .and_then(hook_event_of)
            .is_some()
}

/// Whether a hook group runs cao's hook among other hooks (left alone).
fn runs_cao_among_others(group: &Value) -> bool {
    let Some(hooks) = group.get("hooks").and_then(Value::as_array) else {
        return false;
    };
    hooks.len() > 1
        && hooks.iter().any(|h| {
            h.get("command")
                .and_then(Value::as_str)
                .and_then(hook_event_of)
                .is_some()
        })
}

/// What setup writes, computed from the arguments and the settings.
struct Wiring {
    transport: TransportArg,
    url: String,
    mode: Option<InjectionMode>,
    events: Vec<&'static str>,
    server_command: String,
    cao_command: String,
}

impl Wiring {
    fn hook_command(&self, event: &str) -> String {
        let pin = self
            .mode
            .map(|m| format!("CAO_MEMORY_INJECTION_MODE={} ", m.as_str()))
            .unwrap_or_default();
        let cao = shlex::try_quote(&self.cao_command).map_or_else(|_| self.cao_command.clone(), |c| c.into_owned());
        format!("{pin}{cao} memory hook claude-code {event}")
    }

    fn hook_group(&self, event: &str) -> Node {
        Node::obj([(
            "hooks",
            Node::Arr(vec![Node::obj([
                ("type", Node::str("command")),
                ("command", Node::str(self.hook_command(event))),
            ])]),
        )])
    }

    fn mode_env(&self) -> Node {
        Node::Obj(
            self.mode
                .map(|m| ("CAO_MEMORY_INJECTION_MODE".to_owned(), Node::str(m.as_str())))
                .into_iter()
                .collect(),
        )
    }

    /// The MCP entry for `layout`'s agent, as JSON (Claude Code, Kiro) or TOML members (Codex).
    fn server_entry(&self, layout: &Layout) -> Vec<(String, Node)> {
        // Expanded by the agent from its environment when it starts the connection: the directory it runs in.
        let cwd_header = "${PWD}";
        let members: Vec<(&str, Node)> = match (layout.agent, self.transport) {
            (AgentArg::ClaudeCode, TransportArg::Stdio) => vec![
                ("type", Node::str("stdio")),
                ("command", Node::str(&self.server_command)),
                ("args", Node::Arr(Vec::new())),
                ("env", self.mode_env()),
            ],
            (AgentArg::ClaudeCode, TransportArg::Http) => vec![
                ("type", Node::str("http")),
                ("url", Node::str(&self.url)),
                ("headers", Node::obj([("X-CAO-Cwd", Node::str(cwd_header))])),
            ],
            (AgentArg::Kiro, TransportArg::Stdio) => vec![
                ("command", Node::str(&self.server_command)),
                ("args", Node::Arr(Vec::new())),
                ("env", self.mode_env()),
            ],
            (AgentArg::Kiro, TransportArg::Http) => vec![
                ("url", Node::str(&self.url)),
                ("headers", Node::obj([("X-CAO-Cwd", Node::str(cwd_header))])),
            ],
            (AgentArg::Codex, TransportArg::Stdio) => {
                let mut m = vec![
                    ("command", Node::str(&self.server_command)),
                    (
                        "env_vars",
                        Node::Arr(CODEX_ENV_VARS.iter().map(|v| Node::str(*v)).collect()),
                    ),
                ];
                if self.mode.is_some() {
                    m.push(("env", self.mode_env()));
                }
                m
            }
            (AgentArg::Codex, TransportArg::Http) => vec![
                ("url", Node::str(&self.url)),
                ("env_http_headers", Node::obj([("X-CAO-Cwd", Node::str("PWD"))])),
            ],
        };
        members.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
    }
}

/// `--url` checked: an http(s) URL without credentials.
fn check_url(raw: &str) -> Result<String, CliError> {
    let url = url::Url::parse(raw).map_err(|e| CliError::Usage(format!("--url {raw:?} is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(CliError::Usage(format!("--url {raw:?} is not an http(s) URL")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(CliError::Usage("--url must not carry credentials".to_owned()));
    }
    Ok(raw.to_owned())
}

/// The `cao.setup/1` report.
#[derive(Debug, Serialize)]
struct Report {
    schema: &'static str,
    agent: AgentArg,
    scope: ScopeArg,
    action: &'static str,
    dry_run: bool,
    transport: Option<TransportArg>,
    mode: Option<&'static str>,
    files: Vec<FileReport>,
    notes: Vec<String>,
}

#[derive(Debug, Serialize)]
struct FileReport {
    path: String,
    outcome: Outcome,
    changes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    diff: Option<String>,
}

/// Run `cao setup`.
///
/// Errors: usage (exit 2: `--url` without `--transport http`, `--scope local` outside Claude Code, a bad URL); a
/// file that cannot be read or parsed, or holds the wrong kind where the entry goes (exit 1, nothing written); a
/// failed write.
pub(crate) fn run(args: SetupArgs, out: &mut dyn Write) -> Result<(), CliError> {
    if args.url.is_some() && args.transport != Some(TransportArg::Http) {
        return Err(CliError::Usage("--url goes with --transport http".to_owned()));
    }
    let layout = Layout::new(args.agent, args.scope)?;
    let transport = args.transport.unwrap_or(TransportArg::Stdio);
    let url = check_url(args.url.as_deref().unwrap_or(DEFAULT_URL))?;
    let effective = match args.mode {
        Some(m) => m.mode(),
        None => Settings::load(&CaoHome::from_env()).injection_mode(),
    };
    let wiring = Wiring {
        transport,
        url,
        mode: args.mode.map(ModeArg::mode),
        events: if effective.view() {
            EVENTS.to_vec()
        } else {
            vec![EVENTS[0]]
        },
        server_command: command_for("cao-mcp-server"),
        cao_command: command_for("cao"),
    };
    let mut notes = Vec::new();
    let mut files = vec![FileEdit::read(
        layout.server_file.clone(),
        layout.server_syntax,
        layout.private_server_file,
    )?];
    if let Some(h) = &layout.hooks_file {
        files.push(FileEdit::read(h.clone(), Syntax::Json, false)?);
    }
    plan_server(&layout, &wiring, args.remove, &mut files[0])?;
    if let Some(hooks) = files.get_mut(1) {
        plan_hooks(&wiring, args.remove, hooks, &mut notes)?;
    }
    notes.extend(advice(&layout, &wiring, args.remove, &files));

    let mut reports: Vec<FileReport> = files
        .iter()
        .map(|f| FileReport {
            path: f.path.display().to_string(),
            outcome: f.outcome(),
            changes: f.changes.clone(),
            diff: args.dry_run.then(|| diff(f)).filter(|d| !d.is_empty()),
        })
        .collect();
    if !args.dry_run {
        for f in &files {
            write(f)?;
        }
    }
    if let Some(path) = &layout.steering {
        reports.push(steering(&layout, path, args.remove, args.dry_run, &mut notes)?);
    }

    let report = Report {
        schema: "cao.setup/1",
        agent: args.agent,
        scope: args.scope,
        action: if args.remove { "remove" } else { "setup" },
        dry_run: args.dry_run,
        transport: (!args.remove).then_some(transport),
        mode: if args.remove {
            None
        } else {
            wiring.mode.map(InjectionMode::as_str)
        },
        files: reports,
        notes,
    };
    let text = match args.format {
        TextFormat::Json => crate::output::json(&report).map_err(CliError::failure)?,
        TextFormat::Text => render_text(&report),
    };
    emit(out, &text)
}

/// The MCP entry in the server file: set, replaced or removed.
fn plan_server(layout: &Layout, wiring: &Wiring, remove: bool, file: &mut FileEdit) -> Result<(), CliError> {
    let path: Vec<&str> = layout.server_path.iter().map(String::as_str).collect();
    let shown = match file.syntax {
        Syntax::Json => json_text::show_path(&path),
        Syntax::Toml => path.join("."),
    };
    let existed = match file.syntax {
        Syntax::Json => file
            .after
            .as_deref()
            .map(json_text::parse)
            .transpose()
            .map_err(|e| refusal(&file.path, &e))?
            .is_some_and(|v| path.iter().try_fold(&v, |v, k| v.get(*k)).is_some()),
        Syntax::Toml => match file.after.as_deref() {
            Some(t) => toml_text::table_values(t, &path)
                .map_err(|e| refusal(&file.path, &e))?
                .is_some(),
            None => false,
        },
    };
    if remove {
        let after = match (file.syntax, file.after.as_deref()) {
            (_, None) => return Ok(()),
            (Syntax::Json, Some(t)) => match json_text::remove(t, &path).map_err(|e| refusal(&file.path, &e))? {
                None => return Ok(()),
                Some(after) => after,
            },
            // A file left empty goes (setup created it, or it held nothing else).
            (Syntax::Toml, Some(t)) => match toml_text::remove(t, &path).map_err(|e| refusal(&file.path, &e))? {
                None => return Ok(()),
                Some(after) => Some(after).filter(|a| !a.is_empty()),
            },
        };
        file.after = after;
        file.changes.push(format!("{shown}: removed"));
        return Ok(());
    }
    let entry = wiring.server_entry(layout);
    let changed = match file.syntax {
        Syntax::Json => file.json(|t| json_text::set(t, &path, &Node::Obj(entry.clone())))?,
        Syntax::Toml => {
            let before = file.after.clone();
            toml_text::set(before.as_deref(), &path, &entry).map_err(|e| refusal(&file.path, &e))?
        }
    };
    if let Some(after) = changed {
        file.after = Some(after);
        file.changes
            .push(format!("{shown}: {}", if existed { "replaced" } else { "added" }));
    }
    Ok(())
}

/// The hook groups in the hooks file: ours made to match the wanted events, or all removed.
fn plan_hooks(wiring: &Wiring, remove: bool, file: &mut FileEdit, notes: &mut Vec<String>) -> Result<(), CliError> {
    for event in EVENTS {
        let path = ["hooks", event];
        let groups = file.json(|t| json_text::elements(t, &path))?;
        let ours: Vec<usize> = (0..groups.len()).filter(|&i| is_our_group(&groups[i])).collect();
        if groups.iter().any(runs_cao_among_others) {
            notes.push(format!(
                "{}: a hooks.{event} group runs cao's hook among other hooks; setup leaves it as it is",
                file.path.display()
            ));
        }
        let wanted = !remove && wiring.events.contains(&event);
        let group = wiring.hook_group(event);
        if wanted && ours.len() == 1 && groups[ours[0]] == group.to_value() {
            continue;
        }
        for &i in ours.iter().rev() {
            let text = file.after.clone().unwrap_or_default();
            file.after = json_text::remove_element(&text, &path, i).map_err(|e| refusal(&file.path, &e))?;
        }
        let mut what = if ours.is_empty() { "" } else { "removed" };
        if wanted && !groups.iter().any(runs_cao_among_others) {
            let after = file.json(|t| json_text::append(t, &path, &group))?;
            file.after = Some(after);
            what = if ours.is_empty() { "added" } else { "replaced" };
        }
        if !what.is_empty() {
            let shown = if what == "removed" {
                String::new()
            } else {
                format!(" `{}`", wiring.hook_command(event))
            };
            file.changes.push(format!("hooks.{event}: {what}{shown}"));
        }
    }
    Ok(())
}

/// The notes a user needs: approvals setup does not give, a server to start, a file left alone.
fn advice(layout: &Layout, wiring: &Wiring, remove: bool, files: &[FileEdit]) -> Vec<String> {
    let mut notes = Vec::new();
    if remove {
        return notes;
    }
    match (layout.agent, layout.scope) {
        (AgentArg::ClaudeCode, ScopeArg::Project) => notes.push(format!(
            "Claude Code asks each user to approve the servers of a project's .mcp.json: run `claude` in {} and \
             approve {SERVER} (`claude mcp list` shows it as pending until then); setup does not approve it for you",
            layout.dir.display()
        )),
        (AgentArg::Codex, scope) => {
            if files.get(1).is_some_and(|f| !f.changes.is_empty()) {
                notes.push(
                    "Codex runs a new or changed hook only once you trust it: start `codex` and trust it under \
                     \"Hooks need review\"; setup does not trust it for you"
                        .to_owned(),
                );
            }
            if scope == ScopeArg::Project {
                notes.push(format!(
                    "Codex reads {} only in a trusted project: trust {} when `codex` asks (setup does not)",
                    layout.dir.join(".codex").display(),
                    layout.dir.display()
                ));
            }
        }
        (AgentArg::Kiro, ScopeArg::User) => notes.push(
            "Kiro has no session hook: run `cao setup kiro --scope project` in a project to write its steering \
             file with the block"
                .to_owned(),
        ),
        _ => {}
    }
    if wiring.transport == TransportArg::Http {
        notes.push(format!(
            "the agent reaches cao at {}: keep `cao-server` running",
            wiring.url
        ));
    }
    if wiring.server_command == "cao-mcp-server" && wiring.transport == TransportArg::Stdio {
        let found = std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("cao-mcp-server").is_file()));
        if !found {
            notes.push("cao-mcp-server is not on PATH: install it (README \"Wiring an agent\")".to_owned());
        }
    }
    notes
}

/// Kiro's steering file: written with the block (as `cao memory inject --provider kiro_cli`), or deleted.
fn steering(
    layout: &Layout,
    path: &Path,
    remove: bool,
    dry_run: bool,
    notes: &mut Vec<String>,
) -> Result<FileReport, CliError> {
    let exists = path.is_file();
    let report = |outcome, changes: Vec<String>| FileReport {
        path: path.display().to_string(),
        outcome,
        changes,
        diff: None,
    };
    if remove {
        if !exists {
            return Ok(report(Outcome::Absent, Vec::new()));
        }
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if !text.starts_with("<cao-memory>") {
            notes.push(format!("{} does not hold cao's block; setup leaves it", path.display()));
            return Ok(report(Outcome::Unchanged, Vec::new()));
        }
        if !dry_run {
            std::fs::remove_file(path)
                .map_err(|e| CliError::failure(format!("cannot delete {}: {e}", path.display())))?;
            remove_empty_agent_dirs(path);
        }
        return Ok(report(Outcome::Deleted, vec!["steering file: removed".to_owned()]));
    }
    if dry_run {
        notes.push(format!(
            "{} would get the block of this project (as `cao memory inject --provider kiro_cli`)",
            path.display()
        ));
        return Ok(report(
            if exists { Outcome::Unchanged } else { Outcome::Absent },
            Vec::new(),
        ));
    }
    let mut ctx = TerminalContext::from_env();
    ctx.cwd = Some(layout.dir.clone());
    ctx.provider = Some("kiro_cli".to_owned());
    let provider = cao_memory::Provider::KiroCli;
    let written = crate::inject::write_block(provider, &layout.dir, &ctx, cao_memory::DEFAULT_CONTEXT_BUDGET)?;
    match written {
        cao_memory::ProviderWrite::Written { .. } => Ok(report(
            if exists { Outcome::Changed } else { Outcome::Created },
            vec!["steering file: the block".to_owned()],
        )),
        cao_memory::ProviderWrite::Unchanged { .. } => Ok(report(Outcome::Unchanged, Vec::new())),
        other => {
            notes.push(format!(
                "{}: {other}; the block is written there when something is stored (or by `cao memory inject \
                 --provider kiro_cli`)",
                path.display()
            ));
            Ok(report(
                if exists { Outcome::Unchanged } else { Outcome::Absent },
                Vec::new(),
            ))
        }
    }
}

/// The unified diff of one file's change (empty when unchanged).
fn diff(f: &FileEdit) -> String {
    let (a, b) = (f.before.as_deref().unwrap_or(""), f.after.as_deref().unwrap_or(""));
    if a == b && f.before.is_some() == f.after.is_some() {
        return String::new();
    }
    let old = if f.before.is_some() {
        f.path.display().to_string()
    } else {
        "/dev/null".to_owned()
    };
    let new = if f.after.is_some() {
        f.path.display().to_string()
    } else {
        "/dev/null".to_owned()
    };
    similar::TextDiff::from_lines(a, b)
        .unified_diff()
        .context_radius(3)
        .header(&old, &new)
        .to_string()
}

/// Write (or delete) one planned file.
fn write(f: &FileEdit) -> Result<(), CliError> {
    let fail = |e: std::io::Error| CliError::failure(format!("cannot write {}: {e}", f.path.display()));
    match (&f.before, &f.after) {
        (Some(a), Some(b)) if a == b => Ok(()),
        (None, None) => Ok(()),
        (Some(_), None) => {
            std::fs::remove_file(&f.target).map_err(fail)?;
            remove_empty_agent_dirs(&f.target);
            Ok(())
        }
        (before, Some(text)) => {
            use std::os::unix::fs::PermissionsExt;
            let mode = match (before, std::fs::metadata(&f.target)) {
                (Some(_), Ok(m)) => cao_core::fs::FileMode::Exact(m.permissions().mode() & 0o7777),
                _ if f.private => cao_core::fs::FileMode::Private,
                _ => cao_core::fs::FileMode::UmaskDefault,
            };
            if let Some(dir) = f.target.parent() {
                cao_core::fs::create_dir_all(dir).map_err(fail)?;
            }
            cao_core::fs::atomic_write_with(&f.target, text.as_bytes(), cao_core::fs::WriteOptions::with_mode(mode))
                .map_err(fail)
        }
    }
}

/// Remove the agent directories (`.claude`, `.codex`, `.kiro` and Kiro's `settings`, `steering`) that deleting
/// `file` left empty, nearest first; a directory that still holds anything stays (and so do its parents).
fn remove_empty_agent_dirs(file: &Path) {
    for dir in file.ancestors().skip(1) {
        let agent_dir = dir.file_name().is_some_and(|n| {
            [".claude", ".codex", ".kiro", "settings", "steering"]
                .iter()
                .any(|a| n == *a)
        });
        let inside_kiro = dir.parent().and_then(Path::file_name).is_some_and(|n| n == ".kiro");
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !agent_dir || (!name.starts_with('.') && !inside_kiro) || std::fs::remove_dir(dir).is_err() {
            return;
        }
    }
}

/// The text output: one line per file, the diffs of a dry run, the notes.
fn render_text(r: &Report) -> String {
    let mut s = String::new();
    for f in &r.files {
        let verb = if r.dry_run {
            match f.outcome {
                Outcome::Created => "would create",
                Outcome::Changed => "would change",
                Outcome::Deleted => "would delete",
                o => o.as_str(),
            }
        } else {
            f.outcome.as_str()
        };
        s.push_str(&format!("{verb}: {}", f.path));
        if !f.changes.is_empty() {
            s.push_str(&format!(" ({})", f.changes.join("; ")));
        }
        s.push('\n');
        if let Some(d) = &f.diff {
            s.push_str(d);
            if !d.ends_with('\n') {
                s.push('\n');
            }
        }
    }
    for n in &r.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_commands_are_recognised_with_a_path_and_a_mode_pin() {
        for (cmd, event) in [
            ("cao memory hook claude-code SessionStart", Some("SessionStart")),
            (
                "/opt/cao/bin/cao memory hook claude-code UserPromptSubmit",
                Some("UserPromptSubmit"),
            ),
            (
                "CAO_MEMORY_INJECTION_MODE=view cao memory hook claude-code SessionStart",
                Some("SessionStart"),
            ),
            ("'/a b/cao' memory hook claude-code SessionStart", Some("SessionStart")),
            ("cao memory hook claude-code Stop", None),
            ("cao memory hook claude-code SessionStart; rm -rf ~", None),
            ("caox memory hook claude-code SessionStart", None),
            ("echo cao memory hook claude-code SessionStart", None),
            ("cao memory hook claude-code", None),
        ] {
            assert_eq!(hook_event_of(cmd).as_deref(), event, "{cmd}");
        }
    }

    #[test]
    fn the_mode_pin_and_a_path_with_spaces_are_quoted_in_the_command() {
        let w = Wiring {
            transport: TransportArg::Stdio,
            url: DEFAULT_URL.to_owned(),
            mode: Some(InjectionMode::View),
            events: EVENTS.to_vec(),
            server_command: "cao-mcp-server".to_owned(),
            cao_command: "/a b/cao".to_owned(),
        };
        let cmd = w.hook_command("SessionStart");
        assert_eq!(
            cmd,
            "CAO_MEMORY_INJECTION_MODE=view '/a b/cao' memory hook claude-code SessionStart"
        );
        assert_eq!(hook_event_of(&cmd).as_deref(), Some("SessionStart"));
    }
}
