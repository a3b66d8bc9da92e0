//! The containers overview (the operator UI's first page): for each wiki container (`global`, `federated`, each
//! project), how many memories it holds per scope, when it was last written, and its journal's counters with the
//! size of its view against the 32 KiB limit (spec 001 "The view").
//!
//! Costs: one grouped count over the index's `(scope, scope_id)` index, then per container with a journal the
//! journal's counters (`cao_journal::status`) and its newest entry (one point query). Nothing is opened or written
//! for a container that has no journal yet; no access is counted.

use crate::error::MemoryError;
use crate::store::Store;
use cao_core::container::{FEDERATED_CONTAINER, GLOBAL_CONTAINER};
use cao_core::{Container, Scope};
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::BTreeMap;

/// The journal side of one container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JournalSummary {
    /// N, the number of entries.
    pub entries: u64,
    /// Bytes of the view state as rendered (tags included); the limit is [`cao_journal::VIEW_MAX_BYTES`]. May
    /// exceed it while summaries are pending.
    pub view_bytes: u64,
    /// Entry lines not summarized yet.
    pub unwritten: u64,
    /// Written lines of the summary tree.
    pub lines: u64,
    /// When the newest entry was appended (the container's last write through the tool).
    pub last_write: Option<DateTime<Utc>>,
}

/// One container of the overview.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContainerSummary {
    /// `global`, `federated` or a project id.
    pub container: String,
    /// Native memories per scope held in it (global: global, session, agent; federated: federated; a project:
    /// project), scopes in precedence order of [`Scope`]'s `Ord`.
    pub counts: Vec<(Scope, u64)>,
    /// The sum of `counts`.
    pub memories: u64,
    /// Its journal; `None` when it has none yet.
    pub journal: Option<JournalSummary>,
}

/// Every container that holds a memory or has a journal: `global` first, then `federated`, then the projects by
/// name. `global` and `federated` are always listed.
///
/// Errors: [`MemoryError::Io`] when the database was removed or replaced; index and journal errors.
pub(crate) fn containers(store: &Store) -> Result<Vec<ContainerSummary>, MemoryError> {
    store.prepare_read()?;
    let mut by_container: BTreeMap<String, BTreeMap<Scope, u64>> = BTreeMap::new();
    by_container.entry(GLOBAL_CONTAINER.to_owned()).or_default();
    by_container.entry(FEDERATED_CONTAINER.to_owned()).or_default();
    for (scope, scope_id, n) in store.index().scope_counts()? {
        let container = Container::of(scope, scope_id.as_deref()).into_string();
        if container.is_empty() {
            continue;
        }
        *by_container.entry(container).or_default().entry(scope).or_default() += n;
    }
    let journals: Vec<String> = store.index().journal_read(|j| Ok::<_, MemoryError>(j.containers()?))?;
    for name in journals {
        by_container.entry(name).or_default();
    }
    let now = store.now();
    let mut out = Vec::with_capacity(by_container.len());
    for (container, counts) in by_container {
        let journal = if cao_journal::has_journal(store.index(), &container)? {
            let status = cao_journal::status(store.index(), &container, now)?;
            let last = match status.entries.checked_sub(1) {
                Some(id) => store
                    .index()
                    .journal_read(|j| Ok::<_, MemoryError>(j.entry(&container, id)?))?
                    .map(|e| e.at),
                None => None,
            };
            Some(JournalSummary {
                entries: status.entries,
                view_bytes: status.view_bytes,
                unwritten: status.unwritten,
                lines: status.lines,
                last_write: last,
            })
        } else {
            None
        };
        let counts: Vec<(Scope, u64)> = counts.into_iter().collect();
        out.push(ContainerSummary {
            memories: counts.iter().map(|(_, n)| n).sum(),
            container,
            counts,
            journal,
        });
    }
    let rank = |c: &str| match c {
        GLOBAL_CONTAINER => 0,
        FEDERATED_CONTAINER => 1,
        _ => 2,
    };
    out.sort_by(|a, b| {
        rank(&a.container)
            .cmp(&rank(&b.container))
            .then_with(|| a.container.cmp(&b.container))
    });
    Ok(out)
}
