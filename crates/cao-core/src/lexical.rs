//! The interface between the lexical index and the lexical ranking formula.
//!
//! A memory's lexical document has two fields ([`Field`]): its content, and its context (key, tags, the date it was
//! stored, and the text of the memories stored just before and after it in the same scope; docs/decisions/0009). The index
//! (`cao-index`) keeps the term statistics ([`CorpusStats`], document frequencies, each document's per-field term
//! counts) and gathers candidates; the formula that turns them into a score is a [`LexicalScorer`], implemented by
//! `cao-rank` (`cao_rank::Bm25`), the one place ranking rules live. The trait is here, below both, so neither depends
//! on the other.
//!
//! A document's score for a query is the sum of [`LexicalScorer::term_score`] over the distinct query terms it
//! contains (in either field); a document is a match only when one of them is in its own text (content, key, tags,
//! stored day), not only in its neighbours' text (the index applies this rule when it gathers candidates).

/// Number of fields of a lexical document.
pub const FIELDS: usize = 2;

/// A field of a memory's lexical document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// The memory's current content.
    Content = 0,
    /// Key, tags, stored date and the neighbouring memories' text (weighted down by the scorer).
    Context = 1,
}

impl Field {
    /// Both fields, in index order.
    pub const ALL: [Field; FIELDS] = [Field::Content, Field::Context];

    /// The field's position in per-field arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Statistics of the whole lexical index (every indexed memory, whatever the caller may see: the corpus is never
/// filtered, spec 000 "The BM25 corpus remains unfiltered").
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CorpusStats {
    /// Indexed documents.
    pub docs: u64,
    /// Total terms of each field over all documents.
    pub field_terms: [u64; FIELDS],
}

impl CorpusStats {
    /// Average length (terms) of `field` over the corpus; 0.0 for an empty corpus.
    pub fn avg_len(&self, field: Field) -> f64 {
        if self.docs == 0 {
            0.0
        } else {
            self.field_terms[field.index()] as f64 / self.docs as f64
        }
    }
}

/// One query term in one document: its count in each field and the document's length of each field (terms).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TermInDoc {
    /// Occurrences of the term per field.
    pub tf: [u32; FIELDS],
    /// The document's length per field.
    pub len: [u32; FIELDS],
}

impl TermInDoc {
    /// Whether the term occurs in the document at all.
    pub fn matches(&self) -> bool {
        self.tf.iter().any(|&t| t > 0)
    }
}

/// A lexical scoring formula over the index's statistics. Implementations must be pure (same inputs, same
/// outputs), return finite non-negative values for any input, and keep [`LexicalScorer::term_bound`] an upper bound
/// of [`LexicalScorer::term_score`] for the same `idf` (the index's candidate pruning relies on it).
pub trait LexicalScorer: Send + Sync {
    /// Weight of a term found in `df` of the corpus's documents.
    fn idf(&self, corpus: &CorpusStats, df: u64) -> f64;

    /// Contribution of one query term with weight `idf` to one document's score.
    fn term_score(&self, corpus: &CorpusStats, idf: f64, term: &TermInDoc) -> f64;

    /// The most [`LexicalScorer::term_score`] can return for a term of weight `idf`, over every document.
    fn term_bound(&self, idf: f64) -> f64;

    /// Whether the context field can change a score. `false` promises that [`LexicalScorer::term_score`] is the
    /// same whatever the context field's count and length (`tf[1]`, `len[1]`), so an index may leave that field
    /// unread. Default `true`.
    fn uses_context(&self) -> bool {
        true
    }
}
