//! `cao store copy`: move a whole store from one backend to another (the embedded home and a PostgreSQL database,
//! either way, or two of the same kind), through the store interface only: the source is read through
//! [`cao_store::Reads`], its journal through [`cao_store::JournalOps`] and its memories' content through
//! [`Store::topic_text`]; the target is written through [`Store::put_copied`] (the topic text verbatim and the row
//! with its own id, times and access state), [`cao_store::Writes`] and the journal's statements.
//!
//! What is copied, in this order:
//! 1. **Journals**, container by container, before any memory (a target container without a journal would import
//!    its memories into a new one when first read): every entry with its id, kind, writer and time (appended in id
//!    order into an empty journal, so ids match), the summary lines, the view state, the ready set and the session
//!    snapshots with their reminder marks. Leases (claims of at most minutes) are not copied.
//! 2. **Memories**: the topic text byte for byte (timestamps included) and the row.
//! 3. **Relationship edges** (by id; an edge's creation time becomes its last update time), **outcomes** (by id),
//!    **terminals** (those named by a memory, an outcome or a journal entry) and **project aliases** (those of the
//!    projects holding memories; recorded with the copy's time).
//!
//! 4. **The audit log**, day by day (the daily files of a home, the table of a database): a day the target has no
//!    line of gets the source's lines; a day it holds exactly is unchanged; a day that differs is skipped with a
//!    warning, never merged.
//!
//! Not copied: dense vectors (`cao memory embed` computes them on the target), leases and the recall-advice cache
//! of the last 30 days.
//!
//! Idempotent: a record the target already holds as the source has it is counted `unchanged` and not written; a
//! journal is copied only into a target with no entries for that container (one holding the same number of
//! entries counts as unchanged; one holding a different number is skipped with a warning, never merged). A dry run
//! reads both stores and counts what a copy would write, writing nothing.

use cao_core::Scope;
use cao_store::{
    JournalEntry, JournalOps, ListFilter, MemoryError, MemoryRow, OutcomeFilter, Progress, RelationshipFilter,
    SnapshotRow, Store, StoreError, Visibility,
};
use chrono::Utc;
use serde::Serialize;
use std::collections::{BTreeSet, HashSet};

/// A limit that reads every row (SQL limits are signed 64-bit).
const ALL: usize = 1 << 40;

/// Entries read from a source journal per statement.
const PAGE: usize = 1000;

/// The `schema` value of [`CopyReport`] (`docs/schemas/cao.store.copy-1.json`).
pub const COPY_SCHEMA: &str = "cao.store.copy/1";

/// What one kind of record came to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CopyCount {
    /// Records the source holds.
    pub source: u64,
    /// Records written to the target (a dry run: that would be written).
    pub copied: u64,
    /// Records the target already held as the source has them.
    pub unchanged: u64,
    /// Records left out, each with a warning in the log (a journal that differs in the target, an edge whose
    /// memories are missing, a memory whose content is missing in the source).
    pub skipped: u64,
}

/// What [`copy`] did (or, with `dry_run`, would do): one [`CopyCount`] per kind of record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CopyReport {
    /// Always [`COPY_SCHEMA`].
    pub schema: &'static str,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// Memories (topic text and row).
    pub memories: CopyCount,
    /// Relationship edges.
    pub relationships: CopyCount,
    /// Workflow outcomes.
    pub outcomes: CopyCount,
    /// Registered terminals.
    pub terminals: CopyCount,
    /// Project aliases.
    pub aliases: CopyCount,
    /// Container journals.
    pub journals: CopyCount,
    /// Journal entries (of the journals counted in `journals`).
    pub journal_entries: CopyCount,
    /// Journal summary lines.
    pub summary_lines: CopyCount,
    /// Session snapshots of the journals.
    pub snapshots: CopyCount,
    /// Audit log lines (by UTC day).
    pub audit_lines: CopyCount,
    /// The schema version created in a PostgreSQL target that held no cao schema (with `dry_run`: that the copy
    /// would create; the dry run creates nothing). `None` (left out of the JSON) for a home or a database that
    /// already held the schema. [`copy`] leaves it `None`; the caller that opened the target says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creates_schema: Option<i64>,
}

/// Everything one container's journal holds that a copy moves.
struct JournalDump {
    entries: Vec<cao_store::EntryRow>,
    lines: Vec<cao_store::LineRow>,
    view: Vec<cao_store::ViewRow>,
    ready: Vec<(u64, u64)>,
    snapshots: Vec<(SnapshotRow, Option<u64>)>,
    view_end: u64,
    view_bytes: u64,
}

/// Copy every record of `from` into `to` (module docs for what and in which order); with `dry_run`, only count.
/// `progress` sees one phase per kind of record.
///
/// Errors: a read of either store or a write to the target failed (what was written before stays: running the copy
/// again completes it); [`MemoryError::Invalid`] when a source topic text does not parse.
pub fn copy(from: &Store, to: &Store, dry_run: bool, progress: &dyn Progress) -> Result<CopyReport, MemoryError> {
    let none = CopyCount::default();
    let mut report = CopyReport {
        schema: COPY_SCHEMA,
        dry_run,
        memories: none,
        relationships: none,
        outcomes: none,
        terminals: none,
        aliases: none,
        journals: none,
        journal_entries: none,
        summary_lines: none,
        snapshots: none,
        audit_lines: none,
        creates_schema: None,
    };
    let mut terminals: BTreeSet<String> = BTreeSet::new();
    copy_journals(from, to, dry_run, progress, &mut report, &mut terminals)?;
    let rows = copy_memories(from, to, dry_run, progress, &mut report)?;
    terminals.extend(rows.iter().filter_map(|r| r.source_terminal_id.clone()));
    copy_relationships(from, to, dry_run, progress, &mut report)?;
    copy_outcomes(from, to, dry_run, progress, &mut report, &mut terminals)?;
    copy_terminals(from, to, dry_run, progress, &mut report, &terminals)?;
    copy_aliases(from, to, dry_run, &rows, &mut report)?;
    copy_audit(from, to, dry_run, &mut report)?;
    Ok(report)
}

/// Read one container's journal from `from` in one read transaction.
fn dump_journal(j: &dyn JournalOps, container: &str) -> Result<JournalDump, StoreError> {
    let meta = j.meta(container)?;
    let mut entries = Vec::new();
    while (entries.len() as u64) < meta.entries {
        let page = j.entries_from(container, entries.len() as u64, PAGE)?;
        if page.is_empty() {
            break;
        }
        entries.extend(page);
    }
    let mut view = Vec::new();
    j.view_scan(container, false, &mut |item| {
        view.push(item.row);
        true
    })?;
    let mut snapshots = Vec::new();
    for s in j.snapshots_all(container, ALL)? {
        let reminded = j.snapshot_reminded_to(container, &s.session_id)?;
        snapshots.push((s, reminded));
    }
    Ok(JournalDump {
        lines: j.lines(container)?,
        ready: j.ready_all(container)?,
        entries,
        view,
        snapshots,
        view_end: meta.view_end,
        view_bytes: meta.view_bytes,
    })
}

/// Write `dump` into the empty journal of `container` (one write transaction).
fn restore_journal(j: &dyn JournalOps, container: &str, dump: &JournalDump) -> Result<(), StoreError> {
    if !j.has_journal(container)? {
        j.create_journal(container)?;
    }
    let mut purged: Vec<&cao_store::EntryRow> = Vec::new();
    let mut kept: HashSet<(Scope, Option<&str>, &str)> = HashSet::new();
    for e in &dump.entries {
        let id = j.append(&JournalEntry {
            kind: e.kind,
            scope: e.scope,
            scope_id: e.scope_id.clone(),
            key: e.key.clone(),
            text: e.text.clone(),
            writer: e.writer.clone(),
            at: e.at,
        })?;
        if id != e.id {
            return Err(StoreError::Invalid(format!(
                "the journal of {container} in the target gave entry {} the id {id}",
                e.id
            )));
        }
        if e.purged {
            purged.push(e);
        } else {
            kept.insert((e.scope, e.scope_id.as_deref(), e.key.as_str()));
        }
    }
    // A purge blanks every entry of a memory; one written again after its purge keeps its later entries' text.
    let mut blanked = HashSet::new();
    for e in purged {
        let memory = (e.scope, e.scope_id.as_deref(), e.key.as_str());
        if !kept.contains(&memory) && blanked.insert(memory) {
            j.blank_memory(container, e.scope, e.scope_id.as_deref(), &e.key)?;
        }
    }
    for l in &dump.lines {
        j.insert_line(container, l.id, l.n, &l.text, &l.writer, l.written_at)?;
    }
    j.view_truncate(container, 0)?;
    for v in &dump.view {
        j.view_insert(container, v.id, v.n, v.bytes)?;
    }
    j.ready_truncate(container, 0)?;
    for (id, n) in &dump.ready {
        j.ready_add(container, *id, *n)?;
    }
    for (s, reminded) in &dump.snapshots {
        j.snapshot_put(container, s)?;
        if let Some(to) = reminded {
            j.set_snapshot_reminded_to(container, &s.session_id, *to)?;
        }
    }
    j.set_view_state(container, dump.view_end, dump.view_bytes)
}

fn copy_journals(
    from: &Store,
    to: &Store,
    dry_run: bool,
    progress: &dyn Progress,
    report: &mut CopyReport,
    terminals: &mut BTreeSet<String>,
) -> Result<(), MemoryError> {
    let containers = from.read()?.journal(|j| j.containers())?;
    progress.start("journals", containers.len() as u64);
    for container in containers {
        let dump = from.read()?.journal(|j| dump_journal(j, &container))?;
        let n = dump.entries.len() as u64;
        terminals.extend(dump.entries.iter().filter_map(|e| e.writer.terminal_id.clone()));
        report.journals.source += 1;
        report.journal_entries.source += n;
        report.summary_lines.source += dump.lines.len() as u64;
        report.snapshots.source += dump.snapshots.len() as u64;
        let there = to.read()?.journal(|j| -> Result<Option<u64>, StoreError> {
            Ok(if j.has_journal(&container)? {
                Some(j.meta(&container)?.entries)
            } else {
                None
            })
        })?;
        match there {
            Some(m) if m == n => {
                report.journals.unchanged += 1;
                report.journal_entries.unchanged += n;
                report.summary_lines.unchanged += dump.lines.len() as u64;
                report.snapshots.unchanged += dump.snapshots.len() as u64;
            }
            Some(m) if m > 0 => {
                tracing::warn!(
                    container,
                    source = n,
                    target = m,
                    "the target's journal of this container holds other entries; it is left as it is"
                );
                report.journals.skipped += 1;
                report.journal_entries.skipped += n;
                report.summary_lines.skipped += dump.lines.len() as u64;
                report.snapshots.skipped += dump.snapshots.len() as u64;
            }
            _ => {
                if !dry_run {
                    to.write().journal(|j| restore_journal(j, &container, &dump))?;
                }
                report.journals.copied += 1;
                report.journal_entries.copied += n;
                report.summary_lines.copied += dump.lines.len() as u64;
                report.snapshots.copied += dump.snapshots.len() as u64;
            }
        }
        progress.advance(1);
    }
    progress.finish();
    Ok(())
}

/// Copy every memory; returns the source's rows.
fn copy_memories(
    from: &Store,
    to: &Store,
    dry_run: bool,
    progress: &dyn Progress,
    report: &mut CopyReport,
) -> Result<Vec<MemoryRow>, MemoryError> {
    let mut rows = from.read()?.list(&ListFilter {
        visibility: Visibility::all(),
        scope: None,
        memory_type: None,
        limit: None,
    })?;
    // Oldest first, so each target allocates its search entries in the order the source wrote them.
    rows.sort_by(|a, b| (a.created_at, a.updated_at, &a.id).cmp(&(b.created_at, b.updated_at, &b.id)));
    progress.start("memories", rows.len() as u64);
    for row in &rows {
        report.memories.source += 1;
        let memory = row.memory_ref();
        let Some(text) = from.topic_text(&memory)? else {
            tracing::warn!(
                key = row.key.as_str(),
                "a memory without content in the source is not copied"
            );
            report.memories.skipped += 1;
            progress.advance(1);
            continue;
        };
        let changed = if dry_run {
            let same_row = to
                .snapshot()
                .get(row.scope, row.scope_id.as_deref(), &row.key)?
                .is_some_and(|t| t.updated_at == row.updated_at && t.content == row.content);
            !(same_row && to.topic_text(&memory)?.as_deref() == Some(text.as_str()))
        } else {
            to.put_copied(row, &text)?
        };
        if changed {
            report.memories.copied += 1;
        } else {
            report.memories.unchanged += 1;
        }
        progress.advance(1);
    }
    progress.finish();
    Ok(rows)
}

fn copy_relationships(
    from: &Store,
    to: &Store,
    dry_run: bool,
    progress: &dyn Progress,
    report: &mut CopyReport,
) -> Result<(), MemoryError> {
    let edges = from.read()?.relationships(&RelationshipFilter::default())?;
    progress.start("relationships", edges.len() as u64);
    for edge in edges {
        report.relationships.source += 1;
        let mut row = edge.row;
        row.created_at = row.updated_at;
        let there = to.snapshot().relationship(&row.id)?;
        let same = there.is_some_and(|t| {
            (t.row.status, t.row.confidence, t.row.rank, &t.row.attributes_json)
                == (row.status, row.confidence, row.rank, &row.attributes_json)
        });
        if same {
            report.relationships.unchanged += 1;
        } else if dry_run {
            report.relationships.copied += 1;
        } else {
            let snap = to.snapshot();
            let ends = [&row.source_key, &row.target_key]
                .into_iter()
                .map(|k| snap.get(row.scope, row.scope_id.as_deref(), k).map(|r| r.is_some()))
                .collect::<Result<Vec<bool>, StoreError>>()?;
            if ends.iter().all(|e| *e) {
                to.write()
                    .upsert_relationship(&row, row.updated_at.unwrap_or_else(Utc::now))?;
                report.relationships.copied += 1;
            } else {
                tracing::warn!(
                    id = row.id,
                    "an edge whose memories are not both in the target is not copied"
                );
                report.relationships.skipped += 1;
            }
        }
        progress.advance(1);
    }
    progress.finish();
    Ok(())
}

fn copy_outcomes(
    from: &Store,
    to: &Store,
    dry_run: bool,
    progress: &dyn Progress,
    report: &mut CopyReport,
    terminals: &mut BTreeSet<String>,
) -> Result<(), MemoryError> {
    let all = OutcomeFilter {
        session_name: None,
        agent_profile: None,
        workflow_name: None,
        limit: ALL,
    };
    let mut outcomes = from.read()?.outcomes(&all)?;
    outcomes.reverse();
    let there: HashSet<String> = to.snapshot().outcomes(&all)?.into_iter().map(|o| o.id).collect();
    progress.start("outcomes", outcomes.len() as u64);
    for o in outcomes {
        report.outcomes.source += 1;
        terminals.extend(o.source_terminal_id.clone());
        if there.contains(&o.id) {
            report.outcomes.unchanged += 1;
        } else {
            if !dry_run {
                to.write().insert_outcome(&o, o.created_at.unwrap_or_else(Utc::now))?;
            }
            report.outcomes.copied += 1;
        }
        progress.advance(1);
    }
    progress.finish();
    Ok(())
}

fn copy_terminals(
    from: &Store,
    to: &Store,
    dry_run: bool,
    progress: &dyn Progress,
    report: &mut CopyReport,
    ids: &BTreeSet<String>,
) -> Result<(), MemoryError> {
    progress.start("terminals", ids.len() as u64);
    for id in ids {
        progress.advance(1);
        let Some(t) = from.snapshot().terminal(id)? else {
            continue;
        };
        report.terminals.source += 1;
        if to.snapshot().terminal(id)?.as_ref() == Some(&t) {
            report.terminals.unchanged += 1;
            continue;
        }
        if !dry_run {
            to.write().upsert_terminal(&t, t.updated_at.unwrap_or_else(Utc::now))?;
        }
        report.terminals.copied += 1;
    }
    progress.finish();
    Ok(())
}

fn copy_aliases(
    from: &Store,
    to: &Store,
    dry_run: bool,
    rows: &[MemoryRow],
    report: &mut CopyReport,
) -> Result<(), MemoryError> {
    let projects: BTreeSet<&str> = rows
        .iter()
        .filter(|r| r.scope == Scope::Project)
        .filter_map(|r| r.scope_id.as_deref())
        .collect();
    for project in projects {
        let there: HashSet<String> = to.snapshot().aliases(project)?.into_iter().map(|a| a.alias).collect();
        for alias in from.snapshot().aliases(project)? {
            report.aliases.source += 1;
            if there.contains(&alias.alias) {
                report.aliases.unchanged += 1;
                continue;
            }
            if !dry_run {
                to.record_alias(project, &alias.alias);
            }
            report.aliases.copied += 1;
        }
    }
    Ok(())
}

fn copy_audit(from: &Store, to: &Store, dry_run: bool, report: &mut CopyReport) -> Result<(), MemoryError> {
    let io = |e: std::io::Error| MemoryError::Io {
        context: "reading the audit log".into(),
        source: e,
    };
    let source = cao_store::audit::log_of(from).days().map_err(io)?;
    let target_log = cao_store::audit::log_of(to);
    let there: std::collections::HashMap<String, Vec<String>> = target_log.days().map_err(io)?.into_iter().collect();
    for (day, lines) in source {
        let n = lines.len() as u64;
        report.audit_lines.source += n;
        match there.get(&day) {
            Some(t) if *t == lines => report.audit_lines.unchanged += n,
            Some(t) if !t.is_empty() => {
                tracing::warn!(
                    day,
                    "the target's audit log of this day holds other lines; it is left as it is"
                );
                report.audit_lines.skipped += n;
            }
            _ => {
                if !dry_run {
                    let at = chrono::NaiveDate::parse_from_str(&day, "%Y-%m-%d")
                        .map_err(|e| MemoryError::Invalid(format!("audit log day {day:?}: {e}")))?
                        .and_time(chrono::NaiveTime::MIN)
                        .and_utc();
                    for line in &lines {
                        target_log.append_line(at, line).map_err(|e| MemoryError::Io {
                            context: "writing the audit log".into(),
                            source: e,
                        })?;
                    }
                }
                report.audit_lines.copied += n;
            }
        }
    }
    Ok(())
}
