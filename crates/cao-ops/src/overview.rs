//! The containers overview (the operator UI's first page): for each wiki container (`global`, `federated`, each
//! project), how many memories it holds per scope, when it was last written, and its journal's counters with the
//! size of its view against the 32 KiB limit (spec 001 "The view").
//!
//! Costs: one grouped count over the index's `(scope, scope_id, source_kind)` index and, per `(scope, scope_id)`, the
//! rows created in the last [`SPARK_DAYS`] days counted per day on the `(scope, scope_id, created_at)` index: these
//! read every row, so they are kept per process and read again only when the index's change marks (row count,
//! each journal's entry count) or the day moved; then per container with a journal its stored counters
//! (`cao_journal::gauge`: read as they stand, the view is not caught up on a read) and its newest entry (one point
//! query). Nothing is opened or written for a container that has no journal yet; no access is counted.

use cao_core::container::{FEDERATED_CONTAINER, GLOBAL_CONTAINER};
use cao_core::{Container, Scope};
use cao_store::MemoryError;
use cao_store::Store;
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

/// The journal side of one container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JournalSummary {
    /// N, the number of entries.
    pub entries: u64,
    /// Bytes of the view state as rendered (tags included), as of the last entry a journal call caught up to;
    /// the limit is [`cao_journal::VIEW_MAX_BYTES`]. May exceed it while summaries are pending.
    pub view_bytes: u64,
    /// Entries appended since the view state was last caught up (the next journal call takes them in).
    pub behind: u64,
    /// Entry lines not summarized yet.
    pub unwritten: u64,
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
    /// Memories created per day over the last [`SPARK_DAYS`] days, oldest day first, today last (UTC days; a
    /// memory counts on the day it was first stored, and only while it exists).
    pub created_per_day: Vec<u64>,
}

/// Days of [`ContainerSummary::created_per_day`].
pub const SPARK_DAYS: usize = 30;

/// Every container that holds a memory or has a journal: `global` first, then `federated`, then the projects by
/// name. `global` and `federated` are always listed.
///
/// Errors: [`MemoryError::Io`] when the database was removed or replaced; index and journal errors.
pub fn containers(store: &Store) -> Result<Vec<ContainerSummary>, MemoryError> {
    store.read()?;
    let counted = counted(store)?;
    let mut by_container: BTreeMap<String, BTreeMap<Scope, u64>> = BTreeMap::new();
    by_container.entry(GLOBAL_CONTAINER.to_owned()).or_default();
    by_container.entry(FEDERATED_CONTAINER.to_owned()).or_default();
    for (scope, scope_id, n) in &counted.scope_counts {
        let container = Container::of(*scope, scope_id.as_deref()).into_string();
        if container.is_empty() {
            continue;
        }
        *by_container.entry(container).or_default().entry(*scope).or_default() += n;
    }
    let journals: Vec<String> = store.snapshot().journal(|j| Ok::<_, MemoryError>(j.containers()?))?;
    for name in journals {
        by_container.entry(name).or_default();
    }
    let mut per_day = counted.per_day.clone();
    let mut out = Vec::with_capacity(by_container.len());
    for (container, counts) in by_container {
        let journal = if cao_journal::has_journal(&*store.snapshot(), &container)? {
            let gauge = cao_journal::gauge(&*store.snapshot(), &container)?;
            let last = match gauge.entries.checked_sub(1) {
                Some(id) => store
                    .snapshot()
                    .journal(|j| Ok::<_, MemoryError>(j.entry(&container, id)?))?
                    .map(|e| e.at),
                None => None,
            };
            Some(JournalSummary {
                entries: gauge.entries,
                view_bytes: gauge.view_bytes,
                behind: gauge.entries.saturating_sub(gauge.view_end),
                unwritten: gauge.unwritten,
                last_write: last,
            })
        } else {
            None
        };
        let created_per_day = per_day.remove(&container).unwrap_or_else(|| vec![0; SPARK_DAYS]);
        let counts: Vec<(Scope, u64)> = counts.into_iter().collect();
        out.push(ContainerSummary {
            memories: counts.iter().map(|(_, n)| n).sum(),
            container,
            counts,
            journal,
            created_per_day,
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

/// The part of the overview that reads every row (counts per `(scope, scope_id)`, memories created per day per
/// container), as computed at some change marks on some day.
#[derive(Debug, Clone)]
struct Counted {
    scope_counts: Vec<(Scope, Option<String>, u64)>,
    per_day: BTreeMap<String, Vec<u64>>,
}

/// The last [`Counted`] of this process: the database it was read from, the UTC day, the change marks
/// (`Index::change_marks`) and the counts. One entry: an operator looks at one home.
type CountedCache = Option<(
    std::path::PathBuf,
    chrono::NaiveDate,
    (u64, Vec<(String, u64)>),
    Arc<Counted>,
)>;
static COUNTED: Mutex<CountedCache> = Mutex::new(None);

/// The counts of [`Counted`], read again only when the change marks or the day moved since the last read (a
/// change made through the tool moves them: it appends a journal entry or changes the number of indexed rows).
/// Between changes a page of the overview costs a few point reads instead of reading every row.
fn counted(store: &Store) -> Result<Arc<Counted>, MemoryError> {
    let marks = store.snapshot().change_marks()?;
    let today = store.now().date_naive();
    let path = store.home().db_path();
    {
        let cache = COUNTED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((p, day, m, c)) = cache.as_ref()
            && *p == path
            && *day == today
            && *m == marks
        {
            return Ok(Arc::clone(c));
        }
    }
    let scope_counts = store.snapshot().scope_counts()?;
    let first_day = today - chrono::Days::new(SPARK_DAYS as u64 - 1);
    let since = first_day.format("%Y-%m-%d").to_string();
    let mut per_day: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (scope, scope_id, _) in &scope_counts {
        let container = Container::of(*scope, scope_id.as_deref()).into_string();
        let days = per_day.entry(container).or_insert_with(|| vec![0; SPARK_DAYS]);
        for (day, n) in store.snapshot().created_per_day(*scope, scope_id.as_deref(), &since)? {
            let Ok(day) = chrono::NaiveDate::parse_from_str(&day, "%Y-%m-%d") else {
                continue;
            };
            let Ok(i) = usize::try_from((day - first_day).num_days()) else {
                continue;
            };
            if let Some(slot) = days.get_mut(i) {
                *slot += n;
            }
        }
    }
    let counted = Arc::new(Counted { scope_counts, per_day });
    *COUNTED.lock().unwrap_or_else(PoisonError::into_inner) = Some((path, today, marks, Arc::clone(&counted)));
    Ok(counted)
}
