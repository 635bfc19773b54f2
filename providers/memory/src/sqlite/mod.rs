//! [`MemoryDb`]: the blocking SQLite core of the store.
//!
//! One database file in WAL mode (readers never wait for the writer), `synchronous=NORMAL`
//! (a committed write survives a crash of the process; a power loss may lose the last
//! transactions but never corrupts the file), a busy timeout, and `BEGIN IMMEDIATE` for every
//! write so concurrent writers queue instead of failing half-way. Connections are pooled behind
//! a mutex; every call takes one for its duration, so a `MemoryDb` can be shared across threads
//! and several processes can use one file.
//!
//! A database that cannot be written (a read-only file, or a file in a read-only folder) is
//! opened read-only instead of failing: every read works, a search does not count accesses,
//! and every write fails with [`MemoryError::ReadOnly`]. [`OpenOptions::read_only`] asks for
//! that mode outright.
//!
//! Every method blocks; [`SqliteMemoryStore`], the public face of
//! this core, runs them on tokio's blocking pool.

mod docs;
mod index;
mod memindex;
mod norms;
mod reads;
mod rows;
mod schema;
mod search;
mod sketches;
mod store;
mod write;
mod writer;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

use crate::error::{MemoryError, Result};
use crate::options::OpenOptions;
use crate::vectors::Vectors;
use writer::{run_now, SqliteRows};

pub use store::SqliteMemoryStore;

/// Connections kept open for reuse.
const POOL_SIZE: usize = 4;

/// Changed pages a write keeps in memory before it spills them to the log: SQLite's default
/// cache, 2 MiB, in 4 KiB pages.
const SPILL_PAGES: usize = 512;

/// The condition `column = param` when a value is bound to `param`, else `param IS NULL`
/// (true: the value bound is NULL). Written per case, not as `(param IS NULL OR column =
/// param)`: SQLite plans a statement before its values are known, and that form kept it off
/// the index on `column` (the essentials' two pages at 100,000 memories read 227 pages instead
/// of 81; a one-project export read every project's rows).
fn equal_if_given(column: &str, param: &str, given: bool) -> String {
    if given {
        format!("{column} = {param}")
    } else {
        format!("{param} IS NULL")
    }
}

/// A JSON array of strings or numbers: how keywords are stored, and how a list is passed to
/// one statement (`IN (SELECT value FROM json_each(?))`). Serializing these never fails.
fn json_array(items: impl serde::Serialize) -> String {
    serde_json::to_string(&items).unwrap_or_else(|_| "[]".into())
}

impl From<rusqlite::Error> for MemoryError {
    /// The path is filled in by the store before the error leaves it.
    fn from(source: rusqlite::Error) -> Self {
        MemoryError::Sqlite {
            path: PathBuf::new(),
            source,
        }
    }
}

struct Inner {
    path: PathBuf,
    options: OpenOptions,
    pool: Mutex<Vec<Connection>>,
    /// In-memory indexes by project, each caught up in place after writes.
    indexes: Mutex<HashMap<String, Arc<std::sync::RwLock<memindex::ProjectIndex>>>>,
    /// Redacts secrets in memories read back, reporting each memory once.
    redacted: crate::decide::ReadRedactor,
    /// Projects whose index is being built in the background.
    building: Mutex<HashSet<String>>,
    /// Connections are read-only and writes are refused.
    read_only: AtomicBool,
    /// Read-only connections open the file as immutable (its folder can't hold a WAL index).
    immutable: AtomicBool,
    /// The thread copying the log back as the store opened ([`OpenOptions::checkpoint_on_open`]).
    checkpoint: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Drop for Inner {
    /// A store closes after the copy it started: a process that ends right after would cut it
    /// short, leaving the database file (though not the log) half-updated for a reader that
    /// cannot use the log. It has usually finished long before.
    fn drop(&mut self) {
        let copying = self
            .checkpoint
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(copying) = copying {
            let _ = copying.join();
        }
    }
}

/// The blocking SQLite memory store; cheap to clone (clones share connections and caches).
#[derive(Clone)]
pub(crate) struct MemoryDb {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for MemoryDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryDb")
            .field("path", &self.inner.path)
            .finish()
    }
}

impl MemoryDb {
    /// Open with default [`OpenOptions`].
    #[cfg(test)]
    pub(crate) fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, OpenOptions::default())
    }

    /// Open with these options, creating the file and migrating the schema when needed. A
    /// database that exists but cannot be written is opened read-only.
    pub(crate) fn open_with(path: impl AsRef<Path>, options: OpenOptions) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let read_only = options.is_read_only();
        let db = MemoryDb {
            inner: Arc::new(Inner {
                path: path.clone(),
                options,
                pool: Mutex::new(Vec::new()),
                indexes: Mutex::default(),
                redacted: crate::decide::ReadRedactor::default(),
                building: Mutex::default(),
                read_only: AtomicBool::new(read_only),
                immutable: AtomicBool::new(false),
                checkpoint: Mutex::new(None),
            }),
        };
        if read_only {
            db.open_read_only()?;
            return Ok(db);
        }
        match db.open_read_write() {
            Ok(()) => {
                if db.inner.options.checkpoints_on_open() {
                    db.checkpoint_in_background();
                }
                Ok(db)
            }
            Err(e) if is_read_only_failure(&e) && path.is_file() => {
                db.inner.read_only.store(true, Ordering::Relaxed);
                db.open_read_only().map_err(|_| e)?;
                tracing::debug!(path = %path.display(), "memory database opened read-only");
                Ok(db)
            }
            Err(e) => Err(e),
        }
    }

    fn open_read_write(&self) -> Result<()> {
        let path = &self.inner.path;
        let mut conn = self.connect()?;
        // SQLite opens a file it may not write read-only without a word, and a schema already
        // current needs no write: without this the first write (a search's access count)
        // failed instead.
        if conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) {
            return Err(MemoryError::ReadOnly { path: path.clone() });
        }
        let open_err = |source| MemoryError::Open {
            path: path.clone(),
            source,
        };
        match schema::migrate(&mut conn).map_err(open_err)? {
            schema::Migrated::Ok => {}
            schema::Migrated::TooNew(found) => {
                return Err(MemoryError::SchemaTooNew {
                    path: path.clone(),
                    found,
                    supported: schema::LATEST,
                })
            }
        }
        self.release(conn);
        Ok(())
    }

    /// Open read-only: check the schema can be read, without migrating anything. Falls back to
    /// an immutable open when the folder cannot hold the WAL index SQLite needs.
    fn open_read_only(&self) -> Result<()> {
        let path = &self.inner.path;
        let probe = |conn: &Connection| schema::user_version(conn);
        let (conn, version) = match self.connect().and_then(|c| {
            probe(&c).map(|v| (c, v)).map_err(|source| MemoryError::Open {
                path: path.clone(),
                source,
            })
        }) {
            Ok(ok) => ok,
            Err(_) => {
                self.inner.immutable.store(true, Ordering::Relaxed);
                let c = self.connect()?;
                let v = probe(&c).map_err(|source| MemoryError::Open {
                    path: path.clone(),
                    source,
                })?;
                (c, v)
            }
        };
        if version > schema::LATEST {
            return Err(MemoryError::SchemaTooNew {
                path: path.clone(),
                found: version,
                supported: schema::LATEST,
            });
        }
        if version == 0 {
            // Nothing to read, and the tables cannot be created.
            return Err(MemoryError::ReadOnly { path: path.clone() });
        }
        self.release(conn);
        Ok(())
    }

    /// Whether calls run on tokio's blocking pool ([`OpenOptions::blocking_pool`]).
    pub(crate) fn on_blocking_pool(&self) -> bool {
        self.inner.options.on_blocking_pool()
    }

    /// Whether this database was opened read-only (asked for, or because it can't be written).
    pub(crate) fn is_read_only(&self) -> bool {
        self.inner.read_only.load(Ordering::Relaxed)
    }

    fn now(&self) -> i64 {
        self.inner.options.now_ms()
    }

    fn connect(&self) -> Result<Connection> {
        let path = &self.inner.path;
        let open_err = |source| MemoryError::Open {
            path: path.clone(),
            source,
        };
        if self.is_read_only() {
            let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            let conn = if self.inner.immutable.load(Ordering::Relaxed) {
                Connection::open_with_flags(file_uri(path, "immutable=1"), flags)
            } else {
                Connection::open_with_flags(file_uri(path, "mode=ro"), flags)
            }
            .map_err(open_err)?;
            conn.busy_timeout(self.inner.options.writer_wait())
                .map_err(open_err)?;
            conn.execute_batch("PRAGMA query_only = ON;").map_err(open_err)?;
            self.size_cache(&conn).map_err(open_err)?;
            return Ok(conn);
        }
        let conn = Connection::open(path).map_err(open_err)?;
        conn.busy_timeout(self.inner.options.writer_wait())
            .map_err(open_err)?;
        // The first statement reads the header: a file that is not a database fails here.
        conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
            .map_err(open_err)?;
        conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
            .map_err(open_err)?;
        self.size_cache(&conn).map_err(open_err)?;
        if self.inner.options.checkpoints_on_open() {
            conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
                .map_err(open_err)?;
        }
        Ok(conn)
    }

    /// Copy the log back into the database file on a thread of its own, through a connection
    /// of its own, without waiting for readers or writers (a passive checkpoint): what the
    /// last process's writes left in the log, while this one reads. Each open that does this
    /// copies its predecessor's writes, so the log stays a few writes long and a new process
    /// rebuilds its index quickly. The store waits for it as it closes.
    fn checkpoint_in_background(&self) {
        let path = self.inner.path.clone();
        let copy = move || {
            let copied = Connection::open(&path).and_then(|conn| {
                conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
                conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                    Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
                })
            });
            match copied {
                Ok((log, copied)) => tracing::debug!(log, copied, "memory log copied back"),
                Err(error) => {
                    tracing::debug!(%error, "the memory log was not copied back; the next open copies it")
                }
            }
        };
        match std::thread::Builder::new()
            .name("ctxkit-memory-checkpoint".into())
            .spawn(copy)
        {
            Ok(handle) => *search::lock(&self.inner.checkpoint) = Some(handle),
            Err(error) => tracing::debug!(%error, "cannot start copying the memory log back"),
        }
    }

    /// Wait for the copy [`checkpoint_in_background`](Self::checkpoint_in_background) started.
    #[cfg(test)]
    pub(crate) fn wait_for_checkpoint(&self) {
        if let Some(handle) = search::lock(&self.inner.checkpoint).take() {
            handle.join().expect("the checkpoint thread");
        }
    }

    /// Give a new connection the page cache asked for ([`OpenOptions::cache_pages`]). Its
    /// changed pages spill to the log at SQLite's default cache size, as without the option,
    /// so a small cache keeps a large write from writing its pages out more than once.
    fn size_cache(&self, conn: &Connection) -> rusqlite::Result<()> {
        match self.inner.options.page_cache() {
            Some(pages) => conn.execute_batch(&format!(
                "PRAGMA cache_size = {pages}; PRAGMA cache_spill = {SPILL_PAGES};"
            )),
            None => Ok(()),
        }
    }

    fn release(&self, conn: Connection) {
        let mut pool = self.inner.pool.lock().unwrap_or_else(|p| p.into_inner());
        if pool.len() < POOL_SIZE {
            pool.push(conn);
        }
    }

    /// Fill in this database's path on errors raised without it.
    fn attach_path(&self, err: MemoryError) -> MemoryError {
        match err {
            MemoryError::Sqlite { path, source } if path.as_os_str().is_empty() => MemoryError::Sqlite {
                path: self.inner.path.clone(),
                source,
            },
            other => other,
        }
    }

    fn with_conn<T>(&self, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        let pooled = self.inner.pool.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut conn = match pooled {
            Some(c) => c,
            None => self.connect()?,
        };
        let out = f(&mut conn).map_err(|e| self.attach_path(e));
        self.release(conn);
        out
    }

    /// Run `f` in a `BEGIN IMMEDIATE` transaction and commit it when `f` succeeds; then bring
    /// the loaded in-memory search indexes up to date in place.
    fn write<T>(&self, f: impl FnOnce(&Transaction, i64) -> Result<T>) -> Result<T> {
        self.write_statement(|conn, now| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let out = f(&tx, now)?;
            tx.commit()?;
            Ok(out)
        })
    }

    /// Run `f` on a connection that may write, then bring the loaded in-memory search indexes
    /// up to date. On its own (no `BEGIN`), a write of one statement is its own transaction:
    /// it takes the write lock as `BEGIN IMMEDIATE` would, and waits for it the same way.
    /// Inside a transaction SQLite keeps a statement journal for a statement that changes many
    /// rows, in a temporary file once it passes 64 KiB: a search's access count created one
    /// in every hook.
    fn write_statement<T>(&self, f: impl FnOnce(&mut Connection, i64) -> Result<T>) -> Result<T> {
        if self.is_read_only() {
            return Err(MemoryError::ReadOnly {
                path: self.inner.path.clone(),
            });
        }
        self.with_conn(|conn| {
            let out = f(conn, self.now())?;
            self.refresh_indexes(conn);
            Ok(out)
        })
    }

    /// Run one of the shared writes ([`crate::write`]) in a write transaction, as [`write`]
    /// does; `vectors` are the sentence vectors of the contents it will write (see
    /// [`MemoryDb::vectors`]).
    ///
    /// [`write`]: Self::write
    fn write_rows<T>(
        &self,
        vectors: Option<Vectors>,
        f: impl AsyncFnOnce(&mut SqliteRows<'_>, i64) -> Result<T>,
    ) -> Result<T> {
        self.write(|tx, now| {
            let mut rows = SqliteRows::new(self, tx, vectors);
            let out = run_now(f(&mut rows, now))?;
            rows.finish()?;
            Ok(out)
        })
    }

    /// With a model configured, the vectors of `contents`, computed before the write's
    /// transaction so it holds the lock for no longer than without a model.
    fn vectors<'a>(&self, contents: impl IntoIterator<Item = &'a str>) -> Option<Vectors> {
        self.inner.options.semantic().map(|s| s.prepare(contents))
    }

    /// Run `f` in a read transaction (one consistent snapshot).
    fn read<T>(&self, f: impl FnOnce(&Transaction) -> Result<T>) -> Result<T> {
        self.with_conn(|conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
            f(&tx)
        })
    }
}

/// A failure that means "this file can be read but not written": SQLite's read-only errors,
/// or it could not open what it needs beside the file (the WAL files of a read-only folder).
fn is_read_only_failure(e: &MemoryError) -> bool {
    let (MemoryError::Open { source, .. } | MemoryError::Sqlite { source, .. }) = e else {
        return matches!(e, MemoryError::ReadOnly { .. });
    };
    matches!(
        source.sqlite_error_code(),
        Some(
            rusqlite::ErrorCode::ReadOnly
                | rusqlite::ErrorCode::CannotOpen
                | rusqlite::ErrorCode::PermissionDenied
        )
    )
}

/// A `file:` URI for `path` with one query parameter (`%`, `?` and `#` escaped).
fn file_uri(path: &Path, param: &str) -> String {
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push('?');
    uri.push_str(param);
    uri
}

#[cfg(test)]
mod tests;
