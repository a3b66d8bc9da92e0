//! [`ServiceHandle`]: a [`MemoryService`] that is opened on first use.
//!
//! Opening the service creates `memory/` and the SQLite database. A server started while memory is disabled
//! must not create them (spec 000: with the switch off nothing is touched), yet the switch is re-read on every
//! call and may be turned on later. So servers hold a handle: [`ServiceHandle::enabled`] reads only the settings
//! until the service exists, and [`ServiceHandle::get`] opens it the first time an enabled call needs it. A
//! failed open is not cached: the next call tries again (the error reaches the caller each time).

use cao_core::{CaoHome, Settings};
use cao_memory::{MemoryError, MemoryService};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// A shareable, lazily opened [`MemoryService`]. Cloning shares the same service.
#[derive(Debug, Clone)]
pub struct ServiceHandle {
    home: CaoHome,
    cell: Arc<Mutex<Option<MemoryService>>>,
    /// Enable automatic compaction on the service as it is opened (long-running processes); shared by the clones.
    auto_compaction: Arc<AtomicBool>,
    /// The vault walk interval to set on the service as it is opened ([`ServiceHandle::set_vault_walk_interval`]).
    vault_walk_interval: Arc<Mutex<Option<std::time::Duration>>>,
}

impl ServiceHandle {
    /// A handle that opens `MemoryService::open(home)` on first use (no I/O now).
    pub fn lazy(home: CaoHome) -> Self {
        Self {
            home,
            cell: Arc::new(Mutex::new(None)),
            auto_compaction: Arc::new(AtomicBool::new(false)),
            vault_walk_interval: Arc::new(Mutex::new(None)),
        }
    }

    /// Enable automatic compaction (`AutoCompaction::enable`) on the service now if it is open, and
    /// as it is opened otherwise, for this handle and every clone. Only long-running processes, which run the
    /// worker ([`crate::run_compactor`]), call it; whether a store then queues a topic depends on
    /// `memory.compile_mode`.
    pub fn enable_auto_compaction(&self) {
        let cell = self.cell.lock().unwrap_or_else(PoisonError::into_inner);
        self.auto_compaction.store(true, Ordering::SeqCst);
        if let Some(svc) = cell.as_ref() {
            svc.auto_compaction().enable();
        }
    }

    /// Let reads walk the configured vault at most once per `interval` (`MemoryService::set_vault_walk_interval`)
    /// on the service now if it is open, and as it is opened otherwise, for this handle and every clone. Only
    /// long-running processes call it.
    pub fn set_vault_walk_interval(&self, interval: Option<std::time::Duration>) {
        let cell = self.cell.lock().unwrap_or_else(PoisonError::into_inner);
        *self.vault_walk_interval.lock().unwrap_or_else(PoisonError::into_inner) = interval;
        if let Some(svc) = cell.as_ref() {
            svc.set_vault_walk_interval(interval);
        }
    }

    /// A handle over an already open service (tests, embedding with fixed settings).
    pub fn open(svc: MemoryService) -> Self {
        Self {
            home: svc.home().clone(),
            cell: Arc::new(Mutex::new(Some(svc))),
            auto_compaction: Arc::new(AtomicBool::new(false)),
            vault_walk_interval: Arc::new(Mutex::new(None)),
        }
    }

    /// The home directory.
    pub fn home(&self) -> &CaoHome {
        &self.home
    }

    /// The service if it has been opened.
    pub fn opened(&self) -> Option<MemoryService> {
        self.cell.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The settings now: the open service's view (which honours fixed settings), else `settings.json` read now
    /// (the environment overlay, such as `CAO_MEMORY_ENABLED`, applies either way). Blocking (reads a small file).
    pub fn settings(&self) -> Settings {
        match self.opened() {
            Some(svc) => svc.settings(),
            None => Settings::load(&self.home),
        }
    }

    /// Whether memory is enabled ([`ServiceHandle::settings`]). Fails open. Blocking (reads a small file).
    pub fn enabled(&self) -> bool {
        self.settings().memory_enabled()
    }

    /// The service, opening it now if needed. Blocking.
    ///
    /// Errors: those of `MemoryService::open` (database or memory dir cannot be created).
    pub fn get(&self) -> Result<MemoryService, MemoryError> {
        let mut cell = self.cell.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(svc) = cell.as_ref() {
            return Ok(svc.clone());
        }
        let svc = MemoryService::open(self.home.clone())?;
        if self.auto_compaction.load(Ordering::SeqCst) {
            svc.auto_compaction().enable();
        }
        svc.set_vault_walk_interval(*self.vault_walk_interval.lock().unwrap_or_else(PoisonError::into_inner));
        tracing::debug!(home = %self.home.root().display(), "memory service opened");
        *cell = Some(svc.clone());
        Ok(svc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lazy_handle_writes_nothing_until_used() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let h = ServiceHandle::lazy(CaoHome::new(&home));
        assert!(h.opened().is_none());
        let _ = h.enabled();
        assert!(!home.exists(), "checking the switch must not create the home");
        let a = h.get().expect("open");
        assert!(home.join("memory").is_dir());
        let b = h.clone().get().expect("same service");
        assert_eq!(a.home(), b.home());
        assert!(h.opened().is_some());
    }

    #[test]
    fn the_vault_walk_interval_reaches_the_service_opened_later() {
        let dir = tempfile::tempdir().expect("tempdir");
        let h = ServiceHandle::lazy(CaoHome::new(dir.path().join("home")));
        let every = std::time::Duration::from_millis(1000);
        h.set_vault_walk_interval(Some(every));
        let svc = h.clone().get().expect("open");
        assert_eq!(svc.storage().vault_walk_interval(), Some(every));
        h.set_vault_walk_interval(None);
        assert_eq!(
            svc.storage().vault_walk_interval(),
            None,
            "an open service is changed too"
        );
    }
}
