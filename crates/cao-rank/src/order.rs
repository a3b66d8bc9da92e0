//! Recall orderings over borrowed candidates: recency, usage and composite score, the superseded demotion and
//! the scope-precedence pass.
//!
//! Every function leaves its input untouched and works on a list of [`Ranked`] entries that point into it by
//! index, so the caller's rows (with their content) are never copied; [`apply_order`] moves the rows into the
//! final order at the end. All sorts are stable: candidates equal on every sort key keep their input order.
//!
//! Source: spec/reference-facts.md "Ranking"; spec 000 "sort_by" and "supersedes" demotion.

use crate::score::{bm25_batch_max, composite, normalize_bm25_by};
use cao_core::Scope;
use cao_core::time::days_old;
use chrono::{DateTime, Utc};
use std::cmp::Ordering;

/// What the orderings read from a recall candidate. Implement it for a row type to rank those rows in place,
/// or fill a [`Candidate`] that borrows the row's identity.
///
/// Identity is `(scope, scope_id, key)`; ranking never reads content.
pub trait Rankable {
    /// The scope the candidate lives in (drives [`scope_precedence_pass`]).
    fn scope(&self) -> Scope;
    /// The scope id (project id, session name, agent profile), `None` for global and federated.
    fn scope_id(&self) -> Option<&str>;
    /// The memory key; the last tie-break of the recency, usage and score orders (byte order, which equals
    /// the reference's code-point order).
    fn key(&self) -> &str;
    /// Time of the newest entry, UTC.
    fn updated_at(&self) -> DateTime<Utc>;
    /// Recall count from the index; negative values count as 0 in [`crate::usage`].
    fn access_count(&self) -> i64;
    /// Raw BM25 score of this candidate against the query (higher = better), `None` when it has none
    /// (no query, or it shares no token with the query). Default: `None`.
    fn bm25_raw(&self) -> Option<f64> {
        None
    }
    /// Whether the candidate is the target of an active same-scope `supersedes` edge (spec 000 lifecycle).
    /// Default: `false`.
    fn superseded(&self) -> bool {
        false
    }
}

impl<T: Rankable + ?Sized> Rankable for &T {
    fn scope(&self) -> Scope {
        (**self).scope()
    }
    fn scope_id(&self) -> Option<&str> {
        (**self).scope_id()
    }
    fn key(&self) -> &str {
        (**self).key()
    }
    fn updated_at(&self) -> DateTime<Utc> {
        (**self).updated_at()
    }
    fn access_count(&self) -> i64 {
        (**self).access_count()
    }
    fn bm25_raw(&self) -> Option<f64> {
        (**self).bm25_raw()
    }
    fn superseded(&self) -> bool {
        (**self).superseded()
    }
}

/// A ranking view of one recall row that borrows its identity strings, so no content is copied.
///
/// Source: the fields the reference's `_apply_sort_and_increment` reads (spec/reference-facts.md "Ranking").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate<'a> {
    /// Scope of the row.
    pub scope: Scope,
    /// Scope id of the row (`None` for global and federated).
    pub scope_id: Option<&'a str>,
    /// Key of the row.
    pub key: &'a str,
    /// Time of the newest entry, UTC.
    pub updated_at: DateTime<Utc>,
    /// Access count from the index.
    pub access_count: i64,
    /// Raw BM25 score against the query (higher = better), `None` when the row has none.
    pub bm25_raw: Option<f64>,
    /// Target of an active same-scope `supersedes` edge in the caller's snapshot ([`demote_superseded`]).
    pub superseded: bool,
}

impl Rankable for Candidate<'_> {
    fn scope(&self) -> Scope {
        self.scope
    }
    fn scope_id(&self) -> Option<&str> {
        self.scope_id
    }
    fn key(&self) -> &str {
        self.key
    }
    fn updated_at(&self) -> DateTime<Utc> {
        self.updated_at
    }
    fn access_count(&self) -> i64 {
        self.access_count
    }
    fn bm25_raw(&self) -> Option<f64> {
        self.bm25_raw
    }
    fn superseded(&self) -> bool {
        self.superseded
    }
}

/// One position of an ordering: which input candidate sits here, and the values it was ordered by.
///
/// `score` is the composite score (`Some` only from [`score_all`] / [`sort_score`]); `bm25_norm` is the
/// candidate's batch-normalised BM25 value, unclamped (`Some` only when the candidate had a raw score). More
/// per-candidate values (for the relevance sort and its explain report) may be added, hence
/// `#[non_exhaustive]`; build values with [`Ranked::unscored`] or the sort functions.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Ranked {
    /// Index of the candidate in the slice that was ranked.
    pub index: usize,
    /// Composite score in `[0, 1]` the candidate was ordered by, when the order is score-based.
    pub score: Option<f64>,
    /// Normalised (unclamped) BM25 value, when the candidate had a raw BM25 score.
    pub bm25_norm: Option<f64>,
}

impl Ranked {
    /// An entry for candidate `index` with no score values.
    pub fn unscored(index: usize) -> Ranked {
        Ranked {
            index,
            score: None,
            bm25_norm: None,
        }
    }
}

/// The identity permutation `0..len` with no score values: the order to use when the input order is already
/// final (the reference's recency mode leaves the pooled list as it is), before the passes below.
pub fn input_order(len: usize) -> Vec<Ranked> {
    (0..len).map(Ranked::unscored).collect()
}

fn newer_first(a: DateTime<Utc>, b: DateTime<Utc>) -> Ordering {
    b.cmp(&a)
}

/// Recency order: `updated_at` descending, then key ascending; stable for full ties.
///
/// The reference keeps discovery order for equal timestamps, which a database cannot reproduce, so the key
/// tie-break makes the order independent of pool order instead.
/// Source: spec/reference-facts.md "Ranking" and the reference's metadata recall (newest first).
pub fn sort_recency<T: Rankable>(items: &[T]) -> Vec<Ranked> {
    let mut order = input_order(items.len());
    order.sort_by(|x, y| {
        let (a, b) = (&items[x.index], &items[y.index]);
        newer_first(a.updated_at(), b.updated_at()).then_with(|| a.key().cmp(b.key()))
    });
    order
}

/// Usage order: `access_count` descending, then `updated_at` descending, then key ascending; stable.
///
/// Source: spec/reference-facts.md "Ranking" ("usage order: access_count desc, updated_at desc, key").
pub fn sort_usage<T: Rankable>(items: &[T]) -> Vec<Ranked> {
    let mut order = input_order(items.len());
    order.sort_by(|x, y| {
        let (a, b) = (&items[x.index], &items[y.index]);
        b.access_count()
            .cmp(&a.access_count())
            .then_with(|| newer_first(a.updated_at(), b.updated_at()))
            .then_with(|| a.key().cmp(b.key()))
    });
    order
}

/// Composite scores of every candidate at `now`, in input order (entry `i` is candidate `i`).
///
/// The BM25 batch is the candidates whose [`Rankable::bm25_raw`] is `Some`, normalised by their maximum
/// ([`crate::normalize_bm25`]; batch max over exactly the candidates passed in); a candidate without a raw score
/// gets `bm25_norm: None` and a lexical factor of 0. Age is [`cao_core::time::days_old`]`(now, updated_at)`
/// (future = 0). This is the value [`sort_score`] orders by, exposed for explain reports.
/// Source: spec/reference-facts.md "Ranking"; the reference's `_bm25_relevance` ("scores are returned only for
/// the identities present", a missing one counts as 0.0).
pub fn score_all<T: Rankable>(items: &[T], now: DateTime<Utc>) -> Vec<Ranked> {
    score_all_in(items, now, bm25_batch_max(items.iter().filter_map(Rankable::bm25_raw)))
}

/// [`score_all`] with the BM25 normaliser of a larger batch: `bm25_max` is the largest raw score of the batch the
/// candidates' raw scores come from (recall's BM25 pool, of which only some rows may be candidates). Each raw score
/// becomes [`normalize_bm25_by`]`(raw, bm25_max)`; with `bm25_max` the maximum over the candidates this is exactly
/// [`score_all`].
pub fn score_all_in<T: Rankable>(items: &[T], now: DateTime<Utc>, bm25_max: f64) -> Vec<Ranked> {
    items
        .iter()
        .enumerate()
        .map(|(index, c)| {
            let bm25_norm = c.bm25_raw().map(|raw| normalize_bm25_by(raw, bm25_max));
            let score = composite(
                bm25_norm.unwrap_or(0.0),
                days_old(now, c.updated_at()),
                c.access_count(),
            );
            Ranked {
                index,
                score: Some(score),
                bm25_norm,
            }
        })
        .collect()
}

/// Score order at `now`: composite score descending, then newer `updated_at`, then higher `access_count`, then
/// key ascending (stable for full ties); finally [`demote_superseded`] (always on in score mode).
///
/// Scores come from [`score_all`] and are carried in the returned entries.
/// Source: spec/reference-facts.md "Ranking" (ties); spec 000 ("Active supersedes targets are always demoted in
/// score and relevance").
pub fn sort_score<T: Rankable>(items: &[T], now: DateTime<Utc>) -> Vec<Ranked> {
    sort_score_in(items, now, bm25_batch_max(items.iter().filter_map(Rankable::bm25_raw)))
}

/// [`sort_score`] with the BM25 normaliser `bm25_max` of a larger batch (see [`score_all_in`]). Recall's score sort
/// calls this with the best raw score of its BM25 pool.
pub fn sort_score_in<T: Rankable>(items: &[T], now: DateTime<Utc>, bm25_max: f64) -> Vec<Ranked> {
    let mut order = score_all_in(items, now, bm25_max);
    order.sort_by(|x, y| {
        let (a, b) = (&items[x.index], &items[y.index]);
        let (sx, sy) = (x.score.unwrap_or(0.0), y.score.unwrap_or(0.0));
        sy.total_cmp(&sx)
            .then_with(|| newer_first(a.updated_at(), b.updated_at()))
            .then_with(|| b.access_count().cmp(&a.access_count()))
            .then_with(|| a.key().cmp(b.key()))
    });
    demote_superseded(items, &mut order);
    order
}

/// Stable partition: candidates whose [`Rankable::superseded`] is true move after all others, each group keeping
/// its order. Entries whose index is outside `items` count as not superseded.
///
/// [`sort_score`] applies it itself; call it for recency/usage only when lifecycle is enabled.
/// Source: spec 000 lifecycle ("usage demotes them before the stable scope pass and slice").
pub fn demote_superseded<T: Rankable>(items: &[T], order: &mut [Ranked]) {
    demote_by(order, |r| items.get(r.index).is_some_and(Rankable::superseded));
}

/// The demotion of [`demote_superseded`] on any slice, in place: items for which `superseded` is true move after
/// all others, each group keeping its order (a stable partition). For callers that hold their rows in final order
/// already (recency and usage pools read in order from the index).
/// Source: spec 000 lifecycle ("superseded primaries move last"; "usage demotes them before the stable scope pass
/// and slice").
pub fn demote_by<T>(items: &mut [T], superseded: impl Fn(&T) -> bool) {
    items.sort_by_key(|t| superseded(t));
}

/// Stable sort by [`Scope::precedence`] (session, project, global, agent, federated), preserving the order within
/// each scope. Apply it last, before the cut to `limit`, and only when the request named no scope. Entries whose
/// index is outside `items` go last.
/// Source: spec/reference-facts.md "Ranking" ("a stable sort applied last, in every mode").
pub fn scope_precedence_pass<T: Rankable>(items: &[T], order: &mut [Ranked]) {
    order.sort_by_key(|r| items.get(r.index).map_or(u8::MAX, |c| c.scope().precedence()));
}

/// Move `items` into `order`: output position `i` holds `items[order[i].index]`.
///
/// Items that `order` does not name are dropped; an index outside `items` or named twice is skipped (only its
/// first mention takes the item), so this never panics.
pub fn apply_order<T>(items: Vec<T>, order: &[Ranked]) -> Vec<T> {
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order
        .iter()
        .filter_map(|r| slots.get_mut(r.index).and_then(Option::take))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(day: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, day, 0, 0, 0)
            .single()
            .expect("valid date")
    }

    fn cand(key: &'static str, scope: Scope, day: u32, n: i64, raw: Option<f64>) -> Candidate<'static> {
        Candidate {
            scope,
            scope_id: None,
            key,
            updated_at: at(day),
            access_count: n,
            bm25_raw: raw,
            superseded: false,
        }
    }

    fn keys(items: &[Candidate<'_>], order: &[Ranked]) -> Vec<String> {
        order.iter().map(|r| items[r.index].key.to_owned()).collect()
    }

    #[test]
    fn recency_newest_first_then_key() {
        let items = [
            cand("b", Scope::Global, 2, 0, None),
            cand("c", Scope::Global, 3, 0, None),
            cand("a", Scope::Global, 2, 0, None),
        ];
        assert_eq!(keys(&items, &sort_recency(&items)), ["c", "a", "b"]);
    }

    #[test]
    fn usage_ties_break_on_newer_then_key() {
        let items = [
            cand("z", Scope::Global, 1, 5, None),
            cand("y", Scope::Global, 2, 5, None),
            cand("x", Scope::Global, 2, 5, None),
            cand("w", Scope::Global, 9, 1, None),
        ];
        assert_eq!(keys(&items, &sort_usage(&items)), ["x", "y", "z", "w"]);
    }

    #[test]
    fn score_ties_break_on_newer_then_count_then_key() {
        let now = at(20);
        // Same score: all fresh-ish, but the lexical factor compensates nothing here; equal inputs tie.
        let items = [
            cand("b", Scope::Global, 10, 3, None),
            cand("a", Scope::Global, 10, 3, None),
            cand("c", Scope::Global, 10, 3, Some(0.0)),
        ];
        assert_eq!(keys(&items, &sort_score(&items, now)), ["a", "b", "c"]);
    }

    #[test]
    fn score_uses_batch_max_and_reports_values() {
        let now = at(1);
        let items = [
            cand("weak", Scope::Global, 1, 0, Some(1.0)),
            cand("none", Scope::Global, 1, 0, None),
            cand("strong", Scope::Global, 1, 0, Some(4.0)),
        ];
        let order = sort_score(&items, now);
        assert_eq!(keys(&items, &order), ["strong", "weak", "none"]);
        assert_eq!(order[0].bm25_norm, Some(1.0));
        assert_eq!(order[1].bm25_norm, Some(0.25));
        assert_eq!(order[2].bm25_norm, None);
        assert_eq!(order[0].score, Some(0.8));
        assert_eq!(order[2].score, Some(0.3));
    }

    #[test]
    fn superseded_sinks_in_score_mode() {
        let now = at(1);
        let mut best = cand("best", Scope::Global, 1, 100, Some(9.0));
        best.superseded = true;
        let items = [best, cand("other", Scope::Global, 1, 0, None)];
        assert_eq!(keys(&items, &sort_score(&items, now)), ["other", "best"]);
    }

    #[test]
    fn demotion_is_a_stable_partition() {
        let mut v = vec![1, 2, 3, 4, 5, 6];
        demote_by(&mut v, |x| x % 2 == 0);
        assert_eq!(v, [1, 3, 5, 2, 4, 6]);
    }

    #[test]
    fn a_wider_batch_scales_every_lexical_factor() {
        let now = at(1);
        let items = [
            cand("a", Scope::Global, 1, 0, Some(2.0)),
            cand("b", Scope::Global, 1, 0, Some(1.0)),
        ];
        let own = sort_score(&items, now);
        assert_eq!(
            own,
            sort_score_in(&items, now, 2.0),
            "the candidates' own max is sort_score"
        );
        let wide = sort_score_in(&items, now, 4.0);
        assert_eq!(keys(&items, &wide), ["a", "b"]);
        assert_eq!(wide[0].bm25_norm, Some(0.5));
        assert_eq!(wide[1].bm25_norm, Some(0.25));
        let none = sort_score_in(&items, now, 0.0);
        assert!(none.iter().all(|r| r.bm25_norm == Some(0.0)));
    }

    #[test]
    fn scope_pass_is_stable_and_last() {
        let items = [
            cand("g-new", Scope::Global, 9, 0, None),
            cand("f", Scope::Federated, 8, 0, None),
            cand("p", Scope::Project, 7, 0, None),
            cand("g-old", Scope::Global, 1, 0, None),
            cand("s", Scope::Session, 2, 0, None),
            cand("a", Scope::Agent, 3, 0, None),
        ];
        let mut order = sort_recency(&items);
        scope_precedence_pass(&items, &mut order);
        assert_eq!(keys(&items, &order), ["s", "p", "g-new", "g-old", "a", "f"]);
    }

    #[test]
    fn apply_order_moves_rows_and_skips_bad_indices() {
        let rows = vec!["r0".to_owned(), "r1".to_owned(), "r2".to_owned()];
        let order = [
            Ranked::unscored(2),
            Ranked::unscored(7),
            Ranked::unscored(0),
            Ranked::unscored(2),
        ];
        assert_eq!(apply_order(rows, &order), ["r2", "r0"]);
    }
}
