//! Search rowids: the key of a row in both FTS tables encodes who may read it, so visibility and memory-type
//! filters become rowid ranges that FTS5 applies inside its own index (no join per matching row).
//!
//! Layout of a `search_rowid` (a positive i64): `((partition * 4 + type_index) << 32) | seq`, where `partition`
//! is the id of the row's `(scope, scope_id)` in `cao_search_partitions`, `type_index` the position of its memory
//! type in [`MemoryType::ALL`] and `seq` (1 ..= 2^32 - 1) is allocated as the slot's largest + 1. The rows of one
//! `(scope, scope_id)` therefore occupy one contiguous range, and one memory type of it a contiguous sub-range.
//!
//! Vault rows (`source_kind = 'vault'`) have partitions of their own (`find_vault`, `ensure_vault`): their
//! `scope_id_key` is the native one prefixed with `v`, so a vault-bound scope's rows and the native rows of the same
//! scope and scope id never share a range.

use crate::{IndexError, Result};
use cao_core::{MemoryType, Scope};
use rusqlite::{Connection, OptionalExtension};

const SEQ_BITS: u32 = 32;
const SEQ_MAX: i64 = (1 << SEQ_BITS) - 1;
/// Largest partition id that keeps every search rowid positive.
pub const PARTITION_MAX: i64 = (1 << 29) - 1;

fn type_index(t: MemoryType) -> i64 {
    match t {
        MemoryType::Project => 0,
        MemoryType::User => 1,
        MemoryType::Feedback => 2,
        MemoryType::Reference => 3,
    }
}

/// `-` for no scope id, `=<id>` otherwise (so a NULL scope id has a key that no real id can produce): the
/// `scope_id_key` column of `cao_search_partitions`.
pub fn scope_id_key(scope_id: Option<&str>) -> String {
    scope_id.map_or_else(|| "-".to_owned(), |s| format!("={s}"))
}

/// The partition id of `(scope, scope_id)`, if one was ever allocated.
pub(crate) fn find(conn: &Connection, scope: Scope, scope_id: Option<&str>) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached("SELECT id FROM cao_search_partitions WHERE scope = ?1 AND scope_id_key = ?2")?
        .query_row(rusqlite::params![scope.as_str(), scope_id_key(scope_id)], |r| r.get(0))
        .optional()
}

/// The partition id of the vault rows of `(scope, scope_id)`, if one was ever allocated.
pub(crate) fn find_vault(conn: &Connection, scope: Scope, scope_id: Option<&str>) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached("SELECT id FROM cao_search_partitions WHERE scope = ?1 AND scope_id_key = ?2")?
        .query_row(
            rusqlite::params![scope.as_str(), format!("v{}", scope_id_key(scope_id))],
            |r| r.get(0),
        )
        .optional()
}

/// Whether any vault partition was ever allocated (then "everything visible" is not "every search row").
pub(crate) fn any_vault(conn: &Connection) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM cao_search_partitions WHERE substr(scope_id_key, 1, 1) = 'v')")?
        .query_row([], |r| r.get(0))
}

/// Every native partition id of `scope`, ascending.
pub(crate) fn of_scope(conn: &Connection, scope: Scope) -> rusqlite::Result<Vec<i64>> {
    conn.prepare_cached(
        "SELECT id FROM cao_search_partitions WHERE scope = ?1 AND substr(scope_id_key, 1, 1) <> 'v' ORDER BY id",
    )?
    .query_map([scope.as_str()], |r| r.get(0))?
    .collect()
}

/// The partition id of `(scope, scope_id)`, allocated when missing. Inside a write transaction.
pub(crate) fn ensure(conn: &Connection, scope: Scope, scope_id: Option<&str>) -> Result<i64> {
    if let Some(id) = find(conn, scope, scope_id)? {
        return Ok(id);
    }
    insert(conn, scope, &scope_id_key(scope_id))
}

/// The partition id of the vault rows of `(scope, scope_id)`, allocated when missing. Inside a write transaction.
pub(crate) fn ensure_vault(conn: &Connection, scope: Scope, scope_id: Option<&str>) -> Result<i64> {
    if let Some(id) = find_vault(conn, scope, scope_id)? {
        return Ok(id);
    }
    insert(conn, scope, &format!("v{}", scope_id_key(scope_id)))
}

fn insert(conn: &Connection, scope: Scope, key: &str) -> Result<i64> {
    conn.prepare_cached("INSERT INTO cao_search_partitions (scope, scope_id_key) VALUES (?1, ?2)")?
        .execute(rusqlite::params![scope.as_str(), key])?;
    let id = conn.last_insert_rowid();
    if id > PARTITION_MAX {
        return Err(IndexError::Capacity(format!(
            "more than {PARTITION_MAX} distinct (scope, scope_id) pairs were ever indexed"
        )));
    }
    Ok(id)
}

/// The slot (`partition * 4 + type_index`) a search rowid belongs to.
pub fn slot_of(search_rowid: i64) -> i64 {
    search_rowid >> SEQ_BITS
}

/// The slot of a partition and memory type.
pub fn slot(partition: i64, memory_type: MemoryType) -> i64 {
    partition * 4 + type_index(memory_type)
}

/// Inclusive search-rowid range of a partition, or of one memory type in it.
pub(crate) fn range(partition: i64, memory_type: Option<MemoryType>) -> (i64, i64) {
    match memory_type {
        Some(t) => {
            let s = slot(partition, t);
            (s << SEQ_BITS, (s << SEQ_BITS) | SEQ_MAX)
        }
        None => ((partition * 4) << SEQ_BITS, ((partition * 4 + 3) << SEQ_BITS) | SEQ_MAX),
    }
}

/// The inclusive search-rowid range `(lo, hi)` of `slot`; its first rowid is `lo + 1` (`seq` starts at 1).
pub fn slot_bounds(slot: i64) -> (i64, i64) {
    let lo = slot << SEQ_BITS;
    (lo, lo | SEQ_MAX)
}

/// The search rowid to allocate next in `slot` whose largest stored one is `max` (`None`: the slot is empty):
/// the largest + 1, or `None` when the slot is exhausted.
pub fn next_in_slot(slot: i64, max: Option<i64>) -> Option<i64> {
    let (lo, hi) = slot_bounds(slot);
    match max {
        None => Some(lo + 1),
        Some(m) if m < hi => Some(m + 1),
        Some(_) => None,
    }
}

/// A new search rowid in `slot`: the slot's largest + 1 ([`next_in_slot`]). Inside a write transaction.
pub(crate) fn allocate(conn: &Connection, slot: i64) -> Result<i64> {
    let (lo, hi) = slot_bounds(slot);
    let max: Option<i64> = conn
        .prepare_cached("SELECT max(search_rowid) FROM memory_metadata WHERE search_rowid BETWEEN ?1 AND ?2")?
        .query_row([lo, hi], |r| r.get(0))?;
    next_in_slot(slot, max).ok_or_else(|| IndexError::Capacity(format!("search rowids of slot {slot} are exhausted")))
}

/// Sort and merge overlapping or adjacent inclusive ranges.
pub(crate) fn merge(mut ranges: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    ranges.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
    for (lo, hi) in ranges {
        match out.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_nest_and_merge() {
        let (lo, hi) = range(5, None);
        for t in MemoryType::ALL {
            let (a, b) = range(5, Some(t));
            assert!(lo <= a && b <= hi, "type range inside the partition range");
            assert_eq!(slot_of(a + 1), slot(5, t));
        }
        assert_eq!(
            merge(vec![range(6, None), range(5, None), range(9, None)]),
            vec![(range(5, None).0, range(6, None).1), range(9, None)]
        );
        let (_, top) = range(PARTITION_MAX, None);
        assert!(top > 0, "the largest rowid stays positive");
    }
}
