//! The search index beside each memory row: its impact-ordered postings (candidate retrieval,
//! [`crate::postings`]), the per-project document frequencies used for IDF, and the project's
//! counters.

use std::collections::HashMap;

use rusqlite::{params, OptionalExtension, Transaction};

use super::json_array;
use crate::error::Result;
use crate::postings::{self, project_key};
use crate::text::term_set;
use crate::types::MemoryEntry;

/// Index a memory stored at row `num`.
pub(crate) fn add(tx: &Transaction, num: i64, entry: &MemoryEntry) -> Result<()> {
    add_postings(tx, num, entry)?;
    count(tx, num, entry)
}

/// Count a memory stored at row `num` in its project's document frequencies and size.
pub(crate) fn count(tx: &Transaction, num: i64, entry: &MemoryEntry) -> Result<()> {
    let mut df = tx.prepare_cached(
        "INSERT INTO memory_terms(project_path, term, df) VALUES (?1, ?2, 1)
         ON CONFLICT(project_path, term) DO UPDATE SET df = df + 1",
    )?;
    for term in term_set(&entry.content) {
        df.execute(params![entry.project_path, term])?;
    }
    bump_project(tx, &entry.project_path, 1, num, Op::Add)
}

/// Write the postings of a memory stored at row `num`.
pub(crate) fn add_postings(tx: &Transaction, num: i64, entry: &MemoryEntry) -> Result<()> {
    each_posting(
        tx,
        "INSERT OR REPLACE INTO memory_postings(project, term, impact, num) VALUES (?1, ?2, ?3, ?4)",
        num,
        entry,
    )
}

/// Remove the postings of a memory stored at row `num`: an impact is a function of the memory
/// alone, so the keys written are recomputed exactly.
fn remove_postings(tx: &Transaction, num: i64, entry: &MemoryEntry) -> Result<()> {
    each_posting(
        tx,
        "DELETE FROM memory_postings WHERE project = ?1 AND term = ?2 AND impact = ?3 AND num = ?4",
        num,
        entry,
    )
}

/// Run `sql` once per posting `(project, term, impact, num)` of the memory at row `num`.
fn each_posting(tx: &Transaction, sql: &str, num: i64, entry: &MemoryEntry) -> Result<()> {
    let mut stmt = tx.prepare_cached(sql)?;
    let project = project_key(&entry.project_path);
    for (term, impact) in postings::of(entry) {
        stmt.execute(params![project, term, impact, num])?;
    }
    Ok(())
}

/// Remove the index of a memory stored at row `num`.
pub(crate) fn remove(tx: &Transaction, num: i64, entry: &MemoryEntry) -> Result<()> {
    remove_postings(tx, num, entry)?;
    let mut dec = tx.prepare_cached(
        "UPDATE memory_terms SET df = df - 1 WHERE project_path = ?1 AND term = ?2 RETURNING df",
    )?;
    let mut del = tx.prepare_cached("DELETE FROM memory_terms WHERE project_path = ?1 AND term = ?2")?;
    for term in term_set(&entry.content) {
        let left: Option<i64> = dec
            .query_row(params![entry.project_path, term], |r| r.get(0))
            .optional()?;
        if left.is_some_and(|n| n <= 0) {
            del.execute(params![entry.project_path, term])?;
        }
    }
    bump_project(tx, &entry.project_path, -1, num, Op::Remove)
}

/// Re-index after a change, when what the indexes hold changed: the terms and category (the
/// in-memory index keeps each memory's category), or only the importance, which the postings'
/// impacts carry.
pub(crate) fn replace(tx: &Transaction, num: i64, old: &MemoryEntry, new: &MemoryEntry) -> Result<()> {
    if old.content != new.content
        || old.keywords != new.keywords
        || old.project_path != new.project_path
        || old.category != new.category
    {
        remove(tx, num, old)?;
        add(tx, num, new)?;
    } else if postings::moved(old, new) {
        remove_postings(tx, num, old)?;
        add_postings(tx, num, new)?;
    }
    Ok(())
}

/// What one generation of a project's index changed (see `memory_index_log`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// Row `num` was indexed.
    Add,
    /// Row `num` left the index.
    Remove,
    /// Every row of the project left the index.
    Clear,
}

impl Op {
    fn as_str(self) -> &'static str {
        match self {
            Op::Add => "add",
            Op::Remove => "remove",
            Op::Clear => "clear",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [Op::Add, Op::Remove, Op::Clear]
            .into_iter()
            .find(|o| o.as_str() == s)
    }
}

/// Log entries older than this many generations are dropped: an in-memory index further
/// behind is rebuilt instead of caught up.
pub(crate) const LOG_KEEP: i64 = 4096;

/// Move the project to its next generation, counting `docs` more (or fewer) memories, and log
/// what changed so in-memory indexes can catch up.
fn bump_project(tx: &Transaction, project: &str, docs: i64, num: i64, op: Op) -> Result<()> {
    let generation: i64 = tx
        .prepare_cached(
            "INSERT INTO memory_projects(project_path, docs, generation) VALUES (?1, max(?2, 0), 1)
             ON CONFLICT(project_path) DO UPDATE SET docs = max(docs + ?2, 0), generation = generation + 1
             RETURNING generation",
        )?
        .query_row(params![project, docs], |r| r.get(0))?;
    tx.prepare_cached(
        "INSERT OR REPLACE INTO memory_index_log(project_path, generation, num, op) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![project, generation, num, op.as_str()])?;
    if generation % 256 == 0 {
        tx.prepare_cached("DELETE FROM memory_index_log WHERE project_path = ?1 AND generation <= ?2")?
            .execute(params![project, generation - LOG_KEEP])?;
    }
    Ok(())
}

/// The changes that take a project's index from generation `from` to `to`, in order; `None`
/// when the log no longer holds all of them (then the index is rebuilt).
pub(crate) fn changes_between(
    tx: &Transaction,
    project: &str,
    from: i64,
    to: i64,
) -> Result<Option<Vec<(i64, Op)>>> {
    if to < from {
        return Ok(None);
    }
    let mut stmt = tx.prepare_cached(
        "SELECT generation, num, op FROM memory_index_log
         WHERE project_path = ?1 AND generation > ?2 AND generation <= ?3 ORDER BY generation",
    )?;
    let rows = stmt.query_map(params![project, from, to], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?))
    })?;
    let mut out = Vec::new();
    let mut expected = from + 1;
    for row in rows {
        let (generation, num, op) = row?;
        let Some(op) = Op::parse(&op) else {
            return Ok(None);
        };
        if generation != expected {
            return Ok(None);
        }
        expected += 1;
        out.push((num, op));
    }
    Ok((expected == to + 1).then_some(out))
}

/// Drop the whole index of a project (before its rows are deleted).
pub(crate) fn clear_project(tx: &Transaction, project: &str) -> Result<()> {
    // By the rows rather than the project's key: another project whose path hashes alike
    // keeps its postings.
    tx.prepare_cached(
        "DELETE FROM memory_postings WHERE project = ?1
         AND num IN (SELECT num FROM project_memories WHERE project_path = ?2)",
    )?
    .execute(params![project_key(project), project])?;
    tx.prepare_cached("DELETE FROM memory_terms WHERE project_path = ?1")?
        .execute(params![project])?;
    let generation: Option<i64> = tx
        .prepare_cached(
            "UPDATE memory_projects SET docs = 0, generation = generation + 1 WHERE project_path = ?1
             RETURNING generation",
        )?
        .query_row(params![project], |r| r.get(0))
        .optional()?;
    if let Some(generation) = generation {
        tx.prepare_cached(
            "INSERT OR REPLACE INTO memory_index_log(project_path, generation, num, op) VALUES (?1, ?2, 0, 'clear')",
        )?
        .execute(params![project, generation])?;
    }
    Ok(())
}

/// `(generation, docs)` of a project; `(0, 0)` for one never written.
pub(crate) fn project_version(tx: &Transaction, project: &str) -> Result<Version> {
    Ok(tx
        .prepare_cached("SELECT generation, docs FROM memory_projects WHERE project_path = ?1")?
        .query_row(params![project], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?
        .unwrap_or((0, 0)))
}

/// The document frequencies of the `needed` terms that the project's memories hold, in one
/// statement (a key lookup per term; one statement each cost a search a sixth of its time).
pub(crate) fn frequencies(tx: &Transaction, project: &str, needed: &[&str]) -> Result<HashMap<String, u32>> {
    if needed.is_empty() {
        return Ok(HashMap::new());
    }
    let mut stmt = tx.prepare_cached(
        "SELECT term, df FROM memory_terms
         WHERE project_path = ?1 AND term IN (SELECT value FROM json_each(?2))",
    )?;
    let rows = stmt.query_map(params![project, json_array(needed)], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
    })?;
    let mut df = HashMap::new();
    for row in rows {
        let (term, n) = row?;
        df.insert(term, u32::try_from(n.max(0)).unwrap_or(u32::MAX));
    }
    Ok(df)
}

/// A project's `(generation, docs)`: in-memory indexes are valid while this is unchanged.
pub(crate) type Version = (i64, i64);
