//! Session snapshots and the `# Memory updated` reminder (spec 001 "When the view changes": the view in the system
//! prompt is taken when the session starts and again at each rebuild, and holds still in between; entries written
//! elsewhere reach the model as a reminder listing one row per entry).

use crate::check_container;
use crate::error::{JournalError, Result};
use crate::render::reminder_row;
use crate::tree::Tree;
use crate::view::{View, render};
use cao_store::{JournalWriter, Reads, SnapshotRow, Writes, read_journal, write_journal};
use chrono::{DateTime, Utc};

/// Longest session id accepted, in bytes.
pub const SESSION_ID_MAX_BYTES: usize = 256;

/// A snapshot just taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// N at that moment: the view covers entries `[0, taken_at_entry)`; later entries go to the reminder.
    pub taken_at_entry: u64,
    /// The view taken (also stored, for the inspector's "this session" mode).
    pub view: View,
}

fn check_session(session_id: &str) -> Result<()> {
    if session_id.is_empty() || session_id.len() > SESSION_ID_MAX_BYTES || session_id.chars().any(char::is_control) {
        return Err(JournalError::Invalid(format!(
            "session id must be 1 to {SESSION_ID_MAX_BYTES} bytes without control characters (got {} bytes)",
            session_id.len()
        )));
    }
    Ok(())
}

/// Take the view of `container` for `session_id` and store it (replacing the session's earlier snapshot), in one
/// write transaction so the view and its entry count agree.
///
/// Errors: [`JournalError::Invalid`] for a malformed container or session id (empty, over
/// [`SESSION_ID_MAX_BYTES`], control characters); [`JournalError::Store`]; [`JournalError::Corrupt`].
pub fn take_snapshot(w: &dyn Writes, container: &str, session_id: &str, now: DateTime<Utc>) -> Result<Snapshot> {
    check_container(container)?;
    check_session(session_id)?;
    write_journal(w, |j| {
        let mut tree = Tree::load(j, container)?;
        tree.catch_up()?;
        let view = render(j, container, &tree)?;
        j.snapshot_put(
            container,
            &SnapshotRow {
                session_id: session_id.to_owned(),
                taken_at_entry: view.entries,
                taken_at: now,
                view: view.text.clone(),
            },
        )?;
        Ok(Snapshot {
            taken_at_entry: view.entries,
            view,
        })
    })
}

/// The stored snapshot of `session_id` in `container`, if one was taken.
///
/// Errors: as [`take_snapshot`].
pub fn snapshot(r: &dyn Reads, container: &str, session_id: &str) -> Result<Option<SnapshotRow>> {
    check_container(container)?;
    check_session(session_id)?;
    read_journal(r, |j| Ok(j.snapshot_get(container, session_id)?))
}

/// Leaves out of a reminder the entries a session wrote itself: an entry matches when every field given here
/// equals the entry's writer field.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WriterFilter {
    /// The session's terminal id.
    pub terminal_id: Option<String>,
    /// The session's name or id.
    pub session: Option<String>,
    /// The session's process (an MCP server's own writes).
    pub pid: Option<u32>,
}

impl WriterFilter {
    /// Whether `writer` is the session this filter describes (false when the filter names nothing).
    pub fn matches(&self, writer: &JournalWriter) -> bool {
        if self.terminal_id.is_none() && self.session.is_none() && self.pid.is_none() {
            return false;
        }
        self.terminal_id
            .as_ref()
            .is_none_or(|t| writer.terminal_id.as_ref() == Some(t))
            && self.session.as_ref().is_none_or(|s| writer.session.as_ref() == Some(s))
            && self.pid.is_none_or(|p| writer.pid == Some(p))
    }
}

/// The rows of a `# Memory updated` reminder.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reminder {
    /// One row per entry appended since the snapshot, oldest first: `- <id>+1 note <name>: <first line>` (see
    /// [`crate::render::reminder_row`]); at most the limit asked for.
    pub rows: Vec<String>,
    /// Entries since the snapshot that the rows would list without the limit.
    pub total: u64,
}

/// Most entries [`reminder_rows`] reads past the snapshot (rows beyond it are counted in `total` only up to here).
pub const REMINDER_SCAN_MAX: usize = 10_000;

/// The reminder rows for entries of `container` appended at or after entry `since` (a snapshot's
/// `taken_at_entry`), leaving out those `exclude` matches (the session's own writes), at most `limit` rows.
///
/// Errors: [`JournalError::Invalid`] for a malformed container; [`JournalError::Store`].
pub fn reminder_rows(
    r: &dyn Reads,
    container: &str,
    since: u64,
    exclude: Option<&WriterFilter>,
    limit: usize,
) -> Result<Reminder> {
    check_container(container)?;
    read_journal(r, |j| {
        let mut reminder = Reminder::default();
        for entry in j.entries_from(container, since, REMINDER_SCAN_MAX)? {
            if exclude.is_some_and(|f| f.matches(&entry.writer)) {
                continue;
            }
            reminder.total += 1;
            if reminder.rows.len() < limit {
                reminder.rows.push(reminder_row(&entry));
            }
        }
        Ok(reminder)
    })
}

/// Deliver the `# Memory updated` reminder of `session_id` in `container`: the rows of the entries appended since
/// the session's snapshot that no earlier delivery listed (each entry is listed once; a new snapshot, which folds
/// them into its view, starts over), leaving out those `exclude` matches (the session's own writes), at most
/// `limit` rows; the delivery is recorded in the same write transaction. `None` when the session has no snapshot
/// in `container`.
///
/// Errors: as [`reminder_rows`], and [`JournalError::Invalid`] for a malformed session id.
pub fn deliver_reminder(
    w: &dyn Writes,
    container: &str,
    session_id: &str,
    exclude: Option<&WriterFilter>,
    limit: usize,
) -> Result<Option<Reminder>> {
    check_container(container)?;
    check_session(session_id)?;
    // Most calls find nothing new: answer from a read transaction without taking the write lock.
    let nothing_new = read_journal(w, |j| {
        let Some(delivered) = j.snapshot_reminded_to(container, session_id)? else {
            return Ok::<_, JournalError>(Some(None));
        };
        let Some(snapshot) = j.snapshot_get(container, session_id)? else {
            return Ok(Some(None));
        };
        let since = delivered.max(snapshot.taken_at_entry);
        Ok((j.meta(container)?.entries <= since).then(|| Some(Reminder::default())))
    })?;
    if let Some(answer) = nothing_new {
        return Ok(answer);
    }
    write_journal(w, |j| {
        let Some(delivered) = j.snapshot_reminded_to(container, session_id)? else {
            return Ok(None);
        };
        let Some(snapshot) = j.snapshot_get(container, session_id)? else {
            return Ok(None);
        };
        let since = delivered.max(snapshot.taken_at_entry);
        let entries = j.entries_from(container, since, REMINDER_SCAN_MAX)?;
        let mut reminder = Reminder::default();
        for entry in &entries {
            if exclude.is_some_and(|f| f.matches(&entry.writer)) {
                continue;
            }
            reminder.total += 1;
            if reminder.rows.len() < limit {
                reminder.rows.push(crate::render::view_text(&reminder_row(entry)));
            }
        }
        j.set_snapshot_reminded_to(container, session_id, since + entries.len() as u64)?;
        Ok(Some(reminder))
    })
}

/// Record that `session_id` was given a view of `container` covering entries `[0, taken_at_entry)` whose text is
/// `view` (`""` when it saw none), without rendering one now: a process that showed its session an empty view before
/// the store existed records it once the store exists, so the reminder then lists every entry since. Replaces the
/// session's earlier snapshot.
///
/// Errors: as [`take_snapshot`].
pub fn record_snapshot(
    w: &dyn Writes,
    container: &str,
    session_id: &str,
    taken_at_entry: u64,
    view: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    check_container(container)?;
    check_session(session_id)?;
    write_journal(w, |j| {
        j.snapshot_put(
            container,
            &SnapshotRow {
                session_id: session_id.to_owned(),
                taken_at_entry,
                taken_at: now,
                view: view.to_owned(),
            },
        )?;
        Ok(())
    })
}

/// Heading of the reminder (spec 001 "When the view changes").
pub const REMINDER_HEADING: &str = "# Memory updated";

/// The reminder as the model reads it: [`REMINDER_HEADING`], one row per entry, and a last row counting the
/// entries left out by the limit; `None` when it has no row.
pub fn render_reminder(reminder: &Reminder) -> Option<String> {
    if reminder.total == 0 {
        return None;
    }
    let mut out = String::from(REMINDER_HEADING);
    for row in &reminder.rows {
        out.push('\n');
        out.push_str(row);
    }
    let more = reminder.total.saturating_sub(reminder.rows.len() as u64);
    if more > 0 {
        out.push_str(&format!(
            "\n- ({more} more entries; memory_view shows the live view and memory_zoom(id, 1) reads an entry)"
        ));
    }
    Some(out)
}
