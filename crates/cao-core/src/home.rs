//! The home directory that holds every cao file.
//!
//! Resolution: `CAO_HOME`, else `CAO_HOME_DIR` (the reference's name, so a migrated setup keeps working), else
//! `~/.aws/cli-agent-orchestrator` (spec 000 "Storage Layout"; design.md "Storage"). Empty values count as unset;
//! `~` is expanded.
//!
//! A home may also name a shared database (`CAO_DATABASE_URL`, or `--database-url` on the binaries): memory content
//! and tables then live in that PostgreSQL database instead of `memory/` and `db/`, while `settings.json`, agent
//! profiles and models stay in the home ([`DatabaseUrl`]).

use std::path::{Path, PathBuf};

/// The root of one cao installation: `memory/`, `db/`, `settings.json` live below it; and, when it names one, the
/// shared database its memories live in instead of `memory/` and `db/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaoHome {
    root: PathBuf,
    database: Option<DatabaseUrl>,
}

/// The database given on a binary's command line (`--database-url`), which wins over `CAO_DATABASE_URL` for every
/// home this process resolves ([`CaoHome::from_env`]).
static COMMAND_LINE_DATABASE: std::sync::OnceLock<DatabaseUrl> = std::sync::OnceLock::new();

/// Make `url` the database of every home this process resolves from now on (a binary's `--database-url`, parsed
/// before anything opens a store). Set at most once; `false` when already set (nothing changes).
pub fn use_database(url: DatabaseUrl) -> bool {
    COMMAND_LINE_DATABASE.set(url).is_ok()
}

/// A PostgreSQL connection URL (`postgres://` or `postgresql://`, libpq's URL rules: `sslmode`, `host=/path` for a
/// unix socket, ...). It may hold a password: [`std::fmt::Display`] and [`std::fmt::Debug`] print it with the
/// password replaced by `***` (the only forms that reach logs, errors and reports); [`DatabaseUrl::expose`] gives
/// the text itself to the code that connects.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    /// Check the scheme of `url` (trimmed) and keep it.
    ///
    /// Errors: a one-line message (without the URL's password) when `url` does not start with `postgres://` or
    /// `postgresql://`.
    pub fn parse(url: &str) -> Result<DatabaseUrl, String> {
        let url = url.trim();
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(DatabaseUrl(url.to_owned()))
        } else {
            Err(format!(
                "database URL {} is not a PostgreSQL URL (postgres://user@host:port/dbname or postgresql://...)",
                redact_url(url)
            ))
        }
    }

    /// The URL as given, password included: only for the code that connects.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The URL with its password (if any) replaced by `***`: what logs, errors and reports show.
    pub fn redacted(&self) -> String {
        redact_url(&self.0)
    }
}

impl std::fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DatabaseUrl({})", self.redacted())
    }
}

/// `url` with the password of its user-info part and of a `password=` query parameter replaced by `***`.
pub fn redact_url(url: &str) -> String {
    let mut out = url.to_owned();
    if let Some(scheme_end) = out.find("://") {
        let rest = scheme_end + 3;
        let authority_end = out[rest..].find(['/', '?', '#']).map_or(out.len(), |i| rest + i);
        if let Some(at) = out[rest..authority_end].rfind('@').map(|i| rest + i)
            && let Some(colon) = out[rest..at].find(':').map(|i| rest + i)
        {
            out.replace_range(colon + 1..at, "***");
        }
    }
    if let Some(q) = out.find('?') {
        let (head, query) = out.split_at(q + 1);
        let query: Vec<String> = query
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => kv.to_owned(),
            })
            .collect();
        out = format!("{head}{}", query.join("&"));
    }
    out
}

impl CaoHome {
    /// A home rooted at `root` (no I/O).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            database: None,
        }
    }

    /// The same home with its memories in the database `url` (`None`: in the home's own files).
    pub fn with_database(mut self, url: Option<DatabaseUrl>) -> Self {
        self.database = url;
        self
    }

    /// The shared database this home's memories live in, when it names one.
    pub fn database(&self) -> Option<&DatabaseUrl> {
        self.database.as_ref()
    }

    /// Resolve from the process environment (see module docs), the database from the command line ([`use_database`])
    /// or `CAO_DATABASE_URL` (empty = none;
    /// a value that is not a PostgreSQL URL is ignored with a warning naming it without its password). No I/O; the
    /// directory may not exist yet.
    pub fn from_env() -> Self {
        let from = |name: &str| {
            std::env::var(name)
                .ok()
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let root = match from("CAO_HOME").or_else(|| from("CAO_HOME_DIR")) {
            Some(v) => expand_tilde(&v),
            None => home_dir().join(".aws").join("cli-agent-orchestrator"),
        };
        let database = COMMAND_LINE_DATABASE.get().cloned().or_else(|| {
            from("CAO_DATABASE_URL").and_then(|v| match DatabaseUrl::parse(&v) {
                Ok(url) => Some(url),
                Err(e) => {
                    tracing::warn!("CAO_DATABASE_URL is ignored: {e}");
                    None
                }
            })
        });
        Self { root, database }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// `<root>/memory`: the wiki containers.
    pub fn memory_dir(&self) -> PathBuf {
        self.root.join("memory")
    }
    /// `<root>/db/cli-agent-orchestrator.db`: the SQLite index (shared with the reference's database).
    pub fn db_path(&self) -> PathBuf {
        self.root.join("db").join("cli-agent-orchestrator.db")
    }
    /// `<root>/settings.json`.
    pub fn settings_path(&self) -> PathBuf {
        self.root.join("settings.json")
    }
    /// `<root>/agent-store`: the default directory of agent profiles (`agents.dirs` unset; spec 004 "The
    /// retrospector agent").
    pub fn agent_store_dir(&self) -> PathBuf {
        self.root.join("agent-store")
    }
}

fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// `v` with a leading `~` or `~/` replaced by `$HOME` (other values unchanged).
pub(crate) fn expand_tilde(v: &str) -> PathBuf {
    if v == "~" {
        home_dir()
    } else if let Some(rest) = v.strip_prefix("~/") {
        home_dir().join(rest)
    } else {
        PathBuf::from(v)
    }
}

#[cfg(test)]
mod url_tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        let url = DatabaseUrl::parse("postgres://cao:s3cret@db.example:5432/cao?sslmode=require").expect("url");
        assert_eq!(
            url.to_string(),
            "postgres://cao:***@db.example:5432/cao?sslmode=require"
        );
        assert!(!format!("{url:?}").contains("s3cret"));
        assert_eq!(
            url.expose(),
            "postgres://cao:s3cret@db.example:5432/cao?sslmode=require"
        );
        assert_eq!(
            redact_url("postgresql:///cao?host=/run/pg&password=p%40ss"),
            "postgresql:///cao?host=/run/pg&password=***"
        );
        assert_eq!(redact_url("postgres://u@h/d"), "postgres://u@h/d");
        let e = DatabaseUrl::parse("mysql://root:hunter2@h/d").expect_err("not postgres");
        assert!(!e.contains("hunter2") && e.contains("***"), "{e}");
    }
}
