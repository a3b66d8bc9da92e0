//! Shared test helpers: the conformance cases' value encoding, vault layouts on disk, failure collection.

use base64::Engine as _;
use cao_vault::config::{ConfigContext, StaticProjects, VaultSettings, validate};
use cao_vault::yaml::Yaml;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A YAML value in the cases' JSON encoding: non-JSON values tagged `$float` (non-finite), `$set`, `$map`
/// (non-string keys), `$date`, `$datetime`, `$bytes_b64`.
pub(crate) fn yaml_json(v: &Yaml) -> Value {
    match v {
        Yaml::Null => Value::Null,
        Yaml::Bool(b) => json!(b),
        Yaml::Int(i) => match i64::try_from(*i) {
            Ok(x) => json!(x),
            Err(_) => json!(i.to_string()),
        },
        Yaml::BigInt(s) => json!(s),
        Yaml::Float(f) if f.is_nan() => json!({"$float": "nan"}),
        Yaml::Float(f) if f.is_infinite() => json!({"$float": if *f > 0.0 { "inf" } else { "-inf" }}),
        Yaml::Float(f) => json!(f),
        Yaml::Str(s) => json!(s),
        Yaml::Bytes(b) => json!({"$bytes_b64": base64::engine::general_purpose::STANDARD.encode(b)}),
        Yaml::Date(d) => json!({"$date": d.to_string()}),
        Yaml::DateTime { naive, .. } => json!({"$datetime": naive.to_string()}),
        Yaml::Seq(items) => Value::Array(items.iter().map(yaml_json).collect()),
        Yaml::Map(pairs) => {
            if pairs.iter().all(|(k, _)| matches!(k, Yaml::Str(_))) {
                Value::Object(
                    pairs
                        .iter()
                        .map(|(k, v)| (k.as_str().unwrap_or_default().to_owned(), yaml_json(v)))
                        .collect(),
                )
            } else {
                json!({"$map": pairs.iter().map(|(k, v)| json!([yaml_json(k), yaml_json(v)])).collect::<Vec<_>>()})
            }
        }
        Yaml::Set(items) => {
            let mut v: Vec<Value> = items.iter().map(yaml_json).collect();
            v.sort_by_key(|x| x.to_string());
            json!({"$set": v})
        }
        Yaml::Pairs(pairs) => Value::Array(pairs.iter().map(|(k, v)| json!([yaml_json(k), yaml_json(v)])).collect()),
    }
}

/// Collects case failures and fails once, listing them all.
#[derive(Default)]
pub(crate) struct Failures(pub(crate) Vec<String>);

impl Failures {
    pub(crate) fn check(&mut self, file: &str, name: &str, what: &str, got: &Value, want: &Value) {
        if got != want {
            self.0
                .push(format!("{file} [{name}] {what}:\n   got: {got}\n  want: {want}"));
        }
    }
    pub(crate) fn fail(&mut self, file: &str, name: &str, msg: String) {
        self.0.push(format!("{file} [{name}] {msg}"));
    }
    pub(crate) fn finish(self, total: usize) {
        assert!(
            self.0.is_empty(),
            "{} of {total} checks failed:\n{}",
            self.0.len(),
            self.0.join("\n")
        );
    }
}

/// A vault built on disk: `<tmp>/vault` (the root), `<tmp>/outside`, `<tmp>/home` (a user home with a CAO home).
pub(crate) struct VaultDir {
    pub(crate) tmp: tempfile::TempDir,
    pub(crate) root: PathBuf,
    pub(crate) outside: PathBuf,
}

impl VaultDir {
    pub(crate) fn new() -> VaultDir {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("vault");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(&root).expect("root");
        std::fs::create_dir_all(&outside).expect("outside");
        let root = std::fs::canonicalize(&root).expect("canonical");
        let outside = std::fs::canonicalize(&outside).expect("canonical");
        VaultDir { tmp, root, outside }
    }

    /// Replace `<ROOT>` / `<OUTSIDE>` in a string.
    pub(crate) fn subst(&self, s: &str) -> String {
        s.replace("<ROOT>", &self.root.to_string_lossy())
            .replace("<OUTSIDE>", &self.outside.to_string_lossy())
    }

    /// Build a case's `input`: `dirs`, `outside`, then `layout` (text, `{symlink}`, `{hardlink}`, `{fifo}`,
    /// `{bytes_hex}`, `{repeat, count}`, `{text, mtime}`); regular files get mtime 2024-01-01T00:00:00Z + 1 minute
    /// per file in sorted path order unless the entry names one.
    pub(crate) fn build(&self, input: &Value) {
        for d in input["dirs"].as_array().into_iter().flatten() {
            std::fs::create_dir_all(self.root.join(d.as_str().expect("dir"))).expect("mkdir");
        }
        if let Some(outside) = input["outside"].as_object() {
            for (rel, text) in outside {
                write_file(&self.outside.join(rel), text.as_str().expect("text").as_bytes());
            }
        }
        let Some(layout) = input["layout"].as_object() else {
            return;
        };
        let mut paths: Vec<&String> = layout.keys().collect();
        paths.sort();
        let mut regular = 0i64;
        // Hard links last: their source must exist.
        let mut links: Vec<(&String, &str)> = Vec::new();
        for rel in paths {
            let spec = &layout[rel];
            let path = self.root.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("mkdir");
            }
            let (bytes, mtime): (Option<Vec<u8>>, Option<String>) = match spec {
                Value::String(s) => (Some(s.as_bytes().to_vec()), None),
                Value::Object(o) if o.contains_key("symlink") => {
                    std::os::unix::fs::symlink(self.subst(o["symlink"].as_str().expect("target")), &path)
                        .expect("symlink");
                    (None, None)
                }
                Value::Object(o) if o.contains_key("hardlink") => {
                    links.push((rel, o["hardlink"].as_str().expect("source")));
                    (None, None)
                }
                Value::Object(o) if o.contains_key("fifo") => {
                    rustix::fs::mknodat(
                        rustix::fs::CWD,
                        &path,
                        rustix::fs::FileType::Fifo,
                        rustix::fs::Mode::from_raw_mode(0o644),
                        0,
                    )
                    .expect("fifo");
                    (None, None)
                }
                Value::Object(o) if o.contains_key("bytes_hex") => {
                    (Some(unhex(o["bytes_hex"].as_str().expect("hex"))), None)
                }
                Value::Object(o) if o.contains_key("repeat") => {
                    let n = usize::try_from(o["count"].as_u64().expect("count")).expect("count");
                    (Some(o["repeat"].as_str().expect("repeat").repeat(n).into_bytes()), None)
                }
                Value::Object(o) if o.contains_key("text") => (
                    Some(o["text"].as_str().expect("text").as_bytes().to_vec()),
                    o.get("mtime").and_then(Value::as_str).map(str::to_owned),
                ),
                other => panic!("unknown layout entry {other}"),
            };
            if let Some(bytes) = bytes {
                write_file(&path, &bytes);
                let secs = match mtime {
                    Some(ts) => chrono::DateTime::parse_from_rfc3339(&ts).expect("mtime").timestamp(),
                    None => 1_704_067_200 + 60 * regular,
                };
                set_mtime(&path, secs);
                regular += 1;
            }
        }
        for (rel, source) in links {
            std::fs::hard_link(self.root.join(source), self.root.join(rel)).expect("hardlink");
        }
    }

    /// The case's `memory.vault` object with `<ROOT>` replaced, validated with an empty alias table and a CAO
    /// home inside the temp dir.
    pub(crate) fn settings(&self, vault: &Value) -> VaultSettings {
        self.try_settings(vault).expect("case config validates")
    }

    /// As [`VaultDir::settings`], the validation result.
    pub(crate) fn try_settings(&self, vault: &Value) -> Result<VaultSettings, cao_vault::config::VaultConfigError> {
        let text = self.subst(&vault.to_string());
        let value: Value = serde_json::from_str(&text).expect("json");
        let projects = StaticProjects::default();
        let home = self.tmp.path().join("home");
        let ctx = ConfigContext {
            user_home: home.clone(),
            cao_home: home.join(".aws/cli-agent-orchestrator"),
            graph_export_root: home.join(".aws/cli-agent-orchestrator/graph-exports"),
            projects: &projects,
        };
        validate(&value, &ctx)
    }
}

pub(crate) fn write_file(path: &Path, bytes: &[u8]) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, bytes).expect("write");
}

pub(crate) fn set_mtime(path: &Path, secs: i64) {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(u64::try_from(secs).expect("after epoch"));
    let f = std::fs::File::options().write(true).open(path).expect("open");
    f.set_times(std::fs::FileTimes::new().set_modified(t).set_accessed(t))
        .expect("set times");
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}
