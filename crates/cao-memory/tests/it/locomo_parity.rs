//! LoCoMo on both backends (issue 28): every turn of one real conversation stored through the service into the
//! embedded store and into PostgreSQL, as the retrieval benchmark stores it (`cao-bench`'s `retrieval --dated`:
//! project scope, each turn at its session's date, a second apart), then every answerable question asked in the
//! benchmark's bm25/score and hybrid/recency configurations: both backends must return the same top 5 keys, in
//! the same order, on every question.

use cao_core::TerminalContext;
use cao_memory::{MemoryService, RecallArgs, StoreArgs};
use cao_testkit::locomo;
use cao_testkit::postgres::TestDatabase;
use cao_testkit::service::{ServiceFixture, skip_on_postgres, utc};
use chrono::{DateTime, NaiveDateTime, Utc};

/// A LoCoMo session date (`1:56 pm on 8 May, 2023`) as UTC.
fn session_time(date: &str) -> DateTime<Utc> {
    NaiveDateTime::parse_from_str(&date.to_ascii_uppercase(), "%I:%M %p ON %d %B, %Y")
        .unwrap_or_else(|e| panic!("LoCoMo session date {date:?}: {e}"))
        .and_utc()
}

/// Store every turn of `sample` on `fx` (the benchmark's content and key), then set the clock to the day after
/// the last session, when the questions are asked.
fn store_conversation(fx: &ServiceFixture, sample: &locomo::Sample) {
    let mut last = None;
    for (i, t) in sample.turns.iter().enumerate() {
        let at = session_time(&t.date) + chrono::Duration::seconds(i as i64);
        fx.clock.set(at);
        last = Some(at);
        let key = locomo::turn_key(&t.dia_id);
        fx.svc
            .store(
                &fx.ctx,
                StoreArgs {
                    content: format!("{} ({}): {}", t.speaker, t.date, t.text),
                    scope: Some(cao_core::Scope::Project),
                    memory_type: Some(cao_core::MemoryType::Project),
                    key: Some(key.clone()),
                    ..Default::default()
                },
            )
            .unwrap_or_else(|e| panic!("store {key}: {e}"));
    }
    let last = last.expect("the conversation has turns");
    fx.clock.set(last + chrono::Duration::days(1));
}

/// The top 5 keys of `question` in `mode` / `sort` (project scope; access not recorded, so every configuration
/// sees the same state).
fn top5(svc: &MemoryService, ctx: &TerminalContext, question: &str, mode: &str, sort: &str) -> Vec<String> {
    svc.recall(
        ctx,
        // Default call options: access is not recorded.
        RecallArgs {
            query: Some(question.to_owned()),
            scope: Some(cao_core::Scope::Project),
            search_mode: Some(mode.parse().expect("a search mode")),
            sort_by: Some(sort.parse().expect("a sort order")),
            limit: Some(5),
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("recall {question:?} ({mode}/{sort}): {e}"))
    .memories
    .into_iter()
    .map(|m| m.key)
    .collect()
}

#[test]
fn one_locomo_conversation_gives_the_same_top_5_on_both_backends() {
    if skip_on_postgres(
        "this test opens the embedded store and PostgreSQL side by side itself; it runs in the default pass, \
         where CAO_TEST_DATABASE_URL names the server",
    ) {
        return;
    }
    let Some(db) = TestDatabase::create() else { return };
    let samples = locomo::load().expect("LoCoMo data in ../shared/data/locomo");
    let sample = samples.first().expect("a LoCoMo conversation");
    let open = |database: Option<&TestDatabase>| {
        let mut b = ServiceFixture::builder()
            .at(utc(2023, 1, 1, 0, 0, 0))
            .project(&sample.sample_id);
        if let Some(db) = database {
            b = b.database(db.url.clone());
        }
        b.open()
    };
    let embedded = open(None);
    let pg = open(Some(&db));
    store_conversation(&embedded, sample);
    store_conversation(&pg, sample);

    let questions: Vec<&str> = sample
        .questions
        .iter()
        .filter(|q| q.category != 5 && !q.evidence.is_empty())
        .map(|q| q.question.as_str())
        .collect();
    assert!(
        questions.len() > 100,
        "{}: {} questions",
        sample.sample_id,
        questions.len()
    );
    let mut answered = 0;
    let mut differ = Vec::new();
    for q in &questions {
        for (mode, sort) in [("bm25", "score"), ("hybrid", "recency")] {
            let want = top5(&embedded.svc, &embedded.ctx, q, mode, sort);
            let got = top5(&pg.svc, &pg.ctx, q, mode, sort);
            answered += usize::from(want.len() == 5);
            if want != got {
                differ.push(format!("{q:?} ({mode}/{sort}): embedded {want:?}, PostgreSQL {got:?}"));
            }
        }
    }
    assert!(
        answered > questions.len(),
        "most questions fill a top 5 in both configurations: {answered} of {}",
        2 * questions.len()
    );
    assert!(
        differ.is_empty(),
        "{} of {} answers differ:\n{}",
        differ.len(),
        2 * questions.len(),
        differ.join("\n")
    );
}
