//! The reference's conformance cases (`../shared/conformance/reference/*.json` beside the workspace, or
//! `$CAO_CONFORMANCE_DIR`): one lookup for every crate that replays them.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// The shared case directory: `$CAO_CONFORMANCE_DIR` when set and non-empty, else
/// `<workspace root>/../shared/conformance/reference`.
pub fn conformance_dir() -> PathBuf {
    match std::env::var_os("CAO_CONFORMANCE_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => crate::workspace_root().join("../shared/conformance/reference"),
    }
}

/// The `cases` array of the case file `name` in [`conformance_dir`].
///
/// Panics (fails the calling test, never skips it) naming the path when the file is missing or unreadable, is not
/// JSON, or has no non-empty `cases` array.
pub fn conformance_cases(name: &str) -> Vec<Value> {
    cases_at(&conformance_dir().join(name))
}

/// The `cases` array of the case file at `path` (a reference file or a crate's own recorded cases), with the
/// panics of [`conformance_cases`].
pub fn cases_at(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "conformance case file {} cannot be read ({e}); set CAO_CONFORMANCE_DIR to the directory holding the \
             reference case files",
            path.display()
        )
    });
    let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    match doc.get("cases") {
        Some(Value::Array(cases)) if !cases.is_empty() => cases.clone(),
        _ => panic!("{} has no non-empty `cases` array", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_case_file_fails_naming_its_path_and_the_variable() {
        let missing = crate::workspace_root().join("no-such-cases.json");
        let err = std::panic::catch_unwind(|| cases_at(&missing)).expect_err("must panic");
        let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains("no-such-cases.json"), "{msg}");
        assert!(msg.contains("CAO_CONFORMANCE_DIR"), "{msg}");
    }

    #[test]
    fn case_files_without_cases_fail() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (name, text) in [
            ("empty.json", r#"{"cases": []}"#),
            ("none.json", "{}"),
            ("bad.json", "{"),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, text).expect("write");
            assert!(std::panic::catch_unwind(|| cases_at(&path)).is_err(), "{name}");
        }
        let ok = dir.path().join("ok.json");
        std::fs::write(&ok, r#"{"cases": [{"a": 1}]}"#).expect("write");
        assert_eq!(cases_at(&ok).len(), 1);
    }
}
