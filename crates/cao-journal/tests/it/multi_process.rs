//! Several processes summarizing one journal through leases: every line is written once (the model calls are
//! counted across processes), and a holder killed mid-call loses its lines to another process once its leases
//! expire.
//!
//! The worker processes are this test binary itself, started with `--ignored --exact multi_process::worker_process`
//! and the role in the environment.

use crate::common::*;
use cao_core::SystemClock;
use cao_core::settings::ModelProvider;
use cao_index::Index;
use cao_journal::{Worker, import_entries, next_work, summarize_step, view};
use cao_model::{Completion, Limits, Model, ModelError, ModelInfo, Prompt};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ROLE: &str = "CAO_JOURNAL_IT_ROLE";
const DB: &str = "CAO_JOURNAL_IT_DB";
const LOG: &str = "CAO_JOURNAL_IT_LOG";
const LEASE_MS: &str = "CAO_JOURNAL_IT_LEASE_MS";

/// Bytes of every summary: pairs of them (801 bytes) never fit a line, so every line needs a model call.
const SUMMARY_BYTES: usize = 400;

/// A model that appends `<pid> <prompt hash>` to a shared log for each call (one `write` on an append-only file),
/// then answers (after a few milliseconds, so processes interleave) or, as `hang`, never answers.
#[derive(Debug)]
struct LoggingModel {
    info: ModelInfo,
    log: PathBuf,
    hang: bool,
}

fn prompt_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

impl Model for LoggingModel {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn complete(&self, prompt: &Prompt, _limits: &Limits) -> Result<Completion, ModelError> {
        let text = prompt.to_text();
        let record = format!("{} {:016x}\n", std::process::id(), prompt_hash(&text));
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("open the call log");
        f.write_all(record.as_bytes()).expect("log the call");
        drop(f);
        if self.hang {
            loop {
                std::thread::sleep(Duration::from_secs(60));
            }
        }
        std::thread::sleep(Duration::from_millis(3));
        Ok(Completion {
            text: summary_text(&text, SUMMARY_BYTES),
            model: self.info.clone(),
            truncated: false,
            usage: None,
        })
    }
}

#[test]
#[ignore = "entry point of the worker processes that the multi-process tests start; does nothing without their environment"]
fn worker_process() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is set by the parent test"));
    let index = Index::open(Path::new(&var(DB))).expect("open the index");
    let model = LoggingModel {
        info: ModelInfo {
            provider: ModelProvider::Command,
            name: format!("{role}-{}", std::process::id()),
        },
        log: PathBuf::from(var(LOG)),
        hang: role == "hang",
    };
    let lease = Duration::from_millis(var(LEASE_MS).parse().expect("lease ms"));
    let worker = Worker {
        holder: format!("{role}-{}", std::process::id()),
        lease,
        model_timeout: lease / 2,
        max_claims: 2,
    };
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(120) {
        let report = summarize_step(&index, P, &model, &worker, &SystemClock).expect("step");
        if report.idle() {
            if next_work(&index, P, 1).expect("work").is_empty() {
                return;
            }
            // Lines left are leased by others (or paused): wait for them.
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    panic!("the journal was not summarized within 120 s");
}

/// Start one worker process; its output goes to files beside the database.
fn spawn(db: &TestDb, role: &str, n: usize, lease_ms: u64) -> Child {
    #[allow(
        clippy::disallowed_methods,
        reason = "a child's stdout/stderr capture file in the test's temp dir, not a memory file"
    )]
    let out = |ext: &str| {
        std::fs::File::create(db.dir.path().join(format!("{role}-{n}.{ext}"))).expect("create an output file")
    };
    Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "multi_process::worker_process",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, role)
        .env(DB, db.db_path())
        .env(LOG, db.dir.path().join("calls.log"))
        .env(LEASE_MS, lease_ms.to_string())
        .stdout(Stdio::from(out("out")))
        .stderr(Stdio::from(out("err")))
        .spawn()
        .expect("start a worker process")
}

/// Wait for `child` to exit successfully within `limit`; kills it and fails otherwise, showing its stderr.
fn finish(db: &TestDb, mut child: Child, role: &str, n: usize, limit: Duration) {
    let started = Instant::now();
    loop {
        match child.try_wait().expect("wait") {
            Some(status) => {
                let err = std::fs::read_to_string(db.dir.path().join(format!("{role}-{n}.err"))).unwrap_or_default();
                assert!(status.success(), "worker {role}-{n} failed ({status}):\n{err}");
                return;
            }
            None if started.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("worker {role}-{n} did not finish within {limit:?}");
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// The call log: `(pid, prompt hash)` per call.
fn calls(db: &TestDb) -> Vec<(u32, String)> {
    std::fs::read_to_string(db.dir.path().join("calls.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let (pid, hash) = l.split_once(' ').expect("pid and hash");
            (pid.parse().expect("pid"), hash.to_owned())
        })
        .collect()
}

fn import_big(db: &TestDb, count: usize) {
    let entries: Vec<_> = (0..count)
        .map(|i| {
            note(
                &format!("k{i}"),
                &sized(&format!("entry {i} of the shared journal "), 700),
            )
        })
        .collect();
    import_entries(&db.index, P, &entries).expect("import");
}

#[test]
fn three_processes_write_every_line_once() {
    let db = TestDb::new();
    import_big(&db, 120);
    let children: Vec<_> = (0..3).map(|n| spawn(&db, "count", n, 30_000)).collect();
    for (n, child) in children.into_iter().enumerate() {
        finish(&db, child, "count", n, Duration::from_secs(150));
    }
    let v = view(&db.index, P).expect("view");
    assert_eq!(v.left_out, 0);
    assert!(v.text.len() <= cao_journal::VIEW_MAX_BYTES);
    assert!(v.lines.iter().any(|l| l.address.n() > 1), "pairs merged");
    assert!(next_work(&db.index, P, 10).expect("work").is_empty());

    let lines = db.index.journal_read(|j| j.lines(P)).expect("lines");
    let calls = calls(&db);
    assert_eq!(
        calls.len(),
        lines.len(),
        "one model call per line written, across all processes"
    );
    let mut per_prompt: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, h) in &calls {
        *per_prompt.entry(h).or_default() += 1;
    }
    assert!(per_prompt.values().all(|&c| c == 1), "no line was summarized twice");
    let mut writers: BTreeMap<&str, usize> = BTreeMap::new();
    for l in &lines {
        assert!(l.writer.starts_with("command:count-"), "{}", l.writer);
        *writers.entry(&l.writer).or_default() += 1;
    }
    assert!(writers.len() >= 2, "the processes shared the work: {writers:?}");
}

#[test]
fn a_killed_holder_loses_its_lines_to_another_process() {
    let db = TestDb::new();
    import_big(&db, 12);
    let lease_ms = 1_500;
    let hung = spawn(&db, "hang", 0, lease_ms);
    // Wait until the hanging process holds its two leases and is inside both model calls.
    let started = Instant::now();
    let held = loop {
        let leases: Vec<(cao_journal::Address, i64)> = (0..12)
            .filter_map(|i| {
                let a = addr(i, 1);
                db.index
                    .journal_read(|j| j.lease(P, a.id(), a.n()))
                    .expect("lease")
                    .filter(|l| l.holder.starts_with("hang-"))
                    .map(|l| (a, l.expires_at_ms))
            })
            .collect();
        if leases.len() == 2 && calls(&db).len() == 2 {
            break leases;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the hanging worker never claimed its lines"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut hung = hung;
    hung.kill().expect("SIGKILL");
    let _ = hung.wait();
    assert_eq!(
        held.iter().map(|(a, _)| *a).collect::<Vec<_>>(),
        vec![addr(0, 1), addr(1, 1)]
    );

    let finisher = spawn(&db, "count", 1, 30_000);
    finish(&db, finisher, "count", 1, Duration::from_secs(150));
    for (a, expires_at_ms) in &held {
        let line = cao_journal::line(&db.index, P, *a)
            .expect("line")
            .expect("written by the other process");
        assert!(line.writer.starts_with("command:count-"), "{}", line.writer);
        assert!(
            line.written_at.timestamp_millis() >= *expires_at_ms,
            "{a} was taken over only after the lease expired ({} < {expires_at_ms})",
            line.written_at.timestamp_millis()
        );
    }
    let lines = db.index.journal_read(|j| j.lines(P)).expect("lines");
    let calls = calls(&db);
    assert_eq!(
        calls.len(),
        lines.len() + 2,
        "the two calls that never returned, then one per line"
    );
    assert!(next_work(&db.index, P, 10).expect("work").is_empty());
    assert_eq!(view(&db.index, P).expect("view").left_out, 0);
}
