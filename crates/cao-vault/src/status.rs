//! The durable part of `cao memory vault status` (spec/vault-facts.md section 8), from plain data: status and
//! finding counts, warnings, inert mappings. Process-local counters, recall counters and migration receipts are
//! the store's.

use crate::config::{ProjectDirectory, VaultConfig, VaultSettings, binding_warnings, config_warnings};
use crate::reconcile::{FindingRow, IndexedNote};
use serde::Serialize;
use std::collections::BTreeMap;

/// The durable status of one vault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatusSummary {
    /// Vault id.
    pub vault_id: String,
    /// `(status, rows)` sorted by status name.
    pub status_counts: Vec<(String, usize)>,
    /// `(code, finding rows)` sorted by code.
    pub finding_counts: Vec<(String, usize)>,
    /// Config warnings, then binding warnings (sorted by kind, mapping, detail).
    pub warnings: Vec<String>,
    /// One line per `index: false` mapping (`<folder> (<scope>[:<id>]) inert: recall=off inject=off write=off`).
    pub inert_mappings: Vec<String>,
}

/// Summarise a vault's rows and findings.
///
/// Errors: the alias table cannot be read.
pub fn summarize(
    settings: &VaultSettings,
    vault: &VaultConfig,
    notes: &[IndexedNote],
    findings: &[FindingRow],
    projects: &dyn ProjectDirectory,
) -> Result<StatusSummary, String> {
    let mut status: BTreeMap<&str, usize> = BTreeMap::new();
    for n in notes {
        *status.entry(n.status.as_str()).or_default() += 1;
    }
    let mut codes: BTreeMap<&str, usize> = BTreeMap::new();
    for f in findings {
        *codes.entry(f.code.as_str()).or_default() += 1;
    }
    let mut warnings = config_warnings(settings);
    warnings.extend(binding_warnings(settings, projects)?.into_iter().map(|w| w.detail));
    let inert_mappings = vault
        .mappings
        .iter()
        .filter(|m| !m.index)
        .map(|m| {
            let scope = match &m.scope_id {
                Some(id) => format!("{}:{id}", m.scope.as_str()),
                None => m.scope.as_str().to_owned(),
            };
            format!("{} ({scope}) inert: recall=off inject=off write=off", m.folder)
        })
        .collect();
    Ok(StatusSummary {
        vault_id: vault.id.clone(),
        status_counts: status.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        finding_counts: codes.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        warnings,
        inert_mappings,
    })
}
