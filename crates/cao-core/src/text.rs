//! Text rules shared by the index, ranking and key rules: the BM25 tokeniser and the reference's notion of
//! whitespace.

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
    fn splits_on_non_ascii_alnum() {
        let t: Vec<_> = tokenize("Use pytest_fixtures, café-2x!").collect();
        assert_eq!(t, ["use", "pytest", "fixtures", "caf", "2x"]);
    }
}
