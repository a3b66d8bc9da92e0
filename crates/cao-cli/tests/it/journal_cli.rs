//! The journal from the command line: `cao memory view`, `cao memory purge`, and the Claude Code hook pair with
//! `memory.injection.mode` view/both (the snapshot at SessionStart, the `# Memory updated` reminder at
//! UserPromptSubmit for an entry written by another session).

use crate::common::{PROJECT, cao, cao_env, json, seeded_home};
use cao_core::{CaoHome, Settings, SystemClock, TerminalContext};
use cao_memory::{MemoryService, StoreArgs};
use cao_testkit::service::RawStorage;
use cao_testkit::{DEFAULT_TIMEOUT, RunOutput, TempHome};
use serde_json::Value;
use std::sync::{Arc, LazyLock};

fn validator(name: &str) -> jsonschema::Validator {
    let path = cao_testkit::workspace_root().join("docs/schemas").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

static VIEW_SCHEMA: LazyLock<jsonschema::Validator> = LazyLock::new(|| validator("cao.memory.view-1.json"));
static PURGE_SCHEMA: LazyLock<jsonschema::Validator> = LazyLock::new(|| validator("cao.memory.purge-1.json"));

fn assert_valid(schema: &jsonschema::Validator, v: &Value) {
    let errors: Vec<String> = schema.iter_errors(v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "schema violations: {errors:?}\n{v:#}");
}

/// A service on the home, as another process (another session) would open it.
fn service(home: &TempHome) -> MemoryService {
    MemoryService::open_with(CaoHome::new(home.home()), Settings::default(), Arc::new(SystemClock)).expect("open")
}

fn store_as(svc: &MemoryService, ctx: &TerminalContext, key: &str, content: &str) -> Option<u64> {
    svc.store(
        ctx,
        StoreArgs {
            content: content.into(),
            key: Some(key.into()),
            ..Default::default()
        },
    )
    .expect("store")
    .journal_entry
}

#[test]
fn view_prints_the_live_view_as_text_or_a_validated_json_object() {
    let home = seeded_home();
    let out = cao(&home, &["memory", "view"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    // The project journal: build-commands twice (the seeding wrote it twice).
    assert_eq!(
        out.stdout,
        "<memory>\n0+1|(not summarized yet) note build-commands: Build: cargo build\n\
         1+1|(not summarized yet) note build-commands: Build: cargo build\n</memory>\n"
    );
    let j = cao(&home, &["memory", "view", "--format", "json"]);
    let v = json(&j);
    assert_valid(&VIEW_SCHEMA, &v);
    assert_eq!(
        (v["container"].as_str(), v["entries"].as_u64()),
        (Some(PROJECT), Some(2))
    );
    // The global journal holds global, session and agent memories; federated its own.
    let g = json(&cao(
        &home,
        &["memory", "view", "--scope", "global", "--format", "json"],
    ));
    assert_valid(&VIEW_SCHEMA, &g);
    assert_eq!(
        (g["container"].as_str(), g["entries"].as_u64()),
        (Some("global"), Some(4))
    );
    let f = json(&cao(
        &home,
        &["memory", "view", "--container", "federated", "--format", "json"],
    ));
    assert_eq!(f["entries"].as_u64(), Some(1));
    for bad in [
        &["memory", "view", "--container", "../x"][..],
        &["memory", "view", "--container", ""],
        &["memory", "view", "--container", "p", "--scope", "global"],
        &["memory", "view", "--scope", "galaxy"],
    ] {
        let out = cao(&home, bad);
        assert_eq!(out.code, Some(2), "{bad:?}: {}", out.transcript());
    }
    // A container that does not exist is an error, not an empty view, and asking opens no journal for it: the
    // second ask fails the same way.
    for _ in 0..2 {
        let out = cao(&home, &["memory", "view", "--container", "no-such-project"]);
        assert_ne!(out.code, Some(0), "{}", out.transcript());
        assert!(
            out.stderr.contains("no memory container \"no-such-project\""),
            "{}",
            out.transcript()
        );
        assert!(!out.stdout.contains("<memory>"), "{}", out.transcript());
    }
    let off = cao_env(&home, &["memory", "view"], &[("CAO_MEMORY_ENABLED", "false")]);
    assert_eq!(off.code, Some(1), "{}", off.transcript());
    assert!(off.stderr.contains("memory.enabled"), "{}", off.transcript());
}

/// Every regular file under `dir` whose bytes contain `needle`.
fn files_holding(dir: &std::path::Path, needle: &[u8]) -> Vec<String> {
    let mut hits = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir").flatten() {
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).expect("metadata");
            if meta.is_dir() {
                stack.push(p);
            } else if meta.is_file() {
                let bytes = std::fs::read(&p).expect("read");
                if bytes.windows(needle.len()).any(|w| w == needle) {
                    hits.push(p.display().to_string());
                }
            }
        }
    }
    hits.sort();
    hits
}

#[test]
fn purge_removes_the_text_from_every_file_of_the_home_and_refuses_without_confirmation() {
    let home = seeded_home();
    let svc = service(&home);
    let ctx = TerminalContext {
        project_id: Some(PROJECT.into()),
        ..Default::default()
    };
    const SECRET: &str = "zqxpurgedsecret4471";
    store_as(&svc, &ctx, "leaked", &format!("the token is {SECRET} oops"));
    store_as(&svc, &ctx, "leaked", &format!("rotated; old one was {SECRET}"));
    store_as(&svc, &ctx, "after", "written after the secret");
    drop(svc);
    assert!(
        !files_holding(home.home(), SECRET.as_bytes()).is_empty(),
        "the secret is on disk before"
    );

    let refused = cao(&home, &["memory", "purge", "leaked"]);
    assert_eq!(refused.code, Some(2), "{}", refused.transcript());
    assert!(refused.stderr.contains("--yes"), "{}", refused.transcript());

    let out = cao(&home, &["memory", "purge", "leaked", "--yes", "--format", "json"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let v = json(&out);
    assert_valid(&PURGE_SCHEMA, &v);
    assert_eq!(
        (
            v["file_deleted"].as_bool(),
            v["row_deleted"].as_bool(),
            v["versions_purged"].as_u64(),
            v["first_entry"].as_u64()
        ),
        (Some(true), Some(true), Some(2), Some(2))
    );
    assert!(!out.stdout.contains(SECRET));
    assert_eq!(
        files_holding(home.home(), SECRET.as_bytes()),
        Vec::<String>::new(),
        "no byte of any file under the home (database, WAL, wiki, index.md, audit log) holds the text"
    );
    // The journal keeps the entries, blanked, and the other memories are untouched.
    let svc = service(&home);
    let view = svc
        .view(&ctx, &cao_memory::JournalTarget::default())
        .expect("view")
        .view;
    assert!(
        view.contains("2+1|(not summarized yet) note leaked: (purged)"),
        "{view}"
    );
    assert!(
        view.contains("4+1|(not summarized yet) note after: written after the secret"),
        "{view}"
    );
    drop(svc);

    let again = cao(&home, &["memory", "purge", "leaked", "--yes"]);
    assert_eq!(
        again.code,
        Some(0),
        "the journal entries still exist: {}",
        again.transcript()
    );
    let absent = cao(&home, &["memory", "purge", "never-stored", "--yes"]);
    assert_eq!(absent.code, Some(1), "{}", absent.transcript());
    assert!(absent.stderr.contains("not found"), "{}", absent.transcript());
    let text = cao(&home, &["memory", "purge", "after", "--yes"]);
    assert!(
        text.stdout
            .starts_with("Purged memory 'after' (scope: project): 1 version(s) erased"),
        "{}",
        text.transcript()
    );
}

/// Every line of every daily audit file of `home`, in file order.
fn audit_lines(home: &TempHome) -> Vec<String> {
    let dir = home.home().join("memory/logs");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("logs")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|p| {
            std::fs::read_to_string(p)
                .expect("read")
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Compaction and heal put a memory's text into the audit log on purpose (so nothing they take away is lost); a
/// purge erases it there too: the lines stay, their text fields read `[purged]`, every other line is unchanged, and
/// no file under the home holds the text any more.
#[test]
fn purge_erases_the_text_compaction_and_heal_left_in_the_audit_log() {
    let home = seeded_home();
    const SECRET: &str = "purplezebra4411";
    let svc = service(&home);
    let ctx = TerminalContext {
        project_id: Some(PROJECT.into()),
        ..Default::default()
    };
    store_as(
        &svc,
        &ctx,
        "leaked",
        &format!("the private phrase is {SECRET} do not share"),
    );
    store_as(&svc, &ctx, "leaked", &format!("still the phrase {SECRET} until monday"));
    drop(svc);

    // A `command` model that keeps the header and id lines and writes one consolidated sentence.
    let model = home.home().join("model.sh");
    std::fs::write(
        &model,
        "#!/bin/sh\nsed -n '/^<<<$/,/^>>>$/p' | sed -n '2,3p'\n\
         printf '\\nThe team keeps one private phrase for the vault and rotates it every monday.\\n'\n",
    )
    .expect("write model");
    std::fs::set_permissions(&model, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let model = model.display().to_string();
    let compact = cao_env(
        &home,
        &["memory", "compact", "--scope", "project", "--key", "leaked"],
        &[
            ("CAO_MEMORY_MODEL_PROVIDER", "command"),
            ("CAO_MEMORY_MODEL_COMMAND", &model),
        ],
    );
    assert_eq!(compact.code, Some(0), "{}", compact.transcript());

    // A paragraph naming a file the repository does not have: heal strips it and audits what it removed.
    let svc = service(&home);
    store_as(
        &svc,
        &ctx,
        "leaked",
        &format!("The phrase {SECRET} was kept in src/vault_gone.rs until it moved.\n\nThe vault phrase rotates."),
    );
    drop(svc);
    let root = home.cwd().display().to_string();
    let heal = cao(
        &home,
        &["memory", "heal", "--scope", "project", "--repo-root", &root, "--apply"],
    );
    assert_eq!(heal.code, Some(0), "{}", heal.transcript());

    let before = audit_lines(&home);
    let about_leaked = |l: &str| l.contains("\"key\":\"leaked\"");
    assert!(
        before
            .iter()
            .any(|l| about_leaked(l) && l.contains("\"compact\"") && l.contains(SECRET)),
        "the compact line carries the previous text: {before:#?}"
    );
    assert!(
        before
            .iter()
            .any(|l| about_leaked(l) && l.contains("strip_paragraph") && l.contains(SECRET)),
        "the heal line carries the stripped paragraph: {before:#?}\n{}",
        heal.transcript()
    );

    let out = cao(&home, &["memory", "purge", "leaked", "--yes", "--format", "json"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let v = json(&out);
    assert_valid(&PURGE_SCHEMA, &v);
    assert_eq!(v["audit_lines_scrubbed"].as_u64(), Some(2), "{v:#}");
    assert_eq!(
        files_holding(home.home(), SECRET.as_bytes()),
        Vec::<String>::new(),
        "no byte of any file under the home (database, WAL, wiki, index.md, audit log) holds the text"
    );

    let after = audit_lines(&home);
    for line in before.iter().filter(|l| !about_leaked(l)) {
        assert!(after.contains(line), "a line about another memory changed: {line}");
    }
    let scrubbed: Vec<Value> = after
        .iter()
        .filter(|l| about_leaked(l))
        .map(|l| serde_json::from_str(l).expect("still one JSON object"))
        .filter(|v: &Value| v["event"] == "compact" || v["event"] == "heal")
        .collect();
    assert_eq!(scrubbed.len(), 2, "the lines stay: {after:#?}");
    for v in &scrubbed {
        let field = if v["event"] == "compact" { "previous" } else { "removed" };
        assert_eq!(v[field], "[purged]", "{v}");
        assert!(
            v["ts"].is_string() && v["actor"].is_string() && v["outcome"].is_string(),
            "{v}"
        );
    }
    assert_eq!(
        after.iter().filter(|l| about_leaked(l)).count(),
        before.iter().filter(|l| about_leaked(l)).count() + 1,
        "no line about the memory was dropped; the purge added its own: {after:#?}"
    );

    // A topic file without an index row that heal deleted left its whole text in the audit log only: purging its
    // key erases it there, and counts as found.
    let orphan = home.home().join(format!("memory/{PROJECT}/wiki/project/stray-note.md"));
    std::fs::write(&orphan, format!("# stray-note\n\nThe vault phrase was {SECRET}.\n")).expect("write orphan");
    let heal = cao(
        &home,
        &["memory", "heal", "--scope", "project", "--repo-root", &root, "--apply"],
    );
    assert_eq!(heal.code, Some(0), "{}", heal.transcript());
    assert!(!orphan.exists(), "heal deleted the orphan: {}", heal.transcript());
    assert!(
        !files_holding(home.home(), SECRET.as_bytes()).is_empty(),
        "its text is in the audit log"
    );
    let out = cao(&home, &["memory", "purge", "stray-note", "--yes"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert!(out.stdout.contains("1 audit line(s) scrubbed"), "{}", out.transcript());
    assert_eq!(files_holding(home.home(), SECRET.as_bytes()), Vec::<String>::new());
}

/// Run the Claude Code hook for `event` with `session_id`, cwd = the home's work dir, `env` added.
fn hook(home: &TempHome, event: &str, session_id: &str, source: &str, env: &[(&str, &str)]) -> RunOutput {
    let input = serde_json::json!({
        "session_id": session_id,
        "transcript_path": "/dev/null",
        "cwd": home.cwd(),
        "hook_event_name": event,
        "source": source,
        "prompt": "next step",
    })
    .to_string();
    let path = home.root().join(format!("hook-{event}-{session_id}.json"));
    std::fs::write(&path, input).expect("write input");
    let mut cmd = home.command(env!("CARGO_BIN_EXE_cao"));
    cmd.args(["memory", "hook", "claude-code"])
        .env("CAO_PROJECT_ID", PROJECT)
        .stdin(std::fs::File::open(&path).expect("open input"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cao_testkit::run(&mut cmd, DEFAULT_TIMEOUT).expect("cao starts");
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    out
}

fn added_context(out: &RunOutput) -> Option<String> {
    if out.stdout.trim().is_empty() {
        return None;
    }
    let v: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}:\n{}", out.transcript()));
    Some(
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .expect("additionalContext")
            .to_owned(),
    )
}

#[test]
fn the_hook_pair_takes_a_snapshot_and_reminds_of_entries_written_by_another_session() {
    let home = TempHome::new().expect("temp home");
    let mine = TerminalContext {
        project_id: Some(PROJECT.into()),
        terminal_id: Some("term-mine".into()),
        ..Default::default()
    };
    let other = TerminalContext {
        project_id: Some(PROJECT.into()),
        terminal_id: Some("term-other".into()),
        ..Default::default()
    };
    let svc = service(&home);
    store_as(&svc, &mine, "deploy", "# Deploy\nfrom main only");
    let env = [("CAO_MEMORY_INJECTION_MODE", "view"), ("CAO_TERMINAL_ID", "term-mine")];

    let start = added_context(&hook(&home, "SessionStart", "claude-1", "startup", &env)).expect("a view");
    assert_eq!(
        start,
        "<memory>\n0+1|(not summarized yet) note deploy: Deploy\n</memory>"
    );
    assert_eq!(
        added_context(&hook(&home, "UserPromptSubmit", "claude-1", "", &env)),
        None,
        "nothing new yet"
    );

    // Another session writes; this session writes too (its own entry is not listed).
    assert_eq!(
        store_as(&svc, &other, "flaky-tests", "# Flaky tests\nretry twice"),
        Some(1)
    );
    assert_eq!(store_as(&svc, &mine, "mine", "written here"), Some(2));
    let reminder = added_context(&hook(&home, "UserPromptSubmit", "claude-1", "", &env)).expect("a reminder");
    assert_eq!(reminder, "# Memory updated\n- 1+1 note flaky-tests: Flaky tests");
    assert_eq!(
        added_context(&hook(&home, "UserPromptSubmit", "claude-1", "", &env)),
        None,
        "each entry is listed once"
    );
    // The snapshot held still: it is stored as taken.
    let snap = svc
        .raw_index()
        .journal_read(|j| j.snapshot_get(PROJECT, "claude-1"))
        .expect("read")
        .expect("stored");
    assert_eq!((snap.taken_at_entry, snap.view.as_str()), (1, start.as_str()));

    // A compaction rebuilds the view: the entries are in it, and the reminder is withdrawn.
    let rebuilt = added_context(&hook(&home, "SessionStart", "claude-1", "compact", &env)).expect("a view");
    assert!(
        rebuilt.contains("1+1|(not summarized yet) note flaky-tests: Flaky tests")
            && rebuilt.contains("2+1|(not summarized yet) note mine: written here"),
        "{rebuilt}"
    );
    store_as(&svc, &other, "later", "later note");
    assert_eq!(
        added_context(&hook(&home, "UserPromptSubmit", "claude-1", "", &env)).as_deref(),
        Some("# Memory updated\n- 3+1 note later: later note")
    );

    // Both: the block and the view at start, the block and the reminder at each prompt.
    let both = [("CAO_MEMORY_INJECTION_MODE", "both"), ("CAO_TERMINAL_ID", "term-mine")];
    let start = added_context(&hook(&home, "SessionStart", "claude-2", "startup", &both)).expect("context");
    let (block, view) = start.split_once("\n\n<memory>\n").expect("block then view");
    cao_testkit::injection::assert_sealed(block);
    assert!(view.contains("3+1|"), "{view}");
    store_as(&svc, &other, "newest", "newest note");
    let prompt = added_context(&hook(&home, "UserPromptSubmit", "claude-2", "", &both)).expect("context");
    assert!(prompt.starts_with("<cao-memory>\n"), "{prompt}");
    assert!(
        prompt.ends_with("</cao-memory>\n\n# Memory updated\n- 4+1 note newest: newest note"),
        "{prompt}"
    );

    // Block (the default): no snapshot is taken and no reminder is given.
    let block_only = [("CAO_TERMINAL_ID", "term-mine")];
    let start = added_context(&hook(&home, "SessionStart", "claude-3", "startup", &block_only)).expect("block");
    assert!(
        start.starts_with("<cao-memory>") && !start.contains("<memory>"),
        "{start}"
    );
    assert!(
        svc.raw_index()
            .journal_read(|j| j.snapshot_get(PROJECT, "claude-3"))
            .expect("read")
            .is_none()
    );
}
