//! `cao_terminals`: terminals registered with `cao-server` (`POST /terminals`), so a terminal id
//! (`CAO_TERMINAL_ID`) resolves to its session, agent profile, provider and working directory, across server
//! restarts.

use crate::row::{format_db_ts, parse_db_ts};
use crate::{Index, Result};
use cao_core::TerminalContext;
use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};

/// One registered terminal (a row of `cao_terminals`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalRow {
    /// The terminal id (primary key).
    pub id: String,
    /// The provider (`claude_code`, `codex`, `kiro_cli`, ...).
    pub provider: String,
    /// The session name, if any.
    pub session_name: Option<String>,
    /// The agent profile, if any.
    pub agent_profile: Option<String>,
    /// The working directory (absolute path), if any.
    pub cwd: Option<String>,
    /// First registration (`None` when unreadable).
    pub created_at: Option<DateTime<Utc>>,
    /// Last registration (`None` when unreadable).
    pub updated_at: Option<DateTime<Utc>>,
}

impl TerminalRow {
    /// The caller context of this terminal: its id, session, agent profile, provider and cwd (no explicit project
    /// id, so the project is derived from the cwd as for any caller).
    pub fn context(&self) -> TerminalContext {
        TerminalContext {
            terminal_id: Some(self.id.clone()),
            session_name: self.session_name.clone(),
            agent_profile: self.agent_profile.clone(),
            provider: Some(self.provider.clone()),
            cwd: self.cwd.as_ref().map(std::path::PathBuf::from),
            project_id: None,
        }
    }
}

impl Index {
    /// Register (or re-register) a terminal: a new id is inserted; an existing one gets the new provider, session,
    /// agent and cwd and keeps its `created_at`. Returns the stored row and whether it was inserted.
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn upsert_terminal(&self, row: &TerminalRow, now: DateTime<Utc>) -> Result<(TerminalRow, bool)> {
        let now_s = format_db_ts(now);
        let inserted = self.write(|tx| {
            let exists = tx
                .prepare_cached("SELECT 1 FROM cao_terminals WHERE id = ?1")?
                .query_row([&row.id], |_| Ok(()))
                .optional()?
                .is_some();
            tx.prepare_cached(
                "INSERT INTO cao_terminals (id, provider, session_name, agent_profile, cwd, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)
                 ON CONFLICT (id) DO UPDATE SET provider = excluded.provider, session_name = excluded.session_name,
                   agent_profile = excluded.agent_profile, cwd = excluded.cwd, updated_at = excluded.updated_at",
            )?
            .execute(params![
                row.id,
                row.provider,
                row.session_name,
                row.agent_profile,
                row.cwd,
                now_s
            ])?;
            Ok(!exists)
        })?;
        let stored = self.terminal(&row.id)?.unwrap_or_else(|| TerminalRow {
            created_at: Some(now),
            updated_at: Some(now),
            ..row.clone()
        });
        Ok((stored, inserted))
    }

    /// The registered terminal `id`, if any.
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn terminal(&self, id: &str) -> Result<Option<TerminalRow>> {
        self.read(|tx| {
            let row = tx
                .prepare_cached(
                    "SELECT id, provider, session_name, agent_profile, cwd, created_at, updated_at
                     FROM cao_terminals WHERE id = ?1",
                )?
                .query_row([id], |r| {
                    let created: Option<String> = r.get(5)?;
                    let updated: Option<String> = r.get(6)?;
                    Ok(TerminalRow {
                        id: r.get(0)?,
                        provider: r.get(1)?,
                        session_name: r.get(2)?,
                        agent_profile: r.get(3)?,
                        cwd: r.get(4)?,
                        created_at: created.as_deref().and_then(parse_db_ts),
                        updated_at: updated.as_deref().and_then(parse_db_ts),
                    })
                })
                .optional()?;
            Ok(row)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn register_reregister_and_survive_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db").join("x.db");
        let index = Index::open(&path).expect("open");
        let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().expect("valid time");
        let t1 = Utc.with_ymd_and_hms(2026, 1, 2, 0, 0, 0).single().expect("valid time");
        let row = TerminalRow {
            id: "t-1".into(),
            provider: "codex".into(),
            session_name: Some("sess".into()),
            agent_profile: None,
            cwd: Some("/w/p".into()),
            created_at: None,
            updated_at: None,
        };
        assert!(index.terminal("t-1").expect("read").is_none());
        let (stored, inserted) = index.upsert_terminal(&row, t0).expect("insert");
        assert!(inserted);
        assert_eq!(stored.created_at, Some(t0));
        let changed = TerminalRow {
            provider: "claude_code".into(),
            ..row.clone()
        };
        let (stored, inserted) = index.upsert_terminal(&changed, t1).expect("update");
        assert!(!inserted);
        assert_eq!(stored.provider, "claude_code");
        assert_eq!((stored.created_at, stored.updated_at), (Some(t0), Some(t1)));
        drop(index);
        let again = Index::open(&path).expect("reopen");
        assert_eq!(
            again.terminal("t-1").expect("read").map(|r| r.provider),
            Some("claude_code".into())
        );
    }
}
