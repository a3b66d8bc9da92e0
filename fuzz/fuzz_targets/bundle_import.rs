//! Bundle import from a byte stream (cao-bundle `bundle::read_bundle_selecting` over a `.tar.gz` file, then
//! cao-okf `plan_import` over what was read, as `cao memory import` does before writing).
//!
//! Mode byte even: the rest is a tar stream, gzip-compressed here (so the fuzzer works on tar headers rather than
//! on deflate bits and checksums). Mode byte odd: the rest is the archive file as is. Reading must not panic and
//! must refuse or read within the limits; planning what was read must not panic.
#![no_main]

use cao_bundle::bundle::{Limits, read_bundle_selecting};
use cao_core::Scope;
use cao_okf::import::{ConflictPolicy, ImportOptions, plan_import};
use chrono::{DateTime, TimeZone, Utc};
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::LazyLock;

static DIR: LazyLock<tempfile::TempDir> = LazyLock::new(|| tempfile::tempdir().expect("temp dir"));

fuzz_target!(|data: &[u8]| {
    let (mode, rest) = cao_fuzz::mode(data);
    let bytes = if mode % 2 == 0 {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(rest).expect("gzip into memory");
        gz.finish().expect("gzip into memory")
    } else {
        rest.to_vec()
    };
    let path = DIR.path().join("bundle.tar.gz");
    std::fs::write(&path, &bytes).expect("write the archive");
    // Small limits half of the time, so the limit checks are reached with small inputs.
    let limits = if mode & 0x02 != 0 {
        Limits {
            entries: 4,
            total_bytes: 4096,
            file_bytes: 1024,
            extension_bytes: 512,
        }
    } else {
        Limits::DEFAULT
    };
    let Ok(read) = read_bundle_selecting(&path, limits, &mut |_: usize, _: &[u8], _: u64| true) else {
        return;
    };
    assert!(read.entries.len() <= limits.entries, "entry limit holds");
    let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().expect("valid time");
    let opts = ImportOptions {
        target_scope: Scope::Project,
        target_scope_id: Some("fuzz".to_owned()),
        conflict: ConflictPolicy::Merge,
        dry_run: true,
        now,
    };
    let existing: BTreeMap<cao_core::Key, DateTime<Utc>> = BTreeMap::new();
    let plan = plan_import(&opts, read.entries.iter().map(|e| e.as_bundle_entry()), &existing)
        .expect("a project target is allowed");
    assert!(plan.files.len() <= read.entries.len());
});
