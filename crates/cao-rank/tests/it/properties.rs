//! Property tests of the ranking invariants: scores stay in [0, 1], the factors are monotone, and every
//! ordering is a deterministic permutation that respects its sort keys.

use cao_core::Scope;
use cao_rank::{
    Candidate, Ranked, apply_order, composite, recency, scope_precedence_pass, sort_recency, sort_score, sort_usage,
    usage,
};
use chrono::{DateTime, Duration, TimeZone, Utc};
use proptest::prelude::*;

const KEYS: [&str; 6] = ["alpha", "beta", "gamma", "delta", "alpha-2", "zeta"];

fn base() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().expect("valid time")
}

#[derive(Debug, Clone)]
struct Spec {
    scope: Scope,
    key: usize,
    /// Seconds after `base()`; a small range so timestamp ties happen.
    secs: i64,
    access_count: i64,
    bm25_raw: Option<f64>,
    superseded: bool,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        prop::sample::select(Scope::ALL.to_vec()),
        0..KEYS.len(),
        prop_oneof![0i64..4, -10_000_000i64..10_000_000],
        prop_oneof![-3i64..4, any::<i64>()],
        prop::option::of(prop_oneof![-5.0f64..5.0, Just(0.0), any::<f64>()]),
        any::<bool>(),
    )
        .prop_map(|(scope, key, secs, access_count, bm25_raw, superseded)| Spec {
            scope,
            key,
            secs,
            access_count,
            bm25_raw,
            superseded,
        })
}

fn candidates(specs: &[Spec]) -> Vec<Candidate<'static>> {
    specs
        .iter()
        .map(|s| Candidate {
            scope: s.scope,
            scope_id: None,
            key: KEYS[s.key],
            updated_at: base() + Duration::seconds(s.secs),
            access_count: s.access_count,
            bm25_raw: s.bm25_raw,
            superseded: s.superseded,
        })
        .collect()
}

fn assert_permutation(order: &[Ranked], len: usize) -> Result<(), TestCaseError> {
    let mut seen: Vec<usize> = order.iter().map(|r| r.index).collect();
    seen.sort_unstable();
    prop_assert_eq!(seen, (0..len).collect::<Vec<_>>());
    Ok(())
}

proptest! {
    #[test]
    fn composite_in_unit_interval(bm25 in any::<f64>(), days in any::<f64>(), n in any::<i64>()) {
        let s = composite(bm25, days, n);
        prop_assert!((0.0..=1.0).contains(&s), "composite({bm25}, {days}, {n}) = {s}");
    }

    #[test]
    fn usage_monotone_in_count(a in any::<i64>(), b in any::<i64>()) {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        prop_assert!(usage(lo) <= usage(hi));
        prop_assert!((0.0..=1.0).contains(&usage(lo)));
    }

    #[test]
    fn recency_monotone_decreasing_in_age(a in -1e6f64..1e9, b in -1e6f64..1e9) {
        let (young, old) = if a <= b { (a, b) } else { (b, a) };
        prop_assert!(recency(young) >= recency(old));
        prop_assert!(recency(old) > 0.0 && recency(young) <= 1.0);
        if young >= 0.0 && young + 1.0 <= old && old <= 1e6 {
            prop_assert!(recency(young) > recency(old));
        }
    }

    #[test]
    fn sorts_are_deterministic_permutations(specs in prop::collection::vec(spec(), 0..24), now_secs in -100i64..20_000_000) {
        let items = candidates(&specs);
        let now = base() + Duration::seconds(now_secs);
        for (name, order, again) in [
            ("recency", sort_recency(&items), sort_recency(&items)),
            ("usage", sort_usage(&items), sort_usage(&items)),
            ("score", sort_score(&items, now), sort_score(&items, now)),
        ] {
            assert_permutation(&order, items.len())?;
            prop_assert!(order == again, "{} order is not deterministic", name);
            let mut passed = order.clone();
            scope_precedence_pass(&items, &mut passed);
            assert_permutation(&passed, items.len())?;
            let moved = apply_order(items.clone(), &passed);
            prop_assert_eq!(moved.len(), items.len());
        }
    }

    #[test]
    fn orders_respect_their_keys(specs in prop::collection::vec(spec(), 0..24), now_secs in -100i64..20_000_000) {
        let items = candidates(&specs);
        let now = base() + Duration::seconds(now_secs);

        for w in sort_recency(&items).windows(2) {
            let (a, b) = (&items[w[0].index], &items[w[1].index]);
            prop_assert!(
                a.updated_at > b.updated_at || (a.updated_at == b.updated_at && a.key <= b.key),
                "recency order broken between {:?} and {:?}", a, b
            );
        }
        for w in sort_usage(&items).windows(2) {
            let (a, b) = (&items[w[0].index], &items[w[1].index]);
            prop_assert!(
                (b.access_count, b.updated_at, a.key) <= (a.access_count, a.updated_at, b.key),
                "usage order broken between {:?} and {:?}", a, b
            );
        }
        let scored = sort_score(&items, now);
        for r in &scored {
            let s = r.score.expect("score mode reports scores");
            prop_assert!((0.0..=1.0).contains(&s));
            prop_assert_eq!(r.bm25_norm.is_some(), items[r.index].bm25_raw.is_some());
        }
        for w in scored.windows(2) {
            let (a, b) = (&items[w[0].index], &items[w[1].index]);
            prop_assert!(a.superseded <= b.superseded, "superseded candidate precedes an active one");
            if a.superseded == b.superseded {
                let (sa, sb) = (w[0].score.unwrap_or(0.0), w[1].score.unwrap_or(0.0));
                prop_assert!(sa >= sb, "score order broken: {} before {}", sa, sb);
                if sa == sb {
                    prop_assert!(
                        (a.updated_at, a.access_count, b.key) >= (b.updated_at, b.access_count, a.key),
                        "score tie-break broken between {:?} and {:?}", a, b
                    );
                }
            }
        }
    }

    #[test]
    fn scope_pass_groups_by_precedence_and_keeps_order(specs in prop::collection::vec(spec(), 0..24)) {
        let items = candidates(&specs);
        let before = sort_usage(&items);
        let mut after = before.clone();
        scope_precedence_pass(&items, &mut after);
        for w in after.windows(2) {
            prop_assert!(items[w[0].index].scope.precedence() <= items[w[1].index].scope.precedence());
        }
        for scope in Scope::ALL {
            let pick = |o: &[Ranked]| o.iter().filter(|r| items[r.index].scope == scope).map(|r| r.index).collect::<Vec<_>>();
            prop_assert_eq!(pick(&before), pick(&after));
        }
    }
}

mod relevance {
    use super::*;
    use cao_rank::{RelevanceCandidate, Tier, sort_relevance};

    const IDS: [Option<&str>; 3] = [None, Some("p1"), Some("p2")];

    fn rel_candidates(specs: &[(Spec, bool, usize)]) -> Vec<RelevanceCandidate<'static>> {
        // Distinct identities: a pool never holds the same (key, scope, scope_id, source_kind) twice.
        let mut seen = std::collections::HashSet::new();
        specs
            .iter()
            .filter(|(s, _, id)| seen.insert((s.key, s.scope, *id)))
            .map(|(s, all, id)| RelevanceCandidate {
                key: KEYS[s.key],
                scope: s.scope,
                scope_id: IDS[*id],
                source_kind: cao_core::SourceKind::Native,
                updated_at: base() + Duration::seconds(s.secs),
                bm25_raw: s.bm25_raw,
                tier: if *all { Tier::AllTerm } else { Tier::Partial },
                superseded: s.superseded,
            })
            .collect()
    }

    fn identity(c: &RelevanceCandidate<'_>) -> (String, Scope, Option<String>) {
        (c.key.to_owned(), c.scope, c.scope_id.map(str::to_owned))
    }

    proptest! {
        /// The order is a permutation and depends only on the input set: any reordering of the input gives the
        /// same sequence of identities and values (ties end on the full identity, never on input position).
        #[test]
        fn relevance_is_a_permutation_stable_function_of_its_inputs(
            specs in prop::collection::vec((spec(), any::<bool>(), 0..3usize), 0..24),
            rot in 0usize..24,
            scope_pass in any::<bool>(),
        ) {
            let items = rel_candidates(&specs);
            let now = base() + Duration::days(40);
            let a = sort_relevance(&items, now, scope_pass);
            let mut idx: Vec<usize> = a.order.iter().map(|r| r.index).collect();
            idx.sort_unstable();
            prop_assert_eq!(idx, (0..items.len()).collect::<Vec<_>>());
            let mut shuffled = items.clone();
            if !shuffled.is_empty() {
                let k = rot % shuffled.len();
                shuffled.rotate_left(k);
                shuffled.reverse();
            }
            let b = sort_relevance(&shuffled, now, scope_pass);
            let seq = |items: &[RelevanceCandidate<'static>], o: &cao_rank::RelevanceOrder| -> Vec<_> {
                o.order.iter().map(|r| (identity(&items[r.index]), r.lexical.to_bits(), r.relevance.to_bits())).collect()
            };
            prop_assert_eq!(seq(&items, &a), seq(&shuffled, &b));
            prop_assert_eq!(a.lexical_degenerate, b.lexical_degenerate);
            for r in &a.order {
                prop_assert!((0.0..=1.0).contains(&r.lexical) && (0.0..=1.0).contains(&r.relevance));
            }
        }

        /// Without demotion or the scope pass, every all-term match precedes every partial one.
        #[test]
        fn all_term_matches_always_precede_partial_ones(
            specs in prop::collection::vec((spec(), any::<bool>(), 0..3usize), 0..24),
        ) {
            let mut items = rel_candidates(&specs);
            items.iter_mut().for_each(|c| c.superseded = false);
            let o = sort_relevance(&items, base(), false);
            let tiers: Vec<Tier> = o.order.iter().map(|r| r.tier).collect();
            prop_assert!(tiers.windows(2).all(|w| w[0] <= w[1]), "{:?}", tiers);
            // Within a tier, relevance never increases.
            for w in o.order.windows(2) {
                if w[0].tier == w[1].tier {
                    prop_assert!(w[0].relevance >= w[1].relevance);
                }
            }
        }
    }
}
