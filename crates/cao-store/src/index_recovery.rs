//! Recovery of a damaged index database (`cao memory repair`): a file SQLite reports as corrupt or not a database,
//! or one failing `PRAGMA quick_check`, is moved aside to `<name>.corrupt-<UTC time>` (with its `-wal` and `-shm`
//! files) under SQLite's write lock ([`cao_index::integrity::move_aside`]); the store opened next creates a fresh
//! database and rebuilds it from the wiki files (the empty-index recovery of the store's open). What lived only in
//! the database is lost to the fresh index and stays in the moved-aside file.
//!
//! Runs before a store is opened: [`cao_index::Index::open`] itself fails on a file that is not a database.

use crate::error::MemoryError;
use cao_core::CaoHome;
use chrono::{DateTime, Utc};
use serde::Serialize;

/// A table whose rows lived only in the damaged database.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LostTable {
    /// The table name.
    pub table: &'static str,
    /// What it held.
    pub holds: &'static str,
    /// Its rows as counted in the damaged file; `None` when they could not be counted.
    pub rows: Option<u64>,
}

/// What [`recover_damaged_index`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DamagedIndex {
    /// What SQLite reported (one line).
    pub problem: String,
    /// The database file that was damaged.
    pub db: String,
    /// Where it went.
    pub moved_to: String,
    /// Every file moved, as `from -> to`.
    pub moved: Vec<String>,
    /// Whether SQLite's write lock was held while moving (false: the file was too damaged to lock).
    pub locked: bool,
    /// What lived only in the database (not in the wiki files), with the row counts that could still be read.
    pub lost: Vec<LostTable>,
}

impl std::fmt::Display for DamagedIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "the index database {} is damaged: {}", self.db, self.problem)?;
        writeln!(f, "moved it aside to {} (kept for inspection):", self.moved_to)?;
        for m in &self.moved {
            writeln!(f, "  {m}")?;
        }
        writeln!(
            f,
            "the memories are rebuilt from the wiki files into a fresh database; lost with the old one (it held them \
             only in the database):"
        )?;
        for t in &self.lost {
            let rows = t
                .rows
                .map_or_else(|| "rows unreadable".to_owned(), |n| format!("{n} rows"));
            writeln!(f, "  {} ({rows}): {}", t.table, t.holds)?;
        }
        writeln!(
            f,
            "restart any cao-server or agent session still running: they keep the damaged file open and refuse to use it"
        )
    }
}

/// Check the home's index database and, when SQLite reports damage, move it aside (see the module docs) so the
/// next open rebuilds the index from the wiki files. `now` names the moved file (`<name>.corrupt-YYYYMMDDTHHMMSSZ`).
/// Returns `None` (and changes nothing) when the file is missing or sound.
///
/// Errors: [`MemoryError::Store`] when the file cannot be checked for reasons other than damage (permissions, a lock
/// held past the busy timeout), or cannot be moved.
pub fn recover_damaged_index(home: &CaoHome, now: DateTime<Utc>) -> Result<Option<DamagedIndex>, MemoryError> {
    let db = home.db_path();
    let Some(problem) = cao_index::integrity::check_file(&db)? else {
        return Ok(None);
    };
    let suffix = now.format("%Y%m%dT%H%M%SZ").to_string();
    let moved = cao_index::integrity::move_aside(&db, &suffix)?;
    tracing::warn!(db = %db.display(), moved_to = %moved.db.display(), "the index database is damaged ({problem}); moved it aside");
    let lost = cao_index::integrity::DATABASE_ONLY_TABLES
        .iter()
        .zip(&moved.rows)
        .map(|((table, holds), (_, rows))| LostTable {
            table,
            holds,
            rows: *rows,
        })
        .collect();
    Ok(Some(DamagedIndex {
        problem,
        db: db.display().to_string(),
        moved_to: moved.db.display().to_string(),
        moved: moved
            .files
            .iter()
            .map(|(from, to)| format!("{} -> {}", from.display(), to.display()))
            .collect(),
        locked: moved.locked,
        lost,
    }))
}
