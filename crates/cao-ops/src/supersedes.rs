//! Supersedes state as recall, the operator views and explain read it (spec 000 "Supersedes lifecycle (opt-in)",
//! "On-demand relevance explain"): which memories are targets of active same-scope `supersedes` edges.
//!
//! - One [`Snapshot`] per call, read once per scope group; a group whose read fails is recorded and fails open
//!   alone (its rows count as not superseded) with a content-free warning naming the source, the purpose and the
//!   count. Snapshots never outlive the call.
//! - Labels ([`label`], [`Snapshot::label`]) are set on returned values only; no writer persists them.
//! - The lookup is the store's ([`Store::supersedes_lookup`]) when one was set, else the index's edge table.

use crate::types::{LifecycleStatus, Memory};
use cao_core::{MemoryRef, Scope};
use cao_lifecycle::eligibility::SUPERSEDES_SOURCE;
use cao_store::MemoryRow;
use cao_store::Store;
use std::collections::{HashMap, HashSet};

/// Supersedes state of one call: the active targets among the identities asked about, and the scope groups
/// `(scope, scope_id)` whose read failed (their rows count as not superseded: fail open).
#[derive(Debug, Default, Clone)]
pub struct Snapshot {
    /// The active supersedes targets among the identities asked about.
    pub targets: HashSet<MemoryRef>,
    /// The scope groups whose read failed (their rows count as not superseded).
    pub failed: HashSet<(Scope, Option<String>)>,
    /// Every identity the snapshot was read for (healthy or failed group).
    pub asked: HashSet<MemoryRef>,
}

impl Snapshot {
    /// Whether this snapshot answers for `row` (it was asked about it), so no second read is needed.
    pub fn covers(&self, row: &MemoryRow) -> bool {
        self.asked.contains(&row.memory_ref())
    }

    /// Whether the row is an active supersedes target in this snapshot (no identity is built when there is none).
    pub fn row_superseded(&self, r: &MemoryRow) -> bool {
        !self.targets.is_empty() && self.targets.contains(&r.memory_ref())
    }

    /// Whether the read of the scope group `(scope, scope_id)` failed.
    pub fn failed_for(&self, scope: Scope, scope_id: Option<&str>) -> bool {
        !self.failed.is_empty() && self.failed.contains(&(scope, scope_id.map(str::to_owned)))
    }

    /// Label `memories[i]` (built from `rows[i]`) when `rows[i]` is an active target in this snapshot.
    pub fn label(&self, rows: &[MemoryRow], memories: &mut [Memory]) {
        for (row, m) in rows.iter().zip(memories.iter_mut()) {
            if self.row_superseded(row) {
                m.lifecycle_status = Some(LifecycleStatus::Superseded);
            }
        }
    }
}

/// Read the supersedes state of `ids` once, one read per scope group; a failed group is recorded and warned about
/// (content-free: source, purpose, count) and fails open.
pub fn snapshot<'a>(store: &Store, ids: impl Iterator<Item = &'a MemoryRef>, purpose: &str) -> Snapshot {
    let mut groups: HashMap<(Scope, Option<String>), Vec<&MemoryRef>> = HashMap::new();
    let mut snap = Snapshot::default();
    for id in ids {
        if snap.asked.insert(id.clone()) {
            groups.entry((id.scope, id.scope_id.clone())).or_default().push(id);
        }
    }
    let mut keys: Vec<_> = groups.keys().cloned().collect();
    keys.sort();
    for group in keys {
        let batch = &groups[&group];
        let read = match store.supersedes_lookup() {
            Some(lookup) => lookup(batch),
            None => store
                .snapshot()
                .active_supersedes_targets(batch)
                .map_err(|e| e.to_string()),
        };
        match read {
            Ok(set) => snap.targets.extend(set),
            Err(_) => {
                // The injection registry's failed-open warning: source, purpose, count; never keys or content.
                tracing::warn!(
                    source = SUPERSEDES_SOURCE,
                    purpose,
                    count = batch.len(),
                    "eligibility source failed open for a batch of {} candidates",
                    batch.len()
                );
                snap.failed.insert(group);
            }
        }
    }
    snap
}

/// The identities of `rows` that are targets of active same-scope supersedes edges: the targets of one
/// [`snapshot`].
pub fn superseded(store: &Store, rows: &[MemoryRow], purpose: &str) -> HashSet<MemoryRef> {
    let ids: Vec<MemoryRef> = rows.iter().map(MemoryRow::memory_ref).collect();
    snapshot(store, ids.iter(), purpose).targets
}

/// Label `memories[i]` (built from `rows[i]`) when it is an active supersedes target (one snapshot).
pub fn label(store: &Store, rows: &[MemoryRow], memories: &mut [Memory]) {
    let ids: Vec<MemoryRef> = rows.iter().map(MemoryRow::memory_ref).collect();
    snapshot(store, ids.iter(), "lifecycle_label").label(rows, memories);
}
