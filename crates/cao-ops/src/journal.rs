//! The journal seen from the service (spec 001): the view, zoom, search and read tools, purge, session snapshots and
//! the `# Memory updated` reminder, and one summarizing step for long-running processes. Free functions over the
//! [`Store`]; the journal's rules are `cao-journal`'s, its SQL `cao-index`'s.
//!
//! Which journal: each container has its own (`cao_core::Container`). The tools take an optional `scope`: `project`
//! (the default) is the caller's project, `global`, `session` and `agent` the `global` container, `federated` the
//! `federated` one. Operators may name a container directly (`cao memory view --container`).
//!
//! Every read first runs [`Store::read`] (a replaced database is refused, edits made outside the tool are
//! picked up) and opens the container's journal ([`Store::open_journal`]: the first opening imports the existing
//! memories oldest first by file time). Memory text is untrusted wherever it is returned: the view defuses its own
//! tags and control characters (`cao_journal::render`).

use crate::types::{ReadArgs, SearchArgs, ViewArgs, ZoomArgs};
use cao_core::{Container, Key, MemoryRef, Scope, Settings, TerminalContext};
use cao_journal::{Address, WriterFilter, Zoom};
pub use cao_protocol::{
    EntryWriter, ReadResult, SearchHit, SearchResult, ViewResult, ZoomResult, ZoomedEntry, ZoomedLine,
};
use cao_store::MemoryError;
use cao_store::MemoryRow;
use cao_store::Store;
use cao_store::audit::{self, AuditEvent, actor_of};
use cao_store::visibility;
use serde::Serialize;

/// Most hits `memory_search` returns (spec 001: "Returns the top 10").
pub const SEARCH_MAX_HITS: usize = 10;

/// Candidates `memory_search` scores, from each of the index's word pools.
const SEARCH_POOL: usize = 500;

/// Longest query `memory_search` accepts, in bytes.
pub const SEARCH_QUERY_MAX_BYTES: usize = 1000;

/// Longest matching line a search hit carries, in bytes (cut at a character boundary).
const MATCH_LINE_MAX_BYTES: usize = 300;

/// Weight of a query word found in a memory's key; a word in the body counts 1 (spec 001: "A match in a note's name
/// counts more than one in its body").
const KEY_WEIGHT: u32 = 3;

/// Most rows one `# Memory updated` reminder lists (the rest are counted in a last row).
pub const REMINDER_MAX_ROWS: usize = 50;

/// Which journal a call reads: a scope (`project` by default) or, for operators, a container name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JournalTarget {
    /// `project` (default), `global`, `session`, `agent` or `federated`.
    pub scope: Option<Scope>,
    /// A container name (`global`, `federated` or a project id); wins over `scope`.
    pub container: Option<String>,
}

impl From<ViewArgs> for JournalTarget {
    /// The journal a `memory_view` call names: its scope (tools never name a container outright).
    fn from(args: ViewArgs) -> Self {
        JournalTarget {
            scope: args.scope,
            container: None,
        }
    }
}

/// What `memory_zoom` opens: the tool's address ([`ZoomArgs`]) in a journal that operators may also name by
/// container (`cao memory view`, the web UI).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ZoomRequest {
    /// The line's first entry.
    pub id: u64,
    /// How many entries the line covers (a power of two; `id` a multiple of it).
    pub n: u64,
    /// Which journal.
    pub target: JournalTarget,
}

impl From<ZoomArgs> for ZoomRequest {
    /// A `memory_zoom` call: line `id+n` of the journal its scope names.
    fn from(args: ZoomArgs) -> Self {
        ZoomRequest {
            id: args.id,
            n: args.n,
            target: JournalTarget {
                scope: args.scope,
                container: None,
            },
        }
    }
}

/// What a purge did (`cao memory purge`, `DELETE /memory/{key}/history`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PurgeResult {
    /// Always true.
    pub success: bool,
    /// The key.
    pub key: String,
    /// The scope.
    pub scope: Scope,
    /// The scope id.
    pub scope_id: Option<String>,
    /// Whether the topic file existed (and is now gone).
    pub file_deleted: bool,
    /// Whether the index row existed (and is now gone).
    pub row_deleted: bool,
    /// Journal entries of the memory whose text was blanked.
    pub versions_purged: u64,
    /// The memory's first journal entry, if it had one.
    pub first_entry: Option<u64>,
    /// Summary lines dropped (the summarizer writes them again without the memory).
    pub lines_dropped: u64,
    /// Stored session views withdrawn.
    pub snapshots_withdrawn: u64,
    /// True when another connection kept the WAL from being truncated (its old frames are overwritten by the next
    /// checkpoint; run the purge again to force it).
    pub wal_busy: bool,
    /// Audit log lines about the memory whose text fields were replaced by [`cao_store::audit::PURGED_MARKER`].
    pub audit_lines_scrubbed: u64,
    /// The (former) topic file.
    pub path: String,
}

/// A snapshot taken for a session (the view it starts with).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSnapshot {
    /// The container.
    pub container: String,
    /// The view taken.
    pub view: String,
    /// N at that moment.
    pub taken_at_entry: u64,
}

/// The container `target` names for `ctx` (module docs).
///
/// Errors: [`MemoryError::Invalid`] for an unknown scope, a malformed container name, a named container that does
/// not exist (no wiki directory, no journal), or a project that cannot be resolved.
pub fn container_of(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    target: &JournalTarget,
) -> Result<Container, MemoryError> {
    if let Some(name) = &target.container {
        cao_store::validate_container(name).map_err(|e| MemoryError::Invalid(e.to_string()))?;
        // A container named outright must exist (its content or its journal): a mistyped name is an error, not an
        // empty view, and reading it writes nothing.
        if !store.container_exists(name)? {
            return Err(MemoryError::Invalid(format!(
                "no memory container {name:?}: it holds no memory and has no journal"
            )));
        }
        return Ok(Container::named(name.clone()));
    }
    let scope = target.scope.unwrap_or(Scope::Project);
    let scope_id = match scope {
        Scope::Project => visibility::target_scope_id(store, ctx, scope, settings)?,
        _ => None,
    };
    Ok(Container::of(scope, scope_id.as_deref()))
}

/// A container ready to read: the index is current and the journal open.
fn ready(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    target: &JournalTarget,
) -> Result<Container, MemoryError> {
    store.read()?;
    let container = container_of(store, settings, ctx, target)?;
    store.open_journal(&container)?;
    Ok(container)
}

/// The live view of the target's journal (spec 001 "The view").
///
/// Errors: as [`container_of`]; index and journal errors.
pub fn view(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    target: &JournalTarget,
) -> Result<ViewResult, MemoryError> {
    let container = ready(store, settings, ctx, target)?;
    let v = cao_journal::view(&*store.write(), container.as_str())?;
    Ok(ViewResult {
        success: true,
        container: container.into_string(),
        bytes: v.text.len(),
        lines: v.lines.len(),
        entries: v.entries,
        left_out: v.left_out,
        view: v.text,
    })
}

/// Zoom into line `id+n` of the target's journal (spec 001 "Zoom and search").
///
/// Errors: [`MemoryError::Invalid`] for a malformed address (n not a power of two, id not a multiple of n) or one
/// beyond the journal's entries; as [`view`].
pub fn zoom(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    req: &ZoomRequest,
) -> Result<ZoomResult, MemoryError> {
    let address = Address::new(req.id, req.n).map_err(|e| MemoryError::Invalid(e.to_string()))?;
    let container = ready(store, settings, ctx, &req.target)?;
    let z = cao_journal::zoom(&*store.snapshot(), container.as_str(), address)?;
    let (entry, lines) = match z {
        Zoom::Entry(e) => (Some(zoomed_entry(e)), Vec::new()),
        Zoom::Pair { children, .. } => (
            None,
            children
                .into_iter()
                .map(|c| ZoomedLine {
                    address: c.address.to_string(),
                    summarized: c.text.is_some(),
                    text: c.shown,
                    writer: c.writer,
                })
                .collect(),
        ),
    };
    Ok(ZoomResult {
        success: true,
        container: container.into_string(),
        address: address.to_string(),
        entry,
        lines,
    })
}

/// The versions of one memory in its container's journal, newest first: each entry whole, as zoom with n = 1 shows
/// it (text, status, writer, time), at most `limit` of them, and the total number of its entries. A memory never
/// written through the tool (or whose container has no journal yet) has none. Read-only apart from the journal's
/// first opening; no access is counted.
///
/// Errors: [`MemoryError::Invalid`] for a project memory without a scope id; index and journal errors.
pub fn history(
    store: &Store,
    key: &Key,
    scope: Scope,
    scope_id: Option<&str>,
    limit: usize,
) -> Result<(Vec<ZoomedEntry>, usize), MemoryError> {
    store.read()?;
    let scope_id = if scope.needs_scope_id() { scope_id } else { None };
    if scope.needs_scope_id() && scope_id.is_none() {
        return Err(MemoryError::Invalid(format!("scope {scope} needs a scope id")));
    }
    let container = Container::of(scope, scope_id);
    store.open_journal(&container)?;
    let ids = store
        .snapshot()
        .journal(|j| Ok::<_, MemoryError>(j.memory_entry_ids(container.as_str(), scope, scope_id, key)?))?;
    let total = ids.len();
    let mut out = Vec::new();
    for id in ids.into_iter().rev().take(limit) {
        let address = Address::new(id, 1).map_err(|e| MemoryError::Invalid(e.to_string()))?;
        if let Zoom::Entry(e) = cao_journal::zoom(&*store.snapshot(), container.as_str(), address)? {
            out.push(zoomed_entry(e));
        }
    }
    Ok((out, total))
}

/// The service's shape of a whole entry.
fn zoomed_entry(e: cao_journal::EntryView) -> ZoomedEntry {
    ZoomedEntry {
        address: e.address.to_string(),
        kind: e.kind.as_str(),
        name: e.name,
        key: e.key.as_str().to_owned(),
        scope: e.scope,
        scope_id: e.scope_id,
        text: e.text,
        status: e.status.as_str(),
        replaced_by: e.replaced_by,
        written_at: cao_core::time::format_ts(e.at),
        writer: EntryWriter {
            terminal_id: e.writer.terminal_id,
            session: e.writer.session,
        },
    }
}

/// The lowercase words of a query: runs of letters and digits, distinct, in order.
fn query_words(query: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for w in query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
    {
        if !words.contains(&w) {
            words.push(w);
        }
    }
    words
}

/// `text` cut to at most `max` bytes at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Search the caller's current memories by word (spec 001 "Zoom and search"): every memory visible to the caller
/// that holds a query word is scored 3 per word in its key and 1 per word in its body (case-insensitive substring
/// match); the best 10 are returned, the newer memory first on a tie. Candidates come from the index's word pools
/// (every query word, then any query word), 500 each; no access is counted. With `memory.decisions.search =
/// enforce`, the decision engine judges the best 32 and only those it finds relevant are shown
/// ([`crate::decisions`]; its failure shows the word matches as without it).
///
/// Errors: [`MemoryError::Invalid`] for a query without a letter or digit or over [`SEARCH_QUERY_MAX_BYTES`];
/// visibility and index errors.
pub fn search(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    req: &SearchArgs,
) -> Result<SearchResult, MemoryError> {
    if req.query.len() > SEARCH_QUERY_MAX_BYTES {
        return Err(MemoryError::Invalid(format!(
            "query is {} bytes; the maximum is {SEARCH_QUERY_MAX_BYTES}",
            req.query.len()
        )));
    }
    let words = query_words(&req.query);
    if words.is_empty() {
        return Err(MemoryError::Invalid(
            "query needs at least one word (letters or digits)".into(),
        ));
    }
    store.read()?;
    let mut groups = visibility::groups(store, ctx, settings, None, false)?;
    // Vault-bound scopes read their vault notes (spec/vault-facts.md section 5 "Sources per recall").
    crate::vault::bind_groups(store, settings, &mut groups);
    let vis = visibility::union(&groups);
    let index = store.snapshot();
    let mut candidates: Vec<MemoryRow> = index.metadata_pool(&vis, None, &req.query, SEARCH_POOL)?;
    let mut seen: std::collections::HashSet<String> = candidates.iter().map(|r| r.id.clone()).collect();
    for (row, _) in index.bm25_pool(
        &vis,
        None,
        &req.query,
        SEARCH_POOL,
        &crate::recall::lexical_scorer(settings),
    )? {
        if seen.insert(row.id.clone()) {
            candidates.push(row);
        }
    }
    let mut hits: Vec<(u32, MemoryRow)> = candidates
        .into_iter()
        .filter_map(|row| {
            let key = row.key.as_str().to_lowercase();
            let body = row.content.to_lowercase();
            let score: u32 = words
                .iter()
                .map(|w| u32::from(key.contains(w.as_str())) * KEY_WEIGHT + u32::from(body.contains(w.as_str())))
                .sum();
            (score > 0).then_some((score, row))
        })
        .collect();
    hits.sort_by(|(sa, a), (sb, b)| {
        sb.cmp(sa)
            .then(b.updated_at.cmp(&a.updated_at))
            .then(a.key.as_str().cmp(b.key.as_str()))
    });
    let to_hit = |score: u32, relevance: Option<f64>, row: MemoryRow| {
        let first = cao_journal::render::first_line(&row.content);
        let matching = row
            .content
            .lines()
            .find(|l| {
                let l = l.to_lowercase();
                words.iter().any(|w| l.contains(w.as_str()))
            })
            .map_or(first, str::trim);
        SearchHit {
            key: row.key.as_str().to_owned(),
            scope: row.scope,
            first_line: cut(first, MATCH_LINE_MAX_BYTES).to_owned(),
            matching_line: cut(matching, MATCH_LINE_MAX_BYTES).to_owned(),
            score,
            relevance,
            updated_at: cao_core::time::format_ts(row.updated_at),
            scope_id: row.scope_id,
        }
    };
    hits.truncate(crate::decisions::SEARCH_CANDIDATES.max(SEARCH_MAX_HITS));
    let rows: Vec<MemoryRow> = hits.iter().map(|(_, r)| r.clone()).collect();
    if let Some(judged) = crate::decisions::judge_search(settings, &req.query, &rows) {
        let left_out: Vec<String> = judged
            .left_out
            .iter()
            .map(|&i| match rows[i].scope {
                Scope::Project => rows[i].key.as_str().to_owned(),
                s => format!("{}/{}", s.as_str(), rows[i].key.as_str()),
            })
            .collect();
        let mut slots: Vec<Option<(u32, MemoryRow)>> = hits.into_iter().map(Some).collect();
        return Ok(SearchResult {
            success: true,
            hits: judged
                .shown
                .iter()
                .filter_map(|&(i, relevance)| {
                    let (score, row) = slots.get_mut(i)?.take()?;
                    Some(to_hit(score, Some(relevance), row))
                })
                .collect(),
            notice: (!left_out.is_empty()).then(|| crate::decisions::search_notice(&left_out)),
            left_out,
        });
    }
    hits.truncate(SEARCH_MAX_HITS);
    Ok(SearchResult {
        success: true,
        hits: hits.into_iter().map(|(score, row)| to_hit(score, None, row)).collect(),
        notice: None,
        left_out: Vec::new(),
    })
}

/// A memory's current text (`memory_read`): the first visible memory named `key` in scope precedence order (only
/// `scope` when given), with its newest journal entry. Counts an access, as a recall does.
///
/// Errors: [`MemoryError::Invalid`] for a bad key or scope; [`MemoryError::NotFound`]; visibility and index errors.
pub fn read(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    req: &ReadArgs,
) -> Result<ReadResult, MemoryError> {
    let key = Key::sanitize(&req.key)?;
    let scope = req.scope;
    store.read()?;
    let mut found = None;
    let mut groups = visibility::groups(store, ctx, settings, scope, false)?;
    // Vault-bound scopes read their vault notes (spec/vault-facts.md section 5 "Sources per recall").
    crate::vault::bind_groups(store, settings, &mut groups);
    for group in groups {
        if let Some(row) = store.snapshot().find_key(&group.visibility(), &key)? {
            found = Some(row);
            break;
        }
    }
    let Some(row) = found else {
        return Err(MemoryError::NotFound {
            key: key.as_str().to_owned(),
            scope: scope.map_or_else(|| "any visible scope".to_owned(), |s| s.to_string()),
        });
    };
    store.record_access(std::slice::from_ref(&row));
    // A vault note has no journal: its history is the vault's.
    let journal_entry = if row.source_kind == cao_core::SourceKind::Vault {
        None
    } else {
        let container = row.container();
        store.open_journal(&container)?;
        store
            .snapshot()
            .journal(|j| j.memory_entry_ids(container.as_str(), row.scope, row.scope_id.as_deref(), &row.key))?
            .last()
            .copied()
    };
    Ok(ReadResult {
        success: true,
        key: row.key.as_str().to_owned(),
        scope: row.scope,
        content: row.content,
        memory_type: row.memory_type,
        tags: row.tags,
        updated_at: cao_core::time::format_ts(row.updated_at),
        scope_id: row.scope_id,
        journal_entry,
    })
}

/// Purge `key` of `scope` (default project) for the caller's scope id ([`Store::purge`]), then every relationship
/// edge into or out of it, and audit it. Operators only: no tool reaches this.
///
/// Errors: [`MemoryError::Invalid`], I/O, index and journal errors.
pub fn purge(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    key: &Key,
    scope: Option<Scope>,
) -> Result<PurgeResult, MemoryError> {
    let scope = scope.unwrap_or(Scope::Project);
    let scope_id = visibility::target_scope_id(store, ctx, scope, settings)?;
    let memory = MemoryRef::new(scope, scope_id, key.clone());
    purge_memory(store, ctx, &memory)
}

/// Purge the memory with the exact identity `memory` (the memory inspector purges the memory of the entry it shows,
/// which may belong to another session or agent than the caller's); as [`purge`] otherwise.
///
/// Errors: I/O, index and journal errors.
pub fn purge_memory(store: &Store, ctx: &TerminalContext, memory: &MemoryRef) -> Result<PurgeResult, MemoryError> {
    let (scope, key) = (memory.scope, &memory.key);
    // The edges go first: the store's purge ends with the database rebuilt (`VACUUM`) and the WAL truncated, which
    // must come after every delete of the memory's text, an edge's attributes included (deleted after the rebuild,
    // they stayed in the WAL and then in the file's free pages).
    crate::audit_relationships::relationships(store, actor_of(ctx))
        .purge_memory(memory.scope, memory.scope_id(), &memory.key)
        .map_err(crate::audit_relationships::lifecycle_error)?;
    let purged = store.purge(memory)?;
    let audit_lines_scrubbed = audit::log_of(store)
        .scrub(scope, memory.scope_id(), key.as_str())
        .map_err(|source| MemoryError::Io {
            context: "the memory is purged, but its text could not be erased from the audit log (run the purge again)"
                .to_owned(),
            source,
        })?;
    let action = if purged.file_existed || purged.row_existed || purged.journal.versions > 0 || audit_lines_scrubbed > 0
    {
        "purged"
    } else {
        "absent"
    };
    audit::record(
        store,
        AuditEvent::Purge,
        actor_of(ctx),
        scope,
        memory.scope_id(),
        key.as_str(),
        action,
    );
    Ok(PurgeResult {
        success: true,
        key: key.as_str().to_owned(),
        scope,
        scope_id: memory.scope_id.clone(),
        file_deleted: purged.file_existed,
        row_deleted: purged.row_existed,
        versions_purged: purged.journal.versions,
        first_entry: purged.journal.first_entry,
        lines_dropped: purged.journal.lines_dropped,
        snapshots_withdrawn: purged.journal.snapshots_withdrawn,
        wal_busy: purged.journal.checkpoint.busy,
        audit_lines_scrubbed,
        path: purged.path.to_string_lossy().into_owned(),
    })
}

/// Take the view of the target's journal for `session_id` and record it as the session's snapshot (spec 001 "When
/// the view changes": taken when a session starts and at each rebuild; entries after it reach the session through
/// the reminder).
///
/// Errors: [`MemoryError::Invalid`] for a malformed session id (empty, over 256 bytes, control characters); as
/// [`view`].
pub fn take_snapshot(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    target: &JournalTarget,
    session_id: &str,
) -> Result<SessionSnapshot, MemoryError> {
    let container = ready(store, settings, ctx, target)?;
    let snap = cao_journal::take_snapshot(&*store.write(), container.as_str(), session_id, store.now())?;
    Ok(SessionSnapshot {
        container: container.into_string(),
        view: snap.view.text,
        taken_at_entry: snap.taken_at_entry,
    })
}

/// Record that `session_id` started with an empty view of the target's journal (its process showed none, the store
/// did not exist yet), so its reminder lists every entry.
///
/// Errors: as [`take_snapshot`].
pub fn record_empty_snapshot(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    target: &JournalTarget,
    session_id: &str,
) -> Result<(), MemoryError> {
    let container = ready(store, settings, ctx, target)?;
    cao_journal::record_snapshot(&*store.write(), container.as_str(), session_id, 0, "", store.now())?;
    Ok(())
}

/// The `# Memory updated` reminder for `session_id` (spec 001): one row per entry of the target's journal appended
/// since the session's snapshot by someone else (entries `exclude` matches are the session's own), each entry
/// listed once; `None` when there is nothing new or the session took no snapshot.
///
/// Errors: as [`take_snapshot`].
pub fn reminder(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    target: &JournalTarget,
    session_id: &str,
    exclude: Option<&WriterFilter>,
) -> Result<Option<String>, MemoryError> {
    let container = ready(store, settings, ctx, target)?;
    let delivered = cao_journal::deliver_reminder(
        &*store.write(),
        container.as_str(),
        session_id,
        exclude,
        REMINDER_MAX_ROWS,
    )?;
    Ok(delivered.as_ref().and_then(cao_journal::render_reminder))
}

/// What one summarizing pass over every journal did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SummarizeReport {
    /// Lines written (with or without a model).
    pub written: usize,
    /// Model calls made.
    pub model_calls: usize,
    /// Lines whose model call failed for a passing reason (retried 10 s later by any process).
    pub retry_later: usize,
}

impl SummarizeReport {
    /// True when the pass found nothing to do.
    pub fn idle(&self) -> bool {
        self.written == 0 && self.model_calls == 0 && self.retry_later == 0
    }
}

/// One summarizing pass (spec 001 "Summaries and spend"): for each container with a journal, one
/// [`cao_journal::summarize_step`] (at most [`cao_journal::MAX_CLAIMS`] model calls at once, through leases shared
/// with other processes). Long-running processes call this in a loop; one-shot commands never do.
///
/// Errors: index and journal errors (model failures are not errors).
pub fn summarize_pass(
    store: &Store,
    model: &dyn cao_model::Model,
    worker: &cao_journal::Worker,
) -> Result<SummarizeReport, MemoryError> {
    store.ensure_current()?;
    let containers = store.snapshot().journal(|j| j.containers())?;
    let mut report = SummarizeReport::default();
    for container in containers {
        let step = cao_journal::summarize_step(&*store.write(), &container, model, worker, store.clock().as_ref())?;
        report.written += step.written.len();
        report.model_calls += step.model_calls;
        report.retry_later += step.retry_later.len();
    }
    Ok(report)
}

/// The view a new session of `ctx` is given (`memory.injection.mode` `view` or `both`): the journal of the caller's
/// project, with every `<cao-memory` delimiter defused ([`crate::inject::neutralize_delimiters`]) so a memory cannot open or
/// close the block next to it; with `session_id`, taken as that session's snapshot. `None` when memory is disabled,
/// no project can be resolved, or the journal has no entry.
///
/// Errors: index and journal errors; [`MemoryError::Invalid`] for a malformed project id or session id.
pub fn injected_view(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    session_id: Option<&str>,
) -> Result<Option<String>, MemoryError> {
    if !settings.memory_enabled() {
        return Ok(None);
    }
    match ctx.project(settings) {
        Err(cao_core::CoreError::UnresolvableScopeId { .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
        Ok(_) => {}
    }
    let target = JournalTarget::default();
    let (text, entries) = match session_id {
        Some(id) => {
            let snap = take_snapshot(store, settings, ctx, &target, id)?;
            (snap.view, snap.taken_at_entry)
        }
        None => {
            let v = view(store, settings, ctx, &target)?;
            (v.view, v.entries)
        }
    };
    if entries == 0 {
        return Ok(None);
    }
    Ok(Some(crate::inject::neutralize_delimiters(&text).into_owned()))
}

/// What a session is given from a block and a view: either alone, or the block, a blank line, then the view.
pub fn compose(block: Option<String>, view: Option<String>) -> Option<String> {
    match (block, view) {
        (Some(b), Some(v)) => Some(format!("{b}\n\n{v}")),
        (b, v) => b.or(v),
    }
}
