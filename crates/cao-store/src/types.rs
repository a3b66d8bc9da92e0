//! The store's reports: its health, what a repair or a walk for external changes changed, and the progress sink of
//! long bulk operations.

use serde::Serialize;

/// The state of a store, for health checks (`Store::health`). Serialises
/// as `{"status": "ok"}` or `{"status": "degraded", "reason": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoreHealth {
    /// `ok` or `degraded`.
    pub status: HealthStatus,
    /// Why the store is degraded (one line naming the remedy); absent when ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Set when the store is degraded because the file system holding it is full or read-only (reads still
    /// work; writes fail with `storage_full` / `storage_read_only`). Serialised as `"full"` / `"read_only"`.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "serialize_fault")]
    pub storage: Option<cao_core::fs::fault::StorageFault>,
}

/// `"full"` or `"read_only"`.
fn serialize_fault<S: serde::Serializer>(
    fault: &Option<cao_core::fs::fault::StorageFault>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match fault {
        Some(f) => s.serialize_str(storage_fault_name(*f)),
        None => s.serialize_none(),
    }
}

/// The name of a storage fault on the wire: `full` or `read_only` (`/health`'s `storage`).
pub fn storage_fault_name(fault: cao_core::fs::fault::StorageFault) -> &'static str {
    match fault {
        cao_core::fs::fault::StorageFault::Full => "full",
        cao_core::fs::fault::StorageFault::ReadOnly => "read_only",
    }
}

/// Whether a store can serve calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    /// Reads and writes work.
    Ok,
    /// Calls fail until the reason is dealt with (for a replaced database: restart or `cao memory repair`).
    Degraded,
}

impl StoreHealth {
    /// A healthy store.
    pub fn ok() -> StoreHealth {
        StoreHealth {
            status: HealthStatus::Ok,
            reason: None,
            storage: None,
        }
    }

    /// A degraded store, and why.
    pub fn degraded(reason: impl Into<String>) -> StoreHealth {
        StoreHealth {
            status: HealthStatus::Degraded,
            reason: Some(reason.into()),
            storage: None,
        }
    }

    /// A store degraded by its file system (`fault`): writes fail, reads work; `reason` names the file system
    /// and the remedy.
    pub fn storage(fault: cao_core::fs::fault::StorageFault, reason: impl Into<String>) -> StoreHealth {
        StoreHealth {
            status: HealthStatus::Degraded,
            reason: Some(reason.into()),
            storage: Some(fault),
        }
    }

    /// True when the status is [`HealthStatus::Ok`].
    pub fn is_ok(&self) -> bool {
        self.status == HealthStatus::Ok
    }
}

/// What `repair` changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RepairReport {
    /// Topic files scanned.
    pub scanned: usize,
    /// Keys (`scope/scope_id/key`) whose rows were created.
    pub added: Vec<String>,
    /// Keys whose rows were brought back in line with their files.
    pub updated: Vec<String>,
    /// Rows removed because their file is gone.
    pub removed: Vec<String>,
    /// Files that could not be parsed (`path: reason`); their rows are left alone.
    pub unparsable: Vec<String>,
    /// Paths skipped by the scan (`path: reason`).
    pub skipped: Vec<String>,
    /// Temp files of writers that are gone, removed (crash leftovers; see `cao_memory::sweep_temp_files`). Omitted
    /// from JSON when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removed_temp_files: Vec<String>,
    /// Containers whose journal was cleared because their memory directory is gone. Omitted from JSON when
    /// empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub journals_cleared: Vec<String>,
}

impl RepairReport {
    /// True when nothing had to change.
    pub fn is_clean(&self) -> bool {
        self.added.is_empty() && self.updated.is_empty() && self.removed.is_empty()
    }
}

impl std::fmt::Display for RepairReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "scanned {} topic files: {} added, {} updated, {} removed, {} unparsable",
            self.scanned,
            self.added.len(),
            self.updated.len(),
            self.removed.len(),
            self.unparsable.len()
        )?;
        for (label, list) in [
            ("added", &self.added),
            ("updated", &self.updated),
            ("removed", &self.removed),
            ("unparsable", &self.unparsable),
            ("skipped", &self.skipped),
            ("removed temp file", &self.removed_temp_files),
        ] {
            for item in list {
                writeln!(f, "  {label}: {item}")?;
            }
        }
        Ok(())
    }
}

/// Receives the progress of a long bulk operation (an export's file writes, an import's topic writes); the CLI draws
/// a bar on stderr for large bundles. Calls come from the thread running the operation.
pub trait Progress {
    /// A phase begins: `total` steps (files or topics) to do.
    fn start(&self, phase: &str, total: u64);
    /// `n` more steps are done.
    fn advance(&self, n: u64);
    /// The phase is over.
    fn finish(&self);
}

/// A [`Progress`] that shows nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _phase: &str, _total: u64) {}
    fn advance(&self, _n: u64) {}
    fn finish(&self) {}
}
