//! Conformance with the reference's OKF bundles, at the format level: `okf_export.json` (every file of an
//! exported bundle and the export report) and `okf_import.json` (the import report, the rejected files, and the
//! topics afterwards).
//!
//! Export cases list `memory_store` calls; they are replayed purely into [`ExportTopic`]s (an existing key gets
//! a new entry, and its type and tags become the call's, `project` and none by default, as a store does), with
//! synthetic entry times one minute apart. The third case describes its memories in prose ("two sessions sess-a
//! and sess-b, each with keys note and only-<session>"); its contents are reconstructed from the expected
//! descriptions (`Session <id> note.`, `Unique.`), and the session filter the pipeline applies is applied here.
//! `exported` / `unchanged` are counted by writing the rendered files into an in-memory destination with the
//! reference's compare-before-write rule. Timestamps are normalised to `<TS>` on our side, as in the cases.
//!
//! Import cases run [`plan_import`] against the `existing` keys (stored one minute before `now`), with `now`
//! fixed to the day the cases were generated (the `2030` timestamp of "conflict-merge" is in the future, the
//! `2025` one of "plain" in the past, as when the reference ran). Expected topic files are parsed into type,
//! tags and entry bodies and compared with the existing memories plus the plan's writes (the wiki file bytes
//! themselves are `cao-wiki`'s conformance, `wiki_store.json`). An `error` case must be refused as a whole.

use cao_core::key::normalize_tags;
use cao_core::time::{format_ts, parse_ts};
use cao_core::{Key, MemoryType, Scope};
use cao_okf::export::{ExportOptions, ExportTopic, render_bundle};
use cao_okf::import::{BundleEntry, ConflictPolicy, EntryKind, FileOutcome, ImportOptions, WriteAction, plan_import};
use cao_testkit::{cases_at, conformance_cases};
use chrono::{DateTime, Duration, Utc};
use regex::Regex;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn ts(s: &str) -> DateTime<Utc> {
    parse_ts(s).expect("valid timestamp")
}

fn mask_ts(s: &str) -> String {
    let re = Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z").expect("regex");
    re.replace_all(s, "<TS>").into_owned()
}

fn str_field<'a>(v: &'a Value, name: &str) -> &'a str {
    v[name]
        .as_str()
        .unwrap_or_else(|| panic!("field {name} is not a string in {v}"))
}

/// Replay `memory_store` calls (key, content, tags, type) into export topics.
fn replay(calls: &[(String, String, Option<String>, Option<String>)], start: DateTime<Utc>) -> Vec<ExportTopic> {
    let mut topics: Vec<ExportTopic> = Vec::new();
    for (i, (key, content, tags, memory_type)) in calls.iter().enumerate() {
        let at = start + Duration::minutes(i as i64);
        let key = Key::parse_strict(key).expect("case keys are valid");
        let memory_type: MemoryType = memory_type.as_deref().unwrap_or("project").parse().expect("case type");
        let tags = normalize_tags(tags.as_deref().unwrap_or(""));
        match topics.iter_mut().find(|t| t.key == key) {
            Some(t) => {
                t.history.push(cao_okf::ExportEntry {
                    timestamp: t.updated_at,
                    content: std::mem::take(&mut t.content),
                });
                t.content = content.clone();
                t.updated_at = at;
                t.memory_type = memory_type;
                t.tags = tags;
            }
            None => topics.push(ExportTopic {
                key,
                scope_id: None,
                memory_type,
                tags,
                created_at: at,
                updated_at: at,
                content: content.clone(),
                history: Vec::new(),
            }),
        }
    }
    topics
}

/// The reference's compare-before-write over an in-memory destination: (exported, unchanged) topic counts.
fn write_if_changed(dest: &mut BTreeMap<String, String>, bundle: &cao_okf::RenderedBundle) -> (usize, usize) {
    let (mut exported, mut unchanged) = (0, 0);
    for (path, text) in &bundle.files {
        let same = dest.get(path) == Some(text);
        if bundle.topic_paths.contains(path) {
            if same {
                unchanged += 1;
            } else {
                exported += 1;
            }
        }
        if !same {
            dest.insert(path.clone(), text.clone());
        }
    }
    (exported, unchanged)
}

fn as_string_map(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .expect("an object")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().expect("a string").to_owned()))
        .collect()
}

#[test]
fn okf_export_cases_match_reference_bytes_and_reports() {
    let start = ts("2026-11-29T18:00:00Z");
    let cases = conformance_cases("okf_export.json");
    assert_eq!(cases.len(), 3, "the case list changed: review this test");
    for (n, case) in cases.iter().enumerate() {
        let scope: Scope = str_field(case, "scope").parse().expect("scope");
        let scope_id = case["scope_id"].as_str().map(str::to_owned);
        let topics = match &case["memories"] {
            Value::Array(calls) => {
                let calls: Vec<_> = calls
                    .iter()
                    .map(|c| {
                        (
                            str_field(c, "key").to_owned(),
                            str_field(c, "content").to_owned(),
                            c["tags"].as_str().map(str::to_owned),
                            c["type"].as_str().map(str::to_owned),
                        )
                    })
                    .collect();
                replay(&calls, start)
            }
            Value::String(prose) => {
                assert!(
                    prose.contains("sess-a and sess-b"),
                    "case {n}: unexpected prose {prose:?}"
                );
                let mut all = Vec::new();
                for session in ["sess-a", "sess-b"] {
                    let calls = vec![
                        ("note".to_owned(), format!("Session {session} note."), None, None),
                        (format!("only-{session}"), "Unique.".to_owned(), None, None),
                    ];
                    all.extend(replay(&calls, start).into_iter().map(|mut t| {
                        t.scope_id = Some(session.to_owned());
                        t
                    }));
                }
                // The pipeline exports the requested session only.
                all.retain(|t| t.scope_id == scope_id);
                all
            }
            other => panic!("case {n}: unexpected memories {other}"),
        };
        let opts = ExportOptions {
            scope,
            scope_id: scope_id.clone(),
            include_history: case["include_history"].as_bool().expect("include_history"),
            redact: case["redact"].as_bool().expect("redact"),
        };
        let bundle = render_bundle(&opts, &topics).expect("renders");
        let ours: BTreeMap<String, String> = bundle.files.iter().map(|(p, t)| (p.clone(), mask_ts(t))).collect();
        let expected = as_string_map(&case["files"]);
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>(),
            "case {n}: file set"
        );
        for (path, want) in &expected {
            assert_eq!(&ours[path], want, "case {n}: bytes of {path}");
        }

        let mut dest = BTreeMap::new();
        let (exported, unchanged) = write_if_changed(&mut dest, &bundle);
        let report = &case["report"];
        assert_eq!(
            exported as u64,
            report["exported"].as_u64().expect("exported"),
            "case {n}: exported"
        );
        assert_eq!(
            unchanged as u64,
            report["unchanged"].as_u64().expect("unchanged"),
            "case {n}: unchanged"
        );
        if let Some(skipped) = report["skipped_secret"].as_u64() {
            assert_eq!(bundle.report.skipped_secret as u64, skipped, "case {n}: skipped_secret");
            assert_eq!(
                bundle.report.redacted as u64,
                report["redacted"].as_u64().expect("redacted"),
                "case {n}"
            );
            let reasons: BTreeMap<String, Vec<String>> =
                serde_json::from_value(report["skip_reasons"].clone()).expect("skip_reasons");
            assert_eq!(bundle.report.skip_reasons, reasons, "case {n}: skip_reasons");
        }
        if let Some(second) = case.get("second_export_report") {
            let again = render_bundle(&opts, &topics).expect("renders");
            assert_eq!(again, bundle, "case {n}: rendering is deterministic");
            let (exported, unchanged) = write_if_changed(&mut dest, &again);
            assert_eq!(
                exported as u64,
                second["exported"].as_u64().expect("exported"),
                "case {n}: second run"
            );
            assert_eq!(
                unchanged as u64,
                second["unchanged"].as_u64().expect("unchanged"),
                "case {n}: second run"
            );
        }
    }
}

/// A wiki topic file as type, tags and entry bodies.
#[derive(Debug, PartialEq, Eq)]
struct TopicModel {
    memory_type: String,
    tags: String,
    bodies: Vec<String>,
}

fn parse_wiki_topic(text: &str) -> TopicModel {
    let header = Regex::new(r"(?m)^<!-- id: <ID> \| scope: \w+ \| type: (\w+) \| tags: (.*) -->$").expect("regex");
    let c = header.captures(text).expect("expected topic has a header line");
    let body_start = c.get(0).expect("match").end() + 1;
    let sections: Vec<String> = text[body_start..]
        .split("## <TS>\n")
        .skip(1)
        .map(|s| s.trim_end_matches('\n').to_owned())
        .collect();
    TopicModel {
        memory_type: c[1].to_owned(),
        tags: c[2].trim_end().to_owned(),
        bodies: sections,
    }
}

#[test]
fn okf_import_cases_match_reference_reports_and_topics() {
    let now = ts("2026-12-01T10:29:00Z");
    let cases = conformance_cases("okf_import.json");
    assert_eq!(cases.len(), 9, "the case list changed: review this test");
    for case in &cases {
        let name = str_field(case, "name");
        let target_scope: Scope = str_field(case, "target_scope").parse().expect("scope");
        let conflict: ConflictPolicy = str_field(case, "conflict").parse().expect("policy");
        let opts = ImportOptions {
            target_scope,
            target_scope_id: None,
            conflict,
            dry_run: case["dry_run"].as_bool().expect("dry_run"),
            now,
        };
        // The existing memories, stored just before the import (one entry each, type project, no tags).
        let mut existing = BTreeMap::new();
        let mut models: BTreeMap<String, TopicModel> = BTreeMap::new();
        for e in case["existing"].as_array().expect("existing") {
            let key = Key::parse_strict(str_field(e, "key")).expect("key");
            existing.insert(key.clone(), now - Duration::minutes(1));
            models.insert(
                key.to_string(),
                TopicModel {
                    memory_type: "project".into(),
                    tags: String::new(),
                    bodies: vec![str_field(e, "content").to_owned()],
                },
            );
        }
        let bundle = as_string_map(&case["bundle"]);
        let entries = bundle.iter().map(|(path, text)| BundleEntry {
            path: path.as_bytes(),
            kind: EntryKind::File(text.as_bytes()),
        });
        let plan = plan_import(&opts, entries, &existing);
        if let Some(error) = case["error"].as_str() {
            assert_eq!(error, "ValueError", "{name}");
            assert!(plan.is_err(), "{name}: the import must be refused as a whole");
            continue;
        }
        let plan = plan.unwrap_or_else(|e| panic!("{name}: {e}"));

        let ours = serde_json::to_value(&plan.report).expect("report serialises");
        for (field, want) in case["report"].as_object().expect("report") {
            assert_eq!(&ours[field], want, "{name}: report.{field}");
        }
        let rejected: Vec<&String> = plan.report.errors.keys().collect();
        let want_rejected: Vec<String> = serde_json::from_value(case["rejected_files"].clone()).expect("list");
        assert_eq!(
            rejected,
            want_rejected.iter().collect::<Vec<_>>(),
            "{name}: rejected files"
        );

        for w in plan.writes() {
            let tags = w.tags.clone();
            let model = models.entry(w.key.to_string()).or_insert_with(|| TopicModel {
                memory_type: String::new(),
                tags: String::new(),
                bodies: Vec::new(),
            });
            if w.action == WriteAction::Replace {
                model.bodies.clear();
            }
            model.memory_type = w.memory_type.to_string();
            model.tags = tags;
            model.bodies.push(mask_ts(&w.content));
            // The entry time is the frontmatter's when it is usable, else the import time.
            assert!(w.entry_time <= now, "{name}: entry in the future");
        }
        let container = match target_scope {
            Scope::Federated => "federated",
            _ => "global",
        };
        let ours: BTreeMap<String, TopicModel> = models
            .into_iter()
            .map(|(k, m)| (format!("{container}/wiki/{target_scope}/{k}.md"), m))
            .collect();
        let expected: BTreeMap<String, TopicModel> = as_string_map(&case["topics"])
            .iter()
            .map(|(p, t)| (p.clone(), parse_wiki_topic(t)))
            .collect();
        assert_eq!(ours, expected, "{name}: topics after the import");
    }
}

/// The reference's "plain" case keeps the frontmatter time; "future-timestamp" records the import time and
/// names the original. Checked here with the exact values the cases mask as `<TS>`.
#[test]
fn import_entry_times_are_the_frontmatter_time_or_now() {
    let now = ts("2026-12-01T10:29:00Z");
    let opts = ImportOptions {
        target_scope: Scope::Global,
        target_scope_id: None,
        conflict: ConflictPolicy::Skip,
        dry_run: false,
        now,
    };
    let files = [
        (
            "alpha.md",
            "---\ntype: project\ntimestamp: 2025-01-02T03:04:05Z\n---\nA.\n",
        ),
        (
            "fut.md",
            "---\ntype: project\ntimestamp: 2999-01-01T00:00:00Z\n---\nF.\n",
        ),
        ("none.md", "---\ntype: project\n---\nN.\n"),
    ];
    let plan = plan_import(
        &opts,
        files.iter().map(|(p, t)| BundleEntry {
            path: p.as_bytes(),
            kind: EntryKind::File(t.as_bytes()),
        }),
        &BTreeMap::new(),
    )
    .expect("plans");
    let writes: Vec<_> = plan
        .writes()
        .map(|w| (format_ts(w.entry_time), w.content.clone()))
        .collect();
    assert_eq!(
        writes,
        [
            ("2025-01-02T03:04:05Z".to_owned(), "A.".to_owned()),
            (
                format_ts(now),
                "_Originally recorded: 2999-01-01T00:00:00Z_\nF.".to_owned()
            ),
            (format_ts(now), "N.".to_owned()),
        ]
    );
    assert!(plan.files.iter().all(|f| matches!(f.outcome, FileOutcome::Write(_))));
}

/// Recorded reference behaviour on 400 random strings of tricky characters (line boundaries of every kind,
/// Python whitespace, sentence marks, headings, See Also blocks, spoofed markers, non-ASCII, astral characters):
/// the description, the whole topic file, and the import body pipeline must give the reference's bytes.
/// (`tests/data/okf_reference_random.json`; how it was produced is in its `source` field.)
#[test]
fn random_texts_render_and_import_like_the_reference() {
    use cao_okf::export::{TopicFile, derive_description, normalize_see_also, render_topic_file};
    use cao_okf::import::import_body;
    use cao_okf::pytext;

    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/okf_reference_random.json");
    let cases = cases_at(&path);
    assert_eq!(cases.len(), 400);
    let key = Key::parse_strict("k").expect("key");
    let targets = BTreeMap::from([((None, "k".to_owned()), "k.md".to_owned())]);
    for c in &cases {
        let s = str_field(c, "s");
        let latest = pytext::strip(s);
        let description = derive_description(latest);
        assert_eq!(description, str_field(c, "desc"), "description of {s:?}");
        let tags: Vec<String> = serde_json::from_value(c["tags"].clone()).expect("tags");
        let tags: Vec<&str> = tags.iter().map(String::as_str).collect();
        let mut dropped = 0;
        let body = normalize_see_also(latest, None, &targets, &mut dropped);
        let file = render_topic_file(&TopicFile {
            key: &key,
            memory_type: MemoryType::Project,
            description: &description,
            tags: &tags,
            updated_at: ts("2026-01-02T00:00:00Z"),
            created_at: ts("2026-01-01T00:00:00Z"),
            body: &body,
        });
        assert_eq!(file, str_field(c, "file"), "topic file of {s:?}");
        let imported = import_body(latest, &key);
        assert_eq!(imported.text, str_field(c, "ib"), "import body of {s:?}");
        assert_eq!(
            imported.see_also_dropped as u64,
            c["dropped"].as_u64().expect("dropped"),
            "{s:?}"
        );
        assert_eq!(imported.escaped, c["esc"].as_bool().expect("esc"), "{s:?}");
    }
}
