//! `cao setup <agent>` on temp homes (`HOME` is the temp root, the current directory its `work/`): the merge into
//! existing configs of every shape (comments, odd key order, CRLF, tabs, no final newline, other servers and
//! hooks), the byte-identical round trip `setup` then `--remove`, idempotence, the dry run's diff, refusals that
//! write nothing, and the `cao.setup/1` JSON. The real agent CLIs reading what setup writes are in
//! tests/e2e/test_agent_setup.py.

use crate::common::{cao, cao_env, json};
use cao_testkit::{RunOutput, TempHome};
use std::collections::BTreeMap;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

fn setup(home: &TempHome, args: &[&str]) -> RunOutput {
    let mut all = vec!["setup"];
    all.extend_from_slice(args);
    cao(home, &all)
}

fn ok(out: &RunOutput) {
    assert_eq!(out.code, Some(0), "{}", out.transcript());
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).expect("read"));
            }
        }
    }
    out
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
}

/// Existing configs of unusual shapes: key order, CRLF, tabs, no final newline, comments, other servers and hooks.
fn existing_configs(home: &TempHome) {
    let root = home.root();
    write(
        &root.join(".claude.json"),
        "{\r\n  \"zebra\": 1,\r\n  \"mcpServers\": {\r\n    \"other\": {\"command\": \"x\", \"args\": []}\r\n  },\r\n  \
         \"projects\": {\r\n    \"/elsewhere\": {\"allowedTools\": []}\r\n  },\r\n  \"alpha\": \"é\"\r\n}",
    );
    write(
        &root.join(".claude/settings.json"),
        "{\n\t\"permissions\": {\"allow\": [\"Bash(ls)\"]},\n\t\"hooks\": {\n\t\t\"SessionStart\": [\n\t\t\t{\"matcher\": \
         \"startup\", \"hooks\": [{\"type\": \"command\", \"command\": \"echo hi\"}]}\n\t\t]\n\t}\n}\n",
    );
    write(
        &root.join(".codex/config.toml"),
        "# my settings\r\nmodel = \"o3\" # the fast one\r\n\r\n[mcp_servers.other]\r\ncommand = \"x\"\r\n\r\n\
         [profiles.deep]\r\nmodel = \"o4\"\r\n",
    );
    write(
        &root.join(".codex/hooks.json"),
        "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify\"}]}]}}",
    );
    write(
        &home.cwd().join(".mcp.json"),
        "{\n    \"mcpServers\": {\n        \"docs\": {\n            \"url\": \"https://d\"\n        }\n    }\n}\n",
    );
    write(
        &root.join(".kiro/settings/mcp.json"),
        "{ \"mcpServers\": { \"a\": { \"command\": \"b\" } } }\n",
    );
}

#[test]
fn setup_then_remove_leaves_every_file_byte_identical() {
    let home = TempHome::new().expect("temp home");
    existing_configs(&home);
    let before = snapshot(&home.root());
    for (agent, scope) in [
        ("claude-code", "user"),
        ("claude-code", "local"),
        ("claude-code", "project"),
        ("codex", "user"),
        ("codex", "project"),
        ("kiro", "user"),
    ] {
        for extra in [&["--mode", "view"][..], &["--transport", "http"][..]] {
            let mut args = vec![agent, "--scope", scope];
            args.extend_from_slice(extra);
            let first = setup(&home, &args);
            ok(&first);
            assert!(first.stdout.contains("added"), "{}", first.transcript());
            let after = snapshot(&home.root());
            assert_ne!(after, before, "{agent} {scope}: setup changed something");
            let again = setup(&home, &args);
            ok(&again);
            assert!(
                again
                    .stdout
                    .lines()
                    .all(|l| l.starts_with("unchanged: ") || l.starts_with("note: ")),
                "{agent} {scope}: a second run changes nothing\n{}",
                again.transcript()
            );
            assert_eq!(snapshot(&home.root()), after);
            let removed = setup(&home, &[agent, "--scope", scope, "--remove"]);
            ok(&removed);
            let now = snapshot(&home.root());
            for (path, bytes) in &before {
                assert_eq!(
                    now.get(path).map(|b| String::from_utf8_lossy(b).into_owned()),
                    Some(String::from_utf8_lossy(bytes).into_owned()),
                    "{agent} {scope} {extra:?}: {} after --remove",
                    path.display()
                );
            }
            assert_eq!(
                now.keys().collect::<Vec<_>>(),
                before.keys().collect::<Vec<_>>(),
                "{agent} {scope}: files setup created are gone again"
            );
        }
    }
}

#[test]
fn what_setup_writes_for_claude_code() {
    let home = TempHome::new().expect("temp home");
    existing_configs(&home);
    ok(&setup(&home, &["claude-code", "--mode", "both"]));
    let claude = read_json(&home.root().join(".claude.json"));
    let entry = &claude["mcpServers"]["cao-memory"];
    assert_eq!(entry["type"], "stdio");
    assert!(
        entry["command"].as_str().expect("command").ends_with("cao-mcp-server"),
        "{entry}"
    );
    assert_eq!(entry["args"], serde_json::json!([]));
    assert_eq!(entry["env"], serde_json::json!({"CAO_MEMORY_INJECTION_MODE": "both"}));
    assert_eq!(claude["mcpServers"]["other"]["command"], "x", "other servers kept");
    let text = std::fs::read_to_string(home.root().join(".claude.json")).expect("read");
    assert!(
        text.contains("\r\n    \"cao-memory\": {\r\n      \"type\": \"stdio\",\r\n"),
        "CRLF and indent: {text:?}"
    );
    assert!(
        text.ends_with("\"alpha\": \"é\"\r\n}"),
        "no final newline added: {text:?}"
    );
    let key_order: Vec<&str> = ["zebra", "mcpServers", "projects", "alpha"].to_vec();
    let positions: Vec<usize> = key_order
        .iter()
        .map(|k| text.find(&format!("\"{k}\"")).expect("key"))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "key order kept");

    let settings = read_json(&home.root().join(".claude/settings.json"));
    let session = settings["hooks"]["SessionStart"].as_array().expect("array");
    assert_eq!(session.len(), 2, "the user's hook and ours: {settings}");
    assert_eq!(session[0]["hooks"][0]["command"], "echo hi");
    let ours = session[1]["hooks"][0]["command"].as_str().expect("command");
    assert!(ours.starts_with("CAO_MEMORY_INJECTION_MODE=both "), "{ours}");
    assert!(ours.ends_with("cao memory hook claude-code SessionStart"), "{ours}");
    let prompt = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
        .as_str()
        .expect("command");
    assert!(
        prompt.ends_with("cao memory hook claude-code UserPromptSubmit"),
        "{prompt}"
    );
    assert_eq!(settings["permissions"]["allow"][0], "Bash(ls)");

    // block: the UserPromptSubmit hook goes (it would add the block to every prompt); http replaces the entry.
    let out = setup(
        &home,
        &[
            "claude-code",
            "--mode",
            "block",
            "--transport",
            "http",
            "--url",
            "http://10.0.0.5:9889/mcp",
        ],
    );
    ok(&out);
    assert!(
        out.stdout.contains("mcpServers.cao-memory: replaced"),
        "{}",
        out.transcript()
    );
    assert!(
        out.stdout.contains("hooks.UserPromptSubmit: removed"),
        "{}",
        out.transcript()
    );
    let claude = read_json(&home.root().join(".claude.json"));
    assert_eq!(
        claude["mcpServers"]["cao-memory"],
        serde_json::json!({"type": "http", "url": "http://10.0.0.5:9889/mcp", "headers": {"X-CAO-Cwd": "${PWD}"}})
    );
    let settings = read_json(&home.root().join(".claude/settings.json"));
    assert!(settings["hooks"].get("UserPromptSubmit").is_none(), "{settings}");
}

#[test]
fn local_and_project_scopes_use_claude_codes_own_places() {
    let home = TempHome::new().expect("temp home");
    let out = setup(&home, &["claude-code", "--scope", "local"]);
    ok(&out);
    let claude = read_json(&home.root().join(".claude.json"));
    let key = home.cwd().display().to_string();
    assert!(
        claude["projects"][&key]["mcpServers"]["cao-memory"].is_object(),
        "{claude}"
    );
    assert!(home.cwd().join(".claude/settings.local.json").is_file());

    let out = setup(&home, &["claude-code", "--scope", "project"]);
    ok(&out);
    assert!(read_json(&home.cwd().join(".mcp.json"))["mcpServers"]["cao-memory"].is_object());
    assert!(home.cwd().join(".claude/settings.json").is_file());
    assert!(
        out.stdout.contains("note: Claude Code asks each user to approve"),
        "{}",
        out.transcript()
    );
    assert!(
        out.stdout.contains("setup does not approve it for you"),
        "{}",
        out.transcript()
    );
    let claude = read_json(&home.root().join(".claude.json"));
    for field in ["enabledMcpjsonServers", "enableAllProjectMcpServers"] {
        assert!(
            !claude.to_string().contains(field),
            "never approved on the user's behalf: {claude}"
        );
    }

    // In a git worktree, Claude Code keys the local entry by the main checkout.
    let main = home.root().join("main");
    std::fs::create_dir_all(&main).expect("mkdir");
    let git = |args: &[&str], dir: &Path| {
        let st = home.command("git").args(args).current_dir(dir).output().expect("git");
        assert!(st.status.success(), "{st:?}");
    };
    git(&["init", "-q"], &main);
    git(
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
        &main,
    );
    let wt = home.root().join("wt");
    git(
        &["worktree", "add", "-q", wt.to_str().expect("utf8"), "-b", "wt"],
        &main,
    );
    let mut cmd = home.command(env!("CARGO_BIN_EXE_cao"));
    cmd.args(["setup", "claude-code", "--scope", "local"]).current_dir(&wt);
    let out = cao_testkit::run(&mut cmd, cao_testkit::DEFAULT_TIMEOUT).expect("run");
    ok(&out);
    let claude = read_json(&home.root().join(".claude.json"));
    assert!(
        claude["projects"][main.display().to_string()]["mcpServers"]["cao-memory"].is_object(),
        "{claude}"
    );
}

#[test]
fn what_setup_writes_for_codex_and_kiro() {
    let home = TempHome::new().expect("temp home");
    existing_configs(&home);
    let out = setup(&home, &["codex", "--mode", "view"]);
    ok(&out);
    assert!(
        out.stdout
            .contains("Codex runs a new or changed hook only once you trust it"),
        "{}",
        out.transcript()
    );
    let toml = std::fs::read_to_string(home.root().join(".codex/config.toml")).expect("read");
    assert!(
        toml.starts_with("# my settings\r\nmodel = \"o3\" # the fast one\r\n"),
        "{toml:?}"
    );
    assert!(
        toml.contains("\r\n\r\n[mcp_servers.cao-memory]\r\ncommand = "),
        "{toml:?}"
    );
    assert!(
        toml.contains("\r\nenv_vars = [\"CAO_HOME\", \"CAO_SESSION_NAME\", "),
        "{toml:?}"
    );
    assert!(
        toml.ends_with("\r\nenv = { CAO_MEMORY_INJECTION_MODE = \"view\" }\r\n"),
        "{toml:?}"
    );
    let hooks = read_json(&home.root().join(".codex/hooks.json"));
    assert_eq!(hooks["hooks"]["Stop"][0]["hooks"][0]["command"], "notify");
    assert!(
        hooks["hooks"]["SessionStart"][0]["hooks"][0]["command"].is_string(),
        "{hooks}"
    );
    let text = std::fs::read_to_string(home.root().join(".codex/hooks.json")).expect("read");
    assert!(
        text.starts_with("{\"hooks\": {\"Stop\": [{"),
        "one-line file, one-line insertion: {text}"
    );

    let out = setup(&home, &["codex", "--transport", "http"]);
    ok(&out);
    let toml = std::fs::read_to_string(home.root().join(".codex/config.toml")).expect("read");
    assert!(
        toml.ends_with("[mcp_servers.cao-memory]\r\nurl = \"http://127.0.0.1:9889/mcp\"\r\nenv_http_headers = { X-CAO-Cwd = \"PWD\" }\r\n"),
        "{toml:?}"
    );
    assert_eq!(toml.matches("[mcp_servers.cao-memory]").count(), 1);

    let out = setup(&home, &["codex", "--scope", "project"]);
    ok(&out);
    assert!(home.cwd().join(".codex/config.toml").is_file() && home.cwd().join(".codex/hooks.json").is_file());
    assert!(out.stdout.contains("only in a trusted project"), "{}", out.transcript());

    let out = setup(&home, &["kiro"]);
    ok(&out);
    let kiro = read_json(&home.root().join(".kiro/settings/mcp.json"));
    assert_eq!(kiro["mcpServers"]["a"]["command"], "b");
    assert!(
        kiro["mcpServers"]["cao-memory"]["command"]
            .as_str()
            .expect("cmd")
            .ends_with("cao-mcp-server")
    );
    // CODEX_HOME moves the user files as it moves Codex's.
    let elsewhere = home.root().join("codex-home");
    let out = cao_env(
        &home,
        &["setup", "codex"],
        &[("CODEX_HOME", elsewhere.to_str().expect("utf8"))],
    );
    ok(&out);
    assert!(elsewhere.join("config.toml").is_file());
}

#[test]
fn kiro_project_scope_writes_and_removes_the_steering_file() {
    let home = crate::common::seeded_home();
    let out = setup(&home, &["kiro", "--scope", "project"]);
    ok(&out);
    let steering = home.cwd().join(".kiro/steering/cao-memory.md");
    let text = std::fs::read_to_string(&steering).expect("steering file");
    assert!(text.starts_with("<cao-memory>\n## Context from CAO Memory\n"), "{text}");
    assert!(text.contains("build-commands"), "{text}");
    ok(&setup(&home, &["kiro", "--scope", "project", "--remove"]));
    assert!(
        !steering.exists() && !home.cwd().join(".kiro").exists(),
        "setup's files and directories are gone"
    );
}

#[test]
fn dry_run_prints_the_diff_and_writes_nothing() {
    let home = TempHome::new().expect("temp home");
    existing_configs(&home);
    let before = snapshot(&home.root());
    let out = setup(&home, &["codex", "--dry-run"]);
    ok(&out);
    assert_eq!(snapshot(&home.root()), before);
    assert!(out.stdout.contains("would change: "), "{}", out.transcript());
    assert!(out.stdout.contains("+[mcp_servers.cao-memory]"), "{}", out.transcript());
    assert!(out.stdout.contains("+++ "), "{}", out.transcript());
    ok(&setup(&home, &["codex"]));
    let out = setup(&home, &["codex", "--remove", "--dry-run"]);
    ok(&out);
    assert!(out.stdout.contains("-[mcp_servers.cao-memory]"), "{}", out.transcript());
    assert!(home.root().join(".codex/config.toml").is_file());
}

#[test]
fn unparsable_or_hostile_configs_are_refused_and_nothing_is_written() {
    for (file, text, agent, says) in [
        (
            ".claude/settings.json",
            "{\"hooks\": {,}}",
            "claude-code",
            "is not valid JSON (line 1, column 12: ",
        ),
        (
            ".claude.json",
            "{\"mcpServers\": []}",
            "claude-code",
            "`mcpServers` is an array, not an object",
        ),
        (".claude.json", "[]", "claude-code", "holds an array, not a JSON object"),
        (".claude.json", "{} // trailing", "claude-code", "is not valid JSON"),
        (".claude.json", "", "claude-code", "is not valid JSON"),
        (
            ".claude/settings.json",
            "{\"hooks\": {\"SessionStart\": {\"hooks\": []}}}",
            "claude-code",
            "`hooks.SessionStart` is an object, not an array",
        ),
        (
            ".codex/config.toml",
            "model = \"o3\"\n[mcp_servers\n",
            "codex",
            "is not valid TOML (line 2, column ",
        ),
        (
            ".codex/config.toml",
            "mcp_servers = { cao-memory = { command = \"x\" } }\n",
            "codex",
            "`mcp_servers` is an inline table",
        ),
        (
            ".codex/hooks.json",
            "{\"hooks\": \"no\"}",
            "codex",
            "`hooks` is a string, not an object",
        ),
        (
            ".kiro/settings/mcp.json",
            "{\"mcpServers\": 1}",
            "kiro",
            "`mcpServers` is a number, not an object",
        ),
    ] {
        let home = TempHome::new().expect("temp home");
        existing_configs(&home);
        write(&home.root().join(file), text);
        let before = snapshot(&home.root());
        let out = setup(&home, &[agent]);
        assert_eq!(out.code, Some(1), "{file}: {}", out.transcript());
        let path = home.root().join(file);
        assert!(
            out.stderr.starts_with(&format!("error: {} {says}", path.display())),
            "{file}: {}",
            out.transcript()
        );
        assert!(out.stderr.contains("hint: nothing was written"), "{}", out.transcript());
        assert_eq!(out.stdout, "");
        assert_eq!(snapshot(&home.root()), before, "{file}: nothing written");
        let out = setup(&home, &[agent, "--remove"]);
        assert_eq!(out.code, Some(1), "{file}: --remove refuses too: {}", out.transcript());
        assert_eq!(snapshot(&home.root()), before);
    }

    // Not UTF-8, and a directory where the file goes.
    let home = TempHome::new().expect("temp home");
    std::fs::write(home.root().join(".claude.json"), b"{\"a\": \"\xff\"}").expect("write");
    let out = setup(&home, &["claude-code"]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    assert!(
        out.stderr.contains(".claude.json is not UTF-8 text (byte 7)"),
        "{}",
        out.transcript()
    );
    let home = TempHome::new().expect("temp home");
    std::fs::create_dir_all(home.root().join(".claude.json")).expect("mkdir");
    let out = setup(&home, &["claude-code"]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    assert!(
        out.stderr.contains(".claude.json is not a regular file"),
        "{}",
        out.transcript()
    );
    assert!(
        !home.root().join(".claude").exists(),
        "the hooks file was not written either"
    );
}

#[test]
fn hooks_the_user_combined_with_cao_are_left_alone() {
    let home = TempHome::new().expect("temp home");
    let mixed = "{\"hooks\": {\"SessionStart\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"cao memory hook \
                 claude-code SessionStart\"}, {\"type\": \"command\", \"command\": \"echo\"}]}]}}\n";
    write(&home.root().join(".claude/settings.json"), mixed);
    let out = setup(&home, &["claude-code"]);
    ok(&out);
    assert!(
        out.stdout
            .contains("runs cao's hook among other hooks; setup leaves it as it is"),
        "{}",
        out.transcript()
    );
    assert_eq!(
        std::fs::read_to_string(home.root().join(".claude/settings.json")).expect("read"),
        mixed
    );
    ok(&setup(&home, &["claude-code", "--remove"]));
    assert_eq!(
        std::fs::read_to_string(home.root().join(".claude/settings.json")).expect("read"),
        mixed
    );
}

#[test]
fn a_symlinked_config_is_edited_through_the_link_and_keeps_its_mode() {
    let home = TempHome::new().expect("temp home");
    let dotfiles = home.root().join("dotfiles");
    write(&dotfiles.join("claude.json"), "{\"a\": 1}\n");
    std::fs::set_permissions(dotfiles.join("claude.json"), std::fs::Permissions::from_mode(0o640)).expect("chmod");
    symlink(dotfiles.join("claude.json"), home.root().join(".claude.json")).expect("symlink");
    ok(&setup(&home, &["claude-code"]));
    let link = std::fs::symlink_metadata(home.root().join(".claude.json")).expect("meta");
    assert!(link.file_type().is_symlink(), "the link is still a link");
    assert!(read_json(&dotfiles.join("claude.json"))["mcpServers"]["cao-memory"].is_object());
    let mode = std::fs::metadata(dotfiles.join("claude.json"))
        .expect("meta")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o640);
}

#[test]
fn json_output_follows_its_schema() {
    let home = TempHome::new().expect("temp home");
    existing_configs(&home);
    let schema_path = cao_testkit::workspace_root().join("docs/schemas/cao.setup-1.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).expect("schema")).expect("json");
    let validator = jsonschema::validator_for(&schema).expect("valid schema");
    for args in [
        &[
            "claude-code",
            "--scope",
            "project",
            "--mode",
            "view",
            "--format",
            "json",
        ][..],
        &["codex", "--dry-run", "--format", "json"][..],
        &["codex", "--remove", "--format", "json"][..],
        &["kiro", "--transport", "http", "--format", "json"][..],
    ] {
        let out = setup(&home, args);
        ok(&out);
        let v = json(&out);
        let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{args:?}: {errors:?}\n{v}");
        assert_eq!(v["schema"], "cao.setup/1");
    }
    let v = json(&setup(&home, &["claude-code", "--dry-run", "--format", "json"]));
    assert!(
        v["files"][0]["diff"]
            .as_str()
            .is_some_and(|d| d.contains("+    \"cao-memory\": {")),
        "{v}"
    );
}

#[test]
fn usage_errors_exit_2_and_touch_nothing() {
    let home = TempHome::new().expect("temp home");
    for (args, says) in [
        (
            &["codex", "--url", "http://x/mcp"][..],
            "--url goes with --transport http",
        ),
        (&["codex", "--scope", "local"][..], "--scope local is Claude Code's"),
        (&["kiro", "--scope", "local"][..], "--scope local is Claude Code's"),
        (
            &["claude-code", "--transport", "http", "--url", "ftp://x/mcp"][..],
            "is not an http(s) URL",
        ),
        (
            &["claude-code", "--transport", "http", "--url", "http://u:p@x/mcp"][..],
            "must not carry credentials",
        ),
        (
            &["claude-code", "--remove", "--mode", "view"][..],
            "cannot be used with",
        ),
        (&["vscode"][..], "invalid value 'vscode'"),
    ] {
        let out = setup(&home, args);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.transcript());
        assert!(out.stderr.contains(says), "{args:?}: {}", out.transcript());
    }
    assert_eq!(snapshot(&home.root()).len(), 0, "{:?}", snapshot(&home.root()));
}
