//! The lexical score: our own BM25 over the index's term statistics, with a down-weighted context field.
//!
//! For a query term `t` with document frequency `df` in a corpus of `N` documents, and a document `d` with fields
//! `f` (content, context):
//!
//! ```text
//! idf(t)      = ln(1 + (N - df + 0.5) / (df + 0.5))                      (never negative)
//! x(t, d)     = sum over f of  w_f * tf_f / (1 - b + b * len_f / avglen_f)
//! score(t, d) = idf(t) * x * (k1 + 1) / (x + k1)
//! ```
//!
//! with `w_content = 1` and `w_context` = [`Bm25::context_weight`]: BM25F (Robertson, Zaragoza and Taylor, "Simple
//! BM25 extension to multiple weighted fields", 2004): each field's term count is normalised by that field's
//! length against its own average, the weighted counts are added, and the sum is saturated once, so a term found
//! in both the content and the context counts as one term seen more often, not as two terms. The IDF is over whole
//! documents (a term in either field counts once). The document's score is the sum over the distinct query terms.
//! With a context weight of 0 this is plain BM25 on the content. Defaults k1 = 1.2, b = 0.1 and context weight 0.4
//! were chosen by leave-one-conversation-out validation on LoCoMo (docs/decisions/0009-lexical-ranking.md).
//! [`Bm25::REFERENCE`] keeps the reference's constants (rank_bm25 `BM25Okapi`, k1 = 1.5, b = 0.75, no context
//! field; spec/reference-facts.md "Ranking").

use cao_core::lexical::{CorpusStats, FIELDS, Field, LexicalScorer, TermInDoc};

/// Largest accepted k1 (term-frequency saturation).
pub const BM25_K1_MAX: f64 = 3.0;

/// BM25 parameters; implements [`LexicalScorer`]. Build checked values with [`Bm25::new`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25 {
    /// Term-frequency saturation, `0..=`[`BM25_K1_MAX`] (0 = a term counts once however often it occurs).
    pub k1: f64,
    /// Length normalisation, `0..=1` (0 = none, 1 = full).
    pub b: f64,
    /// Weight of the context field relative to the content field, `0..=1` (0 = the context field is ignored).
    pub context_weight: f64,
}

impl Bm25 {
    /// The defaults: k1 = 1.2, b = 0.1, context weight 0.4 (docs/decisions/0009-lexical-ranking.md: chosen by
    /// leave-one-conversation-out validation on LoCoMo; short memories want little length normalisation).
    pub const DEFAULT: Bm25 = Bm25 {
        k1: 1.2,
        b: 0.1,
        context_weight: 0.4,
    };

    /// The reference's constants (rank_bm25 `BM25Okapi`: k1 = 1.5, b = 0.75) on the content field alone, for
    /// comparisons with the reference (spec/reference-facts.md "Ranking"). Its IDF differs (BM25Okapi floors
    /// negative IDFs at 0.25 x the mean), so scores are comparable in order, not in value.
    pub const REFERENCE: Bm25 = Bm25 {
        k1: 1.5,
        b: 0.75,
        context_weight: 0.0,
    };

    /// Checked parameters.
    ///
    /// Errors: a one-line message naming the first value outside its range (k1 `0..=3`, b `0..=1`, context weight
    /// `0..=1`; NaN is outside every range).
    pub fn new(k1: f64, b: f64, context_weight: f64) -> Result<Bm25, String> {
        let check = |name: &str, v: f64, max: f64| {
            if (0.0..=max).contains(&v) {
                Ok(())
            } else {
                Err(format!("BM25 {name} must be a number from 0 to {max}; got {v}"))
            }
        };
        check("k1", k1, BM25_K1_MAX)?;
        check("b", b, 1.0)?;
        check("context weight", context_weight, 1.0)?;
        Ok(Bm25 { k1, b, context_weight })
    }

    /// Weight of each field, in [`Field`] order.
    fn weights(&self) -> [f64; FIELDS] {
        [1.0, self.context_weight]
    }
}

impl Default for Bm25 {
    fn default() -> Self {
        Bm25::DEFAULT
    }
}

impl LexicalScorer for Bm25 {
    /// `ln(1 + (N - df + 0.5) / (df + 0.5))`, with `df` clamped to `0..=N` (so never negative or NaN).
    fn idf(&self, corpus: &CorpusStats, df: u64) -> f64 {
        let n = corpus.docs as f64;
        let df = (df as f64).min(n);
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// `idf * x (k1 + 1) / (x + k1)` with `x = sum_f w_f tf_f / (1 - b + b len_f / avglen_f)` (BM25F); a field
    /// the term does not occur in adds 0 to `x`, and a field whose corpus average is 0 counts as average length.
    fn term_score(&self, corpus: &CorpusStats, idf: f64, term: &TermInDoc) -> f64 {
        let weights = self.weights();
        let mut x = 0.0;
        for f in Field::ALL {
            let i = f.index();
            let tf = f64::from(term.tf[i]);
            if tf == 0.0 || weights[i] == 0.0 {
                continue;
            }
            let avg = corpus.avg_len(f);
            let rel = if avg > 0.0 { f64::from(term.len[i]) / avg } else { 1.0 };
            let norm = 1.0 - self.b + self.b * rel;
            x += weights[i] * tf / norm;
        }
        if x <= 0.0 {
            return 0.0;
        }
        let score = idf * x * (self.k1 + 1.0) / (x + self.k1);
        if score.is_finite() && score > 0.0 { score } else { 0.0 }
    }

    /// `idf * (k1 + 1)`: the saturated fraction `x / (x + k1)` stays at most 1.
    fn term_bound(&self, idf: f64) -> f64 {
        idf.max(0.0) * (self.k1 + 1.0)
    }

    /// False exactly when the context weight is 0: [`Bm25::term_score`] then skips the context field.
    fn uses_context(&self) -> bool {
        self.context_weight != 0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus() -> CorpusStats {
        CorpusStats {
            docs: 100,
            field_terms: [1000, 2000],
        }
    }

    fn term(tf: [u32; 2], len: [u32; 2]) -> TermInDoc {
        TermInDoc { tf, len }
    }

    #[test]
    fn idf_falls_with_document_frequency_and_stays_positive() {
        let s = Bm25::DEFAULT;
        let c = corpus();
        let idfs: Vec<f64> = [0, 1, 10, 50, 100, 1000].iter().map(|df| s.idf(&c, *df)).collect();
        assert!(idfs.windows(2).all(|w| w[0] >= w[1]), "{idfs:?}");
        assert!(idfs.iter().all(|v| *v > 0.0 && v.is_finite()), "{idfs:?}");
        assert!((s.idf(&c, 10) - (1.0f64 + 90.5 / 10.5).ln()).abs() < 1e-12);
    }

    #[test]
    fn content_counts_more_than_context_and_length_normalises_a_little() {
        let s = Bm25::new(0.9, 0.25, 0.5).expect("valid");
        let c = corpus();
        let in_content = s.term_score(&c, 2.0, &term([1, 0], [10, 20]));
        let in_context = s.term_score(&c, 2.0, &term([0, 1], [10, 20]));
        // Average length: norm = 1, so one occurrence scores idf exactly.
        assert!((in_content - 2.0).abs() < 1e-12, "{in_content}");
        // In the context field the count is weighted before saturation: x = 0.5.
        let expected = 2.0 * 0.5 * 1.9 / (0.5 + 0.9);
        assert!((in_context - expected).abs() < 1e-12, "{in_context} {expected}");
        assert!(in_context < in_content);
        let long = s.term_score(&c, 2.0, &term([1, 0], [40, 20]));
        assert!(long < in_content, "a longer content field scores lower");
        let more = s.term_score(&c, 2.0, &term([3, 0], [10, 20]));
        assert!(more > in_content && more < s.term_bound(2.0));
        assert_eq!(s.term_score(&c, 2.0, &term([0, 0], [10, 20])), 0.0);
    }

    #[test]
    fn a_term_in_both_fields_saturates_once() {
        let s = Bm25::DEFAULT;
        let c = corpus();
        let both = s.term_score(&c, 2.0, &term([1, 1], [10, 20]));
        let content = s.term_score(&c, 2.0, &term([1, 0], [10, 20]));
        let context = s.term_score(&c, 2.0, &term([0, 1], [10, 20]));
        assert!(both > content, "the context adds to a content match");
        assert!(both < content + context, "but less than two separate terms would");
        assert!(both < s.term_bound(2.0));
        // With no context weight, BM25F is plain BM25 on the content: tf (k1 + 1) / (tf + k1 norm).
        let plain = Bm25::new(1.2, 0.75, 0.0).expect("valid");
        let got = plain.term_score(&c, 1.5, &term([2, 7], [15, 20]));
        let norm = 1.0 - 0.75 + 0.75 * 15.0 / 10.0;
        let want = 1.5 * 2.0 * 2.2 / (2.0 + 1.2 * norm);
        assert!((got - want).abs() < 1e-12, "{got} {want}");
    }

    #[test]
    fn zero_context_weight_ignores_the_context_field() {
        let s = Bm25::new(1.2, 0.75, 0.0).expect("valid");
        assert_eq!(s.term_score(&corpus(), 2.0, &term([0, 5], [10, 20])), 0.0);
        assert_eq!(Bm25::REFERENCE.context_weight, 0.0);
    }

    #[test]
    fn out_of_range_parameters_are_named() {
        assert!(Bm25::new(3.5, 0.25, 0.5).expect_err("k1").contains("k1"));
        assert!(Bm25::new(0.9, -0.1, 0.5).expect_err("b").contains(" b "));
        assert!(Bm25::new(0.9, 0.2, f64::NAN).expect_err("w").contains("context weight"));
        assert_eq!(Bm25::new(1.2, 0.1, 0.4), Ok(Bm25::DEFAULT));
    }
}
