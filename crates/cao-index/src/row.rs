//! The `memory_metadata` row as this crate exposes it, and the datetime text format shared with the reference.

use cao_core::fs::FileStamp;
use cao_core::{Container, Key, MemoryRef, MemoryType, Scope, SourceKind};
use chrono::{DateTime, NaiveDateTime, TimeDelta, Utc};
use rusqlite::types::{Value, ValueRef};

/// One memory's metadata row (`memory_metadata`, shared with the reference implementation) plus our extra columns
/// `content`, `entry_count` and the topic file's stamp (`file_size`, `file_ctime_ns`, `file_ino`).
///
/// Identity: `(key, scope, scope_id, source_kind)`; `scope_id` is `None` for global and federated.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryRow {
    /// Row id (a uuid4 string). Kept across upserts of the same identity.
    pub id: String,
    /// The memory key (`^[a-z0-9-]{1,60}$`).
    pub key: Key,
    /// Label of the memory.
    pub memory_type: MemoryType,
    /// Where the memory lives.
    pub scope: Scope,
    /// Project id, session name or agent profile; `None` for global and federated.
    pub scope_id: Option<String>,
    /// Backend discriminator; always [`SourceKind::Native`] for rows this crate reads or writes.
    pub source_kind: SourceKind,
    /// Absolute path of the wiki topic file (the reference stores it absolute).
    pub file_path: String,
    /// Normalised comma-separated tags (`""` when none).
    pub tags: String,
    /// Provider of the terminal that stored it, when known.
    pub source_provider: Option<String>,
    /// Terminal id that stored it, when known.
    pub source_terminal_id: Option<String>,
    /// `len(content) / 4` as the reference computes it; a NULL column reads as 0.
    pub token_estimate: i64,
    /// First store (kept across upserts). A NULL or unreadable column reads as the Unix epoch.
    pub created_at: DateTime<Utc>,
    /// Last store. A NULL or unreadable column reads as the Unix epoch.
    pub updated_at: DateTime<Utc>,
    /// Times the memory was returned by recall (at most once per 60 s); kept across upserts.
    pub access_count: i64,
    /// Last counted access; kept across upserts. Stored with second precision, as the reference does.
    pub last_accessed_at: Option<DateTime<Utc>>,
    /// Last compaction; an upsert with `None` keeps the stored value.
    pub last_compiled_at: Option<DateTime<Utc>>,
    /// Legacy related-keys csv (< 1024 bytes); an upsert with `None` keeps the stored value.
    pub related_keys: Option<String>,
    /// Current content of the memory (the text after the newest entry heading). `""` for rows that only the
    /// reference has written.
    pub content: String,
    /// Number of `## <ts>` entries in the topic file (1 for rows that only the reference has written).
    pub entry_count: i64,
    /// The topic file's [`FileStamp`] when this row was last brought in line with it (written, repaired or picked
    /// up); `None` when unknown (rows the reference wrote, rows from before the columns existed). Always overwritten by
    /// an upsert.
    pub file_stamp: Option<FileStamp>,
}

impl MemoryRow {
    /// A fresh native row: `access_count` 0, no access/compile time, no related keys, `entry_count` 1,
    /// `created_at = updated_at = now`, `token_estimate = len(content) / 4` (bytes, as the reference's `len` on
    /// ASCII text).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: impl Into<String>,
        scope: Scope,
        scope_id: Option<String>,
        key: Key,
        memory_type: MemoryType,
        file_path: impl Into<String>,
        tags: impl Into<String>,
        content: impl Into<String>,
        now: DateTime<Utc>,
    ) -> MemoryRow {
        let content = content.into();
        MemoryRow {
            id: id.into(),
            key,
            memory_type,
            scope,
            scope_id,
            source_kind: SourceKind::Native,
            file_path: file_path.into(),
            tags: tags.into(),
            source_provider: None,
            source_terminal_id: None,
            token_estimate: token_estimate(&content),
            created_at: now,
            updated_at: now,
            access_count: 0,
            last_accessed_at: None,
            last_compiled_at: None,
            related_keys: None,
            content,
            entry_count: 1,
            file_stamp: None,
        }
    }

    /// The wiki container this row's topic file lives in ([`Container::of`]).
    pub fn container(&self) -> Container {
        Container::of(self.scope, self.scope_id.as_deref())
    }

    /// The row's memory identity `(scope, scope_id, key)` (cloned).
    pub fn memory_ref(&self) -> MemoryRef {
        MemoryRef::new(self.scope, self.scope_id.clone(), self.key.clone())
    }
}

/// One native row as [`Index::file_stamps_in`](crate::Index::file_stamps_in) and
/// [`Index::file_stamps_rotation`](crate::Index::file_stamps_rotation) read it: identity, topic file path and the
/// file's stamp when the row was last brought in line with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowStamp {
    /// The memory.
    pub memory: MemoryRef,
    /// The stored `file_path` column.
    pub file_path: String,
    /// The stored stamp; `None` when unknown.
    pub stamp: Option<FileStamp>,
}

/// `len(content) // 4`, the reference's `token_estimate` (Python `len` counts code points).
pub fn token_estimate(content: &str) -> i64 {
    i64::try_from(content.chars().count() / 4).unwrap_or(i64::MAX)
}

/// Format a timestamp as the reference's SQLAlchemy `DateTime` text on SQLite: `YYYY-MM-DD HH:MM:SS.ffffff`
/// (naive UTC, space separator, always six fractional digits).
pub fn format_db_ts(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S%.6f").to_string()
}

/// Format a timestamp as SQLite's `datetime('now')` does (the reference's `last_accessed_at`):
/// `YYYY-MM-DD HH:MM:SS`.
pub fn format_db_ts_secs(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S").to_string()
}

/// Parse a stored datetime: `YYYY-MM-DD HH:MM:SS[.f…]` or with `T`, optionally followed by `Z` or a `±HH:MM`
/// offset (converted to UTC). A value without an offset is UTC. `None` for anything else.
pub fn parse_db_ts(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    let s = s.strip_suffix('Z').unwrap_or(s);
    let normalised: String = s
        .chars()
        .enumerate()
        .map(|(i, c)| if i == 10 && c == 'T' { ' ' } else { c })
        .collect();
    if let Ok(naive) = NaiveDateTime::parse_from_str(&normalised, "%Y-%m-%d %H:%M:%S%.f") {
        return Some(naive.and_utc());
    }
    if let Ok(naive) = NaiveDateTime::parse_from_str(&normalised, "%Y-%m-%d %H:%M") {
        return Some(naive.and_utc());
    }
    DateTime::parse_from_str(&normalised, "%Y-%m-%d %H:%M:%S%.f%:z")
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Columns selected by every row query, in [`decode_row`] order (`m` is the table alias).
pub(crate) const ROW_COLUMNS: &str = "m.id, m.\"key\", m.memory_type, m.scope, m.scope_id, m.source_kind, m.file_path, \
     m.tags, m.source_provider, m.source_terminal_id, m.token_estimate, m.created_at, m.updated_at, m.access_count, \
     m.last_accessed_at, m.last_compiled_at, m.related_keys, m.content, m.entry_count, m.file_size, m.file_ctime_ns, \
     m.file_ino";

/// Why one stored row cannot be represented as a [`MemoryRow`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidRow {
    /// The row's `id` column.
    pub id: String,
    /// What is wrong (names the column and its value).
    pub reason: String,
}

/// The columns of one stored memory row, in the order every backend's `ROW_COLUMNS` selects them (`0` = `id` ...
/// `18` = `entry_count`, then the file stamp's `file_size`, `file_ctime_ns`, `file_ino`), as one backend reads
/// them: text or integer, `None` for NULL (or a column the backend does not keep). [`decode_columns`] checks them,
/// so every backend reads a row by the same rules.
pub trait RowColumns {
    /// The backend's read error.
    type Error;
    /// Column `i` as text. Errors: the backend's.
    fn text(&self, i: usize) -> std::result::Result<Option<String>, Self::Error>;
    /// Column `i` as an integer. Errors: the backend's.
    fn int(&self, i: usize) -> std::result::Result<Option<i64>, Self::Error>;
}

/// Decode one stored row from its columns. `Ok(Err(..))` when the row holds values we cannot represent (unknown
/// scope, type or source kind, invalid key), naming the column and value; missing optional columns take the
/// table's defaults (`source_kind` native, `entry_count` 1, times the Unix epoch).
///
/// Errors: the backend's read errors.
pub fn decode_columns<C: RowColumns + ?Sized>(
    c: &C,
) -> std::result::Result<std::result::Result<MemoryRow, InvalidRow>, C::Error> {
    let text = |i: usize| c.text(i);
    let int = |i: usize| c.int(i);
    let ts = |i: usize| -> std::result::Result<Option<DateTime<Utc>>, C::Error> {
        Ok(text(i)?.as_deref().and_then(parse_db_ts))
    };

    let id = text(0)?.unwrap_or_default();
    let bad = |reason: String| Ok(Err(InvalidRow { id: id.clone(), reason }));
    let key_s = text(1)?.unwrap_or_default();
    let Ok(key) = Key::parse_strict(&key_s) else {
        return bad(format!("key {key_s:?} does not match ^[a-z0-9-]{{1,60}}$"));
    };
    let type_s = text(2)?.unwrap_or_default();
    let Ok(memory_type) = type_s.parse::<MemoryType>() else {
        return bad(format!(
            "memory_type {type_s:?} is not one of project, user, feedback, reference"
        ));
    };
    let scope_s = text(3)?.unwrap_or_default();
    let Ok(scope) = scope_s.parse::<Scope>() else {
        return bad(format!(
            "scope {scope_s:?} is not one of global, project, session, agent, federated"
        ));
    };
    // A NULL column reads as the column default, `native`.
    let source_kind = match text(5)? {
        None => SourceKind::Native,
        Some(k) => match k.parse::<SourceKind>() {
            Ok(k) => k,
            Err(_) => return bad(format!("source_kind {k:?} is not one of native, vault")),
        },
    };
    Ok(Ok(MemoryRow {
        key,
        memory_type,
        scope,
        scope_id: text(4)?,
        source_kind,
        file_path: text(6)?.unwrap_or_default(),
        tags: text(7)?.unwrap_or_default(),
        source_provider: text(8)?,
        source_terminal_id: text(9)?,
        token_estimate: int(10)?.unwrap_or(0),
        created_at: ts(11)?.unwrap_or(DateTime::UNIX_EPOCH),
        updated_at: ts(12)?.unwrap_or(DateTime::UNIX_EPOCH),
        access_count: int(13)?.unwrap_or(0),
        last_accessed_at: ts(14)?,
        last_compiled_at: ts(15)?,
        related_keys: text(16)?,
        content: text(17)?.unwrap_or_default(),
        entry_count: int(18)?.unwrap_or(1),
        file_stamp: match (int(19)?, int(20)?, int(21)?) {
            (Some(size), Some(changed_ns), Some(inode)) => Some(FileStamp {
                size,
                changed_ns,
                inode,
            }),
            _ => None,
        },
        id,
    }))
}

/// The SQLite columns of a row selected with [`ROW_COLUMNS`] from column `base`.
struct SqliteColumns<'r, 's> {
    row: &'r rusqlite::Row<'s>,
    base: usize,
}

impl RowColumns for SqliteColumns<'_, '_> {
    type Error = rusqlite::Error;

    fn text(&self, i: usize) -> rusqlite::Result<Option<String>> {
        Ok(value_text(self.row.get_ref(self.base + i)?))
    }

    fn int(&self, i: usize) -> rusqlite::Result<Option<i64>> {
        Ok(value_int(self.row.get_ref(self.base + i)?))
    }
}

/// Decode a row selected with [`ROW_COLUMNS`] starting at column `base` ([`decode_columns`]).
/// `Ok(Err(..))` when the row holds values we cannot represent (unknown scope/type, invalid key).
pub(crate) fn decode_row(row: &rusqlite::Row<'_>, base: usize) -> rusqlite::Result<Result<MemoryRow, InvalidRow>> {
    decode_columns(&SqliteColumns { row, base })
}

fn value_text(v: ValueRef<'_>) -> Option<String> {
    match v {
        ValueRef::Null => None,
        ValueRef::Text(b) | ValueRef::Blob(b) => Some(String::from_utf8_lossy(b).into_owned()),
        ValueRef::Integer(i) => Some(i.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
    }
}

fn value_int(v: ValueRef<'_>) -> Option<i64> {
    match v {
        ValueRef::Null | ValueRef::Blob(_) => None,
        ValueRef::Integer(i) => Some(i),
        // Saturating float-to-int conversion is the intended lenient reading of a REAL column.
        ValueRef::Real(f) => Some(f as i64),
        ValueRef::Text(b) => std::str::from_utf8(b).ok().and_then(|s| s.trim().parse().ok()),
    }
}

/// Column `i` of `row` read as a stored datetime ([`parse_db_ts`]); NULL or unreadable reads as the Unix epoch,
/// as in [`decode_row`].
pub(crate) fn ts_column(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<DateTime<Utc>> {
    Ok(value_text(row.get_ref(i)?)
        .as_deref()
        .and_then(parse_db_ts)
        .unwrap_or(DateTime::UNIX_EPOCH))
}

/// An optional timestamp as a bindable value in the given format.
pub(crate) fn opt_ts(t: Option<DateTime<Utc>>, fmt: fn(DateTime<Utc>) -> String) -> Value {
    t.map_or(Value::Null, |t| Value::Text(fmt(t)))
}

/// Minimum time between two counted accesses of one row (spec/reference-facts.md "Ranking": at most once per 60 s).
pub const ACCESS_MIN_INTERVAL: TimeDelta = TimeDelta::seconds(60);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_reference_datetime_shape() {
        let want = parse_db_ts("2026-11-29 18:36:51.593405").expect("reference format");
        assert_eq!(format_db_ts(want), "2026-11-29 18:36:51.593405");
        assert_eq!(parse_db_ts("2026-11-29T18:36:51.593405+00:00"), Some(want));
        assert_eq!(parse_db_ts("2026-11-29 20:36:51.593405+02:00"), Some(want));
        assert_eq!(parse_db_ts("2026-11-29T18:36:51.593405Z"), Some(want));
        let secs = parse_db_ts("2026-11-29 18:38:33").expect("datetime('now') format");
        assert_eq!(format_db_ts_secs(secs), "2026-11-29 18:38:33");
        assert_eq!(format_db_ts(secs), "2026-11-29 18:38:33.000000");
        assert_eq!(parse_db_ts("yesterday"), None);
    }

    #[test]
    fn rows_live_in_their_wiki_container() {
        let at = parse_db_ts("2026-01-01 00:00:00").expect("timestamp");
        let key = Key::parse_strict("k").expect("key");
        let row = |scope, id: Option<&str>| {
            MemoryRow::new(
                "i",
                scope,
                id.map(str::to_owned),
                key.clone(),
                MemoryType::Project,
                "/f",
                "",
                "c",
                at,
            )
        };
        assert_eq!(row(Scope::Session, Some("s1")).container(), "global");
        assert_eq!(row(Scope::Agent, Some("rev")).container(), "global");
        assert_eq!(row(Scope::Project, Some("p1")).container(), "p1");
        assert_eq!(row(Scope::Federated, None).container(), "federated");
        assert_eq!(row(Scope::Project, Some("p1")).memory_ref().to_string(), "project/p1/k");
    }
}
