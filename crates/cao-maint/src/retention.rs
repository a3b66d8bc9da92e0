//! Retention: expired memories are removed by `MemoryService::cleanup` (spec 000
//! "Retention").
//!
//! | scope     | kept for                    |
//! |-----------|-----------------------------|
//! | global    | ever                        |
//! | project   | 90 days since last update   |
//! | session   | 14 days since last update   |
//! | agent     | ever                        |
//! | federated | ever                        |
//!
//! Memories of type `user` or `feedback` never expire, whatever their scope.
//!
//! "Last update" is the index's `updated_at`, i.e. the time of the topic's newest entry (every store appends an
//! entry and moves it). Age is counted in whole days, as the reference does: a memory expires when
//! `floor((now - updated_at) / 1 day) > horizon`, so one updated exactly 90 days ago (or 90 days and 23 hours) is
//! kept and one updated 91 days ago is removed. `now` is the service clock.
//!
//! Each expired memory is removed through the same locked path as `forget` (topic file, index row, relationship
//! edges, `index.md` marked dirty) and gets a `retention_removal` audit line. Just before removing, the row is read
//! again and skipped when a store made it current in the meantime; a store that commits between that re-read and
//! the removal's lock can still be removed (the window is one store's duration).

use cao_core::memory_ref::label;
use cao_core::{MemoryType, Scope};
use cao_store::MemoryError;
use cao_store::Store;
use cao_store::audit::{self, AuditEvent};
use cao_store::{ListFilter, MemoryRow, Visibility};
use chrono::{DateTime, Utc};
use serde::Serialize;

/// The actor recorded in the audit log for retention removals.
pub const RETENTION_ACTOR: &str = "retention";

pub use cao_core::retention::{
    PROJECT_RETENTION_DAYS, SESSION_RETENTION_DAYS, age_days, is_expired, is_permanent_type, retention_days,
};

/// One memory that retention removed (or, in a dry run, would remove).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExpiredMemory {
    /// The memory key.
    pub key: String,
    /// Its scope (`project` or `session`).
    pub scope: Scope,
    /// Its scope id (project id or session name).
    pub scope_id: Option<String>,
    /// Its type (never `user` or `feedback`).
    pub memory_type: MemoryType,
    /// Its last update (the newest entry's time); serialised `YYYY-MM-DDTHH:MM:SSZ`.
    #[serde(serialize_with = "cao_core::time::serde_ts")]
    pub updated_at: DateTime<Utc>,
    /// Whole days since `updated_at` at the time of the run.
    pub age_days: i64,
}

/// What one retention run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CleanupReport {
    /// True when nothing was changed (the memories in `removed` would be removed).
    pub dry_run: bool,
    /// Memories of expiring scopes that were examined.
    pub checked: usize,
    /// Expired memories removed (or that would be removed), oldest first.
    pub removed: Vec<ExpiredMemory>,
    /// Expired memories that could not be removed: `scope/scope_id/key: reason`. They are retried next run.
    pub failed: Vec<String>,
}

impl std::fmt::Display for CleanupReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let verb = if self.dry_run { "would remove" } else { "removed" };
        writeln!(
            f,
            "checked {} project/session memories: {verb} {} expired, {} failed",
            self.checked,
            self.removed.len(),
            self.failed.len()
        )?;
        for m in &self.removed {
            writeln!(
                f,
                "  {verb}: {} (type {}, updated {}, {} days old)",
                label(m.scope, m.scope_id.as_deref(), &m.key),
                m.memory_type,
                cao_core::time::format_ts(m.updated_at),
                m.age_days
            )?;
        }
        for item in &self.failed {
            writeln!(f, "  failed: {item}")?;
        }
        Ok(())
    }
}

/// Remove every expired memory (see the module documentation for the table and the day rule); with `dry_run`
/// only report what would be removed: no file, row, `index.md` mark or audit line is written.
///
/// A memory that cannot be removed is reported in [`CleanupReport::failed`] and the run continues.
///
/// Memory must be enabled (the caller checks). Errors: index errors while listing the candidates.
pub fn cleanup(store: &Store, dry_run: bool) -> Result<CleanupReport, MemoryError> {
    let now = store.now();
    let mut report = CleanupReport {
        dry_run,
        ..CleanupReport::default()
    };
    let mut expired: Vec<MemoryRow> = Vec::new();
    for scope in Scope::ALL.into_iter().filter(|s| retention_days(*s).is_some()) {
        let rows = store.snapshot().list(&ListFilter {
            visibility: Visibility::none().allow_any(scope),
            scope: Some(scope),
            memory_type: None,
            limit: None,
        })?;
        report.checked += rows.len();
        expired.extend(
            rows.into_iter()
                .filter(|r| is_expired(r.scope, r.memory_type, r.updated_at, now)),
        );
    }
    expired.sort_by(|a, b| {
        a.updated_at
            .cmp(&b.updated_at)
            .then_with(|| a.key.as_str().cmp(b.key.as_str()))
    });
    for row in expired {
        let entry = ExpiredMemory {
            key: row.key.to_string(),
            scope: row.scope,
            scope_id: row.scope_id.clone(),
            memory_type: row.memory_type,
            updated_at: row.updated_at,
            age_days: age_days(row.updated_at, now),
        };
        if dry_run {
            report.removed.push(entry);
            continue;
        }
        match remove_expired(store, &row, now) {
            Ok(true) => report.removed.push(entry),
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(memory = %row.memory_ref(), error = %e, "retention could not remove an expired memory");
                report.failed.push(format!("{}: {e}", row.memory_ref()));
            }
        }
    }
    Ok(report)
}

/// Remove one expired memory unless a store made it current since it was listed. Returns whether it was
/// removed.
fn remove_expired(store: &Store, row: &MemoryRow, now: DateTime<Utc>) -> Result<bool, MemoryError> {
    let scope_id = row.scope_id.as_deref();
    match store.snapshot().get(row.scope, scope_id, &row.key)? {
        Some(current) if is_expired(current.scope, current.memory_type, current.updated_at, now) => {}
        _ => return Ok(false),
    }
    cao_ops::write::remove(
        store,
        RETENTION_ACTOR,
        &cao_store::journal_writer(None, None),
        &row.memory_ref(),
    )?;
    audit::record(
        store,
        AuditEvent::RetentionRemoval,
        RETENTION_ACTOR,
        row.scope,
        scope_id,
        row.key.as_str(),
        "expired",
    );
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone};

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0).single().expect("valid")
    }

    #[test]
    fn table_per_scope_and_type() {
        let old = now() - Duration::days(10_000);
        for scope in Scope::ALL {
            for t in MemoryType::ALL {
                let expected = matches!(scope, Scope::Project | Scope::Session) && !is_permanent_type(t);
                assert_eq!(is_expired(scope, t, old, now()), expected, "{scope} {t}");
            }
        }
        assert!(is_permanent_type(MemoryType::User) && is_permanent_type(MemoryType::Feedback));
        assert!(!is_permanent_type(MemoryType::Project) && !is_permanent_type(MemoryType::Reference));
    }

    #[test]
    fn whole_day_boundaries() {
        let t = MemoryType::Project;
        for (scope, days) in [(Scope::Project, 90), (Scope::Session, 14)] {
            let exactly = now() - Duration::days(days);
            assert!(
                !is_expired(scope, t, exactly, now()),
                "{scope}: exactly {days} days is kept"
            );
            let almost = exactly - Duration::hours(23) - Duration::minutes(59);
            assert!(
                !is_expired(scope, t, almost, now()),
                "{scope}: {days} days 23:59 is kept"
            );
            let next = now() - Duration::days(days + 1);
            assert!(
                is_expired(scope, t, next, now()),
                "{scope}: {} days is removed",
                days + 1
            );
        }
        assert!(
            !is_expired(Scope::Session, t, now() + Duration::days(400), now()),
            "future"
        );
    }
}
