//! Shared helpers of the fuzz targets (`fuzz_targets/*.rs`, built by `cargo xtask fuzz`).
//!
//! Each target is a libFuzzer entry point over one parser of untrusted input; a target fails (aborts, which
//! libFuzzer records as a crash with the input) on a panic or on a broken property stated in its module doc.

use std::path::PathBuf;

/// The first byte of `data` (0 when empty) and the rest: targets use it to pick a mode.
pub fn mode(data: &[u8]) -> (u8, &[u8]) {
    match data.split_first() {
        Some((m, rest)) => (*m, rest),
        None => (0, data),
    }
}

/// Split `data` at the first `sep` byte: (before, after); without one, (data, empty).
pub fn split_at_byte(data: &[u8], sep: u8) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == sep) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

/// The repository root (the parent of this package).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default()
}
