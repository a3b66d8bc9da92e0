//! A fresh PostgreSQL database per test, for the suites that run against the shared-database backend (feature
//! `postgres`).
//!
//! The server comes from `CAO_TEST_DATABASE_URL` (an administrative URL, e.g.
//! `postgresql://postgres@/postgres?host=/tmp/cao-pg`; `cargo xtask test` starts a throwaway cluster and sets it).
//! [`TestDatabase::create`] makes a database of its own on that server and drops it (with every connection to it)
//! when dropped. Without the variable the test is skipped with a message, except under `CI=true`, where it fails:
//! CI always runs these suites against a real server.

use cao_core::DatabaseUrl;

/// One throw-away database on the test server.
pub struct TestDatabase {
    admin: String,
    name: String,
    /// The URL of the new database (the administrative URL with its database name replaced).
    pub url: DatabaseUrl,
}

/// Whether `CI=true` (or `1`) is set.
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// `url` (a PostgreSQL connection URL, `postgres[ql]://[user[:password]@][host][:port][/dbname][?query]`) with its
/// database name (the path after the authority) replaced by `name`, or added when it has none; the query
/// (`?host=/tmp/...` and the like) is kept as it is. Plain string work: `url` is not validated, and `name` is used
/// as given (the callers pass identifiers they made, e.g. `cao_test_<pid>_<n>_<nanos>`).
///
/// Used to reach a database made for a run through the administrative URL of its server (here and by the
/// benchmark's PostgreSQL rows).
pub fn with_dbname(url: &str, name: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, None), |(b, q)| (b, Some(q)));
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let authority_end = base[scheme_end..].find('/').map_or(base.len(), |i| scheme_end + i);
    let mut out = format!("{}/{name}", &base[..authority_end]);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

impl TestDatabase {
    /// A new empty database on the server of `CAO_TEST_DATABASE_URL`; `None` (with a line on stderr saying why)
    /// when the variable is unset outside CI.
    ///
    /// Panics under `CI=true` without the variable, and whenever the server cannot be reached or the database
    /// cannot be created (a test failure naming the reason).
    pub fn create() -> Option<TestDatabase> {
        let Some(admin) = std::env::var("CAO_TEST_DATABASE_URL")
            .ok()
            .filter(|v| !v.trim().is_empty())
        else {
            assert!(
                !in_ci(),
                "CAO_TEST_DATABASE_URL is not set: CI runs the PostgreSQL suites against a throwaway cluster \
                 (`cargo xtask test` starts one; .ci/run installs postgresql-15)"
            );
            eprintln!(
                "skipped: CAO_TEST_DATABASE_URL is not set (`cargo xtask test` starts a throwaway PostgreSQL and sets \
                 it; or point it at a server you can create databases on)"
            );
            return None;
        };
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!("cao_test_{}_{n}_{nanos}", std::process::id());
        let mut client = postgres::Client::connect(&admin, postgres::NoTls)
            .unwrap_or_else(|e| panic!("cannot connect to CAO_TEST_DATABASE_URL: {e}"));
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("cannot create the test database {name}: {e}"));
        let url =
            DatabaseUrl::parse(&with_dbname(&admin, &name)).unwrap_or_else(|e| panic!("CAO_TEST_DATABASE_URL: {e}"));
        Some(TestDatabase { admin, name, url })
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A client of this database (as the test server's administrative user).
    ///
    /// Panics when it cannot connect.
    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(self.url.expose(), postgres::NoTls)
            .unwrap_or_else(|e| panic!("cannot connect to the test database {}: {e}", self.name))
    }

    /// The tables of this database (schema `public`) with a row whose text form (every column, as `row::text`)
    /// holds `needle`, each with the number of such rows, by table name.
    ///
    /// Panics on a query failure.
    pub fn tables_holding(&self, needle: &str) -> Vec<(String, i64)> {
        let mut c = self.client();
        let tables: Vec<String> = c
            .query(
                "SELECT table_name::text FROM information_schema.tables
                 WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1",
                &[],
            )
            .expect("list tables")
            .iter()
            .map(|r| r.get(0))
            .collect();
        let mut hits = Vec::new();
        for t in tables {
            let n: i64 = c
                .query_one(
                    &format!("SELECT count(*) FROM \"{t}\" r WHERE strpos(r::text, $1) > 0"),
                    &[&needle],
                )
                .unwrap_or_else(|e| panic!("scan {t}: {e}"))
                .get(0);
            if n > 0 {
                hits.push((t, n));
            }
        }
        hits
    }

    /// The tables of this database that `VACUUM` has processed (statistics view `pg_stat_user_tables`), by name.
    ///
    /// Panics on a query failure.
    pub fn vacuumed_tables(&self) -> Vec<String> {
        self.client()
            .query(
                "SELECT relname::text FROM pg_stat_user_tables WHERE last_vacuum IS NOT NULL ORDER BY 1",
                &[],
            )
            .expect("vacuum statistics")
            .iter()
            .map(|r| r.get(0))
            .collect()
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        match postgres::Client::connect(&self.admin, postgres::NoTls) {
            Ok(mut c) => {
                if let Err(e) = c.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)) {
                    eprintln!("could not drop the test database {}: {e}", self.name);
                }
            }
            Err(e) => eprintln!("could not drop the test database {}: {e}", self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_name_is_replaced_and_the_query_kept() {
        assert_eq!(
            with_dbname("postgresql://postgres@/postgres?host=/tmp/x", "t1"),
            "postgresql://postgres@/t1?host=/tmp/x"
        );
        assert_eq!(with_dbname("postgres://u:p@h:5/db", "t2"), "postgres://u:p@h:5/t2");
        assert_eq!(with_dbname("postgres://h", "t3"), "postgres://h/t3");
    }
}
