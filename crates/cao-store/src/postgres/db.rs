//! The connection layer of the PostgreSQL backend: the connection URL (libpq's rules for what the synchronous
//! `postgres` client does not read itself: `PGPASSWORD`, `~/.pgpass` / `PGPASSFILE`, `sslmode=verify-ca|verify-full`,
//! `sslrootcert`), TLS through rustls, an r2d2 pool whose connections keep their prepared statements, one
//! transaction wrapper ([`Sql`]) every statement of the backend runs through, and the mapping of the client's errors
//! to [`StoreError`] (a lost or refused connection is [`StoreError::Unavailable`]).
//!
//! Invariants: every value reaches the server as a bound parameter; no error or log line carries the password (the
//! URL is only shown through [`DatabaseUrl`]'s redacted form); the client is only called from blocking threads (its
//! calls block on a runtime of their own, which panics inside an async runtime).

use crate::error::StoreError;
use cao_core::DatabaseUrl;
use postgres::types::{FromSql, ToSql};
use postgres::{Row, Statement};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Result of a statement of this backend.
pub(crate) type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A bound parameter.
pub(crate) type Param<'a> = &'a (dyn ToSql + Sync);

/// Most pooled connections per process.
pub(crate) const POOL_MAX_SIZE: u32 = 8;

/// How long a call waits for a pooled connection (or for a new one to be made) before it answers
/// [`StoreError::Unavailable`].
pub(crate) const CONNECT_WAIT: Duration = Duration::from_secs(5);

/// How long one connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How a connection is encrypted.
#[derive(Clone)]
enum Tls {
    /// `sslmode=disable`, or a unix socket.
    None,
    /// rustls: verifying the server's certificate (`verify-ca`, `verify-full`) or not (`prefer`, `require`, as libpq
    /// does without a root certificate).
    Rustls(tokio_postgres_rustls::MakeRustlsConnect),
}

/// What the pool needs to make a connection: the parsed URL (password filled in) and the TLS setting.
#[derive(Clone)]
pub(crate) struct Target {
    config: postgres::Config,
    tls: Tls,
    /// The URL without its password, for messages.
    pub(crate) shown: String,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("url", &self.shown)
            .finish_non_exhaustive()
    }
}

/// libpq's `sslmode` values this backend understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SslMode {
    Disable,
    Prefer,
    Require,
    Verify,
}

impl Target {
    /// Parse `url` into what a connection needs.
    ///
    /// Rules (libpq's): `sslmode` = `disable`, `allow`/`prefer` (the default: TLS when the server offers it, not
    /// verified), `require` (TLS, not verified), `verify-ca`/`verify-full` (TLS, the certificate verified against
    /// `sslrootcert` or the platform's roots, and the host name); a unix socket (`host=/dir`) never uses TLS. The
    /// password comes from the URL, else `PGPASSWORD`, else the password file (`PGPASSFILE` or `~/.pgpass`, used only
    /// when not readable by group or others, as libpq does).
    ///
    /// Errors: [`StoreError::Invalid`] naming what is wrong with the URL (never its password).
    pub(crate) fn parse(url: &DatabaseUrl) -> Result<Target> {
        let shown = url.redacted();
        let bad = |why: String| StoreError::Invalid(format!("database URL {shown}: {why}"));
        let (base, query) = match url.expose().split_once('?') {
            Some((b, q)) => (b, q),
            None => (url.expose(), ""),
        };
        let mut kept: Vec<&str> = Vec::new();
        let mut ssl = SslMode::Prefer;
        let mut root_cert: Option<PathBuf> = None;
        let mut passfile: Option<PathBuf> = None;
        for kv in query.split('&').filter(|kv| !kv.is_empty()) {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            match k {
                "sslmode" => {
                    ssl = match v {
                        "disable" => SslMode::Disable,
                        "allow" | "prefer" => SslMode::Prefer,
                        "require" => SslMode::Require,
                        "verify-ca" | "verify-full" => SslMode::Verify,
                        other => {
                            return Err(bad(format!(
                                "sslmode {other:?} is not one of disable, allow, prefer, require, verify-ca, verify-full"
                            )));
                        }
                    }
                }
                "sslrootcert" => root_cert = Some(PathBuf::from(percent_decode(v))),
                "passfile" => passfile = Some(PathBuf::from(percent_decode(v))),
                _ => kept.push(kv),
            }
        }
        let mode = match ssl {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require | SslMode::Verify => "require",
        };
        kept.push(match mode {
            "disable" => "sslmode=disable",
            "prefer" => "sslmode=prefer",
            _ => "sslmode=require",
        });
        let text = format!("{base}?{}", kept.join("&"));
        let mut config: postgres::Config = text.parse().map_err(|e: postgres::Error| bad(e.to_string()))?;
        if config.get_hosts().is_empty() {
            // libpq's default: the local socket directory.
            config.host("/var/run/postgresql");
        }
        if config.get_user().is_none() {
            let user = std::env::var("PGUSER")
                .or_else(|_| std::env::var("USER"))
                .unwrap_or_else(|_| "postgres".to_owned());
            config.user(&user);
        }
        if config.get_dbname().is_none()
            && let Some(user) = config.get_user().map(str::to_owned)
        {
            config.dbname(&user);
        }
        config.connect_timeout(CONNECT_TIMEOUT);
        config.application_name("cao");
        if config.get_password().is_none() {
            if let Some(p) = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()) {
                config.password(p);
            } else if let Some(p) = pgpass_lookup(&config, passfile) {
                config.password(p);
            }
        }
        let tls = match ssl {
            SslMode::Disable => Tls::None,
            SslMode::Prefer | SslMode::Require => Tls::Rustls(rustls_connector(None, false).map_err(&bad)?),
            SslMode::Verify => Tls::Rustls(rustls_connector(root_cert, true).map_err(&bad)?),
        };
        Ok(Target { config, tls, shown })
    }

    /// One new connection.
    ///
    /// Errors: the client's (unreachable, refused, authentication failed).
    fn connect(&self) -> std::result::Result<postgres::Client, postgres::Error> {
        match &self.tls {
            Tls::None => self.config.connect(postgres::NoTls),
            Tls::Rustls(tls) => self.config.connect(tls.clone()),
        }
    }
}

/// `%XX` escapes of a URL query value decoded (invalid escapes kept as they are).
fn percent_decode(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(h) = v.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(h);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The rustls connector: verifying against `root_cert` (a PEM file) or the platform's roots, or (`verify` false) not
/// verifying the server's certificate at all (libpq's `require`: encryption without authentication of the server).
fn rustls_connector(
    root_cert: Option<PathBuf>,
    verify: bool,
) -> std::result::Result<tokio_postgres_rustls::MakeRustlsConnect, String> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up failed: {e}"))?;
    let config = if verify {
        let mut roots = rustls::RootCertStore::empty();
        match root_cert {
            Some(path) => {
                let pem = std::fs::read(&path).map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
                for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
                    let cert = cert.map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
                    roots
                        .add(cert)
                        .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
                }
            }
            None => {
                for cert in rustls_native_certs::load_native_certs().certs {
                    let _ = roots.add(cert);
                }
            }
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(provider)))
            .with_no_client_auth()
    };
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

use rustls::pki_types::pem::PemObject;

/// libpq's `sslmode=require` without a root certificate: the connection is encrypted, the server not
/// authenticated (signatures are still checked, so the handshake itself is sound).
#[derive(Debug)]
struct NoVerification(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> std::result::Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The password of the password file (`passfile`, else `PGPASSFILE`, else `~/.pgpass`) for the connection's first
/// host, port, database and user: libpq's format (`host:port:database:user:password`, `*` matches anything, `\:`
/// and `\\` escapes; a unix socket host matches `localhost`). A file readable by group or others is ignored with a
/// warning, as libpq does.
fn pgpass_lookup(config: &postgres::Config, passfile: Option<PathBuf>) -> Option<String> {
    let path = passfile
        .or_else(|| std::env::var_os("PGPASSFILE").map(PathBuf::from))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pgpass")))?;
    let meta = std::fs::metadata(&path).ok()?;
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(
                path = %path.display(),
                "the password file is readable by group or others and is ignored (chmod 0600 it)"
            );
            return None;
        }
    }
    let text = std::fs::read_to_string(&path).ok()?;
    let host = match config.get_hosts().first()? {
        postgres::config::Host::Tcp(h) => h.clone(),
        postgres::config::Host::Unix(_) => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432).to_string();
    let db = config.get_dbname().unwrap_or_default().to_owned();
    let user = config.get_user().unwrap_or_default().to_owned();
    pgpass_find(&text, [&host, &port, &db, &user])
}

/// The password of the first line of a password file matching `want` (host, port, database, user).
fn pgpass_find(text: &str, want: [&str; 4]) -> Option<String> {
    for line in text.lines() {
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut fields: Vec<String> = vec![String::new()];
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    if let Some(n) = chars.next()
                        && let Some(f) = fields.last_mut()
                    {
                        f.push(n);
                    }
                }
                ':' if fields.len() < 5 => fields.push(String::new()),
                c => {
                    if let Some(f) = fields.last_mut() {
                        f.push(c);
                    }
                }
            }
        }
        if fields.len() != 5 {
            continue;
        }
        if fields[..4].iter().zip(want).all(|(f, w)| f == "*" || f == w) {
            return fields.pop();
        }
    }
    None
}

/// One pooled connection: the client and the statements it has prepared (by their text).
pub(crate) struct PgConn {
    client: postgres::Client,
    statements: HashMap<String, Statement>,
}

impl PgConn {
    /// `VACUUM` the tables that hold memory text (outside any transaction), so the space of deleted rows is
    /// reclaimed.
    ///
    /// Errors: the client's.
    pub(crate) fn vacuum(&mut self) -> Result<()> {
        self.client
            .batch_execute(
                "VACUUM memory_metadata, cao_search_docs, cao_search_postings, cao_search_terms, \
                 cao_journal_entries, cao_journal_lines, cao_journal_snapshots, cao_memory_vectors, cao_audit_log",
            )
            .map_err(db_err)
    }
}

/// Makes and checks pooled connections.
#[derive(Debug)]
pub(crate) struct Manager(Target);

/// Why a connection could not be made or kept, with the server's own message: `postgres::Error` shows only "db
/// error" for a refusal by the server (a wrong password, an unknown role or database), which then named nothing.
/// The server's messages name the user or database, never the password.
#[derive(Debug)]
pub(crate) struct ConnectError(String);

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConnectError {}

impl From<postgres::Error> for ConnectError {
    fn from(e: postgres::Error) -> Self {
        if let Some(db) = e.as_db_error() {
            return ConnectError(format!("{} (SQLSTATE {})", db.message(), db.code().code()));
        }
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(cause) = source {
            let cause_text = cause.to_string();
            if !text.contains(&cause_text) {
                text.push_str(": ");
                text.push_str(&cause_text);
            }
            source = cause.source();
        }
        ConnectError(text)
    }
}

impl r2d2::ManageConnection for Manager {
    type Connection = PgConn;
    type Error = ConnectError;

    fn connect(&self) -> std::result::Result<PgConn, ConnectError> {
        Ok(PgConn {
            client: self.0.connect()?,
            statements: HashMap::new(),
        })
    }

    fn is_valid(&self, conn: &mut PgConn) -> std::result::Result<(), ConnectError> {
        Ok(conn.client.simple_query("").map(|_| ())?)
    }

    fn has_broken(&self, conn: &mut PgConn) -> bool {
        conn.client.is_closed()
    }
}

/// The pool of one process, and the URL it connects to (without its password).
///
/// `inner` is `None` only while the pool is dropped: a `postgres::Client` closes by blocking on its own runtime,
/// which panics (and, in a destructor, aborts the process) on a thread that runs an async runtime, as the last
/// store handle of `cao-server` or `cao-mcp-server` does at shutdown. Dropping the pool hands the connections to
/// a plain thread to close and waits for it.
pub(crate) struct Pool {
    inner: Option<r2d2::Pool<Manager>>,
    shown: String,
}

impl Drop for Pool {
    fn drop(&mut self) {
        let Some(inner) = self.inner.take() else {
            return;
        };
        // Closed on a plain thread, waited for: this thread may run an async runtime.
        let closing = std::thread::Builder::new()
            .name("cao-pg-close".into())
            .spawn(move || drop(inner));
        match closing {
            Ok(handle) => {
                if handle.join().is_err() {
                    tracing::warn!("closing the database connections failed");
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not start a thread to close the database connections"),
        }
    }
}

/// A pool over `target` (no connection is made yet).
pub(crate) fn pool(target: Target) -> Pool {
    let shown = target.shown.clone();
    let inner = r2d2::Pool::builder()
        .max_size(POOL_MAX_SIZE)
        .min_idle(Some(0))
        // No test query per checkout (one round trip per transaction): a connection the server dropped fails its
        // `BEGIN`, and [`begin`] then takes another one.
        .test_on_check_out(false)
        .connection_timeout(CONNECT_WAIT)
        .error_handler(Box::new(r2d2::NopErrorHandler))
        .build_unchecked(Manager(target));
    Pool {
        inner: Some(inner),
        shown,
    }
}

/// A pooled connection, or [`StoreError::Unavailable`] naming the database.
pub(crate) fn checkout(pool: &Pool) -> Result<r2d2::PooledConnection<Manager>> {
    let inner = pool
        .inner
        .as_ref()
        .ok_or_else(|| StoreError::Unavailable(format!("the pool of {} is closed", pool.shown)))?;
    inner.get().map_err(|e| {
        StoreError::Unavailable(format!(
            "no connection to the database {} within {} s ({e})",
            pool.shown,
            CONNECT_WAIT.as_secs()
        ))
    })
}

/// How a transaction is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A read snapshot (`REPEATABLE READ READ ONLY`): every statement sees one committed state.
    Read,
    /// A write transaction holding the store's write lock for its whole duration (see [`WRITE_LOCK`]).
    Write,
}

impl Mode {
    /// The statements that open a transaction of this mode, sent as one simple query (one round trip; the lock key
    /// is this module's constant, never input).
    fn begin_text(self) -> String {
        match self {
            Mode::Read => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY".to_owned(),
            Mode::Write => format!("BEGIN; SELECT pg_advisory_xact_lock({WRITE_LOCK})"),
        }
    }
}

/// The key of the transaction-level advisory lock every write transaction takes first: writes of the whole store
/// are serialised (as the embedded store's single SQLite writer), so journal ids are dense in commit order across
/// replicas, term statistics and neighbour documents stay consistent, and writers never deadlock. Reads never wait
/// for it.
pub(crate) const WRITE_LOCK: i64 = 0x6361_6f5f_7772_6974;

/// A pooled connection with a transaction of `mode` open on it (a write holds [`WRITE_LOCK`]); wrap it with
/// [`Sql::open`].
///
/// The pool does not test a connection when it hands it out: a connection the server has closed since (a restart,
/// an idle timeout) fails the `BEGIN`, which has no effect, so another connection is taken, up to
/// [`POOL_MAX_SIZE`] + 1 times (every pooled connection may be stale after a restart).
///
/// Errors: [`StoreError::Unavailable`] when no connection works; the server's error for the `BEGIN` otherwise.
pub(crate) fn begin(pool: &Pool, mode: Mode) -> Result<r2d2::PooledConnection<Manager>> {
    let text = mode.begin_text();
    let mut lost = None;
    for _ in 0..=POOL_MAX_SIZE {
        let mut conn = checkout(pool)?;
        match conn.client.batch_execute(&text) {
            Ok(()) => return Ok(conn),
            Err(e) => {
                let err = db_err(e);
                if conn.client.is_closed() {
                    // Dropped from the pool when returned (`has_broken`).
                    lost = Some(err);
                    continue;
                }
                // The lock statement failed after `BEGIN`: leave the connection idle for its next user.
                let _ = conn.client.batch_execute("ROLLBACK");
                if matches!(err, StoreError::Unavailable(_)) {
                    lost = Some(err);
                    continue;
                }
                return Err(err);
            }
        }
    }
    Err(lost.unwrap_or_else(|| StoreError::Unavailable(format!("no working connection to {}", pool.shown))))
}

/// One open transaction and the connection's prepared statements: every statement of the backend runs here.
/// Dropped without [`Sql::commit`], the transaction is rolled back.
pub(crate) struct Sql<'c> {
    client: &'c mut postgres::Client,
    statements: &'c mut HashMap<String, Statement>,
    savepoints: u32,
    /// Numbers of the savepoints kept but not released yet (see [`Sql::savepoint`]).
    unreleased: Vec<u32>,
    /// Savepoints whose closure is running.
    running: u32,
    open: bool,
}

/// Most savepoints [`Sql::savepoint`] keeps open before releasing them (PostgreSQL keeps up to 64 subtransactions
/// of a transaction in shared memory before every snapshot taken elsewhere has to look them up on disk).
const UNRELEASED_MAX: usize = 16;

impl Drop for Sql<'_> {
    fn drop(&mut self) {
        if self.open {
            // Best effort: a lost connection has no transaction left to roll back.
            let _ = self.client.batch_execute("ROLLBACK");
        }
    }
}

impl<'c> Sql<'c> {
    /// Wrap `conn`, on which [`begin`] has opened a transaction.
    pub(crate) fn open(conn: &'c mut PgConn) -> Sql<'c> {
        let PgConn { client, statements } = conn;
        Sql {
            client,
            statements,
            savepoints: 0,
            unreleased: Vec::new(),
            running: 0,
            open: true,
        }
    }

    /// Commit. Errors: the client's.
    pub(crate) fn commit(mut self) -> Result<()> {
        self.open = false;
        self.client.batch_execute("COMMIT").map_err(db_err)
    }

    /// The prepared statement of `text` (prepared once per connection).
    fn statement(&mut self, text: &str) -> Result<Statement> {
        if let Some(s) = self.statements.get(text) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(text).map_err(db_err)?;
        if self.statements.len() > 512 {
            self.statements.clear();
        }
        self.statements.insert(text.to_owned(), s.clone());
        Ok(s)
    }

    /// Every row of `text`.
    pub(crate) fn query(&mut self, text: &str, params: &[Param<'_>]) -> Result<Vec<Row>> {
        let s = self.statement(text)?;
        self.client.query(&s, params).map_err(db_err)
    }

    /// The row of `text`, if any (more than one is an error).
    pub(crate) fn opt(&mut self, text: &str, params: &[Param<'_>]) -> Result<Option<Row>> {
        let s = self.statement(text)?;
        self.client.query_opt(&s, params).map_err(db_err)
    }

    /// The one row of `text`.
    pub(crate) fn one(&mut self, text: &str, params: &[Param<'_>]) -> Result<Row> {
        let s = self.statement(text)?;
        self.client.query_one(&s, params).map_err(db_err)
    }

    /// Run `text`; how many rows it changed.
    pub(crate) fn exec(&mut self, text: &str, params: &[Param<'_>]) -> Result<u64> {
        let s = self.statement(text)?;
        self.client.execute(&s, params).map_err(db_err)
    }

    /// Run statements without parameters (DDL, savepoints).
    pub(crate) fn batch(&mut self, text: &str) -> Result<()> {
        self.client.batch_execute(text).map_err(db_err)
    }

    /// Run `f` inside a savepoint: kept when it returns `Ok`, rolled back (then released) when it returns `Err`;
    /// `f`'s result is returned either way.
    ///
    /// A kept savepoint is not released at once (a round trip of its own): it stays open, its changes part of the
    /// transaction as after a release, until [`UNRELEASED_MAX`] are open, when the oldest is released with every
    /// later one in one statement (so a batch of many savepoints does not pile up subtransactions). Committing the
    /// transaction commits them all; rolling back to a later savepoint leaves the earlier ones' changes.
    ///
    /// Errors: the savepoint statements themselves failed (the transaction is then lost).
    pub(crate) fn savepoint<T, E>(
        &mut self,
        f: impl FnOnce(&mut Sql<'c>) -> std::result::Result<T, E>,
    ) -> Result<std::result::Result<T, E>> {
        self.savepoints += 1;
        let number = self.savepoints;
        self.batch(&format!("SAVEPOINT cao_sp_{number}"))?;
        self.running += 1;
        let out = f(self);
        self.running -= 1;
        if out.is_ok() {
            self.unreleased.push(number);
            // Only between savepoints: releasing one destroys every savepoint made after it, running ones too.
            if self.running == 0 && self.unreleased.len() >= UNRELEASED_MAX {
                let oldest = self.unreleased.iter().copied().min().unwrap_or(number);
                self.unreleased.clear();
                self.batch(&format!("RELEASE SAVEPOINT cao_sp_{oldest}"))?;
            }
        } else {
            // The rollback also destroys the savepoints made inside this one.
            self.unreleased.retain(|n| *n < number);
            self.batch(&format!(
                "ROLLBACK TO SAVEPOINT cao_sp_{number}; RELEASE SAVEPOINT cao_sp_{number}"
            ))?;
        }
        Ok(out)
    }
}

/// Column `i` of `row`.
///
/// Errors: [`StoreError::Database`] when it does not hold a `T` (a schema this version does not know).
pub(crate) fn col<'a, T: FromSql<'a>>(row: &'a Row, i: usize) -> Result<T> {
    row.try_get(i)
        .map_err(|e| StoreError::Database(format!("column {i}: {e}")))
}

/// The store's error for a client error: a lost connection, a server shutting down or refusing connections is
/// [`StoreError::Unavailable`]; any other server error [`StoreError::Database`] with its SQL state.
pub(crate) fn db_err(e: postgres::Error) -> StoreError {
    match e.as_db_error() {
        Some(db) => {
            let code = db.code().code();
            let text = format!("{} ({code})", db.message());
            if code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300") {
                StoreError::Unavailable(text)
            } else {
                StoreError::Database(text)
            }
        }
        None if e.is_closed() => StoreError::Unavailable("the connection to the database was lost".into()),
        None => StoreError::Unavailable(e.to_string()),
    }
}

/// A number the tables store as `bigint`.
pub(crate) fn big(v: u64) -> Result<i64> {
    i64::try_from(v).map_err(|_| StoreError::Invalid(format!("number {v} is larger than {}", i64::MAX)))
}

/// A stored `bigint` read back (negative values, which this backend never writes, read as 0).
pub(crate) fn small(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_file_lines_match_like_libpq() {
        let file = "# comment\nother:5432:*:*:no\n*:5432:cao:me:p\\:w\\\\d\nlocalhost:*:*:*:local\n";
        assert_eq!(
            pgpass_find(file, ["db", "5432", "cao", "me"]).as_deref(),
            Some("p:w\\d")
        );
        assert_eq!(
            pgpass_find(file, ["localhost", "5433", "x", "y"]).as_deref(),
            Some("local")
        );
        assert_eq!(pgpass_find(file, ["db", "5433", "cao", "me"]), None);
    }

    #[test]
    fn urls_are_parsed_without_showing_the_password() {
        let url = DatabaseUrl::parse("postgresql://u:secret@127.0.0.1:6543/d?sslmode=disable").expect("url");
        let t = Target::parse(&url).expect("target");
        assert_eq!(t.config.get_password(), Some(&b"secret"[..]));
        assert_eq!(t.config.get_ports(), &[6543]);
        assert!(!format!("{t:?}").contains("secret"));
        let url = DatabaseUrl::parse("postgresql://u:secret@h/d?sslmode=bogus").expect("url");
        let e = Target::parse(&url).expect_err("bad mode").to_string();
        assert!(e.contains("bogus") && !e.contains("secret"), "{e}");
        let url = DatabaseUrl::parse("postgres:///cao?host=%2Ftmp%2Fpg").expect("url");
        let t = Target::parse(&url).expect("socket");
        assert!(matches!(t.config.get_hosts()[0], postgres::config::Host::Unix(_)));
        assert_eq!(t.config.get_dbname(), Some("cao"));
    }
}
