//! The Obsidian vault operations of [`MemoryService`] (`cao_ops::vault`): scan, reconcile, rebuild, status.

use crate::MemoryService;
use cao_ops::vault::{self, Reconciled, VaultStatus};
use cao_store::MemoryError;
use cao_vault::scan::ScanReport;

impl MemoryService {
    /// `cao memory vault scan`: the read-only scan of the configured vault (nothing is written).
    ///
    /// Errors: the vault is disabled, not configured or its configuration unavailable; its root cannot be opened.
    pub fn vault_scan(&self) -> Result<ScanReport, MemoryError> {
        vault::scan(self.storage())
    }

    /// `cao memory vault reconcile [--apply]` / `rebuild --apply` (see [`cao_ops::vault::reconcile`]).
    ///
    /// Errors: as [`MemoryService::vault_scan`]; a store without vault support; store errors (nothing written).
    pub fn vault_reconcile(&self, apply: bool, rebuild: bool) -> Result<Reconciled, MemoryError> {
        vault::reconcile(self.storage(), apply, rebuild)
    }

    /// `cao memory vault status` / `GET /memory/vault/status` (see [`cao_ops::vault::status`]).
    ///
    /// Errors: as [`MemoryService::vault_reconcile`].
    pub fn vault_status(&self) -> Result<VaultStatus, MemoryError> {
        vault::status(self.storage())
    }
}
