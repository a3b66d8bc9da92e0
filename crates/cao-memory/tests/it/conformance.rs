//! The reference's `wiki_store.json` cases replayed through the service: the stored topic's path relative to the
//! home, its file text and its container's `index.md` must equal the reference output after the same
//! normalisation (ids -> `<ID>`, timestamps -> `<TS>`, project id -> `<PROJECT>`).

use cao_core::{CaoHome, Settings, SystemClock, TerminalContext};
use cao_memory::{MemoryService, StoreArgs};
use regex::Regex;
use std::path::PathBuf;
use std::sync::Arc;

fn normalise(text: &str, project: &str) -> String {
    let ts = Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z").expect("regex");
    let id = Regex::new(r"id: [0-9a-f-]{36}").expect("regex");
    let t = ts.replace_all(text, "<TS>");
    let t = id.replace_all(&t, "id: <ID>");
    t.replace(project, "<PROJECT>")
}

#[test]
fn wiki_store_cases() {
    let cases = cao_testkit::conformance_cases("wiki_store.json");
    assert!(!cases.is_empty());
    let project = "conformance-proj";
    let mut failures = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = CaoHome::new(dir.path().join("home"));
        let svc = MemoryService::open_with(home.clone(), Settings::default(), Arc::new(SystemClock)).expect("open");
        let ctx = TerminalContext {
            session_name: case["context"]["session_name"].as_str().map(str::to_owned),
            agent_profile: case["context"]["agent_profile"].as_str().map(str::to_owned),
            project_id: Some(project.to_owned()),
            cwd: Some(dir.path().to_path_buf()),
            ..Default::default()
        };
        let mut last = None;
        for s in case["stores"].as_array().expect("stores") {
            // The reference's arguments, read as an agent's call is.
            let args: StoreArgs =
                cao_protocol::parse_args(s.clone()).unwrap_or_else(|e| panic!("case {i}: arguments: {e}"));
            let r = svc
                .store(&ctx, args)
                .unwrap_or_else(|e| panic!("case {i}: store failed: {e}"));
            last = Some(r);
        }
        svc.flush_index_md().expect("flush");
        let last = last.expect("at least one store");
        let file = PathBuf::from(&last.file_path);
        let rel = file
            .strip_prefix(home.root())
            .expect("inside home")
            .to_string_lossy()
            .into_owned();
        let file_text = std::fs::read_to_string(&file).expect("topic file");
        let index_path = file
            .ancestors()
            .find(|a| a.file_name().is_some_and(|n| n == "wiki"))
            .expect("wiki dir")
            .join("index.md");
        let index_md = std::fs::read_to_string(&index_path).expect("index.md");
        for (what, got, want) in [
            (
                "relative_path",
                normalise(&rel, project),
                case["relative_path"].as_str().expect("str").to_owned(),
            ),
            (
                "file_text",
                normalise(&file_text, project),
                case["file_text"].as_str().expect("str").to_owned(),
            ),
            (
                "index_md",
                normalise(&index_md, project),
                case["index_md"].as_str().expect("str").to_owned(),
            ),
        ] {
            if got != want {
                failures.push(format!("case {i} {what}:\n got: {got:?}\nwant: {want:?}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
