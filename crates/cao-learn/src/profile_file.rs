//! Reading and writing a profile file for promotion, and installing a built-in profile (spec 004 "Safety
//! design"; spec/reference-facts.md "writes are atomic, through symlinks to the target, keeping the file mode").
//!
//! Invariants:
//! - A profile is edited at its real path: a symlink is resolved first, so the link stays a link and its target
//!   gets the new bytes (replacing the link itself would orphan what it points to).
//! - Writes go through `cao_core::fs` (temp file beside the target, fsync, rename, directory fsync) with the
//!   target's own permission bits, so a 0600 profile stays 0600.
//! - Promotion never creates a profile file; [`install`] never replaces one.

use crate::error::LearnError;
use crate::profile::{MAX_PROFILE_BYTES, read_text};
use cao_core::fs::{FileMode, WriteOptions, atomic_write_with, create_dir_all, create_new_with};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A profile file read for editing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileFile {
    /// The path as given (may be a symlink).
    pub path: PathBuf,
    /// The real file (symlinks resolved), which a write replaces.
    pub real_path: PathBuf,
    /// Its text.
    pub content: String,
    /// Its permission bits (`0o7777` mask).
    pub mode: u32,
}

/// Read the profile at `path` for editing (at most 1 MiB of UTF-8, a regular file after following symlinks).
///
/// Errors: [`LearnError::Profile`] when it does not exist (promotion never creates profile files), is not a
/// regular file, is too large or not UTF-8; [`LearnError::Io`] for other read failures.
pub fn read(path: &Path) -> Result<ProfileFile, LearnError> {
    let real_path = std::fs::canonicalize(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => LearnError::Profile {
            path: path.to_owned(),
            reason: "does not exist (promotion never creates profile files; create it, or copy a built-in with \
                     `cao agents install <name>`)"
                .to_owned(),
        },
        _ => LearnError::Io {
            context: format!("resolving agent profile {}", path.display()),
            source: e,
        },
    })?;
    let meta = std::fs::metadata(&real_path).map_err(LearnError::io(format!("reading {}", real_path.display())))?;
    if !meta.is_file() || meta.len() > MAX_PROFILE_BYTES {
        return Err(LearnError::Profile {
            path: path.to_owned(),
            reason: "not a regular file of at most 1 MiB".to_owned(),
        });
    }
    let content = read_text(&real_path)?;
    Ok(ProfileFile {
        path: path.to_owned(),
        real_path,
        mode: meta.permissions().mode() & 0o7777,
        content,
    })
}

/// Replace `file`'s real path with `content`, atomically, keeping its permission bits.
///
/// Errors: [`LearnError::Io`] naming the file; the old file is untouched then.
pub fn write(file: &ProfileFile, content: &str) -> Result<(), LearnError> {
    atomic_write_with(
        &file.real_path,
        content.as_bytes(),
        WriteOptions::with_mode(FileMode::Exact(file.mode)),
    )
    .map_err(LearnError::io(format!(
        "writing agent profile {}",
        file.real_path.display()
    )))
}

/// The promotion writer: apply itemized deltas ([`crate::learned::apply_deltas`]) to the profile at `path` and
/// write it back ([`write()`]) when its block changes; an unchanged block leaves the file untouched. Returns the
/// file as read and the edit. Callers that may race another promoter hold a lock around the call.
///
/// Errors: those of [`read`], [`crate::learned::apply_deltas`] (nothing written) and [`write()`].
pub fn apply(
    path: &Path,
    add: &[(String, String)],
    remove: &[String],
) -> Result<(ProfileFile, crate::learned::Edited), LearnError> {
    let file = read(path)?;
    let edited = crate::learned::apply_deltas(&file.content, add, remove)?;
    if let Some(new) = &edited.content {
        write(&file, new)?;
    }
    Ok((file, edited))
}

/// Write `text` as `<dir>/<name>.md`, creating `dir` (with the umask's mode) when missing, and never replacing an
/// existing file. Returns the path written.
///
/// Errors: [`LearnError::Profile`] when the file already exists; [`LearnError::Io`] otherwise.
pub fn install(dir: &Path, name: &str, text: &str) -> Result<PathBuf, LearnError> {
    crate::profile::validate_name(name)?;
    create_dir_all(dir).map_err(LearnError::io(format!("creating agent directory {}", dir.display())))?;
    let path = dir.join(format!("{name}.md"));
    match create_new_with(&path, text.as_bytes(), FileMode::UmaskDefault) {
        Ok(()) => Ok(path),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(LearnError::Profile {
            path,
            reason: "already exists; it was not overwritten (remove or rename it first)".to_owned(),
        }),
        Err(e) => Err(LearnError::Io {
            context: format!("writing {}", path.display()),
            source: e,
        }),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "test setup writes fixture files directly")]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn writes_go_through_symlinks_and_keep_the_mode() {
        let d = tempfile::tempdir().expect("tempdir");
        let real = d.path().join("real.md");
        std::fs::write(&real, "old\r\n").expect("write");
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let link = d.path().join("worker.md");
        symlink(&real, &link).expect("symlink");
        let f = read(&link).expect("read");
        assert_eq!((f.content.as_str(), f.mode), ("old\r\n", 0o600));
        write(&f, "new\r\n").expect("write");
        assert!(
            std::fs::symlink_metadata(&link)
                .expect("lstat")
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).expect("read"), "new\r\n");
        assert_eq!(
            std::fs::metadata(&real).expect("stat").permissions().mode() & 0o7777,
            0o600
        );
    }

    #[test]
    fn missing_profiles_are_not_created_and_installs_never_overwrite() {
        let d = tempfile::tempdir().expect("tempdir");
        let e = read(&d.path().join("nope.md")).expect_err("missing");
        assert!(e.to_string().contains("does not exist"), "{e}");
        assert!(!d.path().join("nope.md").exists());
        let store = d.path().join("agent-store");
        let p = install(&store, "retrospector", "one").expect("install");
        assert_eq!(std::fs::read_to_string(&p).expect("read"), "one");
        let e = install(&store, "retrospector", "two").expect_err("exists");
        assert!(e.to_string().contains("not overwritten"), "{e}");
        assert_eq!(std::fs::read_to_string(&p).expect("read"), "one");
    }
}
