//! The search index beside each memory row: the FTS5 row used for candidate retrieval, the
//! per-project document frequencies used for IDF, and the project's counters.

use std::collections::HashMap;
use std::sync::Arc;

use rusqlite::{params, OptionalExtension, Transaction};

use crate::retrieval::Vocabulary;
use crate::text::{keyword_terms, term_set, terms};
use crate::types::MemoryEntry;
use crate::Result;

/// A token standing for a project inside the FTS index (FNV-1a of the path), so candidate
/// retrieval is confined to one project before ranking. Collisions only cost speed: rows are
/// still filtered by the exact `project_path`.
pub(crate) fn project_token(project: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in project.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("p{h:016x}")
}

/// Quote a term as an FTS5 string.
pub(crate) fn fts_quote(term: &str) -> String {
    format!("\"{}\"", term.replace('"', "\"\""))
}

/// The indexed text of a memory: its content terms and its keyword terms.
fn fts_text(entry: &MemoryEntry) -> String {
    let mut all = terms(&entry.content);
    all.extend(keyword_terms(&entry.keywords));
    all.join(" ")
}

/// Index a memory stored at row `num`.
pub(crate) fn add(tx: &Transaction, num: i64, entry: &MemoryEntry) -> Result<()> {
    tx.prepare_cached("INSERT INTO memory_fts(rowid, project, terms) VALUES (?1, ?2, ?3)")?
        .execute(params![num, project_token(&entry.project_path), fts_text(entry)])?;
    let mut df = tx.prepare_cached(
        "INSERT INTO memory_terms(project_path, term, df) VALUES (?1, ?2, 1)
         ON CONFLICT(project_path, term) DO UPDATE SET df = df + 1",
    )?;
    for term in term_set(&entry.content) {
        df.execute(params![entry.project_path, term])?;
    }
    bump_project(tx, &entry.project_path, 1)
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
    bump_project(tx, &entry.project_path, -1)
}

/// Re-index after a change, when the content or keywords changed.
pub(crate) fn replace(tx: &Transaction, num: i64, old: &MemoryEntry, new: &MemoryEntry) -> Result<()> {
    if old.content != new.content || old.keywords != new.keywords || old.project_path != new.project_path {
        remove(tx, num, old)?;
        add(tx, num, new)?;
    }
    Ok(())
}

fn bump_project(tx: &Transaction, project: &str, docs: i64) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO memory_projects(project_path, docs, generation) VALUES (?1, max(?2, 0), 1)
         ON CONFLICT(project_path) DO UPDATE SET docs = max(docs + ?2, 0), generation = generation + 1",
    )?
    .execute(params![project, docs])?;
    Ok(())
}

/// Drop the whole index of a project (after its rows were deleted).
pub(crate) fn clear_project(tx: &Transaction, project: &str, nums: &[i64]) -> Result<()> {
    let mut del = tx.prepare_cached("DELETE FROM memory_fts WHERE rowid = ?1")?;
    for num in nums {
        del.execute(params![num])?;
    }
    tx.prepare_cached("DELETE FROM memory_terms WHERE project_path = ?1")?
        .execute(params![project])?;
    tx.prepare_cached(
        "UPDATE memory_projects SET docs = 0, generation = generation + 1 WHERE project_path = ?1",
    )?
    .execute(params![project])?;
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
    /// an uncommitted change never lands in the cache.
    pub(crate) fn get(&self, tx: &Transaction, project: &str) -> Result<Arc<Vocabulary>> {
        let version = project_version(tx, project)?;
        if let Some((v, vocab)) = self.lock().get(project) {
            if *v == version {
                return Ok(vocab.clone());
            }
        }
        let mut df = HashMap::new();
        let mut stmt = tx.prepare_cached("SELECT term, df FROM memory_terms WHERE project_path = ?1")?;
        let rows = stmt.query_map(params![project], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
        })?;
        for row in rows {
            let (term, n) = row?;
            df.insert(term, n.max(0) as u32);
        }
        let vocab = Arc::new(Vocabulary::new(version.1.max(0) as u64, df));
        self.lock().insert(project.to_string(), (version, vocab.clone()));
        Ok(vocab)
    }

    /// Remember a vocabulary read elsewhere (by the in-memory index) at `version`.
    pub(crate) fn put(&self, project: &str, version: Version, vocab: Arc<Vocabulary>) {
        self.lock().insert(project.to_string(), (version, vocab));
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
