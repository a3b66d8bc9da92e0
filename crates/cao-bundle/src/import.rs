//! OKF import: a bundle directory or `.tar.gz` archive into the global, project or federated scope (spec 000
//! "cao memory import"; spec/reference-facts.md "OKF bundles"; conformance `okf_import.json`). The bundle is
//! untrusted input.
//!
//! 1. The target scope must be global, project or federated ([`cao_okf::import::check_import_scope`]); a project
//!    target resolves the caller's project like every command (recording its alias only on a real run).
//! 2. The bundle is read within hard limits ([`crate::bundle::read_bundle_selecting`]: no link followed, nothing
//!    extracted, a bundle over a limit refused whole), streaming: a first pass lists its paths and the declared
//!    sizes of its topic files without their bytes; the next pass reads the topic files again and hands each on
//!    as soon as it is read (steps 3-5 for a group at a time), in plan order: only the files of a window of
//!    `STREAM_BUFFER_BYTES` (32 MiB) from the next one to hand on are read, a file read ahead of its turn waiting for it,
//!    and a file the stream passed outside the window is read by another pass. The import holds a bounded amount
//!    of text whatever the bundle; one exported by `cao memory export` (in path order) is read twice in all. The
//!    result is the same as planning the whole bundle at once.
//! 3. `cao-okf` plans every path against the target's current topics ([`cao_okf::import::plan_order`] and
//!    [`cao_okf::import::plan_entry`], the pieces of [`cao_okf::plan_import`]: path rules,
//!    frontmatter, escaping, See Also, the federated secret gate, the conflict policy, timestamp clamping). A merge
//!    whose text the existing topic already holds as an entry becomes a skipped conflict
//!    ([`cao_okf::same_entry_text`]), so importing one bundle again with `--conflict merge` appends nothing.
//! 4. Every planned write then passes the store's own rules, the same function `memory_store` runs
//!    ([`write::prepare`]: content size and NUL bytes, tag size and shape, key, write authorisation, federated
//!    secret gate); a refusal becomes that file's rejection. The report is computed from this final plan, so a
//!    dry run reports exactly what a real run does and writes nothing (no file, row, alias or audit line).
//! 5. A real run executes the plan in batches ([`write::commit_batch`]: per-topic locks, one batch file write and one index
//!    transaction per batch, then the related-memory pass of the batch in two more; a replace first forgets the memory, purging its relationships, as the reference
//!    does). Each write is audited. A write the store refuses becomes a rejection; after a storage failure (I/O,
//!    index) the remaining writes are not attempted: they are reported as rejected and
//!    [`ImportOutcome::stopped`] names the failure.
//!
//! The plan is made against the target's state when the import starts; a key another process stores meanwhile is
//! appended to (as a store would) rather than conflicting.

use crate::bundle;
use cao_core::time::truncate_secs;
use cao_core::{Key, MemoryRef, Scope, Settings, TerminalContext};
use cao_okf::FilePlan;
use cao_okf::import::{ConflictPolicy, FileOutcome, ImportOptions, ImportReport, WriteAction, check_import_scope};
use cao_ops::types::{Progress, StoreArgs};
use cao_ops::write;
use cao_store::MemoryError;
use cao_store::Store;
use cao_store::audit::{self, AuditEvent, actor_of};
use cao_store::visibility;
use cao_store::{ListFilter, Visibility};
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

/// Schema name of [`ImportOutcome`] (docs/schemas/cao.memory.import-1.json).
pub const IMPORT_SCHEMA: &str = "cao.memory.import/1";

/// Topics written per batch (one batch file write and one index transaction each).
const WRITE_BATCH: usize = 500;

/// What to import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportRequest {
    /// The bundle: a directory, or a gzip-compressed tar archive.
    pub source: PathBuf,
    /// The target scope: global, project or federated.
    pub scope: Scope,
    /// What to do with a key the target already holds.
    pub conflict: ConflictPolicy,
    /// Plan and report only; write nothing.
    pub dry_run: bool,
}

/// The result of an import (`cao.memory.import/1`): the reference's report and how the run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportOutcome {
    /// Always [`IMPORT_SCHEMA`].
    pub schema: &'static str,
    /// The bundle as given.
    pub source: String,
    /// Whether the bundle was an archive (else a directory).
    pub archive: bool,
    /// The report: `imported`, `skipped_conflict`, `replaced`, `merged`, `rejected`, `see_also_dropped`,
    /// `bodies_escaped`, `timestamps_clamped`, `past_retention`, `errors` (bundle path -> reason), `target_scope`,
    /// `target_scope_id`, `dry_run`.
    #[serde(flatten)]
    pub report: ImportReport,
    /// The storage failure that stopped a real run early (the writes not attempted are in `errors`), else `None`.
    pub stopped: Option<String>,
}

/// Import `req` (module documentation). Memory must be enabled (the facade checks).
///
/// Errors (nothing written): [`MemoryError::Invalid`] for a session or agent target or an unresolvable project;
/// [`MemoryError::Bundle`] for a bundle refused whole; index errors reading the target's topics. A real run stopped
/// by a full or read-only file system is [`MemoryError::Io`] carrying `ENOSPC` / `EROFS` (`storage_full` /
/// `storage_read_only`); the topics written before the failure are whole and stay.
pub fn import(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    req: &ImportRequest,
    progress: &dyn Progress,
) -> Result<ImportOutcome, MemoryError> {
    check_import_scope(req.scope).map_err(|e| MemoryError::Invalid(e.to_string()))?;
    let scope_id = if req.dry_run {
        ctx.scope_id_for(req.scope, settings)?
    } else {
        visibility::target_scope_id(store, ctx, req.scope, settings)?
    };
    // Pass 1: every path of the bundle and the declared size of each topic file, without their bytes.
    let mut sizes: HashMap<usize, u64> = HashMap::new();
    let listing = bundle::read_bundle_selecting(
        &req.source,
        bundle::Limits::DEFAULT,
        &mut |i: usize, _: &[u8], size: u64| {
            sizes.insert(i, size);
            false
        },
    )?;
    let rows = store.snapshot().list(&ListFilter {
        visibility: Visibility::none().allow(req.scope, scope_id.as_deref()),
        scope: Some(req.scope),
        memory_type: None,
        limit: None,
    })?;
    let existing: HashMap<Key, DateTime<Utc>> =
        rows.into_iter().map(|r| (r.key, truncate_secs(r.updated_at))).collect();
    let opts = ImportOptions {
        target_scope: req.scope,
        target_scope_id: scope_id.clone(),
        conflict: req.conflict,
        dry_run: req.dry_run,
        now: store.now(),
    };
    let (order, repeated) = cao_okf::import::plan_order(listing.entries.iter().map(|e| e.path.as_slice()));
    // Paths whose bytes are not needed (not topics) are planned from the listing.
    let mut plans: Vec<Option<FilePlan>> = listing
        .entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            (!sizes.contains_key(&i))
                .then(|| cao_okf::import::plan_entry(&opts, e.as_bundle_entry(), &existing, &repeated))
        })
        .collect();
    // The topic files, in plan order, handed on as the bundle streams by (module docs, step 2).
    let topics: Vec<usize> = order.iter().copied().filter(|i| sizes.contains_key(i)).collect();
    if !req.dry_run {
        progress.start("importing", topics.len() as u64);
    }
    let mut stopped = None;
    let mut stream = Stream {
        store,
        ctx,
        scope: req.scope,
        scope_id: scope_id.as_deref(),
        dry_run: req.dry_run,
        listing: &listing,
        opts: &opts,
        existing: &existing,
        repeated: &repeated,
        rank: topics.iter().enumerate().map(|(pos, &i)| (i, pos)).collect(),
        cost: topics
            .iter()
            .map(|i| {
                sizes
                    .get(i)
                    .copied()
                    .filter(|&n| n <= bundle::MAX_TOPIC_FILE_BYTES)
                    .unwrap_or(0)
            })
            .collect(),
        topics: &topics,
        next: 0,
        end: 0,
        window_bytes: 0,
        fetching: None,
        pending: BTreeMap::new(),
        ready: Vec::new(),
        ready_bytes: 0,
        plans: &mut plans,
        stopped: &mut stopped,
        progress,
        changed: false,
        wrote: false,
    };
    stream.extend();
    while stream.next < topics.len() {
        let before = stream.next;
        let pass = bundle::read_bundle_selecting(&req.source, bundle::Limits::DEFAULT, &mut stream);
        stream.flush();
        let failure = match pass {
            Err(e) => Some(e),
            Ok(_) if stream.changed || stream.next == before => Some(MemoryError::Bundle(format!(
                "{}: the bundle changed while it was being imported; import it again",
                req.source.display()
            ))),
            Ok(_) => None,
        };
        if let Some(e) = failure {
            if req.dry_run || !stream.wrote {
                return Err(e);
            }
            // Earlier topics are written: report the rest as not written, as after a storage failure.
            stream.give_up(&e);
        }
    }
    drop(stream);
    if !req.dry_run {
        progress.finish();
    }
    if let Some(why) = &stopped
        && let Some(fault) = cao_core::fs::fault::classify_message(why)
    {
        // A full or read-only file system: the call fails as `storage_full` / `storage_read_only` (each topic
        // written before is whole; importing the bundle again once space is back completes it).
        return Err(MemoryError::Io {
            context: format!("the import of {} stopped: {why}", req.source.display()),
            source: fault.io_error(),
        });
    }
    let files: Vec<FilePlan> = order.iter().filter_map(|&i| plans[i].take()).collect();
    let mut report = ImportReport::from_plans(&opts, &files);
    report.past_retention = past_retention(req.scope, &files, opts.now);
    Ok(ImportOutcome {
        schema: IMPORT_SCHEMA,
        source: req.source.display().to_string(),
        archive: listing.archive,
        report,
        stopped,
    })
}

/// Declared bytes of the topic files a streaming import reads ahead of their turn at most (32 MiB): the window of
/// files from the next one to hand on, in plan order, whose sizes fit. A file outside the window is left for a
/// later pass over the bundle; the window moves on as files are handed on, so a bundle whose topic files are in
/// path order (every bundle `cao memory export` writes) is read in one pass after the listing, and any other in at
/// most one pass per 32 MiB of topic files.
const STREAM_BUFFER_BYTES: u64 = 32 * 1024 * 1024;

/// Bytes of planned topic text gathered before they are checked and written together (16 MiB; at most
/// [`WRITE_BATCH`] topics are written per batch within them).
const STREAM_FLUSH_BYTES: u64 = 16 * 1024 * 1024;

/// One streaming import over the passes of the bundle ([`bundle::Fetch`]): topic files are planned as they are
/// read and written in plan order, holding at most [`STREAM_BUFFER_BYTES`] of text read ahead of its turn.
struct Stream<'a> {
    store: &'a Store,
    ctx: &'a TerminalContext,
    scope: Scope,
    scope_id: Option<&'a str>,
    dry_run: bool,
    /// The first pass's paths: a later pass must find the same.
    listing: &'a bundle::ReadBundle,
    opts: &'a ImportOptions,
    existing: &'a HashMap<Key, DateTime<Utc>>,
    repeated: &'a BTreeSet<String>,
    /// The topic files' positions in the bundle, in plan order, each position's rank in it, and each rank's cost
    /// (its declared size; 0 for a file over the per-file cap, which is not read).
    topics: &'a [usize],
    rank: HashMap<usize, usize>,
    cost: Vec<u64>,
    /// Rank of the next topic file to hand on (every one before it is planned and handed on).
    next: usize,
    /// The window: ranks `next..end` may be read now; `window_bytes` is their cost.
    end: usize,
    window_bytes: u64,
    /// The position whose bytes are being read (selected, not yet taken).
    fetching: Option<usize>,
    /// Planned files read ahead of their turn, by rank.
    pending: BTreeMap<usize, FilePlan>,
    /// Planned files whose turn came, to check and write together, with their positions.
    ready: Vec<(usize, FilePlan)>,
    ready_bytes: u64,
    plans: &'a mut Vec<Option<FilePlan>>,
    stopped: &'a mut Option<String>,
    progress: &'a dyn Progress,
    /// A pass found other paths than the first.
    changed: bool,
    /// Something was written.
    wrote: bool,
}

impl bundle::Fetch for Stream<'_> {
    fn select(&mut self, position: usize, path: &[u8], size: u64) -> bool {
        if self.listing.entries.get(position).is_none_or(|e| e.path != path) {
            self.changed = true;
            return false;
        }
        let Some(&rank) = self.rank.get(&position) else {
            return false;
        };
        let _ = size; // the window was sized with the first pass's declared sizes
        let wanted = (self.next..self.end).contains(&rank) && !self.pending.contains_key(&rank);
        self.fetching = wanted.then_some(position);
        wanted
    }

    fn take(&mut self, position: usize, entry: bundle::ReadEntry) -> bundle::ReadEntry {
        if self.fetching.take() != Some(position) {
            return entry;
        }
        let Some(&rank) = self.rank.get(&position) else {
            return entry;
        };
        let plan = cao_okf::import::plan_entry(self.opts, entry.as_bundle_entry(), self.existing, self.repeated);
        self.pending.insert(rank, plan);
        while let Some(plan) = self.pending.remove(&self.next) {
            self.ready_bytes += text_bytes(&plan);
            self.ready.push((self.topics[self.next], plan));
            self.window_bytes -= self.cost[self.next];
            self.next += 1;
            self.extend();
            if self.ready.len() >= WRITE_BATCH || self.ready_bytes >= STREAM_FLUSH_BYTES {
                self.flush();
            }
        }
        // The bytes are planned (or dropped): the listing keeps the path and kind only.
        bundle::ReadEntry {
            path: entry.path,
            kind: bundle::ReadKind::File(Vec::new()),
        }
    }
}

impl Stream<'_> {
    /// Move the window's end on while its files' cost fits [`STREAM_BUFFER_BYTES`] (it always holds `next`).
    fn extend(&mut self) {
        self.end = self.end.max(self.next);
        while self.end < self.topics.len()
            && (self.end == self.next || self.window_bytes + self.cost[self.end] <= STREAM_BUFFER_BYTES)
        {
            self.window_bytes += self.cost[self.end];
            self.end += 1;
        }
    }

    /// Steps 3-5 for the files whose turn came: the merge check, the store's rules, the writes (real run).
    fn flush(&mut self) {
        if self.ready.is_empty() {
            return;
        }
        let (positions, mut files): (Vec<usize>, Vec<FilePlan>) = std::mem::take(&mut self.ready).into_iter().unzip();
        self.ready_bytes = 0;
        skip_present_merges(self.store, self.scope, self.scope_id, &mut files);
        let prepared = prepare_all(self.scope, &mut files);
        if !self.dry_run {
            self.wrote |= prepared.iter().any(Option::is_some);
            execute(self.store, self.ctx, &mut files, &prepared, self.scope_id, self.stopped);
            self.progress.advance(files.len() as u64);
        }
        for (i, file) in positions.into_iter().zip(files) {
            self.plans[i] = Some(file);
        }
    }

    /// The bundle cannot be read on: every topic file not handed on yet is reported as not written.
    fn give_up(&mut self, e: &MemoryError) {
        let why = e.to_string();
        note_failure(self.stopped, e);
        for rank in self.next..self.topics.len() {
            let i = self.topics[rank];
            self.plans[i] = Some(match self.pending.remove(&rank) {
                Some(mut plan) => {
                    plan.reject_after_planning(format!("not written: {why}"));
                    plan
                }
                None => unread(&self.listing.entries[i], &why),
            });
        }
        self.next = self.topics.len();
        self.end = self.next;
        self.window_bytes = 0;
    }
}

/// Bytes of text a plan holds (a planned write's content).
fn text_bytes(plan: &FilePlan) -> u64 {
    match &plan.outcome {
        FileOutcome::Write(w) => w.content.len() as u64,
        _ => 0,
    }
}

/// A topic file a pass could not read (the bundle changed): rejected with `why`.
fn unread(entry: &bundle::ReadEntry, why: &str) -> FilePlan {
    FilePlan {
        path: cao_okf::path::validate_bundle_path(&entry.path)
            .unwrap_or_else(|_| String::from_utf8_lossy(&entry.path).into_owned()),
        see_also_dropped: 0,
        body_escaped: false,
        notices: Vec::new(),
        outcome: FileOutcome::Rejected(cao_okf::import::RejectReason::Store(format!("not written: {why}"))),
    }
}

/// Step 3's end: a merge whose text the topic already holds appends nothing (re-importing a bundle is idempotent).
fn skip_present_merges(store: &Store, scope: Scope, scope_id: Option<&str>, files: &mut [FilePlan]) {
    for file in files {
        let FileOutcome::Write(w) = &file.outcome else { continue };
        if w.action != WriteAction::Merge {
            continue;
        }
        let present = store
            .topic(&cao_core::MemoryRef::new(
                scope,
                scope_id.map(str::to_owned),
                w.key.clone(),
            ))
            .ok()
            .flatten()
            .is_some_and(|t| {
                t.entries()
                    .iter()
                    .any(|e| cao_okf::same_entry_text(&e.content, &w.content))
            });
        if present {
            file.skip_present_merge();
        }
    }
}

/// Step 4: the store's own rules for every planned write of `files`; the content moves into the prepared write
/// (the plan keeps its metadata only), a refusal becomes the file's rejection.
fn prepare_all(scope: Scope, files: &mut [FilePlan]) -> Vec<Option<write::Prepared>> {
    let mut prepared = Vec::with_capacity(files.len());
    for file in files {
        let FileOutcome::Write(w) = &mut file.outcome else {
            prepared.push(None);
            continue;
        };
        let checked = write::prepare(
            &StoreArgs {
                content: std::mem::take(&mut w.content),
                scope: Some(scope),
                memory_type: Some(w.memory_type),
                key: Some(w.key.as_str().to_owned()),
                tags: Some(w.tags.clone()),
            },
            None,
        );
        match checked {
            Ok(p) => prepared.push(Some(p)),
            Err(e) => {
                file.reject_after_planning(e.to_string());
                prepared.push(None);
            }
        }
    }
    prepared
}

/// How many written (or, in a dry run, planned) topics of `files` are already expired at `now` by the retention
/// rule of `scope` ([`cao_core::retention::is_expired`] on the entry time: an imported topic is last updated at its
/// bundle timestamp), so the next retention cleanup removes them.
fn past_retention(scope: Scope, files: &[cao_okf::FilePlan], now: DateTime<Utc>) -> usize {
    files
        .iter()
        .filter(|f| match &f.outcome {
            FileOutcome::Write(w) => cao_core::retention::is_expired(scope, w.memory_type, w.entry_time, now),
            _ => false,
        })
        .count()
}

/// Step 5: run the planned writes in batches; `stopped` is the storage failure that stopped the run (set here on
/// the first one; once set, every remaining write is reported as not written).
fn execute(
    store: &Store,
    ctx: &TerminalContext,
    files: &mut [cao_okf::FilePlan],
    prepared: &[Option<write::Prepared>],
    scope_id: Option<&str>,
    stopped: &mut Option<String>,
) {
    let todo: Vec<usize> = (0..files.len()).filter(|&i| prepared[i].is_some()).collect();
    for batch in todo.chunks(WRITE_BATCH) {
        if let Some(first) = &stopped {
            for &i in batch {
                files[i].reject_after_planning(format!(
                    "not written: the import stopped after a storage error ({first})"
                ));
            }
            continue;
        }
        let mut items = Vec::with_capacity(batch.len());
        let mut slots = Vec::with_capacity(batch.len());
        for &i in batch {
            let (Some(p), FileOutcome::Write(w)) = (&prepared[i], &files[i].outcome) else {
                continue;
            };
            if w.action == WriteAction::Replace {
                let memory = MemoryRef::new(p.scope, scope_id.map(str::to_owned), p.key.clone());
                match write::remove(store, actor_of(ctx), &write::writer_of(ctx), &memory) {
                    Ok(r) => audit::record(
                        store,
                        AuditEvent::Delete,
                        actor_of(ctx),
                        p.scope,
                        scope_id,
                        p.key.as_str(),
                        r.action,
                    ),
                    Err(e) => {
                        note_failure(stopped, &e);
                        files[i].reject_after_planning(e.to_string());
                        continue;
                    }
                }
            }
            items.push((p, Some(w.entry_time)));
            slots.push(i);
        }
        let results = write::commit_batch(store, ctx, &items, scope_id);
        for (i, result) in slots.into_iter().zip(results) {
            if let Err(e) = result {
                note_failure(stopped, &e);
                files[i].reject_after_planning(e.to_string());
            }
        }
    }
}

/// Remember the first storage failure (anything but a refusal of this one topic).
fn note_failure(stopped: &mut Option<String>, e: &MemoryError) {
    let topic_only = e.is_client_error() || matches!(e, MemoryError::Corrupt { .. });
    if stopped.is_none() && !topic_only {
        *stopped = Some(e.to_string());
    }
}
