//! `cao store copy`: move a whole store between the embedded home and a PostgreSQL database (either way), through
//! the store interface (`cao_maint::copy`). A progress bar on stderr (only on a terminal); the count report on
//! stdout as text or, with `--format json`, as `cao.store.copy/1` (docs/schemas/cao.store.copy-1.json).

use crate::cli::TextFormat;
use crate::error::CliError;
use crate::output::{self, emit};
use cao_core::{CaoHome, DatabaseUrl};
use cao_memory::{CopyCount, CopyReport, DatabaseSchema, MemoryService, database_schema};
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;

/// `cao store ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum StoreCommand {
    /// Copy a whole store (memories with every entry, edges, outcomes, terminals, aliases, journals with their
    /// summary lines and snapshots) from one home or PostgreSQL database into another.
    ///
    /// Idempotent: what the target already holds as the source has it is left alone, so an interrupted copy is
    /// completed by running it again. The audit log goes along. Not copied: embedding vectors (run `cao memory
    /// embed` on the target), journal leases and the recall-advice cache. --dry-run counts what would be written.
    Copy(CopyArgs),
}

/// `cao store copy`.
#[derive(Debug, Args)]
pub(crate) struct CopyArgs {
    /// The store to copy: a cao home directory or a PostgreSQL URL (postgres://...).
    #[arg(long, value_name = "HOME|URL")]
    pub from: String,
    /// The store to copy into: a cao home directory (created when missing) or a PostgreSQL URL.
    #[arg(long, value_name = "HOME|URL")]
    pub to: String,
    /// Read both stores and count what a copy would write, writing nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Output format of the count report.
    #[arg(long, value_enum, default_value_t = TextFormat::Text)]
    pub format: TextFormat,
}

/// Where one side of a copy is.
#[derive(Debug, PartialEq, Eq)]
enum Endpoint {
    Home(PathBuf),
    Database(DatabaseUrl),
}

/// Whether `text` is a URL with a scheme (`scheme://...`) or a libpq `key=value` connection string (a `host=`,
/// `dbname=`, `user=`, `password=` or `port=` word), rather than a directory.
fn looks_like_connection_string(text: &str) -> bool {
    let scheme = text.split_once("://").is_some_and(|(s, _)| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    scheme
        || text.split_whitespace().any(|word| {
            let lower = word.to_ascii_lowercase();
            [
                "host=",
                "hostaddr=",
                "dbname=",
                "user=",
                "password=",
                "port=",
                "sslmode=",
            ]
            .iter()
            .any(|k| lower.starts_with(k))
        })
}

impl Endpoint {
    /// A PostgreSQL URL (`postgres://`, `postgresql://`) or a home directory.
    fn parse(text: &str, flag: &str) -> Result<Endpoint, CliError> {
        if text.trim().is_empty() {
            return Err(CliError::Usage(format!(
                "{flag} is empty; give a cao home directory or a postgres:// URL"
            )));
        }
        let lower = text.to_ascii_lowercase();
        if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            let scheme_end = text.find("://").map_or(0, |i| i + 3);
            let normalized = format!("{}{}", &lower[..scheme_end], &text[scheme_end..]);
            return DatabaseUrl::parse(&normalized)
                .map(Endpoint::Database)
                .map_err(|e| CliError::Usage(format!("{flag}: {e}")));
        }
        // Anything else that looks like a connection string is refused, never taken for a directory name: it could
        // hold a password, which would then be printed and become a directory on disk. The text is not echoed.
        if looks_like_connection_string(text) {
            return Err(CliError::Usage(format!(
                "{flag} looks like a connection string but is not a postgres:// or postgresql:// URL; only \
                 PostgreSQL URLs are supported (libpq's key=value form is not: write it as a URL)"
            )));
        }
        Ok(Endpoint::Home(PathBuf::from(text)))
    }

    /// The home a service opens for this side: the directory itself, or this process's home with the database.
    fn home(&self) -> CaoHome {
        match self {
            Endpoint::Home(dir) => CaoHome::new(dir).with_database(None),
            Endpoint::Database(url) => CaoHome::from_env().with_database(Some(url.clone())),
        }
    }

    /// How the report names this side (a URL without its password).
    fn shown(&self) -> String {
        match self {
            Endpoint::Home(dir) => dir.display().to_string(),
            Endpoint::Database(url) => url.redacted(),
        }
    }
}

/// Run `cao store ...`.
///
/// Errors: usage errors (exit 2) for a bad `--from`/`--to` or the same store on both sides; failures of either
/// store.
pub(crate) fn run(cmd: StoreCommand, out: &mut dyn Write) -> Result<(), CliError> {
    match cmd {
        StoreCommand::Copy(args) => run_copy(args, out),
    }
}

fn run_copy(args: CopyArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let from = Endpoint::parse(&args.from, "--from")?;
    let to = Endpoint::parse(&args.to, "--to")?;
    let same = match (&from, &to) {
        (Endpoint::Home(a), Endpoint::Home(b)) => {
            a == b || (a.exists() && b.exists() && a.canonicalize().ok() == b.canonicalize().ok())
        }
        (a, b) => a == b,
    };
    if same {
        return Err(CliError::Usage(format!(
            "--from and --to name the same store ({}); a store cannot be copied into itself",
            from.shown()
        )));
    }
    if let Endpoint::Home(dir) = &from
        && !dir.join("memory").is_dir()
    {
        return Err(CliError::failure(format!(
            "{} holds no cao memory store (no memory/ directory)",
            dir.display()
        )));
    }
    // Opening a database creates or migrates its schema: a source database without one is refused (as a home
    // without memory/ is) instead of being given an empty store, and a target's schema is read before it is opened.
    if let Endpoint::Database(url) = &from
        && database_schema(url)? == DatabaseSchema::Missing
    {
        return Err(CliError::failure(format!(
            "{} holds no cao memory store (no cao schema)",
            from.shown()
        )));
    }
    let target_schema = match &to {
        Endpoint::Database(url) => Some(database_schema(url)?),
        Endpoint::Home(_) => None,
    };
    if args.dry_run
        && let Some(DatabaseSchema::Older(version)) = target_schema
    {
        return Err(CliError::failure(format!(
            "{} has cao schema version {version}; a dry run cannot read it without migrating it to version {} \
             (a copy without --dry-run migrates it)",
            to.shown(),
            DatabaseSchema::LATEST
        )));
    }
    let source = MemoryService::open(from.home())?;
    // A dry run creates nothing: a target without a store yet (a home without memory/, a database without the cao
    // schema) is read as the empty store it would start as (a throwaway home, deleted on return), so neither its
    // directories, its index nor its tables are made.
    let empty = match &to {
        Endpoint::Home(dir) => !dir.join("memory").is_dir(),
        Endpoint::Database(_) => target_schema == Some(DatabaseSchema::Missing),
    };
    let empty_target = if args.dry_run && empty {
        Some(tempfile::tempdir().map_err(|e| CliError::failure(format!("creating a temporary directory: {e}")))?)
    } else {
        None
    };
    let target_home = match &empty_target {
        Some(tmp) => CaoHome::new(tmp.path().join("home")).with_database(None),
        None => to.home(),
    };
    let target = MemoryService::open(target_home)?;
    let mut report = source.copy_store(&target, args.dry_run, &crate::progress::Bar::for_stderr())?;
    if target_schema == Some(DatabaseSchema::Missing) {
        report.creates_schema = Some(DatabaseSchema::LATEST);
    }
    let text = match args.format {
        TextFormat::Text => render(&report, &from.shown(), &to.shown()),
        TextFormat::Json => output::json(&report).map_err(CliError::failure)?,
    };
    emit(out, &text)
}

/// The count report as text: one line per kind of record.
fn render(report: &CopyReport, from: &str, to: &str) -> String {
    let verb = if report.dry_run { "would copy" } else { "copied" };
    let mut s = format!("{} {from} -> {to}\n", if report.dry_run { "dry run:" } else { "copy:" });
    let rows: [(&str, &CopyCount); 10] = [
        ("memories", &report.memories),
        ("relationships", &report.relationships),
        ("outcomes", &report.outcomes),
        ("terminals", &report.terminals),
        ("aliases", &report.aliases),
        ("journals", &report.journals),
        ("journal entries", &report.journal_entries),
        ("summary lines", &report.summary_lines),
        ("snapshots", &report.snapshots),
        ("audit lines", &report.audit_lines),
    ];
    for (name, c) in rows {
        s.push_str(&format!(
            "  {name:<16} {:>8} in source, {:>8} {verb}, {:>8} unchanged, {:>6} skipped\n",
            c.source, c.copied, c.unchanged, c.skipped
        ));
    }
    if let Some(version) = report.creates_schema {
        let made = if report.dry_run { "would create" } else { "created" };
        s.push_str(&format!(
            "  schema: {made} the cao schema (version {version}) in {to}\n"
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_strings_are_never_taken_for_directories_nor_echoed() {
        for text in [
            "mysql://cao:s3cretPW@h/db",
            "postgresql+psycopg://cao:s3cretPW@h/db",
            "host=127.0.0.1 port=55432 user=cao password=s3cretPW dbname=cao",
        ] {
            let Err(CliError::Usage(msg)) = Endpoint::parse(text, "--to") else {
                panic!("{text:?} must be refused");
            };
            assert!(!msg.contains("s3cretPW"), "{msg}");
        }
        assert!(matches!(
            Endpoint::parse("POSTGRESQL://cao@localhost/cao", "--to"),
            Ok(Endpoint::Database(_))
        ));
        for dir in ["/tmp/a home", "relative/dir", "./x=y"] {
            assert!(matches!(Endpoint::parse(dir, "--to"), Ok(Endpoint::Home(_))), "{dir}");
        }
    }
}
