//! The Obsidian vault rows of `cargo xtask bench` (`--only vault`; issue 29's goals): at each size N,
//!
//! - a generated vault of N notes (100 per folder, YAML frontmatter with tags, an H1 title, a LoCoMo turn as the
//!   body and one wikilink to another note) mapped to the global scope, reconciled once with `--apply` into a fresh
//!   home (goal: at most 10 s at 10,000 notes);
//! - the rescan of the unchanged vault: the pickup check a read runs (`cao_memory::vault::pickup_checked`: a walk
//!   of the mapped folders, no note read; goal: at most 200 ms at 10,000 notes), measured twice: as the first check
//!   of a process (a new service each sample, so the stored note rows are loaded and compared) and as a later check
//!   of the same service (the listing's digest and the stored projection token are unchanged, so no row is loaded);
//!   and a full `reconcile --apply` of the unchanged vault (every note read and hashed) for comparison;
//! - recall in the vault-bound global scope against recall of the same N texts as native global memories in another
//!   home (imported as one OKF bundle), the same questions, default search mode and order, limit 10. The vault row
//!   of the goal (the vault's p50 within 2x of the native p50) measures what a long-running process does (cao-server,
//!   cao-mcp-server): one service with the default walk interval
//!   (`cao_memory::vault::DEFAULT_WALK_INTERVAL`), repeated recalls, so at most one recall per interval walks the
//!   vault and the others read the projection as it is. A second vault row measures the one-shot path (no interval:
//!   every recall walks the vault, the rows not loaded as the listing is unchanged).
//!
//! Numbers are measurements on this machine, not assertions; [`measure`] checks only that both homes hold the N
//! memories and answer the questions alike.

use anyhow::{Context, Result, ensure};
use cao_core::{CaoHome, Scope, Settings, SystemClock, TerminalContext};
use cao_memory::{MemoryService, RecallArgs};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::Stats;

/// Notes per generated folder.
const PER_FOLDER: usize = 100;

/// What one size measured.
#[derive(Debug, Clone, Default)]
pub struct VaultBench {
    /// Notes in the generated vault.
    pub notes: usize,
    /// Notes the first reconcile indexed (all of them when the generator is right).
    pub indexed: usize,
    /// The first `reconcile --apply` (every note new).
    pub reconcile_new: Duration,
    /// The pickup check of the unchanged vault by a new service (a walk, the stored rows loaded), one sample per run.
    pub rescan_first: Stats,
    /// The pickup check of the unchanged vault by the same service again (a walk, no row loaded), one per run.
    pub rescan: Stats,
    /// `reconcile --apply` of the unchanged vault (every note read again), one sample per run.
    pub reconcile_unchanged: Stats,
    /// Recall in the vault-bound scope by a long-running service (the default walk interval), one per question.
    pub recall_vault: Stats,
    /// Recall in the vault-bound scope walking the vault on every recall (one-shot path), one per question.
    pub recall_vault_walk: Stats,
    /// Recall of the same texts as native memories, one sample per question.
    pub recall_native: Stats,
    /// Memories the vault recall returned, over every question.
    pub hits_vault: usize,
    /// Memories the native recall returned, over every question.
    pub hits_native: usize,
}

/// The text of note `i` of `texts` (a LoCoMo turn, numbered so that every note differs).
fn body(texts: &[String], i: usize) -> String {
    format!("{} (note {i})", texts[i % texts.len()])
}

/// Write the vault of `n` notes under `root` (module docs) and the managed folder.
#[allow(
    clippy::disallowed_methods,
    reason = "the vault is written as a person's editor writes it (plain files), not through this tool's file module"
)]
fn generate(root: &Path, n: usize, texts: &[String]) -> Result<()> {
    std::fs::create_dir_all(root.join("Notes/_cao"))?;
    for i in 0..n {
        let dir = root.join(format!("Notes/d{:04}", i / PER_FOLDER));
        if i % PER_FOLDER == 0 {
            std::fs::create_dir_all(&dir)?;
        }
        let link = (i * 7 + 1) % n;
        let text = format!(
            "---\ntags: [t{}, bench]\n---\n# Note {i}\n\n{}\nSee [[note-{link}]].\n",
            i % 50,
            body(texts, i)
        );
        std::fs::write(dir.join(format!("note-{i}.md")), text)?;
    }
    Ok(())
}

/// A home whose `settings.json` maps `root`'s `Notes` folder to the global scope (`Notes/_cao` is the managed
/// folder), opened as a service.
#[allow(
    clippy::disallowed_methods,
    reason = "the home's settings are benchmark input, written as a plain file"
)]
fn vault_home(home: &Path, root: &Path, n: usize) -> Result<MemoryService> {
    std::fs::create_dir_all(home)?;
    let settings = serde_json::json!({"memory": {"vault": {"enabled": true, "vaults": [{
        "id": "bench", "root": root, "managed_folder": "Notes/_cao",
        "max_notes": (n + 1).min(100_000),
        "mappings": [{"folder": "Notes", "scope": "global", "writable": true}]
    }]}}});
    std::fs::write(home.join("settings.json"), settings.to_string())?;
    Ok(MemoryService::open(CaoHome::new(home))?)
}

/// A home holding the same `n` texts as native global memories (one OKF bundle import).
fn native_home(dir: &Path, n: usize, texts: &[String]) -> Result<MemoryService> {
    let source = dir.join("bundle");
    crate::bundle::write_global(&source, n, |i| crate::bundle::Memory {
        key: format!("note-{i}"),
        memory_type: cao_core::MemoryType::Reference,
        tags: format!("t{},bench", i % 50),
        content: body(texts, i),
    })?;
    let svc = MemoryService::open_with(
        CaoHome::new(dir.join("native-home")),
        Settings::default(),
        Arc::new(SystemClock),
    )?;
    crate::bundle::import_global(&svc, &TerminalContext::default(), &source, n)?;
    Ok(svc)
}

/// Recall every question in the global scope; the latencies and the number of memories returned.
fn recall_all(svc: &MemoryService, questions: &[String]) -> Result<(Stats, usize)> {
    let ctx = TerminalContext::default();
    let mut st = Stats::default();
    let mut hits = 0;
    for q in questions {
        let t = Instant::now();
        let got = svc.recall(
            &ctx,
            RecallArgs {
                query: Some(q.clone()),
                scope: Some(Scope::Global),
                limit: Some(10),
                ..Default::default()
            },
        )?;
        st.push(t.elapsed());
        hits += got.memories.len();
    }
    Ok((st, hits))
}

/// Measure one size: `n` notes with bodies from `texts`, `questions` recalled in both homes, `runs` rescans
/// (module docs). Works in `dir` (a scratch directory the caller removes).
///
/// Errors: file writes, the service's errors, and a vault or import that does not hold the `n` memories.
pub fn measure(dir: &Path, n: usize, texts: &[String], questions: &[String], runs: usize) -> Result<VaultBench> {
    ensure!(!texts.is_empty(), "no texts to write notes from");
    let root = dir.join("vault");
    generate(&root, n, texts)?;
    let svc = vault_home(&dir.join("vault-home"), &root, n)?;
    let t = Instant::now();
    let first = cao_memory::vault::reconcile(svc.storage(), true, false).context("first reconcile")?;
    let reconcile_new = t.elapsed();
    let mut out = VaultBench {
        notes: n,
        indexed: first.report.indexed,
        reconcile_new,
        ..VaultBench::default()
    };
    use cao_memory::vault::{Pickup, pickup_checked};
    for _ in 0..runs {
        let fresh = MemoryService::open(CaoHome::new(dir.join("vault-home")))?;
        let t = Instant::now();
        let did = pickup_checked(fresh.storage())?;
        out.rescan_first.push(t.elapsed());
        ensure!(
            did == Pickup::Checked,
            "the first pickup of an unchanged vault did {did:?}"
        );
    }
    ensure!(
        pickup_checked(svc.storage())? == Pickup::Checked,
        "the service's first pickup"
    );
    for _ in 0..runs {
        let t = Instant::now();
        let did = pickup_checked(svc.storage())?;
        out.rescan.push(t.elapsed());
        ensure!(
            did == Pickup::Remembered,
            "a later pickup of an unchanged vault did {did:?}"
        );
    }
    for _ in 0..runs.min(3) {
        let t = Instant::now();
        cao_memory::vault::reconcile(svc.storage(), true, false)?;
        out.reconcile_unchanged.push(t.elapsed());
    }
    let (st, hits_walk) = recall_all(&svc, questions)?;
    out.recall_vault_walk = st;
    svc.set_vault_walk_interval(Some(cao_memory::vault::DEFAULT_WALK_INTERVAL));
    let (st, hits) = recall_all(&svc, questions)?;
    ensure!(
        hits == hits_walk,
        "the throttled recalls answered otherwise ({hits} vs {hits_walk})"
    );
    out.recall_vault = st;
    out.hits_vault = hits;
    drop(svc);
    let native = native_home(dir, n, texts)?;
    let (st, hits) = recall_all(&native, questions)?;
    out.recall_native = st;
    out.hits_native = hits;
    Ok(out)
}

/// Print the rows of one measurement in the bench table's format (`| memories | operation | p50 ms | p95 ms |
/// p99 ms | n |`).
#[allow(clippy::print_stdout, reason = "the bench binary's table")]
pub fn print(b: &VaultBench) {
    let n = b.notes;
    let row = |op: &str, st: &Stats| st.print_row(n, op);
    let mut once = Stats::default();
    once.push(b.reconcile_new);
    row(
        &format!(
            "vault reconcile --apply, every note new ({} indexed; goal <= 10 s at 10k)",
            b.indexed
        ),
        &once,
    );
    row(
        "vault rescan unchanged, first check of a process: walk + stored rows compared (goal <= 200 ms at 10k)",
        &b.rescan_first,
    );
    row(
        "vault rescan unchanged, later check: walk, listing digest + projection token equal, no row loaded",
        &b.rescan,
    );
    row(
        "vault reconcile --apply unchanged (every note read again)",
        &b.reconcile_unchanged,
    );
    row(
        &format!(
            "recall vault-bound global scope, one-shot path: every recall walks ({} hits)",
            b.hits_vault
        ),
        &b.recall_vault_walk,
    );
    row(
        &format!(
            "recall vault-bound global scope, long-running service: walk at most once per {} ms ({} hits)",
            cao_memory::vault::DEFAULT_WALK_INTERVAL.as_millis(),
            b.hits_vault
        ),
        &b.recall_vault,
    );
    row(
        &format!("recall same texts as native global memories ({} hits)", b.hits_native),
        &b.recall_native,
    );
    let native = b.recall_native.pct_ms(50.0);
    if native > 0.0 {
        println!(
            "| {n} | recall vault p50 / native p50 (goal <= 2) | {:.2} | | | |",
            b.recall_vault.pct_ms(50.0) / native
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bench at a small size: every generated note is indexed, an unchanged vault is not reconciled by the
    /// pickup, and the vault-bound scope answers the questions with as many memories as the native home holding the
    /// same texts.
    #[test]
    fn the_vault_rows_run_at_a_small_size() {
        let dir = tempfile::tempdir().expect("tempdir");
        let texts: Vec<String> = [
            "Alice: we deploy with blue-green releases",
            "Bob: the canary pool takes ten percent",
            "Carol: rollbacks use the previous green pool",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let questions = vec!["how do we deploy".to_owned(), "green pool rollbacks".to_owned()];
        let b = measure(dir.path(), 30, &texts, &questions, 2).expect("bench");
        assert_eq!((b.notes, b.indexed), (30, 30), "{b:?}");
        assert_eq!((b.rescan_first.len(), b.rescan.len(), b.recall_vault.len()), (2, 2, 2));
        assert_eq!(b.recall_vault_walk.len(), 2);
        assert!(b.hits_vault > 0, "{b:?}");
        assert_eq!(b.hits_vault, b.hits_native, "{b:?}");
    }
}
