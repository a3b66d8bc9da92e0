//! `cao memory vault status|scan|reconcile|rebuild` against a real vault on disk: the reference's `vault_cli.json`
//! cases replayed through the binary (the run id depends on the clock and is compared by shape), and the JSON
//! outputs checked against their schemas in docs/schemas.

use crate::common::{assert_sane, cao};
use cao_testkit::TempHome;
use serde_json::Value;
use std::path::Path;
use std::sync::LazyLock;

fn validator(name: &str) -> jsonschema::Validator {
    let path = cao_testkit::workspace_root().join("docs/schemas").join(name);
    let text = std::fs::read_to_string(&path).expect("schema file");
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

static STATUS_SCHEMA: LazyLock<jsonschema::Validator> = LazyLock::new(|| validator("cao.memory.vault-status-1.json"));
static SCAN_SCHEMA: LazyLock<jsonschema::Validator> = LazyLock::new(|| validator("cao.memory.vault-scan-1.json"));
static RECONCILE_SCHEMA: LazyLock<jsonschema::Validator> =
    LazyLock::new(|| validator("cao.memory.vault-reconcile-1.json"));

fn assert_valid(schema: &jsonschema::Validator, v: &Value) {
    let errors: Vec<String> = schema.iter_errors(v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "schema violations: {errors:?}\n{v:#}");
}

/// A vault at `<temp root>/vault` laid out as `case.input.layout`, and `settings.json` holding `case.input.vault`
/// with `<ROOT>` replaced.
fn vault_home(case: &Value) -> TempHome {
    let home = TempHome::new().expect("temp home");
    let root = home.root().join("vault");
    std::fs::create_dir_all(&root).expect("vault root");
    for (rel, text) in case["input"]["layout"].as_object().expect("layout") {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("folder");
        std::fs::write(&path, text.as_str().expect("text")).expect("note");
    }
    for m in case["input"]["vault"]["vaults"][0]["mappings"]
        .as_array()
        .expect("mappings")
    {
        std::fs::create_dir_all(root.join(m["folder"].as_str().expect("folder"))).expect("mapping folder");
    }
    write_settings(&home, &case["input"]["vault"], &root);
    home
}

fn write_settings(home: &TempHome, vault: &Value, root: &Path) {
    let text = vault.to_string().replace("<ROOT>", &root.display().to_string());
    let vault: Value = serde_json::from_str(&text).expect("json");
    let settings = serde_json::json!({ "memory": { "vault": vault } });
    std::fs::write(home.home().join("settings.json"), settings.to_string()).expect("settings");
}

/// `run_id: <64 hex>` replaced by `run_id: <RUN>` (the id hashes the run's start time).
fn without_run_id(text: &str) -> String {
    let re = regex::Regex::new("run_id: [0-9a-f]{64}").expect("regex");
    re.replace_all(text, "run_id: <RUN>").into_owned()
}

fn case(name: &str) -> Value {
    cao_testkit::conformance_cases("vault_cli.json")
        .into_iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("case {name}"))
}

/// Replay the `cli` steps of a case: exit code and output (stdout, or for a failure the message on stderr, whose
/// `Error:`/`error:` prefix differs from the reference's, docs/conformance.md).
fn replay(name: &str) {
    let c = case(name);
    let home = vault_home(&c);
    let steps = c["input"]["steps"].as_array().expect("steps");
    let expected = c["expected"].as_array().expect("expected");
    for (step, want) in steps.iter().zip(expected) {
        let args: Vec<&str> = step["args"]
            .as_array()
            .expect("args")
            .iter()
            .map(|a| a.as_str().expect("arg"))
            .collect();
        let out = cao(&home, &args);
        let code = i64::from(out.code.expect("exit code"));
        assert_eq!(
            code,
            want["result"]["exit_code"].as_i64().expect("code"),
            "{args:?}: {}",
            out.stderr
        );
        let want_text = want["result"]["output"].as_str().expect("output");
        let got = if code == 0 {
            out.stdout.clone()
        } else {
            out.stderr.replacen("error: ", "Error: ", 1)
        };
        assert_eq!(without_run_id(&got), without_run_id(want_text), "{args:?}");
    }
}

#[test]
fn status_scan_and_reconcile_print_what_the_reference_prints() {
    replay("status-scan-reconcile-table");
}

#[test]
fn rebuild_requires_apply_then_rebuilds() {
    replay("rebuild-requires-apply");
}

#[test]
fn json_outputs_follow_their_schemas_and_a_dry_run_writes_nothing() {
    let home = vault_home(&case("status-scan-reconcile-table"));
    let json = |args: &[&str]| -> Value {
        let out = cao(&home, args);
        assert_eq!(out.code, Some(0), "{args:?}: {}", out.stderr);
        serde_json::from_str(&out.stdout).expect("json output")
    };
    let scan = json(&["memory", "vault", "scan", "--format", "json"]);
    assert_valid(&SCAN_SCHEMA, &scan);
    assert_eq!(scan["notes"].as_array().expect("notes").len(), 3);
    let dry = json(&["memory", "vault", "reconcile", "--format", "json"]);
    assert_valid(&RECONCILE_SCHEMA, &dry);
    assert_eq!(dry["applied"], false);
    let table = cao(&home, &["memory", "vault", "reconcile"]);
    assert!(
        table.stderr.contains("dry run: nothing was written (add --apply"),
        "a dry run says so on stderr: {:?}",
        table.stderr
    );
    // The dry run wrote nothing: the status has no rows yet.
    let before = json(&["memory", "vault", "status", "--format", "json"]);
    assert_valid(&STATUS_SCHEMA, &before);
    assert_eq!(before["status_counts"], serde_json::json!({}));
    let applied = json(&["memory", "vault", "reconcile", "--apply", "--format", "json"]);
    assert_valid(&RECONCILE_SCHEMA, &applied);
    let again = cao(&home, &["memory", "vault", "reconcile", "--apply"]);
    assert!(!again.stderr.contains("dry run"), "{:?}", again.stderr);
    assert_eq!(
        (applied["applied"].clone(), applied["indexed"].clone()),
        (Value::Bool(true), 2.into())
    );
    let after = json(&["memory", "vault", "status", "--format", "json"]);
    assert_valid(&STATUS_SCHEMA, &after);
    assert_eq!(
        after["status_counts"],
        serde_json::json!({"indexed": 2, "quarantined": 1})
    );
    assert_eq!(after["finding_counts"]["frontmatter_malformed"], 1);

    // Deleting a vault-backed memory de-indexes it and keeps the note, and says so in the reference's words.
    std::fs::write(
        home.root().join("vault/Notes/gone.md"),
        "---\ncao:\n  key: gone\n---\nA note to forget.\n",
    )
    .expect("note");
    json(&["memory", "vault", "reconcile", "--apply", "--format", "json"]);
    let mut cmd = home.command(env!("CARGO_BIN_EXE_cao"));
    cmd.args(["memory", "delete", "gone", "--scope", "project", "-y"])
        .env("CAO_PROJECT_ID", "demo-proj");
    let out = cao_testkit::run(&mut cmd, cao_testkit::DEFAULT_TIMEOUT).expect("runs");
    assert_sane(&out);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert_eq!(
        out.stdout,
        "De-indexed 'gone'; the file is retained in your vault at Notes/gone.md.\n"
    );
    assert!(home.root().join("vault/Notes/gone.md").is_file(), "the note is kept");
}

#[test]
fn vault_commands_refuse_a_disabled_or_missing_vault() {
    let c = case("status-scan-reconcile-table");
    let home = vault_home(&c);
    let mut disabled = c["input"]["vault"].clone();
    disabled["enabled"] = Value::Bool(false);
    write_settings(&home, &disabled, &home.root().join("vault"));
    for cmd in ["status", "scan", "reconcile"] {
        let out = cao(&home, &["memory", "vault", cmd]);
        assert_eq!(out.code, Some(1));
        assert!(
            out.stderr.contains("memory vault is disabled by configuration"),
            "{}",
            out.stderr
        );
    }
    let mut cmd = home.command(env!("CARGO_BIN_EXE_cao"));
    cmd.args(["memory", "vault", "status"])
        .env("CAO_MEMORY_VAULT_ENABLED", "off");
    write_settings(&home, &c["input"]["vault"], &home.root().join("vault"));
    let out = cao_testkit::run(&mut cmd, cao_testkit::DEFAULT_TIMEOUT).expect("runs");
    assert_sane(&out);
    assert!(
        out.stderr.contains("memory vault is disabled by configuration"),
        "{}",
        out.stderr
    );
    let mut bad = c["input"]["vault"].clone();
    bad["vaults"][0]["surprise"] = Value::Bool(true);
    write_settings(&home, &bad, &home.root().join("vault"));
    let out = cao(&home, &["memory", "vault", "status"]);
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.contains("vault configuration unavailable: "),
        "{}",
        out.stderr
    );
}

/// `cao memory vault migrate` and `cao memory repair --receipt` through the binary: native memories stored while
/// the vault was off, a dry run (writes nothing), an apply (notes in the managed folder, receipts, JSON per its
/// schema), a repeated apply skipping the key, a rollback plan then its apply, and the refusals before anything runs.
#[test]
fn migrate_dry_run_apply_and_rollback_by_receipt() {
    let c = case("status-scan-reconcile-table");
    let home = vault_home(&c);
    let root = home.root().join("vault");
    let settings = home.home().join("settings.json");
    let configured = std::fs::read_to_string(&settings).expect("settings");
    std::fs::write(&settings, "{}").expect("vault off");
    {
        let svc = cao_memory::MemoryService::open(cao_core::CaoHome::new(home.home())).expect("service");
        for (key, content) in [("testing", "Prefer pytest."), ("deploy", "Deploys are blue-green.")] {
            svc.store(
                &cao_core::TerminalContext::default(),
                cao_memory::StoreArgs {
                    content: content.into(),
                    scope: Some(cao_core::Scope::Global),
                    key: Some(key.into()),
                    ..Default::default()
                },
            )
            .expect("store");
        }
    }
    std::fs::write(&settings, configured).expect("vault on");

    let refused = cao(
        &home,
        &["memory", "vault", "migrate", "--scope", "global", "--delete-source"],
    );
    assert_eq!(refused.code, Some(1), "{}", refused.transcript());
    assert!(
        refused.stderr.contains("--delete-source requires --apply"),
        "{}",
        refused.stderr
    );
    let unbound = cao(
        &home,
        &["memory", "vault", "migrate", "--scope", "agent", "--scope-id", "nobody"],
    );
    assert_eq!(unbound.code, Some(1), "{}", unbound.transcript());
    assert!(
        unbound.stderr.contains("is not mapped to a configured vault"),
        "{}",
        unbound.stderr
    );

    let dry = cao(&home, &["memory", "vault", "migrate", "--scope", "global"]);
    assert_eq!(dry.code, Some(0), "{}", dry.transcript());
    assert!(
        dry.stdout
            .starts_with("planned: 2\nmigrated: 0\ndeleted_source: 0\nfailed: 0\ndry_run: True\n"),
        "{}",
        dry.stdout
    );
    assert!(!root.join("_cao/testing.md").exists(), "a dry run writes nothing");

    let applied = cao(
        &home,
        &[
            "memory", "vault", "migrate", "--scope", "global", "--apply", "--format", "json",
        ],
    );
    assert_eq!(applied.code, Some(0), "{}", applied.transcript());
    let report: Value = serde_json::from_str(&applied.stdout).expect("json");
    assert_valid(&validator("cao.memory.vault-migrate-1.json"), &report);
    assert_eq!(
        (report["migrated"].clone(), report["dry_run"].clone()),
        (2.into(), Value::Bool(false))
    );
    assert!(
        std::fs::read_to_string(root.join("_cao/testing.md"))
            .expect("note")
            .contains("Prefer pytest.")
    );
    let again = cao(&home, &["memory", "vault", "migrate", "--scope", "global", "--apply"]);
    assert!(
        again.stdout.contains("skipped: testing: already_migrated\n"),
        "{}",
        again.stdout
    );

    let receipt = report["receipts"][1].as_str().expect("receipt of testing");
    let plan = cao(&home, &["memory", "repair", "--receipt", receipt]);
    assert_eq!(plan.code, Some(0), "{}", plan.transcript());
    assert!(
        plan.stdout.contains("key: testing\napplied: False\n"),
        "{}",
        plan.stdout
    );
    let done = cao(&home, &["memory", "repair", "--receipt", receipt, "--apply"]);
    assert_eq!(done.code, Some(0), "{}", done.transcript());
    assert!(done.stdout.contains("applied: True\n"), "{}", done.stdout);
    let status = cao(&home, &["memory", "vault", "status"]);
    assert!(
        status.stdout.contains("migration_receipts: active=1, inconsistent=0\n"),
        "{}",
        status.stdout
    );
    let twice = cao(&home, &["memory", "repair", "--receipt", receipt, "--apply"]);
    assert_eq!(twice.code, Some(1), "{}", twice.transcript());
}
