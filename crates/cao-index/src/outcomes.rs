//! `workflow_outcomes`: one row per unit of agent work reported through the self-learning loop (spec 004 "Phase 1
//! — outcome capture"; spec/reference-facts.md "Outcomes, lessons, promotion"). The table has the reference's name
//! and columns, so either implementation reads the other's rows.
//!
//! Columns: `id` (uuid text), `session_name` (required), `workflow_name`, `task_label` (required), `agent_profile`,
//! `source_terminal_id`, `success` (0/1), `score` (0..100 or NULL), `friction_notes` (text, `''` when none),
//! `created_at` (the reference's datetime text, see [`format_db_ts`]). Indexed by `(session_name, created_at)` and
//! `(agent_profile, created_at)` (migration 8).
//!
//! This module only stores and reads rows; the rules for what may be stored (trimming, caps, the score range) are
//! `cao-learn`'s.

use crate::row::{format_db_ts, parse_db_ts};
use crate::{Index, Result};
use chrono::{DateTime, Utc};
use rusqlite::params_from_iter;
use rusqlite::types::Value as SqlValue;

/// One outcome (a row of `workflow_outcomes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutcomeRow {
    /// The outcome id (a uuid4 in text form).
    pub id: String,
    /// The session the work belonged to.
    pub session_name: String,
    /// A grouping label (e.g. `ssis-migration`), if any.
    pub workflow_name: Option<String>,
    /// A short label of the unit of work.
    pub task_label: String,
    /// The agent profile the work was done by, if known.
    pub agent_profile: Option<String>,
    /// The terminal that reported it, if known.
    pub source_terminal_id: Option<String>,
    /// Whether the work succeeded.
    pub success: bool,
    /// An optional 0..=100 quality metric.
    pub score: Option<i64>,
    /// What was hard or wrong (`""` when nothing was said).
    pub friction_notes: String,
    /// When it was recorded; `None` when a stored value cannot be read.
    pub created_at: Option<DateTime<Utc>>,
}

/// Which outcomes [`Index::outcomes`] returns: the rows matching every given field (exact match), newest first,
/// at most `limit`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutcomeFilter<'a> {
    /// Only this session.
    pub session_name: Option<&'a str>,
    /// Only this agent profile.
    pub agent_profile: Option<&'a str>,
    /// Only this workflow.
    pub workflow_name: Option<&'a str>,
    /// Most rows returned.
    pub limit: usize,
}

impl Index {
    /// Insert one outcome, with `created_at` (`None` = `at`) written in the reference's datetime format.
    ///
    /// Errors: [`crate::IndexError::Sqlite`] (e.g. a duplicate id) / [`crate::IndexError::Pool`].
    pub fn insert_outcome(&self, row: &OutcomeRow, at: DateTime<Utc>) -> Result<()> {
        let created = format_db_ts(row.created_at.unwrap_or(at));
        self.write(|tx| {
            tx.prepare_cached(
                "INSERT INTO workflow_outcomes (id, session_name, workflow_name, task_label, agent_profile,
                   source_terminal_id, success, score, friction_notes, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?
            .execute(rusqlite::params![
                row.id,
                row.session_name,
                row.workflow_name,
                row.task_label,
                row.agent_profile,
                row.source_terminal_id,
                row.success,
                row.score,
                row.friction_notes,
                created,
            ])?;
            Ok(())
        })
    }

    /// Outcomes per agent profile: `(agent_profile, outcomes, successes)`, by agent profile (`None`, outcomes
    /// without one, first). One grouped pass over the agent index.
    ///
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn outcome_counts(&self) -> Result<Vec<(Option<String>, u64, u64)>> {
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT agent_profile, count(*), coalesce(sum(success = 1), 0) FROM workflow_outcomes
                 GROUP BY agent_profile ORDER BY agent_profile",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok((r.get::<_, Option<String>>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (agent, n, ok) = row?;
                out.push((agent, u64::try_from(n).unwrap_or(0), u64::try_from(ok).unwrap_or(0)));
            }
            Ok(out)
        })
    }

    /// The outcomes matching `filter`, newest first (`created_at` descending, then the later insert first), at most
    /// `filter.limit`. Served by the session or agent index when that filter is given.
    ///
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn outcomes(&self, filter: &OutcomeFilter<'_>) -> Result<Vec<OutcomeRow>> {
        let mut sql = String::from(
            "SELECT id, session_name, workflow_name, task_label, agent_profile, source_terminal_id, success, score,
                    friction_notes, created_at
             FROM workflow_outcomes WHERE 1 = 1",
        );
        let mut args: Vec<SqlValue> = Vec::new();
        for (column, value) in [
            ("session_name", filter.session_name),
            ("agent_profile", filter.agent_profile),
            ("workflow_name", filter.workflow_name),
        ] {
            if let Some(v) = value {
                // Column names are constants; values are bound.
                sql.push_str(&format!(" AND {column} = ?{}", args.len() + 1));
                args.push(SqlValue::Text(v.to_owned()));
            }
        }
        sql.push_str(&format!(
            " ORDER BY created_at DESC, rowid DESC LIMIT ?{}",
            args.len() + 1
        ));
        args.push(SqlValue::Integer(i64::try_from(filter.limit).unwrap_or(i64::MAX)));
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(&sql)?;
            let rows = stmt.query_map(params_from_iter(args.iter()), |r| {
                let created: Option<String> = r.get(9)?;
                let success: Option<i64> = r.get(6)?;
                let notes: Option<String> = r.get(8)?;
                Ok(OutcomeRow {
                    id: r.get(0)?,
                    session_name: r.get(1)?,
                    workflow_name: r.get(2)?,
                    task_label: r.get(3)?,
                    agent_profile: r.get(4)?,
                    source_terminal_id: r.get(5)?,
                    success: success.is_some_and(|s| s != 0),
                    score: r.get(7)?,
                    friction_notes: notes.unwrap_or_default(),
                    created_at: created.as_deref().and_then(parse_db_ts),
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn row(id: &str, session: &str, agent: Option<&str>, workflow: Option<&str>) -> OutcomeRow {
        OutcomeRow {
            id: id.into(),
            session_name: session.into(),
            workflow_name: workflow.map(Into::into),
            task_label: format!("label {id}"),
            agent_profile: agent.map(Into::into),
            source_terminal_id: None,
            success: id.len().is_multiple_of(2),
            score: Some(42),
            friction_notes: String::new(),
            created_at: None,
        }
    }

    #[test]
    fn outcomes_round_trip_newest_first_with_filters() {
        let dir = tempfile::tempdir().expect("tempdir");
        let index = Index::open(&dir.path().join("db").join("x.db")).expect("open");
        let t = |s: i64| Utc.timestamp_opt(1_700_000_000 + s, 0).single().expect("valid time");
        index.insert_outcome(&row("a", "s1", Some("w"), None), t(0)).expect("a");
        index
            .insert_outcome(&row("bb", "s1", None, Some("wf")), t(5))
            .expect("b");
        index
            .insert_outcome(&row("c", "s2", Some("w"), Some("wf")), t(5))
            .expect("c");
        index
            .insert_outcome(&row("dd", "s1", Some("w"), None), t(1))
            .expect("d");
        let ids = |f: OutcomeFilter<'_>| -> Vec<String> {
            index.outcomes(&f).expect("list").into_iter().map(|r| r.id).collect()
        };
        let all = OutcomeFilter {
            limit: 10,
            ..Default::default()
        };
        assert_eq!(ids(all), ["c", "bb", "dd", "a"], "same time: the later insert first");
        assert_eq!(
            ids(OutcomeFilter {
                session_name: Some("s1"),
                ..all
            }),
            ["bb", "dd", "a"]
        );
        assert_eq!(
            ids(OutcomeFilter {
                agent_profile: Some("w"),
                workflow_name: Some("wf"),
                ..all
            }),
            ["c"]
        );
        assert_eq!(ids(OutcomeFilter { limit: 2, ..all }), ["c", "bb"]);
        assert!(
            ids(OutcomeFilter {
                session_name: Some("' OR 1=1 --"),
                ..all
            })
            .is_empty()
        );
        let first = index.outcomes(&OutcomeFilter { limit: 1, ..all }).expect("list");
        assert_eq!(first[0].created_at, Some(t(5)));
        assert_eq!((first[0].success, first[0].score), (false, Some(42)));
        assert!(
            index.insert_outcome(&row("a", "s9", None, None), t(9)).is_err(),
            "ids are unique"
        );
    }
}
