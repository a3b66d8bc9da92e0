//! The scalar scoring rules: recency, usage, the composite score and BM25 batch normalisation.
//!
//! Source: spec/reference-facts.md "Ranking"; conformance `score.json` and `bm25_normalise.json`.

/// Weight of the normalised BM25 factor in [`composite`] (0.50).
///
/// Source: spec/reference-facts.md "Ranking" (composite = 0.50 * bm25_norm + 0.30 * recency + 0.20 * usage).
pub const W_BM25: f64 = 0.50;

/// Weight of the [`recency`] factor in [`composite`] (0.30).
///
/// Source: spec/reference-facts.md "Ranking".
pub const W_RECENCY: f64 = 0.30;

/// Weight of the [`usage`] factor in [`composite`] (0.20).
///
/// Source: spec/reference-facts.md "Ranking".
pub const W_USAGE: f64 = 0.20;

/// Age in days at which [`recency`] reaches 0.5 (30.0 days).
///
/// Source: spec/reference-facts.md "Ranking" (recency = 1 / (1 + days_old / 30)).
pub const RECENCY_HALF_DAYS: f64 = 30.0;

/// Access count at which [`usage`] saturates at 1.0 (100 accesses).
///
/// Source: spec/reference-facts.md "Ranking" (usage = min(1, ln(1 + n) / ln(101))).
pub const USAGE_SATURATION: i64 = 100;

/// Recency factor in `(0, 1]` for an age of `days_old` fractional days: `1 / (1 + days / 30)`.
///
/// A negative age (a future `updated_at`) and NaN count as age 0 (factor 1.0); `+inf` gives 0.0.
/// Compute the age with [`cao_core::time::days_old`].
/// Source: spec/reference-facts.md "Ranking" ("future dates count as age 0").
pub fn recency(days_old: f64) -> f64 {
    // f64::max returns the non-NaN operand, so NaN becomes 0.
    let days = days_old.max(0.0);
    1.0 / (1.0 + days / RECENCY_HALF_DAYS)
}

/// Usage factor in `[0, 1]` for `access_count` accesses: `min(1, ln(1 + n) / ln(1 + 100))`.
///
/// A negative count counts as 0 (factor 0.0). Monotone non-decreasing in `access_count`.
/// Source: spec/reference-facts.md "Ranking" ("negative n as 0").
pub fn usage(access_count: i64) -> f64 {
    let n = access_count.max(0) as f64;
    (n.ln_1p() / (USAGE_SATURATION as f64).ln_1p()).min(1.0)
}

/// Composite score in `[0, 1]`: `0.50 * clamp(bm25_norm, 0, 1) + 0.30 * recency(days_old) + 0.20 * usage(n)`.
///
/// `bm25_norm` is a value from [`normalize_bm25`] (0.0 when the row has no lexical score); it is clamped here,
/// and NaN counts as 0. `days_old` is fractional days ([`recency`] rules apply); `access_count` follows
/// [`usage`]. The terms are summed left to right as the reference does, so results match it to the last bit
/// in practice and never leave `[0, 1]`.
/// Source: spec/reference-facts.md "Ranking"; conformance `score.json`.
pub fn composite(bm25_norm: f64, days_old: f64, access_count: i64) -> f64 {
    let bm25 = if bm25_norm.is_nan() {
        0.0
    } else {
        bm25_norm.clamp(0.0, 1.0)
    };
    W_BM25 * bm25 + W_RECENCY * recency(days_old) + W_USAGE * usage(access_count)
}

/// Divide every raw BM25 score of one batch by the batch maximum; when that maximum is `<= 0` every value
/// becomes 0.0. Output has the same length and order as `raw`; an empty batch gives an empty vector.
///
/// The result is NOT clamped: with a positive maximum a negative raw score stays negative (raw `[5, -1, 2.5]`
/// gives `[1, -0.2, 0.5]`); [`composite`] clamps when it consumes the value. NaN entries do not take part in
/// the maximum and normalise to NaN.
/// Source: spec/reference-facts.md "Ranking"; conformance `bm25_normalise.json`.
pub fn normalize_bm25(raw: &[f64]) -> Vec<f64> {
    let max = bm25_batch_max(raw.iter().copied());
    raw.iter().map(|v| normalize_bm25_by(*v, max)).collect()
}

/// The normaliser of a BM25 batch: its largest raw score, ignoring NaN (`-inf` for an empty or all-NaN batch).
pub fn bm25_batch_max(raw: impl IntoIterator<Item = f64>) -> f64 {
    raw.into_iter().fold(f64::NEG_INFINITY, f64::max)
}

/// One raw BM25 score normalised by its batch maximum `max` (see [`bm25_batch_max`]): `raw / max`, or 0.0 when
/// `max` is `<= 0` or NaN. This is the rule [`normalize_bm25`] applies to every value; callers whose batch holds
/// rows that are not ranked together (a BM25 pool of which only some rows are candidates) apply it with the batch's
/// own maximum.
/// Source: spec/reference-facts.md "Ranking" ("divided by the batch maximum (all zeros when that maximum is
/// <= 0)").
pub fn normalize_bm25_by(raw: f64, max: f64) -> f64 {
    if max.is_nan() || max <= 0.0 { 0.0 } else { raw / max }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_life_and_saturation_points() {
        assert_eq!(recency(RECENCY_HALF_DAYS), 0.5);
        assert_eq!(recency(-3.0), 1.0);
        assert_eq!(recency(f64::NAN), 1.0);
        assert_eq!(recency(f64::INFINITY), 0.0);
        assert_eq!(usage(USAGE_SATURATION), 1.0);
        assert_eq!(usage(i64::MAX), 1.0);
        assert_eq!(usage(-7), 0.0);
        assert_eq!(usage(0), 0.0);
    }

    #[test]
    fn composite_clamps_lexical_factor() {
        assert_eq!(composite(1.0, 0.0, USAGE_SATURATION), 1.0);
        assert_eq!(composite(7.5, 0.0, 0), composite(1.0, 0.0, 0));
        assert_eq!(composite(-0.2, 0.0, 0), composite(0.0, 0.0, 0));
        assert_eq!(composite(f64::NAN, 0.0, 0), composite(0.0, 0.0, 0));
    }

    #[test]
    fn normalisation_degenerate_batches() {
        assert!(normalize_bm25(&[]).is_empty());
        assert_eq!(normalize_bm25(&[0.0, 0.0]), vec![0.0, 0.0]);
        assert_eq!(normalize_bm25(&[-1.0, -2.0]), vec![0.0, 0.0]);
        assert_eq!(normalize_bm25(&[5.0, -1.0, 2.5]), vec![1.0, -0.2, 0.5]);
    }

    #[test]
    fn one_value_follows_the_batch_rule() {
        assert_eq!(normalize_bm25_by(2.5, 5.0), 0.5);
        assert_eq!(normalize_bm25_by(-1.0, 5.0), -0.2);
        assert_eq!(normalize_bm25_by(3.0, 0.0), 0.0);
        assert_eq!(normalize_bm25_by(3.0, -1.0), 0.0);
        assert_eq!(normalize_bm25_by(3.0, f64::NAN), 0.0);
        assert_eq!(bm25_batch_max([1.0, f64::NAN, 4.0]), 4.0);
        assert_eq!(bm25_batch_max([]), f64::NEG_INFINITY);
    }
}
