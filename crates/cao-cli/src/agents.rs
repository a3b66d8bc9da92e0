//! `cao agents ...`: the agent profiles the self-learning loop uses (spec 004 "The retrospector agent"):
//! profiles in the configured agent directories (`agents.dirs`, default `$CAO_HOME/agent-store`) and the built-in
//! `retrospector` and `memory_manager`.
//!
//! - `list [--format table|json]`: every visible profile (a directory's file shadows a later one and a built-in of
//!   the same name), with its source, capabilities and description; a file that cannot be read is listed with its
//!   error. JSON: `cao.agents/1` (docs/schemas/cao.agents-1.json).
//! - `show <name> [--format text|json]`: one profile with its text.
//! - `install <name>`: copy a built-in profile into the first agent directory, refusing to overwrite a file.
//! - `skill <name>`: print a built-in skill's text (`cao-learning`).
//!
//! None of these opens the memory store; they read `settings.json` for the agent directories only.

use crate::cli::{ListFormat, TextFormat};
use crate::error::CliError;
use crate::output::{self, emit, one_line};
use cao_core::{CaoHome, Settings};
use cao_learn::profile::{self, AgentProfile, ProfileSource};
use cao_learn::{builtin, profile_file};
use clap::{Args, Subcommand};
use serde::Serialize;
use std::fmt::Write as _;
use std::io::Write;

/// The schema name of `cao agents list --format json`.
pub(crate) const AGENTS_SCHEMA: &str = "cao.agents/1";

/// `cao agents ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum AgentsCommand {
    /// List agent profiles: the agent directories (agents.dirs) and the built-ins.
    List(AgentsListArgs),
    /// Show one agent profile.
    Show(AgentsShowArgs),
    /// Copy a built-in profile (retrospector, memory_manager) into the first agent directory.
    Install(AgentsInstallArgs),
    /// Print a built-in skill (cao-learning).
    Skill(AgentsSkillArgs),
}

/// Arguments of `cao agents list`.
#[derive(Debug, Args)]
pub(crate) struct AgentsListArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
}

/// Arguments of `cao agents show`.
#[derive(Debug, Args)]
pub(crate) struct AgentsShowArgs {
    /// The profile name.
    pub name: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TextFormat::Text)]
    pub format: TextFormat,
}

/// Arguments of `cao agents install`.
#[derive(Debug, Args)]
pub(crate) struct AgentsInstallArgs {
    /// The built-in profile to copy.
    pub name: String,
}

/// Arguments of `cao agents skill`.
#[derive(Debug, Args)]
pub(crate) struct AgentsSkillArgs {
    /// The skill name.
    pub name: String,
}

/// One profile in JSON output.
#[derive(Debug, Serialize)]
struct AgentView {
    name: String,
    source: &'static str,
    path: Option<String>,
    description: Option<String>,
    capabilities: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
}

fn view(p: &AgentProfile, with_text: bool) -> AgentView {
    let (source, path) = match &p.source {
        ProfileSource::Builtin => ("builtin", None),
        ProfileSource::File(path) => ("file", Some(path.display().to_string())),
    };
    AgentView {
        name: p.name.clone(),
        source,
        path,
        description: p.description.clone(),
        capabilities: p.capabilities.clone(),
        error: None,
        text: with_text.then(|| p.text.clone()),
    }
}

/// Run one `cao agents` subcommand, writing its result to `out`.
///
/// Errors: a usage error (exit 2) for an invalid name; a failure (exit 1) for an unknown profile or skill, an
/// unreadable directory or profile, or an install onto an existing file.
pub(crate) fn run(cmd: AgentsCommand, out: &mut dyn Write) -> Result<(), CliError> {
    let home = CaoHome::from_env();
    let dirs = Settings::load(&home).agent_dirs(&home);
    let fail = |e: cao_learn::LearnError| CliError::failure(e.to_string());
    match cmd {
        AgentsCommand::List(a) => {
            let listed = profile::list(&dirs).map_err(fail)?;
            let views: Vec<AgentView> = listed
                .iter()
                .map(|l| match &l.profile {
                    Ok(p) => view(p, false),
                    Err(e) => AgentView {
                        name: l.name.clone(),
                        source: "file",
                        path: None,
                        description: None,
                        capabilities: Vec::new(),
                        error: Some(e.clone()),
                        text: None,
                    },
                })
                .collect();
            let text = match a.format {
                ListFormat::Json => {
                    #[derive(Serialize)]
                    struct Doc<'a> {
                        schema: &'static str,
                        dirs: Vec<String>,
                        agents: &'a [AgentView],
                    }
                    output::json(&Doc {
                        schema: AGENTS_SCHEMA,
                        dirs: dirs.iter().map(|d| d.display().to_string()).collect(),
                        agents: &views,
                    })
                    .map_err(CliError::failure)?
                }
                ListFormat::Table => agents_table(&views),
            };
            emit(out, &text)
        }
        AgentsCommand::Show(a) => {
            profile::validate_name(&a.name).map_err(|e| CliError::Usage(e.to_string()))?;
            let Some(p) = profile::find(&a.name, &dirs).map_err(fail)? else {
                return Err(CliError::failure(format!(
                    "no agent profile {}: not in {} and not a built-in",
                    a.name,
                    dirs_text(&dirs)
                )));
            };
            let text = match a.format {
                TextFormat::Json => output::json(&view(&p, true)).map_err(CliError::failure)?,
                TextFormat::Text => {
                    let v = view(&p, false);
                    let mut s = String::new();
                    let _ = writeln!(s, "Name:         {}", v.name);
                    let _ = writeln!(
                        s,
                        "Source:       {}",
                        v.path.as_deref().map_or("builtin".to_owned(), one_line)
                    );
                    let _ = writeln!(s, "Capabilities: {}", caps(&v.capabilities));
                    let _ = writeln!(s, "Description:  {}", one_line(v.description.as_deref().unwrap_or("")));
                    s.push('\n');
                    s.push_str(&p.text);
                    if !p.text.ends_with('\n') {
                        s.push('\n');
                    }
                    s
                }
            };
            emit(out, &text)
        }
        AgentsCommand::Install(a) => {
            profile::validate_name(&a.name).map_err(|e| CliError::Usage(e.to_string()))?;
            let Some(b) = builtin::get(&a.name) else {
                let names: Vec<&str> = builtin::ALL.iter().map(|b| b.name).collect();
                return Err(CliError::failure(format!(
                    "{} is not a built-in profile (built-ins: {})",
                    a.name,
                    names.join(", ")
                )));
            };
            let Some(dir) = dirs.first() else {
                return Err(CliError::failure("no agent directory is configured (agents.dirs)"));
            };
            let path = profile_file::install(dir, b.name, b.text).map_err(fail)?;
            emit(out, &format!("Installed {} to {}\n", b.name, path.display()))
        }
        AgentsCommand::Skill(a) => {
            let Some(s) = builtin::skill(&a.name) else {
                let names: Vec<&str> = builtin::SKILLS.iter().map(|b| b.name).collect();
                return Err(CliError::failure(format!(
                    "no built-in skill {:?} (skills: {})",
                    one_line(&a.name),
                    names.join(", ")
                )));
            };
            emit(out, s.text)
        }
    }
}

fn caps(c: &[String]) -> String {
    if c.is_empty() {
        "-".to_owned()
    } else {
        c.iter().map(|s| one_line(s)).collect::<Vec<_>>().join(",")
    }
}

fn dirs_text(dirs: &[std::path::PathBuf]) -> String {
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `cao agents list` table: `NAME SOURCE CAPABILITIES DESCRIPTION` (source `builtin` or the file's path).
fn agents_table(views: &[AgentView]) -> String {
    let header = format!(
        "{:<20} {:<40} {:<16} {}",
        "NAME", "SOURCE", "CAPABILITIES", "DESCRIPTION"
    );
    let mut out = format!("{header}\n{}\n", "-".repeat(header.len()));
    for v in views {
        let source = v.path.as_deref().map_or("builtin".to_owned(), one_line);
        let desc = match &v.error {
            Some(e) => format!("error: {}", one_line(e)),
            None => one_line(v.description.as_deref().unwrap_or("")),
        };
        let _ = writeln!(
            out,
            "{:<20} {:<40} {:<16} {}",
            one_line(&v.name),
            source,
            caps(&v.capabilities),
            desc
        );
    }
    out
}
