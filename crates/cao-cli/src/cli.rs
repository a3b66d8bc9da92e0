//! The command-line grammar (clap derive). Every value with a closed set of spellings (scope, type, format) is a
//! [`clap::ValueEnum`], so a bad spelling is a usage error (exit 2) reported by clap before any I/O.

use crate::error::CliError;
use cao_core::{MemoryType, Scope};
use cao_memory::{DEFAULT_EXPLAIN_LIMIT, MAX_EXPLAIN_LIMIT};
use clap::{Args, Parser, Subcommand, ValueEnum};

/// Rows the ordinary `cao memory list` shows at most (spec 000 "CLI Commands": a table of at most 100 rows).
pub(crate) const LIST_ROWS: usize = 100;

/// Largest query (bytes, after trimming) `--explain` accepts: the service's recall query maximum (4 KiB).
pub(crate) const MAX_QUERY_BYTES: usize = 4096;

/// cao: persistent memory for CLI coding agents.
///
/// Works directly on the local store (`$CAO_HOME`, default `~/.aws/cli-agent-orchestrator`); no server needed.
/// Logs go to stderr; set CAO_LOG_LEVEL (error, warn, info, debug, trace; default warn).
#[derive(Debug, Parser)]
#[command(name = "cao", version = cao_core::VERSION, propagate_version = true, arg_required_else_help = true)]
pub(crate) struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
    /// Work on the memories kept in this PostgreSQL database (what `cao-server --database-url` serves) instead of
    /// the home's files (`postgres://user@host/db`, libpq's URL rules; the password from the URL, PGPASSWORD or
    /// ~/.pgpass).
    #[arg(
        long,
        global = true,
        env = "CAO_DATABASE_URL",
        value_name = "URL",
        hide_env_values = true,
        value_parser = cao_core::DatabaseUrl::parse
    )]
    pub database_url: Option<cao_core::DatabaseUrl>,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Inspect and maintain stored memories.
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// Show and change settings (settings.json; CAO_* environment variables override it).
    #[command(subcommand)]
    Config(crate::config::ConfigCommand),
    /// Agent profiles of the self-learning loop: list, show, install built-ins, print skills.
    #[command(subcommand)]
    Agents(crate::agents::AgentsCommand),
    /// Local embedding models for hybrid dense recall: install, list.
    #[command(subcommand)]
    Models(crate::models::ModelsCommand),
    /// The store as a whole: copy it between a home and a PostgreSQL database.
    #[command(subcommand)]
    Store(crate::store::StoreCommand),
    /// Wire an agent CLI (Claude Code, Codex, Kiro) to cao in its own config files.
    ///
    /// Writes the MCP server entry cao-memory and the session hooks (Kiro: the steering file) into the agent's
    /// config for --scope, editing the files in place (other content, order, comments and line endings kept).
    /// --remove takes it out again, byte for byte; --dry-run shows the diff. Approvals the agent asks its user
    /// for (a project's .mcp.json, Codex's hook trust) are left to the user.
    Setup(crate::setup::SetupArgs),
}

/// `cao memory ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum MemoryCommand {
    /// List memories (global + current project by default; --all for every project, session and agent), or with
    /// `--query Q --explain` compare default recency recall with relevance recall without recording access.
    List(ListArgs),
    /// Show the full content of one memory.
    Show(ShowArgs),
    /// Store a vector of the configured embedding model for every memory lacking one (dense recall backfill).
    Embed(crate::models::EmbedArgs),
    /// Delete one memory.
    Delete(DeleteArgs),
    /// Delete every memory of one scope visible from here.
    Clear(ClearArgs),
    /// Rebuild the index from the wiki files (adopting a reference database) and report what changed.
    Repair(RepairArgs),
    /// Inspect and curate typed relationships between memories.
    #[command(subcommand)]
    Relationships(crate::relationships::RelationshipsCommand),
    // The help text names the block's literal tag, which rustdoc would read as HTML.
    /// Print the <cao-memory> context block for a new session (nothing when empty).
    #[allow(rustdoc::invalid_html_tags)]
    Context(crate::context::ContextArgs),
    /// Entry points for agent CLI hooks that inject the context block.
    #[command(subcommand)]
    Hook(crate::context::HookCommand),
    /// Write the <cao-memory> block into a provider's config file in DIR.
    ///
    /// claude_code: DIR/.claude/CLAUDE.md and codex: DIR/AGENTS.md (only the delimited block changes); kiro_cli:
    /// DIR/.kiro/steering/cao-memory.md (the whole file).
    #[allow(rustdoc::invalid_html_tags)]
    Inject(crate::inject::InjectArgs),
    /// Remove expired memories now (project: 90 days after the last update, session: 14 days; user and feedback
    /// memories never expire).
    Cleanup(crate::cleanup::CleanupArgs),
    /// Check the memories visible from here for orphan pages, stale claims, poisoned access counts, dense keys and
    /// (with a model) contradictions; read-only. Exits 1 when a finding is an error.
    Lint(crate::lint::LintArgs),
    /// Fix what lint finds, one fix per issue type: prints the plan; --apply carries it out (audited).
    Heal(crate::lint::HealArgs),
    /// Consolidate each topic's entries into one article with the configured model (memory.model.*).
    ///
    /// Every answer is checked (header and id line kept, no links but See Also bullets, no
    /// credentials, bounded size, even code fences) and a refused one leaves the topic unchanged. The previous text
    /// stays in the topic file, the journal and the audit log. --dry-run asks and checks but writes nothing.
    Compact(crate::lint::CompactArgs),
    /// Export one scope as an OKF bundle: a directory, or a reproducible .tar.gz archive (a read-only mirror:
    /// edits to the files are not synced back).
    Export(crate::bundle::ExportArgs),
    /// Import an OKF bundle (a directory or a .tar.gz archive) into global, project or federated.
    ///
    /// The bundle is untrusted: every topic goes through the same checks as memory_store, rejected files are
    /// listed with their reason. Acts immediately; --dry-run reports exactly what a run would do.
    Import(crate::bundle::ImportArgs),
    /// Workflow outcomes reported through the self-learning loop (memory.learning_enabled).
    #[command(subcommand)]
    Outcomes(crate::learning::OutcomesCommand),
    /// Promote reinforced lessons of an agent into its profile's Learned Patterns block.
    ///
    /// A dry run by default: prints the plan (add/update/remove per lesson key). --apply writes it and needs
    /// memory.instruction_promotion_enabled. Promoted lessons become standing instructions of every session of the
    /// agent: review the plan like a change to its system prompt.
    Promote(crate::learning::PromoteArgs),
    /// Print the live view of a memory journal (the current project's by default): at most 32 KiB of lines
    /// `id+n|text`, oldest first, inside <memory> ... </memory>.
    View(ViewArgs),
    /// Open the memory inspector on a journal (the current project's by default): the view as the model reads it,
    /// each line opening into the lines it was made from, what merges next, and delete or purge on the newest
    /// entry of a memory. Needs a terminal.
    Inspect(InspectArgs),
    /// The Obsidian vault as a knowledge source (memory.vault in settings.json): status, scan, reconcile,
    /// rebuild.
    #[command(subcommand)]
    Vault(crate::vault::VaultCommand),
    /// Purge one memory: remove its file and index row and erase its text from every version in the journal and
    /// from every summary line, so it is found nowhere on disk (the way to remove a secret).
    ///
    /// Unlike delete, which keeps earlier versions in the journal, this cannot be undone.
    Purge(PurgeArgs),
}

/// Arguments of `cao memory view`.
#[derive(Debug, Args)]
pub(crate) struct ViewArgs {
    /// The journal of this container: `global`, `federated` or a project id (default: the current project's).
    #[arg(long, value_name = "C", conflicts_with = "scope")]
    pub container: Option<String>,
    /// The journal holding this scope's memories (project: the current project; global, session and agent: the
    /// global journal; federated).
    #[arg(long, value_enum, value_name = "SCOPE")]
    pub scope: Option<ScopeArg>,
    /// Output format (json: the cao.memory.view/1 object).
    #[arg(long, value_enum, default_value_t = TextFormat::Text)]
    pub format: TextFormat,
}

/// Arguments of `cao memory inspect`.
#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    /// The journal of this project id (default: the current project's).
    #[arg(long, value_name = "P", conflicts_with = "container")]
    pub project_id: Option<String>,
    /// The journal of this container: `global`, `federated` or a project id (a project id also makes the search,
    /// delete and purge keys act in that project).
    #[arg(long, value_name = "C")]
    pub container: Option<String>,
}

/// Arguments of `cao memory purge`.
#[derive(Debug, Args)]
pub(crate) struct PurgeArgs {
    /// The memory key (`^[a-z0-9-]{1,60}$`).
    pub key: String,
    /// The scope of the memory (its scope id is the current project, session or agent).
    #[arg(long, value_enum, value_name = "SCOPE", default_value_t = ScopeArg::Project)]
    pub scope: ScopeArg,
    /// Do not ask for confirmation (required when stdin is not a terminal).
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// Output format (json: the cao.memory.purge/1 object).
    #[arg(long, value_enum, default_value_t = TextFormat::Text)]
    pub format: TextFormat,
}

/// Arguments of `cao memory list`.
///
/// Two modes share the scope flags (spec 000 "On-demand relevance explain", "CLI Commands"):
/// - the ordinary list: `[--all] [--scope S] [--type T] [--json] [--offset N | --all-rows]`, at most
///   [`LIST_ROWS`] rows per page (`--offset N` skips the first N rows of the order; `--all-rows` shows every row;
///   `--limit` is not used for paging because the spec reserves it for explain);
/// - explain: `--query Q --explain [--limit N] [--format table|json]` plus the same scope flags.
///
/// Which flags go together is checked by [`ListArgs::mode`] (a usage error, exit 2, before any I/O). `--limit` and
/// `--format` are `Option`s without a default so that an explicit value equal to the default is still seen.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// List every project, session and agent, not only the current ones.
    #[arg(long)]
    pub all: bool,
    /// Only this scope.
    #[arg(long, value_enum, value_name = "SCOPE")]
    pub scope: Option<ScopeArg>,
    /// Only this memory type.
    #[arg(long = "type", value_enum, value_name = "TYPE")]
    pub memory_type: Option<TypeArg>,
    /// Print the list as a JSON array of memory objects (ordinary list only).
    #[arg(long)]
    pub json: bool,
    /// Skip the first N rows of the listing's order: `--offset 100` is the second page of 100 (ordinary list only).
    #[arg(long, value_name = "N")]
    pub offset: Option<usize>,
    /// Show every row instead of pages of 100 (ordinary list only; not with --offset).
    #[arg(long, conflicts_with = "offset")]
    pub all_rows: bool,
    /// The query to explain (needs --explain). May start with `-` (`--query -camping`).
    #[arg(long, value_name = "Q", allow_hyphen_values = true)]
    pub query: Option<String>,
    /// Compare default recency recall with relevance recall for --query; records no access, expands nothing.
    #[arg(long)]
    pub explain: bool,
    /// Size of each top set of --explain, 1-100 [default: 10] (only with --explain).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_EXPLAIN_LIMIT as u64))]
    pub limit: Option<u64>,
    /// Output format of --explain [default: table] (only with --explain).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<ExplainFormat>,
}

/// What a valid `cao memory list` command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListMode {
    /// The ordinary listing.
    List {
        /// Every project, session and agent.
        all: bool,
        /// Only this scope.
        scope: Option<Scope>,
        /// Only this type.
        memory_type: Option<MemoryType>,
        /// A JSON array instead of the table.
        json: bool,
        /// Which rows of the order.
        page: ListPage,
    },
    /// The relevance explain report.
    Explain(ExplainArgs),
}

/// Which rows of the ordinary list's order are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListPage {
    /// [`LIST_ROWS`] rows after skipping this many (`--offset`; 0 = the first page).
    From(usize),
    /// Every row (`--all-rows`).
    All,
}

/// A validated `cao memory list --query Q --explain` command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExplainArgs {
    /// The query, trimmed; non-empty and at most [`MAX_QUERY_BYTES`].
    pub query: String,
    /// Every project, session and agent.
    pub all: bool,
    /// Only this scope.
    pub scope: Option<Scope>,
    /// Only this type.
    pub memory_type: Option<MemoryType>,
    /// Size of each top set, 1..=100.
    pub limit: usize,
    /// Output format.
    pub format: ExplainFormat,
}

impl ListArgs {
    /// Check which flags go together and return the mode.
    ///
    /// Errors ([`CliError::Usage`], exit 2; nothing has been read or written): `--json` with `--explain` (the
    /// message points at `--format json`); `--offset` or `--all-rows` with `--explain`; `--explain` without `--query`; `--query` without `--explain`; an
    /// explicit `--limit` or `--format` without `--explain`, whatever its value; an empty or whitespace-only
    /// query; a query over [`MAX_QUERY_BYTES`] bytes.
    pub(crate) fn mode(self) -> Result<ListMode, CliError> {
        let usage = |m: &str| Err(CliError::Usage(m.to_owned()));
        if self.json && self.explain {
            return usage("--json is for the ordinary list; with --explain use --format json");
        }
        if self.explain && (self.offset.is_some() || self.all_rows) {
            return usage("--offset and --all-rows page the ordinary list; --explain reports --limit N rows");
        }
        if !self.explain {
            if self.query.is_some() {
                return usage("--query needs --explain: cao memory list --query Q --explain");
            }
            if self.limit.is_some() {
                return usage(
                    "--limit applies only to --explain; page the ordinary list with --offset N or show it whole with \
                     --all-rows",
                );
            }
            if self.format.is_some() {
                return usage("--format applies only to --explain; use --json for a machine-readable ordinary list");
            }
            return Ok(ListMode::List {
                all: self.all,
                scope: self.scope.map(Into::into),
                memory_type: self.memory_type.map(Into::into),
                json: self.json,
                page: if self.all_rows {
                    ListPage::All
                } else {
                    ListPage::From(self.offset.unwrap_or(0))
                },
            });
        }
        let Some(raw) = self.query else {
            return usage("--explain needs --query Q: cao memory list --query Q --explain");
        };
        let query = raw.trim();
        if query.is_empty() {
            return usage("--query must not be empty or whitespace-only");
        }
        if query.len() > MAX_QUERY_BYTES {
            return Err(CliError::Usage(format!(
                "--query is {} bytes; the maximum is {MAX_QUERY_BYTES}",
                query.len()
            )));
        }
        Ok(ListMode::Explain(ExplainArgs {
            query: query.to_owned(),
            all: self.all,
            scope: self.scope.map(Into::into),
            memory_type: self.memory_type.map(Into::into),
            limit: self
                .limit
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(DEFAULT_EXPLAIN_LIMIT),
            format: self.format.unwrap_or(ExplainFormat::Table),
        }))
    }
}

/// Arguments of `cao memory show`.
#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
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
pub(crate) struct DeleteArgs {
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
pub(crate) struct ClearArgs {
    /// The scope to clear.
    #[arg(long, value_enum, value_name = "SCOPE")]
    pub scope: ScopeArg,
    /// Do not ask for confirmation (required when stdin is not a terminal).
    #[arg(short = 'y', long)]
    pub yes: bool,
}

/// Arguments of `cao memory repair`.
#[derive(Debug, Args)]
pub(crate) struct RepairArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = TextFormat::Text)]
    pub format: TextFormat,
    /// Roll back the vault migration receipt with this id (`cao memory vault migrate --apply` prints it): a plan
    /// unless --apply.
    #[arg(long)]
    pub receipt: Option<String>,
    /// With --receipt: perform the rollback.
    #[arg(long, requires = "receipt")]
    pub apply: bool,
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

/// Output format of `memory relationships list` and `memory relationships inspect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ListFormat {
    /// Aligned columns (or labelled lines for one edge).
    Table,
    /// Pretty-printed JSON.
    Json,
}

/// Output format of `list --explain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExplainFormat {
    /// Aligned columns between a header line (query, limit, filters) and a footer (pool, overlap, flags).
    Table,
    /// The `cao.memory.explain/1` JSON report (docs/schemas/cao.memory.explain-1.json).
    Json,
}

/// Output format of `show`, `repair`, `view` and `purge`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TextFormat {
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
            &["cao", "memory", "list", "--query", "q", "--explain", "--limit", "0"],
            &["cao", "memory", "list", "--query", "q", "--explain", "--limit", "101"],
            &["cao", "memory", "list", "--query", "q", "--explain", "--format", "yaml"],
            &["cao", "memory", "clear"],
            &["cao", "memory", "show"],
        ] {
            let err = Cli::try_parse_from(argv).expect_err("must be rejected");
            assert_eq!(err.exit_code(), 2, "{argv:?}");
        }
    }

    fn mode_of(argv: &[&str]) -> Result<ListMode, CliError> {
        let mut full = vec!["cao", "memory", "list"];
        full.extend_from_slice(argv);
        let cli = Cli::try_parse_from(&full).expect("parses");
        let Command::Memory(MemoryCommand::List(args)) = cli.command else {
            panic!("not a list command")
        };
        args.mode()
    }

    #[test]
    fn explain_flags_need_each_other_even_at_their_defaults() {
        for argv in [
            &["--query", "q"][..],
            &["--explain"],
            &["--limit", "10"],
            &["--limit", "5"],
            &["--format", "table"],
            &["--format", "json"],
            &["--query", "q", "--limit", "10"],
            &["--query", "q", "--format", "table"],
            &["--explain", "--limit", "3"],
            &["--query", "  ", "--explain"],
            &["--query", "", "--explain"],
            &["--json", "--explain", "--query", "q"],
        ] {
            match mode_of(argv) {
                Err(CliError::Usage(msg)) => assert!(!msg.contains('\n'), "{argv:?}: {msg}"),
                other => panic!("{argv:?}: expected a usage error, got {other:?}"),
            }
        }
        let Err(CliError::Usage(msg)) = mode_of(&["--json", "--explain", "--query", "q"]) else {
            panic!("usage error")
        };
        assert!(msg.contains("--format json"), "{msg}");
        let long = "q".repeat(MAX_QUERY_BYTES + 1);
        assert!(matches!(
            mode_of(&["--query", &long, "--explain"]),
            Err(CliError::Usage(_))
        ));
    }

    #[test]
    fn explain_defaults_and_ordinary_list() {
        assert_eq!(
            mode_of(&["--query", "  kafka streams ", "--explain"]).expect("valid"),
            ListMode::Explain(ExplainArgs {
                query: "kafka streams".to_owned(),
                all: false,
                scope: None,
                memory_type: None,
                limit: 10,
                format: ExplainFormat::Table,
            })
        );
        assert_eq!(
            mode_of(&[
                "--query",
                "k",
                "--explain",
                "--limit",
                "100",
                "--format",
                "json",
                "--all",
                "--scope",
                "global",
                "--type",
                "user"
            ])
            .expect("valid"),
            ListMode::Explain(ExplainArgs {
                query: "k".to_owned(),
                all: true,
                scope: Some(Scope::Global),
                memory_type: Some(MemoryType::User),
                limit: 100,
                format: ExplainFormat::Json,
            })
        );
        assert_eq!(
            mode_of(&["--json", "--scope", "project"]).expect("valid"),
            ListMode::List {
                all: false,
                scope: Some(Scope::Project),
                memory_type: None,
                json: true,
                page: ListPage::From(0),
            }
        );
        assert!(matches!(
            mode_of(&["--offset", "200"]),
            Ok(ListMode::List {
                page: ListPage::From(200),
                ..
            })
        ));
        assert!(matches!(
            mode_of(&["--all-rows", "--json"]),
            Ok(ListMode::List {
                page: ListPage::All,
                json: true,
                ..
            })
        ));
        for argv in [
            &["--query", "q", "--explain", "--offset", "3"][..],
            &["--query", "q", "--explain", "--all-rows"],
        ] {
            assert!(matches!(mode_of(argv), Err(CliError::Usage(_))), "{argv:?}");
        }
        assert!(Cli::try_parse_from(["cao", "memory", "list", "--offset", "1", "--all-rows"]).is_err());
    }
}
