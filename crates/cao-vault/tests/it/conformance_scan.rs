//! Conformance of the scanner (`vault_scan.json`): each case's layout is built on disk (symlinks out of the root,
//! hard links, a FIFO, non-UTF-8 bytes, NUL, BOM, CRLF, `.obsidian` and friends, excluded folders, case
//! collisions, oversized frontmatter, Excalidraw files, a note limit), scanned, and every row compared exactly
//! (path, scope, status, findings with severity and detail, size, content and frontmatter hashes) with the byte
//! totals.

use crate::support::{Failures, VaultDir};
use cao_testkit::conformance_cases;
use cao_vault::scan::{ScanOptions, ScanReport, scan_vault};
use serde_json::{Value, json};

/// A scan report in the cases' shape.
pub(crate) fn report_json(r: &ScanReport) -> Value {
    json!({
        "total_bytes_scanned": r.total_bytes_scanned,
        "max_total_bytes": r.max_total_bytes,
        "notes": r.notes.iter().map(|n| json!({
            "relpath": n.relpath,
            "scope": n.scope.as_str(),
            "scope_id": n.scope_id,
            "status": n.status.as_str(),
            "findings": n.findings.iter().map(|f| json!([f.code.as_str(), f.severity.as_str(), f.detail])).collect::<Vec<_>>(),
            "size_bytes": n.size_bytes,
            "content_sha256": n.content_sha256,
            "frontmatter_sha256": n.frontmatter_sha256,
        })).collect::<Vec<_>>(),
    })
}

#[test]
fn scan_cases() {
    let cases = conformance_cases("vault_scan.json");
    let mut f = Failures::default();
    let mut checks = 0;
    for c in &cases {
        let name = c["name"].as_str().unwrap_or_default();
        let dir = VaultDir::new();
        dir.build(&c["input"]);
        let settings = dir.settings(&c["input"]["vault"]);
        let vault = &settings.vaults[0];
        for (i, step) in c["input"]["steps"].as_array().expect("steps").iter().enumerate() {
            assert_eq!(step["op"], "scan");
            let report = scan_vault(vault, ScanOptions::default()).expect("scan");
            checks += 1;
            f.check(
                "vault_scan",
                name,
                &format!("step {i}"),
                &report_json(&report),
                &c["expected"][i]["result"],
            );
        }
    }
    f.finish(checks);
}
