//! Advisory lock files of the wiki: per-topic and per-index locks, named as the reference names them.
//!
//! - Locks are exclusive `flock`-style locks (std [`File::lock`], through [`cao_core::fs::lock_exclusive`]) on
//!   small lock files that stay on disk, so the reference and this crate exclude each other: `.<key>.lock` beside a
//!   topic file, `.index.lock` beside index.md. A lock is released when its guard is dropped.
//! - Lock directories are created mode 0700, lock files 0600. File writes themselves go through
//!   [`cao_core::fs::atomic_write`] (temp file, fsync, rename, directory fsync).

use cao_core::fs::{create_private_dir_all, lock_exclusive};
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

fn lock_path_beside(target: &Path, lock_name: OsString) -> io::Result<PathBuf> {
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Ok(dir.join(lock_name))
}

/// Lock `lock_path`, creating its directory (0700) only when the open says it is missing: a reconcile of many
/// files takes one lock per file in directories that exist, and checking and creating the directory first cost
/// three system calls per lock (`bench --only firstopen`).
fn lock_file(lock_path: &Path) -> io::Result<File> {
    match lock_exclusive(lock_path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(dir) = lock_path.parent().filter(|p| !p.as_os_str().is_empty()) {
                create_private_dir_all(dir)?;
            }
            lock_exclusive(lock_path)
        }
        other => other,
    }
}

/// Exclusive per-topic lock, held for a topic's read-modify-write cycle. Released on drop.
#[derive(Debug)]
pub struct TopicLock {
    file: File,
    lock_path: PathBuf,
}

impl TopicLock {
    /// Block until the exclusive lock on `.<stem>.lock` beside `topic_path` is held (`<dir>/<key>.md` ->
    /// `<dir>/.<key>.lock`). Creates the directory (0700) and the lock file (0600) when missing.
    ///
    /// Errors: the I/O error of creating, opening or locking (e.g. `InvalidInput` when `topic_path` has no file
    /// stem).
    pub fn acquire(topic_path: &Path) -> io::Result<TopicLock> {
        let stem = topic_path
            .file_stem()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "topic path has no file name"))?;
        let mut name = OsString::from(".");
        name.push(stem);
        name.push(".lock");
        let lock_path = lock_path_beside(topic_path, name)?;
        let file = lock_file(&lock_path)?;
        Ok(TopicLock { file, lock_path })
    }

    /// The lock file's path.
    pub fn lock_path(&self) -> &Path {
        &self.lock_path
    }
}

impl Drop for TopicLock {
    fn drop(&mut self) {
        // Closing the descriptor releases the lock too; unlocking first just makes it explicit.
        let _ = self.file.unlock();
    }
}

/// Exclusive lock on `.index.lock` beside an index.md, held while index.md is rewritten. Released on drop.
#[derive(Debug)]
pub struct IndexLock {
    file: File,
    lock_path: PathBuf,
}

impl IndexLock {
    /// Block until the exclusive lock on `.index.lock` in `index_path`'s directory is held. Creates the directory
    /// (0700) and the lock file (0600) when missing.
    ///
    /// Errors: the I/O error of creating, opening or locking.
    pub fn acquire(index_path: &Path) -> io::Result<IndexLock> {
        let lock_path = lock_path_beside(index_path, OsString::from(".index.lock"))?;
        let file = lock_file(&lock_path)?;
        Ok(IndexLock { file, lock_path })
    }

    /// The lock file's path.
    pub fn lock_path(&self) -> &Path {
        &self.lock_path
    }
}

impl Drop for IndexLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::{self, OpenOptions};
    use std::os::unix::fs::PermissionsExt;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn topic_lock_serialises_threads() {
        let d = tempfile::tempdir().expect("tempdir");
        let topic = d.path().join("a").join("b").join("k.md");
        let inside = Arc::new(AtomicUsize::new(0));
        let max_seen = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (topic, inside, max_seen) = (topic.clone(), inside.clone(), max_seen.clone());
                std::thread::spawn(move || {
                    for _ in 0..5 {
                        let lock = TopicLock::acquire(&topic).expect("lock");
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        max_seen.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(20));
                        inside.fetch_sub(1, Ordering::SeqCst);
                        drop(lock);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("thread");
        }
        assert_eq!(max_seen.load(Ordering::SeqCst), 1, "two holders at once");
        let lock_path = d.path().join("a").join("b").join(".k.lock");
        assert_eq!(
            fs::metadata(&lock_path).expect("lock file").permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            fs::metadata(d.path().join("a")).expect("dir").permissions().mode() & 0o777,
            0o700
        );
    }

    #[test]
    fn lock_is_released_on_drop_and_excludes_while_held() {
        let d = tempfile::tempdir().expect("tempdir");
        let index = d.path().join("index.md");
        let held = IndexLock::acquire(&index).expect("lock");
        assert_eq!(held.lock_path(), d.path().join(".index.lock"));
        let probe = OpenOptions::new().write(true).open(held.lock_path()).expect("open");
        assert!(
            matches!(probe.try_lock(), Err(fs::TryLockError::WouldBlock)),
            "lock must be exclusive"
        );
        drop(held);
        probe.try_lock().expect("free after drop");
    }
}
