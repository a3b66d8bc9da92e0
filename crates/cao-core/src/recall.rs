//! The recall options every layer names: how candidates are found ([`SearchMode`]) and how they are ordered
//! ([`SortBy`]). Wire names are lowercase; parsing is exact.
//!
//! Source: spec 000 "memory_recall" (`search_mode`, `sort_by`).

use serde::Serialize;

/// How recall finds candidates (spec 000 "memory_recall").
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// All query terms as case-insensitive substrings of key, tags or content.
    Metadata,
    /// BM25 keyword search (any shared token).
    Bm25,
    /// Metadata hits first, BM25 hits fill the remaining slots. The default.
    Hybrid,
}

impl SearchMode {
    /// Parse the wire name; errors name the valid values.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "metadata" => Ok(Self::Metadata),
            "bm25" => Ok(Self::Bm25),
            "hybrid" => Ok(Self::Hybrid),
            other => Err(format!(
                "invalid search_mode {other:?}: expected one of metadata, bm25, hybrid"
            )),
        }
    }

    /// The wire name (`metadata`, `bm25`, `hybrid`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Metadata => "metadata",
            Self::Bm25 => "bm25",
            Self::Hybrid => "hybrid",
        }
    }
}

/// How recall orders results (spec 000 "memory_recall").
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SortBy {
    /// Newest first (metadata hits), search order for BM25 hits. The default.
    Recency,
    /// Composite 0.5 BM25 + 0.3 recency + 0.2 usage.
    Score,
    /// Most accessed first.
    Usage,
    /// Opt-in lexical relevance: all-term matches first, then normalised BM25 x an age factor for native project
    /// memories (spec 000 relevance paragraphs). Without a query it is exactly `recency`.
    Relevance,
}

impl SortBy {
    /// Parse the wire name; errors name the valid values.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "recency" => Ok(Self::Recency),
            "score" => Ok(Self::Score),
            "usage" => Ok(Self::Usage),
            "relevance" => Ok(Self::Relevance),
            other => Err(format!(
                "invalid sort_by {other:?}: expected one of recency, score, usage, relevance"
            )),
        }
    }

    /// The wire name ([`SortBy::parse`] reads it back).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Recency => "recency",
            Self::Score => "score",
            Self::Usage => "usage",
            Self::Relevance => "relevance",
        }
    }
}

impl std::str::FromStr for SearchMode {
    type Err = String;

    /// [`SearchMode::parse`] (the same message for a name outside the set).
    fn from_str(s: &str) -> Result<Self, String> {
        Self::parse(s)
    }
}

impl std::str::FromStr for SortBy {
    type Err = String;

    /// [`SortBy::parse`] (the same message for a name outside the set).
    fn from_str(s: &str) -> Result<Self, String> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip() {
        for m in [SearchMode::Metadata, SearchMode::Bm25, SearchMode::Hybrid] {
            assert_eq!(SearchMode::parse(m.as_str()), Ok(m));
            assert_eq!(serde_json::to_value(m).ok(), Some(serde_json::json!(m.as_str())));
        }
        assert!(SearchMode::parse("Hybrid").is_err());
        assert_eq!("bm25".parse::<SearchMode>(), Ok(SearchMode::Bm25));
        assert_eq!("best".parse::<SortBy>(), SortBy::parse("best"));
        assert!(SortBy::parse("relevance").is_ok() && SortBy::parse("best").is_err());
        for s in [SortBy::Recency, SortBy::Score, SortBy::Usage, SortBy::Relevance] {
            assert_eq!(SortBy::parse(s.as_str()), Ok(s));
        }
    }
}
