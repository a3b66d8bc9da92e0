//! The one home of file writes: atomic replacement, private directories and lock files.
//!
//! Every file the workspace writes goes through here (`clippy.toml` bans `std::fs::write`, `std::fs::rename`,
//! `std::fs::File::create`, `std::fs::copy`, `std::fs::create_dir` and `std::fs::create_dir_all` everywhere else):
//! topic files and index.md (`cao-wiki`), `settings.json` ([`crate::settings::set`]), provider files
//! (`cao-memory`), the database directory (`cao-index`), the memory and audit directories (`cao-memory`). The one
//! file not replaced here is the daily audit log, which `cao-memory` appends to in place (`O_APPEND|O_NOFOLLOW`, one
//! `write` per record).
//!
//! Invariants:
//! - [`atomic_write`] / [`atomic_write_with`]: a reader sees either the old or the new file, never a mix, and
//!   after a crash the target is one or the other. The temp file `.<file name>.<pid>-<n>.tmp` (`n` a per-process
//!   counter, so threads never collide) is created beside the target with `O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC`
//!   (a planted file or symlink at that name fails the write instead of being followed), written, fsynced,
//!   renamed over the target, and the directory is fsynced. On any failure the temp file is removed and the
//!   target is untouched. With [`Durability::ProcessCrash`] the two fsyncs are skipped: the replacement is as
//!   atomic for readers and survives any process crash or kill (the bytes are in the kernel's page cache), but a
//!   power failure or OS crash before the kernel writes them back may lose it (docs/decisions/0012).
//! - [`atomic_write_at`] is the same replacement inside an open directory handle, resolving nothing outside it (the
//!   vault's managed-folder writer, `cao-vault`, opens its folder component by component without following links).
//! - [`create_private_dir_all`] creates missing directories with mode 0700 (existing ones are left alone);
//!   [`create_private_file`] and [`lock_exclusive`] create missing files with mode 0600.
//! - Nothing here follows a symlink at the temp name; the target itself is replaced by `rename`, which replaces a
//!   symlink at the target rather than writing through it (callers that must keep a link resolve it first).
//! - A writer killed between creating its temp file and the rename leaves the temp file behind. Its name says which
//!   process wrote it ([`temp_file_writer`]); [`remove_stale_temp_file`] removes it once that process is gone and the
//!   file was last written at least [`TEMP_FILE_GRACE`] ago (the store sweeps its directories with it).
//! - A full or read-only file system fails a write with the OS's error (`ENOSPC`, `EROFS`), which [`fault`]
//!   recognises; [`fault::inject`] simulates either for tests.
//! - [`FileStamp`] is how a file's content change is noticed without reading it: size, change time (ctime) and inode
//!   number. Every write of content changes the ctime (an editor cannot set it back, unlike the mtime), and an atomic
//!   replace gives the file a new inode.

use std::ffi::{OsStr, OsString};
use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

pub mod fault;

/// Mode of private files (owner read/write): topic files, index.md, settings.json, lock files, the database.
pub const PRIVATE_FILE_MODE: u32 = 0o600;

/// Mode of private directories (owner only).
pub const PRIVATE_DIR_MODE: u32 = 0o700;

/// The permission bits an atomically written file gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileMode {
    /// Exactly [`PRIVATE_FILE_MODE`] (0600), whatever the umask.
    Private,
    /// Exactly these bits (masked to `0o7777`), whatever the umask: e.g. the bits of the file being replaced.
    Exact(u32),
    /// `0666` less the process umask, as a newly created file of an ordinary editor gets (files in a user's
    /// project tree).
    UmaskDefault,
}

/// What an atomic write has made sure of when it returns (docs/decisions/0012-write-durability.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// The data and the rename are on the disk (file and directory fsynced): the write survives a power failure
    /// or an OS crash. Costs two fsyncs (milliseconds on a virtual disk).
    #[default]
    PowerLoss,
    /// The rename is done and the bytes are in the kernel's page cache: every reader sees the new file and the
    /// write survives the crash or kill of any process, but a power failure or OS crash before the kernel writes
    /// it back (seconds) may lose it. The guarantee of SQLite's `synchronous = NORMAL` in WAL mode, which the index
    /// uses.
    ProcessCrash,
}

/// How [`atomic_write_with`] writes.
#[derive(Debug, Clone, Copy)]
pub struct WriteOptions<'a> {
    mode: FileMode,
    dir: Option<&'a File>,
    durability: Durability,
}

impl WriteOptions<'static> {
    /// A private file (mode 0600); the directory is opened by path for its fsync.
    pub fn private() -> Self {
        WriteOptions {
            mode: FileMode::Private,
            dir: None,
            durability: Durability::PowerLoss,
        }
    }

    /// A file with `mode`; the directory is opened by path for its fsync.
    pub fn with_mode(mode: FileMode) -> Self {
        WriteOptions {
            mode,
            dir: None,
            durability: Durability::PowerLoss,
        }
    }
}

impl<'a> WriteOptions<'a> {
    /// Fsync the directory through `dir` (an open handle on the target's directory, e.g. one the caller holds a
    /// lock on) instead of opening it by path.
    pub fn sync_dir_through(self, dir: &'a File) -> WriteOptions<'a> {
        WriteOptions { dir: Some(dir), ..self }
    }

    /// Write with `durability` (default [`Durability::PowerLoss`]).
    pub fn durability(self, durability: Durability) -> WriteOptions<'a> {
        WriteOptions { durability, ..self }
    }
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replace `path` with `bytes` atomically as a private file (mode 0600): see the module invariants. The directory
/// must exist.
///
/// Errors: the first I/O error; `InvalidInput` when `path` has no file name; `AlreadyExists` when the temp name is
/// taken (never by this process).
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    atomic_write_with(path, bytes, WriteOptions::private())
}

/// Replace `path` with `bytes` atomically with the given options (mode, directory handle): see the module
/// invariants. The directory must exist.
///
/// Errors: as [`atomic_write`].
pub fn atomic_write_with(path: &Path, bytes: &[u8], opts: WriteOptions<'_>) -> io::Result<()> {
    let (tmp, mut file) = create_temp(path, opts.mode)?;
    let synced = opts.durability == Durability::PowerLoss;
    let result = (|| {
        file.write_all(bytes)?;
        if synced {
            file.sync_all()?;
        }
        drop(file);
        #[allow(clippy::disallowed_methods, reason = "the one rename of the atomic writer")]
        std::fs::rename(&tmp, path)?;
        if !synced {
            return Ok(());
        }
        match opts.dir {
            Some(handle) => handle.sync_all(),
            None => sync_dir(parent_dir(path)),
        }
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Create `path` with `bytes` only if nothing is there: the bytes are written and fsynced to a temp file beside it
/// (as [`atomic_write_with`] does), which is then hard-linked to `path` (`link` fails with `AlreadyExists` when
/// anything, a symlink included, is at `path`, so an existing file is never replaced, even by a racing writer);
/// the temp name is removed and the directory fsynced. A reader sees no file or the whole file. The directory must
/// exist.
///
/// Errors: `AlreadyExists` when `path` exists; otherwise the first I/O error (the temp file is removed).
pub fn create_new_with(path: &Path, bytes: &[u8], mode: FileMode) -> io::Result<()> {
    let (tmp, mut file) = create_temp(path, mode)?;
    let result = (|| {
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::hard_link(&tmp, path)
    })();
    let _ = std::fs::remove_file(&tmp);
    result?;
    sync_dir(parent_dir(path))
}

/// Create the temp file of an atomic write of `path` (`.<name>.<pid>-<n>.tmp` beside it, `O_CREAT|O_EXCL|
/// O_NOFOLLOW|O_CLOEXEC`) with the permission bits of `mode`. Returns its path and the open file.
fn create_temp(path: &Path, mode: FileMode) -> io::Result<(std::path::PathBuf, File)> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "atomic write: path has no file name"))?;
    let mut tmp_name = OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(
        ".{}-{}.tmp",
        std::process::id(),
        TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp = parent_dir(path).join(tmp_name);
    fault::check_data_write(path)?;
    let create_mode = match mode {
        FileMode::Private => PRIVATE_FILE_MODE,
        FileMode::Exact(_) | FileMode::UmaskDefault => 0o666,
    };
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(create_mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)?;
    let perms = match mode {
        FileMode::Private => file.set_permissions(Permissions::from_mode(PRIVATE_FILE_MODE)),
        FileMode::Exact(m) => file.set_permissions(Permissions::from_mode(m & 0o7777)),
        FileMode::UmaskDefault => Ok(()),
    };
    if let Err(e) = perms {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok((tmp, file))
}

/// Replace every `(path, bytes)` of `items` atomically, each as [`atomic_write_with`] would with `mode`, but with
/// one data sync for the whole batch instead of one per file: all temp files are written, their data is made
/// durable (Linux: `syncfs` once per file system holding them; elsewhere `fsync` of each), then each is renamed
/// over its target and every distinct directory is fsynced once. Bulk writers (an OKF export, an import) use it:
/// per-file fsyncs would make a 100,000-file bundle take many minutes.
///
/// Each file is replaced atomically (a reader sees the old or the new bytes; after a crash a target is one or the
/// other), and no rename happens before every file's data is durable. The batch as a whole is not atomic: if a
/// rename fails, the files renamed before it stay replaced, the rest keep their old bytes and every temp file left
/// is removed. Callers bound the batch size (the temp files of a batch exist at the same time). Targets may be in
/// different directories; each directory must exist.
///
/// Errors: the first I/O error (see [`atomic_write`]).
pub fn atomic_write_batch(items: &[(&Path, &[u8])], mode: FileMode) -> io::Result<()> {
    atomic_write_batch_with(items, mode, Durability::PowerLoss)
}

/// [`atomic_write_batch`] with `durability`: with [`Durability::ProcessCrash`] neither the data sync nor the
/// directory fsyncs happen (each file is still replaced atomically for readers and process crashes).
///
/// Errors: as [`atomic_write_batch`].
pub fn atomic_write_batch_with(items: &[(&Path, &[u8])], mode: FileMode, durability: Durability) -> io::Result<()> {
    let synced = durability == Durability::PowerLoss;
    let mut temps: Vec<std::path::PathBuf> = Vec::with_capacity(items.len());
    let cleanup = |temps: &[std::path::PathBuf]| {
        for t in temps {
            let _ = std::fs::remove_file(t);
        }
    };
    for (path, bytes) in items {
        let (tmp, mut file) = match create_temp(path, mode) {
            Ok(t) => t,
            Err(e) => {
                cleanup(&temps);
                return Err(e);
            }
        };
        temps.push(tmp);
        let written = file.write_all(bytes).and_then(|()| {
            if cfg!(target_os = "linux") || !synced {
                Ok(())
            } else {
                file.sync_all()
            }
        });
        if let Err(e) = written {
            cleanup(&temps);
            return Err(e);
        }
    }
    let mut dirs: Vec<&Path> = items.iter().map(|(p, _)| parent_dir(p)).collect();
    dirs.sort();
    dirs.dedup();
    if synced && let Err(e) = sync_file_systems(&dirs) {
        cleanup(&temps);
        return Err(e);
    }
    for (n, ((path, _), tmp)) in items.iter().zip(&temps).enumerate() {
        #[allow(clippy::disallowed_methods, reason = "the batch rename of the atomic writer")]
        if let Err(e) = std::fs::rename(tmp, path) {
            cleanup(&temps[n..]);
            return Err(e);
        }
    }
    if synced {
        for dir in dirs {
            sync_dir(dir)?;
        }
    }
    Ok(())
}

/// Make the data of every file written under `dirs` durable: `syncfs` once per file system (Linux); a no-op
/// elsewhere, where [`atomic_write_batch`] fsyncs each file as it writes it.
fn sync_file_systems(dirs: &[&Path]) -> io::Result<()> {
    if !cfg!(target_os = "linux") {
        return Ok(());
    }
    use std::os::unix::fs::MetadataExt;
    let mut synced: Vec<u64> = Vec::new();
    for dir in dirs {
        let handle = File::open(dir)?;
        let dev = handle.metadata()?.dev();
        if synced.contains(&dev) {
            continue;
        }
        rustix::fs::syncfs(&handle).map_err(io::Error::from)?;
        synced.push(dev);
    }
    Ok(())
}

/// The directory a relative or absolute `path` lives in (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Replace the file `name` inside the open directory `dir` atomically, never resolving a path from anywhere but
/// `dir` (for writers confined to a tree they opened component by component with `O_NOFOLLOW`, such as a vault's
/// managed folder): the temp file `.<name>.<pid>-<n>.tmp` is created in `dir` with `O_CREAT|O_EXCL|O_NOFOLLOW`,
/// written, given `mode`'s bits, fsynced, renamed over `name` within `dir` (`renameat`), and `dir` is fsynced. A
/// reader sees the old or the new file; on failure the temp file is removed and `name` is untouched. `name` must be
/// a single path component.
///
/// Errors: `InvalidInput` when `name` is empty, `.`/`..` or contains `/`; otherwise the first I/O error.
pub fn atomic_write_at(dir: &File, name: &OsStr, bytes: &[u8], mode: FileMode) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let raw = name.as_bytes();
    if raw.is_empty() || raw == b"." || raw == b".." || raw.contains(&b'/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "atomic write: not a file name",
        ));
    }
    let mut tmp_name = OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(
        ".{}-{}.tmp",
        std::process::id(),
        TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let create_mode = match mode {
        FileMode::Private => PRIVATE_FILE_MODE,
        FileMode::Exact(_) | FileMode::UmaskDefault => 0o666,
    };
    let fd = rustix::fs::openat(
        dir,
        tmp_name.as_os_str(),
        rustix::fs::OFlags::WRONLY
            | rustix::fs::OFlags::CREATE
            | rustix::fs::OFlags::EXCL
            | rustix::fs::OFlags::NOFOLLOW
            | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::from_raw_mode(create_mode),
    )?;
    let mut file = File::from(fd);
    let result = (|| {
        match mode {
            FileMode::Private => file.set_permissions(Permissions::from_mode(PRIVATE_FILE_MODE))?,
            FileMode::Exact(m) => file.set_permissions(Permissions::from_mode(m & 0o7777))?,
            FileMode::UmaskDefault => {}
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        rustix::fs::renameat(dir, tmp_name.as_os_str(), dir, name)?;
        dir.sync_all()
    })();
    if result.is_err() {
        let _ = rustix::fs::unlinkat(dir, tmp_name.as_os_str(), rustix::fs::AtFlags::empty());
    }
    result
}

/// Create the directory `name` inside the open directory `dir` with the umask's default mode (`0777` less the
/// umask), as a user's own tools would; nothing is resolved outside `dir`.
///
/// Errors: as `mkdirat` (`AlreadyExists` when something is there).
pub fn create_dir_at(dir: &File, name: &OsStr) -> io::Result<()> {
    rustix::fs::mkdirat(dir, name, rustix::fs::Mode::from_raw_mode(0o777)).map_err(io::Error::from)
}

/// Fsync a directory so a rename or unlink in it is durable.
///
/// Errors: the directory cannot be opened or synced.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Create `dir` and its missing parents with mode 0700 (before the umask); existing directories are left as
/// they are.
///
/// Errors: the I/O error of the first directory that cannot be created (e.g. a parent is a file).
pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    if !dir.is_dir() {
        fault::check_create(dir)?;
    }
    DirBuilder::new().recursive(true).mode(PRIVATE_DIR_MODE).create(dir)
}

/// Create `dir` and its missing parents with the umask's default mode (`0777` less the umask), as a user's own tools
/// would (an export destination the user named); existing directories are left as they are.
///
/// Errors: the I/O error of the first directory that cannot be created (e.g. a parent is a file).
pub fn create_dir_all(dir: &Path) -> io::Result<()> {
    if !dir.is_dir() {
        fault::check_create(dir)?;
    }
    DirBuilder::new().recursive(true).create(dir)
}

/// Create the one directory `dir` with the umask's default mode (`0777` less the umask), as a user's own tools
/// would (directories in a user's project tree). Its parent must exist.
///
/// Errors: as [`std::fs::create_dir`] (`AlreadyExists` when something is there).
pub fn create_dir(dir: &Path) -> io::Result<()> {
    fault::check_create(dir)?;
    DirBuilder::new().create(dir)
}

/// Create `path` as an empty file with mode 0600 when it is missing (`O_CREAT|O_EXCL|O_NOFOLLOW`); an existing
/// file (or symlink) is left alone. Returns whether the file was created. An empty file is a valid empty SQLite
/// database, so this gives the index its owner-only mode before SQLite opens it.
///
/// Errors: the I/O error of creating the file (other than `AlreadyExists`).
pub fn create_private_file(path: &Path) -> io::Result<bool> {
    if !path.exists() {
        fault::check_create(path)?;
    }
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(PRIVATE_FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// Block until the exclusive advisory lock (`flock`, std [`File::lock`]) on `lock_path` is held; the lock file is
/// created with mode 0600 when missing (its directory must exist) and stays on disk. The lock is released when the
/// returned file is closed (dropped).
///
/// Errors: the I/O error of opening or locking.
pub fn lock_exclusive(lock_path: &Path) -> io::Result<File> {
    fault::check_create(lock_path)?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(PRIVATE_FILE_MODE)
        .open(lock_path)?;
    file.lock()?;
    Ok(file)
}

/// What a file's content change is noticed by without reading it: its size, change time and inode number (see the
/// module invariants). Two stamps of one path are equal when nothing has written to the file in between, except for
/// a same-size rewrite in place within one tick of the kernel's file clock (a few milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileStamp {
    /// Size in bytes.
    pub size: i64,
    /// Change time (ctime), nanoseconds since the Unix epoch.
    pub changed_ns: i64,
    /// Inode number (as stored: the bits of the `u64`).
    pub inode: i64,
}

impl FileStamp {
    /// The stamp of a file's metadata (`std::fs::metadata`, or a directory entry's metadata).
    pub fn of(meta: &std::fs::Metadata) -> FileStamp {
        FileStamp {
            size: i64::try_from(meta.size()).unwrap_or(i64::MAX),
            changed_ns: meta
                .ctime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.ctime_nsec()),
            inode: i64::from_ne_bytes(meta.ino().to_ne_bytes()),
        }
    }

    /// The stamp of the file at `path` (symlinks not followed).
    ///
    /// Errors: the file cannot be stat'ed (`NotFound` when it is gone).
    pub fn read(path: &Path) -> io::Result<FileStamp> {
        std::fs::symlink_metadata(path).map(|m| FileStamp::of(&m))
    }
}

/// How long a dead writer's temp file is left alone before [`remove_stale_temp_file`] removes it: a writer in
/// another pid namespace sharing the directory (a container) cannot be told alive from dead by its pid, and its temp
/// file lives for milliseconds.
pub const TEMP_FILE_GRACE: Duration = Duration::from_secs(60);

/// The pid of the process that wrote the temp file named `name`, when `name` has the shape [`atomic_write`] gives
/// temp files: `.<file name>.<pid>-<n>.tmp`. `None` for any other name.
pub fn temp_file_writer(name: &OsStr) -> Option<u32> {
    let name = name.to_str()?;
    let inner = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (target, tag) = inner.rsplit_once('.')?;
    let (pid, n) = tag.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if target.is_empty() || !digits(pid) || !digits(n) {
        return None;
    }
    pid.parse().ok()
}

/// Whether a process with this pid exists (in this pid namespace): `kill(pid, 0)` (rustix, no signal sent). Errors
/// other than "no such process" (for example a process of another user) count as alive; a pid no process can have
/// (0, or past `i32::MAX`) is not alive.
pub fn process_alive(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else {
        return false;
    };
    rustix::process::test_kill_process(pid) != Err(rustix::io::Errno::SRCH)
}

/// Remove `path` when it is a temp file of [`atomic_write`] ([`temp_file_writer`]) whose writer is gone
/// ([`process_alive`]) and which was last written at least [`TEMP_FILE_GRACE`] before `now`. Returns whether it was
/// removed; anything else (another name, a live or recent writer, a symlink, a file already gone) is left as it is.
///
/// Errors: the file cannot be stat'ed or removed (other than being gone already).
pub fn remove_stale_temp_file(path: &Path, now: SystemTime) -> io::Result<bool> {
    let Some(pid) = path.file_name().and_then(temp_file_writer) else {
        return Ok(false);
    };
    if pid == std::process::id() || process_alive(pid) {
        return Ok(false);
    }
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    // Age by the last write (mtime): a writer's temp file is written once, then renamed away.
    let written = meta.modified()?;
    let age = now.duration_since(written).unwrap_or(Duration::ZERO);
    if !meta.file_type().is_file() || age < TEMP_FILE_GRACE {
        return Ok(false);
    }
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Open (creating with mode 0600 when missing) the lock file `lock_path` for [`try_lock_exclusive`] and
/// [`lock_shared`]: never through a symlink (`O_NOFOLLOW`, `ELOOP`), not inherited by child processes.
fn open_lock_file(lock_path: &Path) -> io::Result<File> {
    fault::check_create(lock_path)?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(PRIVATE_FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(lock_path)?;
    Ok(file)
}

/// Take the exclusive advisory lock on `lock_path` without waiting (std [`File::try_lock`]): `Ok(Some(file))` when
/// it is now held (released when the file is dropped), `Ok(None)` when another holder has it. The lock file is
/// created with mode 0600 when missing (its directory must exist) and stays on disk.
///
/// Errors: the I/O error of opening or locking (other than "held elsewhere").
pub fn try_lock_exclusive(lock_path: &Path) -> io::Result<Option<File>> {
    let file = open_lock_file(lock_path)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Block until the shared advisory lock (`flock`, std [`File::lock_shared`]) on `lock_path` is held: any number of
/// shared holders at once, none while an exclusive holder ([`lock_exclusive`], [`try_lock_exclusive`]) has it. The
/// lock file is created with mode 0600 when missing (its directory must exist), opened with `O_NOFOLLOW` (a symlink
/// at `lock_path` is refused) and stays on disk. The lock is released when the returned file is dropped.
///
/// Errors: the I/O error of opening or locking (`ELOOP` for a symlink).
pub fn lock_shared(lock_path: &Path) -> io::Result<File> {
    let file = open_lock_file(lock_path)?;
    file.lock_shared()?;
    Ok(file)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "test setup writes fixture files directly")]
mod tests {

    #[test]
    fn atomic_write_at_replaces_within_the_directory_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let handle = File::open(dir.path()).expect("open dir");
        atomic_write_at(&handle, OsStr::new("a.md"), b"one", FileMode::UmaskDefault).expect("write");
        atomic_write_at(&handle, OsStr::new("a.md"), b"two", FileMode::Exact(0o640)).expect("replace");
        assert_eq!(std::fs::read(dir.path().join("a.md")).expect("read"), b"two");
        let mode = std::fs::metadata(dir.path().join("a.md"))
            .expect("meta")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o640);
        for bad in ["", ".", "..", "x/y"] {
            assert!(
                atomic_write_at(&handle, OsStr::new(bad), b"x", FileMode::Private).is_err(),
                "{bad:?}"
            );
        }
        create_dir_at(&handle, OsStr::new("sub")).expect("mkdir");
        assert!(dir.path().join("sub").is_dir());
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 2, "no temp file left: {names:?}");
    }
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    fn names(dir: &Path) -> Vec<OsString> {
        let mut v: Vec<_> = fs::read_dir(dir)
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        v.sort();
        v
    }

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).expect("stat").permissions().mode() & 0o7777
    }

    #[test]
    fn create_new_never_replaces_anything() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("agent.md");
        create_new_with(&p, b"first", FileMode::Exact(0o640)).expect("create");
        assert_eq!(fs::read(&p).expect("read"), b"first");
        assert_eq!(mode(&p), 0o640);
        let e = create_new_with(&p, b"second", FileMode::UmaskDefault).expect_err("exists");
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&p).expect("read"), b"first");
        let link = d.path().join("link.md");
        symlink(d.path().join("missing"), &link).expect("symlink");
        let e = create_new_with(&link, b"x", FileMode::UmaskDefault).expect_err("a dangling link is something");
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert!(!d.path().join("missing").exists(), "the link was not followed");
        assert_eq!(
            names(d.path()),
            [OsString::from("agent.md"), OsString::from("link.md")],
            "no temp left"
        );
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("k.md");
        atomic_write(&p, b"one").expect("first write");
        atomic_write(&p, b"two").expect("second write");
        assert_eq!(fs::read(&p).expect("read"), b"two");
        assert_eq!(names(d.path()), vec![OsString::from("k.md")]);
        assert_eq!(mode(&p), 0o600);
    }

    #[test]
    fn atomic_write_failure_cleans_up() {
        let d = tempfile::tempdir().expect("tempdir");
        // Target is a non-empty directory: rename fails; no temp file may remain.
        let p = d.path().join("k.md");
        fs::create_dir(&p).expect("mkdir");
        fs::write(p.join("x"), b"x").expect("write");
        assert!(atomic_write(&p, b"data").is_err());
        assert_eq!(names(d.path()), vec![OsString::from("k.md")]);
    }

    #[test]
    fn private_mode_is_exact_whatever_the_old_mode() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("settings.json");
        fs::write(&p, b"{}").expect("write");
        fs::set_permissions(&p, Permissions::from_mode(0o644)).expect("chmod");
        atomic_write(&p, b"{\"a\": 1}").expect("write");
        assert_eq!(mode(&p), 0o600);
    }

    #[test]
    fn exact_mode_is_applied_and_directory_handle_is_used() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("AGENTS.md");
        let dir = File::open(d.path()).expect("open dir");
        atomic_write_with(
            &p,
            b"x\n",
            WriteOptions::with_mode(FileMode::Exact(0o640)).sync_dir_through(&dir),
        )
        .expect("write");
        assert_eq!(mode(&p), 0o640);
        atomic_write_with(&p, b"y\n", WriteOptions::with_mode(FileMode::UmaskDefault)).expect("write");
        assert_eq!(fs::read(&p).expect("read"), b"y\n");
        assert_eq!(mode(&p) & 0o600, 0o600, "owner can read and write");
        assert_eq!(mode(&p) & 0o111, 0, "never executable");
    }

    #[test]
    fn a_symlink_at_the_target_is_replaced_not_written_through() {
        let d = tempfile::tempdir().expect("tempdir");
        let outside = d.path().join("outside.txt");
        fs::write(&outside, b"keep").expect("write");
        let p = d.path().join("k.md");
        symlink(&outside, &p).expect("symlink");
        atomic_write(&p, b"new").expect("write");
        assert_eq!(fs::read(&outside).expect("read"), b"keep");
        assert!(!fs::symlink_metadata(&p).expect("stat").file_type().is_symlink());
        assert_eq!(fs::read(&p).expect("read"), b"new");
    }

    #[test]
    fn concurrent_writers_in_one_process_never_collide_on_the_temp_name() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("k.md");
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let p = p.clone();
                std::thread::spawn(move || {
                    for j in 0..25 {
                        atomic_write(&p, format!("{i}-{j}").as_bytes()).expect("write");
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("thread");
        }
        assert_eq!(names(d.path()), vec![OsString::from("k.md")]);
    }

    #[test]
    fn private_dirs_and_lock_files_are_owner_only() {
        let d = tempfile::tempdir().expect("tempdir");
        let dir = d.path().join("a").join("b");
        create_private_dir_all(&dir).expect("mkdir");
        assert_eq!(mode(&d.path().join("a")), 0o700);
        assert_eq!(mode(&dir), 0o700);
        create_private_dir_all(&dir).expect("existing is fine");
        let lock = dir.join(".k.lock");
        let held = lock_exclusive(&lock).expect("lock");
        assert_eq!(mode(&lock), 0o600);
        let probe = OpenOptions::new().write(true).open(&lock).expect("open");
        assert!(
            matches!(probe.try_lock(), Err(fs::TryLockError::WouldBlock)),
            "lock must be exclusive"
        );
        drop(held);
        probe.try_lock().expect("free after drop");
    }

    #[test]
    fn private_file_is_created_once_and_owner_only() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("db.sqlite");
        assert!(create_private_file(&p).expect("create"));
        assert_eq!(mode(&p), 0o600);
        fs::write(&p, b"kept").expect("write");
        assert!(!create_private_file(&p).expect("exists"));
        assert_eq!(fs::read(&p).expect("read"), b"kept");
    }

    #[test]
    fn temp_file_names_name_their_writer() {
        for (name, pid) in [
            (".k.md.123-0.tmp", Some(123)),
            (".index.md.4567-89.tmp", Some(4567)),
            (".settings.json.1-2.tmp", Some(1)),
            (".a.b.c.77-1.tmp", Some(77)),
            ("k.md", None),
            (".k.lock", None),
            (".k.md.tmp", None),
            (".k.md.12.tmp", None),
            (".k.md.x-1.tmp", None),
            (".k.md.1-.tmp", None),
            ("..1-2.tmp", None),
            ("k.md.1-2.tmp", None),
        ] {
            assert_eq!(temp_file_writer(OsStr::new(name)), pid, "{name}");
        }
        // The temp names this module writes parse back to this process.
        let name = format!(
            ".k.md.{}-{}.tmp",
            std::process::id(),
            TMP_COUNTER.load(Ordering::Relaxed)
        );
        assert_eq!(temp_file_writer(OsStr::new(&name)), Some(std::process::id()));
    }

    #[test]
    fn stale_temp_files_go_once_their_writer_is_dead_and_they_are_old() {
        let d = tempfile::tempdir().expect("tempdir");
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let dead = child.id();
        child.wait().expect("wait");
        let stale = d.path().join(format!(".k.md.{dead}-0.tmp"));
        let mine = d.path().join(format!(".k.md.{}-0.tmp", std::process::id()));
        let other = d.path().join("notes.tmp");
        for p in [&stale, &mine, &other] {
            fs::write(p, b"x").expect("write");
        }
        let now = SystemTime::now();
        assert!(
            !remove_stale_temp_file(&stale, now).expect("young"),
            "inside the grace period"
        );
        let later = now + TEMP_FILE_GRACE + Duration::from_secs(1);
        assert!(remove_stale_temp_file(&stale, later).expect("old"));
        assert!(!stale.exists());
        assert!(!remove_stale_temp_file(&stale, later).expect("gone"), "already gone");
        assert!(!remove_stale_temp_file(&mine, later).expect("alive"));
        assert!(!remove_stale_temp_file(&other, later).expect("not ours"));
        assert!(mine.exists() && other.exists());
        assert!(process_alive(std::process::id()));
        assert!(!process_alive(dead));
    }

    #[test]
    fn stamps_change_with_content_and_replacement() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("k.md");
        atomic_write(&p, b"one").expect("write");
        let first = FileStamp::read(&p).expect("stamp");
        assert_eq!(first, FileStamp::read(&p).expect("stamp"), "unchanged file, same stamp");
        assert_eq!(first.size, 3);
        atomic_write(&p, b"two").expect("replace");
        let replaced = FileStamp::read(&p).expect("stamp");
        assert_ne!(first, replaced, "an atomic replace is a new inode");
        fs::write(&p, b"three").expect("in place");
        assert_ne!(
            replaced,
            FileStamp::read(&p).expect("stamp"),
            "an in-place write changes size and ctime"
        );
        assert_eq!(
            FileStamp::read(&d.path().join("gone")).expect_err("missing").kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn batch_writes_replace_every_file_and_leave_no_temp() {
        let d = tempfile::tempdir().expect("tempdir");
        let sub = d.path().join("sub");
        create_dir_all(&sub).expect("mkdir");
        create_dir_all(&sub).expect("existing is fine");
        let a = d.path().join("a.md");
        let b = sub.join("b.md");
        fs::write(&a, b"old").expect("write");
        atomic_write_batch(&[(&a, b"one"), (&b, b"two")], FileMode::Exact(0o644)).expect("batch");
        assert_eq!(fs::read(&a).expect("read"), b"one");
        assert_eq!(fs::read(&b).expect("read"), b"two");
        assert_eq!((mode(&a), mode(&b)), (0o644, 0o644));
        assert_eq!(names(d.path()), vec![OsString::from("a.md"), OsString::from("sub")]);
        assert_eq!(names(&sub), vec![OsString::from("b.md")]);
        atomic_write_batch(&[], FileMode::Private).expect("an empty batch is fine");
    }

    #[test]
    fn a_failed_batch_rename_keeps_earlier_files_and_removes_every_temp() {
        let d = tempfile::tempdir().expect("tempdir");
        let a = d.path().join("a.md");
        let blocked = d.path().join("b.md");
        fs::create_dir(&blocked).expect("mkdir");
        fs::write(blocked.join("x"), b"x").expect("write");
        let c = d.path().join("c.md");
        let err = atomic_write_batch(&[(&a, b"1"), (&blocked, b"2"), (&c, b"3")], FileMode::Private);
        assert!(err.is_err(), "renaming over a non-empty directory fails");
        assert_eq!(fs::read(&a).expect("read"), b"1", "renamed before the failure");
        assert!(!c.exists(), "not renamed after the failure");
        assert_eq!(names(d.path()), vec![OsString::from("a.md"), OsString::from("b.md")]);
        let missing = d.path().join("no-such-dir").join("x.md");
        assert!(atomic_write_batch(&[(&c, b"3"), (&missing, b"4")], FileMode::Private).is_err());
        assert_eq!(names(d.path()), vec![OsString::from("a.md"), OsString::from("b.md")]);
    }

    #[test]
    fn create_dir_makes_one_directory_and_reports_existing() {
        let d = tempfile::tempdir().expect("tempdir");
        let dir = d.path().join(".kiro");
        create_dir(&dir).expect("mkdir");
        assert!(dir.is_dir());
        assert_eq!(
            create_dir(&dir).expect_err("exists").kind(),
            io::ErrorKind::AlreadyExists
        );
        assert!(create_dir(&d.path().join("x").join("y")).is_err(), "parent must exist");
    }

    #[test]
    fn shared_locks_coexist_and_exclude_the_exclusive_holder() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join(".audit.lock");
        let a = lock_shared(&p).expect("shared");
        let b = lock_shared(&p).expect("a second shared holder");
        assert_eq!(mode(&p), 0o600);
        assert!(
            try_lock_exclusive(&p).expect("no error").is_none(),
            "readers exclude the writer"
        );
        drop((a, b));
        let x = try_lock_exclusive(&p).expect("lock").expect("free");
        let probe = OpenOptions::new().read(true).open(&p).expect("open");
        assert!(
            matches!(probe.try_lock_shared(), Err(fs::TryLockError::WouldBlock)),
            "the writer excludes readers"
        );
        drop(x);
        let link = d.path().join(".link.lock");
        std::os::unix::fs::symlink(&p, &link).expect("symlink");
        assert!(lock_shared(&link).is_err(), "a symlink is not followed");
    }

    #[test]
    fn try_lock_fails_at_once_while_held_and_succeeds_after() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join(".heal.lock");
        let held = try_lock_exclusive(&p).expect("lock").expect("free");
        assert_eq!(mode(&p), 0o600);
        assert!(
            try_lock_exclusive(&p).expect("no error").is_none(),
            "held: refused at once"
        );
        drop(held);
        assert!(try_lock_exclusive(&p).expect("lock").is_some(), "released");
        let target = d.path().join("target");
        let link = d.path().join(".link.lock");
        symlink(&target, &link).expect("symlink");
        assert!(try_lock_exclusive(&link).is_err(), "a symlink is not followed");
        assert!(!target.exists());
    }
}
