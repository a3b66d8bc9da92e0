//! Which store serves a scope (spec/vault-facts.md section 1 "Binding a scope"; conformance `vault_recall.json`
//! case `bindings-resolve`).
//!
//! With the vault disabled every scope is native. Otherwise the first mapping with the same scope and a matching
//! scope id wins: global matches global; a project id is canonicalised through the alias table and compared
//! casefolded (`DEMO-PROJ` binds the `demo-proj` mapping); agent ids compare exactly. Session and federated scopes
//! are always native. A binding is reported whatever the mapping's `index` flag (an inert mapping still hides the
//! native tier of its scope).

use crate::config::{MappedScope, ProjectDirectory, ProjectLookup, VaultSettings};
use crate::path::fold;
use cao_core::Scope;
use serde::Serialize;

/// The store a scope is served by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Binding {
    /// The native wiki.
    Native {
        /// The scope.
        scope: Scope,
        /// The scope id as asked.
        scope_id: Option<String>,
    },
    /// A vault mapping.
    Vault {
        /// The vault's id.
        vault_id: String,
        /// The scope.
        scope: Scope,
        /// The mapping's scope id (canonical project id; `None` for global).
        scope_id: Option<String>,
        /// The mapping's folder.
        folder: String,
        /// The mapping's `index` flag.
        index: bool,
        /// The mapping's `inject` flag.
        inject: bool,
        /// The mapping's `writable` flag.
        writable: bool,
        /// The mapping's position in the vault's `mappings`.
        #[serde(skip)]
        mapping: usize,
    },
}

/// The binding of `(scope, scope_id)` under `settings` (already passed through
/// [`crate::config::apply_kill_switch`]).
///
/// Errors: the alias table cannot be read ("fail closed": the caller reports the configuration unavailable).
pub fn bind(
    settings: &VaultSettings,
    scope: Scope,
    scope_id: Option<&str>,
    projects: &dyn ProjectDirectory,
) -> Result<Binding, String> {
    let native = || Binding::Native {
        scope,
        scope_id: scope_id.map(str::to_owned),
    };
    let Some(vault) = settings.active() else {
        return Ok(native());
    };
    let wanted = match scope {
        Scope::Global => MappedScope::Global,
        Scope::Project => MappedScope::Project,
        Scope::Agent => MappedScope::Agent,
        Scope::Session | Scope::Federated => return Ok(native()),
    };
    let project_key = match (wanted, scope_id) {
        (MappedScope::Project, Some(id)) => Some(fold(&match projects.lookup(id)? {
            ProjectLookup::Alias { canonical, .. } => canonical,
            ProjectLookup::Canonical | ProjectLookup::Unknown => id.to_owned(),
        })),
        _ => None,
    };
    let found = vault.mappings.iter().enumerate().find(|(_, m)| {
        m.scope == wanted
            && match wanted {
                MappedScope::Global => true,
                MappedScope::Project => m.scope_id.as_deref().map(fold) == project_key,
                MappedScope::Agent => m.scope_id.as_deref() == scope_id,
            }
    });
    Ok(match found {
        None => native(),
        Some((i, m)) => Binding::Vault {
            vault_id: vault.id.clone(),
            scope,
            scope_id: m.scope_id.clone(),
            folder: m.folder.clone(),
            index: m.index,
            inject: m.inject,
            writable: m.writable,
            mapping: i,
        },
    })
}
