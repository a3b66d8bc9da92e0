//! Conformance with the reference's wiki bytes: `wiki_store.json` (topic file text, index.md, relative path).
//!
//! Each case's `stores` are replayed through the real write path (`WikiLayout::upsert_topic`, `write_index`)
//! into a temporary home, with the case's context: project id `<PROJECT>`, session `sess-1`, agent `reviewer`.
//! `<PROJECT>` is not a valid directory name for this crate (it rejects `<`/`>`), so the project id used on
//! disk is `proj-0`, and `<PROJECT>` in the expected relative path is read as that id. Ids and timestamps are
//! normalised to `<ID>` / `<TS>` on both sides (the expected data was normalised the same way).

use cao_core::key::{normalize_tags, sanitize_scope_id};
use cao_core::time::parse_ts;
use cao_core::{Key, MemoryType, Scope};
use cao_testkit::conformance_cases;
use cao_wiki::{IndexRow, WikiLayout, render_index, upsert_text, words_token_estimate};
use chrono::Duration;
use regex::Regex;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

const PROJECT_PLACEHOLDER: &str = "<PROJECT>";
const PROJECT_ON_DISK: &str = "proj-0";

fn normalise(s: &str) -> String {
    let id = Regex::new(r"<!-- id: [^ ]+ \|").expect("regex");
    let ts = Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z").expect("regex");
    let s = id.replace_all(s, "<!-- id: <ID> |");
    ts.replace_all(&s, "<TS>").into_owned()
}

fn str_field<'a>(v: &'a Value, name: &str) -> &'a str {
    v[name]
        .as_str()
        .unwrap_or_else(|| panic!("field {name} is not a string in {v}"))
}

#[test]
fn wiki_store_cases_match_reference_bytes() {
    let base = parse_ts("2026-11-29T18:00:00Z").expect("valid timestamp");
    for (n, case) in conformance_cases("wiki_store.json").iter().enumerate() {
        let ctx = &case["context"];
        assert_eq!(
            str_field(ctx, "project_id"),
            PROJECT_PLACEHOLDER,
            "case {n}: unexpected project id"
        );
        let home = tempfile::tempdir().expect("tempdir");
        let layout = WikiLayout::new(home.path().join("memory"));

        // identity -> (row, container); the last store of an identity wins, as in the index.
        let mut rows: BTreeMap<(Scope, Option<String>, String), (IndexRow, String)> = BTreeMap::new();
        let mut last_path = None;
        let mut pure_text: BTreeMap<PathBuf, String> = BTreeMap::new();
        let stores = case["stores"].as_array().expect("stores");
        for (i, st) in stores.iter().enumerate() {
            let scope: Scope = str_field(st, "scope").parse().expect("scope");
            let memory_type: MemoryType = str_field(st, "memory_type").parse().expect("memory_type");
            let key = Key::sanitize(str_field(st, "key")).expect("key");
            let tags = normalize_tags(str_field(st, "tags"));
            let content = str_field(st, "content");
            let scope_id = match scope {
                Scope::Project => Some(PROJECT_ON_DISK.to_owned()),
                Scope::Session => Some(sanitize_scope_id(str_field(ctx, "session_name"))),
                Scope::Agent => Some(sanitize_scope_id(str_field(ctx, "agent_profile"))),
                Scope::Global | Scope::Federated => None,
            };
            let ts = base + Duration::seconds(i as i64);
            let w = layout
                .upsert_topic(scope, scope_id.as_deref(), &key, memory_type, &tags, ts, content)
                .unwrap_or_else(|e| panic!("case {n} store {i}: {e}"));
            // The pure function gives the same bytes as the I/O path.
            let prev = pure_text.get(&w.path).map(String::as_str);
            let header = cao_wiki::TopicHeader {
                id: w.topic.header().id.clone(),
                ..w.topic.header().clone()
            };
            let pure = upsert_text(prev, &header, ts, content).expect("pure upsert");
            assert_eq!(
                pure, w.text,
                "case {n} store {i}: upsert_text differs from the written file"
            );
            pure_text.insert(w.path.clone(), pure);

            let row = IndexRow {
                scope,
                scope_id: scope_id.clone(),
                key: key.clone(),
                memory_type,
                tags: tags.clone(),
                token_estimate: words_token_estimate(content),
                updated_at: ts,
            };
            rows.insert((scope, scope_id, key.to_string()), (row, w.container.clone()));
            last_path = Some((w.path, w.container, ts));
        }
        let (path, container, now) = last_path.expect("case has stores");

        // relative_path (relative to the home dir).
        let rel = path
            .strip_prefix(home.path())
            .expect("under home")
            .to_str()
            .expect("utf-8")
            .to_owned();
        let want_rel = str_field(case, "relative_path").replace(PROJECT_PLACEHOLDER, PROJECT_ON_DISK);
        assert_eq!(rel, want_rel, "case {n}: relative_path");

        // file_text
        let text = std::fs::read_to_string(&path).expect("topic file");
        assert_eq!(normalise(&text), str_field(case, "file_text"), "case {n}: file_text");

        // index.md: every store of the case in that container.
        let container_rows: Vec<IndexRow> = rows
            .into_values()
            .filter(|(_, c)| *c == container)
            .map(|(r, _)| r)
            .collect();
        let index_path = layout
            .write_index(&container, &container_rows, now)
            .expect("write index");
        let index = std::fs::read_to_string(index_path).expect("index.md");
        assert_eq!(
            index,
            render_index(&container_rows, now),
            "case {n}: write_index wrote render_index"
        );
        assert_eq!(normalise(&index), str_field(case, "index_md"), "case {n}: index_md");
    }
}

#[test]
fn normaliser_matches_the_expected_data_convention() {
    assert_eq!(
        normalise("<!-- id: 0f8e-aa | scope: x\n## 2026-01-01T00:00:00Z\nsee ## 2020-01-01T00:00:00Z"),
        "<!-- id: <ID> | scope: x\n## <TS>\nsee ## <TS>"
    );
}
