//! Edge reads and writes that return identities: the purge of a forgotten memory's edges reporting what it removed
//! (for the content-free audit log), and the one-snapshot lookup of the related keys of several memories (for the
//! related entries of the injected context block).

use crate::relationships::GLOBAL_SCOPE_ID;
use crate::{Index, Result};
use cao_core::{Key, Scope};
use rusqlite::types::Value;
use std::collections::HashMap;

/// Identity of one edge as the audit log records it (content-free: no attributes, no confidence).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeIdentity {
    /// Edge id.
    pub id: String,
    /// Source memory key (as stored).
    pub source_key: String,
    /// Target memory key (as stored).
    pub target_key: String,
    /// Edge type as stored (`relates_to`, `contradiction`, `supersedes`).
    pub rel_type: String,
}

/// The related keys of one memory: its legacy `related_keys` csv and the targets of its active `relates_to` edges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RelatedKeys {
    /// The raw `related_keys` column (`None` when NULL); callers parse it.
    pub related_keys_csv: Option<String>,
    /// Targets of active `relates_to` edges leaving the memory (any origin), by rank (unranked last), then key.
    pub edge_targets: Vec<String>,
}

impl Index {
    /// Delete every edge (any origin, any status) into or out of `(key, scope, scope_id)` — as
    /// [`Index::purge_relationships`] — and return the identities of the deleted rows (by source, target, type, origin), in one transaction.
    ///
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn purge_relationships_returning(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        key: &Key,
    ) -> Result<Vec<EdgeIdentity>> {
        let sid = scope_id.unwrap_or(GLOBAL_SCOPE_ID);
        self.write(|tx| {
            let args = rusqlite::params![scope.as_str(), sid, key.as_str()];
            let gone: Vec<EdgeIdentity> = tx
                .prepare_cached(
                    "SELECT id, source_key, target_key, type FROM memory_relationships
                     WHERE scope = ?1 AND scope_id = ?2 AND (source_key = ?3 OR target_key = ?3)
                     ORDER BY source_key, target_key, type, origin",
                )?
                .query_map(args, |r| {
                    Ok(EdgeIdentity {
                        id: r.get(0)?,
                        source_key: r.get(1)?,
                        target_key: r.get(2)?,
                        rel_type: r.get(3)?,
                    })
                })?
                .collect::<rusqlite::Result<_>>()?;
            tx.prepare_cached(
                "DELETE FROM memory_relationships WHERE scope = ?1 AND scope_id = ?2
                 AND (source_key = ?3 OR target_key = ?3)",
            )?
            .execute(args)?;
            Ok(gone)
        })
    }

    /// The [`RelatedKeys`] of each of `keys` (native memories of one scope and scope id; `scope_id` `None` for
    /// global/federated), in one read snapshot with two statements. A key with neither a memory row nor an edge is
    /// absent from the map. At most 400 keys are looked up (callers pass one scope's injected primaries).
    ///
    /// Errors: [`crate::IndexError::Sqlite`] / [`crate::IndexError::Pool`].
    pub fn related_keys_of(
        &self,
        scope: Scope,
        scope_id: Option<&str>,
        keys: &[&str],
    ) -> Result<HashMap<String, RelatedKeys>> {
        let keys = &keys[..keys.len().min(400)];
        let mut out: HashMap<String, RelatedKeys> = HashMap::new();
        if keys.is_empty() {
            return Ok(out);
        }
        let marks = vec!["?"; keys.len()].join(", ");
        let key_values: Vec<Value> = keys.iter().map(|k| Value::Text((*k).to_owned())).collect();
        self.read(|tx| {
            let mut params = vec![
                Value::Text(scope.as_str().to_owned()),
                scope_id.map_or(Value::Null, |s| Value::Text(s.to_owned())),
            ];
            params.extend(key_values.iter().cloned());
            let sql = format!(
                "SELECT \"key\", related_keys FROM memory_metadata
                 WHERE scope = ? AND scope_id IS ? AND source_kind = 'native' AND \"key\" IN ({marks})"
            );
            let mut stmt = tx.prepare(&sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(params.iter()), |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
            })?;
            for row in rows {
                let (k, csv) = row?;
                out.entry(k).or_default().related_keys_csv = csv;
            }
            let mut params = vec![
                Value::Text(scope.as_str().to_owned()),
                Value::Text(scope_id.unwrap_or(GLOBAL_SCOPE_ID).to_owned()),
            ];
            params.extend(key_values.iter().cloned());
            let sql = format!(
                "SELECT source_key, target_key FROM memory_relationships
                 WHERE scope = ? AND scope_id = ? AND type = 'relates_to' AND status = 'active'
                   AND source_key IN ({marks})
                 ORDER BY source_key, rank IS NULL, rank, target_key"
            );
            let mut stmt = tx.prepare(&sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(params.iter()), |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })?;
            for row in rows {
                let (source, target) = row?;
                out.entry(source).or_default().edge_targets.push(target);
            }
            Ok(())
        })?;
        Ok(out)
    }
}
