//! `cao memory list --query Q --explain` through real `cao` processes (spec 000 "On-demand relevance explain",
//! "Non-accessing operator inspection", "CLI Commands"): the flag grammar's usage errors touch nothing, the JSON
//! report validates against docs/schemas/cao.memory.explain-1.json, the table has its footer, the switches exit 1
//! naming their keys, an empty pool succeeds, the scope flags narrow the candidates, no content, tags, paths or
//! timestamps leak, explain records no access and expands nothing, and memory.non_accessing_inspection governs
//! list/show.

use crate::common;
use crate::common::{Seed, cao, cao_env, json, seed, t0};
use cao_core::{CaoHome, FixedClock, Scope, Settings};
use cao_lifecycle::{NewRelationship, RelationshipService};
use cao_memory::MemoryService;
use cao_testkit::{RunOutput, TempHome};
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock};

/// Distinctive content and tag words: they must never appear in an explain report.
const CONTENT_MARK: &str = "zqxcontentmark";
const TAG_MARK: &str = "zqxtagmark";

/// Memories in every scope; those with "kafka" match the test query. Content and tags carry the markers.
const KAFKA: &[Seed] = &[
    (
        "global",
        "feedback",
        "kafka-retries",
        "zqxtagmark,streams",
        "kafka consumers retry with backoff zqxcontentmark",
    ),
    (
        "project",
        "reference",
        "kafka-topics",
        "zqxtagmark",
        "kafka streams topics are compacted zqxcontentmark",
    ),
    (
        "project",
        "project",
        "unrelated-note",
        "zqxtagmark",
        "the build uses cargo zqxcontentmark",
    ),
    (
        "session",
        "project",
        "kafka-session-note",
        "zqxtagmark",
        "kafka lag seen in this session zqxcontentmark",
    ),
    (
        "agent",
        "feedback",
        "kafka-agent-note",
        "zqxtagmark",
        "kafka reviews need a schema check zqxcontentmark",
    ),
    (
        "federated",
        "reference",
        "kafka-federated",
        "zqxtagmark",
        "kafka docs for the whole team zqxcontentmark",
    ),
];

fn kafka_home() -> TempHome {
    let home = TempHome::new().expect("temp home");
    seed(&home, KAFKA);
    home
}

/// The compiled schema of the report.
static SCHEMA: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let path = cao_testkit::workspace_root().join("docs/schemas/cao.memory.explain-1.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::validator_for(&schema).expect("the schema compiles")
});

/// Assert `v` is a valid `cao.memory.explain/1` report.
fn assert_valid(v: &Value) {
    let errors: Vec<String> = SCHEMA.iter_errors(v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "schema violations: {errors:?}\n{v:#}");
}

/// Run an explain with `--format json`, expect exit 0, validate the report and return it.
fn explain_json(home: &TempHome, extra: &[&str], env: &[(&str, &str)]) -> Value {
    let mut args = vec!["memory", "list", "--explain", "--format", "json"];
    args.extend_from_slice(extra);
    let out = cao_env(home, &args, env);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let v = json(&out);
    assert_valid(&v);
    v
}

/// `(scope, key)` of every candidate, as a set.
fn candidates(v: &Value) -> BTreeSet<(String, String)> {
    v["candidates"]
        .as_array()
        .unwrap_or_else(|| panic!("candidates array:\n{v:#}"))
        .iter()
        .map(|c| {
            (
                c["scope"].as_str().unwrap_or_default().to_owned(),
                c["key"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn set(items: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    items.iter().map(|(s, k)| ((*s).to_owned(), (*k).to_owned())).collect()
}

/// Every path under `home`, relative, sorted (to show that nothing was created).
fn tree(home: &TempHome) -> Vec<String> {
    fn walk(dir: &std::path::Path, base: &std::path::Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            out.push(p.strip_prefix(base).unwrap_or(&p).display().to_string());
            if p.is_dir() {
                walk(&p, base, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(home.home(), home.home(), &mut out);
    out.sort();
    out
}

/// `(scope/key, access_count, last_accessed_at)` of every row, read straight from the database.
fn access_state(home: &TempHome) -> Vec<(String, i64, Option<String>)> {
    let db = home.home().join("db/cli-agent-orchestrator.db");
    let conn = rusqlite::Connection::open(&db).expect("open db");
    let mut stmt = conn
        .prepare("SELECT scope || '/' || key, access_count, last_accessed_at FROM memory_metadata ORDER BY 1")
        .expect("prepare");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

/// `access_count` of `key` as `cao memory show --format json` reports it, read with non-accessing inspection so
/// that reading it does not change it.
fn shown_access_count(home: &TempHome, key: &str) -> i64 {
    let out = cao_env(
        home,
        &["memory", "show", key, "--format", "json"],
        &[("CAO_MEMORY_NON_ACCESSING_INSPECTION", "true")],
    );
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    json(&out)["access_count"]
        .as_i64()
        .unwrap_or_else(|| panic!("access_count in:\n{}", out.stdout))
}

/// Run `args` on a fresh home: exit 2, nothing on stdout, one `error:` message, nothing created under the home.
fn usage_error(args: &[&str]) -> RunOutput {
    let home = TempHome::new().expect("temp home");
    let out = cao(&home, args);
    assert_eq!(out.code, Some(2), "usage error for {args:?}:\n{}", out.transcript());
    assert_eq!(out.stdout, "", "{args:?}");
    assert!(out.stderr.starts_with("error: "), "{args:?}: {}", out.stderr);
    assert_eq!(
        tree(&home),
        Vec::<String>::new(),
        "a usage error must not touch the home ({args:?})"
    );
    out
}

#[test]
fn every_wrong_flag_combination_is_a_usage_error_that_touches_nothing() {
    let cases: &[(&[&str], &str)] = &[
        (&["--query", "q"], "--explain"),
        (&["--explain"], "--query"),
        (&["--limit", "10"], "--limit"),
        (&["--limit", "5"], "--limit"),
        (&["--format", "table"], "--format"),
        (&["--format", "json"], "--format"),
        (&["--query", "q", "--limit", "10"], "--explain"),
        (&["--query", "q", "--format", "table"], "--explain"),
        (&["--explain", "--limit", "3"], "--query"),
        (&["--query", "  ", "--explain"], "--query"),
        (&["--query", "", "--explain"], "--query"),
        (&["--query", "q", "--explain", "--limit", "0"], "--limit"),
        (&["--query", "q", "--explain", "--limit", "101"], "--limit"),
        (&["--limit", "101"], "--limit"),
        (&["--query", "q", "--explain", "--format", "yaml"], "--format"),
        (&["--format", "yaml"], "--format"),
        (&["--json", "--explain", "--query", "q"], "--format json"),
        (&["--json", "--limit", "10"], "--limit"),
    ];
    for (flags, named) in cases {
        let mut args = vec!["memory", "list"];
        args.extend_from_slice(flags);
        let out = usage_error(&args);
        assert!(out.stderr.contains(named), "{flags:?} names {named}:\n{}", out.stderr);
    }
    // Usage errors win over the settings: even with memory disabled nothing else is said.
    let home = TempHome::new().expect("temp home");
    let out = cao_env(
        &home,
        &["memory", "list", "--query", "q"],
        &[("CAO_MEMORY_ENABLED", "false")],
    );
    assert_eq!(out.code, Some(2), "{}", out.transcript());
}

#[test]
fn json_report_validates_echoes_the_query_and_carries_no_private_data() {
    let home = kafka_home();
    for limit in ["1", "10", "100"] {
        let v = explain_json(&home, &["--query", "  kafka streams ", "--limit", limit], &[]);
        assert_eq!(v["query"], "kafka streams", "echoed, trimmed");
        assert_eq!(v["limit"].to_string(), limit);
        let n = v["candidates"].as_array().map_or(0, Vec::len);
        assert!(n <= 2 * limit.parse::<usize>().unwrap_or(0), "{v:#}");
        assert!(n > 0, "kafka matches: {v:#}");
    }
    // Default limit 10 and the default table format.
    let v = explain_json(&home, &["--query", "kafka"], &[]);
    assert_eq!(v["limit"], 10);
    assert_eq!(
        candidates(&v),
        set(&[
            ("global", "kafka-retries"),
            ("project", "kafka-topics"),
            ("federated", "kafka-federated")
        ]),
        "default visibility: project, global, federated"
    );
    let table = cao(&home, &["memory", "list", "--query", "kafka", "--explain"]);
    assert_eq!(table.code, Some(0), "{}", table.transcript());
    assert!(
        table
            .stdout
            .starts_with("cao.memory.explain/1  query: \"kafka\"  limit: 10"),
        "{}",
        table.stdout
    );

    let raw = cao(
        &home,
        &[
            "memory",
            "list",
            "--query",
            "kafka",
            "--explain",
            "--format",
            "json",
            "--all",
        ],
    );
    assert_valid(&json(&raw));
    let table_all = cao(&home, &["memory", "list", "--query", "kafka", "--explain", "--all"]);
    let home_path = home.home().display().to_string();
    let timestamp = regex::Regex::new(r"\d{4}-\d{2}-\d{2}|\d{2}:\d{2}:\d{2}").expect("regex");
    for (name, text) in [("json", &raw.stdout), ("table", &table_all.stdout)] {
        assert!(
            text.contains("kafka-session-note"),
            "{name}: --all shows the session memory:\n{text}"
        );
        for absent in [
            CONTENT_MARK,
            TAG_MARK,
            "consumers",
            "compacted",
            &home_path,
            ".md",
            "wiki",
            "access_count",
        ] {
            assert!(!text.contains(absent), "{name} leaks {absent:?}:\n{text}");
        }
        assert!(!timestamp.is_match(text), "{name} has a timestamp:\n{text}");
    }
    assert_eq!(raw.stderr, "", "nothing on stderr");
}

#[test]
fn table_has_columns_and_a_footer_with_lexical_degenerate() {
    let home = kafka_home();
    let out = cao(
        &home,
        &["memory", "list", "--query", "kafka", "--explain", "--format", "table"],
    );
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines[1].starts_with("REL#  DEF#  KEY"), "{}", out.stdout);
    for col in ["SCOPE_ID", "TIER", "LEXICAL", "AGE", "RELEVANCE", "FLAGS", "INJECTION"] {
        assert!(lines[1].contains(col), "{col}:\n{}", out.stdout);
    }
    for key in ["kafka-retries", "kafka-topics", "kafka-federated"] {
        assert!(lines.iter().any(|l| l.contains(key)), "{key}:\n{}", out.stdout);
    }
    for footer in [
        "pool: 3 (all_term 3, partial 0); per source: 50",
        "overlap@10: 1.0000",
        "lexical_degenerate: false",
        "lifecycle_enabled: false",
        "eligibility_errors: none",
    ] {
        assert!(lines.contains(&footer), "{footer}:\n{}", out.stdout);
    }
    assert!(
        lines.iter().any(|l| l.starts_with("recency: floor 0.85 + weight 0.15")),
        "{}",
        out.stdout
    );
    // The JSON agrees with the table's footer.
    let v = explain_json(&home, &["--query", "kafka"], &[]);
    assert_eq!(v["lexical_degenerate"], false);
    assert_eq!(v["pool"]["size"], 3);
    assert_eq!(v["overlap"], 1.0);
}

#[test]
fn explain_disabled_by_env_or_config_exits_1_naming_the_key() {
    let home = TempHome::new().expect("temp home");
    let out = cao_env(
        &home,
        &["memory", "list", "--query", "kafka", "--explain"],
        &[("CAO_MEMORY_EXPLAIN_ENABLED", "false")],
    );
    assert_eq!((out.code, out.stdout.as_str()), (Some(1), ""), "{}", out.transcript());
    assert!(
        out.stderr.starts_with("error: ") && out.stderr.contains("memory.explain_enabled"),
        "{}",
        out.stderr
    );
    assert_eq!(tree(&home), Vec::<String>::new(), "nothing created while disabled");

    let home = kafka_home();
    let configured = cao(&home, &["config", "set", "memory.explain_enabled", "false"]);
    assert_eq!(configured.code, Some(0), "{}", configured.transcript());
    let before = access_state(&home);
    for format in ["table", "json"] {
        let out = cao(
            &home,
            &["memory", "list", "--query", "kafka", "--explain", "--format", format],
        );
        assert_eq!((out.code, out.stdout.as_str()), (Some(1), ""), "{}", out.transcript());
        assert!(out.stderr.contains("memory.explain_enabled"), "{}", out.stderr);
    }
    assert_eq!(access_state(&home), before);
    // The environment beats the file; the ordinary list is not gated by the switch.
    explain_json(&home, &["--query", "kafka"], &[("CAO_MEMORY_EXPLAIN_ENABLED", "true")]);
    assert_eq!(cao(&home, &["memory", "list"]).code, Some(0));
}

#[test]
fn memory_disabled_exits_1_naming_memory_enabled() {
    let home = TempHome::new().expect("temp home");
    for env in [
        &[("CAO_MEMORY_ENABLED", "false")][..],
        &[("CAO_MEMORY_ENABLED", "false"), ("CAO_MEMORY_EXPLAIN_ENABLED", "false")],
    ] {
        let out = cao_env(&home, &["memory", "list", "--query", "kafka", "--explain"], env);
        assert_eq!((out.code, out.stdout.as_str()), (Some(1), ""), "{}", out.transcript());
        assert!(out.stderr.contains("memory.enabled"), "{}", out.stderr);
        assert!(
            !out.stderr.contains("memory.explain_enabled"),
            "memory.enabled is checked first: {}",
            out.stderr
        );
    }
    assert_eq!(tree(&home), Vec::<String>::new(), "nothing created while disabled");
}

#[test]
fn an_empty_pool_is_a_successful_diagnostic() {
    let home = TempHome::new().expect("temp home");
    let v = explain_json(&home, &["--query", "nothing matches this"], &[]);
    assert_eq!(v["candidates"], serde_json::json!([]));
    assert_eq!(v["pool"]["size"], 0);
    assert_eq!(v["overlap"], Value::Null);
    assert_eq!(v["lexical_degenerate"], false);
    let home = kafka_home();
    let out = cao(&home, &["memory", "list", "--query", "absentword", "--explain"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines[0].contains("query: \"absentword\""), "{}", out.stdout);
    assert_eq!(lines[1], "no candidates", "{}", out.stdout);
    assert!(lines.contains(&"overlap@10: n/a"), "{}", out.stdout);
    assert!(lines.contains(&"lexical_degenerate: false"), "{}", out.stdout);
}

#[test]
fn scope_type_and_all_narrow_the_candidates() {
    let home = kafka_home();
    let q = ["--query", "kafka"];
    let with = |flags: &[&str]| {
        let mut args = q.to_vec();
        args.extend_from_slice(flags);
        explain_json(&home, &args, &[])
    };
    let global = with(&["--scope", "global"]);
    assert_eq!(candidates(&global), set(&[("global", "kafka-retries")]));
    assert_eq!(global["scope"], "global");
    assert_eq!(
        candidates(&with(&["--scope", "project"])),
        set(&[("project", "kafka-topics")])
    );
    let feedback = with(&["--type", "feedback"]);
    assert_eq!(candidates(&feedback), set(&[("global", "kafka-retries")]));
    assert_eq!(feedback["memory_type"], "feedback");
    let all = with(&["--all"]);
    assert_eq!(all["all"], true);
    assert_eq!(
        candidates(&all),
        set(&[
            ("global", "kafka-retries"),
            ("project", "kafka-topics"),
            ("session", "kafka-session-note"),
            ("agent", "kafka-agent-note"),
            ("federated", "kafka-federated"),
        ])
    );
    assert_eq!(
        candidates(&with(&["--all", "--type", "feedback"])),
        set(&[("global", "kafka-retries"), ("agent", "kafka-agent-note")])
    );
    // Without --all, session and agent memories are visible only with their context.
    assert_eq!(candidates(&with(&["--scope", "session"])), set(&[]));
    let session = explain_json(
        &home,
        &["--query", "kafka", "--scope", "session"],
        &[("CAO_SESSION_NAME", "sess-1")],
    );
    assert_eq!(candidates(&session), set(&[("session", "kafka-session-note")]));
}

#[test]
fn explain_records_no_access_and_expands_no_related_memories() {
    let home = kafka_home();
    // kafka-topics relates to unrelated-note twice over: a legacy related_keys entry and an active relates_to edge.
    {
        let conn = rusqlite::Connection::open(home.home().join("db/cli-agent-orchestrator.db")).expect("open db");
        let n = conn
            .execute(
                "UPDATE memory_metadata SET related_keys = 'unrelated-note' WHERE key = 'kafka-topics'",
                [],
            )
            .expect("update");
        assert_eq!(n, 1);
    }
    let clock = Arc::new(FixedClock::new(t0()));
    let svc =
        MemoryService::open_with(CaoHome::new(home.home()), Settings::default(), clock.clone()).expect("service opens");
    RelationshipService::new(svc.storage().clone(), clock)
        .create(NewRelationship {
            scope: Scope::Project,
            scope_id: Some(common::PROJECT.to_owned()),
            source_key: "kafka-topics".to_owned(),
            target_key: "unrelated-note".to_owned(),
            rel_type: "relates_to".to_owned(),
            origin: None,
            status: Some("active".to_owned()),
            confidence: None,
            rank: None,
            attributes: None,
        })
        .expect("edge");
    drop(svc);

    let before = access_state(&home);
    assert!(before.iter().all(|(_, n, at)| *n == 0 && at.is_none()), "{before:?}");
    // With the default settings (non-accessing inspection off) explain still records nothing.
    for flags in [
        &["--format", "json"][..],
        &["--format", "table"],
        &["--all"],
        &["--scope", "project"],
    ] {
        let mut args = vec!["memory", "list", "--query", "kafka", "--explain"];
        args.extend_from_slice(flags);
        let out = cao(&home, &args);
        assert_eq!(out.code, Some(0), "{}", out.transcript());
        assert!(
            !out.stdout.contains("unrelated-note"),
            "no related expansion:\n{}",
            out.stdout
        );
        if flags == ["--format", "json"] {
            assert_valid(&json(&out));
        }
    }
    assert_eq!(access_state(&home), before, "explain changed access state");
    assert_eq!(shown_access_count(&home, "kafka-topics"), 0);
}

#[test]
fn non_accessing_inspection_decides_whether_list_and_show_count() {
    let home = kafka_home();
    let quiet = [("CAO_MEMORY_NON_ACCESSING_INSPECTION", "true")];
    let before = access_state(&home);
    for args in [
        &["memory", "list"][..],
        &["memory", "list", "--all", "--json"],
        &["memory", "show", "kafka-topics"],
        &["memory", "show", "kafka-retries", "--format", "json"],
    ] {
        let out = cao_env(&home, args, &quiet);
        assert_eq!(out.code, Some(0), "{}", out.transcript());
    }
    assert_eq!(
        access_state(&home),
        before,
        "non-accessing list/show changed access state"
    );
    assert_eq!(shown_access_count(&home, "kafka-topics"), 0);

    // Without the switch (default false, and explicitly false) the same views count.
    let list = cao(&home, &["memory", "list", "--scope", "global"]);
    assert_eq!(list.code, Some(0), "{}", list.transcript());
    assert_eq!(shown_access_count(&home, "kafka-retries"), 1, "list counted");
    assert_eq!(shown_access_count(&home, "kafka-topics"), 0, "only listed rows count");
    let show = cao_env(
        &home,
        &["memory", "show", "kafka-topics"],
        &[("CAO_MEMORY_NON_ACCESSING_INSPECTION", "false")],
    );
    assert_eq!(show.code, Some(0), "{}", show.transcript());
    assert_eq!(shown_access_count(&home, "kafka-topics"), 1, "show counted");
    // The switch in settings.json works like the variable.
    let configured = cao(&home, &["config", "set", "memory.non_accessing_inspection", "true"]);
    assert_eq!(configured.code, Some(0), "{}", configured.transcript());
    let before = access_state(&home);
    assert_eq!(cao(&home, &["memory", "list", "--all"]).code, Some(0));
    assert_eq!(cao(&home, &["memory", "show", "kafka-federated"]).code, Some(0));
    assert_eq!(access_state(&home), before, "settings.json switch ignored");
}

#[test]
fn service_errors_report_the_kind_and_a_hint_and_the_detail_only_at_debug() {
    let home = kafka_home();
    // Break the index under the service: the BM25 table is gone (the rows and the migration record stay, so opening
    // the store neither rebuilds nor repairs it; the first BM25 read fails).
    {
        let conn = rusqlite::Connection::open(home.home().join("db/cli-agent-orchestrator.db")).expect("open db");
        conn.execute_batch("DROP TABLE cao_memory_fts_vocab; DROP TABLE cao_memory_fts;")
            .expect("drop");
    }
    let args = ["memory", "list", "--query", "kafka", "--explain"];
    let out = cao(&home, &args);
    assert_eq!((out.code, out.stdout.as_str()), (Some(1), ""), "{}", out.transcript());
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "error and hint only:\n{}", out.stderr);
    assert!(
        lines[0].starts_with("error: relevance explain failed: "),
        "{}",
        out.stderr
    );
    let kind = lines[0].trim_start_matches("error: relevance explain failed: ");
    assert!(
        !kind.is_empty() && kind.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
        "only the kind: {kind:?}"
    );
    assert!(
        lines[1].starts_with("hint: ") && lines[1].contains("CAO_LOG_LEVEL=DEBUG"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("cao_memory_fts"), "no detail:\n{}", out.stderr);

    for level in ["DEBUG", "debug"] {
        let debug = cao_env(&home, &args, &[("CAO_LOG_LEVEL", level)]);
        assert_eq!(debug.code, Some(1), "{}", debug.transcript());
        assert!(
            debug
                .stderr
                .contains(&format!("debug: relevance explain failed: {kind}: ")),
            "{level}: the detail is printed:\n{}",
            debug.stderr
        );
        assert!(debug.stderr.contains("cao_memory_fts"), "{level}: {}", debug.stderr);
        assert!(
            debug
                .stderr
                .contains(&format!("error: relevance explain failed: {kind}\n")),
            "{}",
            debug.stderr
        );
        assert_eq!(debug.stdout, "");
    }
    let info = cao_env(&home, &args, &[("CAO_LOG_LEVEL", "info")]);
    assert!(
        !info.stderr.contains("debug: relevance explain failed"),
        "{}",
        info.stderr
    );
}

#[test]
fn a_query_may_start_with_a_hyphen() {
    let home = kafka_home();
    let v = explain_json(&home, &["--query", "-camping"], &[]);
    assert_eq!(v["query"], "-camping");
}
