//! `cao memory embed`: vectors for the memories that lack one of the configured embedding model (written before a
//! model was configured, by an import, by an edit outside the tool, or by another model), in batches, each vector
//! stored only when the memory's content is still the text that was embedded (docs/decisions/0011-dense-recall.md).
//! Recall never embeds memories; only a write (its own content) and this backfill do.

use cao_core::Settings;
use cao_ops::types::Progress;
use cao_store::MemoryError;
use cao_store::Store;
use serde::Serialize;

/// The `schema` value of [`EmbedReport`] (`docs/schemas/cao.memory.embed-1.json`).
pub const EMBED_SCHEMA: &str = "cao.memory.embed/1";

/// Memories embedded per batch (one encoder run and one short transaction per memory).
const BATCH: usize = 32;

/// What a backfill did (`cao memory embed --format json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EmbedReport {
    /// Always [`EMBED_SCHEMA`].
    pub schema: &'static str,
    /// The model id the vectors are stored under.
    pub model: String,
    /// Memories that had a current vector before the run.
    pub already: usize,
    /// Vectors written by this run.
    pub embedded: usize,
    /// Memories whose content changed while they were embedded (left for the next run or their next write).
    pub changed: usize,
    /// Memories still without a vector after the run.
    pub remaining: usize,
    /// Wall time of the run, seconds (3 decimals).
    pub seconds: f64,
    /// Memories embedded per second (1 decimal; 0 when none).
    pub per_second: f64,
}

/// Embed every memory lacking a current vector of the model `settings` configure, reporting progress per memory.
///
/// Errors: [`MemoryError::Invalid`] when no model is configured or it cannot be loaded (naming the setting);
/// [`MemoryError::Invalid`] when the encoder fails; index errors.
pub fn backfill(store: &Store, settings: &Settings, progress: &dyn Progress) -> Result<EmbedReport, MemoryError> {
    let started = std::time::Instant::now();
    let Some(dir) = settings.embedding_model_dir() else {
        return Err(MemoryError::Invalid(
            "no embedding model is configured: install one with `cao models install minilm` and set \
             memory.embeddings.model_dir"
                .into(),
        ));
    };
    let model = match store.embedder(settings) {
        Some(m) => m,
        None => {
            // Load again for the error message (the store logs and caches the failure).
            let reason = cao_embed::Embedder::load(&dir)
                .err()
                .map_or_else(String::new, |e| e.to_string());
            return Err(MemoryError::Invalid(format!(
                "the embedding model of memory.embeddings.model_dir cannot be loaded: {reason}"
            )));
        }
    };
    let index = store.write();
    let id = model.model_id().to_owned();
    let before = index.vector_counts(&id)?;
    progress.start("embedding memories", before.without as u64);
    let (mut embedded, mut changed) = (0usize, 0usize);
    let mut after: Option<String> = None;
    loop {
        let rows = index.rows_without_vector(&id, after.as_deref(), BATCH)?;
        let Some(last) = rows.last() else { break };
        after = Some(last.id.clone());
        let texts: Vec<&str> = rows.iter().map(|r| r.content.as_str()).collect();
        let vectors = model
            .embed(&texts)
            .map_err(|e| MemoryError::Invalid(format!("embedding failed: {e}")))?;
        for (row, vector) in rows.iter().zip(&vectors) {
            let v = cao_store::VectorWrite { model: &id, vector };
            if index.put_vector_if_current(&row.id, &row.content, v)? {
                embedded += 1;
            } else {
                changed += 1;
            }
        }
        progress.advance(rows.len() as u64);
    }
    progress.finish();
    let remaining = index.vector_counts(&id)?.without;
    let secs = started.elapsed().as_secs_f64();
    Ok(EmbedReport {
        schema: EMBED_SCHEMA,
        model: id,
        already: before.with,
        embedded,
        changed,
        remaining,
        seconds: (secs * 1000.0).round() / 1000.0,
        per_second: if embedded == 0 || secs <= 0.0 {
            0.0
        } else {
            (embedded as f64 / secs * 10.0).round() / 10.0
        },
    })
}
