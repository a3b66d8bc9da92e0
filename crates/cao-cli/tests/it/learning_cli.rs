//! `cao memory promote`, `cao memory outcomes list` and `cao agents` against the real binary: the plan and the
//! apply on a CRLF profile with hand-written text around the block, the refusals (flag off, built-in target,
//! missing profile, bad names), the JSON outputs against their schemas, and the agent profile commands.

use crate::common::{cao, cao_env, json};
use cao_core::{CaoHome, FixedClock, Settings, TerminalContext};
use cao_index::TerminalRow;
use cao_memory::{MemoryService, OutcomeDraft, RecallArgs, StoreLessonArgs};
use cao_testkit::TempHome;
use cao_testkit::service::RawStorage;
use chrono::{Duration, TimeZone, Utc};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, LazyLock};

fn validator(name: &str) -> jsonschema::Validator {
    let path = cao_testkit::workspace_root().join("docs").join("schemas").join(name);
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("schema file")).expect("schema is JSON");
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

static PROMOTE: LazyLock<jsonschema::Validator> = LazyLock::new(|| validator("cao.memory.promote-1.json"));
static OUTCOMES: LazyLock<jsonschema::Validator> = LazyLock::new(|| validator("cao.memory.outcomes-1.json"));
static AGENTS: LazyLock<jsonschema::Validator> = LazyLock::new(|| validator("cao.agents-1.json"));

fn assert_valid(schema: &jsonschema::Validator, v: &Value) {
    let errors: Vec<String> = schema.iter_errors(v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}\n{v:#}");
}

const LEARNING: &[(&str, &str)] = &[("CAO_MEMORY_LEARNING_ENABLED", "true")];
const APPLY: &[(&str, &str)] = &[
    ("CAO_MEMORY_LEARNING_ENABLED", "true"),
    ("CAO_MEMORY_INSTRUCTION_PROMOTION_ENABLED", "true"),
];

const PROFILE: &str = "---\r\nname: worker\r\ndescription: Converts packages\r\n---\r\n\r\n# Worker\r\n\r\nHand-written \
                       intro.\r\n\r\n## Notes\r\nKeep this paragraph.\r\n";

/// A home with a worker profile in the default agent store and two lessons for it stored by a registered
/// retrospector terminal; `keep-cache` was recalled three times by the worker (one minute apart), `rare` never.
fn home_with_lessons() -> (TempHome, PathBuf) {
    let home = TempHome::new().expect("temp home");
    let store = home.home().join("agent-store");
    std::fs::create_dir_all(&store).expect("mkdir");
    let profile = store.join("worker.md");
    std::fs::write(&profile, PROFILE).expect("profile");
    let clock = Arc::new(FixedClock::new(
        Utc.with_ymd_and_hms(2026, 4, 1, 8, 0, 0).single().expect("time"),
    ));
    let settings = Settings::from_value(json!({"memory": {"learning_enabled": true}}));
    let svc = MemoryService::open_with(CaoHome::new(home.home()), settings, clock.clone()).expect("open");
    let row = TerminalRow {
        id: "t-retro".into(),
        provider: "codex".into(),
        session_name: Some("s1".into()),
        agent_profile: Some("retrospector".into()),
        cwd: None,
        created_at: None,
        updated_at: None,
    };
    svc.raw_index()
        .upsert_terminal(&row, clock.now_utc())
        .expect("register");
    let retro = TerminalContext {
        terminal_id: Some("t-retro".into()),
        ..Default::default()
    };
    for (key, text) in [
        (
            "keep-cache",
            "Preserve the Lookup cache mode. Applies when: translating a Lookup.",
        ),
        ("rare", "Rarely relevant. Applies when: never."),
    ] {
        svc.store_lesson(
            &retro,
            StoreLessonArgs {
                target_agent_profile: "worker".into(),
                content: text.into(),
                key: Some(key.into()),
                tags: None,
            },
        )
        .expect("lesson");
    }
    let worker = TerminalContext {
        agent_profile: Some("worker".into()),
        ..Default::default()
    };
    for _ in 0..3 {
        clock.advance(Duration::seconds(61));
        svc.recall(
            &worker,
            cao_memory::Call::new(
                RecallArgs {
                    query: Some("lookup cache".into()),
                    ..Default::default()
                },
                cao_memory::CallOptions {
                    record_access: true,
                    ..Default::default()
                },
            ),
        )
        .expect("recall");
    }
    svc.record_outcome(&OutcomeDraft {
        session_name: Some("s1".into()),
        task_label: Some("convert package A (iteration 1)".into()),
        success: Some(json!(false)),
        score: Some(json!(40)),
        friction_notes: Some("Cache mode lost.".into()),
        workflow_name: Some("ssis-migration".into()),
        agent_profile: Some("transformer".into()),
        source_terminal_id: None,
    })
    .expect("outcome");
    svc.flush_index_md().expect("flush");
    (home, profile)
}

trait NowUtc {
    fn now_utc(&self) -> chrono::DateTime<Utc>;
}
impl NowUtc for Arc<FixedClock> {
    fn now_utc(&self) -> chrono::DateTime<Utc> {
        cao_core::Clock::now(self.as_ref())
    }
}

#[test]
fn promote_plans_then_applies_into_a_crlf_profile_and_then_proposes_nothing() {
    let (home, profile) = home_with_lessons();
    let plan = cao_env(&home, &["memory", "promote", "worker"], LEARNING);
    assert_eq!(plan.code, Some(0), "{}", plan.transcript());
    assert!(
        plan.stdout.contains("+ add     keep-cache (recalled 3 times)"),
        "{}",
        plan.stdout
    );
    assert!(
        plan.stdout.contains("not eligible rare: recalled 0 times; needs 3"),
        "{}",
        plan.stdout
    );
    assert!(plan.stdout.contains("Dry run: nothing was written"), "{}", plan.stdout);
    assert_eq!(std::fs::read_to_string(&profile).expect("read"), PROFILE);

    let as_json = cao_env(&home, &["memory", "promote", "worker", "--format", "json"], LEARNING);
    assert_valid(&PROMOTE, &json(&as_json));

    let off = cao_env(&home, &["memory", "promote", "worker", "--apply"], LEARNING);
    assert_eq!(off.code, Some(1), "{}", off.transcript());
    assert!(
        off.stderr.contains("memory.instruction_promotion_enabled"),
        "{}",
        off.stderr
    );
    assert_eq!(
        std::fs::read_to_string(&profile).expect("read"),
        PROFILE,
        "refused: untouched"
    );

    // The dry run's digest names its plan: another digest writes nothing; this one writes exactly the plan.
    let digest = plan
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("plan digest: "))
        .unwrap_or_else(|| panic!("no digest line:\n{}", plan.stdout))
        .to_owned();
    assert!(
        plan.stdout.contains(&format!(
            "apply exactly this plan: cao memory promote worker --apply --plan-digest {digest}"
        )),
        "{}",
        plan.stdout
    );
    assert_eq!(json(&as_json)["plan_digest"].as_str(), Some(digest.as_str()));
    let stale = cao_env(
        &home,
        &[
            "memory",
            "promote",
            "worker",
            "--apply",
            "--plan-digest",
            &"0".repeat(64),
        ],
        APPLY,
    );
    assert_eq!(stale.code, Some(1), "{}", stale.transcript());
    assert!(
        stale.stderr.contains("the plan changed since you reviewed it"),
        "{}",
        stale.stderr
    );
    assert_eq!(
        std::fs::read_to_string(&profile).expect("read"),
        PROFILE,
        "refused: untouched"
    );

    let applied = cao_env(
        &home,
        &[
            "memory",
            "promote",
            "worker",
            "--apply",
            "--plan-digest",
            &digest,
            "--format",
            "json",
        ],
        APPLY,
    );
    assert_eq!(applied.code, Some(0), "{}", applied.transcript());
    let report = json(&applied);
    assert_valid(&PROMOTE, &report);
    assert_eq!(report["written"], true);
    let text = std::fs::read_to_string(&profile).expect("read");
    let block = "<!-- cao-learned:begin -->\r\n## Learned Patterns\r\n<!-- Maintained by CAO instruction promotion. Edit \
                 via `cao memory promote`; manual edits inside this block may be overwritten. -->\r\n<!-- lesson: \
                 keep-cache -->\r\n- Preserve the Lookup cache mode. Applies when: translating a Lookup.\r\n<!-- \
                 cao-learned:end -->\r\n";
    assert_eq!(text, format!("{PROFILE}\r\n{block}"));

    let again = cao_env(&home, &["memory", "promote", "worker", "--apply"], APPLY);
    assert_eq!(again.code, Some(0), "{}", again.transcript());
    assert!(again.stdout.contains("Nothing to change"), "{}", again.stdout);
    assert_eq!(std::fs::read_to_string(&profile).expect("read"), text);
}

#[test]
fn promote_refuses_builtins_missing_profiles_and_bad_names() {
    let (home, _) = home_with_lessons();
    let builtin = cao_env(&home, &["memory", "promote", "retrospector"], LEARNING);
    assert_eq!(builtin.code, Some(1), "{}", builtin.transcript());
    assert!(
        builtin.stderr.contains("built-in") && builtin.stderr.contains("cao agents install"),
        "{}",
        builtin.stderr
    );
    let missing = cao_env(&home, &["memory", "promote", "nobody"], LEARNING);
    assert_eq!(missing.code, Some(1), "{}", missing.transcript());
    assert!(missing.stderr.contains("nobody.md"), "{}", missing.stderr);
    for args in [
        &["memory", "promote", "../worker"][..],
        &["memory", "promote", "worker", "--remove", "Bad Key"],
        &["memory", "promote", "worker", "--min-recalls", "-1"],
        &["memory", "promote", "worker", "--format", "yaml"],
    ] {
        let out = cao(&home, args);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.transcript());
    }
    let memory_off = cao_env(
        &home,
        &["memory", "promote", "worker"],
        &[("CAO_MEMORY_ENABLED", "false")],
    );
    assert_eq!(memory_off.code, Some(1));
    assert!(memory_off.stderr.contains("memory.enabled"), "{}", memory_off.stderr);
}

#[test]
fn outcomes_list_as_table_and_json() {
    let (home, _) = home_with_lessons();
    let table = cao_env(&home, &["memory", "outcomes", "list"], LEARNING);
    assert_eq!(table.code, Some(0), "{}", table.transcript());
    assert!(table.stdout.starts_with("CREATED "), "{}", table.stdout);
    assert!(
        table.stdout.contains("transformer") && table.stdout.contains("fail"),
        "{}",
        table.stdout
    );
    assert!(table.stdout.contains("friction: Cache mode lost."), "{}", table.stdout);
    let j = cao_env(
        &home,
        &["memory", "outcomes", "list", "--session", "s1", "--format", "json"],
        LEARNING,
    );
    let v = json(&j);
    assert_valid(&OUTCOMES, &v);
    assert_eq!(v["outcomes"].as_array().map(Vec::len), Some(1));
    let none = cao_env(&home, &["memory", "outcomes", "list", "--session", "other"], LEARNING);
    assert_eq!(none.stdout, "No outcomes found.\n");
    let off = cao(&home, &["memory", "outcomes", "list"]);
    assert_eq!(
        (off.code, off.stdout.as_str()),
        (Some(0), "No outcomes found.\n"),
        "{}",
        off.transcript()
    );
    assert!(off.stderr.contains("memory.learning_enabled"), "{}", off.stderr);
    assert_eq!(
        cao(&home, &["memory", "outcomes", "list", "--limit", "0"]).code,
        Some(2)
    );
}

#[test]
fn agents_list_show_install_and_skill() {
    let home = TempHome::new().expect("temp home");
    let list = cao(&home, &["agents", "list", "--format", "json"]);
    assert_eq!(list.code, Some(0), "{}", list.transcript());
    let v = json(&list);
    assert_valid(&AGENTS, &v);
    let names: Vec<&str> = v["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    assert_eq!(names, ["memory_manager", "retrospector"]);
    assert_eq!(v["agents"][1]["capabilities"], json!(["store_lesson"]));
    assert!(!home.home().join("memory").exists(), "profiles never open the store");

    let show = cao(&home, &["agents", "show", "retrospector"]);
    assert_eq!(show.code, Some(0), "{}", show.transcript());
    assert!(
        show.stdout
            .starts_with("Name:         retrospector\nSource:       builtin\nCapabilities: store_lesson\n")
    );
    assert!(show.stdout.contains("list_outcomes"), "{}", show.stdout);

    let install = cao(&home, &["agents", "install", "retrospector"]);
    assert_eq!(install.code, Some(0), "{}", install.transcript());
    let copy = home.home().join("agent-store").join("retrospector.md");
    assert_eq!(
        std::fs::read_to_string(&copy).expect("installed"),
        cao_learn::builtin::RETROSPECTOR.text
    );
    std::fs::write(&copy, "---\nname: retrospector\n---\nedited\n").expect("edit");
    let again = cao(&home, &["agents", "install", "retrospector"]);
    assert_eq!(again.code, Some(1), "{}", again.transcript());
    assert!(again.stderr.contains("not overwritten"), "{}", again.stderr);
    assert_eq!(
        std::fs::read_to_string(&copy).expect("read"),
        "---\nname: retrospector\n---\nedited\n"
    );
    let listed = json(&cao(&home, &["agents", "list", "--format", "json"]));
    assert_eq!(listed["agents"][1]["source"], "file", "the copy shadows the built-in");

    assert_eq!(cao(&home, &["agents", "install", "worker"]).code, Some(1));
    assert_eq!(cao(&home, &["agents", "show", "nobody"]).code, Some(1));
    assert_eq!(cao(&home, &["agents", "show", "../x"]).code, Some(2));
    let skill = cao(&home, &["agents", "skill", "cao-learning"]);
    assert_eq!(skill.code, Some(0));
    assert!(skill.stdout.contains("report_outcome"), "{}", skill.stdout);
}
