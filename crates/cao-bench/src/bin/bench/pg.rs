//! `bench --database-url URL`: the store and recall rows against the PostgreSQL backend
//! (docs/decisions/0017-postgres-write-path.md), and HTTP recall throughput through one and two `cao-server` replicas
//! on that one database.
//!
//! The database: the benchmark first tries to create a database of its own on the server of `URL`
//! (`cao_bench_<pid>`, dropped with every connection to it at the end), so an administrative URL such as the test
//! cluster's `postgresql://postgres@/postgres?host=/tmp/...` just works. When it may not create databases it uses the
//! database of `URL` itself, which must hold no memories (it is left filled); so it does when its plain (non-TLS)
//! administrative connection is refused, e.g. by a server that requires TLS.
//!
//! At each size the memories are the embedded rows' (LoCoMo turns, keys `m<i>`, three in five project memories of
//! `bench-project`, one global, one session memory of `bench`). The fill goes through the import path
//! (`cao_ops::write::commit_batch`: 1,000 memories per write transaction, then the related-memory pass of the batch),
//! so the rows, documents, statistics, journal entries and relationship edges are those of ordinary stores; the last
//! 200 memories of each size are timed one `MemoryService::store` each (the "store" row). Then the recall rows (every
//! search mode / order pair of the embedded rows, the same questions, access recorded), the context block, and the
//! HTTP load of the embedded rows (`super::http_load_on`) through one replica, then through two (the connections
//! alternate between them). The replicas are the `cao-server` next to this binary (release under `cargo xtask
//! bench`), each with a home of its own (settings only) and `--database-url`.

use anyhow::{Context, Result};
use cao_bench::Stats;
use cao_core::{CaoHome, DatabaseUrl, Scope, Settings, SystemClock, TerminalContext};
use cao_memory::{MemoryService, StoreArgs};
use std::sync::Arc;
use std::time::Instant;

/// Memories per write transaction of the fill.
const FILL_BATCH: usize = 1_000;

/// The database the rows run on: created for the run (and dropped after it) when the server allows.
struct BenchDatabase {
    url: DatabaseUrl,
    /// `(administrative URL, database name)` of a database this run created.
    created: Option<(String, String)>,
}

/// Statements the server has run in the benchmark's database so far, from `pg_stat_statements` read over the
/// administrative connection (another database, so the reading itself is not counted); `None` when the run did not
/// create its database or the extension is not installed in the administrative database (the row is then left
/// out). Each statement of the backend is one round trip, except that a transaction's `BEGIN` and the write lock
/// go in one (counted as two statements here).
fn statements_so_far(db: &BenchDatabase) -> Option<i64> {
    let (admin, name) = db.created.as_ref()?;
    let mut c = postgres::Client::connect(admin, postgres::NoTls).ok()?;
    c.query_one(
        "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)",
        &[name],
    )
    .ok()
    .map(|r| r.get(0))
}

impl BenchDatabase {
    /// A database of its own on the server of `url`, or `url`'s database when it may not create one (it must hold
    /// no memories then).
    fn open(url: &str) -> Result<BenchDatabase> {
        let given = DatabaseUrl::parse(url).map_err(|e| anyhow::anyhow!("--database-url: {e}"))?;
        let shown = given.redacted();
        let mut admin = match postgres::Client::connect(url, postgres::NoTls) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("[postgres] no plain connection to {shown} ({e}); running on its database as it is");
                return Ok(BenchDatabase {
                    url: given,
                    created: None,
                });
            }
        };
        let name = format!("cao_bench_{}", std::process::id());
        match admin.batch_execute(&format!("CREATE DATABASE {name}")) {
            Ok(()) => {
                let url_of_new = cao_testkit::postgres::with_dbname(url, &name);
                eprintln!("[postgres] created the database {name} on {shown} for this run");
                Ok(BenchDatabase {
                    url: DatabaseUrl::parse(&url_of_new).map_err(|e| anyhow::anyhow!("{e}"))?,
                    created: Some((url.to_owned(), name)),
                })
            }
            Err(e) => {
                let holds: Option<i64> = admin
                    .query_opt("SELECT count(*) FROM memory_metadata", &[])
                    .ok()
                    .flatten()
                    .map(|r| r.get(0));
                anyhow::ensure!(
                    holds.unwrap_or(0) == 0,
                    "the database of {shown} holds {} memories and this user may not create a database for the \
                     run ({e}); give the benchmark an empty database",
                    holds.unwrap_or(0)
                );
                eprintln!("[postgres] cannot create a database ({e}); using {shown} itself (it stays filled)");
                Ok(BenchDatabase {
                    url: given,
                    created: None,
                })
            }
        }
    }
}

impl Drop for BenchDatabase {
    fn drop(&mut self) {
        if let Some((admin, name)) = &self.created {
            let dropped = postgres::Client::connect(admin, postgres::NoTls)
                .and_then(|mut c| c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")));
            if let Err(e) = dropped {
                eprintln!("[postgres] could not drop the database {name}: {e}");
            }
        }
    }
}

/// The memory `i` of the benchmark corpus: the embedded rows' scope cycle, key, tags and content.
fn memory(i: usize, turns: &[String]) -> (Scope, StoreArgs) {
    const SCOPES: [Scope; 5] = [
        Scope::Project,
        Scope::Project,
        Scope::Project,
        Scope::Global,
        Scope::Session,
    ];
    let scope = SCOPES[i % SCOPES.len()];
    (
        scope,
        StoreArgs {
            content: format!("{} (note {i})", turns[i % turns.len()]),
            scope: Some(scope),
            key: Some(format!("m{i}")),
            tags: Some(format!("t{}", i % 50)),
            ..Default::default()
        },
    )
}

/// Store memories `from..to` through the import path, [`FILL_BATCH`] per write transaction per scope.
fn fill(svc: &MemoryService, ctx: &TerminalContext, turns: &[String], from: usize, to: usize) -> Result<()> {
    let settings = Settings::default();
    let mut start = from;
    while start < to {
        let end = (start + FILL_BATCH).min(to);
        let mut by_scope: Vec<(Scope, Vec<cao_ops::write::Prepared>)> = Vec::new();
        for i in start..end {
            let (scope, args) = memory(i, turns);
            let prepared = cao_ops::write::prepare(&args, None)?;
            match by_scope.iter_mut().find(|(s, _)| *s == scope) {
                Some((_, v)) => v.push(prepared),
                None => by_scope.push((scope, vec![prepared])),
            }
        }
        for (scope, prepared) in &by_scope {
            let scope_id = cao_store::visibility::target_scope_id(svc.storage(), ctx, *scope, &settings)?;
            let items: Vec<(&cao_ops::write::Prepared, Option<chrono::DateTime<chrono::Utc>>)> =
                prepared.iter().map(|p| (p, None)).collect();
            for r in cao_ops::write::commit_batch(svc.storage(), ctx, &items, scope_id.as_deref()) {
                r?;
            }
        }
        start = end;
    }
    Ok(())
}

/// The PostgreSQL rows at every size in `sizes` (see the module docs).
pub(crate) fn run(url: &str, sizes: &[usize], queries: usize, turns: &[String], questions: &[String]) -> Result<()> {
    let db = BenchDatabase::open(url)?;
    let tmp = tempfile::tempdir()?;
    let home = CaoHome::new(tmp.path().join("home")).with_database(Some(db.url.clone()));
    let svc = MemoryService::open_with(home, Settings::default(), Arc::new(SystemClock))?;
    let ctx = TerminalContext {
        session_name: Some("bench".into()),
        agent_profile: Some("bench".into()),
        cwd: Some(tmp.path().to_path_buf()),
        project_id: Some("bench-project".into()),
        ..Default::default()
    };
    println!("| memories | operation (PostgreSQL) | p50 ms | p95 ms | p99 ms | n |");
    println!("|---:|---|---:|---:|---:|---:|");
    let mut stored = 0usize;
    for &size in sizes {
        let t = Instant::now();
        let filled_to = size.saturating_sub(200).max(stored);
        fill(&svc, &ctx, turns, stored, filled_to)?;
        eprintln!(
            "[postgres {size}] filled {} memories in {:.1} s ({FILL_BATCH} per transaction)",
            filled_to - stored,
            t.elapsed().as_secs_f64()
        );
        stored = filled_to;
        let statements_before = statements_so_far(&db);
        let first_timed = stored;
        let mut st = Stats::default();
        while stored < size {
            let (_, args) = memory(stored, turns);
            let t = Instant::now();
            svc.store(&ctx, args)?;
            st.push(t.elapsed());
            stored += 1;
        }
        super::row(
            size,
            "PostgreSQL: store (upsert new key; row, document, journal entry)",
            &st,
        );
        if let (Some(before), Some(after)) = (statements_before, statements_so_far(&db))
            && stored > first_timed
        {
            println!(
                "| {size} | PostgreSQL: statements per store (pg_stat_statements, audit line included) | {:.1} | | | {} |",
                (after - before) as f64 / (stored - first_timed) as f64,
                stored - first_timed
            );
        }
        recall_rows(size, &db, &svc, &ctx, queries, questions)?;
        let mut st = Stats::default();
        for _ in 0..20 {
            std::hint::black_box(svc.context_block(&ctx, cao_memory::ContextRequest::default())?);
        }
        for _ in 0..queries {
            let t = Instant::now();
            let block = svc.context_block(&ctx, cao_memory::ContextRequest::default())?;
            st.push(t.elapsed());
            anyhow::ensure!(block.is_some(), "the context block is empty at {size} memories");
        }
        super::row(size, "PostgreSQL: context block (default budget)", &st);
        replicas_load(size, &db.url, questions)?;
    }
    drop(svc);
    Ok(())
}

/// Recall p50/p95/p99 in every search mode / order pair of the embedded rows.
fn recall_rows(
    size: usize,
    db: &BenchDatabase,
    svc: &MemoryService,
    ctx: &TerminalContext,
    queries: usize,
    questions: &[String],
) -> Result<()> {
    for (mode, sort) in cao_bench::RECALL_MODES {
        let before = statements_so_far(db);
        let st = cao_bench::time_recalls(svc, ctx, mode, sort, questions, queries)?;
        super::row(
            size,
            &format!("PostgreSQL: recall {}/{}", mode.as_str(), sort.as_str()),
            &st,
        );
        if let (Some(before), Some(after)) = (before, statements_so_far(db))
            && queries > 0
        {
            println!(
                "| {size} | PostgreSQL: statements per recall {}/{} (pg_stat_statements) | {:.1} | | | {queries} |",
                mode.as_str(),
                sort.as_str(),
                (after - before) as f64 / queries as f64
            );
        }
    }
    Ok(())
}

/// A `cao-server` replica on the database, killed when dropped.
struct Replica {
    child: std::process::Child,
    addr: String,
    _home: tempfile::TempDir,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start the `cao-server` next to this binary on `url` (a home of its own, a free port); `None` when it is not built.
fn replica(url: &DatabaseUrl) -> Result<Option<Replica>> {
    use std::io::BufRead;
    let exe = std::env::current_exe()?;
    let Some(server) = exe.parent().map(|d| d.join("cao-server")).filter(|p| p.exists()) else {
        return Ok(None);
    };
    let home = tempfile::tempdir()?;
    let mut child = std::process::Command::new(&server)
        .args(["--port", "0"])
        .env("CAO_HOME", home.path())
        .env("CAO_DATABASE_URL", url.expose())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let stderr = child.stderr.take().context("server stderr")?;
    let mut lines = std::io::BufReader::new(stderr).lines();
    let addr = loop {
        let Some(line) = lines.next() else {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!("cao-server exited before listening");
        };
        if let Some(rest) = line?.strip_prefix("cao-server listening on http://") {
            break rest.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Ok(Some(Replica {
        child,
        addr,
        _home: home,
    }))
}

/// The embedded rows' HTTP recall load through one replica, then through two (connections alternating).
fn replicas_load(size: usize, url: &DatabaseUrl, questions: &[String]) -> Result<()> {
    let Some(first) = replica(url)? else {
        eprintln!("(cao-server binary not built; skipping the PostgreSQL HTTP rows)");
        return Ok(());
    };
    super::http_load_on(
        size,
        "PostgreSQL, 1 replica",
        std::slice::from_ref(&first.addr),
        questions,
    )?;
    let Some(second) = replica(url)? else {
        return Ok(());
    };
    super::http_load_on(
        size,
        "PostgreSQL, 2 replicas",
        &[first.addr.clone(), second.addr.clone()],
        questions,
    )?;
    Ok(())
}
