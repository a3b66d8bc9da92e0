//! Who may read what: the scope groups a caller sees, in precedence order, and the scope id a write or forget
//! targets (spec 000 "Memory Scopes"; spec/reference-facts.md "Project identity").
//!
//! - global, federated: always visible.
//! - project: the caller's project id plus its cwd-hash aliases (recorded ones included); every project with
//!   `scan_all`; nothing when no project can be resolved.
//! - session / agent: only the caller's own session name / agent profile; every one with `scan_all`.
//!
//! Resolving a project identity whose winner is an override or a git remote records the cwd hash as an alias
//! ([`Store::record_alias`]), so later recalls also search the alias container.

use crate::error::MemoryError;
use crate::store::Store;
use cao_core::{Key, MemoryType, Scope, Settings, TerminalContext};
use cao_index::{MemoryRow, Visibility};

/// One scope's readable slice: every scope id (`None`) or the listed ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeGroup {
    /// The scope.
    pub scope: Scope,
    /// The scope ids the caller sees in it; `None` = every one (global and federated have none; `scan_all`).
    pub ids: Option<Vec<String>>,
    /// The scope is bound to an Obsidian vault mapping (`cao_ops::vault::bind_groups`): the group reads the vault
    /// rows of `ids` (global: of no scope id) instead of native rows (spec/vault-facts.md section 5 "Sources per
    /// recall").
    pub vault: bool,
}

impl ScopeGroup {
    /// `vis` widened by this group.
    pub fn add_to(&self, vis: Visibility) -> Visibility {
        if self.vault {
            return match &self.ids {
                None if !self.scope.needs_scope_id() => vis.allow_vault(self.scope, None),
                None => vis,
                Some(ids) => ids.iter().fold(vis, |v, id| v.allow_vault(self.scope, Some(id))),
            };
        }
        match (&self.ids, self.scope.needs_scope_id()) {
            (None, true) => vis.allow_any(self.scope),
            (None, false) => vis.allow(self.scope, None),
            (Some(ids), _) => ids.iter().fold(vis, |v, id| v.allow(self.scope, Some(id))),
        }
    }

    /// The visibility of this group alone.
    pub fn visibility(&self) -> Visibility {
        self.add_to(Visibility::none())
    }
}

/// The visibility of all `groups` together.
pub fn union(groups: &[ScopeGroup]) -> Visibility {
    groups.iter().fold(Visibility::none(), |v, g| g.add_to(v))
}

/// The scope groups `ctx` may read, in precedence order (only `scope` when given); see the module documentation.
///
/// Errors: [`MemoryError::Invalid`] for a malformed explicit project id; index errors reading aliases.
pub fn groups(
    store: &Store,
    ctx: &TerminalContext,
    settings: &Settings,
    scope: Option<Scope>,
    scan_all: bool,
) -> Result<Vec<ScopeGroup>, MemoryError> {
    resolve_groups(store, ctx, settings, scope, scan_all, true)
}

/// [`groups`] without `scan_all` and without recording a newly seen project alias: for read-only callers (lint),
/// which must not write. Aliases recorded earlier are still included.
///
/// Errors: as [`groups`].
pub fn groups_read_only(
    store: &Store,
    ctx: &TerminalContext,
    settings: &Settings,
    scope: Option<Scope>,
) -> Result<Vec<ScopeGroup>, MemoryError> {
    resolve_groups(store, ctx, settings, scope, false, false)
}

fn resolve_groups(
    store: &Store,
    ctx: &TerminalContext,
    settings: &Settings,
    scope: Option<Scope>,
    scan_all: bool,
    record_alias: bool,
) -> Result<Vec<ScopeGroup>, MemoryError> {
    let mut groups = Vec::new();
    for s in Scope::PRECEDENCE {
        if scope.is_some_and(|f| f != s) {
            continue;
        }
        let ids: Option<Vec<String>> = match s {
            _ if scan_all => None,
            Scope::Global | Scope::Federated => None,
            Scope::Session => match ctx.session_id() {
                Some(id) => Some(vec![id]),
                None => continue,
            },
            Scope::Agent => match ctx.agent_id() {
                Some(id) => Some(vec![id]),
                None => continue,
            },
            Scope::Project => {
                let ident = match ctx.project(settings) {
                    Ok(i) => i,
                    Err(cao_core::CoreError::UnresolvableScopeId { .. }) => continue,
                    Err(e) => return Err(e.into()),
                };
                let mut ids = vec![ident.project_id.clone()];
                if let Some(a) = &ident.alias {
                    if record_alias {
                        store.record_alias(&ident.project_id, a);
                    }
                    ids.push(a.clone());
                }
                for a in store.snapshot().aliases(&ident.project_id)? {
                    if !ids.contains(&a.alias) {
                        ids.push(a.alias);
                    }
                }
                Some(ids)
            }
        };
        groups.push(ScopeGroup {
            scope: s,
            ids,
            vault: false,
        });
    }
    Ok(groups)
}

/// Every visible row (recency order within each scope group, groups in precedence order), up to `limit`.
///
/// Errors: as [`groups`]; index errors.
pub fn visible_rows(
    store: &Store,
    ctx: &TerminalContext,
    settings: &Settings,
    scope: Option<Scope>,
    memory_type: Option<MemoryType>,
    scan_all: bool,
    limit: usize,
) -> Result<Vec<MemoryRow>, MemoryError> {
    let mut out = Vec::new();
    for g in groups(store, ctx, settings, scope, scan_all)? {
        let remaining = limit.saturating_sub(out.len());
        if remaining == 0 {
            break;
        }
        out.extend(store.snapshot().recency_pool(&g.visibility(), memory_type, remaining)?);
    }
    Ok(out)
}

/// One page of the visible rows from `cursor` (keyset paging over the order of [`visible_rows`]): at most `limit`
/// rows after the cursor's memory, or the `limit` rows before it (returned in listing order). Each scope group is
/// read from an index position, so a deep page costs what the first does.
///
/// Errors: [`MemoryError::Invalid`] when the cursor's memory is in no listed scope group, or no longer exists (the
/// listing changed under the page: start again from the first page); as [`groups`]; index errors.
#[allow(clippy::too_many_arguments, reason = "the listing's filters plus the page position")]
pub fn visible_rows_from(
    store: &Store,
    ctx: &TerminalContext,
    settings: &Settings,
    scope: Option<Scope>,
    memory_type: Option<MemoryType>,
    scan_all: bool,
    cursor: &ListCursor,
    limit: usize,
) -> Result<Vec<MemoryRow>, MemoryError> {
    let groups = groups(store, ctx, settings, scope, scan_all)?;
    let scope_id = cursor.scope_id.as_deref().filter(|_| cursor.scope.needs_scope_id());
    let Some(at) = groups
        .iter()
        .position(|g| g.scope == cursor.scope && g.visibility().allows(cursor.scope, scope_id))
    else {
        return Err(MemoryError::Invalid(format!(
            "the page position {}/{} is not in the listed scopes",
            cursor.scope,
            cursor.key.as_str()
        )));
    };
    let gone = || {
        MemoryError::Invalid(format!(
            "the page position {}/{} no longer exists (the list changed); start from the first page",
            cursor.scope,
            cursor.key.as_str()
        ))
    };
    let position = cao_index::RecencyCursor {
        scope: cursor.scope,
        scope_id,
        key: &cursor.key,
        before: cursor.before,
    };
    let mut out = store
        .snapshot()
        .recency_page(&groups[at].visibility(), memory_type, &position, limit)?
        .ok_or_else(gone)?;
    if cursor.before {
        for g in groups[..at].iter().rev() {
            let remaining = limit.saturating_sub(out.len());
            if remaining == 0 {
                break;
            }
            out.extend(
                store
                    .snapshot()
                    .recency_pool_last(&g.visibility(), memory_type, remaining)?,
            );
        }
        out.reverse();
    } else {
        for g in &groups[at + 1..] {
            let remaining = limit.saturating_sub(out.len());
            if remaining == 0 {
                break;
            }
            out.extend(store.snapshot().recency_pool(&g.visibility(), memory_type, remaining)?);
        }
    }
    Ok(out)
}

/// The scope id a write or a forget by `ctx` targets in `scope`, recording the project alias when one applies.
///
/// Errors: [`MemoryError::Invalid`] when the id cannot be resolved (no session name, agent profile or project).
pub fn target_scope_id(
    store: &Store,
    ctx: &TerminalContext,
    scope: Scope,
    settings: &Settings,
) -> Result<Option<String>, MemoryError> {
    if scope == Scope::Project {
        let ident = ctx.project(settings)?;
        if let Some(alias) = &ident.alias {
            store.record_alias(&ident.project_id, alias);
        }
        return Ok(Some(ident.project_id));
    }
    Ok(ctx.scope_id_for(scope, settings)?)
}

/// Where a page of the operator listing starts (keyset paging): the memory `(scope, scope_id, key)` shown last
/// (or first) on the page before, and the side of it the page lies on. A page read from a cursor costs what the
/// first page costs, however deep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListCursor {
    /// The memory's scope.
    pub scope: Scope,
    /// Its scope id (`None` for global and federated).
    pub scope_id: Option<String>,
    /// Its key.
    pub key: Key,
    /// `false`: the memories listed after it (the next page); `true`: those listed before it (the previous page).
    pub before: bool,
}
