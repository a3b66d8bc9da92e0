//! Injection eligibility: the in-tree registry of lifecycle sources that may keep a memory out of an injection path
//! (spec 000 "Injection eligibility sources", "Supersedes lifecycle (opt-in)").
//!
//! Rules:
//! - A source gives batch verdicts keyed by the identity `(scope, scope_id, key)` + `source_kind` ([`Candidate`]): the
//!   candidates it excludes, each with a reason token ([`valid_reason_token`]).
//! - [`EligibilityRegistry::check`] starts one [`EligibilityCheck`] per injection build or curator recall. It
//!   memoises verdicts for that call only (no cross-call cache): each enabled source is queried once per batch of
//!   identities it has not judged yet, and a batch whose identities are all known queries nothing. An empty batch
//!   queries nothing.
//! - A source that errors, or answers with an invalid reason token, fails open for that batch only: none of its
//!   verdicts in that batch apply, other sources still do, and one warning names the source, the purpose and the
//!   batch size — never keys or content.
//! - Callers evaluate candidates lazily in chunks ([`PRIMARY_CHUNK`]) and related targets in their own bounded
//!   batch ([`MAX_RELATED_BATCH`]); explicit recall never consults the registry, and the BM25 corpus is never
//!   filtered by it (exclusions cannot change IDF).
//!
//! The built-in source is [`SupersedesSource`] (`lifecycle.supersedes`), enabled only when
//! `Settings::lifecycle_enabled()`: it excludes the targets of active same-scope `supersedes` edges (any origin);
//! proposals, rejected and deleted edges do not exclude; in a cycle every member is a target, so all are excluded.

use cao_core::{MemoryRef, Settings, SourceKind};
use cao_store::Store;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Size of a primary candidate chunk: with no exclusions an injection scope needs exactly one chunk (the
/// reference's `MEMORY_MAX_PER_SCOPE = 10`).
pub const PRIMARY_CHUNK: usize = 10;

/// Most related targets judged in one batch (three per primary of a full chunk).
pub const MAX_RELATED_BATCH: usize = 3 * PRIMARY_CHUNK;

/// Name of the built-in supersedes source.
pub const SUPERSEDES_SOURCE: &str = "lifecycle.supersedes";

/// Reason token the supersedes source gives.
pub const SUPERSEDED_REASON: &str = "superseded";

/// The `agent_profile` of the curator: its recall is an injection path.
pub const CURATOR_PROFILE: &str = "memory_manager";

/// One candidate's identity, as sources see it: the index's unique identity `(key, scope, scope_id, source_kind)`.
/// Content-free.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Candidate {
    /// The memory `(scope, scope_id, key)`.
    pub memory: MemoryRef,
    /// Where the row comes from ([`SourceKind::Native`] for wiki memories).
    pub source_kind: SourceKind,
}

impl Candidate {
    /// A native memory's candidate identity.
    pub fn native(memory: MemoryRef) -> Candidate {
        Candidate {
            memory,
            source_kind: SourceKind::Native,
        }
    }
}

/// Why a batch is being judged; reported in warnings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Building a `<cao-memory>` context block.
    Injection,
    /// A recall by the curator (`memory_manager` profile).
    CuratedRecall,
}

impl Purpose {
    /// Stable snake_case name (`injection`, `curated_recall`).
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Injection => "injection",
            Purpose::CuratedRecall => "curated_recall",
        }
    }
}

/// A source of eligibility verdicts.
pub trait EligibilitySource: Send + Sync + std::fmt::Debug {
    /// Stable dotted name (e.g. `lifecycle.supersedes`), used in warnings and diagnostics.
    fn name(&self) -> &str;

    /// The candidates of `batch` this source excludes, each with a reason token. Identities not in `batch` are
    /// ignored. Errors: a one-line reason; the caller fails open for this batch and this source only.
    fn exclusions(&self, purpose: Purpose, batch: &[Candidate]) -> Result<Vec<(Candidate, String)>, String>;
}

/// Whether `t` is a valid reason token: 1..=64 characters of `[a-z0-9_.-]`, starting with a letter.
pub fn valid_reason_token(t: &str) -> bool {
    let mut chars = t.chars();
    t.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '.' | '-'))
}

/// The sources enabled for one call. Cheap to build; build it per call from the current settings.
#[derive(Debug, Clone, Default)]
pub struct EligibilityRegistry {
    sources: Vec<Arc<dyn EligibilitySource>>,
}

impl EligibilityRegistry {
    /// A registry with exactly `sources` (tests and embedding).
    pub fn new(sources: Vec<Arc<dyn EligibilitySource>>) -> Self {
        Self { sources }
    }

    /// The in-tree sources enabled by `settings`: [`SupersedesSource`] over `index` when
    /// `settings.lifecycle_enabled()`; otherwise none.
    pub fn builtin(store: &Store, settings: &Settings) -> Self {
        let mut sources: Vec<Arc<dyn EligibilitySource>> = Vec::new();
        if settings.lifecycle_enabled() {
            sources.push(Arc::new(SupersedesSource::new(store.clone())));
        }
        Self { sources }
    }

    /// Whether any source is enabled (when not, every candidate is eligible and nothing is queried).
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// Names of the enabled sources, in query order.
    pub fn source_names(&self) -> Vec<String> {
        self.sources.iter().map(|s| s.name().to_owned()).collect()
    }

    /// Start one injection build or curator recall.
    pub fn check(&self, purpose: Purpose) -> EligibilityCheck<'_> {
        EligibilityCheck {
            registry: self,
            purpose,
            memo: HashMap::new(),
            failed: Vec::new(),
        }
    }
}

/// Verdicts memoised for one injection build or curator recall. Dropped at the end of the call.
#[derive(Debug)]
pub struct EligibilityCheck<'a> {
    registry: &'a EligibilityRegistry,
    purpose: Purpose,
    /// Identity -> reason tokens that exclude it (empty = eligible).
    memo: HashMap<Candidate, Vec<String>>,
    failed: Vec<String>,
}

impl EligibilityCheck<'_> {
    /// For each candidate of `batch` (in order), whether some source excludes it. Queries each source once with the
    /// identities of `batch` not judged earlier in this call (nothing when there are none).
    pub fn excluded(&mut self, batch: &[Candidate]) -> Vec<bool> {
        let mut seen = HashSet::new();
        let new: Vec<Candidate> = batch
            .iter()
            .filter(|c| !self.memo.contains_key(*c) && seen.insert(*c))
            .cloned()
            .collect();
        if !new.is_empty() {
            let mut reasons: HashMap<Candidate, Vec<String>> = new.iter().map(|c| (c.clone(), Vec::new())).collect();
            for source in &self.registry.sources {
                match source.exclusions(self.purpose, &new) {
                    Ok(verdicts) if verdicts.iter().all(|(_, r)| valid_reason_token(r)) => {
                        for (c, r) in verdicts {
                            if let Some(list) = reasons.get_mut(&c) {
                                list.push(r);
                            }
                        }
                    }
                    Ok(_) => self.fail_open(source.name(), new.len(), "invalid reason token"),
                    Err(e) => self.fail_open(source.name(), new.len(), &e),
                }
            }
            self.memo.extend(reasons);
        }
        batch
            .iter()
            .map(|c| self.memo.get(c).is_some_and(|r| !r.is_empty()))
            .collect()
    }

    /// Reason tokens excluding `c`, in source order, if it was judged in this call.
    pub fn reasons(&self, c: &Candidate) -> Option<&[String]> {
        self.memo.get(c).map(Vec::as_slice)
    }

    /// Names of the sources that failed open at least once in this call (deduplicated, in order).
    pub fn errors(&self) -> &[String] {
        &self.failed
    }

    /// Warn (content-free: source, purpose, batch size) and record the failure; the batch stays eligible for this
    /// source. `why` is the source's own error text: it must not carry keys or content.
    fn fail_open(&mut self, source: &str, count: usize, why: &str) {
        tracing::warn!(
            source,
            purpose = self.purpose.as_str(),
            count,
            "eligibility source failed open for a batch of {count} candidates ({})",
            brief(why)
        );
        if !self.failed.iter().any(|f| f == source) {
            self.failed.push(source.to_owned());
        }
    }
}

/// Only the kind of failure: the text before the first `:` (index errors name the SQL problem first), at most 80
/// characters, so a message can never carry a key or content into a warning.
fn brief(why: &str) -> String {
    why.split(':').next().unwrap_or("").chars().take(80).collect()
}

/// How [`SupersedesSource`] reads the edge store: the identities among its argument that are targets of active
/// same-scope supersedes edges (an error is a one-line reason; the caller fails open). Defined by `cao-index` next
/// to the edge table it replaces.
pub use cao_store::SupersedesLookup;

/// The built-in `lifecycle.supersedes` source: excludes targets of active same-scope supersedes edges, with reason
/// [`SUPERSEDED_REASON`]. An edge-store read failure is returned as an error (so the registry fails open).
pub struct SupersedesSource {
    lookup: Box<SupersedesLookup>,
}

impl std::fmt::Debug for SupersedesSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SupersedesSource")
    }
}

impl SupersedesSource {
    /// The source over `store`'s relationship edges (one read per batch).
    pub fn new(store: Store) -> Self {
        Self::with_lookup(Box::new(move |ids| {
            store
                .snapshot()
                .active_supersedes_targets(ids)
                .map_err(|e| e.to_string())
        }))
    }

    /// The source over another lookup (tests: a failing store).
    pub fn with_lookup(lookup: Box<SupersedesLookup>) -> Self {
        Self { lookup }
    }
}

impl EligibilitySource for SupersedesSource {
    fn name(&self) -> &str {
        SUPERSEDES_SOURCE
    }

    fn exclusions(&self, _purpose: Purpose, batch: &[Candidate]) -> Result<Vec<(Candidate, String)>, String> {
        let ids: Vec<&MemoryRef> = batch.iter().map(|c| &c.memory).collect();
        let targets = (self.lookup)(&ids)?;
        Ok(batch
            .iter()
            .filter(|c| targets.contains(&c.memory))
            .map(|c| (c.clone(), SUPERSEDED_REASON.to_owned()))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn cand(key: &str) -> Candidate {
        let key = cao_core::Key::parse_strict(key).expect("valid key");
        Candidate::native(MemoryRef::new(cao_core::Scope::Global, None, key))
    }

    /// Excludes keys starting with `x`; records every batch it sees.
    #[derive(Debug, Default)]
    struct Recording {
        batches: Mutex<Vec<Vec<String>>>,
        reason: &'static str,
        fail: bool,
    }

    impl EligibilitySource for Recording {
        fn name(&self) -> &str {
            "test.recording"
        }
        fn exclusions(&self, _p: Purpose, batch: &[Candidate]) -> Result<Vec<(Candidate, String)>, String> {
            self.batches
                .lock()
                .expect("test mutex")
                .push(batch.iter().map(|c| c.memory.key.to_string()).collect());
            if self.fail {
                return Err("database is locked: secret-key".to_owned());
            }
            Ok(batch
                .iter()
                .filter(|c| c.memory.key.as_str().starts_with('x'))
                .map(|c| (c.clone(), self.reason.to_owned()))
                .collect())
        }
    }

    #[test]
    fn each_new_batch_is_queried_once_and_memoised_within_the_call_only() {
        let src = Arc::new(Recording {
            reason: "stale",
            ..Default::default()
        });
        let reg = EligibilityRegistry::new(vec![src.clone()]);
        let mut check = reg.check(Purpose::Injection);
        assert_eq!(check.excluded(&[cand("a"), cand("xb")]), [false, true]);
        assert_eq!(check.excluded(&[cand("a"), cand("xb")]), [false, true], "memoised");
        assert_eq!(check.excluded(&[]), Vec::<bool>::new());
        assert_eq!(
            check.excluded(&[cand("a"), cand("c"), cand("c")]),
            [false, false, false]
        );
        assert_eq!(check.reasons(&cand("xb")), Some(&["stale".to_owned()][..]));
        let seen = src.batches.lock().expect("test mutex").clone();
        assert_eq!(
            seen,
            vec![vec!["a", "xb"], vec!["c"]],
            "only new identities, deduplicated"
        );
        drop(check);
        let mut again = reg.check(Purpose::Injection);
        again.excluded(&[cand("a")]);
        assert_eq!(src.batches.lock().expect("test mutex").len(), 3, "no cross-call cache");
    }

    #[test]
    fn errors_and_invalid_tokens_fail_open_for_that_source_and_batch_only() {
        let failing = Arc::new(Recording {
            fail: true,
            ..Default::default()
        });
        let bad_token = Arc::new(Recording {
            reason: "Not A Token",
            ..Default::default()
        });
        let good = Arc::new(Recording {
            reason: "ok",
            ..Default::default()
        });
        let reg = EligibilityRegistry::new(vec![failing.clone(), bad_token, good]);
        let mut check = reg.check(Purpose::CuratedRecall);
        assert_eq!(check.excluded(&[cand("xa"), cand("b")]), [true, false]);
        assert_eq!(check.reasons(&cand("xa")), Some(&["ok".to_owned()][..]));
        assert_eq!(check.errors(), ["test.recording".to_owned()]);
        let alone = EligibilityRegistry::new(vec![failing]);
        let mut check = alone.check(Purpose::Injection);
        assert_eq!(
            check.excluded(&[cand("xa")]),
            [false],
            "a failing source removes nothing"
        );
    }

    #[test]
    fn reason_tokens() {
        for ok in ["superseded", "a", "lifecycle.x-y_2"] {
            assert!(valid_reason_token(ok), "{ok}");
        }
        for bad in ["", "Superseded", "1a", "a b", "a\n", &"a".repeat(65)] {
            assert!(!valid_reason_token(bad), "{bad:?}");
        }
        assert_eq!(brief("database is locked: k1"), "database is locked");
    }

    #[test]
    fn supersedes_source_fails_open_on_a_store_error() {
        let src = SupersedesSource::with_lookup(Box::new(|_| Err("disk I/O error".to_owned())));
        let reg = EligibilityRegistry::new(vec![Arc::new(src)]);
        let mut check = reg.check(Purpose::Injection);
        assert_eq!(check.excluded(&[cand("a")]), [false]);
        assert_eq!(check.errors(), [SUPERSEDES_SOURCE.to_owned()]);
    }
}
