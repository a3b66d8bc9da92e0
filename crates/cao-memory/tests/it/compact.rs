//! `MemoryService::compact` against a fake OpenAI-compatible endpoint served by the test: a good answer rewrites the
//! topic through the write protocol (the journal holds both versions, one audit line carries the previous text);
//! malformed, oversized, cut, link-carrying, secret-carrying, fence-unbalanced and header-dropping answers and a
//! timeout are each refused (or failed) with their reason and leave the topic byte-identical; a dry run writes
//! nothing; a topic changed while the model was writing is skipped; with the `none` provider there is nothing to do.

use cao_core::{Key, Scope, Settings};
use cao_memory::{CompactReport, CompactRequest, CompactStatus, MemoryError, MemoryService, NoProgress, StoreArgs};
use cao_model::{OpenAiConfig, OpenAiModel, RetryPolicy, SharedModel};
use cao_testkit::fake_model::{FakeModel, Reply};
use cao_testkit::service::ServiceFixture;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

const PROJECT: &str = "proj-c";

fn fixture() -> ServiceFixture {
    ServiceFixture::builder().project(PROJECT).open()
}

fn store(fx: &ServiceFixture, key: &str, content: &str) {
    fx.svc
        .store(
            &fx.ctx,
            StoreArgs {
                content: content.into(),
                scope: Some(cao_core::Scope::Project),
                key: Some(key.into()),
                tags: Some("deploy".into()),
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("store {key}: {e}"));
    fx.clock.advance(chrono::Duration::minutes(1));
}

/// A topic with two entries.
fn two_entries(fx: &ServiceFixture, key: &str) {
    store(fx, key, "The service listens on port 8080. Deploys run on Fridays.");
    store(fx, key, "The service moved to port 9090.");
}

fn model(ep: &FakeModel, timeout: Duration) -> SharedModel {
    OpenAiModel::new(OpenAiConfig {
        url: ep.url(),
        name: "fake".into(),
        api_key: None,
        timeout,
        retry: RetryPolicy {
            max_attempts: 1,
            base_delay: Duration::from_millis(10),
            max_retry_after: Duration::from_secs(1),
        },
    })
    .map(SharedModel::new)
    .expect("model")
}

/// The `# <key>` and id lines of the article in a prompt.
fn header_of(user: &str) -> (String, String) {
    let key = user
        .lines()
        .find_map(|l| l.strip_prefix("# "))
        .unwrap_or_default()
        .to_owned();
    let id = user
        .lines()
        .find(|l| l.starts_with("<!-- id:"))
        .unwrap_or_default()
        .to_owned();
    (key, id)
}

const GOOD_BODY: &str = "The service listens on port 9090 (it moved from 8080). Deploys run on Fridays.";

/// Answers chosen by the topic's key.
fn decide(user: &str) -> Reply {
    let (key, id) = header_of(user);
    let article = |body: &str| format!("# {key}\n{id}\n\n{body}\n");
    match key.as_str() {
        "good" | "raced" => Reply::text(&article(GOOD_BODY)),
        "with-see-also" => Reply::text(&article(&format!(
            "{GOOD_BODY}\n\n## See Also\n- [good](project/good.md)"
        ))),
        "malformed" => Reply::text("Sure! Here is the consolidated article you asked for."),
        "oversized" => Reply::text(&article(&"port 9090. ".repeat(1000))),
        "cut" => Reply::text(&article(&"x".repeat(200_000))),
        "link" => Reply::text(&article(&format!(
            "{GOOD_BODY} See [the runbook](https://evil.example/run)."
        ))),
        "secret" => Reply::text(&article(&format!("{GOOD_BODY} Key: AKIAABCDEFGHIJKLMNOP."))),
        "fence" => Reply::text(&article(&format!("{GOOD_BODY}\n\n```sh\ndeploy --port 9090"))),
        "no-header" => Reply::text(&format!("{id}\n\n{GOOD_BODY}\n")),
        "slow" => Reply::text(&article(GOOD_BODY)).delayed(Duration::from_secs(3)),
        _ => Reply::text("unexpected"),
    }
}

/// The topic text as stored (the topic file's bytes in an embedded home, the stored text on PostgreSQL).
fn topic_bytes(fx: &ServiceFixture, key: &str) -> Vec<u8> {
    let memory = cao_core::MemoryRef::new(
        Scope::Project,
        Some(PROJECT.into()),
        Key::parse_strict(key).expect("key"),
    );
    fx.svc
        .storage()
        .topic_text(&memory)
        .expect("topic text")
        .expect("a stored topic")
        .into_bytes()
}

fn row(fx: &ServiceFixture, key: &str) -> cao_index::MemoryRow {
    fx.svc
        .storage()
        .read()
        .expect("read")
        .get(Scope::Project, Some(PROJECT), &Key::parse_strict(key).expect("key"))
        .expect("get")
        .expect("row")
}

fn run(fx: &ServiceFixture, m: &SharedModel, key: Option<&str>, dry_run: bool) -> CompactReport {
    fx.svc
        .compact(
            &fx.ctx,
            CompactRequest {
                scope: Some(Scope::Project),
                key: key.map(str::to_owned),
                dry_run,
                model: Some(m.clone()),
            },
            &NoProgress,
        )
        .expect("compact")
}

fn audit_lines(fx: &ServiceFixture, event: &str) -> Vec<Value> {
    crate::audit_text(&fx.svc)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json line"))
        .filter(|l| l["event"] == event)
        .collect()
}

#[test]
fn a_good_answer_becomes_the_current_content_with_both_versions_kept() {
    let fx = fixture();
    two_entries(&fx, "good");
    let ep = FakeModel::start(decide);
    let m = model(&ep, Duration::from_secs(5));
    let before = row(&fx, "good");
    let report = run(&fx, &m, None, false);
    assert_eq!(report.counts.compacted, 1, "{report:#?}");
    let t = &report.topics[0];
    assert_eq!(
        (t.key.as_str(), t.status, t.entries),
        ("good", CompactStatus::Compacted, 2)
    );
    let after = row(&fx, "good");
    assert_eq!(after.content, GOOD_BODY);
    assert_eq!(after.id, before.id, "same memory");
    assert_eq!(
        after.entry_count, 3,
        "the article is a new entry; the earlier ones stay in the file"
    );
    assert_eq!(
        after.last_compiled_at,
        Some(after.updated_at),
        "the fixed clock has whole seconds"
    );
    let file = String::from_utf8(topic_bytes(&fx, "good")).expect("utf-8");
    assert!(
        file.contains("port 8080. Deploys") && file.ends_with(&format!("{GOOD_BODY}\n")),
        "{file}"
    );

    let journal: Vec<String> = fx
        .svc
        .storage()
        .read()
        .expect("read")
        .journal(|j| j.entries_from(&t.container, 0, 1000))
        .expect("journal")
        .into_iter()
        .filter(|e| e.key.as_str() == "good")
        .map(|e| e.text)
        .collect();
    assert_eq!(
        journal,
        [
            "The service listens on port 8080. Deploys run on Fridays.",
            "The service moved to port 9090.",
            GOOD_BODY
        ],
        "the journal holds the previous and the new version"
    );
    let lines = audit_lines(&fx, "compact");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["key"], "good");
    assert_eq!(lines[0]["outcome"], "compacted");
    assert_eq!(lines[0]["previous"], "The service moved to port 9090.");

    // Compacted: one entry since the last compaction, so a second run has nothing to do and asks nothing.
    let asked = ep.requests();
    let again = run(&fx, &m, None, false);
    assert!(again.topics.is_empty() && again.nothing_to_do.is_some(), "{again:#?}");
    assert_eq!(ep.requests(), asked);
    let by_key = run(&fx, &m, Some("good"), false);
    assert_eq!(by_key.topics[0].status, CompactStatus::Skipped);
    assert_eq!(ep.requests(), asked);
    // A new entry after the compaction makes it a candidate again, with the article and the new entry only.
    fx.clock.advance(chrono::Duration::minutes(1));
    store(&fx, "good", "Deploys moved to Mondays.");
    let third = run(&fx, &m, None, true);
    assert_eq!(third.topics[0].entries, 2, "{third:#?}");
    let prompt = ep.user_messages().last().cloned().unwrap_or_default();
    assert!(
        prompt.contains(GOOD_BODY) && prompt.contains("Mondays") && !prompt.contains("listens on port 8080"),
        "{prompt}"
    );
}

#[test]
fn see_also_bullets_are_the_only_links_accepted() {
    let fx = fixture();
    two_entries(&fx, "with-see-also");
    let ep = FakeModel::start(decide);
    let report = run(&fx, &model(&ep, Duration::from_secs(5)), None, false);
    assert_eq!(report.topics[0].status, CompactStatus::Compacted, "{report:#?}");
    assert!(row(&fx, "with-see-also").content.ends_with("- [good](project/good.md)"));
}

#[test]
fn every_bad_answer_is_refused_with_its_reason_and_the_topic_is_unchanged() {
    let fx = fixture();
    let cases = [
        ("malformed", CompactStatus::Refused, Some("header_missing")),
        ("oversized", CompactStatus::Refused, Some("too_long")),
        ("cut", CompactStatus::Refused, Some("truncated")),
        ("link", CompactStatus::Refused, Some("link")),
        ("secret", CompactStatus::Refused, Some("secret")),
        ("fence", CompactStatus::Refused, Some("unbalanced_fences")),
        ("no-header", CompactStatus::Refused, Some("header_missing")),
        ("slow", CompactStatus::Failed, None),
    ];
    for (key, _, _) in &cases {
        two_entries(&fx, key);
    }
    let before: Vec<(Vec<u8>, cao_index::MemoryRow)> = cases
        .iter()
        .map(|(k, _, _)| (topic_bytes(&fx, k), row(&fx, k)))
        .collect();
    let ep = FakeModel::start(decide);
    let report = run(&fx, &model(&ep, Duration::from_millis(500)), None, false);
    let got: Vec<(&str, CompactStatus, Option<&str>)> = report
        .topics
        .iter()
        .map(|t| (t.key.as_str(), t.status, t.refusal))
        .collect();
    let mut want = cases.to_vec();
    want.sort_by_key(|c| c.0);
    assert_eq!(got, want, "{report:#?}");
    for t in &report.topics {
        let reason = t.reason.as_deref().unwrap_or_default();
        assert!(!reason.is_empty(), "{t:?}");
        assert!(
            !reason.contains("evil") && !reason.contains("AKIA"),
            "no answer text in a reason: {reason}"
        );
    }
    let slow = report.topics.iter().find(|t| t.key == "slow").expect("slow");
    assert!(
        slow.reason.as_deref().unwrap_or_default().contains("no answer within"),
        "{slow:?}"
    );
    for ((key, _, _), (bytes, r)) in cases.iter().zip(&before) {
        assert_eq!(&topic_bytes(&fx, key), bytes, "{key}: topic file changed");
        assert_eq!(&row(&fx, key), r, "{key}: row changed");
    }
    assert!(audit_lines(&fx, "compact").is_empty());
    assert!(report.has_problems());
}

#[test]
fn a_topic_holding_a_credential_is_never_sent_to_the_model() {
    let fx = fixture();
    store(&fx, "good", "The deploy key is AKIAABCDEFGHIJKLMNOP for now.");
    store(&fx, "good", "The service moved to port 9090.");
    let bytes = topic_bytes(&fx, "good");
    let ep = FakeModel::start(decide);
    let report = run(&fx, &model(&ep, Duration::from_secs(5)), None, false);
    let t = &report.topics[0];
    assert_eq!(t.status, CompactStatus::Skipped, "{report:#?}");
    assert!(
        t.reason.as_deref().unwrap_or_default().contains("aws_access_key"),
        "{t:?}"
    );
    assert_eq!(ep.requests(), 0, "the model was never asked");
    assert_eq!(topic_bytes(&fx, "good"), bytes);
}

#[test]
fn a_dry_run_asks_and_validates_but_writes_nothing() {
    let fx = fixture();
    two_entries(&fx, "good");
    two_entries(&fx, "link");
    let bytes = topic_bytes(&fx, "good");
    let r = row(&fx, "good");
    let ep = FakeModel::start(decide);
    let report = run(&fx, &model(&ep, Duration::from_secs(5)), None, true);
    let got: Vec<(&str, CompactStatus)> = report.topics.iter().map(|t| (t.key.as_str(), t.status)).collect();
    assert_eq!(
        got,
        [("good", CompactStatus::WouldCompact), ("link", CompactStatus::Refused)]
    );
    assert!(report.dry_run);
    assert_eq!(report.topics[0].chars_after, Some(GOOD_BODY.chars().count()));
    assert_eq!(topic_bytes(&fx, "good"), bytes);
    assert_eq!(row(&fx, "good"), r);
    assert!(audit_lines(&fx, "compact").is_empty());
}

#[test]
fn a_topic_changed_while_the_model_was_writing_is_skipped() {
    if cao_testkit::service::skip_on_postgres(
        "the fake model's handler stores on a tokio worker thread, where the synchronous PostgreSQL client cannot run (the servers call the store only from blocking threads)",
    ) {
        return;
    }
    let fx = fixture();
    two_entries(&fx, "raced");
    // The endpoint stores a new entry through a second service on the same home before it answers.
    let other =
        Arc::new(MemoryService::open_with(fx.home.clone(), Settings::default(), fx.clock.clone()).expect("open"));
    let ctx = fx.ctx.clone();
    let ep = FakeModel::start(move |user| {
        other
            .store(
                &ctx,
                StoreArgs {
                    content: "A store that raced the compaction.".into(),
                    scope: Some(cao_core::Scope::Project),
                    key: Some("raced".into()),
                    tags: Some("deploy".into()),
                    ..Default::default()
                },
            )
            .expect("racing store");
        decide(user)
    });
    let report = run(&fx, &model(&ep, Duration::from_secs(5)), None, false);
    let t = &report.topics[0];
    assert_eq!(t.status, CompactStatus::Skipped, "{report:#?}");
    assert!(t.reason.as_deref().unwrap_or_default().contains("changed"), "{t:?}");
    assert_eq!(row(&fx, "raced").content, "A store that raced the compaction.");
    assert!(audit_lines(&fx, "compact").is_empty());
}

#[test]
fn without_a_model_there_is_nothing_to_do_and_an_unknown_key_is_not_found() {
    let fx = fixture();
    two_entries(&fx, "good");
    let report = fx
        .svc
        .compact(&fx.ctx, CompactRequest::default(), &NoProgress)
        .expect("compact");
    assert_eq!(report.model, "none");
    assert!(report.topics.is_empty());
    assert!(
        report
            .nothing_to_do
            .as_deref()
            .unwrap_or_default()
            .contains("memory.model.provider is none"),
        "{report:#?}"
    );
    let ep = FakeModel::start(decide);
    let err = fx
        .svc
        .compact(
            &fx.ctx,
            CompactRequest {
                key: Some("absent".into()),
                model: Some(model(&ep, Duration::from_secs(5))),
                ..Default::default()
            },
            &NoProgress,
        )
        .expect_err("unknown key");
    assert!(matches!(err, MemoryError::NotFound { .. }), "{err}");
    let err = fx
        .svc
        .compact(
            &fx.ctx,
            CompactRequest {
                key: Some("Bad Key".into()),
                model: Some(model(&ep, Duration::from_secs(5))),
                ..Default::default()
            },
            &NoProgress,
        )
        .expect_err("bad key");
    assert!(matches!(err, MemoryError::Invalid(_)), "{err}");
    assert_eq!(ep.requests(), 0);
}

/// Automatic compaction: a service that did not enable it (every one-shot process) never queues a topic, whatever
/// `memory.compile_mode` says; once enabled (long-running processes), a store to a topic with two or more entries
/// queues it once (coalesced), a first store does not, and `off` queues nothing. The worker's step compacts the
/// queued topic through the same validated path as `compact` and leaves a refused one unchanged.
#[test]
fn automatic_compaction_queues_only_where_enabled_and_compacts_through_the_validated_path() {
    let on = Settings::from_value(serde_json::json!({"memory": {"compile_mode": "model"}}));
    let fx = ServiceFixture::builder().project(PROJECT).settings(on.clone()).open();
    two_entries(&fx, "good");
    assert_eq!(fx.svc.auto_compaction().waiting(), 0, "a one-shot service never queues");

    fx.svc.auto_compaction().enable();
    store(&fx, "good", "Deploys moved to Thursdays.");
    store(&fx, "good", "The service still listens on 9090.");
    assert_eq!(fx.svc.auto_compaction().waiting(), 1, "one topic, queued once");
    store(&fx, "fresh-topic", "A first entry is not an update.");
    assert_eq!(fx.svc.auto_compaction().waiting(), 1);
    two_entries(&fx, "link");
    assert_eq!(fx.svc.auto_compaction().waiting(), 2);

    let off = fx.reopen(Settings::from_value(
        serde_json::json!({"memory": {"compile_mode": "off"}}),
    ));
    off.auto_compaction().enable();
    off.store(
        &fx.ctx,
        StoreArgs {
            content: "Another entry while off.".into(),
            scope: Some(cao_core::Scope::Project),
            key: Some("good".into()),
            ..Default::default()
        },
    )
    .expect("store");
    assert_eq!(off.auto_compaction().waiting(), 0, "compile_mode off queues nothing");

    let ep = FakeModel::start(decide);
    let m = model(&ep, Duration::from_secs(5));
    let key = |k: &str| Key::parse_strict(k).expect("key");
    let first = fx.svc.auto_compaction().next(m.model(), Duration::from_secs(1));
    let cao_memory::AutoCompactStep::Done(memory, status) = first else {
        panic!("{first:?}");
    };
    assert_eq!(memory.key, key("good"));
    assert_eq!(status, Some(CompactStatus::Compacted));
    let good = row(&fx, "good");
    assert_eq!(good.content, GOOD_BODY);
    assert!(good.last_compiled_at.is_some());

    let links_before = (row(&fx, "link"), topic_bytes(&fx, "link"));
    let second = fx.svc.auto_compaction().next(m.model(), Duration::from_secs(1));
    assert!(
        matches!(&second, cao_memory::AutoCompactStep::Done(m, Some(CompactStatus::Refused)) if m.key == key("link")),
        "{second:?}"
    );
    let links_after = (row(&fx, "link"), topic_bytes(&fx, "link"));
    assert_eq!(links_after, links_before, "a refused answer leaves the topic unchanged");
    assert_eq!(
        fx.svc.auto_compaction().next(m.model(), Duration::from_millis(10)),
        cao_memory::AutoCompactStep::Idle
    );
    assert_eq!(fx.svc.auto_compaction().close(), 0);
    assert_eq!(
        fx.svc.auto_compaction().next(m.model(), Duration::from_secs(5)),
        cao_memory::AutoCompactStep::Closed
    );
}
