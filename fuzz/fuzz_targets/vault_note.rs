//! The vault note parser (cao-vault `normalize_text`, `split_frontmatter`, `parse_note`, and the wikilinks of
//! its body, `extract_links`): arbitrary bytes as a
//! note file. Must not panic; the regions it reports lie inside the text and on character boundaries (a slice
//! that is not would panic here).
#![no_main]

use cao_vault::links::extract_links;
use cao_vault::note::{Split, normalize_text, parse_note, split_frontmatter};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (mode, rest) = cao_fuzz::mode(data);
    let Ok(text) = normalize_text(rest) else {
        return;
    };
    // Small caps as well as the default one, so the size limit's edges are reached.
    let cap = match mode % 4 {
        0 => 16 * 1024,
        1 => 64,
        2 => 8,
        _ => 0,
    };
    if let Ok(Split::Fenced(region)) = split_frontmatter(&text, cap) {
        let _ = region.raw(&text);
        let _ = region.body(&text);
    }
    let parsed = parse_note(&text, cap);
    let _ = extract_links(parsed.body(&text));
    if let Some(region) = parsed.region() {
        let _ = region.raw(&text);
    }
});
