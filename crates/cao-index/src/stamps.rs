//! What the store recorded of the wiki files, so it can notice changes made outside the tool without reading or
//! `stat`ing every file: the [`FileStamp`] of each native row's topic file (columns `file_size`, `file_ctime_ns`,
//! `file_ino` of `memory_metadata`), and in `cao_wiki_dirs` the stamp of each scope directory whose files all
//! agreed with their rows when it was recorded.
//!
//! Invariant of `cao_wiki_dirs` (kept by the caller, `cao-memory`'s store): a row `(scope, scope id, stamp)` means
//! that after the directory of that scope and scope id had `stamp`, every topic file in it had a row agreeing with
//! it. Any later creation, removal or rename in the directory changes the directory's stamp, so while the stamp is
//! unchanged, the directory holds the same names. The table is cleared when `memory_metadata` is rebuilt by
//! another program (`crate::schema`).

use crate::row::RowStamp;
use crate::{Index, Result};
use cao_core::fs::FileStamp;
use cao_core::{Key, MemoryRef, Scope};
use rusqlite::{Row, Transaction, params};

/// One row of `cao_wiki_dirs`: the stamp of a scope directory when every file in it agreed with its row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WikiDirStamp {
    /// The scope of the directory's files.
    pub scope: Scope,
    /// Their scope id (`None` for global and federated).
    pub scope_id: Option<String>,
    /// The directory's stamp (size, ctime, inode).
    pub stamp: FileStamp,
}

/// `scope_id` as the key column stores it (`''` for none; scope ids are never empty).
fn scope_id_key(scope_id: Option<&str>) -> &str {
    scope_id.unwrap_or("")
}

/// The columns [`decode_stamp_row`] reads, after a leading `rowid`.
const STAMP_COLUMNS: &str = "rowid, scope, scope_id, \"key\", file_path, file_size, file_ctime_ns, file_ino";

/// One row of a [`STAMP_COLUMNS`] query: its rowid and, when its scope and key decode, its [`RowStamp`].
fn decode_stamp_row(r: &Row<'_>) -> rusqlite::Result<(i64, Option<RowStamp>)> {
    let rowid: i64 = r.get(0)?;
    let scope = r.get::<_, Option<String>>(1)?;
    let key = r.get::<_, Option<String>>(3)?;
    let (Some(Ok(scope)), Some(Ok(key))) = (
        scope.as_deref().map(str::parse::<Scope>),
        key.as_deref().map(Key::parse_strict),
    ) else {
        return Ok((rowid, None));
    };
    let stamp = match (
        r.get::<_, Option<i64>>(5)?,
        r.get::<_, Option<i64>>(6)?,
        r.get::<_, Option<i64>>(7)?,
    ) {
        (Some(size), Some(changed_ns), Some(inode)) => Some(FileStamp {
            size,
            changed_ns,
            inode,
        }),
        _ => None,
    };
    Ok((
        rowid,
        Some(RowStamp {
            memory: MemoryRef::new(scope, r.get(2)?, key),
            file_path: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
            stamp,
        }),
    ))
}

/// Decodable native rows with `after < rowid <= upto`, in rowid order, looking at most `limit` rows; returns them,
/// the rowid of the last row looked at (decodable or not; `None` when there was none) and how many were looked at.
fn stamps_between(
    tx: &Transaction<'_>,
    after: i64,
    upto: i64,
    limit: usize,
) -> Result<(Vec<RowStamp>, Option<i64>, usize)> {
    let mut stmt = tx.prepare_cached(&format!(
        "SELECT {STAMP_COLUMNS} FROM memory_metadata WHERE rowid > ?1 AND rowid <= ?2 AND source_kind = 'native'
         ORDER BY rowid LIMIT ?3"
    ))?;
    let (mut last, mut looked, mut out) = (None, 0, Vec::new());
    for row in stmt.query_map(
        params![after, upto, i64::try_from(limit).unwrap_or(i64::MAX)],
        decode_stamp_row,
    )? {
        let (rowid, stamp) = row?;
        last = Some(rowid);
        looked += 1;
        out.extend(stamp);
    }
    Ok((out, last, looked))
}

impl Index {
    /// Every decodable native row of one scope and scope id: identity, stored topic file path and recorded
    /// [`FileStamp`] (`None` when unknown). Reads no content; uses the `(scope, scope_id)` index.
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn file_stamps_in(&self, scope: Scope, scope_id: Option<&str>) -> Result<Vec<RowStamp>> {
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(&format!(
                "SELECT {STAMP_COLUMNS} FROM memory_metadata
                 WHERE scope = ?1 AND scope_id IS ?2 AND source_kind = 'native'"
            ))?;
            let rows = stmt.query_map(params![scope.as_str(), scope_id], decode_stamp_row)?;
            let mut out = Vec::new();
            for row in rows {
                out.extend(row?.1);
            }
            Ok(out)
        })
    }

    /// The next `limit` native rows after rowid `after` in rowid order, wrapping around to the first row once, so
    /// successive calls, each passing the cursor the previous one returned, visit every row in turn (a table of at
    /// most `limit` rows is returned whole by every call). Returns the decodable rows (as
    /// [`Index::file_stamps_in`]) and the cursor to pass next. Reads no content; a rowid range of the table.
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn file_stamps_rotation(&self, after: i64, limit: usize) -> Result<(Vec<RowStamp>, i64)> {
        self.read(|tx| {
            let (mut rows, last, looked) = stamps_between(tx, after, i64::MAX, limit)?;
            let mut cursor = last.unwrap_or(after);
            if looked < limit {
                // The end of the table: go on from its start, up to where this call started.
                let (more, last, _) = stamps_between(tx, i64::MIN, after, limit - looked)?;
                rows.extend(more);
                cursor = last.unwrap_or(cursor);
            }
            Ok((rows, cursor))
        })
    }

    /// The largest rowid of `memory_metadata` (0 when empty), to start a rotation ([`Index::file_stamps_rotation`])
    /// at a point of the caller's choice. Constant time. Errors: [`crate::IndexError::Sqlite`] /
    /// [`crate::IndexError::Pool`].
    pub fn max_row_id(&self) -> Result<i64> {
        self.read(|tx| Ok(tx.query_row("SELECT coalesce(max(rowid), 0) FROM memory_metadata", [], |r| r.get(0))?))
    }

    /// Every row of `cao_wiki_dirs` (see the module documentation). Rows with an unknown scope are left out.
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn wiki_dir_stamps(&self) -> Result<Vec<WikiDirStamp>> {
        self.read(|tx| {
            let mut stmt = tx.prepare_cached("SELECT scope, scope_id_key, size, ctime_ns, ino FROM cao_wiki_dirs")?;
            let rows = stmt.query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    FileStamp {
                        size: r.get(2)?,
                        changed_ns: r.get(3)?,
                        inode: r.get(4)?,
                    },
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (scope, id, stamp) = row?;
                let Ok(scope) = scope.parse::<Scope>() else { continue };
                out.push(WikiDirStamp {
                    scope,
                    scope_id: (!id.is_empty()).then_some(id),
                    stamp,
                });
            }
            Ok(out)
        })
    }

    /// Record (`Some`) or forget (`None`) the stamp of the scope directory of `scope` and `scope_id` in
    /// `cao_wiki_dirs`. The caller records a stamp only under the module's invariant.
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn set_wiki_dir_stamp(&self, scope: Scope, scope_id: Option<&str>, stamp: Option<FileStamp>) -> Result<()> {
        self.write(|tx| {
            match stamp {
                Some(s) => tx
                    .prepare_cached(
                        "INSERT INTO cao_wiki_dirs (scope, scope_id_key, size, ctime_ns, ino) VALUES (?1, ?2, ?3, ?4, ?5)
                         ON CONFLICT (scope, scope_id_key) DO UPDATE SET size = ?3, ctime_ns = ?4, ino = ?5",
                    )?
                    .execute(params![
                        scope.as_str(),
                        scope_id_key(scope_id),
                        s.size,
                        s.changed_ns,
                        s.inode
                    ])?,
                None => tx
                    .prepare_cached("DELETE FROM cao_wiki_dirs WHERE scope = ?1 AND scope_id_key = ?2")?
                    .execute(params![scope.as_str(), scope_id_key(scope_id)])?,
            };
            Ok(())
        })
    }
}
