//! Generated memories as an OKF bundle: the input of the OKF import rows, of the journal's first-opening row and of
//! the native side of the vault comparison. The bundle is what `cao memory export` writes for the global scope
//! (rendered by `cao_okf::render_bundle`), so importing it runs the ordinary import path.

use anyhow::{Result, ensure};
use cao_core::{Key, MemoryType, Scope, TerminalContext};
use cao_memory::{ConflictPolicy, ImportRequest, MemoryService, NoProgress};
use std::path::Path;

/// Files written per `cao_core::fs::atomic_write_batch` call.
const WRITE_BATCH: usize = 1_000;

/// One generated memory of a bundle.
#[derive(Debug, Clone)]
pub struct Memory {
    /// Its key (must pass `Key::parse_strict`).
    pub key: String,
    /// Its memory type.
    pub memory_type: MemoryType,
    /// Its tags, comma-separated as the store keeps them (may be empty).
    pub tags: String,
    /// Its one entry's text.
    pub content: String,
}

/// Write `n` global memories, memory `i` being `memory(i)`, created and updated at 2024-01-01T00:00Z plus `i`
/// minutes, without history, as an OKF bundle under `dir` (created when missing; the topic files, `index.md` and
/// `manifest.md`, each replaced atomically, 1,000 files per batch).
///
/// Errors: a key that is not a strict key, a render error of `cao-okf` (two memories on one path), or an I/O error.
pub fn write_global(dir: &Path, n: usize, memory: impl Fn(usize) -> Memory) -> Result<()> {
    let t0 = chrono::DateTime::parse_from_rfc3339("2024-01-01T00:00:00Z")?.to_utc();
    let topics: Vec<cao_okf::ExportTopic> = (0..n)
        .map(|i| {
            let m = memory(i);
            let at = t0 + chrono::Duration::minutes(i64::try_from(i)?);
            Ok(cao_okf::ExportTopic {
                key: Key::parse_strict(&m.key)?,
                scope_id: None,
                memory_type: m.memory_type,
                tags: m.tags,
                created_at: at,
                updated_at: at,
                content: m.content,
                history: Vec::new(),
            })
        })
        .collect::<Result<_>>()?;
    let opts = cao_okf::ExportOptions {
        scope: Scope::Global,
        scope_id: None,
        include_history: false,
        redact: false,
    };
    let bundle = cao_okf::render_bundle(&opts, &topics)?;
    let files: Vec<(std::path::PathBuf, &String)> = bundle.files.iter().map(|(p, t)| (dir.join(p), t)).collect();
    let mut parents: Vec<&Path> = files.iter().filter_map(|(p, _)| p.parent()).collect();
    parents.sort_unstable();
    parents.dedup();
    cao_core::fs::create_dir_all(dir)?;
    for parent in parents {
        cao_core::fs::create_dir_all(parent)?;
    }
    for chunk in files.chunks(WRITE_BATCH) {
        let items: Vec<(&Path, &[u8])> = chunk.iter().map(|(p, t)| (p.as_path(), t.as_bytes())).collect();
        cao_core::fs::atomic_write_batch(&items, cao_core::fs::FileMode::UmaskDefault)?;
    }
    Ok(())
}

/// Import the bundle at `source` (a directory or a `.tar.gz`) into the global scope of `svc` as `ctx`, existing
/// keys skipped, and check that it brought in exactly `n` memories, rejected none and was not stopped.
///
/// Errors: the import's error, or a report that differs (named in the message).
pub fn import_global(svc: &MemoryService, ctx: &TerminalContext, source: &Path, n: usize) -> Result<()> {
    let out = svc.import(
        ctx,
        &ImportRequest {
            source: source.to_path_buf(),
            scope: Scope::Global,
            conflict: ConflictPolicy::Skip,
            dry_run: false,
        },
        &NoProgress,
    )?;
    ensure!(
        out.report.imported == n && out.report.rejected == 0 && out.stopped.is_none(),
        "import of {n} topics: {:?} (stopped: {:?})",
        out.report,
        out.stopped
    );
    Ok(())
}
