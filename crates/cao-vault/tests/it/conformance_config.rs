//! Conformance of `memory.vault` validation (`vault_config.json`): the accept / refuse decision, the validated
//! config with defaults (canonical root), the config and binding warnings, and for refusals every issue's
//! location, type and message (value errors carry pydantic's `Value error, ` prefix in the cases).
//!
//! The placeholders are built in a temp dir as the case file's note describes: `<BASE>` holds the vault `<ROOT>`
//! (with `_cao/`), `link-to-vault -> <ROOT>` and `a-file`; `<HOME>` holds `vault-under-home/` and `<CAO_HOME>` =
//! `<HOME>/.aws/cli-agent-orchestrator` (with `inside-vault/`, `memory/`, `graph-exports/v/`); the alias table
//! maps `0123456789ab` to `canon-proj` (kind `cwd_hash`).

use crate::support::Failures;
use cao_testkit::conformance_cases;
use cao_vault::config::{ConfigContext, StaticProjects, VaultConfigError, binding_warnings, config_warnings, validate};
use serde_json::{Value, json};
use std::path::PathBuf;

struct Places {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
    home: PathBuf,
    cao_home: PathBuf,
}

impl Places {
    fn new() -> Places {
        let tmp = tempfile::tempdir().expect("tempdir");
        let t = std::fs::canonicalize(tmp.path()).expect("canonical");
        let base = t.join("base");
        let root = base.join("vault");
        let home = t.join("home");
        let cao_home = home.join(".aws/cli-agent-orchestrator");
        for d in [
            root.join("_cao"),
            home.join("vault-under-home"),
            cao_home.join("inside-vault"),
            cao_home.join("memory"),
            cao_home.join("graph-exports/v"),
        ] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        std::os::unix::fs::symlink(&root, base.join("link-to-vault")).expect("symlink");
        std::fs::write(base.join("a-file"), "x").expect("file");
        Places {
            _tmp: tmp,
            base,
            root,
            home,
            cao_home,
        }
    }

    fn subst(&self, s: &str) -> String {
        s.replace("<CAO_HOME>", &self.cao_home.to_string_lossy())
            .replace("<HOME>", &self.home.to_string_lossy())
            .replace("<ROOT>", &self.root.to_string_lossy())
            .replace("<BASE>", &self.base.to_string_lossy())
    }

    fn unsubst(&self, s: &str) -> String {
        s.replace(&*self.cao_home.to_string_lossy(), "<CAO_HOME>")
            .replace(&*self.home.to_string_lossy(), "<HOME>")
            .replace(&*self.root.to_string_lossy(), "<ROOT>")
            .replace(&*self.base.to_string_lossy(), "<BASE>")
    }
}

#[test]
fn config_cases() {
    let cases = conformance_cases("vault_config.json");
    let places = Places::new();
    let projects = StaticProjects {
        aliases: vec![("0123456789ab".into(), "canon-proj".into(), "cwd_hash".into())],
    };
    let ctx = ConfigContext {
        user_home: places.home.clone(),
        cao_home: places.cao_home.clone(),
        graph_export_root: places.cao_home.join("graph-exports"),
        projects: &projects,
    };
    let mut f = Failures::default();
    for c in &cases {
        let name = c["name"].as_str().unwrap_or_default();
        let input: Value = serde_json::from_str(&places.subst(&c["input"].to_string())).expect("json");
        let got = match validate(&input, &ctx) {
            Ok(settings) => {
                let binding: Vec<Value> = binding_warnings(&settings, &projects)
                    .expect("static table")
                    .iter()
                    .map(|w| json!({"kind": w.kind, "mapping": w.mapping, "detail": w.detail}))
                    .collect();
                let config: Value =
                    serde_json::from_str(&places.unsubst(&serde_json::to_string(&settings).expect("json")))
                        .expect("json");
                json!({"accepted": true, "config": config, "warnings": config_warnings(&settings), "binding_warnings": binding})
            }
            Err(VaultConfigError::Invalid(issues)) => {
                let errors: Vec<Value> = issues
                    .iter()
                    .map(|i| {
                        let msg = if i.kind == "value_error" {
                            format!("Value error, {}", places.unsubst(&i.msg))
                        } else {
                            i.msg.clone()
                        };
                        json!({"loc": i.loc, "type": i.kind, "msg": msg})
                    })
                    .collect();
                json!({"accepted": false, "errors": errors})
            }
            Err(other) => json!({"accepted": false, "other": other.to_string()}),
        };
        f.check("vault_config", name, "result", &got, &c["expected"]);
    }
    f.finish(cases.len());
}
