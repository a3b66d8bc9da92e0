//! Supersedes state as recall, the operator views and explain read it (spec 000 "Supersedes lifecycle (opt-in)",
//! "On-demand relevance explain"): which memories are targets of active same-scope `supersedes` edges.
//!
//! - One [`Snapshot`] per call, read once per scope group; a group whose read fails is recorded and fails open
//!   alone (its rows count as not superseded) with a content-free warning naming the source, the purpose and the
//!   count. Snapshots never outlive the call.
//! - Labels ([`label`]) are set on returned values only; no writer persists them.
//! - The lookup is the store's ([`Store::supersedes_lookup`]) when one was set, else the index's edge table.

use crate::store::Store;
use crate::types::{LifecycleStatus, Memory};
use cao_core::Scope;
use cao_index::MemoryRow;
use cao_lifecycle::eligibility::SUPERSEDES_SOURCE;
use std::collections::{HashMap, HashSet};

/// A memory identity `(scope, scope_id, key)` as the supersedes snapshot holds it.
pub(crate) type Identity = (Scope, Option<String>, String);

/// The identity of an index row.
pub(crate) fn row_identity(r: &MemoryRow) -> Identity {
    (r.scope, r.scope_id.clone(), r.key.to_string())
}

/// The identity of a returned memory.
pub(crate) fn memory_identity(m: &Memory) -> Identity {
    (m.scope, m.scope_id.clone(), m.key.clone())
}

/// Supersedes state of one call: the active targets among the identities asked about, and the scope groups
/// `(scope, scope_id)` whose read failed (their rows count as not superseded: fail open).
#[derive(Debug, Default, Clone)]
pub(crate) struct Snapshot {
    pub(crate) targets: HashSet<Identity>,
    pub(crate) failed: HashSet<(Scope, Option<String>)>,
    /// Every identity the snapshot was read for (healthy or failed group).
    pub(crate) asked: HashSet<Identity>,
}

impl Snapshot {
    /// Whether this snapshot answers for `id` (it was asked about it), so no second read is needed.
    pub(crate) fn covers(&self, id: &Identity) -> bool {
        self.asked.contains(id)
    }

    /// Whether `id` is an active supersedes target in this snapshot.
    pub(crate) fn superseded(&self, id: &Identity) -> bool {
        self.targets.contains(id)
    }

    /// Whether the row is an active supersedes target in this snapshot (no identity is built when there is none).
    pub(crate) fn row_superseded(&self, r: &MemoryRow) -> bool {
        !self.targets.is_empty() && self.targets.contains(&row_identity(r))
    }

    /// Whether the read of `id`'s scope group failed.
    pub(crate) fn failed_for(&self, id: &Identity) -> bool {
        self.failed.contains(&(id.0, id.1.clone()))
    }
}

/// Read the supersedes state of `ids` once, one read per scope group; a failed group is recorded and warned about
/// (content-free: source, purpose, count) and fails open.
pub(crate) fn snapshot<'a>(store: &Store, ids: impl Iterator<Item = &'a Identity>, purpose: &str) -> Snapshot {
    let mut groups: HashMap<(Scope, Option<String>), Vec<&Identity>> = HashMap::new();
    let mut snap = Snapshot::default();
    for id in ids {
        if snap.asked.insert(id.clone()) {
            groups.entry((id.0, id.1.clone())).or_default().push(id);
        }
    }
    let mut keys: Vec<_> = groups.keys().cloned().collect();
    keys.sort();
    for group in keys {
        let batch: Vec<(Scope, Option<&str>, &str)> = groups[&group]
            .iter()
            .map(|(s, sid, k)| (*s, sid.as_deref(), k.as_str()))
            .collect();
        let read = match store.supersedes_lookup() {
            Some(lookup) => lookup(&batch),
            None => store
                .index()
                .active_supersedes_targets(&batch)
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

/// Identities among `ids` that are targets of active same-scope supersedes edges: the targets of one
/// [`snapshot`].
pub(crate) fn superseded<'a>(
    store: &Store,
    ids: impl Iterator<Item = &'a Identity>,
    purpose: &str,
) -> HashSet<Identity> {
    snapshot(store, ids, purpose).targets
}

/// Label every memory of `memories` that is an active supersedes target (one snapshot).
pub(crate) fn label(store: &Store, memories: &mut [Memory]) {
    let ids: Vec<Identity> = memories.iter().map(memory_identity).collect();
    let sup = superseded(store, ids.iter(), "lifecycle_label");
    for m in memories.iter_mut() {
        if sup.contains(&memory_identity(m)) {
            m.lifecycle_status = Some(LifecycleStatus::Superseded);
        }
    }
}
