//! The opt-in `sort_by="relevance"` order: lexical tiers, normalised BM25 times an age factor that only native
//! project memories get, identity tie-breaks, the always-on supersedes demotion and the scope-precedence pass.
//!
//! Source: spec 000 "memory_recall" (the paragraphs on `relevance`) and "On-demand relevance explain".
//!
//! Invariants: the output is a permutation of the input indices and a function of the input *set* (ties end on
//! the full identity, so input order never decides); every `all_term` candidate precedes every `partial` one
//! before demotion; `lexical` and `relevance` are in `[0, 1]`; the clock only enters through the age factor.

use crate::order::Ranked;
use crate::score::{RECENCY_HALF_DAYS, normalize_bm25, recency};
use cao_core::time::days_old;
use cao_core::{Scope, SourceKind};
use chrono::{DateTime, Utc};
use std::cmp::Ordering;

/// Lowest age factor a native project memory can reach (0.85): an infinitely old exact match keeps 85 % of its
/// lexical strength.
///
/// Source: spec 000 ("0.85 + 0.15 / (1 + days_old / 30)").
pub const RELEVANCE_AGE_FLOOR: f64 = 0.85;

/// Weight of the recency term in the age factor (0.15).
///
/// Source: spec 000 ("0.85 + 0.15 / (1 + days_old / 30)").
pub const RELEVANCE_AGE_WEIGHT: f64 = 0.15;

/// Half-life in days of the recency term of the age factor (30.0, shared with the composite score).
///
/// Source: spec 000 ("0.85 + 0.15 / (1 + days_old / 30)").
pub const RELEVANCE_AGE_HALF_DAYS: f64 = RECENCY_HALF_DAYS;

/// Age factor in `[0.85, 1]` of a native project memory `days_old` fractional days old:
/// `0.85 + 0.15 / (1 + days_old / 30)`. Future dates (negative age) and NaN count as age 0 (factor 1.0).
///
/// An exact match aged 365 days gets about 0.8614. Source: spec 000 relevance paragraph.
pub fn relevance_age_factor(days_old: f64) -> f64 {
    RELEVANCE_AGE_FLOOR + RELEVANCE_AGE_WEIGHT * recency(days_old)
}

/// The age factor a row of `scope` and `source_kind` gets at `days_old`: [`relevance_age_factor`] for native
/// project memories, 1.0 (time-neutral) for every other scope and for non-native (vault) rows.
///
/// Source: spec 000 ("Only native project memories get 0.85 + 0.15 / (1 + days_old / 30)").
pub fn relevance_recency_factor(scope: Scope, source_kind: SourceKind, days_old: f64) -> f64 {
    if scope == Scope::Project && source_kind == SourceKind::Native {
        relevance_age_factor(days_old)
    } else {
        1.0
    }
}

/// Lexical tier of a relevance candidate. All-term matches rank before partial ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    /// Every query term is a case-insensitive substring of the memory (the metadata predicate).
    AllTerm,
    /// The memory shares at least one BM25 token with the query but misses some term.
    Partial,
}

impl Tier {
    /// Stable snake_case name used in explain reports (`all_term`, `partial`).
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::AllTerm => "all_term",
            Tier::Partial => "partial",
        }
    }
}

/// What the relevance order reads from one pool row. Borrowing: no content is copied.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RelevanceCandidate<'a> {
    /// Memory key.
    pub key: &'a str,
    /// Scope of the row.
    pub scope: Scope,
    /// Scope id (`None` for global and federated).
    pub scope_id: Option<&'a str>,
    /// Backend of the row ([`SourceKind::Native`] for wiki memories).
    pub source_kind: SourceKind,
    /// Time of the newest entry, UTC (naive stored times are UTC).
    pub updated_at: DateTime<Utc>,
    /// Raw BM25 score against the query (higher = better); `None` when the row shares no scored token.
    pub bm25_raw: Option<f64>,
    /// Lexical tier.
    pub tier: Tier,
    /// Target of an active same-scope `supersedes` edge in this call's snapshot (always demoted).
    pub superseded: bool,
}

impl RelevanceCandidate<'_> {
    /// The full identity `(key, scope, scope_id, source_kind)` the ties end on, `scope_id` `None` as `""`.
    fn identity_cmp(&self, other: &Self) -> Ordering {
        self.key
            .cmp(other.key)
            .then_with(|| self.scope.as_str().cmp(other.scope.as_str()))
            .then_with(|| self.scope_id.unwrap_or("").cmp(other.scope_id.unwrap_or("")))
            .then_with(|| self.source_kind.as_str().cmp(other.source_kind.as_str()))
    }
}

/// The values one candidate was ordered by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RelevanceRanked {
    /// Index of the candidate in the slice that was ranked.
    pub index: usize,
    /// Its tier.
    pub tier: Tier,
    /// Batch-normalised BM25 clamped to `[0, 1]` (0 without a raw score).
    pub lexical: f64,
    /// [`relevance_age_factor`] for native project rows, 1.0 for time-neutral ones.
    pub recency_factor: f64,
    /// `lexical * recency_factor`: the within-tier ordering value.
    pub relevance: f64,
}

impl From<RelevanceRanked> for Ranked {
    fn from(r: RelevanceRanked) -> Ranked {
        Ranked {
            index: r.index,
            score: Some(r.relevance),
            bm25_norm: Some(r.lexical),
        }
    }
}

/// A relevance ordering and whether its lexical batch was degenerate.
#[derive(Debug, Clone, PartialEq)]
pub struct RelevanceOrder {
    /// Every candidate, best first.
    pub order: Vec<RelevanceRanked>,
    /// True when a nonempty batch has only zero lexical values (ranking then falls back to identity order within
    /// each tier); false for an empty batch.
    pub lexical_degenerate: bool,
}

/// The relevance order of `items` at `now`.
///
/// 1. The BM25 batch is every candidate with a raw score, normalised by its maximum ([`normalize_bm25`]); negative
///    values clamp to 0; a candidate without a raw score has lexical 0.
/// 2. relevance = lexical x age factor ([`relevance_age_factor`] of `days_old(now, updated_at)` for native project
///    rows, 1.0 otherwise).
/// 3. Order: tier (all-term first), relevance desc, lexical desc, full identity asc — never a timestamp.
/// 4. Active supersedes targets move after all others (stable).
/// 5. With `scope_pass` (the request named no scope): the stable scope-precedence pass.
///
/// Source: spec 000 "memory_recall" relevance paragraphs.
pub fn sort_relevance(items: &[RelevanceCandidate<'_>], now: DateTime<Utc>, scope_pass: bool) -> RelevanceOrder {
    let raws: Vec<f64> = items.iter().filter_map(|c| c.bm25_raw).collect();
    let mut norms = normalize_bm25(&raws).into_iter();
    let mut order: Vec<RelevanceRanked> = items
        .iter()
        .enumerate()
        .map(|(index, c)| {
            let norm = c.bm25_raw.and_then(|_| norms.next()).unwrap_or(0.0);
            // Negatives clamp to 0; NaN counts as 0.
            let lexical = if norm.is_nan() { 0.0 } else { norm.clamp(0.0, 1.0) };
            let recency_factor = relevance_recency_factor(c.scope, c.source_kind, days_old(now, c.updated_at));
            RelevanceRanked {
                index,
                tier: c.tier,
                lexical,
                recency_factor,
                relevance: lexical * recency_factor,
            }
        })
        .collect();
    let lexical_degenerate = !order.is_empty() && order.iter().all(|r| r.lexical == 0.0);
    order.sort_by(|x, y| {
        x.tier
            .cmp(&y.tier)
            .then_with(|| y.relevance.total_cmp(&x.relevance))
            .then_with(|| y.lexical.total_cmp(&x.lexical))
            .then_with(|| items[x.index].identity_cmp(&items[y.index]))
    });
    order.sort_by_key(|r| items[r.index].superseded);
    if scope_pass {
        order.sort_by_key(|r| items[r.index].scope.precedence());
    }
    RelevanceOrder {
        order,
        lexical_degenerate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).single().expect("valid date")
    }

    fn cand(key: &'static str, scope: Scope, days: i64, raw: Option<f64>, tier: Tier) -> RelevanceCandidate<'static> {
        RelevanceCandidate {
            key,
            scope,
            scope_id: match scope {
                Scope::Global | Scope::Federated => None,
                _ => Some("x"),
            },
            source_kind: SourceKind::Native,
            updated_at: now() - chrono::Duration::days(days),
            bm25_raw: raw,
            tier,
            superseded: false,
        }
    }

    fn keys(items: &[RelevanceCandidate<'static>], o: &RelevanceOrder) -> Vec<&'static str> {
        o.order.iter().map(|r| items[r.index].key).collect()
    }

    #[test]
    fn age_factor_matches_the_spec_example() {
        assert_eq!(relevance_age_factor(0.0), 1.0);
        assert_eq!(relevance_age_factor(-5.0), 1.0, "future dates clamp to age zero");
        assert!((relevance_age_factor(365.0) - 0.8614).abs() < 1e-4);
        assert_eq!(relevance_age_factor(f64::INFINITY), RELEVANCE_AGE_FLOOR);
    }

    #[test]
    fn a_fresh_weaker_project_match_can_beat_an_old_exact_one() {
        // 365 days: factor ~0.8614; a fresh row with lexical 0.862 wins, one with 0.861 loses.
        let items = [
            cand("old-exact", Scope::Project, 365, Some(1.0), Tier::AllTerm),
            cand("fresh-862", Scope::Project, 0, Some(0.862), Tier::AllTerm),
            cand("fresh-861", Scope::Project, 0, Some(0.861), Tier::AllTerm),
        ];
        let o = sort_relevance(&items, now(), false);
        assert_eq!(keys(&items, &o), ["fresh-862", "old-exact", "fresh-861"]);
    }

    #[test]
    fn other_scopes_are_time_neutral() {
        let items = [
            cand("old-global", Scope::Global, 3650, Some(1.0), Tier::AllTerm),
            cand("new-global", Scope::Global, 0, Some(0.99), Tier::AllTerm),
        ];
        let o = sort_relevance(&items, now(), false);
        assert_eq!(keys(&items, &o), ["old-global", "new-global"]);
        assert_eq!(o.order[0].recency_factor, 1.0);
    }

    #[test]
    fn all_term_matches_precede_partial_ones() {
        let items = [
            cand("partial-strong", Scope::Global, 0, Some(9.0), Tier::Partial),
            cand("all-weak", Scope::Global, 0, Some(0.1), Tier::AllTerm),
            cand("all-none", Scope::Global, 0, None, Tier::AllTerm),
        ];
        let o = sort_relevance(&items, now(), false);
        assert_eq!(keys(&items, &o), ["all-weak", "all-none", "partial-strong"]);
    }

    #[test]
    fn degenerate_batch_falls_back_to_identity_order() {
        let items = [
            cand("b", Scope::Global, 0, Some(-1.0), Tier::AllTerm),
            cand("a", Scope::Project, 99, Some(-3.0), Tier::AllTerm),
            cand("c", Scope::Global, 0, None, Tier::Partial),
            cand("a", Scope::Global, 0, None, Tier::AllTerm),
        ];
        let o = sort_relevance(&items, now(), false);
        assert!(o.lexical_degenerate);
        assert_eq!(keys(&items, &o), ["a", "a", "b", "c"]);
        // Same key: identity continues with the scope name ("global" < "project").
        assert_eq!(items[o.order[0].index].scope, Scope::Global);
        assert!(!sort_relevance(&[], now(), false).lexical_degenerate);
    }

    #[test]
    fn negative_normalised_values_clamp_to_zero() {
        let items = [
            cand("pos", Scope::Global, 0, Some(5.0), Tier::AllTerm),
            cand("neg", Scope::Global, 0, Some(-1.0), Tier::AllTerm),
        ];
        let o = sort_relevance(&items, now(), false);
        assert_eq!(o.order[1].lexical, 0.0);
        assert!(!o.lexical_degenerate);
    }

    #[test]
    fn superseded_sinks_then_scope_precedence_dominates() {
        let mut sup = cand("sup", Scope::Session, 0, Some(10.0), Tier::AllTerm);
        sup.superseded = true;
        let items = [
            sup,
            cand("glob", Scope::Global, 0, Some(10.0), Tier::AllTerm),
            cand("proj", Scope::Project, 0, Some(1.0), Tier::Partial),
        ];
        let o = sort_relevance(&items, now(), false);
        assert_eq!(keys(&items, &o), ["glob", "proj", "sup"]);
        let o = sort_relevance(&items, now(), true);
        assert_eq!(keys(&items, &o), ["sup", "proj", "glob"]);
    }
}
