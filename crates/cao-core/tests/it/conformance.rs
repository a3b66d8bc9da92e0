//! Reference conformance for the domain rules of `cao-core`.
//!
//! Every case of the shared case files (`<workspace root>/../shared/conformance/reference/`, or the directory in
//! `CAO_CONFORMANCE_DIR`) is run; failures are collected per file and reported together with the file name, the
//! case index and its input. A missing directory or file is a failure, never a skip. Cases in [`ALLOWLIST`] are
//! skipped with their reason; each entry is documented in `docs/conformance.md`.
//!
//! `tests/data/secret_gate_extra.json` holds further secret-gate cases recorded from the reference (invisible
//! characters, redaction cascades, the reference regex engine's whitespace and case rules).

use cao_core::Key;
use cao_core::identity::{normalize_git_remote, validate_project_id};
use cao_core::key::normalize_tags;
use cao_core::scope::scope_write_allowed;
use cao_core::secret;
use cao_testkit::cases_at;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Cases whose behaviour deliberately differs from the reference: `(file, case index, reason)`. Each entry is
/// listed in `docs/conformance.md` with the same reason; `tests/it/secret_forms.rs` asserts our behaviour.
const ALLOWLIST: &[(&str, usize, &str)] = &[(
    "secret_gate_extra.json",
    31,
    "every `-----BEGIN ... PRIVATE KEY-----` header is a secret, DSA included; the reference lists only RSA, EC, OPENSSH and the bare form",
)];

/// A string field of a case, or an error naming it.
fn str_field<'a>(case: &'a Value, name: &str) -> Result<&'a str, String> {
    case.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("case has no string field `{name}`"))
}

/// A boolean field of a case, or an error naming it.
fn bool_field(case: &Value, name: &str) -> Result<bool, String> {
    case.get(name)
        .and_then(Value::as_bool)
        .ok_or_else(|| format!("case has no boolean field `{name}`"))
}

/// `Err` describing the mismatch unless `got == want`.
fn expect_eq<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, want {want:?}"))
    }
}

/// Run `check` on every case of `path` (skipping allowlisted ones) and fail with every mismatch at once.
fn run_cases(path: &Path, check: impl Fn(&Value) -> Result<(), String>) {
    let cases = cases_at(path);
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut failures = Vec::new();
    for &(f, index, reason) in ALLOWLIST {
        if f == file && index >= cases.len() {
            failures.push(format!("{file}: allowlisted case #{index} ({reason}) does not exist"));
        }
    }
    for (index, case) in cases.iter().enumerate() {
        if ALLOWLIST.iter().any(|&(f, i, _)| f == file && i == index) {
            continue;
        }
        if let Err(why) = check(case) {
            let mut input = case.to_string();
            if input.len() > 300 {
                let cut = (0..=300).rev().find(|&i| input.is_char_boundary(i)).unwrap_or(0);
                input.truncate(cut);
                input.push('…');
            }
            failures.push(format!("{file} case #{index} {input}: {why}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// A file of the shared case directory.
fn shared(file: &str) -> PathBuf {
    cao_testkit::conformance_dir().join(file)
}

#[test]
fn auto_key() {
    run_cases(&shared("auto_key.json"), |case| {
        let got = Key::from_content(str_field(case, "content")?)
            .map(|k| k.to_string())
            .unwrap_or_default();
        expect_eq("auto key", got.as_str(), str_field(case, "auto_key")?)
    });
}

#[test]
fn sanitize_key() {
    run_cases(&shared("sanitize_key.json"), |case| {
        let got = Key::sanitize(str_field(case, "key")?);
        match (case.get("sanitized").and_then(Value::as_str), case.get("error")) {
            (Some(want), None) => expect_eq("sanitized key", got.map(|k| k.to_string()), Ok(want.to_owned())),
            (None, Some(_)) => match got {
                Err(_) => Ok(()),
                Ok(k) => Err(format!("expected an error, got key {k:?}")),
            },
            _ => Err("case needs exactly one of `sanitized` or `error`".into()),
        }
    });
}

#[test]
fn git_remote() {
    run_cases(&shared("git_remote.json"), |case| {
        expect_eq(
            "project id",
            normalize_git_remote(str_field(case, "url")?).as_str(),
            str_field(case, "project_id")?,
        )
    });
}

#[test]
fn project_id_override() {
    run_cases(&shared("project_id_override.json"), |case| {
        expect_eq(
            "valid",
            validate_project_id(str_field(case, "value")?).is_ok(),
            bool_field(case, "valid")?,
        )
    });
}

#[test]
fn scope_write() {
    run_cases(&shared("scope_write_allowed.json"), |case| {
        let got = scope_write_allowed(str_field(case, "caller")?, str_field(case, "target")?);
        expect_eq("allowed", got, bool_field(case, "allowed")?)
    });
}

/// A secret-gate case: `text` scans to `pattern` (`null` = clean) and redacts to `redacted`.
fn check_secret_case(case: &Value) -> Result<(), String> {
    let text = str_field(case, "text")?;
    let want_pattern = match case.get("pattern") {
        Some(Value::Null) => None,
        Some(Value::String(p)) => Some(p.as_str()),
        _ => return Err("case has no `pattern` (string or null)".into()),
    };
    let mut errors = Vec::new();
    if let Err(e) = expect_eq("scan", secret::scan(text), want_pattern) {
        errors.push(e);
    }
    if let Err(e) = expect_eq("redact", secret::redact(text).as_str(), str_field(case, "redacted")?) {
        errors.push(e);
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

#[test]
fn secret_gate() {
    run_cases(&shared("secret_gate.json"), check_secret_case);
}

#[test]
fn secret_gate_recorded_extra_cases() {
    run_cases(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/secret_gate_extra.json"),
        check_secret_case,
    );
}

#[test]
fn tags() {
    run_cases(&shared("tags.json"), |case| {
        expect_eq(
            "normalised tags",
            normalize_tags(str_field(case, "tags")?).as_str(),
            str_field(case, "normalised")?,
        )
    });
}
