//! The command-line grammar (clap derive). Every value with a closed set of spellings (scope, type, format) is a
//! [`clap::ValueEnum`], so a bad spelling is a usage error (exit 2) reported by clap before any I/O.

use cao_core::{MemoryType, Scope};
use clap::{Args, Parser, Subcommand, ValueEnum};

/// Largest accepted `--limit` of `cao memory list`.
pub const MAX_LIST_LIMIT: u64 = 10_000;

/// cao: persistent memory for CLI coding agents.
///
/// Works directly on the local store (`$CAO_HOME`, default `~/.aws/cli-agent-orchestrator`); no server needed.
/// Logs go to stderr; set CAO_LOG_LEVEL (error, warn, info, debug, trace; default warn).
#[derive(Debug, Parser)]
#[command(name = "cao", version, propagate_version = true, arg_required_else_help = true)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inspect and maintain stored memories.
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// Show and change settings (settings.json; CAO_* environment variables override it).
    #[command(subcommand)]
    Config(crate::config::ConfigCommand),
}

/// `cao memory ...`.
#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// List memories (global + current project by default; --all for every project, session and agent).
    List(ListArgs),
    /// Show the full content of one memory.
    Show(ShowArgs),
    /// Delete one memory.
    Delete(DeleteArgs),
    /// Delete every memory of one scope visible from here.
    Clear(ClearArgs),
    /// Rebuild the index from the wiki files (adopting a reference database) and report what changed.
    Repair(RepairArgs),
    /// Inspect and curate typed relationships between memories.
    #[command(subcommand)]
    Relationships(crate::relationships::RelationshipsCommand),
    /// Print the <cao-memory> context block for a new session (nothing when empty).
    Context(crate::context::ContextArgs),
    /// Entry points for agent CLI hooks that inject the context block.
    #[command(subcommand)]
    Hook(crate::context::HookCommand),
    /// Write the <cao-memory> block into a provider's config file in DIR.
    ///
    /// claude_code: DIR/.claude/CLAUDE.md and codex: DIR/AGENTS.md (only the delimited block changes); kiro_cli:
    /// DIR/.kiro/steering/cao-memory.md (the whole file).
    Inject(crate::inject::InjectArgs),
    /// Remove expired memories now (project: 90 days after the last update, session: 14 days; user and feedback
    /// memories never expire).
    Cleanup(crate::cleanup::CleanupArgs),
}

/// Arguments of `cao memory list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// List every project, session and agent, not only the current ones.
    #[arg(long)]
    pub all: bool,
    /// Only this scope.
    #[arg(long, value_enum, value_name = "SCOPE")]
    pub scope: Option<ScopeArg>,
    /// Only this memory type.
    #[arg(long = "type", value_enum, value_name = "TYPE")]
    pub memory_type: Option<TypeArg>,
    /// Maximum number of memories listed.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=MAX_LIST_LIMIT))]
    pub limit: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
}

/// Arguments of `cao memory show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The memory key (`^[a-z0-9-]{1,60}$`).
    pub key: String,
    /// Only look in this scope (default: every scope, in precedence order).
    #[arg(long, value_enum, value_name = "SCOPE")]
    pub scope: Option<ScopeArg>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TextFormat::Text)]
    pub format: TextFormat,
}

/// Arguments of `cao memory delete`.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// The memory key (`^[a-z0-9-]{1,60}$`).
    pub key: String,
    /// The scope to delete from.
    #[arg(long, value_enum, value_name = "SCOPE", default_value_t = ScopeArg::Project)]
    pub scope: ScopeArg,
    /// Do not ask for confirmation (required when stdin is not a terminal).
    #[arg(short = 'y', long)]
    pub yes: bool,
}

/// Arguments of `cao memory clear`.
#[derive(Debug, Args)]
pub struct ClearArgs {
    /// The scope to clear.
    #[arg(long, value_enum, value_name = "SCOPE")]
    pub scope: ScopeArg,
    /// Do not ask for confirmation (required when stdin is not a terminal).
    #[arg(short = 'y', long)]
    pub yes: bool,
}

/// Arguments of `cao memory repair`.
#[derive(Debug, Args)]
pub struct RepairArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = TextFormat::Text)]
    pub format: TextFormat,
}

/// A scope as spelled on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScopeArg {
    /// Cross-project facts.
    Global,
    /// Facts of the current project.
    Project,
    /// Notes of one session.
    Session,
    /// Patterns of one agent profile.
    Agent,
    /// The machine-wide shared tier.
    Federated,
}

impl From<ScopeArg> for Scope {
    fn from(s: ScopeArg) -> Self {
        match s {
            ScopeArg::Global => Scope::Global,
            ScopeArg::Project => Scope::Project,
            ScopeArg::Session => Scope::Session,
            ScopeArg::Agent => Scope::Agent,
            ScopeArg::Federated => Scope::Federated,
        }
    }
}

/// A memory type as spelled on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TypeArg {
    /// Architecture notes, conventions.
    Project,
    /// User preferences.
    User,
    /// Corrections, mistakes to avoid.
    Feedback,
    /// Pointers to external resources.
    Reference,
}

impl From<TypeArg> for MemoryType {
    fn from(t: TypeArg) -> Self {
        match t {
            TypeArg::Project => MemoryType::Project,
            TypeArg::User => MemoryType::User,
            TypeArg::Feedback => MemoryType::Feedback,
            TypeArg::Reference => MemoryType::Reference,
        }
    }
}

/// Output format of `list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// Aligned columns, as the reference CLI prints them.
    Table,
    /// A pretty-printed JSON array of memory objects.
    Json,
}

/// Output format of `show` and `repair`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TextFormat {
    /// Human-readable text.
    Text,
    /// Pretty-printed JSON.
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn grammar_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn value_enums_cover_every_domain_value_with_its_wire_name() {
        for s in ScopeArg::value_variants() {
            let name = s.to_possible_value().map(|p| p.get_name().to_owned());
            assert_eq!(name.as_deref(), Some(Scope::from(*s).as_str()));
        }
        assert_eq!(ScopeArg::value_variants().len(), Scope::ALL.len());
        for t in TypeArg::value_variants() {
            let name = t.to_possible_value().map(|p| p.get_name().to_owned());
            assert_eq!(name.as_deref(), Some(MemoryType::from(*t).as_str()));
        }
        assert_eq!(TypeArg::value_variants().len(), MemoryType::ALL.len());
    }

    #[test]
    fn bad_values_are_usage_errors() {
        for argv in [
            &["cao", "memory", "list", "--scope", "user"][..],
            &["cao", "memory", "list", "--type", "Project"],
            &["cao", "memory", "list", "--limit", "0"],
            &["cao", "memory", "list", "--format", "yaml"],
            &["cao", "memory", "clear"],
            &["cao", "memory", "show"],
        ] {
            let err = Cli::try_parse_from(argv).expect_err("must be rejected");
            assert_eq!(err.exit_code(), 2, "{argv:?}");
        }
    }
}
