//! Injection eligibility inside the service (spec 000 "Injection eligibility sources", "Supersedes lifecycle
//! (opt-in)"): the built-in `cao-lifecycle` registry for a call's settings, the curator rule, and the eligibility
//! identities of rows and memories. The context block wraps the registry as its filter (`inject::RegistryFilter`).
//!
//! - Injection (the `<cao-memory>` block) and curator recall (requester profile `memory_manager`) consult the
//!   registry; explicit recall, list and show never exclude through it.
//! - The built-in registry is `lifecycle.supersedes` when `memory.lifecycle.enabled`, otherwise empty (every memory
//!   eligible, nothing queried).

use crate::store::Store;
use crate::types::Memory;
use cao_core::{Settings, TerminalContext};
use cao_index::MemoryRow;
use cao_lifecycle::eligibility::{CURATOR_PROFILE, Candidate, EligibilityRegistry};

/// The eligibility identity of a returned memory.
pub(crate) fn memory_candidate(m: &Memory) -> Candidate {
    Candidate {
        key: m.key.clone(),
        scope: m.scope,
        scope_id: m.scope_id.clone(),
        source_kind: "native".to_owned(),
    }
}

/// The eligibility identity of an index row.
pub(crate) fn row_candidate(r: &MemoryRow) -> Candidate {
    Candidate {
        key: r.key.to_string(),
        scope: r.scope,
        scope_id: r.scope_id.clone(),
        source_kind: r.source_kind.clone(),
    }
}

/// Whether `ctx` is the curator, whose recall is an injection path.
pub(crate) fn is_curator(ctx: &TerminalContext) -> bool {
    ctx.agent_profile.as_deref().map(str::trim) == Some(CURATOR_PROFILE)
}

/// The built-in registry for `settings` (`lifecycle.supersedes` when the lifecycle flag is on).
pub(crate) fn registry(store: &Store, settings: &Settings) -> EligibilityRegistry {
    EligibilityRegistry::builtin(store.index(), settings)
}

/// The registry a recall by `ctx` must apply: the built-in one for the curator, `None` for explicit recall or when
/// no source is enabled.
pub(crate) fn curator_registry(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
) -> Option<EligibilityRegistry> {
    if !is_curator(ctx) {
        return None;
    }
    Some(registry(store, settings)).filter(|r| !r.is_empty())
}
