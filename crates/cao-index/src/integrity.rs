//! Damage to the index database file: detecting it (SQLite's `SQLITE_CORRUPT` / `SQLITE_NOTADB`, or a failing
//! `PRAGMA quick_check`) and moving a damaged file aside, so the index can be rebuilt from the wiki files into a
//! fresh database (`cao memory repair`).

use crate::error::Result;
use crate::{BUSY_TIMEOUT, Index};
use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::path::{Path, PathBuf};

/// Tables whose rows live only in the database (the wiki files do not hold them), with what they hold: what a
/// rebuild from the wiki files cannot bring back.
pub const DATABASE_ONLY_TABLES: &[(&str, &str)] = &[
    (
        "memory_metadata",
        "access counts, last access times and related keys of the memories",
    ),
    ("memory_relationships", "typed relationships between memories"),
    ("cao_journal_entries", "the journal's history of changes"),
    ("workflow_outcomes", "outcomes reported through the self-learning loop"),
    ("cao_terminals", "terminals registered with cao-server"),
    ("cao_decisions_named", "decisions recorded by name"),
    (
        "cao_memory_vectors",
        "dense vectors (`cao memory embed` computes them again)",
    ),
    (
        "project_aliases",
        "project id aliases (recorded again as projects are used)",
    ),
];

/// Whether `e` says the database file is damaged (`SQLITE_CORRUPT`) or is not a database (`SQLITE_NOTADB`).
pub fn is_corruption(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    )
}

/// The problems `PRAGMA quick_check` reports on `conn` (at most 5, joined by "; "), or the corruption error that
/// stopped it; `None` when it answers `ok`.
fn quick_check_on(conn: &Connection) -> rusqlite::Result<Option<String>> {
    let run = || -> rusqlite::Result<Vec<String>> {
        let mut stmt = conn.prepare("PRAGMA quick_check(5)")?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        rows.collect()
    };
    match run() {
        Ok(rows) if rows.len() == 1 && rows[0] == "ok" => Ok(None),
        Ok(rows) => Ok(Some(rows.join("; "))),
        Err(e) if is_corruption(&e) => Ok(Some(e.to_string())),
        Err(e) => Err(e),
    }
}

/// Bytes of the database file [`Index::quick_check`] maps for its reads (64 MiB: the whole file up to about
/// 15,000 memories; beyond, the check's resident set stays bounded), or less when the process lowered its mapping
/// limit ([`crate::limit_read_mapping`]).
pub const QUICK_CHECK_MMAP_SIZE: i64 = 64 << 20;

impl Index {
    /// Run SQLite's `PRAGMA quick_check` on the open database: `None` when it is sound, else what is damaged (one
    /// line). Reads every page of the file (about a second per GB); writes nothing.
    ///
    /// Errors: [`crate::IndexError`] for failures other than damage (a busy lock past the timeout, the pool).
    ///
    /// The check runs on a connection of its own, opened for it: a pooled connection keeps the full-text indexes'
    /// structure cached from its last read, and SQLite's check of an FTS5 table compares against that cache, so a
    /// change another connection (another process) made since would be reported as a checksum mismatch. It maps
    /// the first [`QUICK_CHECK_MMAP_SIZE`] bytes of the file for reads (`mmap_size`, docs/decisions/0004) and reads
    /// the rest through its page cache: the check reads every page, and copying each through the 2 MB page cache
    /// was a fifth of the check's time (`bench --only lint`, 10,000 memories), while mapping a whole large file
    /// would put all of it in the process's resident set (lint's peak RSS goal, issue 31).
    pub fn quick_check(&self) -> Result<Option<String>> {
        let conn = Connection::open_with_flags(&self.path, OpenFlags::SQLITE_OPEN_READ_WRITE)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let bytes = QUICK_CHECK_MMAP_SIZE.min(crate::read_map_bytes());
        let _size: i64 = conn.query_row(&format!("PRAGMA mmap_size = {bytes}"), [], |r| r.get(0))?;
        Ok(quick_check_on(&conn)?)
    }
}

/// Check the database file at `db_path` without [`Index::open`] (which fails on a file that is not a database):
/// `None` when it is missing or sound, else what is damaged (one line). Writes nothing to the file.
///
/// Errors: [`crate::IndexError`] for failures other than damage (the file cannot be opened, a lock stays busy).
pub fn check_file(db_path: &Path) -> Result<Option<String>> {
    if !db_path.exists() {
        return Ok(None);
    }
    let conn = match Connection::open_with_flags(db_path, OpenFlags::SQLITE_OPEN_READ_WRITE) {
        Ok(c) => c,
        Err(e) if is_corruption(&e) => return Ok(Some(e.to_string())),
        Err(e) => return Err(e.into()),
    };
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Closing must not checkpoint a damaged file's log into it: what is moved aside stays as it was found.
    let _ = conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true);
    Ok(quick_check_on(&conn)?)
}

/// What [`move_aside`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovedAside {
    /// Where the database file went (`<name>.corrupt-<suffix>`, beside it).
    pub db: PathBuf,
    /// Every file moved (the database, and its `-wal` and `-shm` files when present), as (from, to).
    pub files: Vec<(PathBuf, PathBuf)>,
    /// Rows per [`DATABASE_ONLY_TABLES`] entry that could still be counted in the damaged file (`None`: unreadable
    /// or absent).
    pub rows: Vec<(&'static str, Option<u64>)>,
    /// Whether SQLite's write lock on the damaged file was held while moving it (no writer was mid-transaction);
    /// false when the file is too damaged to lock.
    pub locked: bool,
}

/// Move the damaged database at `db_path` and its `-wal` and `-shm` files aside to `<name>.corrupt-<suffix>` (and
/// `...-wal`, `...-shm`), so the next [`Index::open`] creates a fresh file.
///
/// Safe with other processes: SQLite's write lock on the damaged file (`BEGIN IMMEDIATE`, which every index
/// writer takes; waited for up to [`BUSY_TIMEOUT`]) is held while the files move, so no writer is mid-transaction
/// and none starts; the `-wal` and `-shm` files move before the database file, so a process opening the path
/// meanwhile never pairs a fresh database with the old log. The locking connection is closed without a checkpoint
/// (`SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`), so SQLite never deletes, by its old name, a log that now belongs to the
/// fresh database. Processes that opened the damaged file keep it open and refuse to use it
/// (the store's "index current" check) until they are restarted.
///
/// Errors: [`crate::IndexError::Invalid`] when a target name exists; the renames' I/O errors (as `Invalid`, naming
/// the paths). Files moved before a failure stay moved (their names are in the message).
#[allow(
    clippy::disallowed_methods,
    reason = "moving a damaged database aside is a rename of whole files, not a write of their content"
)]
pub fn move_aside(db_path: &Path, suffix: &str) -> Result<MovedAside> {
    let name = db_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let sibling = |tail: &str| db_path.with_file_name(format!("{name}{tail}"));
    let aside = sibling(&format!(".corrupt-{suffix}"));
    let plan: Vec<(PathBuf, PathBuf)> = [("-wal", "-wal"), ("-shm", "-shm"), ("", "")]
        .iter()
        .map(|(from, to)| (sibling(from), sibling(&format!(".corrupt-{suffix}{to}"))))
        .filter(|(from, _)| from.exists())
        .collect();
    if let Some((_, to)) = plan.iter().find(|(_, to)| to.exists()) {
        return Err(crate::IndexError::Invalid(format!(
            "{} exists already; nothing was moved",
            to.display()
        )));
    }
    let conn = Connection::open_with_flags(db_path, OpenFlags::SQLITE_OPEN_READ_WRITE).ok();
    let mut rows = Vec::new();
    let mut locked = false;
    if let Some(conn) = &conn {
        // Best effort: a file too damaged to configure or lock is moved all the same.
        let _ = conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true);
        let _ = conn.busy_timeout(BUSY_TIMEOUT);
        for (table, _) in DATABASE_ONLY_TABLES {
            let n = conn
                .query_row(&format!("SELECT count(*) FROM \"{table}\""), [], |r| r.get::<_, i64>(0))
                .ok()
                .and_then(|n| u64::try_from(n).ok());
            rows.push((*table, n));
        }
        locked = conn.execute_batch("BEGIN IMMEDIATE").is_ok();
    } else {
        rows = DATABASE_ONLY_TABLES.iter().map(|(t, _)| (*t, None)).collect();
    }
    let mut moved = Vec::new();
    for (from, to) in &plan {
        if let Err(e) = std::fs::rename(from, to) {
            let done: Vec<String> = moved
                .iter()
                .map(|(f, t): &(PathBuf, PathBuf)| format!("{} -> {}", f.display(), t.display()))
                .collect();
            return Err(crate::IndexError::Invalid(format!(
                "cannot move {} to {}: {e} (moved so far: {})",
                from.display(),
                to.display(),
                if done.is_empty() {
                    "nothing".to_owned()
                } else {
                    done.join(", ")
                }
            )));
        }
        moved.push((from.clone(), to.clone()));
    }
    if let Some(conn) = conn {
        if locked {
            let _ = conn.execute_batch("ROLLBACK");
        }
        drop(conn);
    }
    Ok(MovedAside {
        db: aside,
        files: moved,
        rows,
        locked,
    })
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "test setup damages fixture files directly")]
mod tests {
    use super::*;

    fn damaged_db(dir: &Path) -> PathBuf {
        let path = dir.join("index.db");
        let ix = Index::open(&path).expect("open");
        drop(ix);
        let conn = Connection::open(&path).expect("conn");
        conn.execute_batch(
            "CREATE TABLE filler(x); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 2000) \
             INSERT INTO filler SELECT randomblob(200) FROM n; PRAGMA wal_checkpoint(TRUNCATE);",
        )
        .expect("fill");
        drop(conn);
        let mut bytes = std::fs::read(&path).expect("read");
        let page = 4096;
        for b in &mut bytes[3 * page..8 * page] {
            *b = 0x5a;
        }
        std::fs::write(&path, bytes).expect("damage");
        path
    }

    #[test]
    fn a_sound_file_passes_and_a_damaged_one_is_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sound = dir.path().join("sound.db");
        assert_eq!(
            check_file(&sound).expect("missing"),
            None,
            "a missing file is not damaged"
        );
        let ix = Index::open(&sound).expect("open");
        assert_eq!(ix.quick_check().expect("check"), None);
        assert_eq!(check_file(&sound).expect("check"), None);
        let damaged = damaged_db(dir.path());
        assert!(check_file(&damaged).expect("check").is_some());
        std::fs::write(&damaged, b"not a database at all, just text").expect("garbage");
        assert!(
            check_file(&damaged).expect("check").is_some(),
            "not a database is damage"
        );
    }

    #[test]
    fn move_aside_moves_every_file_and_a_fresh_index_opens() {
        let dir = tempfile::tempdir().expect("tempdir");
        let damaged = damaged_db(dir.path());
        std::fs::write(dir.path().join("index.db-wal"), b"old log").expect("wal");
        let moved = move_aside(&damaged, "20260101T000000Z").expect("move");
        assert_eq!(moved.db, dir.path().join("index.db.corrupt-20260101T000000Z"));
        assert!(moved.db.exists() && !damaged.exists());
        assert!(
            dir.path().join("index.db.corrupt-20260101T000000Z-wal").exists(),
            "the log moves with its database"
        );
        assert!(!dir.path().join("index.db-wal").exists());
        let fresh = Index::open(&damaged).expect("a fresh file");
        assert_eq!(fresh.quick_check().expect("check"), None);
        let again = move_aside(&damaged, "20260101T000000Z");
        assert!(again.is_err(), "an existing target is never overwritten");
    }
}
