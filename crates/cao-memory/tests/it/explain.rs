//! The relevance sort and the `cao.memory.explain/1` report through the service, on fixed corpora with a fixed
//! clock: goldens (insta) for recovered rows, degenerate batches, partial-only matches, time-neutral scopes,
//! supersedes with the lifecycle flag off and on, and a failed eligibility source; every report is validated
//! against docs/schemas/cao.memory.explain-1.json. Property: explain never changes stored access state.

use cao_core::{Scope, Settings};
use cao_lifecycle::{NewRelationship, RelationshipService};
use cao_memory::{ExplainReport, ExplainRequest, MemoryError, MemoryService, RecallArgs};
use cao_testkit::service::RawStorage;
use cao_testkit::service::{ServiceFixture, utc};
use chrono::Duration;
use proptest::prelude::*;
use std::collections::HashSet;
use std::sync::Arc;

/// The service fixture with this file's steps.
struct Fx {
    fx: ServiceFixture,
}

impl std::ops::Deref for Fx {
    type Target = ServiceFixture;
    fn deref(&self) -> &ServiceFixture {
        &self.fx
    }
}

fn settings(lifecycle: bool) -> Settings {
    Settings::from_value(serde_json::json!({"memory": {"lifecycle": {"enabled": lifecycle}}}))
}

fn fx_with(lifecycle: bool) -> Fx {
    let fx = ServiceFixture::builder()
        .at(utc(2025, 1, 1, 0, 0, 0))
        .settings(settings(lifecycle))
        .project("proj-a")
        .session("sess-1")
        .open();
    Fx { fx }
}

impl Fx {
    /// Store `content` under `key` in `scope`, then let `days` pass.
    fn store(&self, scope: &str, key: &str, content: &str, days: i64) {
        self.fx.store_as(&self.ctx, scope, key, content);
        self.clock.advance(Duration::days(days));
    }

    fn explain(&self, query: &str, limit: usize) -> ExplainReport {
        self.explain_in(query, limit, None)
    }

    fn explain_in(&self, query: &str, limit: usize, scope: Option<Scope>) -> ExplainReport {
        let report = self
            .svc
            .explain(
                &self.ctx,
                ExplainRequest {
                    query: query.into(),
                    scope,
                    memory_type: None,
                    all: false,
                    limit,
                },
            )
            .expect("explain");
        validate(&report);
        report
    }

    fn relevance(&self, query: &str, limit: i64) -> Vec<String> {
        self.svc
            .recall(
                &self.ctx,
                cao_memory::Call::new(
                    RecallArgs {
                        query: Some(query.into()),
                        sort_by: Some(cao_core::SortBy::Relevance),
                        limit: Some(limit),
                        ..Default::default()
                    },
                    cao_memory::CallOptions {
                        record_access: true,
                        ..Default::default()
                    },
                ),
            )
            .expect("recall")
            .memories
            .into_iter()
            .map(|m| m.key)
            .collect()
    }

    fn supersedes(&self, scope: Scope, src: &str, tgt: &str) {
        self.edge(scope, src, tgt, "supersedes");
    }

    fn edge(&self, scope: Scope, src: &str, tgt: &str, rel_type: &str) {
        let scope_id = match scope {
            Scope::Project => Some("proj-a".to_owned()),
            Scope::Session => Some("sess-1".to_owned()),
            _ => None,
        };
        RelationshipService::new(self.svc.storage().clone(), self.clock.clone())
            .create(NewRelationship {
                scope,
                scope_id,
                source_key: src.into(),
                target_key: tgt.into(),
                rel_type: rel_type.into(),
                origin: None,
                status: Some("active".into()),
                confidence: None,
                rank: None,
                attributes: None,
            })
            .expect("create edge");
    }

    /// `(key, access_count, last_accessed_at)` of every row.
    fn access_state(&self) -> Vec<(String, i64, Option<String>)> {
        let mut v: Vec<_> = crate::all_rows(&self.svc)
            .expect("rows")
            .into_iter()
            .map(|r| {
                (
                    format!("{}/{}", r.scope, r.key),
                    r.access_count,
                    r.last_accessed_at.map(|t| t.to_rfc3339()),
                )
            })
            .collect();
        v.sort();
        v
    }
}

fn validate(report: &ExplainReport) {
    static SCHEMA: std::sync::LazyLock<jsonschema::Validator> = std::sync::LazyLock::new(|| {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schemas/cao.memory.explain-1.json");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        let schema: serde_json::Value = serde_json::from_str(&text).expect("schema is JSON");
        jsonschema::validator_for(&schema).expect("schema compiles")
    });
    let value = serde_json::to_value(report).expect("report serialises");
    let errors: Vec<String> = SCHEMA.iter_errors(&value).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "schema violations: {errors:?}\n{value:#}");
    for c in &report.candidates {
        for v in [c.lexical, c.recency_factor, c.relevance] {
            assert_eq!(v, (v * 10_000.0).round() / 10_000.0, "4 decimals: {v}");
        }
    }
    assert!(report.candidates.len() <= 2 * report.limit);
}

fn json(report: &ExplainReport) -> String {
    serde_json::to_string_pretty(report).expect("json")
}

/// The JSON and table goldens of one report (`explain_<name>_json`, `explain_<name>_table`).
fn goldens(name: &str, report: &ExplainReport) {
    insta::assert_snapshot!(format!("explain_{name}_json"), json(report));
    let table = cao_memory::render_explain_table(report);
    assert!(
        table.contains(&format!("lexical_degenerate: {}", report.lexical_degenerate)),
        "the footer states lexical_degenerate:\n{table}"
    );
    insta::assert_snapshot!(format!("explain_{name}_table"), table);
}

/// A project corpus: eight fresh notes that mention kafka once (metadata hits, newest first in default recall),
/// and one 400-day-old note dense in the query terms.
fn recovered_corpus(f: &Fx) {
    f.store(
        "project",
        "kafka-streams-guide",
        "kafka streams kafka streams topology: kafka streams joins, kafka streams state stores",
        400,
    );
    for i in 0..8 {
        // A memory's context holds the text of the two created before it and the two after it: two notes on
        // another topic (never all-term matches, so never in a pool that has `limit` all-term rows) keep the
        // standups from carrying the guide's or each other's text.
        f.store(
            "project",
            &format!("lunch-{i}"),
            &format!("lunch menu {i} for the offsite"),
            0,
        );
        f.store(
            "project",
            &format!("coffee-{i}"),
            &format!("coffee order {i} for the offsite"),
            0,
        );
        f.store(
            "project",
            &format!("standup-{i}"),
            &format!("standup {i}: someone mentioned kafka streams in passing among many other unrelated topics today"),
            1,
        );
    }
}

#[test]
fn recovered_rows_golden() {
    let f = fx_with(false);
    recovered_corpus(&f);
    let r = f.explain("kafka streams", 3);
    let guide = r
        .candidates
        .iter()
        .find(|c| c.key == "kafka-streams-guide")
        .expect("guide is a candidate");
    assert!(guide.recovered, "relevance recovers the old dense note");
    assert_eq!(guide.relevance_rank, Some(1));
    assert_eq!(guide.recency_rank, None);
    assert!(guide.recency_factor < 0.87 && guide.recency_factor > 0.85);
    assert_eq!(r.overlap, Some(0.6667), "two of three shared");
    goldens("recovered", &r);
    // The relevance sort returns the relevance top set.
    assert_eq!(f.relevance("kafka streams", 3)[0], "kafka-streams-guide");
}

#[test]
fn degenerate_batch_golden() {
    let f = fx_with(false);
    f.store("project", "bravo", "the kafkaesque build", 1);
    f.store("global", "alpha", "kafkaesque incident review", 1);
    // "kafkaes" is a substring of both but no BM25 token: every lexical value is 0.
    let r = f.explain("kafkaes", 10);
    assert!(r.lexical_degenerate);
    assert_eq!(r.pool.size, 2);
    let order: Vec<&str> = r.candidates.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(
        order,
        ["bravo", "alpha"],
        "identity order within the tier, scope precedence first"
    );
    goldens("degenerate", &r);
    let empty = f.explain("zebra", 10);
    assert!(!empty.lexical_degenerate, "an empty pool is not degenerate");
    assert_eq!(empty.overlap, None);
    assert!(empty.candidates.is_empty());
}

#[test]
fn partial_only_matches_golden() {
    let f = fx_with(false);
    f.store("project", "kafka-retention", "kafka retention is seven days", 2);
    f.store("project", "kafka-kafka", "kafka kafka kafka partitions", 2);
    f.store("global", "streams-api", "the streams api of our platform", 2);
    let r = f.explain("kafka zebra", 10);
    assert_eq!(r.pool.all_term, 0);
    assert_eq!(r.pool.partial, 2);
    assert!(r.candidates.iter().all(|c| c.tier == "partial"));
    goldens("partial_only", &r);
    // All-term matches fill first; partials only fill what is left.
    f.store("global", "zebra-kafka", "kafka zebra crossing", 1);
    let keys = f.relevance("kafka zebra", 10);
    assert_eq!(
        keys[0], "kafka-kafka",
        "scope precedence dominates: project partials first"
    );
    let global_first = f
        .svc
        .recall(
            &f.ctx,
            RecallArgs {
                query: Some("kafka zebra".into()),
                scope: Some(cao_core::Scope::Global),
                sort_by: Some(cao_core::SortBy::Relevance),
                ..Default::default()
            },
        )
        .expect("recall");
    assert_eq!(global_first.memories[0].key, "zebra-kafka");
}

#[test]
fn time_neutral_scopes_golden() {
    let f = fx_with(false);
    f.store("global", "old-global", "postgres vacuum tuning notes", 500);
    f.store("session", "old-session", "postgres vacuum tuning notes", 500);
    f.store("project", "old-project", "postgres vacuum tuning notes", 500);
    f.store("project", "new-project", "postgres vacuum tuning notes", 0);
    let r = f.explain_in("postgres vacuum", 10, Some(Scope::Project));
    let factor = |k: &str| {
        r.candidates
            .iter()
            .find(|c| c.key == k)
            .expect("candidate")
            .recency_factor
    };
    assert_eq!(factor("new-project"), 1.0);
    assert!(factor("old-project") < 0.9);
    assert_eq!(r.candidates[0].key, "new-project");
    let all = f.explain("postgres vacuum", 10);
    for k in ["old-global", "old-session"] {
        assert_eq!(
            all.candidates
                .iter()
                .find(|c| c.key == k)
                .expect("candidate")
                .recency_factor,
            1.0,
            "{k} is time-neutral"
        );
    }
    goldens("time_neutral", &all);
}

fn supersedes_corpus(f: &Fx) {
    f.store(
        "project",
        "deploy-v1",
        "deploy with kubectl apply, deploy scripts v1",
        3,
    );
    f.store("project", "deploy-v2", "deploy with helm; deploy scripts v2", 1);
    f.store("global", "deploy-faq", "deploy questions", 1);
    f.supersedes(Scope::Project, "deploy-v2", "deploy-v1");
}

#[test]
fn supersedes_with_lifecycle_off_golden() {
    let f = fx_with(false);
    supersedes_corpus(&f);
    let r = f.explain("deploy scripts", 10);
    let v1 = r.candidates.iter().find(|c| c.key == "deploy-v1").expect("v1");
    assert!(v1.superseded, "demotion applies in relevance regardless of the flag");
    assert_eq!(
        v1.injection,
        cao_memory::Injection::Eligible,
        "the disabled source is not consulted"
    );
    assert!(!r.lifecycle_enabled);
    let v1_rank = v1.relevance_rank.expect("ranked");
    let v2_rank = r
        .candidates
        .iter()
        .find(|c| c.key == "deploy-v2")
        .and_then(|c| c.relevance_rank)
        .expect("v2");
    assert!(v1_rank > v2_rank);
    goldens("supersedes_off", &r);
}

#[test]
fn supersedes_with_lifecycle_on_golden() {
    let f = fx_with(true);
    supersedes_corpus(&f);
    let r = f.explain("deploy scripts", 10);
    let v1 = r.candidates.iter().find(|c| c.key == "deploy-v1").expect("v1");
    assert_eq!(v1.injection, cao_memory::Injection::Excluded);
    assert_eq!(v1.exclusion_reasons, ["superseded"]);
    assert!(r.lifecycle_enabled);
    // Default recall with the flag on moves superseded rows last.
    let last_default = r
        .candidates
        .iter()
        .filter(|c| c.recency_rank.is_some())
        .max_by_key(|c| c.recency_rank)
        .expect("default rows");
    assert_eq!(last_default.key, "deploy-v1");
    goldens("supersedes_on", &r);
}

#[test]
fn failed_eligibility_source_golden() {
    let f = fx_with(true);
    supersedes_corpus(&f);
    f.store("session", "deploy-yesterday", "deploy scripts ran yesterday", 0);
    f.store("session", "deploy-today", "deploy scripts ran today", 0);
    f.supersedes(Scope::Session, "deploy-today", "deploy-yesterday");
    // The session group's read fails; project and global groups stay healthy.
    let index = f.svc.storage().clone();
    assert!(
        f.svc
            .set_supersedes_lookup(Arc::new(move |ids: &[&cao_core::MemoryRef]| {
                if ids.iter().any(|m| m.scope == Scope::Session) {
                    return Err("database is locked".to_owned());
                }
                index
                    .snapshot()
                    .active_supersedes_targets(ids)
                    .map_err(|e| e.to_string())
            }))
    );
    let r = f.explain("deploy scripts", 10);
    assert_eq!(r.eligibility_errors, ["lifecycle.supersedes"]);
    let get = |k: &str| r.candidates.iter().find(|c| c.key == k).expect("candidate");
    assert_eq!(get("deploy-today").injection, cao_memory::Injection::Unknown);
    assert_eq!(get("deploy-yesterday").injection, cao_memory::Injection::Unknown);
    assert!(!get("deploy-yesterday").superseded, "a failed group fails open");
    assert_eq!(
        get("deploy-v1").injection,
        cao_memory::Injection::Excluded,
        "healthy groups keep verdicts"
    );
    assert_eq!(get("deploy-v2").injection, cao_memory::Injection::Eligible);
    goldens("failed_source", &r);
}

#[test]
fn explain_errors_come_before_any_read() {
    let f = fx_with(false);
    let bad = |query: &str, limit: usize| {
        f.svc.explain(
            &f.ctx,
            ExplainRequest {
                query: query.into(),
                scope: None,
                memory_type: None,
                all: false,
                limit,
            },
        )
    };
    assert!(matches!(bad("  ", 10), Err(MemoryError::Invalid(_))));
    assert!(matches!(bad("q", 0), Err(MemoryError::Invalid(_))));
    assert!(matches!(bad("q", 101), Err(MemoryError::Invalid(_))));
    let off = MemoryService::open_with(
        f.home.clone(),
        Settings::from_value(serde_json::json!({"memory": {"explain_enabled": false}})),
        f.clock.clone(),
    )
    .expect("open");
    let err = off
        .explain(
            &f.ctx,
            ExplainRequest {
                query: "q".into(),
                scope: None,
                memory_type: None,
                all: false,
                limit: 10,
            },
        )
        .expect_err("disabled");
    assert!(matches!(err, MemoryError::ExplainDisabled));
    assert!(err.to_string().contains("memory.explain_enabled"));
}

#[test]
fn relevance_without_a_query_is_the_recency_path() {
    let f = fx_with(false);
    recovered_corpus(&f);
    let run = |sort: &str, query: Option<&str>| -> Vec<String> {
        f.svc
            .recall(
                &f.ctx,
                RecallArgs {
                    query: query.map(str::to_owned),
                    sort_by: Some(sort.parse().expect("a valid sort_by")),
                    ..Default::default()
                },
            )
            .expect("recall")
            .memories
            .into_iter()
            .map(|m| m.key)
            .collect()
    };
    assert_eq!(run("relevance", None), run("recency", None));
    assert_eq!(run("relevance", Some("   ")), run("recency", None));
}

#[test]
fn relevance_counts_access_for_returned_primaries_only() {
    let f = fx_with(false);
    recovered_corpus(&f);
    let keys = f.relevance("kafka streams", 2);
    let counted: HashSet<String> = f
        .access_state()
        .into_iter()
        .filter(|(_, n, _)| *n > 0)
        .map(|(k, _, _)| k.trim_start_matches("project/").to_owned())
        .collect();
    assert_eq!(counted, keys.into_iter().collect::<HashSet<_>>());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Explain never changes stored access state, whatever the corpus, query, scope or limit.
    #[test]
    fn explain_never_changes_access_state(
        docs in prop::collection::vec((0..3usize, prop::sample::subsequence(vec!["kafka", "streams", "deploy", "helm", "vacuum", "postgres"], 1..4)), 1..12),
        query in prop::sample::subsequence(vec!["kafka", "streams", "deploy", "zebra", "vac"], 1..3),
        limit in 1usize..6,
        scoped in any::<bool>(),
    ) {
        let f = fx_with(true);
        for (i, (scope, words)) in docs.iter().enumerate() {
            let scope = ["global", "project", "session"][*scope];
            f.store(scope, &format!("doc-{i}"), &words.join(" "), 1);
        }
        // Some accesses exist before, so "unchanged" is not just "all zero".
        f.relevance("kafka deploy", 3);
        let before = f.access_state();
        let r = f.explain_in(&query.join(" "), limit, scoped.then_some(Scope::Global));
        prop_assert_eq!(f.access_state(), before);
        prop_assert!(r.candidates.len() <= 2 * limit);
    }
}

/// Lifecycle recall reads supersedes state once per scope group and uses that snapshot for ordering and labels
/// (no second read for the labels of primaries); explain reads once over both pools.
#[test]
fn one_supersedes_snapshot_per_call() {
    if cao_testkit::service::skip_on_postgres(
        "writes a second row version through a raw SQLite index handle between two reads",
    ) {
        return;
    }
    let f = fx_with(true);
    supersedes_corpus(&f);
    let reads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (index, counter) = (f.svc.storage().clone(), reads.clone());
    assert!(
        f.svc
            .set_supersedes_lookup(Arc::new(move |ids: &[&cao_core::MemoryRef]| {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                index
                    .snapshot()
                    .active_supersedes_targets(ids)
                    .map_err(|e| e.to_string())
            }))
    );
    let taken = |_: &Fx| reads.swap(0, std::sync::atomic::Ordering::SeqCst);
    for sort in ["relevance", "recency", "score"] {
        let out = f
            .svc
            .recall(
                &f.ctx,
                RecallArgs {
                    query: Some("deploy scripts".into()),
                    scope: Some(cao_core::Scope::Project),
                    sort_by: Some(sort.parse().expect("a valid sort_by")),
                    ..Default::default()
                },
            )
            .expect("recall");
        let labelled: Vec<&str> = out
            .memories
            .iter()
            .filter(|m| m.lifecycle_status.is_some())
            .map(|m| m.key.as_str())
            .collect();
        assert_eq!(labelled, ["deploy-v1"], "{sort}");
        assert_eq!(
            out.memories.last().map(|m| m.key.as_str()),
            Some("deploy-v1"),
            "{sort}: demoted"
        );
        assert_eq!(taken(&f), 1, "{sort}: one read for the one scope group");
    }
    // Related targets named by the candidates are in the same snapshot: the superseded related extra is labelled
    // without a second read.
    // The legacy related_keys csv (written by the reference, read by related expansion).
    let key = cao_core::Key::sanitize("deploy-v2").expect("key");
    let mut v2 = f
        .svc
        .storage()
        .read()
        .expect("read")
        .get(Scope::Project, Some("proj-a"), &key)
        .expect("get")
        .expect("row");
    v2.related_keys = Some("missing-key,deploy-v1".into());
    f.svc.raw_index().upsert(&v2).expect("upsert");
    taken(&f);
    for sort in ["relevance", "recency", "score"] {
        let out = f
            .svc
            .recall(
                &f.ctx,
                RecallArgs {
                    query: Some("helm".into()),
                    scope: Some(cao_core::Scope::Project),
                    sort_by: Some(sort.parse().expect("a valid sort_by")),
                    include_related: Some(true),
                    ..Default::default()
                },
            )
            .expect("recall");
        let got: Vec<(&str, bool)> = out
            .memories
            .iter()
            .map(|m| (m.key.as_str(), m.lifecycle_status.is_some()))
            .collect();
        assert_eq!(
            got,
            [("deploy-v2", false), ("deploy-v1", true)],
            "{sort}: primary, then the related extra"
        );
        assert_eq!(taken(&f), 1, "{sort}: related targets share the ordering snapshot");
    }
    f.explain_in("deploy scripts", 10, Some(Scope::Project));
    assert_eq!(taken(&f), 1, "explain: one read over both pools");
    f.explain("deploy scripts", 10);
    assert_eq!(
        taken(&f),
        2,
        "explain over two scope groups (project, global): one read each"
    );
}

/// Scope precedence dominates relevance even when another scope has more (and newer) matches than a source reads:
/// pools are built per scope group, so 55 newer global matches cannot push the project's own matches out.
#[test]
fn another_scopes_volume_never_pushes_a_scopes_matches_out() {
    // Content-only lexical values (context weight 0): the first and last memory of a scope have one neighbour less in
    // their context, which would break the equal lexical strength this test relies on.
    let fx = ServiceFixture::builder()
        .at(utc(2025, 1, 1, 0, 0, 0))
        .settings(Settings::from_value(
            serde_json::json!({"memory": {"recall": {"context_weight": 0}}}),
        ))
        .project("proj-a")
        .session("sess-1")
        .open();
    let f = Fx { fx };
    for i in 0..55 {
        f.store(
            "project",
            &format!("proj-{i:02}"),
            "deploy checklist for the release",
            0,
        );
        f.clock.advance(Duration::minutes(1));
    }
    for i in 0..55 {
        f.store("global", &format!("glob-{i:02}"), "deploy checklist for the release", 0);
        f.clock.advance(Duration::minutes(1));
    }
    // Equal lexical strength: the age factor puts the newest project rows first.
    let keys = f.relevance("deploy checklist", 5);
    assert_eq!(keys, ["proj-54", "proj-53", "proj-52", "proj-51", "proj-50"]);
    // A substring-only query is degenerate: identity order over the project's pool (its 50 newest matches).
    let keys = f.relevance("eploy", 5);
    assert_eq!(keys, ["proj-05", "proj-06", "proj-07", "proj-08", "proj-09"]);
    for query in ["deploy checklist", "eploy"] {
        let r = f.explain(query, 5);
        assert!(r.candidates.iter().all(|c| c.scope == Scope::Project), "{query}");
    }
}

/// The relevance sort against a direct model of the spec on small corpora (no source is truncated): all visible
/// rows that share a token or match every term; all-term rows, plus partial rows in precedence-then-BM25 order while
/// fewer than `limit`; then scope precedence, tier, lexical strength x age factor (project only), lexical strength,
/// identity. Raw scores come from the index; any positive normaliser gives the same order.
mod model {
    use super::*;
    use cao_index::{Visibility, matches_all_terms};

    const WORDS: [&str; 6] = ["kafka", "streams", "deploy", "helm", "vacuum", "lag"];

    fn model_keys(f: &Fx, query: &str, limit: usize) -> Vec<String> {
        let now = cao_core::Clock::now(f.clock.as_ref());
        let rows = f
            .svc
            .storage()
            .read()
            .expect("read")
            .list(&cao_index::ListFilter {
                visibility: Visibility::all(),
                ..Default::default()
            })
            .expect("rows");
        let refs: Vec<&cao_index::MemoryRow> = rows.iter().collect();
        let raws = f
            .svc
            .storage()
            .read()
            .expect("read")
            .bm25_scores(query, &refs, &cao_rank::Bm25::DEFAULT)
            .expect("scores");
        let max = raws.iter().flatten().copied().fold(0.0f64, f64::max);
        struct C<'a> {
            row: &'a cao_index::MemoryRow,
            all: bool,
            raw: f64,
            lexical: f64,
            rel: f64,
        }
        let mut cands: Vec<C<'_>> = rows
            .iter()
            .zip(&raws)
            .filter_map(|(row, raw)| {
                let all = matches_all_terms(query, row);
                if !all && raw.is_none() {
                    return None;
                }
                let raw = raw.unwrap_or(0.0);
                let lexical = if max > 0.0 { (raw / max).max(0.0) } else { 0.0 };
                let factor = if row.scope == Scope::Project {
                    cao_rank::relevance_age_factor(cao_core::time::days_old(now, row.updated_at))
                } else {
                    1.0
                };
                Some(C {
                    row,
                    all,
                    raw,
                    lexical,
                    rel: lexical * factor,
                })
            })
            .collect();
        let ident = |r: &cao_index::MemoryRow| {
            (
                r.key.to_string(),
                r.scope.as_str(),
                r.scope_id.clone().unwrap_or_default(),
            )
        };
        let all_count = cands.iter().filter(|c| c.all).count();
        let mut partials: Vec<&C<'_>> = cands.iter().filter(|c| !c.all).collect();
        partials.sort_by(|a, b| {
            a.row
                .scope
                .precedence()
                .cmp(&b.row.scope.precedence())
                .then(b.raw.total_cmp(&a.raw))
                .then_with(|| ident(a.row).cmp(&ident(b.row)))
        });
        let keep: HashSet<String> = partials
            .iter()
            .take(limit.saturating_sub(all_count))
            .map(|c| c.row.id.clone())
            .collect();
        cands.retain(|c| c.all || keep.contains(&c.row.id));
        cands.sort_by(|a, b| {
            a.row
                .scope
                .precedence()
                .cmp(&b.row.scope.precedence())
                .then(b.all.cmp(&a.all))
                .then(b.rel.total_cmp(&a.rel))
                .then(b.lexical.total_cmp(&a.lexical))
                .then_with(|| ident(a.row).cmp(&ident(b.row)))
        });
        cands.into_iter().take(limit).map(|c| c.row.key.to_string()).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        #[test]
        fn relevance_matches_the_spec_model(
            docs in prop::collection::vec((0..3usize, prop::sample::subsequence(WORDS.to_vec(), 1..4), 0..400i64), 1..20),
            query in prop::sample::subsequence(vec!["kafka", "streams", "deploy", "lag", "zebra", "helm vac"], 1..3),
            limit in 1usize..7,
        ) {
            let f = fx_with(false);
            for (i, (scope, words, days)) in docs.iter().enumerate() {
                let scope = ["global", "project", "session"][*scope];
                f.store(scope, &format!("doc-{i}"), &words.join(" "), 0);
                // Ages differ per row; the clock only moves forward, so older rows are stored first.
                f.clock.advance(Duration::hours(*days));
            }
            let query = query.join(" ");
            prop_assert_eq!(f.relevance(&query, i64::try_from(limit).expect("small")), model_keys(&f, &query, limit), "query {:?}", query);
        }
    }
}
