//! The schema and its forward migrations, tracked in `PRAGMA user_version`.
//!
//! Migration `n` takes a database from version `n - 1` to `n`; each runs in its own
//! `BEGIN IMMEDIATE` transaction, so two processes opening a fresh file do not both migrate.
//! A database newer than [`LATEST`] is refused rather than guessed at.
//!
//! Design choices, each for a reason:
//! - timestamps are `INTEGER` Unix milliseconds (set from an injectable clock), not `TEXT`;
//! - `project_memories` has an `INTEGER PRIMARY KEY` (`num`) so the search index can refer
//!   to rows by a stable rowid; `id TEXT` is `NOT NULL UNIQUE`, the key callers know a memory by;
//! - TF-IDF vectors are computed at query time from the content and the project's live
//!   document frequencies (`memory_terms`), so they are never stale;
//! - `decayed_at` remembers the last decay so repeated decays compound correctly;
//! - `superseded_by` / `superseded_at` (v3) keep a replaced memory with a link to its successor
//!   instead of deleting it, so history shows it and undo brings it back;
//! - `memory_index_log` (v3) lists, per project and generation, which row was added to or
//!   removed from the index, so an in-memory index catches up with a few changes instead of
//!   being rebuilt from every row;
//! - v3 also re-indexes every memory, because terms became stemmed;
//! - `skill_library` (v4) keeps each learned skill as one JSON record: nothing queries inside
//!   it, and its fields change without a migration;
//! - the listing indexes (v5) cover their whole `ORDER BY`, so a page never sorts a project;
//! - impact-ordered postings (v6, [`crate::postings`]) replace the FTS5 table, whose `bm25`
//!   scored every memory holding a query term before any cut;
//! - the category index (v7) covers the importance order too, so the essentials (the most
//!   important preferences and corrections) are two bounded pages;
//! - `embedding_model` and `embedding` (v8) keep a memory's sentence vector, only when a model
//!   is configured, in its row with the model's identity, so it is written, moved and deleted
//!   with the row;
//! - `memory_sketches` (v9) packs the signs of the current vectors 256 memories to a row
//!   ([`crate::sketches`]), so a search reads an eighth of the vectors' bytes in a few hundred
//!   rows and the exact vectors of only the best; it is written from the vectors, here and by
//!   every write.

use rusqlite::{Connection, TransactionBehavior};

use super::index;
use super::rows::{select_entries, COLS};

/// The schema version this build writes.
pub(crate) const LATEST: i64 = 11;

const V1: &str = r#"
CREATE TABLE project_memories (
    num INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    project_path TEXT NOT NULL,
    category TEXT NOT NULL CHECK(category IN ('preference', 'convention', 'pattern', 'correction', 'fact')),
    content TEXT NOT NULL CHECK(length(content) > 0),
    keywords TEXT NOT NULL DEFAULT '[]',
    importance REAL NOT NULL DEFAULT 0.5 CHECK(importance >= 0.0 AND importance <= 1.0),
    access_count INTEGER NOT NULL DEFAULT 0,
    source_session_id TEXT,
    source_context TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    last_accessed_at INTEGER NOT NULL,
    decayed_at INTEGER,
    UNIQUE(project_path, content)
);
-- The UNIQUE(project_path, content) index already serves lookups by project.
CREATE INDEX idx_project_memories_category ON project_memories(project_path, category);
CREATE INDEX idx_project_memories_importance ON project_memories(project_path, importance DESC);
CREATE INDEX idx_project_memories_created ON project_memories(project_path, created_at DESC);

CREATE TABLE episodic_records (
    id TEXT PRIMARY KEY,
    project_path TEXT NOT NULL,
    session_id TEXT NOT NULL,
    record_type TEXT NOT NULL CHECK(record_type IN ('success', 'failure', 'discovery')),
    task_summary TEXT NOT NULL,
    approach_summary TEXT NOT NULL,
    outcome_summary TEXT NOT NULL,
    tools_used TEXT NOT NULL DEFAULT '[]',
    keywords TEXT NOT NULL DEFAULT '[]',
    created_at INTEGER NOT NULL
);
CREATE INDEX idx_episodic_records_project ON episodic_records(project_path, created_at DESC);

-- Every insert, merge, update, delete, decay and restore, with the memory before and after
-- (JSON), so changes can be inspected and undone.
CREATE TABLE memory_history (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id TEXT NOT NULL,
    project_path TEXT NOT NULL,
    action TEXT NOT NULL CHECK(action IN ('insert', 'merge', 'update', 'delete', 'decay', 'restore')),
    before TEXT,
    after TEXT,
    related_id TEXT,
    reason TEXT,
    at INTEGER NOT NULL
);
CREATE INDEX idx_memory_history_memory ON memory_history(memory_id, id);
CREATE INDEX idx_memory_history_project ON memory_history(project_path, id);

-- Per project: how many memories, and a generation bumped whenever the vocabulary changes
-- (readers cache document frequencies and reload when it moves). Rows are never deleted.
CREATE TABLE memory_projects (
    project_path TEXT PRIMARY KEY,
    docs INTEGER NOT NULL DEFAULT 0,
    generation INTEGER NOT NULL DEFAULT 0
);

-- Document frequency of each content term, per project: the IDF of TF-IDF.
CREATE TABLE memory_terms (
    project_path TEXT NOT NULL,
    term TEXT NOT NULL,
    df INTEGER NOT NULL,
    PRIMARY KEY(project_path, term)
) WITHOUT ROWID;

-- Candidate retrieval: rowid = project_memories.num; `project` is a hash token of the project
-- path, `terms` the memory's content and keyword terms as the crate's tokenizer sees them.
CREATE VIRTUAL TABLE memory_fts USING fts5(
    project, terms,
    content = '', contentless_delete = 1,
    tokenize = "unicode61 remove_diacritics 0 tokenchars '_+#'"
);
"#;

const V2: &str = r#"
-- The `project:` state of threads (keys meant to outlive a thread), persisted per project.
CREATE TABLE project_state (
    project_path TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY(project_path, key)
) WITHOUT ROWID;
"#;

const V3: &str = r#"
ALTER TABLE project_memories ADD COLUMN superseded_by TEXT;
ALTER TABLE project_memories ADD COLUMN superseded_at INTEGER;
CREATE INDEX idx_project_memories_superseded ON project_memories(superseded_by) WHERE superseded_by IS NOT NULL;

-- History learns the `supersede` action: SQLite cannot change a CHECK, so the table is copied.
CREATE TABLE memory_history_v3 (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id TEXT NOT NULL,
    project_path TEXT NOT NULL,
    action TEXT NOT NULL CHECK(action IN ('insert', 'merge', 'update', 'delete', 'decay', 'restore', 'supersede')),
    before TEXT,
    after TEXT,
    related_id TEXT,
    reason TEXT,
    at INTEGER NOT NULL
);
INSERT INTO memory_history_v3 SELECT * FROM memory_history;
DROP TABLE memory_history;
ALTER TABLE memory_history_v3 RENAME TO memory_history;
CREATE INDEX idx_memory_history_memory ON memory_history(memory_id, id);
CREATE INDEX idx_memory_history_project ON memory_history(project_path, id);

-- One row per generation of a project's index: the row added or removed ('clear' for all).
CREATE TABLE memory_index_log (
    project_path TEXT NOT NULL,
    generation INTEGER NOT NULL,
    num INTEGER NOT NULL,
    op TEXT NOT NULL CHECK(op IN ('add', 'remove', 'clear')),
    PRIMARY KEY(project_path, generation)
) WITHOUT ROWID;

-- Terms are stemmed from v3 on: the index is rebuilt from the rows (in Rust, after this).
INSERT INTO memory_fts(memory_fts) VALUES('delete-all');
DELETE FROM memory_terms;
UPDATE memory_projects SET docs = 0, generation = generation + 1;
"#;

const V4: &str = r#"
-- Skills learned from sessions (`crate::learned`), one JSON record per project and name.
CREATE TABLE skill_library (
    project_path TEXT NOT NULL,
    name TEXT NOT NULL,
    record TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY(project_path, name)
) WITHOUT ROWID;
"#;

const V5: &str = r#"
-- Listing orders covered whole by their index, so a page of the most important (the
-- essentials of every request) or the newest memories reads a page of rows, never sorts the
-- project (SQLite 3.50 sorted all 100,000 rows of a project for `importance DESC, created_at
-- DESC, id` with the importance-only index: 160 ms).
DROP INDEX idx_project_memories_importance;
DROP INDEX idx_project_memories_created;
CREATE INDEX idx_project_memories_importance ON project_memories(project_path, importance DESC, created_at DESC, id);
CREATE INDEX idx_project_memories_created ON project_memories(project_path, created_at DESC, id);
"#;

const V6: &str = r#"
-- Candidate retrieval from impact-ordered postings (`crate::postings`): a term's best memories
-- are the first entries of its range, so a search reads a bounded prefix per query term
-- instead of scoring every memory holding it (FTS5's bm25: 35 ms for a common term at
-- 100,000 memories). `project` is a hash of the project path; rows read through a posting are
-- checked against the path. The postings are written from the rows (in Rust, after this).
CREATE TABLE memory_postings (
    project INTEGER NOT NULL,
    term TEXT NOT NULL,
    impact INTEGER NOT NULL,
    num INTEGER NOT NULL,
    PRIMARY KEY(project, term, impact DESC, num)
) WITHOUT ROWID;
DROP TABLE memory_fts;
"#;

const V7: &str = r#"
-- A category's page in importance order (the essentials read the preferences' and the
-- corrections' pages on every request) is a range of this index, not a walk of the project's
-- importance order that skips the other categories.
DROP INDEX idx_project_memories_category;
CREATE INDEX idx_project_memories_category ON project_memories(project_path, category, importance DESC, created_at DESC, id);
"#;

const V8: &str = r#"
-- A sentence vector per memory when a model is configured (`crate::vectors`): the encoded
-- vector and the identity of the model that made it, so another model's vectors are never
-- compared with this one's. NULL without a model.
ALTER TABLE project_memories ADD COLUMN embedding_model TEXT;
ALTER TABLE project_memories ADD COLUMN embedding BLOB;
-- A search reads every current vector of its project: from this index alone, in order,
-- instead of a row lookup per memory (10,000 memories: 4 ms instead of 15-24 ms).
CREATE INDEX idx_project_memories_vectors ON project_memories(project_path, embedding_model, num, embedding)
    WHERE superseded_by IS NULL AND embedding IS NOT NULL;
"#;

const V9: &str = r#"
-- The signs of each current vector (`crate::sketches`), 256 memories of one project and model
-- to a row: `slots` the rows' low bytes in order, `sketches` their signs one after another.
CREATE TABLE memory_sketches (
    project_path TEXT NOT NULL,
    embedding_model TEXT NOT NULL,
    pack INTEGER NOT NULL,
    slots BLOB NOT NULL,
    sketches BLOB NOT NULL,
    PRIMARY KEY (project_path, embedding_model, pack)
) WITHOUT ROWID;
"#;

const V10: &str = r#"
-- Each memory's terms as the index sees them (`crate::text::MemoryTerms`), written with the
-- row, so a search reads its candidates' terms instead of tokenizing them again. NULL for rows
-- written before: they are tokenized when read, as before, until `fill_terms` stores theirs
-- (no rewrite here, which at 100,000 memories would outlast a hook's wait).
ALTER TABLE project_memories ADD COLUMN content_terms TEXT;
ALTER TABLE project_memories ADD COLUMN keyword_terms TEXT;
"#;

const V11: &str = r#"
-- Conversations kept between processes (`ctxkit::SessionStore`): each thread's saved form,
-- redacted (`crate::sessions`), by its id.
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    thread TEXT NOT NULL,
    turns INTEGER NOT NULL,
    messages INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
"#;

const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11];

/// Outcome of [`migrate`]: the version found, or that it is too new.
pub(crate) enum Migrated {
    Ok,
    TooNew(i64),
}

pub(crate) fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

/// Bring the database up to `target` (at most [`LATEST`]).
pub(crate) fn migrate_to(conn: &mut Connection, target: i64) -> rusqlite::Result<Migrated> {
    // Most opens find the schema current: they say so without taking the write lock, which
    // a long write (an import) holds for seconds and every hook's open waited for. A file
    // SQLite opened read-only goes through the lock, whose refusal makes the store read-only.
    let version = user_version(conn)?;
    if version > LATEST {
        return Ok(Migrated::TooNew(version));
    }
    if version >= target && !conn.is_readonly(rusqlite::MAIN_DB)? {
        return Ok(Migrated::Ok);
    }
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version = user_version(&tx)?;
        if version > LATEST {
            return Ok(Migrated::TooNew(version));
        }
        if version >= target {
            return Ok(Migrated::Ok);
        }
        tx.execute_batch(MIGRATIONS[version as usize])?;
        let rebuilt = match version + 1 {
            3 => for_each_row(&tx, index::count),
            6 => for_each_row(&tx, index::add_postings),
            9 => super::sketches::build_all(&tx),
            _ => Ok(()),
        };
        rebuilt.map_err(|e| match e {
            crate::error::MemoryError::Sqlite { source, .. } => source,
            other => rusqlite::Error::ToSqlConversionFailure(Box::new(other)),
        })?;
        tx.pragma_update(None, "user_version", version + 1)?;
        tx.commit()?;
    }
}

/// Index every memory again with `index`: its terms counted anew (v3: terms became stemmed),
/// its postings written (v6).
fn for_each_row(
    tx: &rusqlite::Transaction,
    index: fn(&rusqlite::Transaction, i64, &crate::types::MemoryEntry) -> crate::error::Result<()>,
) -> crate::error::Result<()> {
    let sql = format!("SELECT {COLS} FROM project_memories ORDER BY num");
    let rows = select_entries(tx, &sql, [])?;
    if rows.len() >= 10_000 {
        tracing::info!(
            memories = rows.len(),
            "indexing the memories for this version of ctxkit"
        );
    }
    for (num, entry) in &rows {
        index(tx, *num, entry)?;
    }
    Ok(())
}

pub(crate) fn migrate(conn: &mut Connection) -> rusqlite::Result<Migrated> {
    migrate_to(conn, LATEST)
}
