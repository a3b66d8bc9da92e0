//! The supersedes lifecycle inside the service (spec 000 "Injection eligibility sources", "Supersedes lifecycle
//! (opt-in)"): the eligibility registry of `cao-lifecycle` as the injection [`EligibilityFilter`], and the
//! supersedes snapshot recall uses for ordering and the transient `lifecycle_status` label.
//!
//! - Injection ([`MemoryService::context_block`]) and curator recall (requester profile `memory_manager`) consult
//!   the registry; explicit recall, list and show never exclude through it.
//! - A snapshot read failure fails open: order unchanged, no labels, one content-free warning.
//! - Labels are set on returned values only; no writer persists them.

use crate::error::MemoryError;
use crate::inject::{AllEligible, ContextRequest, EligibilityFilter};
use crate::service::MemoryService;
use crate::types::{LifecycleStatus, Memory};
use cao_core::{Scope, TerminalContext};
use cao_index::MemoryRow;
use cao_lifecycle::eligibility::{
    CURATOR_PROFILE, Candidate, EligibilityCheck, EligibilityRegistry, PRIMARY_CHUNK, Purpose,
};
use std::cell::RefCell;
use std::collections::HashSet;

/// The supersedes lookup a service was given ([`MemoryService::set_supersedes_lookup`]); empty = the index.
#[derive(Default)]
pub(crate) struct LookupCell(
    pub(crate) std::sync::OnceLock<std::sync::Arc<cao_lifecycle::eligibility::SupersedesLookup>>,
);

impl std::fmt::Debug for LookupCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "LookupCell(custom)"
        } else {
            "LookupCell(index)"
        })
    }
}

/// A memory identity `(scope, scope_id, key)` as the supersedes snapshot holds it.
pub(crate) type Identity = (Scope, Option<String>, String);

/// The registry of one injection build as an [`EligibilityFilter`]: candidates are judged lazily in chunks of
/// [`PRIMARY_CHUNK`], stopping as soon as a scope has [`PRIMARY_CHUNK`] eligible ones, so a scope without exclusions
/// costs one batch per source and an empty scope none.
#[derive(Debug)]
pub struct RegistryFilter<'a> {
    check: RefCell<EligibilityCheck<'a>>,
}

impl<'a> RegistryFilter<'a> {
    /// A filter over one call's check (start it with [`EligibilityRegistry::check`]).
    pub fn new(check: EligibilityCheck<'a>) -> Self {
        Self {
            check: RefCell::new(check),
        }
    }

    /// Names of the sources that failed open during this build.
    pub fn errors(&self) -> Vec<String> {
        self.check.borrow().errors().to_vec()
    }
}

impl EligibilityFilter for RegistryFilter<'_> {
    fn retain_eligible(&self, _scope: Scope, candidates: Vec<Memory>) -> Vec<Memory> {
        let mut check = self.check.borrow_mut();
        let mut kept = Vec::new();
        for chunk in candidates.chunks(PRIMARY_CHUNK) {
            let ids: Vec<Candidate> = chunk.iter().map(memory_candidate).collect();
            let excluded = check.excluded(&ids);
            kept.extend(chunk.iter().zip(excluded).filter(|(_, x)| !x).map(|(m, _)| m.clone()));
            if kept.len() >= PRIMARY_CHUNK {
                break;
            }
        }
        kept
    }

    /// Two chunks: a few exclusions among the newest rows cost no second recency read (chunks are still judged
    /// lazily, one at a time).
    fn first_read(&self) -> usize {
        2 * PRIMARY_CHUNK
    }
}

fn memory_candidate(m: &Memory) -> Candidate {
    Candidate {
        key: m.key.clone(),
        scope: m.scope,
        scope_id: m.scope_id.clone(),
        source_kind: "native".to_owned(),
    }
}

pub(crate) fn row_candidate(r: &MemoryRow) -> Candidate {
    Candidate {
        key: r.key.to_string(),
        scope: r.scope,
        scope_id: r.scope_id.clone(),
        source_kind: r.source_kind.clone(),
    }
}

pub(crate) fn row_identity(r: &MemoryRow) -> Identity {
    (r.scope, r.scope_id.clone(), r.key.to_string())
}

pub(crate) fn memory_identity(m: &Memory) -> Identity {
    (m.scope, m.scope_id.clone(), m.key.clone())
}

/// Whether `ctx` is the curator, whose recall is an injection path.
pub(crate) fn is_curator(ctx: &TerminalContext) -> bool {
    ctx.agent_profile.as_deref().map(str::trim) == Some(CURATOR_PROFILE)
}

/// Stable partition: items for which `superseded` is false keep their order first, the others follow in order.
pub(crate) fn demote<T>(items: &mut [T], superseded: impl Fn(&T) -> bool) {
    items.sort_by_key(|t| superseded(t));
}

impl MemoryService {
    /// The `<cao-memory>` block built with `registry` as the eligibility filter (no source: every memory is
    /// eligible and nothing is queried). [`MemoryService::context_block`] passes the built-in registry for the
    /// current settings.
    ///
    /// Errors: as [`MemoryService::context_block`].
    pub fn context_block_registry(
        &self,
        ctx: &TerminalContext,
        req: ContextRequest,
        registry: &EligibilityRegistry,
    ) -> Result<Option<String>, MemoryError> {
        if registry.is_empty() {
            return self.context_block_with(ctx, req, &AllEligible);
        }
        let filter = RegistryFilter::new(registry.check(Purpose::Injection));
        self.context_block_with(ctx, req, &filter)
    }

    /// The built-in registry for the current settings (`lifecycle.supersedes` when the lifecycle flag is on).
    pub fn eligibility_registry(&self) -> EligibilityRegistry {
        EligibilityRegistry::builtin(&self.inner.index, &self.settings())
    }

    /// The registry a recall by `ctx` must apply: the built-in one for the curator, `None` for explicit recall or
    /// when no source is enabled.
    pub(crate) fn curator_registry(&self, ctx: &TerminalContext) -> Option<EligibilityRegistry> {
        if !is_curator(ctx) {
            return None;
        }
        Some(self.eligibility_registry()).filter(|r| !r.is_empty())
    }

    /// Identities among `ids` that are targets of active same-scope supersedes edges: the targets of one
    /// [`MemoryService::supersedes_snapshot`] (one read per scope group; a failed group fails open with a
    /// content-free warning naming `purpose` and the count).
    pub(crate) fn superseded<'a>(&self, ids: impl Iterator<Item = &'a Identity>, purpose: &str) -> HashSet<Identity> {
        self.supersedes_snapshot(ids, purpose).targets
    }

    /// Label every memory of `memories` that is an active supersedes target (one snapshot).
    pub(crate) fn label_superseded(&self, memories: &mut [Memory]) {
        let ids: Vec<Identity> = memories.iter().map(memory_identity).collect();
        let sup = self.superseded(ids.iter(), "lifecycle_label");
        for m in memories.iter_mut() {
            if sup.contains(&memory_identity(m)) {
                m.lifecycle_status = Some(LifecycleStatus::Superseded);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::demote;

    #[test]
    fn demotion_is_a_stable_partition() {
        let mut v = vec![1, 2, 3, 4, 5, 6];
        demote(&mut v, |x| x % 2 == 0);
        assert_eq!(v, [1, 3, 5, 2, 4, 6]);
    }
}
