//! Conformance: every case of `score.json` and `bm25_normalise.json` (reference outputs), tolerance 1e-9.
//!
//! Cases are read from `<workspace root>/../shared/conformance/reference/`, or from `$CAO_CONFORMANCE_DIR`.
//! A missing directory or file fails the test.

use cao_core::Scope;
use cao_rank::{Candidate, composite, normalize_bm25, sort_score, sort_score_in};
use cao_testkit::conformance_cases;
use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::Value;

const TOLERANCE: f64 = 1e-9;

fn f64_field(case: &Value, name: &str) -> f64 {
    case[name]
        .as_f64()
        .unwrap_or_else(|| panic!("case {case} lacks number `{name}`"))
}

fn i64_field(case: &Value, name: &str) -> i64 {
    case[name]
        .as_i64()
        .unwrap_or_else(|| panic!("case {case} lacks integer `{name}`"))
}

/// A fixed evaluation time; each case's `updated_at` is `days_old` whole days before it.
fn fixed_now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 4, 16, 10, 30, 0)
        .single()
        .expect("valid time")
}

#[test]
fn score_cases_match_reference() {
    let cases = conformance_cases("score.json");
    for case in &cases {
        let bm25 = f64_field(case, "bm25_norm");
        let days = i64_field(case, "days_old");
        let n = i64_field(case, "access_count");
        let want = f64_field(case, "score");

        let got = composite(bm25, days as f64, n);
        assert!(
            (got - want).abs() <= TOLERANCE,
            "composite for {case}: got {got}, want {want}"
        );

        // The same case through the ordering path: an anchor with raw BM25 1.0 makes the batch max 1.0 (or the
        // case's own raw value when larger, which clamps to the same factor), and updated_at is `days` before now.
        let now = fixed_now();
        let items = [
            Candidate {
                scope: Scope::Global,
                scope_id: None,
                key: "case",
                updated_at: now - Duration::days(days),
                access_count: n,
                bm25_raw: Some(bm25),
                superseded: false,
            },
            Candidate {
                scope: Scope::Global,
                scope_id: None,
                key: "anchor",
                updated_at: now,
                access_count: 0,
                bm25_raw: Some(1.0),
                superseded: false,
            },
        ];
        let ranked = sort_score(&items, now);
        let entry = ranked.iter().find(|r| r.index == 0).expect("case candidate is ranked");
        let got = entry.score.expect("score mode reports a score");
        assert!(
            (got - want).abs() <= TOLERANCE,
            "sort_score for {case}: got {got}, want {want}"
        );

        // Recall's path: the case alone, normalised by the best raw score of its BM25 pool (the anchor's 1.0, or
        // the case's own when larger), as `cao-memory` calls it.
        let ranked = sort_score_in(&items[..1], now, bm25.max(1.0));
        let got = ranked[0].score.expect("score mode reports a score");
        assert!(
            (got - want).abs() <= TOLERANCE,
            "sort_score_in for {case}: got {got}, want {want}"
        );
    }
}

#[test]
fn bm25_normalise_cases_match_reference() {
    let cases = conformance_cases("bm25_normalise.json");
    for case in &cases {
        let raw = case["raw"]
            .as_object()
            .unwrap_or_else(|| panic!("case {case} lacks object `raw`"));
        let want = case["normalised"]
            .as_object()
            .unwrap_or_else(|| panic!("case {case} lacks `normalised`"));
        let names: Vec<&String> = raw.keys().collect();
        let values: Vec<f64> = names
            .iter()
            .map(|k| raw[*k].as_f64().expect("raw value is a number"))
            .collect();
        let got = normalize_bm25(&values);
        assert_eq!(got.len(), values.len());
        assert_eq!(want.len(), names.len(), "case {case}: key sets differ");
        for (name, g) in names.iter().zip(&got) {
            let w = want
                .get(*name)
                .and_then(Value::as_f64)
                .unwrap_or_else(|| panic!("case {case}: no normalised value for `{name}`"));
            assert!((g - w).abs() <= TOLERANCE, "case {case}, `{name}`: got {g}, want {w}");
        }
    }
}
