//! The search index beside each memory row: the FTS5 row used for candidate retrieval, the
//! per-project document frequencies used for IDF, and the project's counters.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use rusqlite::{params, OptionalExtension, Transaction};

use crate::error::Result;
use crate::ids::project_token;
use crate::retrieval::Vocabulary;
use crate::text::{keyword_terms, term_set, terms};
use crate::types::MemoryEntry;

/// Quote a term as an FTS5 string.
pub(crate) fn fts_quote(term: &str) -> String {
    format!("\"{}\"", term.replace('"', "\"\""))
}

/// Index a memory stored at row `num`.
pub(crate) fn add(tx: &Transaction, num: i64, entry: &MemoryEntry) -> Result<()> {
    let content = terms(&entry.content);
    let keywords = keyword_terms(&entry.keywords);
    // The indexed text: its content terms and its keyword terms.
    let text: Vec<&str> = content.iter().chain(&keywords).map(String::as_str).collect();
    tx.prepare_cached("INSERT INTO memory_fts(rowid, project, terms) VALUES (?1, ?2, ?3)")?
        .execute(params![num, project_token(&entry.project_path), text.join(" ")])?;
    let mut df = tx.prepare_cached(
        "INSERT INTO memory_terms(project_path, term, df) VALUES (?1, ?2, 1)
         ON CONFLICT(project_path, term) DO UPDATE SET df = df + 1",
    )?;
    for term in content.into_iter().collect::<BTreeSet<_>>() {
        df.execute(params![entry.project_path, term])?;
    }
    bump_project(tx, &entry.project_path, 1, num, Op::Add)
}

/// Remove the index of a memory stored at row `num`.
pub(crate) fn remove(tx: &Transaction, num: i64, entry: &MemoryEntry) -> Result<()> {
    tx.prepare_cached("DELETE FROM memory_fts WHERE rowid = ?1")?
        .execute(params![num])?;
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

/// Re-index after a change, when what the indexes hold changed (the in-memory index keeps
/// each memory's category).
pub(crate) fn replace(tx: &Transaction, num: i64, old: &MemoryEntry, new: &MemoryEntry) -> Result<()> {
    if old.content != new.content
        || old.keywords != new.keywords
        || old.project_path != new.project_path
        || old.category != new.category
    {
        remove(tx, num, old)?;
        add(tx, num, new)?;
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

/// Drop the whole index of a project (after its rows were deleted).
pub(crate) fn clear_project(tx: &Transaction, project: &str, nums: &[i64]) -> Result<()> {
    let mut del = tx.prepare_cached("DELETE FROM memory_fts WHERE rowid = ?1")?;
    for num in nums {
        del.execute(params![num])?;
    }
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

/// The document frequencies of a project as `tx` sees them.
pub(crate) fn read_vocabulary(tx: &Transaction, project: &str) -> Result<Vocabulary> {
    let docs = project_version(tx, project)?.1;
    let mut df = HashMap::new();
    let mut stmt = tx.prepare_cached("SELECT term, df FROM memory_terms WHERE project_path = ?1")?;
    let rows = stmt.query_map(params![project], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
    })?;
    for row in rows {
        let (term, n) = row?;
        df.insert(term, n.max(0) as u32);
    }
    Ok(Vocabulary::new(docs.max(0) as u64, df))
}

/// A project's `(generation, docs)`: a cached vocabulary is valid while this is unchanged.
pub(crate) type Version = (i64, i64);
type Cached = HashMap<String, (Version, Arc<Vocabulary>)>;

/// Cached vocabularies, one per project, tagged with the version they were read at.
#[derive(Default)]
pub(crate) struct VocabularyCache {
    by_project: std::sync::Mutex<Cached>,
}

impl VocabularyCache {
    /// The project's vocabulary as of `tx`. Call before the transaction writes anything, so
    /// an uncommitted change never lands in the cache (after a write, [`read_vocabulary`]).
    pub(crate) fn get(&self, tx: &Transaction, project: &str) -> Result<Arc<Vocabulary>> {
        let version = project_version(tx, project)?;
        if let Some((v, vocab)) = self.lock().get(project) {
            if *v == version {
                return Ok(vocab.clone());
            }
        }
        let vocab = Arc::new(read_vocabulary(tx, project)?);
        self.lock().insert(project.to_string(), (version, vocab.clone()));
        Ok(vocab)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cached> {
        self.by_project.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_tokens_are_stable_and_distinct() {
        assert_eq!(project_token("/a"), project_token("/a"));
        assert_ne!(project_token("/a"), project_token("/b"));
        assert_eq!(project_token("").len(), 17);
        assert_eq!(fts_quote("c++"), "\"c++\"");
    }
}
