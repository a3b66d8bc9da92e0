//! `cao memory export` / `cao memory import` through the real binary: a seeded home exported (directory and
//! archive) and imported into a fresh home, the reference's report lines, the JSON reports against
//! docs/schemas/, and hostile bundles end to end (path traversal, absolute names, links, devices, a fifo, a 1 GiB
//! sparse entry, a header claiming 600 MiB, YAML bombs and deep nesting, invalid UTF-8, a spoofed entry heading,
//! secrets into federated): each is a clear per-file rejection or a clear refusal of the whole bundle, nothing is
//! written outside the home, nothing panics.

use crate::common::{cao, filters, json, listed, seeded_home};
use cao_testkit::TempHome;
use cao_testkit::tarball::{RawEntry, tar_gz};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

fn validator(name: &str) -> jsonschema::Validator {
    let path = cao_testkit::workspace_root().join("docs/schemas").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

static IMPORT_SCHEMA: LazyLock<jsonschema::Validator> = LazyLock::new(|| validator("cao.memory.import-1.json"));
static EXPORT_SCHEMA: LazyLock<jsonschema::Validator> = LazyLock::new(|| validator("cao.memory.export-1.json"));

fn assert_valid(schema: &jsonschema::Validator, v: &Value) {
    let errors: Vec<String> = schema.iter_errors(v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "schema violations: {errors:?}\n{v:#}");
}

/// Every path under `dir` (files, links, directories), relative; `skip` is left out with everything below it.
fn tree(dir: &Path, skip: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(list) = std::fs::read_dir(&d) else { continue };
        for e in list.flatten() {
            let p = e.path();
            if p.starts_with(skip) {
                continue;
            }
            out.insert(p.strip_prefix(dir).expect("under").to_path_buf());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            }
        }
    }
    out
}

fn all_listed(home: &TempHome) -> Vec<(String, String)> {
    let out = cao(home, &["memory", "list", "--all", "--json"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let mut v = listed(&out);
    v.sort();
    v
}

#[test]
fn a_seeded_home_round_trips_through_export_and_import() {
    let home = seeded_home();
    let out_dir = home.root().join("out");
    let g = out_dir.join("global");
    let p = out_dir.join("project.tar.gz");
    let s = out_dir.join("session");
    let e = cao(
        &home,
        &["memory", "export", "--scope", "global", "-o", g.to_str().expect("utf8")],
    );
    assert_eq!(e.code, Some(0), "{}", e.transcript());
    filters(&home).bind(|| insta::assert_snapshot!("export_global_text", e.stdout));
    let e = cao(
        &home,
        &[
            "memory",
            "export",
            "--scope",
            "project",
            "-o",
            p.to_str().expect("utf8"),
            "--json",
        ],
    );
    assert_eq!(e.code, Some(0), "{}", e.transcript());
    let report = json(&e);
    assert_valid(&EXPORT_SCHEMA, &report);
    assert_eq!(
        (report["exported"].as_u64(), report["scope_id"].as_str()),
        (Some(1), Some("test-proj"))
    );
    let e = cao(
        &home,
        &[
            "memory",
            "export",
            "--scope",
            "session",
            "-o",
            s.to_str().expect("utf8"),
        ],
    );
    assert_eq!(e.code, Some(1), "private without the flag: {}", e.transcript());
    assert!(e.stderr.contains("--include-private"), "{}", e.transcript());
    assert!(!s.exists(), "nothing written");
    let e = cao(
        &home,
        &[
            "memory",
            "export",
            "--scope",
            "session",
            "-o",
            s.to_str().expect("utf8"),
            "--include-private",
        ],
    );
    assert_eq!(e.code, Some(0), "{}", e.transcript());
    assert!(s.join("sess-1/current-task.md").is_file());
    let e = cao(
        &home,
        &[
            "memory",
            "export",
            "--scope",
            "global",
            "-o",
            p.to_str().expect("utf8"),
            "--prune",
        ],
    );
    assert_eq!(
        e.code,
        Some(2),
        "--prune with an archive is a usage error: {}",
        e.transcript()
    );

    let fresh = TempHome::new().expect("temp home");
    let i = cao(
        &fresh,
        &[
            "memory",
            "import",
            g.to_str().expect("utf8"),
            "--scope",
            "global",
            "--dry-run",
        ],
    );
    assert_eq!(i.code, Some(0), "{}", i.transcript());
    filters(&home).bind(|| insta::assert_snapshot!("import_global_dry_run_text", i.stdout));
    assert!(all_listed(&fresh).is_empty(), "a dry run writes nothing");
    let i = cao(
        &fresh,
        &["memory", "import", g.to_str().expect("utf8"), "--scope", "global"],
    );
    assert_eq!(i.code, Some(0), "{}", i.transcript());
    let i = cao(
        &fresh,
        &[
            "memory",
            "import",
            p.to_str().expect("utf8"),
            "--scope",
            "project",
            "--format",
            "json",
        ],
    );
    assert_eq!(i.code, Some(0), "{}", i.transcript());
    let report = json(&i);
    assert_valid(&IMPORT_SCHEMA, &report);
    assert_eq!(
        (
            report["imported"].as_u64(),
            report["archive"].as_bool(),
            report["target_scope_id"].as_str()
        ),
        (Some(1), Some(true), Some("test-proj"))
    );
    let theirs: Vec<(String, String)> = all_listed(&home)
        .into_iter()
        .filter(|(scope, _)| scope == "global" || scope == "project")
        .collect();
    assert_eq!(all_listed(&fresh), theirs);
    let again = cao(
        &fresh,
        &["memory", "import", g.to_str().expect("utf8"), "--scope", "global"],
    );
    assert!(again.stdout.contains("skipped (conflict): 2"), "{}", again.transcript());
}

/// A JSON import report of `source` into `scope` of `home` (exit 0 expected), validated against the schema.
fn import_json(home: &TempHome, source: &Path, scope: &str) -> Value {
    let out = cao(
        home,
        &[
            "memory",
            "import",
            source.to_str().expect("utf8"),
            "--scope",
            scope,
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let v = json(&out);
    assert_valid(&IMPORT_SCHEMA, &v);
    v
}

fn error_of<'a>(report: &'a Value, path: &str) -> &'a str {
    report["errors"][path]
        .as_str()
        .unwrap_or_else(|| panic!("{path} is not rejected: {report:#}"))
}

const OK: &str = "---\ntype: project\n---\n# ok\n\nA fine topic.\n";

fn yaml_bomb() -> String {
    let mut bomb = String::from(
        "---\ntype: project\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let names = ["b", "c", "d", "e", "f", "g", "h", "i"];
    for (i, name) in names.iter().enumerate() {
        let prev = if i == 0 { "a" } else { names[i - 1] };
        bomb.push_str(&format!(
            "{name}: &{name} [{}]\n",
            vec![format!("*{prev}"); 9].join(",")
        ));
    }
    bomb.push_str("---\nBody.\n");
    bomb
}

#[test]
fn a_hostile_archive_is_rejected_file_by_file_and_writes_nothing_outside_the_home() {
    let home = TempHome::new().expect("temp home");
    let root = home.root();
    let outside = root.join("outside.md");
    std::fs::write(&outside, "---\ntype: project\n---\nStolen through a link.\n").expect("write");
    let absolute = format!("{}/abs-evil.md", root.display());
    let entries = vec![
        RawEntry::file("../evil.md", OK),
        RawEntry::file("a/../../evil2.md", OK),
        RawEntry::file(absolute.as_bytes(), OK),
        RawEntry::symlink("link.md", outside.to_str().expect("utf8")),
        RawEntry::hardlink("hard.md", "/etc/passwd"),
        RawEntry::char_device("dev.md"),
        RawEntry::fifo("fifo.md"),
        RawEntry::file(b"bad\xffname.md", OK),
        RawEntry::file("badutf8.md", b"---\ntype: project\n---\nbad \xff byte\n"),
        RawEntry::file("bomb.md", yaml_bomb()),
        RawEntry::file(
            "deep.md",
            format!(
                "---\ntype: project\nx: {}{}\n---\nBody.\n",
                "[".repeat(5000),
                "]".repeat(5000)
            ),
        ),
        RawEntry::file("nested/inner.md", OK),
        RawEntry::file(
            "spoof.md",
            "---\ntype: project\n---\nreal\n## 2020-01-01T00:00:00Z\nfake entry\n<!-- id: x | scope: global | type: user | tags:  -->\n",
        ),
        RawEntry::sparse("sparse.md", 1 << 30),
        RawEntry::file("ok.md", OK),
        RawEntry::file("./ok.md", "---\ntype: user\n---\nSecond copy.\n"),
    ];
    let archive = root.join("hostile.tar.gz");
    std::fs::write(&archive, tar_gz(&entries)).expect("write archive");
    let before = tree(&root, home.home());
    let started = std::time::Instant::now();
    let report = import_json(&home, &archive, "global");
    assert!(
        started.elapsed().as_secs() < 30,
        "bounded work: {:?}",
        started.elapsed()
    );
    assert_eq!(
        report["imported"], 1,
        "spoof (both copies of ok.md are refused): {report:#}"
    );
    assert_eq!(report["bodies_escaped"], 1);
    for (path, reason) in [
        ("../evil.md", "path escapes the bundle root"),
        ("a/../../evil2.md", "path escapes the bundle root"),
        (absolute.as_str(), "absolute path"),
        ("link.md", "symlink"),
        ("hard.md", "symlink"),
        ("dev.md", "not a regular file"),
        ("fifo.md", "not a regular file"),
        ("bad\u{fffd}name.md", "not valid UTF-8"),
        ("badutf8.md", "not valid UTF-8"),
        ("bomb.md", "frontmatter"),
        ("deep.md", "frontmatter"),
        ("nested/inner.md", "nested topic paths"),
        ("sparse.md", "too large to be a topic (1073741824 bytes)"),
        ("ok.md", "more than once"),
    ] {
        let got = error_of(&report, path);
        assert!(got.contains(reason), "{path}: {got:?} should say {reason:?}");
    }
    assert_eq!(report["rejected"], 15, "13 hostile entries and both copies of ok.md");
    assert_eq!(tree(&root, home.home()), before, "nothing written outside the home");
    let inside: BTreeSet<PathBuf> = tree(home.home(), &home.home().join("memory/global/wiki/global"))
        .into_iter()
        .filter(|p| p.components().count() == 1)
        .collect();
    assert_eq!(inside, BTreeSet::from([PathBuf::from("db"), PathBuf::from("memory")]));
    for name in ["evil.md", "evil2.md", "abs-evil.md"] {
        assert!(!root.join(name).exists() && !home.home().join(name).exists(), "{name}");
    }
    let show = cao(
        &home,
        &["memory", "show", "spoof", "--scope", "global", "--format", "json"],
    );
    let shown = json(&show);
    assert_eq!(shown["entry_count"], 1, "a spoofed heading does not become an entry");
    assert!(
        shown["content"]
            .as_str()
            .expect("content")
            .contains("\\#\\# 2020-01-01T00:00:00Z")
    );
    let text = cao(
        &home,
        &[
            "memory",
            "import",
            archive.to_str().expect("utf8"),
            "--scope",
            "global",
            "--dry-run",
        ],
    );
    assert_eq!(text.code, Some(0));
    assert!(
        !text.stdout.contains('\u{1b}') && !text.stdout.contains("Stolen"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains("rejected 'bad\u{fffd}name.md': unsafe path: path is not valid UTF-8")
    );
}

#[test]
fn a_hostile_directory_is_never_followed_out_of_the_bundle() {
    let home = TempHome::new().expect("temp home");
    let root = home.root();
    let bundle = root.join("bundle");
    std::fs::create_dir_all(bundle.join("sub")).expect("mkdir");
    let secret_dir = root.join("secret-dir");
    std::fs::create_dir(&secret_dir).expect("mkdir");
    std::fs::write(secret_dir.join("loot.md"), "---\ntype: project\n---\nLoot.\n").expect("write");
    std::fs::write(root.join("outside.md"), "---\ntype: project\n---\nOutside.\n").expect("write");
    std::os::unix::fs::symlink(root.join("outside.md"), bundle.join("link.md")).expect("symlink");
    std::os::unix::fs::symlink(&secret_dir, bundle.join("linked-dir")).expect("symlink");
    std::fs::write(bundle.join("sub/nested.md"), OK).expect("write");
    std::fs::write(bundle.join("ok.md"), OK).expect("write");
    std::fs::write(bundle.join("index.md"), "# Index\n* [ok](ok.md)\n").expect("write");
    let fifo = std::process::Command::new("mkfifo")
        .arg(bundle.join("pipe.md"))
        .status();
    let report = import_json(&home, &bundle, "project");
    assert_eq!(report["imported"], 1, "{report:#}");
    assert!(error_of(&report, "link.md").contains("symlink"));
    assert!(error_of(&report, "sub/nested.md").contains("nested"));
    if fifo.is_ok_and(|s| s.success()) {
        assert!(
            error_of(&report, "pipe.md").contains("not a regular file"),
            "a fifo is never opened"
        );
    }
    assert!(
        report["errors"].get("linked-dir/loot.md").is_none(),
        "a symlinked directory is not walked"
    );
    let keys: Vec<String> = all_listed(&home).into_iter().map(|(_, k)| k).collect();
    assert_eq!(keys, ["ok"]);
}

#[test]
fn bundles_over_a_limit_or_not_bundles_at_all_are_refused_whole() {
    let home = TempHome::new().expect("temp home");
    let root = home.root();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "claims.tar.gz",
            tar_gz(&[RawEntry::file("ok.md", OK), RawEntry::declared("huge.md", 600 << 20)]),
            "more than 512 MiB of file data",
        ),
        (
            "plain.tar.gz",
            b"this is not gzip".to_vec(),
            "not a gzip-compressed tar archive",
        ),
        (
            "longname.tar.gz",
            tar_gz(&[RawEntry::file(format!("{}.md", "n".repeat(70_000)), OK)]),
            "extension header",
        ),
    ];
    for (name, bytes, reason) in cases {
        let path = root.join(name);
        std::fs::write(&path, bytes).expect("write");
        let out = cao(
            &home,
            &["memory", "import", path.to_str().expect("utf8"), "--scope", "global"],
        );
        assert_eq!(out.code, Some(1), "{name}: {}", out.transcript());
        assert!(
            out.stderr.contains("bundle refused") && out.stderr.contains(reason),
            "{name}: {}",
            out.stderr
        );
        assert_eq!(out.stderr.lines().count(), 1, "one clear line: {}", out.stderr);
    }
    assert!(all_listed(&home).is_empty(), "nothing was imported");
    let out = cao(&home, &["memory", "import", "no-such-bundle", "--scope", "federated"]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    assert!(out.stderr.contains("cannot read the bundle"), "{}", out.stderr);
}

#[test]
fn secrets_never_enter_federated_and_are_never_echoed() {
    let home = TempHome::new().expect("temp home");
    let bundle = home.root().join("bundle");
    std::fs::create_dir(&bundle).expect("mkdir");
    let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB";
    std::fs::write(
        bundle.join("cred.md"),
        format!("---\ntype: reference\n---\ntoken: {token}\n"),
    )
    .expect("write");
    std::fs::write(
        bundle.join("tagged.md"),
        format!("---\ntype: reference\ntags: [\"{token}\"]\n---\nclean\n"),
    )
    .expect("write");
    std::fs::write(bundle.join("clean.md"), "---\ntype: reference\n---\nClean.\n").expect("write");
    for format in ["text", "json"] {
        let out = cao(
            &home,
            &[
                "memory",
                "import",
                bundle.to_str().expect("utf8"),
                "--scope",
                "federated",
                "--format",
                format,
            ],
        );
        assert_eq!(out.code, Some(0), "{}", out.transcript());
        assert!(
            !out.stdout.contains(token) && !out.stderr.contains(token),
            "{}",
            out.transcript()
        );
        assert!(
            out.stdout.contains("matched credential pattern 'github_pat'"),
            "{}",
            out.stdout
        );
    }
    let keys: Vec<(String, String)> = all_listed(&home);
    assert_eq!(keys, [("federated".to_owned(), "clean".to_owned())]);
    let audit = std::fs::read_dir(home.home().join("memory/logs"))
        .expect("audit")
        .map(|e| std::fs::read_to_string(e.expect("entry").path()).expect("read"))
        .collect::<String>();
    assert!(!audit.contains(token));
}

/// Importing one bundle again with `--conflict merge` appends nothing: a topic that already holds the bundle's
/// text is a skipped conflict, so a periodic sync does not grow every topic; new text still merges.
#[test]
fn merging_the_same_bundle_again_appends_nothing() {
    let home = TempHome::new().expect("temp home");
    let bundle = home.root().join("bundle");
    std::fs::create_dir_all(&bundle).expect("mkdir");
    std::fs::write(bundle.join("ok.md"), OK).expect("write");
    std::fs::write(
        bundle.join("old.md"),
        "---\ntype: project\ntimestamp: 2020-01-01T00:00:00Z\n---\nAn old decision.\n",
    )
    .expect("write");
    let merge = |home: &TempHome| {
        let out = cao(
            home,
            &[
                "memory",
                "import",
                bundle.to_str().expect("utf8"),
                "--scope",
                "global",
                "--conflict",
                "merge",
                "--format",
                "json",
            ],
        );
        assert_eq!(out.code, Some(0), "{}", out.transcript());
        json(&out)
    };
    let first = merge(&home);
    assert_eq!(first["imported"], 2, "{first:#}");
    let topic = home.home().join("memory/global/wiki/global/ok.md");
    let old = home.home().join("memory/global/wiki/global/old.md");
    let before = (std::fs::read(&topic).expect("read"), std::fs::read(&old).expect("read"));
    let again = merge(&home);
    assert_eq!(
        (&again["merged"], &again["skipped_conflict"]),
        (&json!(0), &json!(2)),
        "{again:#}"
    );
    assert_eq!(
        (std::fs::read(&topic).expect("read"), std::fs::read(&old).expect("read")),
        before,
        "nothing appended"
    );
    std::fs::write(bundle.join("ok.md"), "---\ntype: project\n---\nA newer text.\n").expect("write");
    let changed = merge(&home);
    assert_eq!(
        (&changed["merged"], &changed["skipped_conflict"]),
        (&json!(1), &json!(1)),
        "{changed:#}"
    );
    let text = std::fs::read_to_string(&topic).expect("read");
    assert!(
        text.contains("A fine topic.") && text.contains("A newer text."),
        "{text}"
    );
}

/// Every memory `cao memory list` shows, across all scopes and pages.
fn every_listed(home: &TempHome) -> Vec<(String, String)> {
    let out = cao(home, &["memory", "list", "--all", "--all-rows", "--json"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    listed(&out)
}

/// The bytes of every topic file under `home`'s memory directory (temp files and lock files left out).
fn topic_files(home: &TempHome) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let dir = home.home().join("memory");
    tree(&dir, &dir.join("logs"))
        .into_iter()
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".md") && !name.starts_with('.') && name != "index.md"
        })
        .filter_map(|p| Some((p.clone(), std::fs::read(dir.join(&p)).ok()?)))
        .collect()
}

#[test]
fn an_import_killed_midway_loses_no_memory_and_a_rerun_completes_it() {
    const TOPICS: usize = 3000;
    let home = seeded_home();
    let before_listed = every_listed(&home);
    let before_files = topic_files(&home);
    assert!(!before_files.is_empty());
    let bundle = home.root().join("bundle");
    std::fs::create_dir_all(&bundle).expect("mkdir");
    for i in 0..TOPICS {
        std::fs::write(
            bundle.join(format!("bulk-{i}.md")),
            format!("---\ntype: project\ntags: bulk\n---\nBulk fact number {i} about the deploy pipeline.\n"),
        )
        .expect("write");
    }
    let mut child = home
        .command(env!("CARGO_BIN_EXE_cao"))
        .args(["memory", "import", bundle.to_str().expect("utf8"), "--scope", "global"])
        .env("CAO_PROJECT_ID", crate::common::PROJECT)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("cao starts");
    // Kill it (SIGKILL) once it has written some topics of the bundle, or after 60 s at the latest.
    let global = home.home().join("memory/global/wiki/global");
    let started = std::time::Instant::now();
    let mut killed_midway = false;
    while started.elapsed() < std::time::Duration::from_secs(60) {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        let written = std::fs::read_dir(&global)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with("bulk-"))
                    .count()
            })
            .unwrap_or(0);
        if written > 0 {
            child.kill().expect("kill");
            killed_midway = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    if !killed_midway {
        let _ = child.kill();
    }
    let _ = child.wait();
    assert!(
        killed_midway,
        "the import finished before it could be killed; raise TOPICS"
    );
    // Every memory that existed is still there, byte for byte.
    let after_files = topic_files(&home);
    for (path, bytes) in &before_files {
        assert_eq!(
            after_files.get(path),
            Some(bytes),
            "{} changed or vanished",
            path.display()
        );
    }
    let listed = every_listed(&home);
    for m in &before_listed {
        assert!(listed.contains(m), "{m:?} lost after the kill");
    }
    // The index is repairable and the import, run again, completes: every topic of the bundle, once.
    let repair = cao(&home, &["memory", "repair", "--format", "json"]);
    assert_eq!(repair.code, Some(0), "{}", repair.transcript());
    let again = import_json(&home, &bundle, "global");
    let imported = again["imported"].as_u64().expect("imported");
    let skipped = again["skipped_conflict"].as_u64().expect("skipped");
    assert_eq!(
        (imported + skipped, again["rejected"].as_u64()),
        (TOPICS as u64, Some(0)),
        "{again:#}"
    );
    let listed = every_listed(&home);
    let bulk = listed
        .iter()
        .filter(|(s, k)| s == "global" && k.starts_with("bulk-"))
        .count();
    assert_eq!(bulk, TOPICS);
    for m in &before_listed {
        assert!(listed.contains(m), "{m:?} lost after the rerun");
    }
}

/// A project bundle's topics keep their old timestamps: the report says how many are already past the project
/// retention horizon (text warning and `past_retention`), and that count is exactly what the next cleanup removes.
/// Types user and feedback (which never expire) and the global scope are not counted.
#[test]
fn an_import_warns_about_topics_already_past_retention() {
    let home = TempHome::new().expect("temp home");
    let bundle = home.root().join("old-bundle");
    std::fs::create_dir_all(&bundle).expect("mkdir");
    let topic = |key: &str, memory_type: &str, ts: &str| {
        std::fs::write(
            bundle.join(format!("{key}.md")),
            format!("---\ntype: {memory_type}\ntimestamp: {ts}\n---\n\n# {key}\n\nDecision {key}.\n"),
        )
        .expect("write");
    };
    topic("old-decision", "project", "2020-01-01T00:00:00Z");
    topic("old-style", "project", "2021-06-01T00:00:00Z");
    topic("old-preference", "user", "2020-01-01T00:00:00Z");
    std::fs::write(bundle.join("fresh.md"), OK).expect("write");
    let source = bundle.to_str().expect("utf8");

    let dry = cao(&home, &["memory", "import", source, "--scope", "project", "--dry-run"]);
    assert_eq!(dry.code, Some(0), "{}", dry.transcript());
    assert!(
        dry.stdout.contains(
            "  warning: 2 planned topic(s) were last updated more than 90 days ago, past the retention horizon: the \
             next retention cleanup"
        ),
        "{}",
        dry.transcript()
    );
    let report = import_json(&home, &bundle, "project");
    assert_eq!(
        (&report["imported"], &report["past_retention"]),
        (&json!(4), &json!(2)),
        "{report:#}"
    );

    let cleanup = cao(&home, &["memory", "cleanup", "--dry-run", "--format", "json"]);
    assert_eq!(cleanup.code, Some(0), "{}", cleanup.transcript());
    let would: BTreeSet<String> = json(&cleanup)
        .to_string()
        .split('"')
        .filter(|s| s.starts_with("old-"))
        .map(str::to_owned)
        .collect();
    assert_eq!(
        would,
        BTreeSet::from(["old-decision".to_owned(), "old-style".to_owned()]),
        "the warned topics are the ones the cleanup removes:\n{}",
        cleanup.stdout
    );

    let global = TempHome::new().expect("temp home");
    let kept = import_json(&global, &bundle, "global");
    assert_eq!(kept["past_retention"], 0, "global memories never expire: {kept:#}");
}

/// What an import changes silently is named in its report: an unknown or non-string frontmatter `type` stored as
/// `reference` (counted in `types_defaulted`), a `timestamp` that is not a date and time replaced by the import time
/// (`timestamps_ignored`), each with a notice per file (no content); a UTF-8 byte order mark before the frontmatter
/// is accepted.
#[test]
fn an_import_reports_defaulted_types_and_ignored_timestamps_and_accepts_a_bom() {
    let home = TempHome::new().expect("temp home");
    let bundle = home.root().join("odd-bundle");
    std::fs::create_dir_all(&bundle).expect("mkdir");
    let write = |name: &str, text: &str| std::fs::write(bundle.join(name), text).expect("write");
    write(
        "admin-type.md",
        "---\ntype: admin\n---\n\n# admin-type\n\nAn admin note.\n",
    );
    write(
        "list-type.md",
        "---\ntype: [project]\n---\n\n# list-type\n\nA list type.\n",
    );
    write(
        "vague-time.md",
        "---\ntype: project\ntimestamp: last tuesday\n---\n\n# vague-time\n\nWhen was it?\n",
    );
    write(
        "with-bom.md",
        "\u{feff}---\ntype: user\n---\n\n# with-bom\n\nSaved by an editor with a BOM.\n",
    );
    write("fine.md", OK);

    let report = import_json(&home, &bundle, "global");
    assert_eq!(report["rejected"], 0, "{report:#}");
    assert_eq!(report["imported"], 5, "{report:#}");
    assert_eq!(
        (&report["types_defaulted"], &report["timestamps_ignored"]),
        (&json!(2), &json!(1)),
        "{report:#}"
    );
    let notice = |path: &str| {
        report["notices"][path]
            .as_str()
            .unwrap_or_else(|| panic!("no notice for {path}: {report:#}"))
            .to_owned()
    };
    assert!(notice("admin-type.md").contains("stored as reference"), "{report:#}");
    assert!(notice("list-type.md").contains("stored as reference"), "{report:#}");
    assert!(notice("vague-time.md").contains("import time"), "{report:#}");
    assert!(report["notices"].get("with-bom.md").is_none() && report["notices"].get("fine.md").is_none());
    let shown = cao(&home, &["memory", "show", "with-bom", "--scope", "global"]);
    assert!(
        shown.stdout.contains("Saved by an editor with a BOM."),
        "{}",
        shown.transcript()
    );
    assert!(
        shown.stdout.contains("user"),
        "the BOM file's frontmatter was read: {}",
        shown.transcript()
    );

    let again = TempHome::new().expect("temp home");
    let text = cao(
        &again,
        &[
            "memory",
            "import",
            bundle.to_str().expect("utf8"),
            "--scope",
            "global",
            "--dry-run",
        ],
    );
    assert_eq!(text.code, Some(0), "{}", text.transcript());
    assert!(
        text.stdout.contains("types defaulted: 2  timestamps ignored: 1"),
        "{}",
        text.transcript()
    );
    assert!(
        text.stdout.contains("  notice 'admin-type.md': "),
        "{}",
        text.transcript()
    );
}
