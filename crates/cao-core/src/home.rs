//! The home directory that holds every cao file.
//!
//! Resolution: `CAO_HOME`, else `CAO_HOME_DIR` (the reference's name, so a migrated setup keeps working), else
//! `~/.aws/cli-agent-orchestrator` (spec 000 "Storage Layout"; design.md "Storage"). Empty values count as unset;
//! `~` is expanded.

use std::path::{Path, PathBuf};

/// The root of one cao installation: `memory/`, `db/`, `settings.json` live below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaoHome {
    root: PathBuf,
}

impl CaoHome {
    /// A home rooted at `root` (no I/O).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Resolve from the process environment (see module docs). No I/O; the directory may not exist yet.
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
        Self { root }
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
