//! `project_aliases`: alternate ids (cwd hashes) of a project, shared with the reference.
//!
//! Recording an alias is on every store and recall path, so it must cost nothing when nothing changes: an alias this
//! process recorded or read in the last [`KNOWN_ALIAS_TTL`] is not looked at again, a known-unchanged one is read
//! (never written), and only a new or re-pointed alias opens a write transaction.

use crate::row::{format_db_ts, parse_db_ts};
use crate::{Index, Result};
use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long an alias seen recorded is trusted without reading the table again (another process may re-point it;
/// after this time the next call reads, and re-points it back when this caller's mapping differs).
pub const KNOWN_ALIAS_TTL: Duration = Duration::from_secs(60);

/// Most aliases remembered per index handle; past it the memory is cleared.
const KNOWN_ALIAS_CAP: usize = 1024;

/// `alias -> (project_id, kind, when seen)` of aliases known to be recorded.
#[derive(Debug, Default)]
pub(crate) struct KnownAliases(Mutex<HashMap<String, (String, String, Instant)>>);

impl KnownAliases {
    fn is_known(&self, alias: &str, project_id: &str, kind: &str) -> bool {
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(alias)
            .is_some_and(|(p, k, at)| p == project_id && k == kind && at.elapsed() < KNOWN_ALIAS_TTL)
    }

    fn remember(&self, alias: &str, project_id: &str, kind: &str) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= KNOWN_ALIAS_CAP {
            map.clear();
        }
        map.insert(
            alias.to_owned(),
            (project_id.to_owned(), kind.to_owned(), Instant::now()),
        );
    }
}

const SELECT_ALIAS: &str = "SELECT project_id, kind FROM project_aliases WHERE alias = ?1";

/// One row of `project_aliases`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectAlias {
    /// The alternate id (primary key: an alias maps to exactly one project).
    pub alias: String,
    /// The canonical project id.
    pub project_id: String,
    /// How the alias arose: `cwd_hash`, `git_remote` or `manual` (the reference's values).
    pub kind: String,
    /// When it was recorded (`None` when the column is NULL or unreadable).
    pub created_at: Option<DateTime<Utc>>,
}

impl Index {
    /// Record that `alias` names `project_id`, as the reference's `record_project_alias` does: nothing happens when
    /// either is empty or they are equal; an existing alias is re-pointed (project id and kind updated, created_at
    /// kept). Returns whether a row was inserted or changed.
    ///
    /// Writes only when something changes: an alias recorded or seen by this handle in the last
    /// [`KNOWN_ALIAS_TTL`] costs no query, an unchanged one costs one read, and only a new or re-pointed alias opens
    /// a write transaction.
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn add_alias(&self, project_id: &str, alias: &str, kind: &str, now: DateTime<Utc>) -> Result<bool> {
        if project_id.is_empty() || alias.is_empty() || project_id == alias {
            return Ok(false);
        }
        if self.known_aliases.is_known(alias, project_id, kind) {
            return Ok(false);
        }
        let current: Option<(String, String)> = self.read(|tx| {
            Ok(tx
                .prepare_cached(SELECT_ALIAS)?
                .query_row([alias], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?)
        })?;
        if current.as_ref().is_some_and(|(p, k)| p == project_id && k == kind) {
            self.known_aliases.remember(alias, project_id, kind);
            return Ok(false);
        }
        let changed = self.write(|tx| {
            // Read again under the write lock: another writer may have recorded it since.
            let existing: Option<(String, String)> = tx
                .prepare_cached(SELECT_ALIAS)?
                .query_row([alias], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            match existing {
                Some((p, k)) if p == project_id && k == kind => Ok(false),
                Some(_) => {
                    tx.prepare_cached("UPDATE project_aliases SET project_id = ?1, kind = ?2 WHERE alias = ?3")?
                        .execute(params![project_id, kind, alias])?;
                    Ok(true)
                }
                None => {
                    tx.prepare_cached(
                        "INSERT INTO project_aliases (alias, project_id, kind, created_at) VALUES (?1, ?2, ?3, ?4)",
                    )?
                    .execute(params![alias, project_id, kind, format_db_ts(now)])?;
                    Ok(true)
                }
            }
        })?;
        self.known_aliases.remember(alias, project_id, kind);
        Ok(changed)
    }

    /// Every alias of `project_id` (all kinds), oldest first then by alias. Recall uses those of kind `cwd_hash`.
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn aliases(&self, project_id: &str) -> Result<Vec<ProjectAlias>> {
        self.read(|tx| {
            let out = tx
                .prepare_cached(
                    "SELECT alias, project_id, kind, created_at FROM project_aliases WHERE project_id = ?1
                     ORDER BY created_at, alias",
                )?
                .query_map([project_id], |r| {
                    let created: Option<String> = r.get(3)?;
                    Ok(ProjectAlias {
                        alias: r.get(0)?,
                        project_id: r.get(1)?,
                        kind: r.get(2)?,
                        created_at: created.as_deref().and_then(parse_db_ts),
                    })
                })?
                .collect::<rusqlite::Result<_>>()?;
            Ok(out)
        })
    }
}
