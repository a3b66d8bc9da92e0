//! Golden (insta) snapshots of whole rendered bundles: a shared scope with history, redaction, See Also links,
//! quoting and non-ASCII text, and a private session scope. A change to any byte of the format shows up here for
//! review (`cargo xtask golden`). When recorded, every file and report here was checked byte for byte against the
//! reference's own renderers run on the same topics.

use cao_core::time::parse_ts;
use cao_core::{Key, MemoryType, Scope};
use cao_okf::export::{ExportEntry, ExportOptions, ExportTopic, render_bundle};
use chrono::{DateTime, Utc};

fn ts(s: &str) -> DateTime<Utc> {
    parse_ts(s).expect("valid timestamp")
}

fn topic(key: &str, memory_type: MemoryType, tags: &str, content: &str) -> ExportTopic {
    ExportTopic {
        key: Key::parse_strict(key).expect("valid key"),
        scope_id: None,
        memory_type,
        tags: tags.to_owned(),
        created_at: ts("2026-01-02T03:04:05Z"),
        updated_at: ts("2026-03-04T05:06:07Z"),
        content: content.to_owned(),
        history: Vec::new(),
    }
}

/// Every file of a bundle, in path order, each under a `=== <path>` line.
fn dump(bundle: &cao_okf::RenderedBundle) -> String {
    let mut out = String::new();
    for (path, text) in &bundle.files {
        out.push_str(&format!("=== {path}\n{text}"));
    }
    out.push_str(&format!(
        "=== report\n{}\n",
        serde_json::to_string_pretty(&bundle.report).expect("json")
    ));
    out
}

fn shared_topics() -> Vec<ExportTopic> {
    let mut with_history = topic(
        "build-tool",
        MemoryType::Feedback,
        "rust,cargo",
        "Use cargo nextest. It isolates tests.",
    );
    with_history.history = vec![
        ExportEntry {
            timestamp: ts("2026-01-02T03:04:05Z"),
            content: "Use cargo test.\n".into(),
        },
        ExportEntry {
            timestamp: ts("2026-02-03T04:05:06Z"),
            content: "token = abcdefghijklmnopqrstuvwxyz".into(),
        },
    ];
    vec![
        with_history,
        topic(
            "linked",
            MemoryType::Reference,
            "",
            "See the related notes.\n\n## See Also\n- [build-tool](../global/build-tool.md)\n- [missing](../global/missing.md)",
        ),
        topic(
            "unicode",
            MemoryType::User,
            "café,naïve \"quoted\",emoji😀",
            "Grüße aus Köln — 😀 works! Tail.",
        ),
        topic("a-b", MemoryType::Project, "", "Sorted by path: a-b.md before a.md."),
        topic(
            "a",
            MemoryType::Project,
            "",
            "   \n\n# Heading only first\n- [x](y)\n\n  Indented first sentence.  \n",
        ),
        topic(
            "secret",
            MemoryType::Project,
            "",
            "the key is AKIAIOSFODNN7EXAMPLE here",
        ),
    ]
}

#[test]
fn golden_shared_scope_skip_secrets_with_history() {
    let opts = ExportOptions {
        scope: Scope::Global,
        scope_id: None,
        include_history: true,
        redact: false,
    };
    let bundle = render_bundle(&opts, &shared_topics()).expect("renders");
    insta::assert_snapshot!("global_skip_with_history", dump(&bundle));
}

#[test]
fn golden_shared_scope_redacted() {
    let opts = ExportOptions {
        scope: Scope::Project,
        scope_id: Some("github-com-acme-app".into()),
        include_history: true,
        redact: true,
    };
    let bundle = render_bundle(&opts, &shared_topics()).expect("renders");
    insta::assert_snapshot!("project_redacted_with_history", dump(&bundle));
}

#[test]
fn golden_session_scope_nests_by_scope_id() {
    let mut a = topic(
        "note",
        MemoryType::Project,
        "",
        "Session one.\n\n## See Also\n- [other](../s-1/other.md)",
    );
    a.scope_id = Some("s-1".into());
    let mut b = topic("other", MemoryType::Project, "", "Other note.");
    b.scope_id = Some("s-1".into());
    let mut c = topic("note", MemoryType::Project, "", "Session two.");
    c.scope_id = Some("s_2".into());
    let opts = ExportOptions {
        scope: Scope::Session,
        scope_id: None,
        include_history: false,
        redact: false,
    };
    let bundle = render_bundle(&opts, &[a, b, c]).expect("renders");
    insta::assert_snapshot!("session_all_sessions", dump(&bundle));
}

#[test]
fn empty_scope_renders_index_and_manifest_only() {
    let opts = ExportOptions {
        scope: Scope::Federated,
        scope_id: None,
        include_history: false,
        redact: false,
    };
    let bundle = render_bundle(&opts, &[]).expect("renders");
    insta::assert_snapshot!("federated_empty", dump(&bundle));
}
