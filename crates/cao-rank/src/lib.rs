//! Ranking rules of the cao memory system, as pure functions (no I/O, no clock: callers pass `now`). This crate is
//! the only place a recall order is defined; `cao-memory` gathers candidates from the index and calls it.
//!
//! - Scalars ([`recency`], [`usage`], [`composite`], [`normalize_bm25`], [`normalize_bm25_by`]) reproduce the
//!   reference's scoring exactly (conformance `score.json`, `bm25_normalise.json`).
//! - Orderings ([`sort_recency`], [`sort_usage`], [`sort_score`] / [`sort_score_in`]; [`sort_relevance`] for the
//!   opt-in relevance sort) rank any slice of [`Rankable`] values and return a permutation as [`Ranked`] entries
//!   carrying the values each candidate was ordered by; the passes [`demote_superseded`] and
//!   [`scope_precedence_pass`] refine that permutation and [`apply_order`] moves the caller's rows into it.
//!   [`demote_by`] is the same demotion in place, for rows already read in order.
//! - Lexical score: [`Bm25`], our BM25 with a down-weighted context field, the [`cao_core::lexical::LexicalScorer`]
//!   the index's candidate search and the relevance pool score with (docs/decisions/0009-lexical-ranking.md).
//! - Hybrid text ranking: [`fuse`], min-max fusion of the lexical score and the dense similarity
//!   (docs/decisions/0011-dense-recall.md).
//! - Pools: [`pool_size`], how many rows each source contributes to a re-ranked pool.
//! - Explain: [`explain_report`] builds the `cao.memory.explain/1` report from the relevance order and default
//!   recall's top set (ranks, overlap, recovered rows, rounded values); the lifecycle verdicts are the caller's.
//!
//! Invariants: every score is in `[0, 1]` for any input; every ordering is a permutation of the input indices
//! and a deterministic function of the input sequence (all sorts are stable; nothing panics on odd values).
//!
//! Source: spec/reference-facts.md "Ranking"; spec 000 "sort_by", "On-demand relevance explain".

mod explain;
mod fusion;
mod lexical;
mod order;
mod pool;
mod relevance;
mod score;

pub use explain::{
    DEFAULT_EXPLAIN_LIMIT, DefaultRow, DenseComponents, EXPLAIN_SCHEMA, ExplainCandidate, ExplainInput, ExplainReport,
    ExplainSubject, Injection, MAX_EXPLAIN_LIMIT, PoolCounts, RecencyConstants, dense_components, explain_report,
    round4,
};
pub use fusion::{FUSION_DENSE_WEIGHT, FUSION_LEXICAL_WEIGHT, FUSION_POOL, Fused, FusionInput, fuse};
pub use lexical::{BM25_K1_MAX, Bm25};
pub use order::{
    Candidate, Rankable, Ranked, apply_order, demote_by, demote_superseded, input_order, scope_precedence_pass,
    score_all, score_all_in, sort_recency, sort_score, sort_score_in, sort_usage,
};
pub use pool::pool_size;
pub use relevance::{
    RELEVANCE_AGE_FLOOR, RELEVANCE_AGE_HALF_DAYS, RELEVANCE_AGE_WEIGHT, RelevanceCandidate, RelevanceOrder,
    RelevanceRanked, Tier, relevance_age_factor, relevance_recency_factor, sort_relevance,
};
pub use score::{
    RECENCY_HALF_DAYS, USAGE_SATURATION, W_BM25, W_RECENCY, W_USAGE, bm25_batch_max, composite, normalize_bm25,
    normalize_bm25_by, recency, usage,
};
