//! What an operator sees of the store's hardening: `show` escapes terminal control sequences, every JSON output
//! writes times one way, `list` pages past 100 rows and stays aligned with long keys.

use crate::common::{cao, full_context, json, listed};
use cao_core::{CaoHome, FixedClock, Scope, Settings};
use cao_lifecycle::NewRelationship;
use cao_memory::{MemoryService, StoreArgs};
use cao_testkit::TempHome;
use chrono::{Duration, TimeZone, Utc};
use std::sync::Arc;

/// A service on `home` whose clock has a sub-second part (as every real write has).
fn service_at_subsecond(home: &TempHome) -> MemoryService {
    let t = Utc
        .with_ymd_and_hms(2026, 3, 4, 5, 6, 7)
        .single()
        .expect("valid instant")
        + Duration::microseconds(123_456);
    MemoryService::open_with(
        CaoHome::new(home.home()),
        Settings::default(),
        Arc::new(FixedClock::new(t)),
    )
    .expect("service opens")
}

fn store(svc: &MemoryService, home: &TempHome, scope: &str, key: &str, content: &str) {
    svc.store(
        &full_context(home),
        StoreArgs {
            content: content.into(),
            scope: Some(scope.parse().expect("a valid scope")),
            key: Some(key.into()),
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("store {key}: {e}"));
}

/// `show` prints stored text that carries terminal escape sequences or carriage returns escaped, like `list` does,
/// so a memory cannot recolour, retitle or overwrite the operator's terminal; line breaks and tabs stay.
#[test]
fn show_escapes_terminal_control_sequences_in_the_content() {
    let home = TempHome::new().expect("temp home");
    let svc = service_at_subsecond(&home);
    store(
        &svc,
        &home,
        "global",
        "painted",
        "line one\n\u{1b}[31mred\u{1b}[0m\tcol\n\u{1b}]0;owned\u{7}title\rover \u{9b}2J",
    );
    drop(svc);
    let out = cao(&home, &["memory", "show", "painted"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    for raw in ['\u{1b}', '\u{7}', '\r', '\u{9b}'] {
        assert!(
            !out.stdout.contains(raw),
            "raw U+{:04X} reached the terminal:\n{:?}",
            u32::from(raw),
            out.stdout
        );
    }
    assert!(
        out.stdout
            .ends_with("\n\nline one\n\\u{1b}[31mred\\u{1b}[0m\tcol\n\\u{1b}]0;owned\\u{7}title\\rover \\u{9b}2J\n"),
        "{:?}",
        out.stdout
    );
    // JSON keeps the exact text (JSON escapes control characters itself).
    let as_json = cao(&home, &["memory", "show", "painted", "--format", "json"]);
    assert!(
        json(&as_json)["content"]
            .as_str()
            .is_some_and(|c| c.contains("\u{1b}[31m"))
    );
}

/// Every JSON output writes times as `YYYY-MM-DDTHH:MM:SSZ` (spec/reference-facts.md: UTC, second precision, `Z`),
/// whether the row was written live (sub-second clock) or rebuilt from the files.
#[test]
fn json_outputs_write_times_in_one_format_before_and_after_a_rebuild() {
    let home = TempHome::new().expect("temp home");
    let svc = service_at_subsecond(&home);
    store(&svc, &home, "global", "first", "the first note");
    store(&svc, &home, "global", "second", "the second note");
    svc.relationships("operator")
        .create(NewRelationship {
            scope: Scope::Global,
            scope_id: None,
            source_key: "first".into(),
            target_key: "second".into(),
            rel_type: "relates_to".into(),
            origin: None,
            status: None,
            confidence: None,
            rank: None,
            attributes: None,
        })
        .expect("edge");
    drop(svc);
    let seconds = regex::Regex::new(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$").expect("regex");
    let times = |v: &serde_json::Value, fields: &[&str]| -> Vec<String> {
        let items = v.as_array().cloned().unwrap_or_else(|| vec![v.clone()]);
        let mut out = Vec::new();
        for item in &items {
            for f in fields {
                let t = item[*f]
                    .as_str()
                    .unwrap_or_else(|| panic!("{f} is a string: {item}"))
                    .to_owned();
                assert!(seconds.is_match(&t), "{f} = {t:?} is not YYYY-MM-DDTHH:MM:SSZ");
                out.push(t);
            }
        }
        out
    };
    let live_list = times(
        &json(&cao(&home, &["memory", "list", "--json"])),
        &["created_at", "updated_at"],
    );
    assert_eq!(live_list.len(), 4);
    let live_show = times(
        &json(&cao(&home, &["memory", "show", "first", "--format", "json"])),
        &["created_at", "updated_at"],
    );
    times(
        &json(&cao(&home, &["memory", "relationships", "list", "--format", "json"])),
        &["created_at", "updated_at", "source_updated_at"],
    );
    // Rebuild the index from the files: the same times, written the same way.
    std::fs::remove_dir_all(home.home().join("db")).expect("delete the database");
    let repaired = cao(&home, &["memory", "repair"]);
    assert_eq!(repaired.code, Some(0), "{}", repaired.transcript());
    let rebuilt_list = times(
        &json(&cao(&home, &["memory", "list", "--json"])),
        &["created_at", "updated_at"],
    );
    assert_eq!(rebuilt_list, live_list);
    let rebuilt_show = times(
        &json(&cao(&home, &["memory", "show", "first", "--format", "json"])),
        &["created_at", "updated_at"],
    );
    assert_eq!(rebuilt_show, live_show);
}

/// 130 global memories: the ordinary list pages with `--offset` and shows everything with `--all-rows`, in the same
/// order; `--limit` stays explain-only.
#[test]
fn list_pages_past_the_first_100_rows() {
    let home = TempHome::new().expect("temp home");
    let svc = MemoryService::open(CaoHome::new(home.home())).expect("service opens");
    for i in 0..130 {
        store(
            &svc,
            &home,
            "global",
            &format!("note-{i:03}"),
            &format!("note number {i}"),
        );
    }
    drop(svc);
    let all = listed(&cao(&home, &["memory", "list", "--json", "--all-rows"]));
    assert_eq!(all.len(), 130);
    let first = listed(&cao(&home, &["memory", "list", "--json"]));
    let second = listed(&cao(&home, &["memory", "list", "--json", "--offset", "100"]));
    assert_eq!((first.len(), second.len()), (100, 30));
    assert_eq!([first, second].concat(), all, "two pages are the whole list, in order");
    let table = cao(&home, &["memory", "list", "--offset", "120"]);
    assert_eq!(table.code, Some(0), "{}", table.transcript());
    assert_eq!(
        table.stdout.lines().count(),
        12,
        "header, dashes, 10 rows:\n{}",
        table.stdout
    );
    assert!(!table.stderr.contains("showing the first"), "{}", table.transcript());
    let past = cao(&home, &["memory", "list", "--offset", "500"]);
    assert_eq!(past.stdout, "No memories found.\n", "{}", past.transcript());
    let cut = cao(&home, &["memory", "list"]);
    assert!(
        cut.stderr.contains("--offset 100"),
        "the cut names the next page:\n{}",
        cut.transcript()
    );
    for bad in [
        &["memory", "list", "--limit", "5"][..],
        &["memory", "list", "--offset", "-1"],
        &["memory", "list", "--all-rows", "--offset", "5"],
        &["memory", "list", "--query", "q", "--explain", "--offset", "5"],
    ] {
        assert_eq!(cao(&home, bad).code, Some(2), "{bad:?}");
    }
}

/// Keys longer than the KEY column (up to 60 characters) widen it for the whole table instead of pushing their row's
/// other columns out of line.
#[test]
fn long_keys_keep_the_table_aligned() {
    let home = TempHome::new().expect("temp home");
    let svc = MemoryService::open(CaoHome::new(home.home())).expect("service opens");
    store(&svc, &home, "global", "short", "a short key");
    store(&svc, &home, "global", &"k".repeat(60), "the longest key there is");
    store(
        &svc,
        &home,
        "global",
        &format!("{}-mid", "m".repeat(36)),
        "a 40-character key",
    );
    drop(svc);
    let out = cao(&home, &["memory", "list"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{}", out.stdout);
    let col = |line: &str, word: &str| line.find(word).unwrap_or_else(|| panic!("{word} in {line:?}"));
    let scope_at = col(lines[0], "SCOPE");
    let updated_at = col(lines[0], "UPDATED");
    assert_eq!(lines[1].len(), lines[0].len(), "the dashes span the header");
    for row in &lines[2..] {
        assert_eq!(col(row, " global ") + 1, scope_at, "SCOPE column:\n{}", out.stdout);
        assert_eq!(
            row.len(),
            updated_at + "YYYY-MM-DD hh:mm".len(),
            "UPDATED column:\n{}",
            out.stdout
        );
    }
}

/// A topic file edited or added by hand is what `show`, `list` and `context` print, without `cao memory repair`;
/// `repair` removes the temp files a killed writer left behind and says so.
#[test]
fn hand_edits_are_shown_without_a_repair_and_repair_removes_dead_writers_temp_files() {
    let home = TempHome::new().expect("temp home");
    let svc = MemoryService::open(CaoHome::new(home.home())).expect("service opens");
    store(&svc, &home, "global", "deploy", "deploy with kafka streams");
    drop(svc);
    let path = home.home().join("memory/global/wiki/global/deploy.md");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, text.replace("kafka streams", "zookeeper only")).expect("edit in place");
    std::fs::write(
        path.with_file_name("by-hand.md"),
        "# by-hand\n<!-- id: 0f4c2a8e-1111-4222-8333-944455556666 | scope: global | type: user | tags:  -->\n\n\
         ## 2026-02-03T04:05:06Z\nadded in an editor\n",
    )
    .expect("hand-added file");
    let show = cao(&home, &["memory", "show", "deploy"]);
    assert!(
        show.stdout.ends_with("\n\ndeploy with zookeeper only\n"),
        "{}",
        show.transcript()
    );
    let listed = listed(&cao(&home, &["memory", "list", "--json"]));
    assert!(
        listed.contains(&("global".to_owned(), "by-hand".to_owned())),
        "{listed:?}"
    );
    let context = cao(&home, &["memory", "context"]);
    assert!(
        context.stdout.contains("- [global] by-hand: added in an editor"),
        "{}",
        context.transcript()
    );

    let mut child = std::process::Command::new("true").spawn().expect("spawn true");
    let dead = child.id();
    child.wait().expect("wait");
    let stale = path.with_file_name(format!(".deploy.md.{dead}-0.tmp"));
    std::fs::write(&stale, "half-written").expect("temp file");
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .and_then(|f| f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600)))
        .expect("backdate");
    let repair = cao(&home, &["memory", "repair"]);
    assert_eq!(repair.code, Some(0), "{}", repair.transcript());
    assert!(!stale.exists(), "{}", repair.transcript());
    assert!(
        repair
            .stdout
            .contains(&format!("removed temp file: {}", stale.display())),
        "{}",
        repair.transcript()
    );
}
