//! WAL checkpoints off the write path.
//!
//! SQLite's automatic checkpoint runs inside the commit that crosses its threshold, so that one write also copies
//! the WAL into the database file and syncs it (about a thousand pages and two `fsync`s): the slowest writes of a
//! long-running process were these. Here every pooled connection's automatic checkpoint is raised to
//! [`SAFETY_CHECKPOINT_PAGES`] (a bound on the WAL should the background pass not keep up) and, every
//! [`CHECKPOINT_EVERY_WRITES`] write transactions of one [`crate::Index`], a background thread runs a `PASSIVE`
//! checkpoint on a pooled connection: it never waits for or blocks readers and writers of any process, and copies
//! what it can.
//!
//! Durability is unchanged: a committed transaction is in the WAL whether or not it was checkpointed, and SQLite
//! recovers the WAL after a crash or `kill -9` (synchronous = NORMAL, as before). A process that writes less than
//! [`CHECKPOINT_EVERY_WRITES`] times (a one-shot command) starts no thread; its last connection's close checkpoints
//! as SQLite always does.
//!
//! The thread is started on the first request and holds only a weak reference: it ends within [`IDLE_POLL`] once
//! every clone of the index is dropped.

use r2d2_sqlite::SqliteConnectionManager;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

/// WAL pages after which a connection's commit checkpoints inline (`PRAGMA wal_autocheckpoint`; SQLite's default
/// is 1000): only reached when the background checkpoint falls behind (16 MB of 4 KiB pages).
pub(crate) const SAFETY_CHECKPOINT_PAGES: u32 = 4000;

/// Write transactions of one index between two background checkpoint requests (a store writes a few dozen WAL
/// pages, so about SQLite's default threshold).
pub(crate) const CHECKPOINT_EVERY_WRITES: u64 = 16;

/// How often an idle checkpoint thread checks whether its index is gone.
const IDLE_POLL: Duration = Duration::from_secs(1);

/// The background checkpointer of one index (shared by its clones).
pub(crate) struct Checkpointer {
    pool: r2d2::Pool<SqliteConnectionManager>,
    state: Mutex<State>,
    wake: Condvar,
    /// Held while this process checkpoints (the thread, or a `TRUNCATE` that must not meet the thread's pass).
    running: Mutex<()>,
}

#[derive(Default)]
struct State {
    requested: bool,
    started: bool,
}

impl Checkpointer {
    /// A checkpointer over `pool` (no thread yet).
    pub(crate) fn new(pool: r2d2::Pool<SqliteConnectionManager>) -> Arc<Checkpointer> {
        Arc::new(Checkpointer {
            pool,
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            running: Mutex::new(()),
        })
    }

    /// Wait for this process's background checkpoint, if one runs, and keep the next from starting while the
    /// guard lives: a `TRUNCATE` checkpoint (a purge) would otherwise find the checkpoint lock taken and leave the
    /// WAL as it is.
    pub(crate) fn exclusive(&self) -> std::sync::MutexGuard<'_, ()> {
        self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Ask for a checkpoint soon (starting the thread the first time). Never blocks on the checkpoint itself.
    pub(crate) fn request(self: &Arc<Self>) {
        let mut st = self.state();
        st.requested = true;
        if !st.started {
            let weak = Arc::downgrade(self);
            let spawned = std::thread::Builder::new()
                .name("cao-index-checkpoint".into())
                .spawn(move || run(&weak));
            // Without a thread, SQLite's inline checkpoint at the safety threshold still bounds the WAL.
            st.started = spawned.is_ok();
        }
        drop(st);
        self.wake.notify_one();
    }
}

/// The thread: wait for a request, checkpoint, repeat; end once the index is gone.
fn run(weak: &Weak<Checkpointer>) {
    loop {
        let Some(ck) = weak.upgrade() else { return };
        let mut st = ck.state();
        if !st.requested {
            st = ck
                .wake
                .wait_timeout(st, IDLE_POLL)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        if !std::mem::take(&mut st.requested) {
            continue;
        }
        drop(st);
        let _running = ck.exclusive();
        // A failure (the pool is busy or closing) is left to the next request or to SQLite's safety threshold.
        let _ = checkpoint(&ck.pool);
    }
}

/// One `PASSIVE` checkpoint on a pooled connection.
fn checkpoint(pool: &r2d2::Pool<SqliteConnectionManager>) -> crate::Result<()> {
    let conn = pool.get()?;
    let _: (i64, i64, i64) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })?;
    Ok(())
}
