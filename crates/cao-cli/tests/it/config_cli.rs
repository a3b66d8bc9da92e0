//! Golden tests of `cao config get | set | unset | list` on a temp home: effective values and their sources
//! (default, file, env), validation (exit 2, nothing written), preservation of every other key, mode 0600, and the
//! refusal to overwrite an unparsable settings.json.

use crate::common;
use crate::common::{assert_sane, filters};
use cao_testkit::{DEFAULT_TIMEOUT, RunOutput, TempHome};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;

/// Run `cao <args>` with no `CAO_*` variables except `CAO_HOME` and `env`.
fn cao(home: &TempHome, args: &[&str], env: &[(&str, &str)]) -> RunOutput {
    let mut cmd = home.command(env!("CARGO_BIN_EXE_cao"));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cao_testkit::run(&mut cmd, DEFAULT_TIMEOUT).expect("cao starts");
    assert_sane(&out);
    out
}

fn settings_path(home: &TempHome) -> std::path::PathBuf {
    home.home().join("settings.json")
}

fn file_json(home: &TempHome) -> Value {
    let text = std::fs::read_to_string(settings_path(home)).expect("settings.json exists");
    serde_json::from_str(&text).expect("settings.json is JSON")
}

fn mode(home: &TempHome) -> u32 {
    std::fs::metadata(settings_path(home))
        .expect("stat settings.json")
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn list_on_a_fresh_home_shows_defaults_and_writes_nothing() {
    let home = TempHome::new().expect("temp home");
    let table = cao(&home, &["config", "list"], &[]);
    let json_out = cao(&home, &["config", "list", "--format", "json"], &[]);
    assert_eq!(table.code, Some(0), "{}", table.transcript());
    filters(&home).bind(|| {
        insta::assert_snapshot!("config_list_defaults", table.transcript());
        insta::assert_snapshot!("config_list_defaults_json", json_out.transcript());
    });
    let rows = common::json(&json_out);
    let keys: Vec<&str> = rows
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|r| r["key"].as_str())
        .collect();
    assert_eq!(
        keys,
        [
            "memory.enabled",
            "memory.project_id",
            "memory.lifecycle.enabled",
            "memory.non_accessing_inspection",
            "memory.explain_enabled",
            "memory.model.provider",
            "memory.model.url",
            "memory.model.name",
            "memory.model.api_key_env",
            "memory.model.command",
            "memory.model.timeout_ms",
            "memory.injection.mode",
            "memory.summarize",
            "memory.compile_mode",
            "memory.fsync_writes",
            "memory.learning_enabled",
            "memory.instruction_promotion_enabled",
            "agents.dirs",
            "memory.decisions.search",
            "memory.decisions.recall",
            "memory.decisions.duplicates",
            "memory.decisions.relevance_floor",
            "memory.decisions.routing_confidence",
            "memory.decisions.timeout_ms",
            "ui.tree_drawing",
            "memory.recall.bm25_k1",
            "memory.recall.bm25_b",
            "memory.recall.context_weight",
            "memory.embeddings.model_dir"
        ]
    );
    assert!(!settings_path(&home).exists(), "reading never creates settings.json");
}

#[test]
fn set_then_get_reports_the_file_as_source() {
    let home = TempHome::new().expect("temp home");
    let set = cao(&home, &["config", "set", "memory.lifecycle.enabled", "true"], &[]);
    assert_eq!(set.code, Some(0), "{}", set.transcript());
    assert_eq!(file_json(&home), json!({"memory": {"lifecycle": {"enabled": true}}}));
    assert_eq!(mode(&home), 0o600);
    let get = cao(&home, &["config", "get", "memory.lifecycle.enabled"], &[]);
    let get_json = cao(
        &home,
        &["config", "get", "memory.lifecycle.enabled", "--format", "json"],
        &[],
    );
    let project = cao(&home, &["config", "set", "memory.project_id", "acme.web-1"], &[]);
    let list = cao(&home, &["config", "list"], &[]);
    filters(&home).bind(|| {
        insta::assert_snapshot!("config_set_lifecycle", set.transcript());
        insta::assert_snapshot!("config_get_file", get.transcript());
        insta::assert_snapshot!("config_get_file_json", get_json.transcript());
        insta::assert_snapshot!("config_set_project_id", project.transcript());
        insta::assert_snapshot!("config_list_after_set", list.transcript());
    });
    let v = common::json(&get_json);
    assert_eq!((&v["value"], &v["source"]), (&json!(true), &json!("file")));
    assert_eq!(
        file_json(&home),
        json!({"memory": {"lifecycle": {"enabled": true}, "project_id": "acme.web-1"}})
    );
}

#[test]
fn set_keeps_every_other_key_and_makes_the_file_private() {
    let home = TempHome::new().expect("temp home");
    let before = json!({
        "agent_dirs": {"kiro_cli": "/opt/agents"},
        "memory": {"enabled": true, "flush_threshold": 0.85, "vault": {"enabled": false, "paths": ["a", "b"]},
                   "lifecycle": {"enabled": false, "future_knob": 3}},
        "server": {"port": 9889}
    });
    std::fs::write(settings_path(&home), serde_json::to_string(&before).expect("encode")).expect("write");
    std::fs::set_permissions(settings_path(&home), std::fs::Permissions::from_mode(0o644)).expect("chmod");
    for (key, value) in [
        ("memory.lifecycle.enabled", "true"),
        ("memory.enabled", "false"),
        ("memory.non_accessing_inspection", "true"),
        ("memory.explain_enabled", "false"),
    ] {
        let out = cao(&home, &["config", "set", key, value], &[]);
        assert_eq!(out.code, Some(0), "{}", out.transcript());
        assert_eq!(mode(&home), 0o600, "after setting {key}");
    }
    let mut expected = before;
    expected["memory"]["lifecycle"]["enabled"] = json!(true);
    expected["memory"]["enabled"] = json!(false);
    expected["memory"]["non_accessing_inspection"] = json!(true);
    expected["memory"]["explain_enabled"] = json!(false);
    assert_eq!(file_json(&home), expected);
    let leftovers: Vec<String> = std::fs::read_dir(home.home())
        .expect("list home")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn env_overrides_are_shown_with_source_env() {
    let home = TempHome::new().expect("temp home");
    std::fs::write(
        settings_path(&home),
        r#"{"memory": {"lifecycle": {"enabled": false}, "project_id": "from-file"}}"#,
    )
    .expect("write");
    let env = [("CAO_MEMORY_LIFECYCLE_ENABLED", "true"), ("CAO_PROJECT_ID", "from-env")];
    let get = cao(&home, &["config", "get", "memory.lifecycle.enabled"], &env);
    let get_json = cao(&home, &["config", "get", "memory.project_id", "--format", "json"], &env);
    let list = cao(&home, &["config", "list"], &env);
    let set = cao(&home, &["config", "set", "memory.lifecycle.enabled", "false"], &env);
    filters(&home).bind(|| {
        insta::assert_snapshot!("config_get_env", get.transcript());
        insta::assert_snapshot!("config_list_env", list.transcript());
        insta::assert_snapshot!("config_set_under_env", set.transcript());
    });
    let v = common::json(&get_json);
    assert_eq!((&v["value"], &v["source"]), (&json!("from-env"), &json!("env")));
    assert!(
        get.stdout.contains("(source: env, CAO_MEMORY_LIFECYCLE_ENABLED)"),
        "{}",
        get.stdout
    );
    assert!(
        set.stderr
            .contains("CAO_MEMORY_LIFECYCLE_ENABLED is set in the environment"),
        "{}",
        set.stderr
    );
}

#[test]
fn unknown_keys_and_invalid_values_are_usage_errors_that_write_nothing() {
    let home = TempHome::new().expect("temp home");
    let original = "{\"memory\": {\"enabled\": true}, \"x\": 1}";
    std::fs::write(settings_path(&home), original).expect("write");
    let cases: [(&str, &[&str]); 6] = [
        ("config_unknown_key_get", &["config", "get", "memory.lifecycle"]),
        (
            "config_unknown_key_set",
            &["config", "set", "memory.flush_threshold", "0.5"],
        ),
        ("config_invalid_bool", &["config", "set", "memory.enabled", "yes"]),
        (
            "config_invalid_project_id",
            &["config", "set", "memory.project_id", "../etc"],
        ),
        ("config_empty_project_id", &["config", "set", "memory.project_id", ""]),
        ("config_unknown_key_unset", &["config", "unset", "nope"]),
    ];
    for (name, args) in cases {
        let out = cao(&home, args, &[]);
        assert_eq!(out.code, Some(2), "{}", out.transcript());
        assert!(out.stdout.is_empty(), "{}", out.transcript());
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.transcript());
        filters(&home).bind(|| insta::assert_snapshot!(name, out.transcript()));
        assert_eq!(
            std::fs::read_to_string(settings_path(&home)).expect("read"),
            original,
            "{name}: nothing written"
        );
    }
}

#[test]
fn an_unparsable_settings_file_is_never_overwritten() {
    let home = TempHome::new().expect("temp home");
    for bad in [
        "{\"memory\": {\"enabled\": tru",
        "[]",
        "{\"memory\": {\"lifecycle\": true}}",
    ] {
        std::fs::write(settings_path(&home), bad).expect("write");
        let out = cao(&home, &["config", "set", "memory.lifecycle.enabled", "true"], &[]);
        assert_eq!(out.code, Some(1), "{}", out.transcript());
        let path = settings_path(&home).display().to_string();
        assert!(
            out.stderr.contains(&format!("error: refusing to update {path}")),
            "{}",
            out.stderr
        );
        assert!(out.stderr.contains("nothing was written"), "{}", out.stderr);
        assert!(out.stderr.contains("hint: "), "{}", out.stderr);
        assert_eq!(std::fs::read_to_string(settings_path(&home)).expect("read"), bad);
    }
    // Reading still works and falls back to the defaults with a warning.
    std::fs::write(settings_path(&home), "{\"memory\": {\"lifecycle\": true}}").expect("write");
    let get = cao(&home, &["config", "get", "memory.lifecycle.enabled"], &[]);
    filters(&home).bind(|| insta::assert_snapshot!("config_get_invalid_nested", get.transcript()));
}

#[test]
fn unset_removes_the_key_and_restores_the_default() {
    let home = TempHome::new().expect("temp home");
    std::fs::write(
        settings_path(&home),
        r#"{"memory": {"project_id": "acme", "enabled": false}, "z": 1}"#,
    )
    .expect("write");
    let unset = cao(&home, &["config", "unset", "memory.project_id"], &[]);
    let again = cao(&home, &["config", "unset", "memory.project_id"], &[]);
    let get = cao(&home, &["config", "get", "memory.project_id"], &[]);
    filters(&home).bind(|| {
        insta::assert_snapshot!("config_unset", unset.transcript());
        insta::assert_snapshot!("config_unset_again", again.transcript());
        insta::assert_snapshot!("config_get_default_unset", get.transcript());
    });
    assert_eq!(file_json(&home), json!({"memory": {"enabled": false}, "z": 1}));
    assert_eq!(mode(&home), 0o600);
}

#[test]
fn config_works_while_memory_is_disabled() {
    let home = TempHome::new().expect("temp home");
    let off = cao(&home, &["config", "set", "memory.enabled", "false"], &[]);
    assert_eq!(off.code, Some(0), "{}", off.transcript());
    let list = cao(&home, &["memory", "list"], &[]);
    assert_eq!(list.code, Some(1), "memory commands refuse:\n{}", list.transcript());
    let on = cao(&home, &["config", "set", "memory.enabled", "true"], &[]);
    assert_eq!(on.code, Some(0), "{}", on.transcript());
    let list = cao(&home, &["memory", "list"], &[("CAO_PROJECT_ID", "p")]);
    assert_eq!(list.code, Some(0), "{}", list.transcript());
}

#[test]
fn model_settings_are_validated_typed_and_stored() {
    let home = TempHome::new().expect("temp home");
    for (key, value) in [
        ("memory.model.provider", "openai"),
        ("memory.model.url", "http://127.0.0.1:11434/v1"),
        ("memory.model.name", "qwen2.5:7b"),
        ("memory.model.api_key_env", "OPENAI_API_KEY"),
        ("memory.model.command", "claude -p --model 'sonnet 4'"),
        ("memory.model.timeout_ms", "1500"),
    ] {
        let out = cao(&home, &["config", "set", key, value], &[]);
        assert_eq!(out.code, Some(0), "{}", out.transcript());
    }
    assert_eq!(
        file_json(&home),
        json!({"memory": {"model": {"provider": "openai", "url": "http://127.0.0.1:11434/v1", "name": "qwen2.5:7b",
            "api_key_env": "OPENAI_API_KEY", "command": ["claude", "-p", "--model", "sonnet 4"], "timeout_ms": 1500}}})
    );
    let list_form = cao(
        &home,
        &[
            "config",
            "set",
            "memory.model.command",
            r#"["codex", "exec", "--json"]"#,
        ],
        &[],
    );
    let get = cao(&home, &["config", "get", "memory.model.command"], &[]);
    let env_get = cao(
        &home,
        &["config", "get", "memory.model.timeout_ms", "--format", "json"],
        &[("CAO_MEMORY_MODEL_TIMEOUT_MS", "250")],
    );
    filters(&home).bind(|| {
        insta::assert_snapshot!("config_set_model_command_list", list_form.transcript());
        insta::assert_snapshot!("config_get_model_command", get.transcript());
    });
    assert_eq!(
        file_json(&home)["memory"]["model"]["command"],
        json!(["codex", "exec", "--json"])
    );
    let v = common::json(&env_get);
    assert_eq!(
        (&v["value"], &v["source"], &v["type"]),
        (&json!(250), &json!("env"), &json!("integer"))
    );
    // An invalid environment value is reported and the default applies.
    let bad_env = cao(
        &home,
        &["config", "get", "memory.model.provider"],
        &[("CAO_MEMORY_MODEL_PROVIDER", "gpt4")],
    );
    assert_eq!(bad_env.code, Some(0), "{}", bad_env.transcript());
    assert!(
        bad_env
            .stdout
            .starts_with("memory.model.provider = \"none\" (source: default)"),
        "{}",
        bad_env.stdout
    );
    assert!(
        bad_env
            .stderr
            .contains("warning: CAO_MEMORY_MODEL_PROVIDER=\"gpt4\" is not one of none, openai, command"),
        "{}",
        bad_env.stderr
    );
}

#[test]
fn invalid_model_settings_are_usage_errors_that_write_nothing() {
    let home = TempHome::new().expect("temp home");
    let original = "{\"memory\": {\"model\": {\"provider\": \"none\"}}}";
    std::fs::write(settings_path(&home), original).expect("write");
    let cases: [(&str, &[&str]); 9] = [
        (
            "config_invalid_model_provider",
            &["config", "set", "memory.model.provider", "gpt"],
        ),
        (
            "config_invalid_model_timeout_zero",
            &["config", "set", "memory.model.timeout_ms", "0"],
        ),
        (
            "config_invalid_model_timeout_negative",
            &["config", "set", "memory.model.timeout_ms", "-5"],
        ),
        (
            "config_invalid_model_url",
            &["config", "set", "memory.model.url", "localhost:11434"],
        ),
        (
            "config_invalid_model_url_credentials",
            &["config", "set", "memory.model.url", "https://me:pw@api.example.com/v1"],
        ),
        (
            "config_invalid_model_command_quote",
            &["config", "set", "memory.model.command", "claude 'p"],
        ),
        (
            "config_invalid_model_command_list",
            &["config", "set", "memory.model.command", "[1, 2]"],
        ),
        (
            "config_invalid_model_command_empty",
            &["config", "set", "memory.model.command", "[]"],
        ),
        (
            "config_invalid_model_api_key_env",
            &["config", "set", "memory.model.api_key_env", "sk-live-0123456789abcdef"],
        ),
    ];
    for (name, args) in cases {
        let out = cao(&home, args, &[]);
        assert_eq!(out.code, Some(2), "{}", out.transcript());
        assert!(out.stdout.is_empty(), "{}", out.transcript());
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.transcript());
        filters(&home).bind(|| insta::assert_snapshot!(name, out.transcript()));
        assert_eq!(
            std::fs::read_to_string(settings_path(&home)).expect("read"),
            original,
            "{name}: nothing written"
        );
    }
    let leaked = cao(
        &home,
        &["config", "set", "memory.model.api_key_env", "sk-live-0123456789abcdef"],
        &[],
    );
    assert!(!leaked.stderr.contains("0123456789abcdef"), "{}", leaked.stderr);
    assert!(leaked.stderr.contains("not the key itself"), "{}", leaked.stderr);
}
