//! The operator views: list, show by key (first match in scope precedence) and show by full identity (spec 000
//! "CLI Commands", "Non-accessing operator inspection").
//!
//! Each view first brings the index up to date ([`Store::read`]: a removed or replaced database is refused,
//! changes made to the wiki outside the tool are picked up). Each view counts an access of what it returns only when asked (`record_access`; operator views pass
//! `!settings.non_accessing_inspection()`), and with `memory.lifecycle.enabled` labels active supersedes targets
//! (order and membership unchanged).

use crate::supersedes;
use crate::types::{ListCursor, ListRequest, Memory, row_to_memory};
use cao_core::{Key, Scope, Settings, TerminalContext};
use cao_store::MemoryError;
use cao_store::MemoryRow;
use cao_store::Store;
use cao_store::visibility;

/// Every visible memory, scope precedence first then newest first: `req.limit` rows (default 100) after the first
/// `req.offset` of that order.
///
/// Errors: visibility and index errors.
pub fn list(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    req: ListRequest,
) -> Result<Vec<Memory>, MemoryError> {
    store.read()?;
    let limit = req.limit.unwrap_or(100).max(1);
    let wanted = limit.saturating_add(req.offset);
    let mut rows = visibility::visible_rows(store, ctx, settings, req.scope, req.memory_type, req.all, wanted)?;
    rows.drain(..req.offset.min(rows.len()));
    if req.record_access {
        store.record_access(&rows);
    }
    let mut memories: Vec<Memory> = rows.iter().map(row_to_memory).collect();
    if settings.lifecycle_enabled() {
        supersedes::label(store, &rows, &mut memories);
    }
    Ok(memories)
}

/// One page of the operator listing from `cursor` (keyset paging; see [`visibility::visible_rows_from`]):
/// `req.limit` memories (default 100) after or before the cursor's memory, in listing order; `req.offset` is
/// ignored. Accesses and labels as [`list`].
///
/// Errors: those of [`visibility::visible_rows_from`].
pub fn list_from(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    req: ListRequest,
    cursor: &ListCursor,
) -> Result<Vec<Memory>, MemoryError> {
    store.read()?;
    let limit = req.limit.unwrap_or(100).max(1);
    let rows = visibility::visible_rows_from(store, ctx, settings, req.scope, req.memory_type, req.all, cursor, limit)?;
    if req.record_access {
        store.record_access(&rows);
    }
    let mut memories: Vec<Memory> = rows.iter().map(row_to_memory).collect();
    if settings.lifecycle_enabled() {
        supersedes::label(store, &rows, &mut memories);
    }
    Ok(memories)
}

/// The first memory named `key` in scope precedence order among every memory (all projects, sessions and agents),
/// optionally within one scope.
///
/// Errors: visibility and index errors.
pub fn show(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    key: &Key,
    scope: Option<Scope>,
    record_access: bool,
) -> Result<Option<Memory>, MemoryError> {
    store.read()?;
    let mut found = None;
    for group in visibility::groups(store, ctx, settings, scope, true)? {
        if let Some(row) = store.snapshot().find_key(&group.visibility(), key)? {
            found = Some(row);
            break;
        }
    }
    Ok(inspected(store, settings, found, record_access))
}

/// One memory by its full identity; `scope_id` is ignored for global and federated.
///
/// Errors: index errors.
pub fn show_exact(
    store: &Store,
    settings: &Settings,
    key: &Key,
    scope: Scope,
    scope_id: Option<&str>,
    record_access: bool,
) -> Result<Option<Memory>, MemoryError> {
    store.read()?;
    let scope_id = scope_id.filter(|_| scope.needs_scope_id());
    let found = store.snapshot().get(scope, scope_id, key)?;
    Ok(inspected(store, settings, found, record_access))
}

/// The operator view of a found row: its access counted when `record_access`, labelled when lifecycle is on.
fn inspected(store: &Store, settings: &Settings, row: Option<MemoryRow>, record_access: bool) -> Option<Memory> {
    let row = row?;
    if record_access {
        store.record_access(std::slice::from_ref(&row));
    }
    let mut found = [row_to_memory(&row)];
    if settings.lifecycle_enabled() {
        supersedes::label(store, std::slice::from_ref(&row), &mut found);
    }
    let [memory] = found;
    Some(memory)
}
