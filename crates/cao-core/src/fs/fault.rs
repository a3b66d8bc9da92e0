//! Storage faults: recognising a full or read-only file system in an error, the state of the file system holding
//! a path (`/health`), and a process-wide fault injection switch for tests.
//!
//! - [`classify`] reads an I/O error: `ENOSPC` and `EDQUOT` are [`StorageFault::Full`], `EROFS` is
//!   [`StorageFault::ReadOnly`]. Callers above (the store's `MemoryError::code`, the SQLite index's errors) map the
//!   fault to the wire codes `storage_full` and `storage_read_only`.
//! - [`disk_state`] asks the file system (`statvfs`): read-only when mounted so, full when less than
//!   [`LOW_SPACE_BYTES`] are available to unprivileged writers.
//! - [`inject`] makes every write under a directory through this module (the atomic writers' temp files, and with
//!   [`StorageFault::ReadOnly`] also lock files, directories and new files) fail as the file system would, and the
//!   SQLite index's commits fail as SQLite would ([`sqlite_commit_fault`] is read by `cao-index`). It exists so the
//!   full-disk and read-only tests also run where mounting a small file system is not allowed; nothing outside
//!   tests sets it. [`disk_state`] reports an injected fault too.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Below this many available bytes, a file system counts as full for [`disk_state`] (a topic file write and an
/// index transaction need a few pages each).
pub const LOW_SPACE_BYTES: u64 = 1024 * 1024;

/// Why storage refuses writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StorageFault {
    /// No space (or quota) left: `ENOSPC`, `EDQUOT`, SQLite's `SQLITE_FULL`.
    Full,
    /// The file system is mounted read-only: `EROFS`, SQLite's `SQLITE_READONLY`.
    ReadOnly,
}

impl StorageFault {
    /// The OS error the fault stands for (`ENOSPC` or `EROFS`).
    pub fn io_error(self) -> io::Error {
        io::Error::from_raw_os_error(match self {
            StorageFault::Full => libc::ENOSPC,
            StorageFault::ReadOnly => libc::EROFS,
        })
    }
}

/// The fault an I/O error stands for, if any (`ENOSPC`/`EDQUOT` full, `EROFS` read-only).
pub fn classify(e: &io::Error) -> Option<StorageFault> {
    match e.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => Some(StorageFault::Full),
        Some(libc::EROFS) => Some(StorageFault::ReadOnly),
        _ => None,
    }
}

/// The first storage fault in `e` or the errors it was caused by ([`std::error::Error::source`]): an
/// [`io::Error`] read by [`classify`], else one whose message is the OS's or SQLite's for that fault (errors that
/// kept only the text of their cause).
pub fn classify_chain(e: &(dyn std::error::Error + 'static)) -> Option<StorageFault> {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<io::Error>()
            && let Some(f) = classify(io)
        {
            return Some(f);
        }
        if let Some(f) = classify_message(&err.to_string()) {
            return Some(f);
        }
        cur = err.source();
    }
    None
}

/// The fault a message names: the OS's texts (`No space left on device`, `Disk quota exceeded`, `Read-only file
/// system`) and SQLite's (`database or disk is full`, `attempt to write a readonly database`).
pub fn classify_message(message: &str) -> Option<StorageFault> {
    let m = message.to_ascii_lowercase();
    if m.contains("no space left on device")
        || m.contains("disk quota exceeded")
        || m.contains("database or disk is full")
    {
        Some(StorageFault::Full)
    } else if m.contains("read-only file system") || m.contains("readonly database") {
        Some(StorageFault::ReadOnly)
    } else {
        None
    }
}

/// The state of the file system holding `path` (which must exist): a fault when it is mounted read-only or has
/// less than [`LOW_SPACE_BYTES`] available, or when one is injected ([`inject`]); `None` when writable with room
/// or when it cannot be asked.
pub fn disk_state(path: &Path) -> Option<StorageFault> {
    if let Some(f) = injected(path) {
        return Some(f);
    }
    let st = rustix::fs::statvfs(path).ok()?;
    if st.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY) {
        return Some(StorageFault::ReadOnly);
    }
    let available = st.f_bavail.saturating_mul(st.f_frsize);
    (available < LOW_SPACE_BYTES).then_some(StorageFault::Full)
}

/// Whether any fault is injected (a fast path: without one, a write takes no lock here).
static ANY: AtomicBool = AtomicBool::new(false);
/// The injected faults: each applies under its directory.
static FAULTS: Mutex<Vec<(PathBuf, StorageFault)>> = Mutex::new(Vec::new());

fn faults() -> std::sync::MutexGuard<'static, Vec<(PathBuf, StorageFault)>> {
    FAULTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Make every later write of this process under `dir` fail with `fault` (see the module docs), replacing a fault
/// injected there before; `None` removes it. Paths are compared as given (no symlink resolution): pass the
/// directory the writers are given (a home's root). For tests only.
pub fn inject(dir: &Path, fault: Option<StorageFault>) {
    let mut all = faults();
    all.retain(|(d, _)| d != dir);
    if let Some(f) = fault {
        all.push((dir.to_path_buf(), f));
    }
    ANY.store(!all.is_empty(), Ordering::SeqCst);
}

/// The fault injected for `path` now ([`inject`]): that of a directory holding it.
pub fn injected(path: &Path) -> Option<StorageFault> {
    if !ANY.load(Ordering::SeqCst) {
        return None;
    }
    faults().iter().find(|(d, _)| path.starts_with(d)).map(|(_, f)| *f)
}

/// The error a write of file data to `path` fails with now: the injected fault, if any.
///
/// Errors: `ENOSPC` or `EROFS` while a fault is injected for `path`.
pub(crate) fn check_data_write(path: &Path) -> io::Result<()> {
    match injected(path) {
        Some(f) => Err(f.io_error()),
        None => Ok(()),
    }
}

/// The error creating a file, a directory or a lock file at `path` fails with now: only an injected read-only
/// fault (an empty file needs no data blocks on a full disk).
///
/// Errors: `EROFS` while [`StorageFault::ReadOnly`] is injected for `path`.
pub(crate) fn check_create(path: &Path) -> io::Result<()> {
    match injected(path) {
        Some(StorageFault::ReadOnly) => Err(StorageFault::ReadOnly.io_error()),
        _ => Ok(()),
    }
}

/// The fault a SQLite commit on the database at `db_path` must fail with now (read by `cao-index` before each
/// commit, which then fails as SQLite does on a full or read-only file system: `SQLITE_FULL` / `SQLITE_READONLY`,
/// the transaction rolled back).
pub fn sqlite_commit_fault(db_path: &Path) -> Option<StorageFault> {
    injected(db_path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_and_messages_are_classified() {
        assert_eq!(
            classify(&io::Error::from_raw_os_error(libc::ENOSPC)),
            Some(StorageFault::Full)
        );
        assert_eq!(
            classify(&io::Error::from_raw_os_error(libc::EDQUOT)),
            Some(StorageFault::Full)
        );
        assert_eq!(
            classify(&io::Error::from_raw_os_error(libc::EROFS)),
            Some(StorageFault::ReadOnly)
        );
        assert_eq!(classify(&io::Error::from_raw_os_error(libc::EACCES)), None);
        assert_eq!(classify_message("database or disk is full"), Some(StorageFault::Full));
        assert_eq!(
            classify_message("attempt to write a readonly database"),
            Some(StorageFault::ReadOnly)
        );
        assert_eq!(classify_message("permission denied"), None);
        let wrapped = io::Error::other(io::Error::from_raw_os_error(libc::ENOSPC).to_string());
        assert_eq!(classify_chain(&wrapped), Some(StorageFault::Full));
    }

    #[test]
    fn injected_faults_apply_under_their_directory_only() {
        let dir = tempfile::tempdir().expect("temp dir");
        let inside = dir.path().join("home");
        crate::fs::create_private_dir_all(&inside).expect("mkdir");
        inject(&inside, Some(StorageFault::Full));
        let e = crate::fs::atomic_write(&inside.join("a"), b"x").expect_err("full");
        assert_eq!(classify(&e), Some(StorageFault::Full));
        assert!(!inside.join("a").exists(), "nothing written");
        crate::fs::atomic_write(&dir.path().join("b"), b"x").expect("outside the faulty directory");
        assert_eq!(disk_state(&inside), Some(StorageFault::Full));
        inject(&inside, Some(StorageFault::ReadOnly));
        let e = crate::fs::lock_exclusive(&inside.join(".lock")).expect_err("read-only");
        assert_eq!(classify(&e), Some(StorageFault::ReadOnly));
        inject(&inside, None);
        crate::fs::atomic_write(&inside.join("a"), b"x").expect("space is back");
        assert_eq!(injected(&inside), None);
    }

    #[test]
    fn a_writable_directory_with_room_is_fine() {
        let dir = std::env::temp_dir();
        // Only when the machine's temp dir has room: the test must not depend on a nearly full disk.
        if rustix::fs::statvfs(&dir).is_ok_and(|s| s.f_bavail.saturating_mul(s.f_frsize) > 64 * LOW_SPACE_BYTES) {
            assert_eq!(disk_state(&dir), None);
        }
    }
}
