//! How many candidates a re-ranking considers.
//!
//! Source: spec 000 "memory_recall" (sort_by="relevance": each source considers
//! `max(limit, min(200, max(50, 3 * limit)))` rows; the reference uses the same widening for score and usage).

/// Rows each source (metadata, BM25) contributes to a re-ranked pool for a recall of `limit` rows:
/// `max(limit, min(200, max(50, 3 * limit)))` — 50 for limits up to 16, `3 * limit` up to 66, then 200 (never
/// below `limit`).
///
/// Source: spec 000 "memory_recall" relevance paragraphs; the reference's widened score/usage pool.
pub fn pool_size(limit: usize) -> usize {
    limit.max(200.min(50.max(3 * limit)))
}

#[cfg(test)]
mod tests {
    use super::pool_size;

    #[test]
    fn pool_widening_matches_spec() {
        assert_eq!(pool_size(1), 50);
        assert_eq!(pool_size(10), 50);
        assert_eq!(pool_size(20), 60);
        assert_eq!(pool_size(70), 200);
        assert_eq!(pool_size(100), 200);
    }
}
