//! Retention rules (spec 000 "Retention"): how long a memory of each scope is kept after its last update, which
//! memory types never expire, and the whole-day comparison the reference makes.
//!
//! | scope     | kept for                    |
//! |-----------|-----------------------------|
//! | global    | ever                        |
//! | project   | 90 days since last update   |
//! | session   | 14 days since last update   |
//! | agent     | ever                        |
//! | federated | ever                        |
//!
//! Memories of type `user` or `feedback` never expire, whatever their scope. Age is counted in whole days, as the
//! reference does: a memory expires when `floor((now - updated_at) / 1 day) > horizon`, so one updated exactly 90
//! days ago (or 90 days and 23 hours) is kept and one updated 91 days ago is removed.

use crate::{MemoryType, Scope};
use chrono::{DateTime, Utc};

/// Days a `project` memory is kept after its last update.
pub const PROJECT_RETENTION_DAYS: i64 = 90;
/// Days a `session` memory is kept after its last update.
pub const SESSION_RETENTION_DAYS: i64 = 14;

/// How long memories of `scope` are kept after their last update, in whole days; `None` = forever.
pub fn retention_days(scope: Scope) -> Option<i64> {
    match scope {
        Scope::Project => Some(PROJECT_RETENTION_DAYS),
        Scope::Session => Some(SESSION_RETENTION_DAYS),
        Scope::Global | Scope::Agent | Scope::Federated => None,
    }
}

/// Whether memories of this type are exempt from retention (`user` and `feedback`: operator-curated knowledge).
pub fn is_permanent_type(memory_type: MemoryType) -> bool {
    matches!(memory_type, MemoryType::User | MemoryType::Feedback)
}

/// Whether a memory of `scope` and `memory_type` last updated at `updated_at` has expired at `now` (see the
/// module documentation for the whole-day rule). A future `updated_at` never expires.
pub fn is_expired(scope: Scope, memory_type: MemoryType, updated_at: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    if is_permanent_type(memory_type) {
        return false;
    }
    match retention_days(scope) {
        Some(days) => age_days(updated_at, now) > days,
        None => false,
    }
}

/// Whole days from `updated_at` to `now` (floor; 0 for a future time).
pub fn age_days(updated_at: DateTime<Utc>, now: DateTime<Utc>) -> i64 {
    (now - updated_at).num_days().max(0)
}
