//! The Learned Patterns block editor (cao-learn `learned::apply_deltas`): an edit applied to arbitrary profile
//! text. The user's bytes outside the block must survive (cao-learn `learned.rs` rules):
//! - with a complete block, the text before its begin marker and after its end marker is kept byte for byte
//!   while the block keeps lessons;
//! - a text without markers that gets a lesson added and then removed again is restored exactly;
//! - an edit that changes nothing returns no text (the file is not rewritten).
//!
//! Mode byte: bit 0 adds `fuzz-lesson`, bit 1 removes `fuzz-lesson`, bit 2 removes the first lesson already in
//! the block, bit 3 updates that lesson's text; the rest is the profile (lossy UTF-8).
#![no_main]

use cao_learn::learned::{BEGIN_MARKER, END_MARKER, apply_deltas, parse_profile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (mode, rest) = cao_fuzz::mode(data);
    let content = String::from_utf8_lossy(rest).into_owned();
    let parsed = parse_profile(&content);
    let mut add = Vec::new();
    let mut remove = Vec::new();
    if mode & 1 != 0 {
        add.push(("fuzz-lesson".to_owned(), "Keep the bytes outside the block.".to_owned()));
    }
    if mode & 2 != 0 {
        remove.push("fuzz-lesson".to_owned());
    }
    if let Some((key, _)) = parsed.lessons.first() {
        if mode & 4 != 0 {
            remove.push(key.clone());
        }
        if mode & 8 != 0 {
            add.push((key.clone(), "An updated lesson text.".to_owned()));
        }
    }
    let Ok(edited) = apply_deltas(&content, &add, &remove) else {
        return;
    };
    let Some(new) = edited.content else {
        assert!(!edited.report.changes(), "no text only when nothing changes");
        return;
    };
    assert!(edited.report.changes(), "a text only when something changes");

    // A complete block: its outside is kept while lessons remain.
    if let Some(begin) = content.find(BEGIN_MARKER)
        && let Some(end_rel) = content[begin + BEGIN_MARKER.len()..].find(END_MARKER)
    {
        let end = begin + BEGIN_MARKER.len() + end_rel + END_MARKER.len();
        // The edited block keeps lessons (removing its last one removes the block with the blank line its append
        // added, as documented; a second block after it is user text here and may still hold lessons).
        let remaining = parsed.lessons.len() + edited.report.added.len() - edited.report.removed.len();
        if remaining > 0 {
            assert!(new.starts_with(&content[..begin]), "the text before the block survives");
            assert!(new.ends_with(&content[end..]), "the text after the block survives");
        }
    }

    // No markers at all: adding then removing the lesson restores the original bytes.
    if !content.contains("<!-- cao-learned:") && !content.contains("<!-- lesson:") && mode & 1 != 0 {
        let back = apply_deltas(&new, &[], &["fuzz-lesson".to_owned()]).expect("removing a valid key");
        if let Some(back) = back.content {
            assert_eq!(back, content, "add then remove restores the profile");
        }
    }
});
