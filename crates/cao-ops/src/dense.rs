//! Dense recall: the text source of recall with an embedding model (docs/decisions/0011-dense-recall.md).
//!
//! Without a model ([`Store::embedder`] gives none) the text source is the lexical pool, exactly as before. With
//! one, the query is embedded once per call ([`query`], [`DenseQuery::vector`]) and the text source of the bm25
//! and hybrid modes becomes [`text_pool`]: the union of the lexical pool and the dense top-k (each at least
//! [`FUSION_POOL`] rows), every candidate scored on both components (lexical scores of dense-only rows from the same
//! statistics, similarities of lexical rows from the same vectors), ordered by [`cao_rank::fuse`]. Rows without a
//! vector take part with a dense component of 0. The query is embedded on the model's own thread while the recall reads its lexical pools
//! (the metadata pool, the BM25 pool), and waited for only before the dense scan.

use cao_core::{MemoryType, Settings};
use cao_rank::{Bm25, FUSION_POOL, FusionInput, fuse};
use cao_store::MemoryError;
use cao_store::{MemoryRow, Visibility};
use cao_store::{ModelState, Store};
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The query of one recall, being embedded on the model's own thread ([`cao_embed::Embedder::spawn_one`]) while
/// the recall computes its lexical pools; [`DenseQuery::vector`] waits for it.
#[derive(Debug, Clone)]
pub struct DenseQuery {
    /// The model id the vectors are stored under.
    pub model: String,
    pending: Arc<cao_embed::PendingEmbedding>,
    warned: Arc<AtomicBool>,
}

impl DenseQuery {
    /// The query's unit vector, waiting for it; `None` when the model failed on the query (a warning, once per
    /// query: the recall is lexical).
    pub fn vector(&self) -> Option<&[f32]> {
        match self.pending.wait() {
            Ok(v) => Some(v),
            Err(e) => {
                if !self.warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!("dense recall skipped for this query: {e}");
                }
                None
            }
        }
    }
}

/// Start embedding `query` when `settings` configure a model that is ready; `None` otherwise (lexical recall). A
/// query the model fails on is a warning and lexical recall, never a failed recall ([`DenseQuery::vector`]).
pub fn query(store: &Store, settings: &Settings, query: &str) -> Option<DenseQuery> {
    start(store, settings, query).0
}

/// The explain note of a call that ranked lexically although a model is configured: the model was still loading
/// in the background ([`cao_store::background`]).
pub const NOTE_LOADING: &str = "lexical only for this call: the embedding model is still loading in the background";

/// The explain note of a call that ranked lexically because the configured model cannot be loaded.
pub const NOTE_FAILED: &str = "lexical only: the configured embedding model cannot be loaded (see the log)";

/// [`query`], with the reason a configured model took no part when it did not ([`NOTE_LOADING`],
/// [`NOTE_FAILED`]; `None` when no model is configured or the query is being embedded). In a process that embeds
/// in the background this never waits for the model to load: while it loads, the call is lexical.
pub fn start(store: &Store, settings: &Settings, query: &str) -> (Option<DenseQuery>, Option<&'static str>) {
    let model = match store.embedder_now(settings) {
        ModelState::Ready(m) => m,
        ModelState::Off => return (None, None),
        ModelState::Loading => {
            tracing::debug!("{NOTE_LOADING}");
            return (None, Some(NOTE_LOADING));
        }
        ModelState::Failed => return (None, Some(NOTE_FAILED)),
    };
    let dq = DenseQuery {
        model: model.model_id().to_owned(),
        pending: Arc::new(model.spawn_one(query)),
        warned: Arc::new(AtomicBool::new(false)),
    };
    (Some(dq), None)
}

/// One text-source hit: the row, the score it is ordered by (raw lexical without a model, fused `[0, 1]` with
/// one), and the raw components.
#[derive(Debug, Clone)]
pub struct TextHit {
    /// The memory.
    pub row: MemoryRow,
    /// The score the hits are ordered by.
    pub score: f64,
    /// Raw lexical score (`None` = not a lexical match).
    pub lexical: Option<f64>,
    /// Dense similarity (`None` = no model or no vector).
    pub dense: Option<f64>,
}

/// The text source's first `n` visible rows (of `memory_type` when given) for `query`, best first: the lexical pool
/// without `dense`, the fused pool with it (see the module documentation).
///
/// Errors: index errors.
pub fn text_pool(
    store: &Store,
    vis: &Visibility,
    memory_type: Option<MemoryType>,
    query: &str,
    n: usize,
    lexical: &Bm25,
    dense: Option<&DenseQuery>,
) -> Result<Vec<TextHit>, MemoryError> {
    let index = store.snapshot();
    let lexical_only = || -> Result<Vec<TextHit>, MemoryError> {
        Ok(index
            .bm25_pool(vis, memory_type, query, n, lexical)?
            .into_iter()
            .map(|(row, s)| TextHit {
                row,
                score: s,
                lexical: Some(s),
                dense: None,
            })
            .collect())
    };
    let Some(dq) = dense else {
        return lexical_only();
    };
    let m = n.max(FUSION_POOL);
    // The lexical pool first: the query is being embedded meanwhile.
    let lex = index.bm25_pool(vis, memory_type, query, m, lexical)?;
    let Some(vector) = dq.vector() else {
        return lexical_only();
    };
    let top = index.dense_top(vis, memory_type, &dq.model, vector, m)?;
    let lex_ids: Vec<&str> = lex.iter().map(|(r, _)| r.id.as_str()).collect();
    let lex_dense = index.dense_scores(&dq.model, vector, &lex_ids)?;
    let seen: HashSet<&str> = lex_ids.iter().copied().collect();
    let extra_ids: Vec<&str> = top
        .iter()
        .map(|(id, _)| id.as_str())
        .filter(|id| !seen.contains(id))
        .collect();
    let extra_rows = index.rows_by_ids(&extra_ids)?;
    let extra_refs: Vec<&MemoryRow> = extra_rows.iter().collect();
    let extra_lex = index.bm25_scores(query, &extra_refs, lexical)?;
    let dense_of: std::collections::HashMap<&str, f32> = top.iter().map(|(id, s)| (id.as_str(), *s)).collect();
    let mut hits: Vec<TextHit> = Vec::with_capacity(lex.len() + extra_rows.len());
    for ((row, s), d) in lex.iter().zip(&lex_dense) {
        hits.push(TextHit {
            row: row.clone(),
            score: 0.0,
            lexical: Some(*s),
            dense: d.map(f64::from),
        });
    }
    for (row, l) in extra_rows.iter().zip(extra_lex) {
        let d = dense_of.get(row.id.as_str()).map(|s| f64::from(*s));
        hits.push(TextHit {
            row: row.clone(),
            score: 0.0,
            lexical: l,
            dense: d,
        });
    }
    let inputs: Vec<FusionInput> = hits
        .iter()
        .map(|h| FusionInput {
            lexical: h.lexical,
            dense: h.dense,
        })
        .collect();
    let order = fuse(&inputs);
    let mut out = Vec::with_capacity(n.min(order.len()));
    for f in order.into_iter().take(n) {
        let mut hit = hits[f.index].clone();
        hit.score = f.score;
        out.push(hit);
    }
    Ok(out)
}
