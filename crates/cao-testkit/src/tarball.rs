//! Hand-made tar archives for hostile-bundle tests: entry names, types and sizes that a well-behaved writer refuses
//! to produce (`../x.md`, absolute paths, invalid UTF-8, links, devices, a 1 GiB sparse file, a header that claims
//! more data than follows), written header by header with the `tar` crate's header type and gzip-compressed with
//! `flate2`.

use std::io::Write;

/// One raw archive entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEntry {
    /// The name bytes, written as they are (a GNU long-name entry precedes names over 100 bytes).
    pub name: Vec<u8>,
    /// The type flag (`b'0'` file, `b'2'` symlink, `b'1'` hard link, `b'3'` char device, `b'5'` directory,
    /// `b'6'` fifo, `b'S'` GNU sparse).
    pub kind: u8,
    /// The data that follows the header (padded to 512 bytes).
    pub data: Vec<u8>,
    /// The size the header declares, when it differs from `data.len()` (then the archive is cut after the header).
    pub declared_size: Option<u64>,
    /// The link target of a link entry.
    pub link: Vec<u8>,
    /// The logical size of a GNU sparse entry (one empty data region at its end).
    pub sparse_real_size: Option<u64>,
}

impl RawEntry {
    fn new(name: impl AsRef<[u8]>, kind: u8) -> RawEntry {
        RawEntry {
            name: name.as_ref().to_vec(),
            kind,
            data: Vec::new(),
            declared_size: None,
            link: Vec::new(),
            sparse_real_size: None,
        }
    }

    /// A regular file.
    pub fn file(name: impl AsRef<[u8]>, data: impl AsRef<[u8]>) -> RawEntry {
        RawEntry {
            data: data.as_ref().to_vec(),
            ..RawEntry::new(name, b'0')
        }
    }

    /// A symbolic link to `target`.
    pub fn symlink(name: impl AsRef<[u8]>, target: impl AsRef<[u8]>) -> RawEntry {
        RawEntry {
            link: target.as_ref().to_vec(),
            ..RawEntry::new(name, b'2')
        }
    }

    /// A hard link to `target`.
    pub fn hardlink(name: impl AsRef<[u8]>, target: impl AsRef<[u8]>) -> RawEntry {
        RawEntry {
            link: target.as_ref().to_vec(),
            ..RawEntry::new(name, b'1')
        }
    }

    /// A character device.
    pub fn char_device(name: impl AsRef<[u8]>) -> RawEntry {
        RawEntry::new(name, b'3')
    }

    /// A fifo.
    pub fn fifo(name: impl AsRef<[u8]>) -> RawEntry {
        RawEntry::new(name, b'6')
    }

    /// A directory.
    pub fn dir(name: impl AsRef<[u8]>) -> RawEntry {
        RawEntry::new(name, b'5')
    }

    /// A GNU sparse file of `real_size` bytes holding no data (all hole).
    pub fn sparse(name: impl AsRef<[u8]>, real_size: u64) -> RawEntry {
        RawEntry {
            sparse_real_size: Some(real_size),
            ..RawEntry::new(name, b'S')
        }
    }

    /// A regular file whose header declares `size` bytes while none follow (the archive ends after the header).
    pub fn declared(name: impl AsRef<[u8]>, size: u64) -> RawEntry {
        RawEntry {
            declared_size: Some(size),
            ..RawEntry::new(name, b'0')
        }
    }
}

fn pad(out: &mut Vec<u8>) {
    let rem = out.len() % 512;
    if rem != 0 {
        out.resize(out.len() + 512 - rem, 0);
    }
}

fn header_for(e: &RawEntry, name: &[u8], size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    if let Some(gnu) = h.as_gnu_mut() {
        let n = name.len().min(gnu.name.len());
        gnu.name[..n].copy_from_slice(&name[..n]);
        let l = e.link.len().min(gnu.linkname.len());
        gnu.linkname[..l].copy_from_slice(&e.link[..l]);
        if let Some(real) = e.sparse_real_size {
            gnu.set_real_size(real);
            gnu.sparse[0].set_offset(real);
            gnu.sparse[0].set_length(0);
        }
    }
    h.set_mode(0o644);
    h.set_mtime(0);
    h.set_uid(0);
    h.set_gid(0);
    h.set_size(size);
    h.set_entry_type(tar::EntryType::new(e.kind));
    h.set_cksum();
    h
}

/// The uncompressed tar stream of `entries` (two zero blocks at the end unless an entry is cut short).
pub fn tar_bytes(entries: &[RawEntry]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        if e.name.len() > 100 {
            let mut long = RawEntry::new(b"././@LongLink", b'L');
            long.data = e.name.clone();
            long.data.push(0);
            let h = header_for(&long, &long.name, long.data.len() as u64);
            out.extend_from_slice(h.as_bytes());
            out.extend_from_slice(&long.data);
            pad(&mut out);
        }
        let size = e.declared_size.unwrap_or(e.data.len() as u64);
        let h = header_for(e, &e.name, size);
        out.extend_from_slice(h.as_bytes());
        if e.declared_size.is_some() {
            return out;
        }
        out.extend_from_slice(&e.data);
        pad(&mut out);
    }
    out.extend_from_slice(&[0u8; 1024]);
    out
}

/// `bytes` gzip-compressed.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    // Writing into a Vec cannot fail.
    let _ = enc.write_all(bytes);
    enc.finish().unwrap_or_default()
}

/// `gzip(tar_bytes(entries))`.
pub fn tar_gz(entries: &[RawEntry]) -> Vec<u8> {
    gzip(&tar_bytes(entries))
}
