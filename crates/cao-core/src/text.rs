//! Text rules shared by the index, ranking and key rules: the BM25 tokeniser, the stop-word list, and the
//! reference's notion of whitespace.

/// BM25 tokens as the reference defines them: lowercase runs of ASCII `[a-zA-Z0-9]`; everything else separates
/// (spec/reference-facts.md "Ranking"). No stemming, no stop words.
pub fn tokenize(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_ascii_lowercase)
}

/// Search terms of `text`: the [`tokenize`] tokens reduced to their English Snowball (Porter 2) stems, so that
/// `painted`, `painting` and `paints` all match `paint`. Both the indexed documents and the queries go through
/// this one function, so matching stays symmetric. A departure from the reference, which does not stem
/// (docs/decisions/0001-fts5-search-index.md).
pub fn search_terms(text: &str) -> impl Iterator<Item = String> + '_ {
    let stemmer = stemmer();
    tokenize(text).map(move |t| stemmer.stem(&t).into_owned())
}

/// English stop words, as [`tokenize`] splits them: the Snowball project's English stop-word list
/// (snowballstem.org, `english.stop`, BSD licence; the list its stemmer is designed for), with its contractions
/// split into their tokens (`don't` -> `don`, `t`), plus `whose` (an interrogative agents ask with). These words
/// carry no topic: they are left out of every indexed document and every query ([`index_terms`]). Sorted, so
/// [`is_stop_word`] is a binary search.
pub const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "aren",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "cannot",
    "could",
    "couldn",
    "d",
    "did",
    "didn",
    "do",
    "does",
    "doesn",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "hadn",
    "has",
    "hasn",
    "have",
    "haven",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "isn",
    "it",
    "its",
    "itself",
    "let",
    "ll",
    "m",
    "me",
    "more",
    "most",
    "mustn",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "ought",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "re",
    "s",
    "same",
    "shan",
    "she",
    "should",
    "shouldn",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "ve",
    "very",
    "was",
    "wasn",
    "we",
    "were",
    "weren",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "whose",
    "why",
    "with",
    "won",
    "would",
    "wouldn",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Whether `token` (a lowercase [`tokenize`] token, before stemming) is one of [`STOP_WORDS`].
pub fn is_stop_word(token: &str) -> bool {
    STOP_WORDS.binary_search(&token).is_ok()
}

/// Indexed terms of `text`: the [`tokenize`] tokens that are not [`STOP_WORDS`], reduced to their English Snowball
/// stems, in text order (repeats kept). The one function that turns text into terms for the lexical index:
/// documents and queries both go through it, so matching stays symmetric (docs/decisions/0009-lexical-ranking.md).
pub fn index_terms(text: &str) -> impl Iterator<Item = String> + '_ {
    let stemmer = stemmer();
    tokenize(text)
        .filter(|t| !is_stop_word(t))
        .map(move |t| stemmer.stem(&t).into_owned())
}

fn stemmer() -> &'static rust_stemmers::Stemmer {
    static STEMMER: std::sync::LazyLock<rust_stemmers::Stemmer> =
        std::sync::LazyLock::new(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English));
    &STEMMER
}

/// Whether `c` is whitespace as the reference (Python `str.split()`, `str.strip()`, regex `\s`) sees it: Unicode
/// `White_Space` ([`char::is_whitespace`]) plus the information separators U+001C..=U+001F.
pub fn is_reference_whitespace(c: char) -> bool {
    c.is_whitespace() || ('\u{1C}'..='\u{1F}').contains(&c)
}

/// The whitespace-separated words of `text` (Python `text.split()`): runs of [`is_reference_whitespace`]
/// separate, empty words are never yielded.
pub fn split_words(text: &str) -> impl Iterator<Item = &str> + '_ {
    text.split(is_reference_whitespace).filter(|w| !w.is_empty())
}

/// `text` without leading and trailing [`is_reference_whitespace`] characters (Python `text.strip()`).
pub fn trim_reference_whitespace(text: &str) -> &str {
    text.trim_matches(is_reference_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_includes_information_separators() {
        let words: Vec<_> = split_words(" a\u{1C}b\u{1F}\u{1F}c\u{3000}d\u{85}e\t").collect();
        assert_eq!(words, ["a", "b", "c", "d", "e"]);
        assert_eq!(trim_reference_whitespace("\u{1D} x y\u{A0}"), "x y");
        assert!(
            !is_reference_whitespace('\u{200B}'),
            "a zero-width space is a format character, not whitespace"
        );
    }

    #[test]
    fn search_terms_are_stemmed_tokens() {
        let t: Vec<_> = search_terms("Painted paintings, PAINTS!").collect();
        assert_eq!(t, ["paint", "paint", "paint"]);
    }

    #[test]
    fn stop_words_are_sorted_unique_tokens() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]), "sorted and unique");
        for w in STOP_WORDS {
            assert_eq!(tokenize(w).collect::<Vec<_>>(), [*w], "{w} is one token");
        }
    }

    #[test]
    fn index_terms_drop_stop_words_then_stem() {
        let t: Vec<_> = index_terms("When did Caroline paint the sunrises? She didn't!").collect();
        assert_eq!(t, ["carolin", "paint", "sunris"]);
        assert!(index_terms("what is it").next().is_none());
        assert!(is_stop_word("whose") && !is_stop_word("kafka"));
    }

    #[test]
    fn splits_on_non_ascii_alnum() {
        let t: Vec<_> = tokenize("Use pytest_fixtures, café-2x!").collect();
        assert_eq!(t, ["use", "pytest", "fixtures", "caf", "2x"]);
    }
}
