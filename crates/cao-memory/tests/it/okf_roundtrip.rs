//! Round trip on real input: every LoCoMo turn of `../shared/data/locomo` stored through `memory_store` (global and
//! project scope, each at its conversation session's date), exported, imported into a fresh home, exported again.
//! The two bundles (directory files and `.tar.gz` bytes) must be identical, and recall must answer the same keys in
//! both homes for 100 LoCoMo questions.

use cao_core::{Scope, TerminalContext};
use cao_memory::{
    ConflictPolicy, ExportDestination, ExportRequest, ImportRequest, MemoryService, NoProgress, RecallArgs, StoreArgs,
};
use cao_testkit::locomo;
use cao_testkit::service::{ServiceFixture, utc};
use chrono::{DateTime, NaiveDateTime, Utc};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A LoCoMo session date (`1:56 pm on 8 May, 2023`) as UTC.
fn session_time(date: &str) -> Option<DateTime<Utc>> {
    NaiveDateTime::parse_from_str(&date.to_ascii_uppercase(), "%I:%M %p ON %d %B, %Y")
        .ok()
        .map(|t| t.and_utc())
}

fn files_under(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("list") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).expect("under").to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).expect("read"));
            }
        }
    }
    out
}

/// Export global and project of `svc` into `<root>/{global,project}` directories and `.tar.gz` files.
fn export_both(svc: &MemoryService, ctx: &TerminalContext, root: &Path) -> Vec<(PathBuf, bool)> {
    let mut out = Vec::new();
    for scope in [Scope::Global, Scope::Project] {
        let req = ExportRequest::new(scope);
        let dir = root.join(scope.as_str());
        let archive = root.join(format!("{scope}.tar.gz"));
        for dest in [
            ExportDestination::Directory {
                path: dir.clone(),
                prune: false,
            },
            ExportDestination::Archive { path: archive.clone() },
        ] {
            let outcome = svc.export(ctx, &req, &dest, &NoProgress).expect("export");
            assert_eq!(outcome.report.skipped_secret, 0, "{scope}: LoCoMo holds no secrets");
        }
        out.push((dir, false));
        out.push((archive, true));
    }
    out
}

fn recall_keys(svc: &MemoryService, ctx: &TerminalContext, query: &str, sort: &str) -> Vec<String> {
    svc.recall(
        ctx,
        cao_memory::Call::new(
            RecallArgs {
                query: Some(query.to_owned()),
                sort_by: Some(sort.parse().expect("a valid sort_by")),
                limit: Some(10),
                ..Default::default()
            },
            cao_memory::CallOptions {
                record_access: false,
                ..Default::default()
            },
        ),
    )
    .expect("recall")
    .memories
    .into_iter()
    .map(|m| format!("{}:{}", m.scope, m.key))
    .collect()
}

#[test]
fn locomo_export_import_export_is_byte_identical_and_recalls_the_same() {
    if cao_testkit::service::skip_on_postgres(
        "stores all 3,000+ LoCoMo turns twice, ~8 minutes against PostgreSQL on two cores (it passes there); the \
         backends' LoCoMo answers are compared by locomo_parity and the OKF cases by okf::okf_import_cases_through_the_store",
    ) {
        return;
    }
    let samples = locomo::load().expect("LoCoMo data in ../shared/data/locomo");
    let a = ServiceFixture::builder()
        .at(utc(2023, 1, 1, 0, 0, 0))
        .project("locomo")
        .open();
    // Every turn, alternately global and project, at its session's date. They are stored one after another in the
    // order an import writes a bundle (global first, then project, each in bundle path order), because the index
    // breaks exact BM25 ties at a pool's cut by insertion order, which is not part of a memory.
    let mut turns: Vec<(Scope, String, String, DateTime<Utc>)> = Vec::new();
    for sample in &samples {
        for turn in &sample.turns {
            let at = session_time(&turn.date).unwrap_or_else(|| utc(2023, 1, 1, 0, 0, 0));
            let key = format!("{}-{}", sample.sample_id, locomo::turn_key(&turn.dia_id));
            let scope = if turns.len().is_multiple_of(2) {
                Scope::Global
            } else {
                Scope::Project
            };
            turns.push((scope, key, format!("{}: {}", turn.speaker, turn.text), at));
        }
    }
    assert!(turns.len() > 3000, "every LoCoMo turn: {}", turns.len());
    turns.sort_by_cached_key(|t| (t.0 != Scope::Global, format!("{}.md", t.1)));
    for (scope, key, content, at) in &turns {
        a.clock.set(*at);
        a.svc
            .store(
                &a.ctx,
                StoreArgs {
                    content: content.clone(),
                    scope: Some(*scope),
                    key: Some(key.clone()),
                    tags: Some("locomo".into()),
                    ..Default::default()
                },
            )
            .unwrap_or_else(|e| panic!("store {key}: {e}"));
    }
    let latest = turns.iter().map(|t| t.3).max().expect("turns");
    a.clock.set(latest);
    let first = export_both(&a.svc, &a.ctx, &a.root().join("first"));

    // The same "now" in both homes: relevance weighs project memories by age.
    let b = ServiceFixture::builder()
        .at(cao_core::Clock::now(a.clock.as_ref()))
        .project("locomo")
        .open();
    for (scope, src) in [(Scope::Global, &first[0].0), (Scope::Project, &first[2].0)] {
        let outcome = b
            .svc
            .import(
                &b.ctx,
                &ImportRequest {
                    source: src.clone(),
                    scope,
                    conflict: ConflictPolicy::Skip,
                    dry_run: false,
                },
                &NoProgress,
            )
            .expect("import");
        assert_eq!(outcome.report.rejected, 0, "{scope}: {:?}", outcome.report.errors);
        assert_eq!(
            outcome.report.timestamps_clamped, 0,
            "{scope}: LoCoMo dates are in the past"
        );
        assert!(outcome.report.imported > 1500, "{scope}: {}", outcome.report.imported);
    }
    let second = export_both(&b.svc, &b.ctx, &b.root().join("second"));
    for ((one, archive), (two, _)) in first.iter().zip(&second) {
        if *archive {
            assert!(
                std::fs::read(one).expect("read") == std::fs::read(two).expect("read"),
                "{} and {} differ",
                one.display(),
                two.display()
            );
        } else {
            let (x, y) = (files_under(one), files_under(two));
            assert_eq!(x.len(), y.len(), "{}: file count", one.display());
            for (path, bytes) in &x {
                assert!(y.get(path) == Some(bytes), "{path} differs after the round trip");
            }
        }
    }

    let questions: Vec<&str> = samples
        .iter()
        .flat_map(|s| s.questions.iter().map(|q| q.question.as_str()))
        .step_by(7)
        .take(100)
        .collect();
    assert_eq!(questions.len(), 100);
    for q in questions {
        for sort in ["recency", "relevance"] {
            let (ka, kb) = (
                recall_keys(&a.svc, &a.ctx, q, sort),
                recall_keys(&b.svc, &b.ctx, q, sort),
            );
            assert!(!ka.is_empty(), "{q:?} ({sort}) finds something");
            assert_eq!(ka, kb, "{q:?} ({sort}) answers the same keys in both homes");
        }
    }
}
