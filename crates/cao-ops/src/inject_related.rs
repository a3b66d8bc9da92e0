//! Related entries of the `<cao-memory>` block (the reference's one-level cross-reference expansion in
//! `get_memory_context`), and the same expansion for recall's `include_related` ([`related_rows`], one rule for
//! both).
//!
//! For each injected scope, in block order, the memories its entries name are appended after them:
//! - Names come from, per entry: its legacy `related_keys` csv, read as the reference reads it
//!   ([`cao_lifecycle::parse_related_keys`]: first 1 KiB, strict keys, no duplicates, at most three), then the
//!   targets of its active `relates_to` edges (any origin; by rank, then key); at most [`MAX_RELATED_PER_PRIMARY`]
//!   names per entry.
//! - A related memory has the entry's scope and scope id and must exist; one level only (related memories' own
//!   names are not followed); a key already in the scope (entry or earlier related) is not repeated.
//! - The candidates of one scope pass the block's eligibility filter in their own batch, after the entries' batch.
//! - At most [`RELATED_FANOUT_CAP`] related memories per block, across all scopes (the reference's
//!   `RELATED_FANOUT_CAP`); the first scopes get them first.
//! - Rendering (tag, budget) is [`crate::inject::render_block`]'s.
//!
//! Cost: one index snapshot per scope and scope id for the names, plus one row read per named key.

use crate::types::{Memory, row_to_memory};
use cao_core::{Key, Scope};
use cao_store::MemoryError;
use cao_store::MemoryRow;
use cao_store::Store;
use std::collections::HashSet;

/// Most related memories one block adds, across all scopes (reference `MemoryService.RELATED_FANOUT_CAP = 5`).
pub const RELATED_FANOUT_CAP: usize = 5;

/// Most related names followed per injected entry (the reference's related_keys parse keeps three).
pub const MAX_RELATED_PER_PRIMARY: usize = cao_lifecycle::MAX_LEGACY_RELATED_KEYS;

/// Append each scope's related memories to `groups` (see the module documentation), marked `is_related`.
/// `retain_eligible` is the block's eligibility filter (`EligibilityFilter::retain_eligible`).
///
/// Errors: [`MemoryError::Store`] when the index cannot be read.
pub fn add_related(
    store: &Store,
    groups: &mut [(Scope, Vec<Memory>)],
    retain_eligible: &dyn Fn(Scope, Vec<Memory>) -> Vec<Memory>,
) -> Result<(), MemoryError> {
    let mut added = 0usize;
    for (scope, memories) in groups.iter_mut() {
        if added >= RELATED_FANOUT_CAP {
            break;
        }
        let candidates = related_candidates(store, *scope, memories)?;
        if candidates.is_empty() {
            continue;
        }
        let mut kept = retain_eligible(*scope, candidates);
        kept.truncate(RELATED_FANOUT_CAP - added);
        added += kept.len();
        memories.extend(kept);
    }
    Ok(())
}

/// The existing memories named by `primaries` (all of `scope`), in primary order, deduplicated.
fn related_candidates(store: &Store, scope: Scope, primaries: &[Memory]) -> Result<Vec<Memory>, MemoryError> {
    let ids: Vec<(Scope, Option<&str>, &str)> = primaries
        .iter()
        .map(|m| (scope, m.scope_id.as_deref(), m.key.as_str()))
        .collect();
    Ok(related_rows(store, &ids)?
        .iter()
        .map(|row| {
            let mut m = row_to_memory(row);
            m.is_related = true;
            m
        })
        .collect())
}

/// The existing memories named by `primaries` (`(scope, scope_id, key)`, any scopes), in primary order and
/// deduplicated, by the rules of the module documentation: per primary its legacy `related_keys` then the targets of
/// its active `relates_to` edges, at most [`MAX_RELATED_PER_PRIMARY`] names, same scope and scope id, never a
/// primary or an earlier name. The fan-out cap ([`RELATED_FANOUT_CAP`]) is the caller's to apply after its
/// eligibility filter. The one rule for the context block and for recall's `include_related`.
///
/// Cost: one index snapshot (two statements) per scope and scope id, plus one row read per name.
///
/// Errors: [`MemoryError::Store`] when the index cannot be read.
pub fn related_rows(store: &Store, primaries: &[(Scope, Option<&str>, &str)]) -> Result<Vec<MemoryRow>, MemoryError> {
    let seen: HashSet<(Scope, Option<&str>, &str)> = primaries.iter().copied().collect();
    let mut groups: Vec<(Scope, Option<&str>)> = Vec::new();
    for &(scope, sid, _) in primaries {
        if !groups.contains(&(scope, sid)) {
            groups.push((scope, sid));
        }
    }
    let mut names = std::collections::HashMap::new();
    for &(scope, sid) in &groups {
        let keys: Vec<&str> = primaries
            .iter()
            .filter(|p| (p.0, p.1) == (scope, sid))
            .map(|p| p.2)
            .collect();
        names.insert((scope, sid), store.snapshot().related_keys_of(scope, sid, &keys)?);
    }
    let mut wanted: Vec<(Scope, Option<&str>, Key)> = Vec::new();
    for &(scope, sid, key) in primaries {
        let Some(rel) = names.get(&(scope, sid)).and_then(|n| n.get(key)) else {
            continue;
        };
        let legacy = cao_lifecycle::parse_related_keys(rel.related_keys_csv.as_deref().unwrap_or(""));
        let edges = rel.edge_targets.iter().filter_map(|t| Key::parse_strict(t).ok());
        let mut taken = 0;
        for name in legacy.into_iter().chain(edges) {
            if taken == MAX_RELATED_PER_PRIMARY {
                break;
            }
            let already = wanted.iter().any(|(s, i, k)| (*s, *i) == (scope, sid) && *k == name);
            if already || seen.contains(&(scope, sid, name.as_str())) {
                continue;
            }
            wanted.push((scope, sid, name));
            taken += 1;
        }
    }
    let mut out = Vec::new();
    for (scope, sid, key) in wanted {
        if let Some(row) = store.snapshot().get(scope, sid, &key)? {
            out.push(row);
        }
    }
    Ok(out)
}
