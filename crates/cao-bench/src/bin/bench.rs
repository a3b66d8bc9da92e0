//! `cargo xtask bench`: store and recall latency at growing corpus sizes, in-process, plus cold CLI start.
//!
//! Usage: `bench [--sizes 1000,10000,100000] [--queries 200] [--home DIR]`. Prints one table row per
//! (size, operation) with p50/p99 in milliseconds. Numbers are measurements on this machine, not assertions.
#![allow(clippy::print_stdout)]

use anyhow::{Context, Result};
use cao_bench::{Stats, locomo};
use cao_core::{CaoHome, Settings, SystemClock, TerminalContext};
use cao_memory::{MemoryService, RecallRequest, StoreRequest};
use std::sync::Arc;
use std::time::Instant;

struct Args {
    sizes: Vec<usize>,
    queries: usize,
    home: Option<std::path::PathBuf>,
}

fn args() -> Result<Args> {
    let mut a = Args {
        sizes: vec![1_000, 10_000, 100_000],
        queries: 200,
        home: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--sizes" => a.sizes = v.split(',').map(|s| s.trim().parse()).collect::<Result<_, _>>()?,
            "--queries" => a.queries = v.parse()?,
            "--home" => a.home = Some(v.into()),
            other => anyhow::bail!("unknown flag {other}"),
        }
    }
    Ok(a)
}

fn main() -> Result<()> {
    let args = args()?;
    let samples = locomo::load()?;
    let turns: Vec<String> = samples
        .iter()
        .flat_map(|s| s.turns.iter().map(|t| format!("{}: {}", t.speaker, t.text)))
        .collect();
    let questions: Vec<String> = samples
        .iter()
        .flat_map(|s| s.questions.iter().map(|q| q.question.clone()))
        .collect();
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
    let scopes = ["project", "project", "project", "global", "session"];
    let content = |i: usize| format!("{} (note {i})", turns[i % turns.len()]);
    let mut stored = 0usize;
    let store_one = |i: usize| -> Result<std::time::Duration> {
        let t = Instant::now();
        svc.store(
            &ctx,
            StoreRequest {
                content: content(i),
                scope: Some(scopes[i % scopes.len()].into()),
                key: Some(format!("m{i}")),
                tags: Some(format!("t{}", i % 50)),
                ..Default::default()
            },
        )?;
        Ok(t.elapsed())
    };
    println!("| memories | operation | p50 ms | p99 ms | n |");
    println!("|---:|---|---:|---:|---:|");
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
        row(size, "store (upsert new key)", &st);
        let t = Instant::now();
        svc.flush_index_md()?;
        eprintln!(
            "[{size}] filled in {:.1}s; index.md flush {:.1} ms",
            fill.as_secs_f64(),
            t.elapsed().as_secs_f64() * 1e3
        );
        for (mode, sort) in [
            ("metadata", "recency"),
            ("bm25", "recency"),
            ("hybrid", "recency"),
            ("hybrid", "score"),
            ("bm25", "score"),
            ("hybrid", "usage"),
        ] {
            let mut st = Stats::default();
            for q in questions.iter().cycle().take(args.queries) {
                let t = Instant::now();
                let r = svc.recall(
                    &ctx,
                    RecallRequest {
                        query: Some(q.clone()),
                        search_mode: Some(mode.into()),
                        sort_by: Some(sort.into()),
                        record_access: true,
                        ..Default::default()
                    },
                )?;
                st.push(t.elapsed());
                std::hint::black_box(r);
            }
            row(size, &format!("recall {mode}/{sort}"), &st);
        }
        let mut st = Stats::default();
        for _ in 0..args.queries {
            let t = Instant::now();
            std::hint::black_box(svc.recall(
                &ctx,
                RecallRequest {
                    record_access: true,
                    ..Default::default()
                },
            )?);
            st.push(t.elapsed());
        }
        row(size, "recall no query (recency)", &st);
        for limit in [10usize, 50] {
            let vis = cao_index::Visibility::all();
            let mut bm = Stats::default();
            let mut meta = Stats::default();
            for q in questions.iter().cycle().take(args.queries) {
                let t = Instant::now();
                std::hint::black_box(svc.index().bm25_pool(&vis, None, q, limit)?);
                bm.push(t.elapsed());
                let t = Instant::now();
                std::hint::black_box(svc.index().metadata_pool(&vis, None, q, limit)?);
                meta.push(t.elapsed());
            }
            row(size, &format!("index bm25 pool, limit {limit}"), &bm);
            row(size, &format!("index metadata pool, limit {limit}"), &meta);
        }
        cold_cli(size, &root)?;
    }
    Ok(())
}

fn row(size: usize, op: &str, st: &Stats) {
    println!(
        "| {size} | {op} | {:.3} | {:.3} | {} |",
        st.pct_ms(50.0),
        st.pct_ms(99.0),
        st.len()
    );
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
            .args(["memory", "list", "--limit", "10"])
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
