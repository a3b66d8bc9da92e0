//! Shared helpers of the integration tests.
#![allow(dead_code)]

use cao_core::{Key, MemoryType, Scope};
use cao_index::{Index, MemoryRow};
use chrono::{DateTime, TimeDelta, Utc};
use std::path::PathBuf;

/// A temp dir holding `db/cli-agent-orchestrator.db`, and the index opened on it.
pub(crate) struct TestDb {
    pub dir: tempfile::TempDir,
    pub index: Index,
}

impl TestDb {
    pub(crate) fn new() -> TestDb {
        let dir = tempfile::tempdir().expect("temp dir");
        let index = Index::open(&db_path(&dir)).expect("open index");
        TestDb { dir, index }
    }

    pub(crate) fn path(&self) -> PathBuf {
        db_path(&self.dir)
    }
}

pub(crate) fn db_path(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("db").join(cao_index::DB_FILE_NAME)
}

pub(crate) fn t0() -> DateTime<Utc> {
    cao_index::parse_db_ts("2026-03-01 12:00:00").expect("valid time")
}

/// `t0 + secs`.
pub(crate) fn at(secs: i64) -> DateTime<Utc> {
    t0() + TimeDelta::seconds(secs)
}

pub(crate) fn key(k: &str) -> Key {
    Key::parse_strict(k).expect("valid key")
}

/// A row of `scope`/`scope_id` with `content`, stored at `t0 + secs`.
pub(crate) fn row(k: &str, scope: Scope, scope_id: Option<&str>, content: &str, secs: i64) -> MemoryRow {
    MemoryRow::new(
        format!("id-{}-{}-{k}", scope.as_str(), scope_id.unwrap_or("")),
        scope,
        scope_id.map(str::to_owned),
        key(k),
        MemoryType::Project,
        format!("/home/wiki/{k}.md"),
        "",
        content,
        at(secs),
    )
}

pub(crate) fn global(k: &str, content: &str, secs: i64) -> MemoryRow {
    row(k, Scope::Global, None, content, secs)
}

pub(crate) fn keys(rows: &[MemoryRow]) -> Vec<&str> {
    rows.iter().map(|r| r.key.as_str()).collect()
}
