//! Row-level helpers on PostgreSQL: insert, overwrite, delete and read memory and episode
//! rows, keeping the search index (postings, document frequencies, counts) and the history in
//! step — what `sqlite/rows.rs` and `sqlite/index.rs` do for SQLite.

use std::collections::BTreeMap;

use deadpool_postgres::Transaction;
use tokio_postgres::Row;

use crate::error::{MemoryError, Result};
use crate::postings::{self, project_key, CandidateRow};
use crate::text::{term_set, MemoryTerms};
use crate::types::*;

pub(super) const COLS: &str =
    "num, id, project_path, category, content, keywords, importance, access_count, \
     source_session_id, source_context, created_at, updated_at, last_accessed_at, decayed_at, \
     superseded_by, superseded_at";

pub(super) const EPISODE_COLS: &str = "id, project_path, session_id, record_type, task_summary, \
     approach_summary, outcome_summary, tools_used, keywords, created_at";

/// A conversion failure of a column, as a server error.
fn bad(message: String) -> MemoryError {
    MemoryError::Server {
        url: String::new(),
        reason: message,
        sqlstate: None,
    }
}

pub(super) fn json_list(text: &str, what: &str) -> Result<Vec<String>> {
    serde_json::from_str(text).map_err(|e| bad(format!("{what} are not a JSON list: {e}")))
}

pub(super) fn keywords_json(keywords: &[String]) -> String {
    serde_json::to_string(keywords).unwrap_or_else(|_| "[]".into())
}

/// A memory row (selected with [`COLS`]) and its row number.
pub(super) fn row_to_entry(r: &Row) -> Result<(i64, MemoryEntry)> {
    let category: String = r.try_get(3)?;
    let keywords: String = r.try_get(5)?;
    Ok((
        r.try_get(0)?,
        MemoryEntry {
            id: r.try_get(1)?,
            project_path: r.try_get(2)?,
            category: category.parse()?,
            content: r.try_get(4)?,
            keywords: json_list(&keywords, "keywords")?,
            importance: r.try_get(6)?,
            access_count: r.try_get(7)?,
            source_session_id: r.try_get(8)?,
            source_context: r.try_get(9)?,
            created_at: r.try_get(10)?,
            updated_at: r.try_get(11)?,
            last_accessed_at: r.try_get(12)?,
            decayed_at: r.try_get(13)?,
            superseded_by: r.try_get(14)?,
            superseded_at: r.try_get(15)?,
        },
    ))
}

/// The memories of rows `nums` with their stored terms, for ranking, in no particular order.
pub(super) async fn select_candidates(tx: &Transaction<'_>, nums: &[i64]) -> Result<Vec<CandidateRow>> {
    let stmt = tx
        .prepare_cached(&format!(
            "SELECT {COLS}, content_terms, keyword_terms FROM project_memories WHERE num = ANY($1)"
        ))
        .await?;
    let mut out = Vec::new();
    for row in tx.query(&stmt, &[&nums]).await? {
        let (num, entry) = row_to_entry(&row)?;
        out.push((num, entry, MemoryTerms::read(row.try_get(16)?, row.try_get(17)?)));
    }
    Ok(out)
}

/// Rows of a query selecting [`COLS`].
pub(super) async fn select_entries(
    tx: &Transaction<'_>,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<Vec<(i64, MemoryEntry)>> {
    let stmt = tx.prepare_cached(sql).await?;
    tx.query(&stmt, params).await?.iter().map(row_to_entry).collect()
}

pub(super) async fn load(tx: &Transaction<'_>, id: &str) -> Result<Option<(i64, MemoryEntry)>> {
    let sql = format!("SELECT {COLS} FROM project_memories WHERE id = $1");
    Ok(select_entries(tx, &sql, &[&id]).await?.pop())
}

/// Changes to document frequencies and memory counts, gathered over many rows and written in
/// one statement each. Writing them row by row makes a large import quadratic: every update
/// of a counter row the transaction has already updated walks the versions it left behind.
#[derive(Default)]
pub(super) struct TermCounts {
    docs: BTreeMap<String, i64>,
    terms: BTreeMap<(String, String), i64>,
}

impl TermCounts {
    /// Count (`delta` +1) or uncount (-1) a memory's content terms and the memory itself.
    pub(super) fn count(&mut self, e: &MemoryEntry, delta: i64) {
        *self.docs.entry(e.project_path.clone()).or_default() += delta;
        for term in term_set(&e.content) {
            *self.terms.entry((e.project_path.clone(), term)).or_default() += delta;
        }
    }

    /// Apply the changes: a term whose count reaches zero is removed, a memory count never
    /// goes below zero.
    pub(super) async fn write(self, tx: &Transaction<'_>) -> Result<()> {
        let changed = self.terms.into_iter().filter(|&(_, d)| d != 0);
        let ((projects, terms), deltas): ((Vec<String>, Vec<String>), Vec<i64>) = changed.unzip();
        if !deltas.is_empty() {
            let stmt = tx
                .prepare_cached(
                    "INSERT INTO memory_terms (project_path, term, df)
                     SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
                     ON CONFLICT (project_path, term) DO UPDATE SET df = memory_terms.df + excluded.df",
                )
                .await?;
            tx.execute(&stmt, &[&projects, &terms, &deltas]).await?;
            if deltas.iter().any(|&d| d < 0) {
                let stmt = tx
                    .prepare_cached(
                        "DELETE FROM memory_terms WHERE df <= 0
                         AND (project_path, term) IN (SELECT * FROM unnest($1::text[], $2::text[]))",
                    )
                    .await?;
                tx.execute(&stmt, &[&projects, &terms]).await?;
            }
        }
        let stmt = tx
            .prepare_cached(
                "INSERT INTO memory_projects (project_path, docs) VALUES ($1, GREATEST($2::bigint, 0))
                 ON CONFLICT (project_path) DO UPDATE SET docs = GREATEST(memory_projects.docs + $2::bigint, 0)",
            )
            .await?;
        for (project, delta) in self.docs {
            tx.execute(&stmt, &[&project, &delta]).await?;
        }
        Ok(())
    }
}

/// The postings of rows, gathered and written in one statement ([`crate::postings`]).
#[derive(Default)]
pub(super) struct Postings {
    projects: Vec<i64>,
    terms: Vec<String>,
    impacts: Vec<i64>,
    nums: Vec<i64>,
}

impl Postings {
    /// Post the memory of row `num`.
    pub(super) fn add(&mut self, num: i64, e: &MemoryEntry) {
        let project = project_key(&e.project_path);
        for (term, impact) in postings::of(e) {
            self.projects.push(project);
            self.terms.push(term);
            self.impacts.push(impact);
            self.nums.push(num);
        }
    }

    pub(super) async fn write(self, client: &impl deadpool_postgres::GenericClient) -> Result<()> {
        if self.nums.is_empty() {
            return Ok(());
        }
        let stmt = client
            .prepare_cached(
                "INSERT INTO memory_postings (project, term, impact, num)
                 SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[])",
            )
            .await?;
        client
            .execute(&stmt, &[&self.projects, &self.terms, &self.impacts, &self.nums])
            .await?;
        Ok(())
    }
}

/// Post the memory of row `num` anew, after its terms or importance changed.
pub(super) async fn repost(tx: &Transaction<'_>, num: i64, e: &MemoryEntry) -> Result<()> {
    let stmt = tx
        .prepare_cached("DELETE FROM memory_postings WHERE num = $1")
        .await?;
    tx.execute(&stmt, &[&num]).await?;
    let mut postings = Postings::default();
    postings.add(num, e);
    postings.write(tx).await
}

/// Insert an entry's row, leaving its postings and counts to the caller ([`Postings`],
/// [`TermCounts`]); its row number.
pub(super) async fn insert_row(tx: &Transaction<'_>, e: &MemoryEntry) -> Result<i64> {
    let stmt = tx
        .prepare_cached(
            "INSERT INTO project_memories (id, project_path, category, content, keywords, importance, access_count,
                 source_session_id, source_context, created_at, updated_at, last_accessed_at, decayed_at,
                 superseded_by, superseded_at, content_terms, keyword_terms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
             RETURNING num",
        )
        .await?;
    let terms = MemoryTerms::of(&e.content, &e.keywords);
    let (content_terms, keyword_terms) = terms.stored();
    Ok(tx
        .query_one(
            &stmt,
            &[
                &e.id,
                &e.project_path,
                &e.category.as_str(),
                &e.content,
                &keywords_json(&e.keywords),
                &e.importance,
                &e.access_count,
                &e.source_session_id,
                &e.source_context,
                &e.created_at,
                &e.updated_at,
                &e.last_accessed_at,
                &e.decayed_at,
                &e.superseded_by,
                &e.superseded_at,
                &content_terms,
                &keyword_terms,
            ],
        )
        .await?
        .try_get(0)?)
}

/// Store (or, with `None`, clear) the sentence vector of row `num`, if the row still holds
/// `content`: a vector computed before a write's transaction is never stored over a text that
/// changed meanwhile.
pub(super) async fn set_vector(
    tx: &Transaction<'_>,
    num: i64,
    content: &str,
    vector: Option<(String, Vec<u8>)>,
) -> Result<()> {
    let (model, bytes) = vector.unzip();
    let stmt = tx
        .prepare_cached("UPDATE project_memories SET embedding_model = $3, embedding = $4 WHERE num = $1 AND content = $2")
        .await?;
    tx.execute(&stmt, &[&num, &content, &model, &bytes]).await?;
    Ok(())
}

/// Write every field of `new` over row `num` (which holds `old`), leaving its postings and
/// counts to the caller ([`repost`], [`TermCounts`]).
pub(super) async fn store_row(
    tx: &Transaction<'_>,
    num: i64,
    old: &MemoryEntry,
    new: &MemoryEntry,
) -> Result<()> {
    let stmt = tx
        .prepare_cached(
            "UPDATE project_memories SET id = $2, project_path = $3, category = $4, content = $5, keywords = $6,
                 importance = $7, access_count = $8, source_session_id = $9, source_context = $10, created_at = $11,
                 updated_at = $12, last_accessed_at = $13, decayed_at = $14, superseded_by = $15, superseded_at = $16,
                 content_terms = COALESCE($17, content_terms), keyword_terms = COALESCE($18, keyword_terms)
             WHERE num = $1",
        )
        .await?;
    // NULL keeps the stored terms (COALESCE): the text did not change.
    let terms = MemoryTerms::changed(old, new);
    let (content_terms, keyword_terms) = terms.as_ref().map(MemoryTerms::stored).unzip();
    tx.execute(
        &stmt,
        &[
            &num,
            &new.id,
            &new.project_path,
            &new.category.as_str(),
            &new.content,
            &keywords_json(&new.keywords),
            &new.importance,
            &new.access_count,
            &new.source_session_id,
            &new.source_context,
            &new.created_at,
            &new.updated_at,
            &new.last_accessed_at,
            &new.decayed_at,
            &new.superseded_by,
            &new.superseded_at,
            &content_terms,
            &keyword_terms,
        ],
    )
    .await?;
    Ok(())
}

pub(super) fn row_to_episode(r: &Row) -> Result<EpisodicRecord> {
    let record_type: String = r.try_get(3)?;
    let tools: String = r.try_get(7)?;
    let keywords: String = r.try_get(8)?;
    Ok(EpisodicRecord {
        id: r.try_get(0)?,
        project_path: r.try_get(1)?,
        session_id: r.try_get(2)?,
        record_type: RecordType::parse(&record_type)
            .ok_or_else(|| bad(format!("unknown record type `{record_type}`")))?,
        task_summary: r.try_get(4)?,
        approach_summary: r.try_get(5)?,
        outcome_summary: r.try_get(6)?,
        tools_used: json_list(&tools, "tools")?,
        keywords: json_list(&keywords, "keywords")?,
        created_at: r.try_get(9)?,
    })
}

pub(super) const HISTORY_COLS: &str =
    "id, memory_id, project_path, action, before, after, related_id, reason, at";

pub(super) fn row_to_history(r: &Row) -> Result<HistoryEntry> {
    let columns = (
        r.try_get(0)?,
        r.try_get(1)?,
        r.try_get(2)?,
        r.try_get(3)?,
        r.try_get(4)?,
        r.try_get(5)?,
        r.try_get(6)?,
        r.try_get(7)?,
        r.try_get(8)?,
    );
    HistoryEntry::from_columns(columns).map_err(|(_, reason)| MemoryError::Server {
        url: String::new(),
        reason,
        sqlstate: None,
    })
}

/// History entries of a query selecting [`HISTORY_COLS`].
pub(super) async fn select_history(
    tx: &Transaction<'_>,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<Vec<HistoryEntry>> {
    let stmt = tx.prepare_cached(sql).await?;
    tx.query(&stmt, params)
        .await?
        .iter()
        .map(row_to_history)
        .collect()
}
