//! The daily audit log: one content-free JSON line per memory change, in one file per UTC day.
//!
//! Location: `<home>/memory/logs/audit-YYYY-MM-DD.jsonl` (the date is the UTC day of the event's time). The
//! reference writes markdown bullets to `<memory>/logs/memory/YYYY-MM-DD.md`; this log uses its own name and a
//! JSON-lines format so the two never share a file.
//!
//! Line: `{"ts":"2026-04-16T10:30:00.123Z","event":"store","key":"k","scope":"project","scope_id":"abc",
//! "actor":"t-1","outcome":"created"}` followed by `\n`. `scope_id` is `null` for global and federated memories.
//! Never content, never tags, except in `heal` and `compact` lines (below).
//!
//! A `heal` line (one per applied heal action) adds `issue_type`, `claim` (the stale path or symbol, or the
//! dropped related key) and `removed`: what the action took away, so nothing heal deletes is lost: a deleted
//! topic file's whole text, a deleted row's content, or a stripped paragraph (cut to [`MAX_REMOVED_PARAGRAPH_BYTES`];
//! the whole paragraph also stays in the topic file's earlier entry). Matches of the secret gate in `removed` are
//! replaced by `[REDACTED:<name>]` (credentials never reach the log).
//!
//! A `compact` line (one per compacted topic) adds `previous`: the memory's content before the consolidated
//! article replaced it (at most [`MAX_PREVIOUS_BYTES`], redacted as `removed` is; the text also stays in the topic
//! file's earlier entries and in the journal).
//!
//! Purge: `cao memory purge` replaces those text fields (`removed`, `claim`, `previous`) of every line about the
//! purged memory (same key, scope and scope id) with `[purged]` ([`AuditLog::scrub`]); the lines stay.
//!
//! Invariants:
//! - Every string field is at most [`MAX_FIELD_CHARS`] characters (longer values are cut and end with `…`), and
//!   JSON escaping turns every control character into an escape, so a line is one line and at most a few KiB.
//! - The directory is created `0700`; the file is created `0600` and opened with `O_NOFOLLOW`, so a symlink
//!   planted at the log path is refused, never followed. An existing file that is not a regular file or whose
//!   mode grants group/other access is refused too.
//! - Each line is written with one `write` call on an `O_APPEND` descriptor, so lines from concurrent threads and
//!   processes never interleave. Appenders hold the shared lock on `memory/.audit.lock` while they open and write;
//!   the purge's rewrite holds it exclusively from reading a file to replacing it, so an append is either in the
//!   file it reads or made to the replacement, never lost.
//! - A day's file stops growing at [`DAY_CAP_BYTES`] (further events of that day are dropped with a warning).
//! - Writing is best effort: a failure is logged as a warning on stderr and never fails the memory operation.
//! - A store on a shared database keeps the log in its table instead ([`AuditTable`], `cao_audit_log`): one log for
//!   every replica, the same lines, scrubbed by purge in one transaction; the daily cap applies to files only.

use crate::store::Store;
use cao_core::{Scope, TerminalContext};
use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use serde::Serialize;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Longest value (in characters) of any string field of an audit line.
pub const MAX_FIELD_CHARS: usize = 200;

/// Size at which a day's audit file stops growing (the reference's default per-day cap, 100 MiB).
pub const DAY_CAP_BYTES: u64 = 100 * 1024 * 1024;

/// What happened. The wire names are the snake_case variant names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditEvent {
    /// A memory was created or got a new entry (`memory_store`).
    Store,
    /// An agent forgot a memory (`memory_forget`).
    Forget,
    /// An operator deleted one memory.
    Delete,
    /// A memory was removed by clearing its scope.
    Clear,
    /// Retention removed an expired memory.
    RetentionRemoval,
    /// An operator purged a memory: its file, row and the text of every version in the journal.
    Purge,
    /// `cao memory heal --apply` changed a memory (the line names the action and carries what it removed).
    Heal,
    /// `cao memory compact` replaced a memory's current content with a consolidated article (the line carries the
    /// previous content).
    Compact,
}

impl AuditEvent {
    /// The wire name (`store`, `forget`, `delete`, `clear`, `retention_removal`, `purge`, `heal`, `compact`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Store => "store",
            Self::Forget => "forget",
            Self::Delete => "delete",
            Self::Clear => "clear",
            Self::RetentionRemoval => "retention_removal",
            Self::Purge => "purge",
            Self::Heal => "heal",
            Self::Compact => "compact",
        }
    }
}

/// One audit record (borrowed; rendered by [`AuditRecord::line`]).
#[derive(Debug, Clone, Copy)]
pub struct AuditRecord<'a> {
    /// When it happened (the service clock).
    pub ts: DateTime<Utc>,
    /// What happened.
    pub event: AuditEvent,
    /// The memory key.
    pub key: &'a str,
    /// The memory's scope.
    pub scope: Scope,
    /// The memory's scope id (project id, session name, agent profile); `None` for global and federated.
    pub scope_id: Option<&'a str>,
    /// Who did it: see [`actor_of`].
    pub actor: &'a str,
    /// A short result word (`created`, `updated`, `deleted`, `absent`, `expired`).
    pub outcome: &'a str,
}

#[derive(Serialize)]
struct Line {
    ts: String,
    event: &'static str,
    key: String,
    scope: &'static str,
    scope_id: Option<String>,
    actor: String,
    outcome: String,
}

impl AuditRecord<'_> {
    /// The record as one JSON line ending with `\n`, every string field bounded by [`MAX_FIELD_CHARS`].
    pub fn line(&self) -> String {
        let line = Line {
            ts: self.ts.to_rfc3339_opts(SecondsFormat::Millis, true),
            event: self.event.as_str(),
            key: bounded(self.key),
            scope: self.scope.as_str(),
            scope_id: self.scope_id.map(bounded),
            actor: bounded(self.actor),
            outcome: bounded(self.outcome),
        };
        // Serialising plain strings cannot fail; fall back to a minimal line rather than panic.
        let mut s = serde_json::to_string(&line).unwrap_or_else(|_| format!("{{\"event\":\"{}\"}}", line.event));
        s.push('\n');
        s
    }
}

/// Who acted, as recorded in the log: the terminal id, else the agent profile, else `operator` (CLI and other
/// callers without a terminal).
pub fn actor_of(ctx: &TerminalContext) -> &str {
    ctx.terminal_id
        .as_deref()
        .filter(|s| !s.is_empty())
        .or(ctx.agent_profile.as_deref().filter(|s| !s.is_empty()))
        .unwrap_or("operator")
}

/// `s` cut to [`MAX_FIELD_CHARS`] characters (the last one `…` when cut).
pub fn bounded(s: &str) -> String {
    if s.chars().count() <= MAX_FIELD_CHARS {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(MAX_FIELD_CHARS - 1).collect();
    out.push('…');
    out
}

/// Where the audit lines of a store whose memories are not files go: the backend's table (`cao_audit_log` of a
/// PostgreSQL store), shared by every process and replica working on that store.
pub trait AuditTable: Send + Sync + std::fmt::Debug {
    /// Append one rendered line (ending with `\n`) of the UTC day `day` (`YYYY-MM-DD`).
    ///
    /// Errors: the backend's.
    fn append(&self, day: &str, line: &str) -> Result<(), crate::StoreError>;
    /// Every line, oldest first, with its day.
    ///
    /// Errors: the backend's.
    fn lines(&self) -> Result<Vec<(String, String)>, crate::StoreError>;
    /// Replace each line for which `edit` returns a new text, in one transaction; how many changed.
    ///
    /// Errors: the backend's (nothing changed).
    fn rewrite(&self, edit: &dyn Fn(&str) -> Option<String>) -> Result<u64, crate::StoreError>;
}

/// The audit log of one store: daily files under the memory home, or the store's [`AuditTable`].
#[derive(Debug, Clone)]
pub struct AuditLog {
    dir: PathBuf,
    table: Option<std::sync::Arc<dyn AuditTable>>,
}

impl AuditLog {
    /// The log under `memory_dir` (`<home>/memory`): files go to `memory_dir/logs/`. No I/O.
    pub fn new(memory_dir: &Path) -> Self {
        Self {
            dir: memory_dir.join("logs"),
            table: None,
        }
    }

    /// The log kept in `table` (a shared database's) instead of files; `memory_dir` is only named in messages.
    pub fn in_table(memory_dir: &Path, table: std::sync::Arc<dyn AuditTable>) -> Self {
        Self {
            dir: memory_dir.join("logs"),
            table: Some(table),
        }
    }

    /// Every line of the log by UTC day (`YYYY-MM-DD`), days in order, lines oldest first (with their `\n`).
    ///
    /// Errors: a daily file or the table cannot be read; the directory is a symlink.
    pub fn days(&self) -> io::Result<Vec<(String, Vec<String>)>> {
        let mut days: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
        if let Some(table) = &self.table {
            for (day, line) in table.lines().map_err(io::Error::other)? {
                days.entry(day).or_default().push(line);
            }
            return Ok(days.into_iter().collect());
        }
        if !self.dir_exists()? {
            return Ok(Vec::new());
        }
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(day) = name
                .to_str()
                .and_then(|n| n.strip_prefix("audit-"))
                .and_then(|n| n.strip_suffix(".jsonl"))
            else {
                continue;
            };
            if !entry.file_type()?.is_file() {
                continue;
            }
            let text = std::fs::read_to_string(entry.path())?;
            days.insert(day.to_owned(), text.split_inclusive('\n').map(str::to_owned).collect());
        }
        Ok(days.into_iter().collect())
    }

    /// The directory holding the daily files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of one UTC day: `logs/audit-YYYY-MM-DD.jsonl`.
    pub fn path_for(&self, day: NaiveDate) -> PathBuf {
        self.dir.join(format!("audit-{}.jsonl", day.format("%Y-%m-%d")))
    }

    /// The lock file of the log: `memory/.audit.lock`, beside `logs/`. Appenders hold it shared, [`AuditLog::scrub`]
    /// exclusively.
    pub fn lock_path(&self) -> PathBuf {
        self.dir.parent().unwrap_or(&self.dir).join(".audit.lock")
    }

    /// Erase the text a purged memory left in the log: in every line whose `key`, `scope` and `scope_id` are the
    /// memory's, each text-bearing field ([`TEXT_FIELDS`]: a heal line's `removed` and `claim`, a compact line's
    /// `previous`) is replaced by [`PURGED_MARKER`]; the line itself (event, time, actor, outcome) stays, and so
    /// does its field order. Every other line is kept byte for byte. Each daily file that changes is replaced
    /// atomically ([`cao_core::fs::atomic_write_with`], fsynced) while the exclusive log lock is held, so appends
    /// from other threads and processes (which hold it shared) wait and are never lost. Returns how many lines
    /// were scrubbed; no log directory means 0.
    ///
    /// Errors: the directory or a daily file is a symlink or not what it should be; the lock, a read or a write
    /// failed (files replaced before the failure stay scrubbed).
    pub fn scrub(&self, scope: Scope, scope_id: Option<&str>, key: &str) -> io::Result<u64> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        if let Some(table) = &self.table {
            return table
                .rewrite(&|line| scrub_line(line, scope, scope_id, key))
                .map_err(io::Error::other);
        }
        if !self.dir_exists()? {
            return Ok(0);
        }
        let _exclusive = cao_core::fs::lock_exclusive(&self.lock_path())?;
        let mut scrubbed = 0;
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if !(name.starts_with("audit-") && name.ends_with(".jsonl") && entry.file_type()?.is_file()) {
                continue;
            }
            let path = entry.path();
            let mut text = String::new();
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&path)
                .and_then(|mut f| f.read_to_string(&mut text))
                .map_err(|e| io::Error::new(e.kind(), format!("reading {}: {e}", path.display())))?;
            let mut out = String::with_capacity(text.len());
            let mut changed = 0;
            for line in text.split_inclusive('\n') {
                match scrub_line(line, scope, scope_id, key) {
                    Some(new) => {
                        out.push_str(&new);
                        changed += 1;
                    }
                    None => out.push_str(line),
                }
            }
            if changed > 0 {
                cao_core::fs::atomic_write_with(&path, out.as_bytes(), cao_core::fs::WriteOptions::private())
                    .map_err(|e| io::Error::new(e.kind(), format!("rewriting {}: {e}", path.display())))?;
                scrubbed += changed;
            }
        }
        Ok(scrubbed)
    }

    /// Append `record` to the file of its UTC day, in one write.
    ///
    /// Errors (the caller logs them; see [`AuditLog::record`]): the directory is a symlink or cannot be
    /// created; the file is a symlink (`ELOOP` from `O_NOFOLLOW`), not a regular file, or readable by group or
    /// others; the day's file reached [`DAY_CAP_BYTES`]; the write failed or was short.
    pub fn append(&self, record: &AuditRecord<'_>) -> io::Result<()> {
        self.append_line(record.ts, &record.line())
    }

    /// Whether the log directory exists: `Ok(false)` when it is missing.
    ///
    /// Errors: it is a symlink or not a directory (symlinks are not followed); the I/O error of looking.
    fn dir_exists(&self) -> io::Result<bool> {
        match std::fs::symlink_metadata(&self.dir) {
            Ok(m) if m.file_type().is_symlink() || !m.is_dir() => Err(io::Error::other(format!(
                "{} is not a directory (symlinks are not followed)",
                self.dir.display()
            ))),
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Append one rendered line (ending with `\n`) to the file of `ts`'s UTC day, with the checks of
    /// [`AuditLog::append`].
    pub fn append_line(&self, ts: DateTime<Utc>, line: &str) -> io::Result<()> {
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        if let Some(table) = &self.table {
            let day = ts.date_naive().format("%Y-%m-%d").to_string();
            return table.append(&day, line).map_err(io::Error::other);
        }
        if !self.dir_exists()? {
            cao_core::fs::create_private_dir_all(&self.dir)?;
        }
        // Appenders share the lock; a purge's rewrite takes it exclusively, so no line appended meanwhile is lost.
        let _shared = cao_core::fs::lock_shared(&self.lock_path())?;
        let path = self.path_for(ts.date_naive());
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("opening {}: {e}", path.display())))?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::other(format!("{} is not a regular file", path.display())));
        }
        if meta.mode() & 0o077 != 0 {
            return Err(io::Error::other(format!(
                "{} has mode {:o}; expected 600",
                path.display(),
                meta.mode() & 0o7777
            )));
        }
        if meta.len() >= DAY_CAP_BYTES {
            return Err(io::Error::other(format!(
                "{} reached the daily cap of {DAY_CAP_BYTES} bytes; event dropped",
                path.display()
            )));
        }
        let n = file.write(line.as_bytes())?;
        if n != line.len() {
            return Err(io::Error::other(format!(
                "short write to {} ({n} of {} bytes)",
                path.display(),
                line.len()
            )));
        }
        Ok(())
    }

    /// [`AuditLog::append`], with a failure logged as a warning instead of returned (the memory operation it
    /// describes has already happened and must not fail because of its audit line).
    pub fn record(&self, record: &AuditRecord<'_>) {
        if let Err(e) = self.append(record) {
            tracing::warn!(
                error = %e,
                event = record.event.as_str(),
                "could not write the audit log line; the operation itself succeeded"
            );
        }
    }
}

/// What replaces a purged memory's text in its audit lines ([`AuditLog::scrub`]).
pub const PURGED_MARKER: &str = "[purged]";

/// The fields of an audit line that can carry a memory's text: `removed` and `claim` (heal lines) and `previous`
/// (compact lines).
pub const TEXT_FIELDS: [&str; 3] = ["removed", "claim", "previous"];

/// A JSON object whose members keep their order (serde_json's own map sorts them).
struct OrderedObject(Vec<(String, serde_json::Value)>);

impl<'de> serde::Deserialize<'de> for OrderedObject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = OrderedObject;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<OrderedObject, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, serde_json::Value>()? {
                    members.push(member);
                }
                Ok(OrderedObject(members))
            }
        }
        d.deserialize_map(V)
    }
}

impl Serialize for OrderedObject {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// `line` (ending with `\n` or not) with its text fields replaced by [`PURGED_MARKER`] when it is about the memory
/// `key` of `scope`/`scope_id` and carries text; `None` when it stays as it is (another memory, no text, already
/// scrubbed, or not a JSON object).
fn scrub_line(line: &str, scope: Scope, scope_id: Option<&str>, key: &str) -> Option<String> {
    let body = line.strip_suffix('\n').unwrap_or(line);
    if !TEXT_FIELDS.iter().any(|f| body.contains(&format!("\"{f}\""))) {
        return None;
    }
    let mut obj: OrderedObject = serde_json::from_str(body).ok()?;
    let field = |name: &str| obj.0.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    let same = field("key").and_then(|v| v.as_str()) == Some(key)
        && field("scope").and_then(|v| v.as_str()) == Some(scope.as_str())
        && field("scope_id").and_then(|v| v.as_str()) == scope_id;
    if !same {
        return None;
    }
    let mut changed = false;
    for (k, v) in &mut obj.0 {
        if TEXT_FIELDS.contains(&k.as_str()) && v.as_str() != Some(PURGED_MARKER) {
            *v = serde_json::Value::String(PURGED_MARKER.to_owned());
            changed = true;
        }
    }
    if !changed {
        return None;
    }
    let mut out = serde_json::to_string(&obj).ok()?;
    if line.ends_with('\n') {
        out.push('\n');
    }
    Some(out)
}

/// Most bytes of a stripped paragraph kept in a `heal` line's `removed` field (spec/reference-facts.md "Heal").
pub const MAX_REMOVED_PARAGRAPH_BYTES: usize = 2048;

/// One applied heal action, as an audit line (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct HealAuditRecord<'a> {
    /// When it happened (the service clock).
    pub ts: DateTime<Utc>,
    /// The memory key.
    pub key: &'a str,
    /// The memory's scope.
    pub scope: Scope,
    /// The memory's scope id.
    pub scope_id: Option<&'a str>,
    /// Who ran heal (see [`actor_of`]).
    pub actor: &'a str,
    /// The action (`delete_file`, `delete_row`, `delete_memory`, `strip_paragraph`, `drop_related_key`,
    /// `reset_access_count`, `refresh_index_md`).
    pub action: &'a str,
    /// The finding's issue type.
    pub issue_type: &'a str,
    /// The stale claim or related key the action is about.
    pub claim: Option<&'a str>,
    /// What the action removed (redacted; see the module docs).
    pub removed: Option<&'a str>,
}

#[derive(Serialize)]
struct HealLine {
    ts: String,
    event: &'static str,
    key: String,
    scope: &'static str,
    scope_id: Option<String>,
    actor: String,
    outcome: String,
    issue_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    claim: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    removed: Option<String>,
}

impl HealAuditRecord<'_> {
    /// The record as one JSON line ending with `\n` (`outcome` = the action).
    pub fn line(&self) -> String {
        let line = HealLine {
            ts: self.ts.to_rfc3339_opts(SecondsFormat::Millis, true),
            event: AuditEvent::Heal.as_str(),
            key: bounded(self.key),
            scope: self.scope.as_str(),
            scope_id: self.scope_id.map(bounded),
            actor: bounded(self.actor),
            outcome: bounded(self.action),
            issue_type: bounded(self.issue_type),
            claim: self.claim.map(bounded),
            removed: self.removed.map(cao_core::secret::redact),
        };
        let mut s = serde_json::to_string(&line).unwrap_or_else(|_| "{\"event\":\"heal\"}".to_owned());
        s.push('\n');
        s
    }
}

/// Most bytes of the previous content kept in a `compact` line's `previous` field (the memory content limit).
pub const MAX_PREVIOUS_BYTES: usize = cao_wiki::MAX_CONTENT_BYTES;

/// One compacted topic, as an audit line (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct CompactAuditRecord<'a> {
    /// When it happened (the service clock).
    pub ts: DateTime<Utc>,
    /// The memory key.
    pub key: &'a str,
    /// The memory's scope.
    pub scope: Scope,
    /// The memory's scope id.
    pub scope_id: Option<&'a str>,
    /// Who ran the compaction (see [`actor_of`]).
    pub actor: &'a str,
    /// The model that wrote the article (`provider/name`).
    pub model: &'a str,
    /// The content before the compaction (redacted and cut to [`MAX_PREVIOUS_BYTES`] when rendered).
    pub previous: &'a str,
}

#[derive(Serialize)]
struct CompactLine {
    ts: String,
    event: &'static str,
    key: String,
    scope: &'static str,
    scope_id: Option<String>,
    actor: String,
    outcome: &'static str,
    model: String,
    previous: String,
}

impl CompactAuditRecord<'_> {
    /// The record as one JSON line ending with `\n` (`outcome` = `compacted`).
    pub fn line(&self) -> String {
        let previous = &self.previous[..self.previous.floor_char_boundary(MAX_PREVIOUS_BYTES)];
        let line = CompactLine {
            ts: self.ts.to_rfc3339_opts(SecondsFormat::Millis, true),
            event: AuditEvent::Compact.as_str(),
            key: bounded(self.key),
            scope: self.scope.as_str(),
            scope_id: self.scope_id.map(bounded),
            actor: bounded(self.actor),
            outcome: "compacted",
            model: bounded(self.model),
            previous: cao_core::secret::redact(previous),
        };
        let mut s = serde_json::to_string(&line).unwrap_or_else(|_| "{\"event\":\"compact\"}".to_owned());
        s.push('\n');
        s
    }
}

/// Append one compact line to `store`'s audit log (best effort: a failure is logged as a warning).
pub fn record_compact(store: &Store, record: &CompactAuditRecord<'_>) {
    if let Err(e) = log_of(store).append_line(record.ts, &record.line()) {
        tracing::warn!(error = %e, event = "compact", "could not write the audit log line; the compaction itself succeeded");
    }
}

/// Append one heal line to `store`'s audit log (best effort: a failure is logged as a warning).
pub fn record_heal(store: &Store, record: &HealAuditRecord<'_>) {
    if let Err(e) = log_of(store).append_line(record.ts, &record.line()) {
        tracing::warn!(error = %e, event = "heal", "could not write the audit log line; the operation itself succeeded");
    }
}

/// The audit log of `store`: its backend's table when it keeps one (a shared database), else the daily files of its
/// home (`<home>/memory/logs/`). No I/O.
pub fn log_of(store: &Store) -> AuditLog {
    match store.audit_table() {
        Some(table) => AuditLog::in_table(&store.home().memory_dir(), table),
        None => AuditLog::new(&store.home().memory_dir()),
    }
}

/// Record one event at `store`'s clock time (best effort; see [`AuditLog::record`]).
pub fn record(
    store: &Store,
    event: AuditEvent,
    actor: &str,
    scope: Scope,
    scope_id: Option<&str>,
    key: &str,
    outcome: &str,
) {
    log_of(store).record(&AuditRecord {
        ts: store.now(),
        event,
        key,
        scope,
        scope_id,
        actor,
        outcome,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn rec<'a>(key: &'a str, actor: &'a str) -> AuditRecord<'a> {
        AuditRecord {
            ts: Utc.with_ymd_and_hms(2026, 4, 16, 10, 30, 0).single().expect("valid"),
            event: AuditEvent::Store,
            key,
            scope: Scope::Session,
            scope_id: Some("sess-1"),
            actor,
            outcome: "created",
        }
    }

    #[test]
    fn line_is_one_json_object_with_the_documented_fields() {
        let line = rec("k-1", "t-1").line();
        assert!(line.ends_with('\n') && line.matches('\n').count() == 1, "{line:?}");
        let v: serde_json::Value = serde_json::from_str(&line).expect("json");
        assert_eq!(
            v,
            serde_json::json!({"ts": "2026-04-16T10:30:00.000Z", "event": "store", "key": "k-1",
                "scope": "session", "scope_id": "sess-1", "actor": "t-1", "outcome": "created"})
        );
    }

    #[test]
    fn fields_are_bounded_and_control_characters_cannot_break_the_line() {
        let long = "x".repeat(10_000);
        let hostile = "a\nb\r\u{1b}[2J\u{0}c";
        let line = rec(&long, hostile).line();
        assert_eq!(line.matches('\n').count(), 1, "{line:?}");
        let v: serde_json::Value = serde_json::from_str(&line).expect("json");
        let key = v["key"].as_str().expect("key");
        assert_eq!(key.chars().count(), MAX_FIELD_CHARS);
        assert!(key.ends_with('…'));
        assert_eq!(v["actor"].as_str(), Some(hostile), "escaped, not lost");
        assert!(line.len() < 2048, "{} bytes", line.len());
    }

    #[test]
    fn actor_prefers_terminal_then_agent_then_operator() {
        let mut ctx = TerminalContext::default();
        assert_eq!(actor_of(&ctx), "operator");
        ctx.agent_profile = Some("reviewer".into());
        assert_eq!(actor_of(&ctx), "reviewer");
        ctx.terminal_id = Some("t-9".into());
        assert_eq!(actor_of(&ctx), "t-9");
    }

    #[test]
    fn compact_lines_redact_and_bound_the_previous_text() {
        let previous = format!("old AKIAABCDEFGHIJKLMNOP text {}", "z".repeat(MAX_PREVIOUS_BYTES));
        let rec = CompactAuditRecord {
            ts: Utc.with_ymd_and_hms(2026, 4, 16, 10, 30, 0).single().expect("ts"),
            key: "k",
            scope: Scope::Project,
            scope_id: Some("p"),
            actor: "operator",
            model: "openai/m",
            previous: &previous,
        };
        let line = rec.line();
        assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
        let v: serde_json::Value = serde_json::from_str(&line).expect("json");
        assert_eq!(v["event"], "compact");
        assert_eq!(v["outcome"], "compacted");
        let kept = v["previous"].as_str().expect("previous");
        assert!(
            kept.starts_with("old [REDACTED:aws_access_key] text"),
            "{}",
            &kept[..40]
        );
        assert!(!line.contains("AKIAABCDEFGHIJKLMNOP"));
        assert!(kept.len() <= MAX_PREVIOUS_BYTES + 40);
    }

    #[test]
    fn scrub_keeps_every_line_and_every_concurrent_append() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = AuditLog::new(&dir.path().join("memory"));
        let ts = Utc.with_ymd_and_hms(2026, 4, 16, 10, 30, 0).single().expect("ts");
        let compact = |key: &'static str, scope_id: Option<&'static str>| CompactAuditRecord {
            ts,
            key,
            scope: Scope::Project,
            scope_id,
            actor: "operator",
            model: "command:m",
            previous: "the phrase purplezebra4411",
        };
        log.append_line(ts, &compact("leaked", Some("p")).line())
            .expect("append");
        log.append_line(ts, &compact("leaked", Some("other")).line())
            .expect("append");
        log.append_line(ts, &compact("kept", Some("p")).line()).expect("append");
        let writers: Vec<_> = (0..4)
            .map(|t| {
                let log = log.clone();
                std::thread::spawn(move || {
                    for i in 0..100 {
                        let actor = format!("t{t}-{i}");
                        log.append(&AuditRecord {
                            actor: &actor,
                            ..rec("leaked", "x")
                        })
                        .expect("append");
                    }
                })
            })
            .collect();
        let mut scrubbed = 0;
        for _ in 0..20 {
            scrubbed += log.scrub(Scope::Project, Some("p"), "leaked").expect("scrub");
        }
        for w in writers {
            w.join().expect("writer");
        }
        assert_eq!(scrubbed, 1, "one line about the memory carried text, once");
        let text = std::fs::read_to_string(log.path_for(ts.date_naive())).expect("read");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is JSON"))
            .collect();
        assert_eq!(lines.len(), 3 + 400, "no line lost, appended or scrubbed");
        assert_eq!(lines[0]["previous"], PURGED_MARKER);
        assert_eq!(
            text.lines()
                .next()
                .map(|l| l.find("\"previous\"") > l.find("\"model\"")),
            Some(true),
            "fields keep their order"
        );
        assert_eq!(
            text.matches("purplezebra4411").count(),
            2,
            "another scope id and another key keep theirs"
        );
        assert_eq!(
            log.scrub(Scope::Project, Some("p"), "leaked").expect("again"),
            0,
            "nothing left"
        );
    }

    #[test]
    fn event_wire_names() {
        for (e, n) in [
            (AuditEvent::Store, "store"),
            (AuditEvent::Forget, "forget"),
            (AuditEvent::Delete, "delete"),
            (AuditEvent::Clear, "clear"),
            (AuditEvent::RetentionRemoval, "retention_removal"),
            (AuditEvent::Heal, "heal"),
            (AuditEvent::Compact, "compact"),
        ] {
            assert_eq!(e.as_str(), n);
            assert_eq!(serde_json::to_value(e).expect("json"), serde_json::json!(n));
        }
    }
}
