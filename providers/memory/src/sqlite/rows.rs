//! Row-level helpers: insert, overwrite, delete and read `project_memories` and
//! `episodic_records` rows, keeping the search index and the history in step.

use rusqlite::{params, OptionalExtension, Row, Transaction};

use super::{index, json_array};
use crate::error::{MemoryError, Result};
use crate::postings::CandidateRow;
use crate::text::MemoryTerms;
use crate::types::*;

pub(super) const COLS: &str =
    "num, id, project_path, category, content, keywords, importance, access_count, \
                    source_session_id, source_context, created_at, updated_at, last_accessed_at, decayed_at, \
                    superseded_by, superseded_at";

/// Insert a complete entry (row and index); returns its row number.
pub(super) fn insert_entry(tx: &Transaction, e: &MemoryEntry) -> Result<i64> {
    let terms = MemoryTerms::of(&e.content, &e.keywords);
    let (content_terms, keyword_terms) = terms.stored();
    tx.prepare_cached(
        "INSERT INTO project_memories (id, project_path, category, content, keywords, importance, access_count,
             source_session_id, source_context, created_at, updated_at, last_accessed_at, decayed_at,
             superseded_by, superseded_at, content_terms, keyword_terms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
    )?
    .execute(params![
        e.id,
        e.project_path,
        e.category.as_str(),
        e.content,
        json_array(&e.keywords),
        f64::from(e.importance),
        e.access_count,
        e.source_session_id,
        e.source_context,
        e.created_at,
        e.updated_at,
        e.last_accessed_at,
        e.decayed_at,
        e.superseded_by,
        e.superseded_at,
        content_terms,
        keyword_terms,
    ])?;
    let num = tx.last_insert_rowid();
    index::add(tx, num, e)?;
    Ok(num)
}

/// Write every field of `new` over row `num` (which holds `old`) and re-index when needed.
pub(super) fn store_row(tx: &Transaction, num: i64, old: &MemoryEntry, new: &MemoryEntry) -> Result<()> {
    // NULL keeps the stored terms (COALESCE): the text did not change.
    let terms = MemoryTerms::changed(old, new);
    let (content_terms, keyword_terms) = terms.as_ref().map(MemoryTerms::stored).unzip();
    tx.prepare_cached(
        "UPDATE project_memories SET id = ?2, project_path = ?3, category = ?4, content = ?5, keywords = ?6,
             importance = ?7, access_count = ?8, source_session_id = ?9, source_context = ?10, created_at = ?11,
             updated_at = ?12, last_accessed_at = ?13, decayed_at = ?14, superseded_by = ?15, superseded_at = ?16,
             content_terms = COALESCE(?17, content_terms), keyword_terms = COALESCE(?18, keyword_terms)
         WHERE num = ?1",
    )?
    .execute(params![
        num,
        new.id,
        new.project_path,
        new.category.as_str(),
        new.content,
        json_array(&new.keywords),
        f64::from(new.importance),
        new.access_count,
        new.source_session_id,
        new.source_context,
        new.created_at,
        new.updated_at,
        new.last_accessed_at,
        new.decayed_at,
        new.superseded_by,
        new.superseded_at,
        content_terms,
        keyword_terms,
    ])?;
    index::replace(tx, num, old, new)
}

/// Store (or, with `None`, clear) the sentence vector of row `num`, if the row still holds
/// `content`: a vector computed before a write's transaction is never stored over a text that
/// changed meanwhile.
pub(super) fn set_vector(
    tx: &Transaction,
    num: i64,
    content: &str,
    vector: Option<(String, Vec<u8>)>,
) -> Result<()> {
    let (model, bytes) = vector.unzip();
    tx.prepare_cached(
        "UPDATE project_memories SET embedding_model = ?3, embedding = ?4 WHERE num = ?1 AND content = ?2",
    )?
    .execute(params![num, content, model, bytes])?;
    Ok(())
}

/// Delete row `num` (which holds `old`) and its index.
pub(super) fn delete_row(tx: &Transaction, num: i64, old: &MemoryEntry) -> Result<()> {
    index::remove(tx, num, old)?;
    tx.prepare_cached("DELETE FROM project_memories WHERE num = ?1")?
        .execute(params![num])?;
    Ok(())
}

pub(super) fn load(tx: &Transaction, id: &str) -> Result<Option<(i64, MemoryEntry)>> {
    Ok(tx
        .prepare_cached(&format!("SELECT {COLS} FROM project_memories WHERE id = ?1"))?
        .query_row(params![id], row_to_entry)
        .optional()?)
}

/// The memory stored at row `num`.
pub(super) fn load_num(tx: &Transaction, num: i64) -> Result<Option<MemoryEntry>> {
    Ok(tx
        .prepare_cached(&format!("SELECT {COLS} FROM project_memories WHERE num = ?1"))?
        .query_row(params![num], row_to_entry)
        .optional()?
        .map(|(_, e)| e))
}

pub(super) fn select_entries(
    tx: &Transaction,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<(i64, MemoryEntry)>> {
    let mut stmt = tx.prepare_cached(sql)?;
    let rows = stmt.query_map(params, row_to_entry)?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// The memories of rows `nums` with their stored terms, for ranking, in no particular order.
pub(super) fn select_candidates(tx: &Transaction, nums: &[i64]) -> Result<Vec<CandidateRow>> {
    let mut stmt = tx.prepare_cached(&format!(
        "SELECT {COLS}, content_terms, keyword_terms FROM project_memories
         WHERE num IN (SELECT value FROM json_each(?1))"
    ))?;
    let rows = stmt.query_map(params![json_array(nums)], |r| {
        let (num, entry) = row_to_entry(r)?;
        let stored = MemoryTerms::read(r.get(16)?, r.get(17)?);
        Ok((num, entry, stored))
    })?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// A counter column as an integer. Databases written before counters were bounded may hold
/// one that overflowed into a REAL; it reads back saturated instead of failing every query.
fn count_of(r: &Row, col: usize) -> rusqlite::Result<i64> {
    match r.get_ref(col)? {
        rusqlite::types::ValueRef::Integer(n) => Ok(n),
        rusqlite::types::ValueRef::Real(x) => Ok((x as i64).min(crate::rules::MAX_ACCESS_COUNT)),
        other => Err(rusqlite::Error::FromSqlConversionFailure(
            col,
            other.data_type(),
            "the access count is not a number".into(),
        )),
    }
}

fn conversion_error(col: usize, message: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(col, rusqlite::types::Type::Text, message.into())
}

/// The category stored in column `col`.
pub(super) fn category_at(r: &Row, col: usize) -> rusqlite::Result<MemoryCategory> {
    r.get_ref(col)?
        .as_str()?
        .parse()
        .map_err(|e: MemoryError| conversion_error(col, e.to_string()))
}

/// The keywords stored, as a JSON list, in column `col`.
pub(super) fn keywords_at(r: &Row, col: usize) -> rusqlite::Result<Vec<String>> {
    serde_json::from_str(r.get_ref(col)?.as_str()?)
        .map_err(|e| conversion_error(col, format!("keywords are not a JSON list: {e}")))
}

pub(super) fn row_to_entry(r: &Row) -> rusqlite::Result<(i64, MemoryEntry)> {
    let category = category_at(r, 3)?;
    let keywords = keywords_at(r, 5)?;
    Ok((
        r.get(0)?,
        MemoryEntry {
            id: r.get(1)?,
            project_path: r.get(2)?,
            category,
            content: r.get(4)?,
            keywords,
            importance: r.get::<_, f64>(6)? as f32,
            access_count: count_of(r, 7)?,
            source_session_id: r.get(8)?,
            source_context: r.get(9)?,
            created_at: r.get(10)?,
            updated_at: r.get(11)?,
            last_accessed_at: r.get(12)?,
            decayed_at: r.get(13)?,
            superseded_by: r.get(14)?,
            superseded_at: r.get(15)?,
        },
    ))
}

pub(super) fn row_to_episode(r: &Row) -> rusqlite::Result<EpisodicRecord> {
    let record_type: String = r.get(3)?;
    let list = |col: usize| -> rusqlite::Result<Vec<String>> {
        let s: String = r.get(col)?;
        serde_json::from_str(&s).map_err(|e| conversion_error(col, format!("not a JSON list: {e}")))
    };
    Ok(EpisodicRecord {
        id: r.get(0)?,
        project_path: r.get(1)?,
        session_id: r.get(2)?,
        record_type: RecordType::parse(&record_type)
            .ok_or_else(|| conversion_error(3, format!("unknown record type `{record_type}`")))?,
        task_summary: r.get(4)?,
        approach_summary: r.get(5)?,
        outcome_summary: r.get(6)?,
        tools_used: list(7)?,
        keywords: list(8)?,
        created_at: r.get(9)?,
    })
}

pub(super) const HISTORY_COLS: &str =
    "id, memory_id, project_path, action, before, after, related_id, reason, at";

pub(super) fn row_to_history(r: &Row) -> rusqlite::Result<HistoryEntry> {
    HistoryEntry::from_columns(r.try_into()?).map_err(|(col, message)| {
        rusqlite::Error::FromSqlConversionFailure(col, rusqlite::types::Type::Text, message.into())
    })
}
