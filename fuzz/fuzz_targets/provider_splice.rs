//! The provider-file block splicer (cao-memory `provider_files::splice_block`): arbitrary bytes as `CLAUDE.md` /
//! `AGENTS.md`, arbitrary text as the block. Properties (cao-memory `provider_files.rs` rules):
//! - a file without a complete block keeps every byte: the result starts with it (after a BOM, unchanged);
//! - splicing is idempotent: splicing the same block again changes nothing;
//! - the last block wins: splicing `a` then `b` equals splicing `b` directly.
//!
//! Input: `<file bytes> 0xFF <block a> 0xFF <block b>` (0xFF never occurs in UTF-8; blocks as lossy UTF-8).
#![no_main]

use cao_memory::provider_files::splice_block;
use libfuzzer_sys::fuzz_target;

const BEGIN: &[u8] = b"<!-- cao-memory:begin -->";

fuzz_target!(|data: &[u8]| {
    let (file, rest) = cao_fuzz::split_at_byte(data, 0xFF);
    let (a, b) = cao_fuzz::split_at_byte(rest, 0xFF);
    let a = String::from_utf8_lossy(a);
    let b = String::from_utf8_lossy(b);
    let once = splice_block(file, &a);
    if !contains(file, BEGIN) {
        assert!(once.starts_with(file), "a file without a block keeps its bytes");
    }
    let twice = splice_block(&once, &a);
    assert_eq!(twice, once, "splicing the same block again changes nothing");
    let ab = splice_block(&once, &b);
    let direct = splice_block(file, &b);
    assert_eq!(ab, direct, "the last block wins");
});

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
