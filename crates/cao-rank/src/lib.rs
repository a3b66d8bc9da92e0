//! Ranking rules of the cao memory system, as pure functions (no I/O, no clock: callers pass `now`).
//!
//! - Scalars ([`recency`], [`usage`], [`composite`], [`normalize_bm25`]) reproduce the reference's scoring
//!   exactly (conformance `score.json`, `bm25_normalise.json`).
//! - Orderings ([`sort_recency`], [`sort_usage`], [`sort_score`]; [`sort_relevance`] for the opt-in relevance sort) rank any slice of [`Rankable`] values and
//!   return a permutation as [`Ranked`] entries carrying the values each candidate was ordered by; the passes
//!   [`demote_superseded`] and [`scope_precedence_pass`] refine that permutation and [`apply_order`] moves the
//!   caller's rows into it.
//!
//! Invariants: every score is in `[0, 1]` for any input; every ordering is a permutation of the input indices
//! and a deterministic function of the input sequence (all sorts are stable; nothing panics on odd values).
//!
//! Source: spec/reference-facts.md "Ranking"; spec 000 "sort_by".

mod order;
mod pool;
mod relevance;
mod score;

pub use order::{
    Candidate, Rankable, Ranked, apply_order, demote_superseded, input_order, scope_precedence_pass, score_all,
    sort_recency, sort_score, sort_usage,
};
pub use pool::pool_size;
pub use relevance::{
    RELEVANCE_AGE_FLOOR, RELEVANCE_AGE_HALF_DAYS, RELEVANCE_AGE_WEIGHT, RelevanceCandidate, RelevanceOrder,
    RelevanceRanked, Tier, relevance_age_factor, relevance_recency_factor, sort_relevance,
};
pub use score::{
    RECENCY_HALF_DAYS, USAGE_SATURATION, W_BM25, W_RECENCY, W_USAGE, composite, normalize_bm25, recency, usage,
};
