//! OKF frontmatter (cao-okf `frontmatter::split`, `parse_yaml`, `parse_timestamp`) and the import plan of one
//! topic file (`import::plan_file`): arbitrary bytes as a bundle's `<key>.md`. Must not panic; YAML budgets hold
//! (a small input never takes long or much memory: libFuzzer's timeout and RSS limit catch it).
#![no_main]

use cao_core::Scope;
use cao_okf::frontmatter::{parse_timestamp, parse_yaml, split, universal_newlines};
use cao_okf::import::{BundleEntry, ConflictPolicy, EntryKind, ImportOptions, plan_file};
use chrono::{DateTime, TimeZone, Utc};
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeMap;

fuzz_target!(|data: &[u8]| {
    let (mode, rest) = cao_fuzz::mode(data);
    if let Ok(text) = std::str::from_utf8(rest) {
        let text = universal_newlines(text);
        if let Some(s) = split(&text) {
            let _ = parse_yaml(s.yaml);
        }
        let _ = parse_timestamp(&text);
    }
    let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().expect("valid time");
    let conflict = match mode % 3 {
        0 => ConflictPolicy::Skip,
        1 => ConflictPolicy::Replace,
        _ => ConflictPolicy::Merge,
    };
    let opts = ImportOptions {
        target_scope: Scope::Global,
        target_scope_id: None,
        conflict,
        dry_run: mode & 0x80 != 0,
        now,
    };
    let mut existing: BTreeMap<cao_core::Key, DateTime<Utc>> = BTreeMap::new();
    if let Ok(k) = cao_core::Key::parse_strict("alpha") {
        existing.insert(k, now);
    }
    let entry = BundleEntry {
        path: b"alpha.md",
        kind: EntryKind::File(rest),
    };
    let _ = plan_file(&opts, entry, &existing);
});
