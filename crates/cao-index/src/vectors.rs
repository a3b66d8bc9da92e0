//! Dense vectors of memories (docs/decisions/0011-dense-recall.md): table `cao_memory_vectors` (migration 11) and
//! the exact dot-product scan over them.
//!
//! Columns: `memory_id` (the `memory_metadata.id` of a native row; primary key), `model` (the id of the model that
//! made it, e.g. `all-MiniLM-L6-v2`), `dim` (components), `vector` (`dim` f32, little-endian; NULL = the memory's
//! content changed after it was embedded) and `seq` (the value of `cao_vector_state.seq` when the row last changed).
//! `cao_vector_state` (one row) counts changes (`seq`) and removals (`removals`), so a process's in-memory copy of
//! the vectors ([`VectorCache`]) catches up by reading only the rows changed since it last looked, and reloads
//! everything only after a removal.
//!
//! Invariants (kept by `write.rs` in the same transaction as the row's change):
//! - A non-NULL vector is of the memory's current content: an upsert that changes the content sets it to NULL (a
//!   writer with a model then stores the new one in the same transaction); a change of memory type bumps its `seq`.
//! - Removing a memory removes its vector.
//! - Vectors are only read for rows present in `memory_metadata` (rows the reference deletes leave an orphan that
//!   is never returned).

use crate::scan::{self, Code, Vectors, code_stride, dot};
use crate::{Index, IndexError, Result, Visibility};
use cao_core::{MemoryType, Scope};
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::HashMap;

/// Largest accepted vector dimension.
pub const MAX_VECTOR_DIM: usize = 4096;

/// A vector to store with a memory: the model's id and its components.
#[derive(Debug, Clone, Copy)]
pub struct VectorWrite<'a> {
    /// The model id (see `cao_embed::Embedder::model_id`).
    pub model: &'a str,
    /// The components (1..=[`MAX_VECTOR_DIM`] finite values).
    pub vector: &'a [f32],
}

/// `vector` as little-endian bytes.
pub fn encode_vector(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Little-endian bytes as a vector; `None` unless the length is a whole number of f32 equal to `dim`.
pub fn decode_vector(bytes: &[u8], dim: usize) -> Option<Vec<f32>> {
    if bytes.len() != dim * 4 {
        return None;
    }
    Some(
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

/// The rules of a vector every backend applies before storing or scanning with it: 1 to [`MAX_VECTOR_DIM`]
/// components, all finite, and a model id of 1 to 200 bytes.
///
/// Errors: the message naming the rule broken.
pub fn check_vector(model: &str, vector: &[f32]) -> std::result::Result<(), String> {
    if vector.is_empty() || vector.len() > MAX_VECTOR_DIM {
        return Err(format!(
            "a vector has 1 to {MAX_VECTOR_DIM} components; got {}",
            vector.len()
        ));
    }
    if model.is_empty() || model.len() > 200 {
        return Err("a vector's model id is 1 to 200 bytes".into());
    }
    if !vector.iter().all(|x| x.is_finite()) {
        return Err("a vector's components must be finite".into());
    }
    Ok(())
}

fn check(v: &VectorWrite<'_>) -> Result<()> {
    check_vector(v.model, v.vector).map_err(IndexError::Invalid)
}

/// Next change number (bumps `cao_vector_state.seq`).
fn next_seq(tx: &Connection) -> rusqlite::Result<i64> {
    tx.prepare_cached("UPDATE cao_vector_state SET seq = seq + 1 WHERE id = 1 RETURNING seq")?
        .query_row([], |r| r.get(0))
}

/// Store `v` as the vector of memory `memory_id` (replacing any). Inside an open write transaction.
pub(crate) fn put_in(tx: &Connection, memory_id: &str, v: &VectorWrite<'_>) -> Result<()> {
    check(v)?;
    let seq = next_seq(tx)?;
    tx.prepare_cached(
        "INSERT INTO cao_memory_vectors (memory_id, model, dim, vector, seq) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (memory_id) DO UPDATE SET model = ?2, dim = ?3, vector = ?4, seq = ?5",
    )?
    .execute(params![
        memory_id,
        v.model,
        v.vector.len() as i64,
        encode_vector(v.vector),
        seq
    ])?;
    Ok(())
}

/// The memory's content changed: its vector (if any) no longer applies.
pub(crate) fn invalidate_in(tx: &Connection, memory_id: &str) -> rusqlite::Result<()> {
    let exists: bool = tx
        .prepare_cached("SELECT 1 FROM cao_memory_vectors WHERE memory_id = ?1 AND vector IS NOT NULL")?
        .query_row([memory_id], |_| Ok(()))
        .optional()?
        .is_some();
    if exists {
        let seq = next_seq(tx)?;
        tx.prepare_cached("UPDATE cao_memory_vectors SET vector = NULL, seq = ?2 WHERE memory_id = ?1")?
            .execute(params![memory_id, seq])?;
    }
    Ok(())
}

/// The memory's type changed: readers refresh their copy of its vector's metadata.
pub(crate) fn touch_in(tx: &Connection, memory_id: &str) -> rusqlite::Result<()> {
    let exists = tx
        .prepare_cached("SELECT 1 FROM cao_memory_vectors WHERE memory_id = ?1")?
        .query_row([memory_id], |_| Ok(()))
        .optional()?
        .is_some();
    if exists {
        let seq = next_seq(tx)?;
        tx.prepare_cached("UPDATE cao_memory_vectors SET seq = ?2 WHERE memory_id = ?1")?
            .execute(params![memory_id, seq])?;
    }
    Ok(())
}

/// The memory is removed: so is its vector.
pub(crate) fn remove_in(tx: &Connection, memory_id: &str) -> rusqlite::Result<()> {
    let n = tx
        .prepare_cached("DELETE FROM cao_memory_vectors WHERE memory_id = ?1")?
        .execute([memory_id])?;
    if n > 0 {
        tx.prepare_cached("UPDATE cao_vector_state SET removals = removals + 1, seq = seq + 1 WHERE id = 1")?
            .execute([])?;
    }
    Ok(())
}

/// A process's copy of one model's vectors, kept current with `cao_vector_state` (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct VectorCache {
    model: String,
    seq: i64,
    removals: i64,
    dim: usize,
    /// Per entry: memory id, slice (index into `slices`), memory type, live.
    ids: Vec<String>,
    slice: Vec<u32>,
    types: Vec<MemoryType>,
    live: Vec<bool>,
    /// `dim` components per entry.
    data: Vec<f32>,
    /// [`code_stride`]`(dim)` integer codes per entry and their bounds, for the pre-selection of the scan
    /// (`scan.rs`).
    codes: Vec<i8>,
    code: Vec<Code>,
    pos: HashMap<String, usize>,
    slices: Vec<(Scope, Option<String>)>,
    slice_pos: HashMap<(Scope, Option<String>), u32>,
}

impl VectorCache {
    /// The copy's vectors, for the scan.
    fn vectors(&self) -> Vectors<'_> {
        Vectors {
            data: &self.data,
            codes: &self.codes,
            meta: &self.code,
            dim: self.dim,
        }
    }

    fn slice_of(&mut self, scope: Scope, scope_id: Option<String>) -> u32 {
        let key = (scope, scope_id);
        if let Some(s) = self.slice_pos.get(&key) {
            return *s;
        }
        let s = u32::try_from(self.slices.len()).unwrap_or(u32::MAX);
        self.slices.push(key.clone());
        self.slice_pos.insert(key, s);
        s
    }

    /// Apply one changed row: `vector` None = no longer applies.
    fn apply(&mut self, id: String, scope: Scope, scope_id: Option<String>, ty: MemoryType, vector: Option<Vec<f32>>) {
        let slice = self.slice_of(scope, scope_id);
        match (self.pos.get(&id).copied(), vector) {
            (Some(i), Some(v)) => {
                self.data[i * self.dim..(i + 1) * self.dim].copy_from_slice(&v);
                let stride = code_stride(self.dim);
                self.code[i] = scan::encode(&v, &mut self.codes[i * stride..(i + 1) * stride]);
                self.types[i] = ty;
                self.slice[i] = slice;
                self.live[i] = true;
            }
            (Some(i), None) => self.live[i] = false,
            (None, Some(v)) => {
                self.pos.insert(id.clone(), self.ids.len());
                self.ids.push(id);
                self.slice.push(slice);
                self.types.push(ty);
                self.live.push(true);
                self.data.extend_from_slice(&v);
                let from = self.codes.len();
                self.codes.resize(from + code_stride(self.dim), 0);
                self.code.push(scan::encode(&v, &mut self.codes[from..]));
            }
            (None, None) => {}
        }
    }
}

fn state(tx: &Connection) -> rusqlite::Result<(i64, i64)> {
    tx.prepare_cached("SELECT seq, removals FROM cao_vector_state WHERE id = 1")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
}

/// Rows of `model` changed after `since` (all when `since` is 0), joined with their memory's identity, each
/// passed to `apply` as it is read (so a full load never holds a second copy of the vectors).
fn changed_since(
    tx: &Connection,
    model: &str,
    dim: usize,
    since: i64,
    mut apply: impl FnMut(String, Scope, Option<String>, MemoryType, Option<Vec<f32>>),
) -> rusqlite::Result<()> {
    let mut stmt = tx.prepare_cached(
        "SELECT v.memory_id, m.scope, m.scope_id, m.memory_type, v.vector, v.model, v.dim
         FROM cao_memory_vectors v JOIN memory_metadata m ON m.id = v.memory_id AND m.source_kind = 'native'
         WHERE v.seq > ?1",
    )?;
    let mut rows = stmt.query(params![since])?;
    while let Some(r) = rows.next()? {
        let (Ok(scope), Ok(ty)) = (
            r.get::<_, String>(1)?.parse::<Scope>(),
            r.get::<_, String>(3)?.parse::<MemoryType>(),
        ) else {
            continue;
        };
        let row_model: String = r.get(5)?;
        let row_dim: i64 = r.get(6)?;
        let vector = if row_model == model && row_dim == dim as i64 {
            r.get::<_, Option<Vec<u8>>>(4)?.and_then(|b| decode_vector(&b, dim))
        } else {
            None
        };
        apply(r.get(0)?, scope, r.get(2)?, ty, vector);
    }
    Ok(())
}

/// Counts of native rows with and without a current vector of one model ([`Index::vector_counts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VectorCounts {
    /// Rows whose content has a vector of the model.
    pub with: usize,
    /// Rows without one (never embedded, embedded by another model, or changed since).
    pub without: usize,
}

/// Fewest vectors a scan splits over two or more threads: below it a thread's start costs more than it saves.
const SPLIT_SCAN_MIN: usize = 32_768;

/// How many chunks a scan of `len` vectors is split into ([`crate::scan::Vectors::top_split`]): one below
/// [`SPLIT_SCAN_MIN`], else the cores available to the process, at most 4 (the scan is bound by memory reads, which
/// a few cores saturate).
fn scan_parts(len: usize) -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    if len < SPLIT_SCAN_MIN {
        return 1;
    }
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(4)))
}

impl Index {
    /// Store `vector` (of model `model`) for the native row `memory_id`, only when the row still has exactly
    /// `content` (the text that was embedded), in one transaction. Returns whether it was stored (false: the row is
    /// gone or its content changed meanwhile).
    ///
    /// Errors: [`IndexError::Invalid`] for an empty, oversized or non-finite vector or a bad model id;
    /// [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn put_vector_if_current(&self, memory_id: &str, content: &str, vector: VectorWrite<'_>) -> Result<bool> {
        check(&vector)?;
        self.write(|tx| {
            let current: Option<String> = tx
                .prepare_cached("SELECT content FROM memory_metadata WHERE id = ?1 AND source_kind = 'native'")?
                .query_row([memory_id], |r| r.get(0))
                .optional()?;
            if current.as_deref() != Some(content) {
                return Ok(false);
            }
            put_in(tx, memory_id, &vector)?;
            Ok(true)
        })
    }

    /// The stored vector of `memory_id` when it is current and of `model`.
    /// Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn vector_of(&self, memory_id: &str, model: &str) -> Result<Option<Vec<f32>>> {
        self.read(|tx| {
            let found: Option<(Option<Vec<u8>>, i64)> = tx
                .prepare_cached("SELECT vector, dim FROM cao_memory_vectors WHERE memory_id = ?1 AND model = ?2")?
                .query_row(params![memory_id, model], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            Ok(found.and_then(|(b, dim)| decode_vector(&b?, usize::try_from(dim).ok()?)))
        })
    }

    /// Native rows that have no current vector of `model` (never embedded, another model's, or changed since), in
    /// memory id order, at most `limit`, after the row with id `after` when given (for paging through a backfill).
    /// Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn rows_without_vector(&self, model: &str, after: Option<&str>, limit: usize) -> Result<Vec<crate::MemoryRow>> {
        self.read(|tx| {
            let sql = format!(
                "SELECT {} FROM memory_metadata m LEFT JOIN cao_memory_vectors v
                     ON v.memory_id = m.id AND v.model = ?1 AND v.vector IS NOT NULL
                 WHERE m.source_kind = 'native' AND v.memory_id IS NULL AND m.id > ?2
                 ORDER BY m.id LIMIT ?3",
                crate::row::ROW_COLUMNS
            );
            let mut stmt = tx.prepare_cached(&sql)?;
            let mut rows = stmt.query(params![model, after.unwrap_or(""), limit as i64])?;
            let mut out = Vec::new();
            while let Some(r) = rows.next()? {
                if let Ok(row) = crate::row::decode_row(r, 0)? {
                    out.push(row);
                }
            }
            Ok(out)
        })
    }

    /// The native rows with the given memory ids, in the order of `ids` (ids without a row are left out).
    /// Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn rows_by_ids(&self, ids: &[&str]) -> Result<Vec<crate::MemoryRow>> {
        self.read(|tx| {
            let sql = format!(
                "SELECT {} FROM memory_metadata m WHERE m.id = ?1 AND m.source_kind = 'native'",
                crate::row::ROW_COLUMNS
            );
            let mut stmt = tx.prepare_cached(&sql)?;
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                let mut rows = stmt.query([id])?;
                if let Some(r) = rows.next()?
                    && let Ok(row) = crate::row::decode_row(r, 0)?
                {
                    out.push(row);
                }
            }
            Ok(out)
        })
    }

    /// How many native rows have a current vector of `model`, and how many do not.
    /// Errors: [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn vector_counts(&self, model: &str) -> Result<VectorCounts> {
        self.read(|tx| {
            let (all, with): (i64, i64) = tx.query_row(
                "SELECT count(*), count(v.memory_id) FROM memory_metadata m LEFT JOIN cao_memory_vectors v
                     ON v.memory_id = m.id AND v.model = ?1 AND v.vector IS NOT NULL
                 WHERE m.source_kind = 'native'",
                [model],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let with = usize::try_from(with).unwrap_or(0);
            Ok(VectorCounts {
                with,
                without: usize::try_from(all).unwrap_or(0).saturating_sub(with),
            })
        })
    }

    /// Bring this process's copy of `model`'s vectors (of dimension `dim`) up to date: read only the rows changed
    /// since the last call, everything after a removal or on the first call; then run `f` on the copy.
    fn refresh_vectors<T>(&self, model: &str, dim: usize, f: impl FnOnce(&VectorCache) -> T) -> Result<T> {
        let mut cache = self.vectors.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        self.read(|tx| {
            let (seq, removals) = state(tx)?;
            let fresh = cache.model != model || cache.dim != dim || cache.removals != removals || seq < cache.seq;
            if fresh {
                *cache = VectorCache {
                    model: model.to_owned(),
                    dim,
                    removals,
                    ..VectorCache::default()
                };
            }
            if fresh || seq > cache.seq {
                // Applying a row twice is harmless, so a read that fails half way is caught up by the next one.
                let since = cache.seq;
                changed_since(tx, model, dim, since, |id, scope, scope_id, ty, v| {
                    cache.apply(id, scope, scope_id, ty, v);
                })?;
                cache.seq = seq;
            }
            Ok(())
        })?;
        Ok(f(&cache))
    }

    /// The `k` visible memories (of `memory_type` when given) whose current vector of `model` is most similar to
    /// `query` (dot product; cosine for unit vectors), best first, ties by memory id: an exact scan over this
    /// process's copy of the vectors (brought up to date first, see `VectorCache`; the f32 dot product is computed
    /// only for the vectors an 8-bit copy cannot rule out, `scan.rs`, which returns what scoring every vector would).
    /// Memories without a vector are not candidates. Returns `(memory id, similarity)`.
    ///
    /// Errors: [`IndexError::Invalid`] when `query` has no or more than [`MAX_VECTOR_DIM`] components;
    /// [`IndexError::Sqlite`] / [`IndexError::Pool`].
    pub fn dense_top(
        &self,
        vis: &Visibility,
        memory_type: Option<MemoryType>,
        model: &str,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<(String, f32)>> {
        check(&VectorWrite { model, vector: query })?;
        if vis.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let dim = query.len();
        self.refresh_vectors(model, dim, |cache| {
            let allowed: Vec<bool> = cache
                .slices
                .iter()
                .map(|(s, id)| vis.allows(*s, id.as_deref()))
                .collect();
            let keep = |i: usize| {
                cache.live[i] && allowed[cache.slice[i] as usize] && memory_type.is_none_or(|t| t == cache.types[i])
            };
            let better = |a: &(f32, usize), b: &(f32, usize)| {
                b.0.total_cmp(&a.0).then_with(|| cache.ids[a.1].cmp(&cache.ids[b.1]))
            };
            let top = cache
                .vectors()
                .top_split(query, k, keep, better, scan_parts(cache.ids.len()));
            top.into_iter().map(|(s, i)| (cache.ids[i].clone(), s)).collect()
        })
    }

    /// Similarity of `query` to the current vector of `model` of each memory id in `ids`, in order (`None` for a
    /// memory without one), from the same copy [`Index::dense_top`] scans.
    ///
    /// Errors: as [`Index::dense_top`].
    pub fn dense_scores(&self, model: &str, query: &[f32], ids: &[&str]) -> Result<Vec<Option<f32>>> {
        check(&VectorWrite { model, vector: query })?;
        let dim = query.len();
        self.refresh_vectors(model, dim, |cache| {
            ids.iter()
                .map(|id| {
                    let i = *cache.pos.get(*id)?;
                    cache.live[i].then(|| dot(&cache.data[i * dim..(i + 1) * dim], query))
                })
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_as_little_endian_bytes() {
        let v = [1.0f32, -0.5, 3.25e-3, 0.0];
        let b = encode_vector(&v);
        assert_eq!(b.len(), 16);
        assert_eq!(&b[..4], &1.0f32.to_le_bytes());
        assert_eq!(decode_vector(&b, 4).as_deref(), Some(&v[..]));
        assert_eq!(decode_vector(&b, 3), None);
        assert_eq!(decode_vector(&b[..15], 4), None);
    }

    #[test]
    fn dot_matches_the_naive_sum() {
        let a: Vec<f32> = (0..19).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..19).map(|i| 1.0 - i as f32 * 0.1).collect();
        let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - naive).abs() < 1e-4);
    }
}
