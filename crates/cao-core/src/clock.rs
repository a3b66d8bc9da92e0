//! Injectable time. Production code uses [`SystemClock`]; tests pin time with [`FixedClock`].

use chrono::{DateTime, Utc};
use std::sync::Mutex;

/// A source of "now", always UTC.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current instant.
    fn now(&self) -> DateTime<Utc>;
}

/// The real wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that returns a set instant until moved with [`FixedClock::set`] or [`FixedClock::advance`].
#[derive(Debug)]
pub struct FixedClock(Mutex<DateTime<Utc>>);

impl FixedClock {
    /// A clock frozen at `at`.
    pub fn new(at: DateTime<Utc>) -> Self {
        Self(Mutex::new(at))
    }
    /// Move the clock to `at`.
    pub fn set(&self, at: DateTime<Utc>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = at;
    }
    /// Move the clock forward by `d`.
    pub fn advance(&self, d: chrono::Duration) {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *g += d;
    }
}

impl Clock for FixedClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
