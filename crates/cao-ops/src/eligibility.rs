//! Injection eligibility inside the service (spec 000 "Injection eligibility sources", "Supersedes lifecycle
//! (opt-in)"): the built-in `cao-lifecycle` registry for a call's settings, the curator rule, and the eligibility
//! identities of rows and memories. The context block wraps the registry as its filter (`inject::RegistryFilter`).
//!
//! - Injection (the `<cao-memory>` block) and curator recall (requester profile `memory_manager`) consult the
//!   registry; explicit recall, list and show never exclude through it.
//! - The built-in registry is `lifecycle.supersedes` when `memory.lifecycle.enabled`, otherwise empty (every memory
//!   eligible, nothing queried).

use crate::types::Memory;
use cao_core::{Key, MemoryRef, Settings, TerminalContext};
use cao_lifecycle::eligibility::{CURATOR_PROFILE, Candidate, EligibilityCheck, EligibilityRegistry};
use cao_store::MemoryRow;
use cao_store::Store;

/// The eligibility identity of a returned memory (`None` only if its key is not a valid key, which a memory read
/// from the index never has; such a memory is left eligible).
pub fn memory_candidate(m: &Memory) -> Option<Candidate> {
    let key = Key::parse_strict(&m.key).ok()?;
    Some(Candidate::native(MemoryRef::new(m.scope, m.scope_id.clone(), key)))
}

/// The eligibility identity of an index row.
pub fn row_candidate(r: &MemoryRow) -> Option<Candidate> {
    Some(Candidate {
        memory: r.memory_ref(),
        source_kind: r.source_kind,
    })
}

/// The items of `items` that `check` does not exclude, in order, judged as one batch; `id` gives each item's
/// identity (an item without one is kept: fail open).
pub fn retain_eligible<T: Clone>(
    check: &mut EligibilityCheck<'_>,
    items: &[T],
    id: impl Fn(&T) -> Option<Candidate>,
) -> Vec<T> {
    let mut batch = Vec::with_capacity(items.len());
    let judged: Vec<bool> = items
        .iter()
        .map(|t| match id(t) {
            Some(c) => {
                batch.push(c);
                true
            }
            None => false,
        })
        .collect();
    let mut verdicts = check.excluded(&batch).into_iter();
    items
        .iter()
        .zip(judged)
        .filter(|(_, judged)| !*judged || !verdicts.next().unwrap_or(false))
        .map(|(t, _)| t.clone())
        .collect()
}

/// Whether `ctx` is the curator, whose recall is an injection path.
pub fn is_curator(ctx: &TerminalContext) -> bool {
    ctx.agent_profile.as_deref().map(str::trim) == Some(CURATOR_PROFILE)
}

/// The built-in registry for `settings` (`lifecycle.supersedes` when the lifecycle flag is on).
pub fn registry(store: &Store, settings: &Settings) -> EligibilityRegistry {
    EligibilityRegistry::builtin(store, settings)
}

/// The registry a recall by `ctx` must apply: the built-in one for the curator, `None` for explicit recall or when
/// no source is enabled.
pub fn curator_registry(store: &Store, settings: &Settings, ctx: &TerminalContext) -> Option<EligibilityRegistry> {
    if !is_curator(ctx) {
        return None;
    }
    Some(registry(store, settings)).filter(|r| !r.is_empty())
}
