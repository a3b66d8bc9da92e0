//! An in-process [`MemoryService`] on a throw-away home with a fixed clock and a caller context: the fixture the
//! service-level tests share (feature `service`).
//!
//! ```ignore
//! let fx = ServiceFixture::builder().at(utc(2026, 5, 6, 7, 8, 9)).project("proj-a").session("sess-1").open();
//! fx.store("project", "build-commands", "cargo build");
//! fx.clock.advance(chrono::Duration::minutes(1));
//! ```
//!
//! Layout: `<tmp>/home` is the cao home, `<tmp>` itself the caller's cwd. Every call panics on failure (these are
//! test fixtures: a failure is the test failing, with the key and error in the message).

use cao_core::{CaoHome, FixedClock, Settings, TerminalContext};
use cao_memory::{MemoryService, StoreArgs, StoreResult};
use chrono::{DateTime, TimeZone, Utc};
use std::path::Path;
use std::sync::Arc;

/// The UTC instant `y-mo-d h:mi:s`. Panics on an invalid date (a typo in a test).
pub fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, s)
        .single()
        .unwrap_or_else(|| panic!("{y}-{mo}-{d} {h}:{mi}:{s} is not a valid UTC instant"))
}

/// A fixed clock starting at `at`, shared between the fixture and the service.
pub fn fixed_clock(at: DateTime<Utc>) -> Arc<FixedClock> {
    Arc::new(FixedClock::new(at))
}

/// A service on a temp home: the temp dir, the home, the clock the service reads, the service and the default
/// caller context (cwd = the temp dir).
pub struct ServiceFixture {
    /// The temp dir (removed on drop); parent of `home/` and the caller's cwd.
    pub dir: tempfile::TempDir,
    /// `<dir>/home`.
    pub home: CaoHome,
    /// The clock the service reads; advance it between calls.
    pub clock: Arc<FixedClock>,
    /// The service under test.
    pub svc: MemoryService,
    /// The caller: cwd = [`ServiceFixture::root`] plus the ids given to the builder.
    pub ctx: TerminalContext,
    /// The database of this fixture when the suite runs against PostgreSQL ([`on_postgres`]); dropped with it (a
    /// test that takes the fixture apart keeps it as long as it uses [`ServiceFixture::svc`]).
    #[cfg(feature = "postgres")]
    pub database: Option<crate::postgres::TestDatabase>,
}

/// Whether this test process runs the service suites against PostgreSQL: `CAO_TEST_BACKEND=postgres` (with
/// `CAO_TEST_DATABASE_URL` naming the server; `cargo xtask test` sets both for its second run of cao-memory's
/// suites). Every [`ServiceFixture`] then opens a fresh database of its own instead of the home's files. Tests about
/// the embedded backend only (topic files, outside edits, SQLite) skip in that run, saying why
/// ([`skip_on_postgres`]).
pub fn on_postgres() -> bool {
    std::env::var("CAO_TEST_BACKEND").is_ok_and(|v| v == "postgres")
}

/// `true` (after printing why on stderr) when this run is against PostgreSQL ([`on_postgres`]) and the calling
/// test is about the embedded backend only; `reason` says what it checks that PostgreSQL does not have.
pub fn skip_on_postgres(reason: &str) -> bool {
    let skip = on_postgres();
    if skip {
        eprintln!("skipped against PostgreSQL: {reason}");
    }
    skip
}

/// Options of a [`ServiceFixture`]; [`ServiceFixtureBuilder::open`] makes it.
#[derive(Debug, Clone)]
pub struct ServiceFixtureBuilder {
    at: DateTime<Utc>,
    settings: Settings,
    ctx: TerminalContext,
    database: Option<cao_core::DatabaseUrl>,
}

impl ServiceFixture {
    /// Defaults: clock at 2026-01-01T00:00:00Z, default settings, a caller with only a cwd.
    pub fn builder() -> ServiceFixtureBuilder {
        ServiceFixtureBuilder {
            at: utc(2026, 1, 1, 0, 0, 0),
            settings: Settings::default(),
            ctx: TerminalContext::default(),
            database: None,
        }
    }

    /// The temp dir: the caller's cwd and the parent of the home.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Another service on the same home and clock, with `settings` (e.g. a flag on and off side by side).
    pub fn reopen(&self, settings: Settings) -> MemoryService {
        MemoryService::open_with(self.home.clone(), settings, self.clock.clone())
            .unwrap_or_else(|e| panic!("reopening the service on {}: {e}", self.home.root().display()))
    }

    /// Store `content` under `key` in `scope` as the fixture's caller (the clock is not advanced).
    pub fn store(&self, scope: &str, key: &str, content: &str) -> StoreResult {
        self.store_as(&self.ctx, scope, key, content)
    }

    /// Store `content` under `key` in `scope` as `ctx` (the clock is not advanced).
    pub fn store_as(&self, ctx: &TerminalContext, scope: &str, key: &str, content: &str) -> StoreResult {
        self.svc
            .store(
                ctx,
                StoreArgs {
                    content: content.into(),
                    scope: Some(scope.parse().expect("a valid scope")),
                    key: Some(key.into()),
                    ..Default::default()
                },
            )
            .unwrap_or_else(|e| panic!("store {key}: {e}"))
    }
}

impl ServiceFixtureBuilder {
    /// The clock's start.
    pub fn at(mut self, at: DateTime<Utc>) -> Self {
        self.at = at;
        self
    }

    /// The service's settings.
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// The caller's explicit project id (`CAO_PROJECT_ID`).
    pub fn project(mut self, id: &str) -> Self {
        self.ctx.project_id = Some(id.to_owned());
        self
    }

    /// The caller's session name.
    pub fn session(mut self, name: &str) -> Self {
        self.ctx.session_name = Some(name.to_owned());
        self
    }

    /// The caller's agent profile.
    pub fn agent(mut self, profile: &str) -> Self {
        self.ctx.agent_profile = Some(profile.to_owned());
        self
    }

    /// Keep the memories in this PostgreSQL database instead of the home's files (see `cao_testkit::postgres`).
    pub fn database(mut self, url: cao_core::DatabaseUrl) -> Self {
        self.database = Some(url);
        self
    }

    /// The caller's terminal id.
    pub fn terminal(mut self, id: &str) -> Self {
        self.ctx.terminal_id = Some(id.to_owned());
        self
    }

    /// Create the temp dir and open the service. Panics when either fails.
    pub fn open(self) -> ServiceFixture {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("creating a temp dir: {e}"));
        #[cfg(feature = "postgres")]
        let (database, url) = match self.database {
            Some(url) => (None, Some(url)),
            None if on_postgres() => {
                let db = crate::postgres::TestDatabase::create()
                    .unwrap_or_else(|| panic!("CAO_TEST_BACKEND=postgres needs CAO_TEST_DATABASE_URL"));
                let url = db.url.clone();
                (Some(db), Some(url))
            }
            None => (None, None),
        };
        #[cfg(not(feature = "postgres"))]
        let url = self.database;
        let home = CaoHome::new(dir.path().join("home")).with_database(url);
        let clock = fixed_clock(self.at);
        let svc = MemoryService::open_with(home.clone(), self.settings, clock.clone())
            .unwrap_or_else(|e| panic!("opening the service on {}: {e}", home.root().display()));
        let ctx = TerminalContext {
            cwd: Some(dir.path().to_path_buf()),
            ..self.ctx
        };
        ServiceFixture {
            dir,
            home,
            clock,
            svc,
            ctx,
            #[cfg(feature = "postgres")]
            database,
        }
    }
}

/// What tests reach below the store interface of a service's home: a second handle on its SQLite index (to seed
/// or inspect rows as another process would) and its wiki layout (to find and edit topic files by hand). The
/// service itself never gives these out; each call opens its own handle.
pub trait RawStorage {
    /// A new handle on the SQLite index of the home (its own connection pool and caches). Panics when it cannot be
    /// opened.
    fn raw_index(&self) -> cao_index::Index;
    /// The wiki layout of the home.
    fn wiki_layout(&self) -> cao_wiki::WikiLayout;
}

impl RawStorage for MemoryService {
    fn raw_index(&self) -> cao_index::Index {
        raw_index(self.home())
    }

    fn wiki_layout(&self) -> cao_wiki::WikiLayout {
        cao_wiki::WikiLayout::new(self.home().memory_dir())
    }
}

/// The `count(*)`-like `bigint` that `query` returns from the PostgreSQL database `svc`'s home names (a look below the
/// store interface, as another process would); `None` for an embedded home. Panics on failure.
pub fn database_count(svc: &MemoryService, query: &str) -> Option<i64> {
    #[cfg(feature = "postgres")]
    if let Some(url) = svc.home().database() {
        let mut c = postgres::Client::connect(url.expose(), postgres::NoTls)
            .unwrap_or_else(|e| panic!("cannot connect to the test database: {e}"));
        let row = c.query_one(query, &[]).unwrap_or_else(|e| panic!("{query}: {e}"));
        return Some(row.get(0));
    }
    let _ = (svc, query);
    None
}

/// Set every memory's legacy `related_keys` back to NULL below the store interface, as another process would: in the
/// SQLite index of an embedded home, or in the `memory_metadata` table of the PostgreSQL database the home names.
/// Panics on failure.
pub fn clear_related_keys(svc: &MemoryService) {
    #[cfg(feature = "postgres")]
    if let Some(url) = svc.home().database() {
        let mut c = postgres::Client::connect(url.expose(), postgres::NoTls)
            .unwrap_or_else(|e| panic!("cannot connect to the test database: {e}"));
        c.execute("UPDATE memory_metadata SET related_keys = NULL", &[])
            .unwrap_or_else(|e| panic!("clearing related_keys: {e}"));
        return;
    }
    let index = svc.raw_index();
    for row in index.all_rows().unwrap_or_else(|e| panic!("rows: {e}")) {
        index
            .set_related_keys(row.scope, row.scope_id.as_deref(), &row.key, None)
            .unwrap_or_else(|e| panic!("related_keys of {}: {e}", row.key));
    }
}

/// A new handle on the SQLite index under `home` (see [`RawStorage`]). Panics when it cannot be opened.
pub fn raw_index(home: &CaoHome) -> cao_index::Index {
    cao_index::Index::open(&home.db_path())
        .unwrap_or_else(|e| panic!("cannot open the index of {}: {e}", home.root().display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cao_core::Scope;
    use cao_memory::RecallArgs;

    #[test]
    fn builder_sets_the_caller_and_the_clock_and_reopen_shares_the_home() {
        let fx = ServiceFixture::builder()
            .at(utc(2026, 5, 6, 7, 8, 9))
            .project("proj-a")
            .session("sess-1")
            .agent("reviewer")
            .terminal("t-1")
            .open();
        assert_eq!(fx.ctx.cwd.as_deref(), Some(fx.root()));
        assert_eq!(fx.ctx.project_id.as_deref(), Some("proj-a"));
        assert_eq!(fx.ctx.session_name.as_deref(), Some("sess-1"));
        assert_eq!(fx.ctx.agent_profile.as_deref(), Some("reviewer"));
        assert_eq!(fx.ctx.terminal_id.as_deref(), Some("t-1"));
        assert_eq!(fx.home.root(), fx.root().join("home"));
        let stored = fx.store("project", "build-commands", "cargo build");
        assert_eq!(stored.scope_id.as_deref(), Some("proj-a"));
        assert!(stored.file_path.starts_with(fx.home.root().to_string_lossy().as_ref()));
        let other = fx.reopen(Settings::default());
        let got = other
            .recall(
                &fx.ctx,
                RecallArgs {
                    scope: Some(Scope::Project),
                    ..Default::default()
                },
            )
            .expect("recall");
        assert_eq!(got.memories.len(), 1);
        assert_eq!(got.memories[0].key, "build-commands");
        assert_eq!(
            got.memories[0].updated_at, "2026-05-06T07:08:09Z",
            "the fixture clock stamps the store"
        );
    }
}
