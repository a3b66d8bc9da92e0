//! OKF bundles on disk: reading a bundle (a directory or a `.tar.gz` archive) as untrusted input, within hard
//! limits, and packing a rendered bundle into a reproducible `.tar.gz` (spec 000 "cao memory export/import";
//! spec/reference-facts.md "OKF bundles"). What a bundle's files mean is `cao-okf`'s; this module only gets their
//! names, kinds and bytes.
//!
//! Reading ([`read_bundle_selecting`]) never follows a link, never extracts anything and never writes: a directory is walked
//! without following symlinks (a symlink is reported as [`cao_okf::EntryKind::Link`], a directory, device, fifo or
//! socket as `NotRegular`); an archive is decompressed as a stream and its entries are read into memory. Only the
//! bytes of files that can be topics (a valid root path `<key>.md`, as [`cao_okf::path::classify_bundle_path`]
//! decides) are read; everything else is passed on by name and kind alone.
//!
//! Limits (a bundle over one is refused as a whole, before anything is planned, with a message naming the limit):
//! at most [`MAX_BUNDLE_ENTRIES`] paths (archive headers included), at most [`MAX_BUNDLE_BYTES`] of file data in
//! total (the sizes the archive's headers declare, checked before the data is read or skipped, so a gzip bomb
//! is refused after its first header), archive extension headers (long names, PAX records) of at most
//! [`MAX_EXTENSION_BYTES`]. A single file over [`MAX_TOPIC_FILE_BYTES`] is not read and becomes a per-file
//! rejection ([`cao_okf::EntryKind::TooLarge`]): a 1 GiB sparse entry costs one header. Archive entries that are
//! hard or symbolic links, devices and fifos are never materialised; a PAX `size` record (which would make
//! readers disagree about where an entry ends) refuses the archive.
//!
//! Packing ([`pack_tar_gz`]): regular-file entries only (no directory entries), in path order, mode 0644, owner
//! and group 0 with empty names, mtime 0, GNU headers, gzip with mtime 0 and no file name: the same files give the
//! same archive bytes, as the reference's `export_bundle_to_tar` intends.

use cao_okf::path::{BundlePathKind, classify_bundle_path, validate_bundle_path};
use cao_okf::{BundleEntry, EntryKind};
use cao_store::MemoryError;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Most paths a bundle may hold (directory entries and archive headers included).
pub const MAX_BUNDLE_ENTRIES: usize = 500_000;
/// Most bytes of file data a bundle may hold in total (declared sizes; 512 MiB).
pub const MAX_BUNDLE_BYTES: u64 = 512 * 1024 * 1024;
/// Largest file read as a topic (1 MiB; a topic's content is at most 64 KiB and its frontmatter at most 64 KiB).
pub const MAX_TOPIC_FILE_BYTES: u64 = 1024 * 1024;
/// Largest archive extension header (GNU long name or link, PAX record set; 64 KiB).
pub const MAX_EXTENSION_BYTES: u64 = 64 * 1024;

/// The limits a bundle is read within (the constants above; tests use smaller ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// [`MAX_BUNDLE_ENTRIES`].
    pub entries: usize,
    /// [`MAX_BUNDLE_BYTES`].
    pub total_bytes: u64,
    /// [`MAX_TOPIC_FILE_BYTES`].
    pub file_bytes: u64,
    /// [`MAX_EXTENSION_BYTES`].
    pub extension_bytes: u64,
}

impl Limits {
    /// The limits every import uses.
    pub const DEFAULT: Limits = Limits {
        entries: MAX_BUNDLE_ENTRIES,
        total_bytes: MAX_BUNDLE_BYTES,
        file_bytes: MAX_TOPIC_FILE_BYTES,
        extension_bytes: MAX_EXTENSION_BYTES,
    };
}

/// One path of a bundle as read: owned counterpart of [`cao_okf::BundleEntry`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadEntry {
    /// The raw relative path (a walk's relative path or an archive entry name).
    pub path: Vec<u8>,
    /// What is there.
    pub kind: ReadKind,
}

/// What a bundle path holds, with the bytes of files that can be topics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadKind {
    /// A regular file: its bytes when it can be a topic, else empty (never read).
    File(Vec<u8>),
    /// A symlink or hard link.
    Link,
    /// A directory, device, fifo or socket.
    NotRegular,
    /// A file over [`MAX_TOPIC_FILE_BYTES`] (its size), not read.
    TooLarge(u64),
}

impl ReadEntry {
    /// The borrowed form `cao-okf` plans.
    pub fn as_bundle_entry(&self) -> BundleEntry<'_> {
        BundleEntry {
            path: &self.path,
            kind: match &self.kind {
                ReadKind::File(bytes) => EntryKind::File(bytes),
                ReadKind::Link => EntryKind::Link,
                ReadKind::NotRegular => EntryKind::NotRegular,
                ReadKind::TooLarge(n) => EntryKind::TooLarge(*n),
            },
        }
    }
}

/// A whole bundle as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadBundle {
    /// Every path found (order of the walk or the archive).
    pub entries: Vec<ReadEntry>,
    /// Whether the source was an archive (`true`) or a directory.
    pub archive: bool,
}

/// Whether the bytes of `path` are needed: only a valid root `<key>.md` path can become a topic.
fn wanted(path: &[u8]) -> bool {
    validate_bundle_path(path).is_ok_and(|rel| matches!(classify_bundle_path(&rel), BundlePathKind::Topic(_)))
}

fn refuse(source: &Path, why: impl std::fmt::Display) -> MemoryError {
    MemoryError::Bundle(format!("{}: {why}", source.display()))
}

/// Read the whole bundle at `source` within `limits`, every topic file's bytes included (tests; an import reads a
/// bundle a part at a time with [`read_bundle_selecting`]).
#[cfg(test)]
pub fn read_bundle_within(source: &Path, limits: Limits) -> Result<ReadBundle, MemoryError> {
    read_bundle_selecting(source, limits, &mut |_: usize, _: &[u8], _: u64| true)
}

/// What a read does with the topic files of a bundle. A streaming import reads a bundle more than once, fetching
/// the bytes of a bounded part of its topic files each time and handing each on as soon as it is read.
pub trait Fetch {
    /// Whether to read the bytes of a topic file: called with the entry's position in the bundle (its index in
    /// [`ReadBundle::entries`]), its path and its declared size, for every regular file whose path can be a topic
    /// (a valid root `<key>.md`); `false` leaves it as `ReadKind::File` with no bytes.
    fn select(&mut self, position: usize, path: &[u8], size: u64) -> bool;

    /// Called with every entry read, at its position, before it is added to the result; what it returns is added
    /// (the default keeps the entry as read; a streaming reader takes the bytes and leaves an empty `File`).
    fn take(&mut self, _position: usize, entry: ReadEntry) -> ReadEntry {
        entry
    }
}

impl<F: FnMut(usize, &[u8], u64) -> bool> Fetch for F {
    fn select(&mut self, position: usize, path: &[u8], size: u64) -> bool {
        self(position, path, size)
    }
}

/// Read the bundle at `source` (a directory is walked, anything else is read as a gzip-compressed tar archive),
/// fetching only the bytes of the topic files `select` picks (the others come back as `File` without bytes, a
/// topic file over the per-file cap as `TooLarge` when picked). The limits apply to the whole bundle whatever is
/// picked.
///
/// Errors: [`MemoryError::Bundle`] when the source does not exist or cannot be read, is not a gzip tar archive,
/// or is over a limit of the module documentation.
pub fn read_bundle_selecting(source: &Path, limits: Limits, select: &mut dyn Fetch) -> Result<ReadBundle, MemoryError> {
    let meta = std::fs::metadata(source).map_err(|e| refuse(source, format!("cannot read the bundle: {e}")))?;
    if meta.is_dir() {
        read_dir_bundle(source, limits, select)
    } else if meta.is_file() {
        let file = File::open(source).map_err(|e| refuse(source, format!("cannot open the archive: {e}")))?;
        read_tar_gz_selecting(source, BufReader::new(file), limits, select)
    } else {
        Err(refuse(source, "not a directory or a .tar.gz file"))
    }
}

/// Walk a bundle directory without following symlinks (the root itself may be one).
fn read_dir_bundle(root: &Path, limits: Limits, select: &mut dyn Fetch) -> Result<ReadBundle, MemoryError> {
    let mut entries = Vec::new();
    let mut walked = 0usize;
    let mut total: u64 = 0;
    for item in walkdir::WalkDir::new(root).follow_links(false).min_depth(1) {
        let item = item.map_err(|e| refuse(root, format!("cannot read the bundle directory: {e}")))?;
        walked += 1;
        if walked > limits.entries {
            return Err(refuse(
                root,
                format!(
                    "the bundle has more than {} paths; split it into several bundles",
                    limits.entries
                ),
            ));
        }
        let rel = item.path().strip_prefix(root).unwrap_or(item.path());
        let path = rel.as_os_str().as_bytes().to_vec();
        let ft = item.file_type();
        let kind = if ft.is_symlink() {
            ReadKind::Link
        } else if ft.is_dir() {
            if !path.ends_with(b".md") {
                continue;
            }
            ReadKind::NotRegular
        } else if ft.is_file() {
            let size = item
                .metadata()
                .map_err(|e| refuse(root, format!("cannot read {}: {e}", rel.display())))?
                .len();
            total = total.saturating_add(size);
            if total > limits.total_bytes {
                return Err(refuse(root, over_total(limits)));
            }
            if !(wanted(&path) && select.select(entries.len(), &path, size)) {
                ReadKind::File(Vec::new())
            } else if size > limits.file_bytes {
                ReadKind::TooLarge(size)
            } else {
                read_regular_file(item.path(), limits.file_bytes)
                    .map_err(|e| refuse(root, format!("cannot read {}: {e}", rel.display())))?
            }
        } else {
            ReadKind::NotRegular
        };
        entries.push(select.take(entries.len(), ReadEntry { path, kind }));
    }
    Ok(ReadBundle {
        entries,
        archive: false,
    })
}

fn over_total(limits: Limits) -> String {
    format!(
        "the bundle holds more than {} of file data; split it into several bundles",
        human_bytes(limits.total_bytes)
    )
}

/// `n` bytes as `<n> MiB` / `<n> KiB` when exact, else `<n> bytes`.
fn human_bytes(n: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= 1024 && n.is_multiple_of(1024) {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

/// Read one file of a directory bundle: opened without following a symlink and without blocking (a fifo swapped in
/// after the walk is not waited on), checked to be a regular file, read up to the per-file cap.
fn read_regular_file(path: &Path, cap: u64) -> io::Result<ReadKind> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path);
    let file = match file {
        Ok(f) => f,
        // ELOOP: it became a symlink after the walk.
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Ok(ReadKind::Link),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Ok(ReadKind::NotRegular);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0).min(1 << 16));
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Ok(ReadKind::TooLarge(bytes.len() as u64));
    }
    Ok(ReadKind::File(bytes))
}

/// Read a gzip-compressed tar archive from `reader` (see the module documentation). `source` names it in errors.
///
/// Errors: [`MemoryError::Bundle`].
#[cfg(test)]
pub fn read_tar_gz(source: &Path, reader: impl Read, limits: Limits) -> Result<ReadBundle, MemoryError> {
    read_tar_gz_selecting(source, reader, limits, &mut |_: usize, _: &[u8], _: u64| true)
}

/// [`read_tar_gz`], fetching only the topic files `select` picks ([`read_bundle_selecting`]).
///
/// Errors: [`MemoryError::Bundle`].
fn read_tar_gz_selecting(
    source: &Path,
    reader: impl Read,
    limits: Limits,
    select: &mut dyn Fetch,
) -> Result<ReadBundle, MemoryError> {
    let corrupt = |e: io::Error| {
        let msg = e.to_string();
        if msg.contains("gzip") || msg.contains("deflate") || msg.contains("corrupt") {
            refuse(source, format!("not a gzip-compressed tar archive ({msg})"))
        } else {
            refuse(source, format!("the archive is not a valid tar archive ({msg})"))
        }
    };
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(reader));
    let mut entries = Vec::new();
    let mut headers = 0usize;
    let mut total: u64 = 0;
    let mut long_name: Option<Vec<u8>> = None;
    for item in archive.entries().map_err(corrupt)?.raw(true) {
        let mut entry = item.map_err(corrupt)?;
        headers += 1;
        if headers > limits.entries {
            return Err(refuse(
                source,
                format!(
                    "the archive has more than {} entries; split it into several bundles",
                    limits.entries
                ),
            ));
        }
        let header = entry.header().clone();
        let stored = header.entry_size().map_err(corrupt)?;
        total = total.saturating_add(stored);
        if total > limits.total_bytes {
            return Err(refuse(source, over_total(limits)));
        }
        let ty = header.entry_type();
        if ty.is_gnu_longname() || ty.is_gnu_longlink() || ty.is_pax_local_extensions() || ty.is_pax_global_extensions()
        {
            if stored > limits.extension_bytes {
                return Err(refuse(
                    source,
                    format!(
                        "an archive extension header (long name or PAX records) is larger than {}",
                        human_bytes(limits.extension_bytes)
                    ),
                ));
            }
            let mut data = Vec::new();
            entry.read_to_end(&mut data).map_err(corrupt)?;
            if ty.is_gnu_longname() {
                while data.last() == Some(&0) {
                    data.pop();
                }
                long_name = Some(data);
            } else if ty.is_pax_local_extensions() {
                for ext in tar::PaxExtensions::new(&data) {
                    let ext = ext.map_err(corrupt)?;
                    match ext.key_bytes() {
                        b"path" => long_name = Some(ext.value_bytes().to_vec()),
                        b"size" => {
                            return Err(refuse(
                                source,
                                "the archive uses PAX size records, which this reader refuses",
                            ));
                        }
                        _ => {}
                    }
                }
            }
            continue;
        }
        let path = long_name.take().unwrap_or_else(|| header.path_bytes().into_owned());
        let kind = if ty.is_file() || ty.is_contiguous() {
            if !(wanted(&path) && select.select(entries.len(), &path, stored)) {
                ReadKind::File(Vec::new())
            } else if stored > limits.file_bytes {
                ReadKind::TooLarge(stored)
            } else {
                let mut data = Vec::with_capacity(usize::try_from(stored).unwrap_or(0));
                entry.read_to_end(&mut data).map_err(corrupt)?;
                ReadKind::File(data)
            }
        } else if ty.is_gnu_sparse() {
            // Never read: a sparse topic file is not something an exporter writes. Its logical size decides the
            // reason given.
            let real = header.as_gnu().and_then(|g| g.real_size().ok()).unwrap_or(stored);
            if real > limits.file_bytes {
                ReadKind::TooLarge(real)
            } else {
                ReadKind::NotRegular
            }
        } else if ty.is_symlink() || ty.is_hard_link() {
            ReadKind::Link
        } else if ty.is_dir() {
            let mut p = path;
            while p.last() == Some(&b'/') {
                p.pop();
            }
            if !p.ends_with(b".md") {
                continue;
            }
            entries.push(ReadEntry {
                path: p,
                kind: ReadKind::NotRegular,
            });
            continue;
        } else {
            ReadKind::NotRegular
        };
        entries.push(select.take(entries.len(), ReadEntry { path, kind }));
    }
    if long_name.is_some() {
        return Err(refuse(source, "the archive ends with a long name and no entry"));
    }
    Ok(ReadBundle { entries, archive: true })
}

/// Pack `files` (bundle path -> text) into a gzip-compressed tar archive, reproducibly (see the module
/// documentation).
///
/// Errors: [`MemoryError::Io`] when a path cannot be stored in a tar header (never for paths `cao-okf` renders).
pub fn pack_tar_gz(files: &BTreeMap<String, String>) -> Result<Vec<u8>, MemoryError> {
    let io_err = |e: io::Error| MemoryError::Io {
        context: "packing the bundle archive".into(),
        source: e,
    };
    let gz = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(Vec::new(), flate2::Compression::default());
    let mut builder = tar::Builder::new(gz);
    builder.mode(tar::HeaderMode::Deterministic);
    for (path, text) in files {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        header.set_username("").map_err(io_err)?;
        header.set_groupname("").map_err(io_err)?;
        builder
            .append_data(&mut header, path, text.as_bytes())
            .map_err(io_err)?;
    }
    let gz = builder.into_inner().map_err(io_err)?;
    gz.finish().map_err(io_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(files: &[(&str, &str)]) -> BTreeMap<String, String> {
        files.iter().map(|(p, t)| ((*p).to_owned(), (*t).to_owned())).collect()
    }

    #[test]
    fn packing_is_reproducible_and_reads_back() {
        let files = bundle(&[
            ("index.md", "# Index\n"),
            ("alpha.md", "---\ntype: user\n---\nA.\n"),
            ("sess-a/note.md", "x\n"),
            ("history/alpha.md", "## 2026-01-01T00:00:00Z\nold\n"),
        ]);
        let one = pack_tar_gz(&files).expect("pack");
        let two = pack_tar_gz(&files).expect("pack");
        assert_eq!(one, two, "same files, same bytes");
        let read = read_tar_gz(Path::new("b.tar.gz"), one.as_slice(), Limits::DEFAULT).expect("read");
        assert!(read.archive);
        let got: Vec<(String, ReadKind)> = read
            .entries
            .into_iter()
            .map(|e| (String::from_utf8(e.path).expect("utf8"), e.kind))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "alpha.md".to_owned(),
                    ReadKind::File(b"---\ntype: user\n---\nA.\n".to_vec())
                ),
                ("history/alpha.md".to_owned(), ReadKind::File(Vec::new())),
                ("index.md".to_owned(), ReadKind::File(Vec::new())),
                ("sess-a/note.md".to_owned(), ReadKind::File(Vec::new())),
            ],
            "only possible topics are read; paths in order"
        );
        let mut header = tar::Archive::new(flate2::read::GzDecoder::new(one.as_slice()));
        for e in header.entries().expect("entries") {
            let e = e.expect("entry");
            let h = e.header();
            assert_eq!(
                (h.mode().ok(), h.uid().ok(), h.gid().ok(), h.mtime().ok()),
                (Some(0o644), Some(0), Some(0), Some(0))
            );
        }
    }

    #[test]
    fn long_names_survive_packing() {
        let long = format!("{}/{}.md", "s".repeat(120), "k".repeat(60));
        let files = bundle(&[(&long, "x")]);
        let read = read_tar_gz(
            Path::new("b"),
            pack_tar_gz(&files).expect("pack").as_slice(),
            Limits::DEFAULT,
        )
        .expect("read");
        assert_eq!(read.entries[0].path, long.as_bytes());
    }

    #[test]
    fn not_a_gzip_archive_is_refused_whole() {
        for junk in [&b"plain text, not gzip"[..], b"", b"\x1f\x8b\x08\x00garbage"] {
            let err = read_tar_gz(Path::new("x.tar.gz"), junk, Limits::DEFAULT);
            match err {
                Err(MemoryError::Bundle(msg)) => assert!(msg.starts_with("x.tar.gz: "), "{msg}"),
                Ok(b) if junk.is_empty() => panic!("an empty file read as {b:?}"),
                other => panic!("{other:?}"),
            }
        }
    }

    use cao_testkit::tarball::{RawEntry, tar_gz};

    fn read(entries: &[RawEntry], limits: Limits) -> Result<Vec<(String, ReadKind)>, String> {
        read_tar_gz(Path::new("t.tar.gz"), tar_gz(entries).as_slice(), limits)
            .map(|b| {
                b.entries
                    .into_iter()
                    .map(|e| (String::from_utf8_lossy(&e.path).into_owned(), e.kind))
                    .collect()
            })
            .map_err(|e| e.to_string())
    }

    const TOPIC: &str = "---\ntype: project\n---\nx\n";

    #[test]
    fn archive_entries_are_named_typed_and_never_followed() {
        let got = read(
            &[
                RawEntry::file("../evil.md", TOPIC),
                RawEntry::file("/etc/evil.md", TOPIC),
                RawEntry::symlink("link.md", "/etc/passwd"),
                RawEntry::hardlink("hard.md", "/etc/shadow"),
                RawEntry::char_device("dev.md"),
                RawEntry::fifo("fifo.md"),
                RawEntry::dir("dir.md/"),
                RawEntry::dir("plain-dir/"),
                RawEntry::file(format!("{}/{}.md", "d".repeat(90), "k".repeat(40)), TOPIC),
                RawEntry::file("ok.md", TOPIC),
            ],
            Limits::DEFAULT,
        )
        .expect("read");
        let long = format!("{}/{}.md", "d".repeat(90), "k".repeat(40));
        assert_eq!(
            got,
            [
                ("../evil.md".to_owned(), ReadKind::File(Vec::new())),
                ("/etc/evil.md".to_owned(), ReadKind::File(Vec::new())),
                ("link.md".to_owned(), ReadKind::Link),
                ("hard.md".to_owned(), ReadKind::Link),
                ("dev.md".to_owned(), ReadKind::NotRegular),
                ("fifo.md".to_owned(), ReadKind::NotRegular),
                ("dir.md".to_owned(), ReadKind::NotRegular),
                (long, ReadKind::File(Vec::new())),
                ("ok.md".to_owned(), ReadKind::File(TOPIC.as_bytes().to_vec())),
            ],
            "unsafe names are passed on unread for cao-okf to reject; plain directories are structure"
        );
    }

    #[test]
    fn a_one_gib_sparse_entry_costs_one_header() {
        let got = read(
            &[RawEntry::sparse("big.md", 1 << 30), RawEntry::file("ok.md", TOPIC)],
            Limits::DEFAULT,
        )
        .expect("read");
        assert_eq!(got[0], ("big.md".to_owned(), ReadKind::TooLarge(1 << 30)));
        assert_eq!(got[1].0, "ok.md", "the entry after it is read normally");
    }

    #[test]
    fn limits_refuse_the_whole_archive_naming_the_limit() {
        let small = Limits {
            entries: 3,
            total_bytes: 1000,
            file_bytes: 100,
            extension_bytes: 200,
        };
        let four: Vec<RawEntry> = (0..4).map(|i| RawEntry::file(format!("k{i}.md"), TOPIC)).collect();
        let err = read(&four, small).expect_err("over the entry limit");
        assert!(err.contains("more than 3 entries"), "{err}");
        // A header claiming more data than the limit is refused before anything is read or skipped.
        let err = read(&[RawEntry::declared("bomb.md", 600 << 20)], Limits::DEFAULT).expect_err("too big");
        assert!(err.contains("more than 512 MiB of file data"), "{err}");
        let err = read(
            &[
                RawEntry::file("a.txt", "x".repeat(600)),
                RawEntry::file("b.txt", "y".repeat(600)),
            ],
            small,
        )
        .expect_err("total");
        assert!(err.contains("more than 1000 bytes"), "{err}");
        let got = read(&[RawEntry::file("big.md", "z".repeat(150))], small).expect("read");
        assert_eq!(
            got,
            [("big.md".to_owned(), ReadKind::TooLarge(150))],
            "one file over the cap: not read"
        );
        let err = read(&[RawEntry::file(format!("{}.md", "n".repeat(300)), TOPIC)], small).expect_err("long name");
        assert!(err.contains("extension header"), "{err}");
    }

    #[test]
    fn pax_paths_are_used_and_pax_sizes_refused() {
        let pax = |records: &str| {
            let mut e = RawEntry::file("PaxHeader", records);
            e.kind = b'x';
            e
        };
        let got = read(
            &[pax("25 path=renamed-topic.md\n"), RawEntry::file("short", TOPIC)],
            Limits::DEFAULT,
        )
        .expect("read");
        assert_eq!(
            got,
            [("renamed-topic.md".to_owned(), ReadKind::File(TOPIC.as_bytes().to_vec()))]
        );
        let err = read(&[pax("12 size=100\n"), RawEntry::file("a.md", TOPIC)], Limits::DEFAULT).expect_err("size");
        assert!(err.contains("PAX size"), "{err}");
        let mut dangling = RawEntry::file("L", "name.md\0");
        dangling.kind = b'L';
        let err = read(&[dangling], Limits::DEFAULT).expect_err("long name without entry");
        assert!(err.contains("long name"), "{err}");
    }

    #[test]
    fn a_truncated_archive_is_refused_whole() {
        let mut bytes = cao_testkit::tarball::tar_bytes(&[RawEntry::file("a.md", TOPIC)]);
        bytes.truncate(600);
        let gz = cao_testkit::tarball::gzip(&bytes);
        let err = read_tar_gz(Path::new("t"), gz.as_slice(), Limits::DEFAULT).expect_err("truncated");
        assert!(matches!(err, MemoryError::Bundle(_)), "{err:?}");
    }

    #[test]
    fn directories_are_walked_without_following_links_within_limits() {
        let d = tempfile::tempdir().expect("tempdir");
        let root = d.path().join("bundle");
        std::fs::create_dir_all(root.join("dir.md")).expect("mkdir");
        std::fs::create_dir_all(root.join("sub")).expect("mkdir");
        std::fs::write(root.join("ok.md"), TOPIC).expect("write");
        std::fs::write(root.join("sub/nested.md"), TOPIC).expect("write");
        std::fs::write(root.join("big.md"), "b".repeat(150)).expect("write");
        std::fs::write(d.path().join("outside.md"), TOPIC).expect("write");
        std::os::unix::fs::symlink(d.path().join("outside.md"), root.join("link.md")).expect("symlink");
        std::os::unix::fs::symlink(d.path(), root.join("up")).expect("symlink");
        rustix_free_fifo(&root.join("fifo.md"));
        let limits = Limits {
            file_bytes: 100,
            ..Limits::DEFAULT
        };
        let mut got: Vec<(String, ReadKind)> = read_bundle_within(&root, limits)
            .expect("read")
            .entries
            .into_iter()
            .map(|e| (String::from_utf8_lossy(&e.path).into_owned(), e.kind))
            .collect();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        let mut want = vec![
            ("big.md".to_owned(), ReadKind::TooLarge(150)),
            ("dir.md".to_owned(), ReadKind::NotRegular),
            ("link.md".to_owned(), ReadKind::Link),
            ("ok.md".to_owned(), ReadKind::File(TOPIC.as_bytes().to_vec())),
            ("sub/nested.md".to_owned(), ReadKind::File(Vec::new())),
            ("up".to_owned(), ReadKind::Link),
        ];
        if root.join("fifo.md").exists() {
            want.push(("fifo.md".to_owned(), ReadKind::NotRegular));
            want.sort_by(|a, b| a.0.cmp(&b.0));
        }
        assert_eq!(got, want);
        let few = Limits {
            entries: 2,
            ..Limits::DEFAULT
        };
        let err = read_bundle_within(&root, few).expect_err("too many paths");
        assert!(err.to_string().contains("more than 2 paths"), "{err}");
    }

    /// Make a fifo with `mkfifo` (no unsafe code here); skipped silently when the tool is missing.
    fn rustix_free_fifo(path: &Path) {
        let _ = std::process::Command::new("mkfifo").arg(path).status();
    }
}
