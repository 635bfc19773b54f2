//! [`PostgresStore`]: project memory on a PostgreSQL server, shared by many processes on many
//! machines, with the behaviour of the SQLite store.
//!
//! - **Connections** come from a pool (`deadpool-postgres`), at most [`POOL_SIZE`] per store.
//!   TLS (rustls with the Mozilla roots) is used as the URL says: `sslmode=require` insists on
//!   it, `prefer` (the default) uses it when the server offers it, `disable` never does.
//! - **The schema** is migrated on connect, under an advisory lock, and its version kept in
//!   `ctxkit_schema_version`; a database newer than this build is refused.
//! - **Writes** run in one transaction each, after taking a per-project advisory lock
//!   (`pg_advisory_xact_lock`), so the writers of a project take turns as SQLite's
//!   `BEGIN IMMEDIATE` writers do: an upsert sees every committed memory before deciding to
//!   merge, and nothing is lost or duplicated however many processes write. Unique constraints
//!   back this up; a transaction that loses a race (a unique violation, a serialization failure
//!   or a deadlock) is retried.
//! - **Reads** run in a read-only `REPEATABLE READ` transaction: one consistent snapshot.
//! - **Search** takes its candidates from the impact-ordered postings SQLite keeps too
//!   ([`crate::postings`]: the crate's own terms, so stemming and tokens match), then ranks them
//!   with the crate's ranking ([`crate::retrieval`]); document frequencies are read in the same
//!   snapshot, so nothing is cached and nothing can be stale.
//! - The password of the URL is never shown: errors and logs name the server by
//!   [`redact_url`].

mod reads;
mod rows;
mod schema;
mod search;
mod sketches;
mod write;
mod writer;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tracing::Instrument;

use crate::backend::Backend;
use crate::decide::ReadRedactor;
use crate::error::{MemoryError, Result};
use crate::options::OpenOptions;
use crate::reads::Read;
use crate::search::Query;
use crate::types::*;
use crate::vectors::Vectors;
use crate::write::{Done, Op};
use ctxkit_secrets::redact_url;

/// Connections a store keeps open at most.
const POOL_SIZE: usize = 8;
/// A write that loses a race is tried again, at most this many times.
const MAX_ATTEMPTS: u32 = 8;
/// How long a new connection may take per host of the URL, from opening the socket to the
/// end of authentication, unless the URL's `connect_timeout` says otherwise.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// SQLSTATEs after which a write is simply tried again: a serialization failure, a deadlock,
/// and a unique violation (two writers minted the same id, or raced on an index row).
const RETRYABLE: [&str; 3] = ["40001", "40P01", "23505"];

/// Project memory on a PostgreSQL server. Clones share one connection pool.
///
/// Open it with a `postgres://` or `postgresql://` URL:
///
/// ```no_run
/// use ctxkit_memory::{MemoryCategory, MemoryStore, NewMemoryEntry, PostgresStore};
/// # async fn run() -> ctxkit_memory::Result<()> {
/// let store = PostgresStore::connect("postgres://ctxkit@db.internal/memory?sslmode=require").await?;
/// store.add(NewMemoryEntry::new("/repo", MemoryCategory::Fact, "The API lives in src/api")).await?;
/// # Ok(()) }
/// ```
///
/// Besides [`MemoryStore`](crate::MemoryStore), it has the upkeep of [`Maintenance`](crate::Maintenance), as the
/// SQLite store does.
#[derive(Clone)]
pub struct PostgresStore {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    /// The URL with its password redacted: what errors and logs show.
    url: String,
    options: OpenOptions,
    redactor: ReadRedactor,
    /// Set once the schema was checked (and migrated when needed) by this store.
    migrated: tokio::sync::OnceCell<()>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("url", &self.inner.url)
            .finish()
    }
}

/// Whether `db` names a PostgreSQL server (`postgres://…` or `postgresql://…`) rather than a
/// SQLite file.
pub fn is_postgres_url(db: &str) -> bool {
    let lower = db.trim_start().to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

impl PostgresStore {
    /// Connect to the server at `url`, creating or migrating the schema when needed.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, OpenOptions::default()).await
    }

    /// Connect with options: the clock, the candidate limit and read-only apply; a PostgreSQL
    /// store keeps no in-memory index, so the search-index mode does not.
    pub async fn connect_with(url: &str, options: OpenOptions) -> Result<Self> {
        let store = Self::open_with(url, options)?;
        drop(store.client().await?);
        Ok(store)
    }

    /// A store for `url` that connects (and checks or migrates the schema) on its first call,
    /// for callers that cannot wait here; a bad URL fails now, a server that cannot be reached
    /// or a schema of another version fails the first call.
    pub fn open_with(url: &str, options: OpenOptions) -> Result<Self> {
        let shown = redact_url(url);
        let connect_error = |reason: String| MemoryError::Connect {
            url: shown.clone(),
            reason,
        };
        let mut config: tokio_postgres::Config = url.parse().map_err(|e: tokio_postgres::Error| {
            connect_error(scrub(
                &format!("the URL is not a valid PostgreSQL URL ({e})"),
                url,
            ))
        })?;
        // tokio-postgres bounds only each socket's connection with it; the pool's create
        // timeout below bounds the whole connection (each host of the URL in turn), so a
        // server that accepts and then says nothing cannot hang a caller.
        let connect_timeout = *config.get_connect_timeout().unwrap_or(&CONNECT_TIMEOUT);
        config.connect_timeout(connect_timeout);
        let hosts = u32::try_from(config.get_hosts().len()).unwrap_or(u32::MAX).max(1);
        if config.get_application_name().is_none() {
            config.application_name("ctxkit");
        }
        let manager = Manager::from_config(
            config,
            tls()?,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .create_timeout(Some(connect_timeout.saturating_mul(hosts)))
            .build()
            .map_err(|e| connect_error(e.to_string()))?;
        Ok(PostgresStore {
            inner: Arc::new(Inner {
                pool,
                url: shown,
                options,
                redactor: ReadRedactor::default(),
                migrated: tokio::sync::OnceCell::new(),
            }),
        })
    }

    /// The server's URL with its password redacted.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    fn now(&self) -> i64 {
        self.inner.options.now_ms()
    }

    /// A pooled connection, the schema checked first; a failure to connect is one sentence
    /// naming the (redacted) URL.
    async fn client(&self) -> Result<deadpool_postgres::Object> {
        let client = self.connection().await?;
        self.inner
            .migrated
            .get_or_try_init(|| async {
                let span = tracing::debug_span!("memory.pg.migrate", url = %self.inner.url);
                schema::migrate(&client, self.inner.options.is_read_only())
                    .instrument(span)
                    .await
                    .map_err(|e| self.attach_url(e))
            })
            .await?;
        Ok(client)
    }

    async fn connection(&self) -> Result<deadpool_postgres::Object> {
        self.inner.pool.get().await.map_err(|e| {
            let reason = match e {
                deadpool_postgres::PoolError::Backend(e) => describe(&e),
                deadpool_postgres::PoolError::Timeout(_) => {
                    let limit = self.inner.pool.timeouts().create.unwrap_or(CONNECT_TIMEOUT);
                    format!("the server did not answer within {} s", limit.as_secs_f32())
                }
                other => other.to_string(),
            };
            MemoryError::Connect {
                url: self.inner.url.clone(),
                reason,
            }
        })
    }

    /// Fill in this server's URL on errors raised without it.
    fn attach_url(&self, err: MemoryError) -> MemoryError {
        match err {
            MemoryError::Server {
                url,
                reason,
                sqlstate,
            } if url.is_empty() => MemoryError::Server {
                url: self.inner.url.clone(),
                reason,
                sqlstate,
            },
            MemoryError::SchemaTooNew {
                path,
                found,
                supported,
            } if path.as_os_str().is_empty() => MemoryError::SchemaTooNew {
                path: self.inner.url.clone().into(),
                found,
                supported,
            },
            other => other,
        }
    }

    fn refuse_read_only(&self) -> Result<()> {
        if self.inner.options.is_read_only() {
            return Err(MemoryError::ReadOnly {
                path: self.inner.url.clone().into(),
            });
        }
        Ok(())
    }

    /// With a model configured, the vectors of `contents`, computed before the write's
    /// transaction, on the blocking pool (embedding is arithmetic, not I/O).
    async fn vectors<'a>(&self, contents: impl IntoIterator<Item = &'a str>) -> Result<Option<Vectors>> {
        let Some(semantic) = self.inner.options.semantic().cloned() else {
            return Ok(None);
        };
        let contents: Vec<String> = contents.into_iter().map(str::to_owned).collect();
        if contents.is_empty() {
            // Nothing to embed now; what the write stores unannounced is embedded then.
            return Ok(Some(semantic.prepare([])));
        }
        tokio::task::spawn_blocking(move || Some(semantic.prepare(contents.iter().map(String::as_str))))
            .await
            .map_err(|e| MemoryError::Task(format!("embedding the memories stopped: {e}")))
    }

    /// Run one store call in a span naming it, with the URL attached to its errors.
    async fn traced<T>(
        &self,
        call: &'static str,
        fut: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        let span = tracing::debug_span!("memory.pg", call, url = %self.inner.url);
        fut.instrument(span).await.map_err(|e| self.attach_url(e))
    }
}

/// Run `$body` in a write transaction holding the advisory locks of `$projects` (an iterator
/// of project paths), with `$tx` the transaction and `$now` the time; commit when it returns
/// `Ok`, and try the whole transaction again when it lost a race.
macro_rules! write_tx {
    ($store:expr, $projects:expr, |$tx:ident, $now:ident| $body:block) => {{
        let store: &$crate::postgres::PostgresStore = $store;
        store.refuse_read_only()?;
        let keys = $crate::postgres::lock_keys($projects);
        let mut attempt = 1;
        loop {
            let result: $crate::error::Result<_> = async {
                let mut client = store.client().await?;
                let $tx = client.transaction().await?;
                for key in &keys {
                    $tx.execute("SELECT pg_advisory_xact_lock($1)", &[key]).await?;
                }
                let $now = store.now();
                let out = $body;
                $tx.commit().await?;
                Ok(out)
            }
            .await;
            match result {
                Err(e) if $crate::postgres::retryable(&e) && attempt < $crate::postgres::MAX_ATTEMPTS => {
                    tracing::debug!(attempt, error = %e, "memory write lost a race; trying again");
                    tokio::time::sleep(std::time::Duration::from_millis(5 << attempt.min(6))).await;
                    attempt += 1;
                }
                other => break other,
            }
        }
    }};
}
pub(crate) use write_tx;

/// Run `$body` in a read-only `REPEATABLE READ` transaction (one snapshot), `$tx` naming it.
macro_rules! read_tx {
    ($store:expr, |$tx:ident| $body:block) => {{
        let store: &$crate::postgres::PostgresStore = $store;
        async {
            let mut client = store.client().await?;
            let $tx = client
                .build_transaction()
                .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await?;
            let out = $body;
            $tx.commit().await?;
            Ok::<_, $crate::error::MemoryError>(out)
        }
        .await
    }};
}

/// The advisory-lock keys of some projects, sorted and distinct so two writers locking the
/// same projects never wait on each other in a cycle.
pub(crate) fn lock_keys<'a>(projects: impl IntoIterator<Item = &'a str>) -> Vec<i64> {
    let mut keys: Vec<i64> = projects
        .into_iter()
        .map(|p| crate::ids::project_hash(p) as i64)
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Whether a failed write should be tried again.
pub(crate) fn retryable(e: &MemoryError) -> bool {
    matches!(e, MemoryError::Server { sqlstate: Some(code), .. } if RETRYABLE.contains(&code.as_str()))
}

impl From<tokio_postgres::Error> for MemoryError {
    /// The URL is filled in by the store before the error leaves it.
    fn from(e: tokio_postgres::Error) -> Self {
        MemoryError::Server {
            url: String::new(),
            reason: describe(&e),
            sqlstate: e.code().map(|c| c.code().to_string()),
        }
    }
}

/// One sentence for a client error: the server's message when it sent one, else the error and
/// its cause.
fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return db.message().to_string();
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        source = s.source();
    }
    text
}

/// `text` without the URL's password, wherever it appears (a parser may quote the value).
fn scrub(text: &str, url: &str) -> String {
    let shown = redact_url(text);
    let password = password_of(url);
    match password {
        Some(p) if !p.is_empty() => shown.replace(&p, "***"),
        _ => shown,
    }
}

/// The password written in a URL's authority, if any: up to the first `@`, as PostgreSQL's
/// URL parser reads it (so it may hold a `/`).
fn password_of(url: &str) -> Option<String> {
    let rest = &url[url.find("://")? + 3..];
    let userinfo = &rest[..rest.find('@')?];
    Some(userinfo[userinfo.find(':')? + 1..].to_string())
}

/// The TLS connector: rustls with the Mozilla root certificates.
fn tls() -> Result<tokio_postgres_rustls::MakeRustlsConnect> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let config =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| MemoryError::Invalid(format!("cannot set up TLS: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

#[async_trait]
impl Backend for PostgresStore {
    fn is_read_only(&self) -> bool {
        self.inner.options.is_read_only()
    }
    fn redactor(&self) -> &ReadRedactor {
        &self.inner.redactor
    }
    fn options(&self) -> &OpenOptions {
        &self.inner.options
    }
    async fn write(&self, call: &'static str, op: Op) -> Result<Done> {
        self.traced(call, write::run(self, op)).await
    }
    async fn read(&self, call: &'static str, read: Read) -> Result<Done> {
        let answer = async { read_tx!(self, |tx| { read.run(&tx).await? }) };
        self.traced(call, answer).await
    }
    async fn rank(&self, query: Query) -> Result<Vec<MemorySearchResult>> {
        // Ranked exactly as on SQLite, in one snapshot (so frequencies are never stale).
        let options = &self.inner.options;
        let found = async { read_tx!(self, |tx| { crate::search::search(&tx, options, query).await? }) };
        self.traced("search", found).await
    }
    async fn touch(&self, ids: &[String]) -> Result<()> {
        self.traced("touch", write::touch(self, ids)).await
    }
}

crate::backend::session_store!(PostgresStore);
