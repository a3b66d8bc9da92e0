//! Who wrote a memory's current version: its newest journal entry's terminal and session, and the agent profile
//! that terminal is registered with (`POST /terminals`). The promotion plan shows it for every lesson it would
//! add or update, so a reviewer sees which terminal, acting as which agent, wrote the text about to become a
//! standing instruction. A registered terminal cannot name another profile than its registration's (the MCP
//! routes refuse it, `terminal_context_mismatch`), so the registered profile is the writer's.

use cao_core::{Container, Key, Scope};
use cao_store::MemoryError;
use cao_store::Store;
use serde::Serialize;

/// The writer of a memory's current version. A field is `None` when the write did not carry it (a CLI import, a
/// caller without a terminal id, a file edited by hand) or the terminal is not registered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LessonWriter {
    /// The writing terminal's id (`CAO_TERMINAL_ID`, `X-CAO-Terminal-Id`).
    pub terminal_id: Option<String>,
    /// The agent profile that terminal is registered with.
    pub agent_profile: Option<String>,
    /// The writer's session name.
    pub session: Option<String>,
}

impl LessonWriter {
    /// One line for a plan: `written by terminal T (agent profile P, session S)`, or what is unknown.
    pub fn describe(&self) -> String {
        let Some(t) = &self.terminal_id else {
            return match &self.session {
                Some(s) => format!("written without a terminal id (session {s})"),
                None => "written without a terminal id".to_owned(),
            };
        };
        let profile = self
            .agent_profile
            .as_deref()
            .map_or_else(|| "unregistered terminal".to_owned(), |p| format!("agent profile {p}"));
        match &self.session {
            Some(s) => format!("written by terminal {t} ({profile}, session {s})"),
            None => format!("written by terminal {t} ({profile})"),
        }
    }
}

/// The writer of the current version of the memory `(scope, scope_id, key)`: its newest journal entry's writer,
/// completed with the registered profile of its terminal. `None` when the journal holds no entry of it.
///
/// Errors: [`MemoryError::Store`].
pub fn current_writer(
    store: &Store,
    scope: Scope,
    scope_id: Option<&str>,
    key: &Key,
) -> Result<Option<LessonWriter>, MemoryError> {
    let container = Container::of(scope, scope_id);
    let entry = store.snapshot().journal(|j| -> Result<_, MemoryError> {
        let ids = j.memory_entry_ids(container.as_str(), scope, scope_id, key)?;
        match ids.last() {
            Some(id) => Ok(j.entry(container.as_str(), *id)?),
            None => Ok(None),
        }
    })?;
    let Some(entry) = entry else {
        return Ok(None);
    };
    let writer = entry.writer;
    let agent_profile = match writer.terminal_id.as_deref() {
        Some(t) => store
            .snapshot()
            .terminal(t)?
            .and_then(|row| row.context().agent_profile),
        None => None,
    };
    Ok(Some(LessonWriter {
        terminal_id: writer.terminal_id,
        agent_profile,
        session: writer.session,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_says_what_is_known() {
        let full = LessonWriter {
            terminal_id: Some("t-1".into()),
            agent_profile: Some("worker".into()),
            session: Some("run-1".into()),
        };
        assert_eq!(
            full.describe(),
            "written by terminal t-1 (agent profile worker, session run-1)"
        );
        let unregistered = LessonWriter {
            agent_profile: None,
            session: None,
            ..full.clone()
        };
        assert_eq!(
            unregistered.describe(),
            "written by terminal t-1 (unregistered terminal)"
        );
        assert_eq!(LessonWriter::default().describe(), "written without a terminal id");
    }
}
