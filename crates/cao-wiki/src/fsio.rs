//! File-system primitives: private directories, advisory locks and atomic replacement.
//!
//! - Directories created here are mode 0700, files 0600 (before the umask; existing ones are left alone).
//! - Locks are exclusive `flock`-style locks (std [`File::lock`]) on small lock files that stay on disk, named as
//!   the reference names them, so the reference and this crate exclude each other: `.<key>.lock` beside a topic
//!   file, `.index.lock` beside index.md. A lock is released when its guard is dropped.
//! - [`atomic_write`] writes a temp file `.<name>.<pid>-<n>.tmp` in the target's directory, fsyncs it, renames
//!   it over the target and fsyncs the directory, so readers see either the old or the new file, never a mix.

use std::ffi::OsString;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Create `dir` and its missing parents with mode 0700.
pub(crate) fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

fn lock_path_beside(target: &Path, lock_name: OsString) -> io::Result<PathBuf> {
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Ok(dir.join(lock_name))
}

fn lock_file(lock_path: &Path) -> io::Result<File> {
    if let Some(dir) = lock_path.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_private_dir_all(dir)?;
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(lock_path)?;
    file.lock()?;
    Ok(file)
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

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replace `path` with `bytes` atomically: write `.<file name>.<pid>-<n>.tmp` (mode 0600, created exclusively)
/// in the same directory, fsync it, rename it over `path`, fsync the directory. The temp file is removed on
/// failure. The directory must exist. The new file has mode 0600.
///
/// Errors: the first I/O error (`InvalidInput` when `path` has no file name).
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "atomic_write: path has no file name"))?;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp_name = OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(
        ".{}-{}.tmp",
        std::process::id(),
        TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp = dir.join(tmp_name);
    let mut file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
    let result = (|| {
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, path)?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// fsync a directory so a rename or unlink in it is durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("k.md");
        atomic_write(&p, b"one").expect("first write");
        atomic_write(&p, b"two").expect("second write");
        assert_eq!(fs::read(&p).expect("read"), b"two");
        let names: Vec<_> = fs::read_dir(d.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![OsString::from("k.md")]);
        assert_eq!(fs::metadata(&p).expect("stat").permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn atomic_write_failure_cleans_up() {
        let d = tempfile::tempdir().expect("tempdir");
        // Target is a non-empty directory: rename fails; no temp file may remain.
        let p = d.path().join("k.md");
        fs::create_dir(&p).expect("mkdir");
        fs::write(p.join("x"), b"x").expect("write");
        assert!(atomic_write(&p, b"data").is_err());
        let names: Vec<_> = fs::read_dir(d.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![OsString::from("k.md")]);
    }

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
