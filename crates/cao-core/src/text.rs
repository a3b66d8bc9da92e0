//! Text rules shared by the index and ranking: the BM25 tokeniser.

/// BM25 tokens as the reference defines them: lowercase runs of ASCII `[a-zA-Z0-9]`; everything else separates
/// (spec/reference-facts.md "Ranking"). No stemming, no stop words.
pub fn tokenize(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|t| !t.is_empty()).map(str::to_ascii_lowercase)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_non_ascii_alnum() {
        let t: Vec<_> = tokenize("Use pytest_fixtures, café-2x!").collect();
        assert_eq!(t, ["use", "pytest", "fixtures", "caf", "2x"]);
    }
}
