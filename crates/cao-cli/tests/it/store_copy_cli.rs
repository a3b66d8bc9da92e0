//! `cao store copy` end to end with the real binary: a seeded home copied into a fresh PostgreSQL database and back
//! into a new home gives byte-identical topic files (timestamps included), the same listings, recall results and
//! journal view; the copy is idempotent, a dry run writes nothing, and the JSON report matches its schema. Skipped
//! (with a line saying why) without `CAO_TEST_DATABASE_URL`, except under `CI=true`.

use crate::common::*;
use cao_testkit::TempHome;
use cao_testkit::postgres::TestDatabase;
use std::collections::BTreeMap;
use std::path::Path;

fn schema_valid(value: &serde_json::Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schemas/cao.store.copy-1.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("schema file")).expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator.iter_errors(value).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "cao.store.copy-1.json: {errors:?}\n{value:#}");
}

/// Every topic file and daily audit log file under `home`'s memory directory (overview files aside), by relative
/// path, with its bytes.
fn topic_files(home: &TempHome) -> BTreeMap<String, Vec<u8>> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).expect("readable dir") {
            let path = e.expect("entry").path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|x| x == "md" || x == "jsonl")
                && path.file_name().is_some_and(|n| n != "index.md")
            {
                let rel = path.strip_prefix(root).expect("under root").display().to_string();
                out.insert(rel, std::fs::read(&path).expect("readable file"));
            }
        }
    }
    let mut out = BTreeMap::new();
    let root = home.home().join("memory");
    if root.is_dir() {
        walk(&root, &root, &mut out);
    }
    out
}

/// `cao store copy` in `home`'s environment; the parsed JSON report.
fn copy(home: &TempHome, from: &str, to: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["store", "copy", "--from", from, "--to", to, "--format", "json"];
    args.extend_from_slice(extra);
    let out = cao(home, &args);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let v = json(&out);
    schema_valid(&v);
    v
}

/// The seeded home with two days of audit lines (as the service writes them: two lines a day, mode 0600), so the
/// log's copy is checked too.
fn seeded_home_with_audit_days() -> TempHome {
    let a = seeded_home();
    let logs = a.home().join("memory/logs");
    std::fs::create_dir_all(&logs).expect("logs dir");
    for (day, key) in [("2026-03-04", "prefer-pytest"), ("2026-03-05", "build-commands")] {
        let line = format!(
            "{{\"ts\":\"{day}T05:06:07.000Z\",\"event\":\"store\",\"key\":\"{key}\",\"scope\":\"global\",\
             \"scope_id\":null,\"actor\":\"operator\",\"outcome\":\"created\"}}\n"
        );
        let path = logs.join(format!("audit-{day}.jsonl"));
        std::fs::write(&path, line.repeat(2)).expect("audit file");
        let mut perms = std::fs::metadata(&path).expect("meta").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o600);
        std::fs::set_permissions(&path, perms).expect("mode 600");
    }
    a
}

/// What a reader of `home` sees, with the home's own path replaced: every row, recall for two queries (recency
/// and relevance), and the project journal's view.
fn observed(home: &TempHome) -> Vec<String> {
    let root = home.home().display().to_string();
    let mut seen = Vec::new();
    for args in [
        &["memory", "list", "--all", "--json", "--all-rows"][..],
        &[
            "memory",
            "list",
            "--all",
            "--query",
            "cargo build",
            "--explain",
            "--format",
            "json",
        ],
        &[
            "memory",
            "list",
            "--all",
            "--query",
            "team docs pytest",
            "--explain",
            "--format",
            "json",
        ],
        &["memory", "view", "--format", "json"],
        &["memory", "view", "--container", "global", "--format", "json"],
    ] {
        let out = cao(home, args);
        assert_eq!(out.code, Some(0), "{}", out.transcript());
        seen.push(out.stdout.replace(&root, "[HOME]"));
    }
    seen
}

fn count(report: &serde_json::Value, kind: &str, field: &str) -> u64 {
    report[kind][field]
        .as_u64()
        .unwrap_or_else(|| panic!("{kind}.{field} in {report:#}"))
}

#[test]
fn a_home_copied_to_postgres_and_back_is_byte_identical_and_recalls_alike() {
    let Some(db) = TestDatabase::create() else { return };
    let url = db.url.expose().to_owned();
    let a = seeded_home_with_audit_days();
    let a_path = a.home().display().to_string();
    // Listing records an access (at most one per minute per memory): the first look records it, the second is
    // what the source holds when it is copied.
    observed(&a);
    let before = observed(&a);
    let files = topic_files(&a);
    let topics = files.keys().filter(|p| p.ends_with(".md")).count() as u64;
    assert!(topics >= 6, "the seed wrote topic files: {:?}", files.keys());
    assert!(
        files.keys().any(|p| p.ends_with(".jsonl")),
        "the seed wrote audit lines: {:?}",
        files.keys()
    );

    // Home -> PostgreSQL: every memory and journal copied; a second run writes nothing.
    let first = copy(&a, &a_path, &url, &[]);
    assert_eq!(first["dry_run"], false);
    assert_eq!(count(&first, "memories", "source"), topics);
    assert_eq!(count(&first, "memories", "copied"), topics);
    assert!(count(&first, "journal_entries", "copied") >= topics, "{first:#}");
    assert_eq!(count(&first, "memories", "skipped"), 0);
    assert_eq!(count(&first, "audit_lines", "copied"), 4, "{first:#}");
    let again = copy(&a, &a_path, &url, &[]);
    for kind in [
        "memories",
        "relationships",
        "journals",
        "journal_entries",
        "outcomes",
        "terminals",
        "aliases",
    ] {
        assert_eq!(count(&again, kind, "copied"), 0, "{kind} written twice: {again:#}");
        assert_eq!(
            count(&again, kind, "unchanged"),
            count(&again, kind, "source") - count(&again, kind, "skipped"),
            "{kind}: {again:#}"
        );
    }

    // A dry run into a new home counts everything and writes no topic file.
    let b = TempHome::new().expect("temp home");
    let b_path = b.home().display().to_string();
    let dry = copy(&b, &url, &b_path, &["--dry-run"]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(count(&dry, "memories", "copied"), topics);
    assert!(topic_files(&b).is_empty(), "a dry run wrote topic files");
    for made in ["memory", "db"] {
        assert!(!b.home().join(made).exists(), "a dry run made the target's {made}/");
    }

    // PostgreSQL -> a new home: the same bytes, rows, recall and journal view as the original home.
    let back = copy(&b, &url, &b_path, &[]);
    assert_eq!(count(&back, "memories", "copied"), topics);
    assert_eq!(
        topic_files(&b),
        files,
        "topic or audit files differ after the round trip"
    );
    assert_eq!(observed(&b), before, "what readers see differs after the round trip");
    // Reading the new home changed nothing that a further copy would bring back.
    let last = copy(&b, &url, &b_path, &[]);
    assert_eq!(count(&last, "memories", "copied"), 0, "{last:#}");
}

#[test]
fn a_store_is_not_copied_into_itself_and_a_missing_home_is_named() {
    let a = seeded_home_with_audit_days();
    let a_path = a.home().display().to_string();
    let out = cao(&a, &["store", "copy", "--from", &a_path, "--to", &a_path]);
    assert_eq!(out.code, Some(2), "{}", out.transcript());
    assert!(
        out.stderr.contains("cannot be copied into itself"),
        "{}",
        out.transcript()
    );
    let missing = a.root().join("no-such-home");
    let missing = missing.display().to_string();
    let other = a.root().join("other").display().to_string();
    let out = cao(&a, &["store", "copy", "--from", &missing, "--to", &other]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    assert!(out.stderr.contains("holds no cao memory store"), "{}", out.transcript());
    assert!(!Path::new(&other).exists(), "a failed copy created its target");
}

/// The tables of `db`'s `public` schema, by name.
fn tables(db: &TestDatabase) -> Vec<String> {
    db.client()
        .query(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY 1",
            &[],
        )
        .expect("list tables")
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[test]
fn a_dry_run_into_an_empty_database_creates_nothing_and_says_it_would_create_the_schema() {
    let Some(db) = TestDatabase::create() else { return };
    let url = db.url.expose().to_owned();
    let a = seeded_home_with_audit_days();
    let a_path = a.home().display().to_string();
    let topics = topic_files(&a).keys().filter(|p| p.ends_with(".md")).count() as u64;
    assert!(
        tables(&db).is_empty(),
        "a fresh test database holds tables: {:?}",
        tables(&db)
    );

    // JSON: everything counted as a copy would write it, the schema it would create named, nothing created.
    let dry = copy(&a, &a_path, &url, &["--dry-run"]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["creates_schema"], 1, "{dry:#}");
    assert_eq!(count(&dry, "memories", "copied"), topics);
    assert_eq!(count(&dry, "audit_lines", "copied"), 4, "{dry:#}");
    assert!(tables(&db).is_empty(), "a dry run created tables: {:?}", tables(&db));
    // Text: the same, with a line naming the schema it would create.
    let out = cao(&a, &["store", "copy", "--from", &a_path, "--to", &url, "--dry-run"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert!(
        out.stdout.contains("schema: would create the cao schema (version 1)"),
        "{}",
        out.transcript()
    );
    assert!(tables(&db).is_empty(), "a dry run created tables: {:?}", tables(&db));

    // A database without the schema is no store to copy from: refused, and still nothing is created.
    let b = TempHome::new().expect("temp home");
    let b_path = b.home().display().to_string();
    for extra in [&["--dry-run"][..], &[]] {
        let mut args = vec!["store", "copy", "--from", &url, "--to", &b_path];
        args.extend_from_slice(extra);
        let out = cao(&b, &args);
        assert_eq!(out.code, Some(1), "{}", out.transcript());
        assert!(
            out.stderr.contains("holds no cao memory store (no cao schema)"),
            "{}",
            out.transcript()
        );
        assert!(
            tables(&db).is_empty(),
            "reading an empty source created tables: {:?}",
            tables(&db)
        );
        assert!(!b.home().join("memory").exists(), "a refused copy made its target");
    }

    // The copy itself creates the schema and says so; a dry run afterwards has no schema to create and nothing
    // left to copy.
    let first = copy(&a, &a_path, &url, &[]);
    assert_eq!(first["creates_schema"], 1, "{first:#}");
    assert_eq!(count(&first, "memories", "copied"), topics);
    assert!(
        tables(&db).iter().any(|t| t == "memory_metadata"),
        "the copy created no schema: {:?}",
        tables(&db)
    );
    let again = copy(&a, &a_path, &url, &["--dry-run"]);
    assert!(again.get("creates_schema").is_none(), "{again:#}");
    assert_eq!(count(&again, "memories", "copied"), 0, "{again:#}");
}
