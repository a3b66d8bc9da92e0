//! `project_aliases`: alternate ids (cwd hashes) of a project, shared with the reference.

use crate::row::{format_db_ts, parse_db_ts};
use crate::{Index, Result};
use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};

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
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn add_alias(&self, project_id: &str, alias: &str, kind: &str, now: DateTime<Utc>) -> Result<bool> {
        if project_id.is_empty() || alias.is_empty() || project_id == alias {
            return Ok(false);
        }
        self.write(|tx| {
            let existing: Option<(String, String)> = tx
                .prepare_cached("SELECT project_id, kind FROM project_aliases WHERE alias = ?1")?
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
        })
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
