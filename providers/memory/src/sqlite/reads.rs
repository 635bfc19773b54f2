//! The reads of the SQLite store ([`Reads`]), each in one read transaction.

use ctxkit::SessionInfo;
use rusqlite::{params, OptionalExtension, Transaction};

use super::equal_if_given;
use super::rows::{load, row_to_episode, row_to_history, select_entries, COLS, HISTORY_COLS};
use crate::error::Result;
use crate::reads::Reads;
use crate::transfer::ExportRecord;
use crate::types::*;
use crate::write::Keyed;

const EPISODE_COLS: &str = "id, project_path, session_id, record_type, task_summary, approach_summary, \
                            outcome_summary, tools_used, keywords, created_at";

impl Reads for Transaction<'_> {
    async fn get(&self, id: &str) -> Result<Option<MemoryEntry>> {
        Ok(load(self, id)?.map(|(_, e)| e))
    }

    async fn list(&self, project: &str, options: &ListOptions) -> Result<Vec<MemoryEntry>> {
        let category = options.category.map(|c| c.as_str());
        let limit = i64::try_from(options.limit).unwrap_or(i64::MAX);
        let offset = i64::try_from(options.offset).unwrap_or(i64::MAX);
        let params = params![project, category, limit, offset, options.include_superseded];
        let rows = select_entries(self, &list_statement(options), params)?;
        Ok(rows.into_iter().map(|(_, e)| e).collect())
    }

    async fn count(&self, project: &str) -> Result<usize> {
        let n: i64 = self
            .prepare_cached(
                "SELECT COUNT(*) FROM project_memories WHERE project_path = ?1 AND superseded_by IS NULL",
            )?
            .query_row(params![project], |r| r.get(0))?;
        Ok(n as usize)
    }

    async fn history(&self, project: &str, memory_id: &str) -> Result<Vec<HistoryEntry>> {
        let mut stmt = self.prepare_cached(&format!(
            "SELECT {HISTORY_COLS} FROM memory_history WHERE memory_id = ?1 AND project_path = ?2 ORDER BY id"
        ))?;
        let rows = stmt.query_map(params![memory_id, project], row_to_history)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    async fn project_history(&self, project: &str, limit: usize) -> Result<Vec<HistoryEntry>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut stmt = self.prepare_cached(&format!(
            "SELECT {HISTORY_COLS} FROM memory_history WHERE project_path = ?1 ORDER BY id DESC LIMIT ?2"
        ))?;
        let rows = stmt.query_map(params![project, limit], row_to_history)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    async fn history_entry(&self, project: &str, history_id: i64) -> Result<Option<HistoryEntry>> {
        Ok(self
            .prepare_cached(&format!(
                "SELECT {HISTORY_COLS} FROM memory_history WHERE id = ?1 AND project_path = ?2"
            ))?
            .query_row(params![history_id, project], row_to_history)
            .optional()?)
    }

    async fn episodes(&self, project: &str, limit: usize) -> Result<Vec<EpisodicRecord>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut stmt = self.prepare_cached(&format!(
            "SELECT {EPISODE_COLS} FROM episodic_records WHERE project_path = ?1
             ORDER BY created_at DESC, id LIMIT ?2"
        ))?;
        let rows = stmt.query_map(params![project, limit], row_to_episode)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    async fn keyed(&self, of: Keyed, project: &str) -> Result<Vec<(String, String)>> {
        let (table, key, value) = of.columns();
        let exists = self
            .prepare_cached("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1")?
            .exists(params![table])?;
        if !exists {
            return Ok(Vec::new());
        }
        let mut stmt = self.prepare_cached(&format!(
            "SELECT {key}, {value} FROM {table} WHERE project_path = ?1 ORDER BY {key}"
        ))?;
        let rows = stmt.query_map(params![project], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The project's rows through each table's index on its path ([`equal_if_given`]).
    async fn export(&self, project: Option<&str>) -> Result<Vec<ExportRecord>> {
        let scope = equal_if_given("project_path", "?1", project.is_some());
        let sql = format!(
            "SELECT {COLS} FROM project_memories WHERE {scope} ORDER BY project_path, created_at, id"
        );
        let memories = select_entries(self, &sql, params![project])?;
        let mut out: Vec<ExportRecord> = memories
            .into_iter()
            .map(|(_, e)| ExportRecord::Memory(e))
            .collect();
        let mut stmt = self.prepare_cached(&format!(
            "SELECT {EPISODE_COLS} FROM episodic_records WHERE {scope} ORDER BY project_path, created_at, id"
        ))?;
        for e in stmt.query_map(params![project], row_to_episode)? {
            out.push(ExportRecord::Episode(e?));
        }
        let mut stmt = self.prepare_cached(&format!(
            "SELECT {HISTORY_COLS} FROM memory_history WHERE {scope} ORDER BY id"
        ))?;
        for h in stmt.query_map(params![project], row_to_history)? {
            out.push(ExportRecord::History(Box::new(h?)));
        }
        Ok(out)
    }

    async fn stats(&self, project: &str) -> Result<MemoryStats> {
        let mut stats = crate::decide::StatsBuilder::new(project);
        let mut stmt = self.prepare_cached(
            "SELECT category, COUNT(*), SUM(importance), TOTAL(access_count), MIN(created_at), MAX(updated_at)
             FROM project_memories WHERE project_path = ?1 AND superseded_by IS NULL GROUP BY category",
        )?;
        // TOTAL is a float: a sum of counters never overflows the query.
        let rows = stmt.query_map(params![project], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
        })?;
        for row in rows {
            let (category, n, imp, acc, oldest, newest) = row?;
            stats.category(category, n, imp, acc, oldest, newest);
        }
        let count = |sql: &str| -> Result<usize> {
            let n: i64 = self
                .prepare_cached(sql)?
                .query_row(params![project], |r| r.get(0))?;
            Ok(n as usize)
        };
        Ok(stats.finish(
            count("SELECT COUNT(*) FROM episodic_records WHERE project_path = ?1")?,
            count("SELECT COUNT(*) FROM memory_history WHERE project_path = ?1")?,
            count(
                "SELECT COUNT(*) FROM project_memories WHERE project_path = ?1 AND superseded_by IS NOT NULL",
            )?,
        ))
    }

    /// Superseded memories too: they may become current again. A vector is missing when
    /// absent, of another model, not a blob, or damaged (values no model makes): only the last
    /// needs reading it, so the scan stops at `limit`.
    async fn missing_vectors(&self, project: &str, model: &str, limit: usize) -> Result<Vec<(i64, String)>> {
        let mut stmt = self.prepare_cached(
            "SELECT num, content, embedding_model IS ?2, embedding FROM project_memories
             WHERE project_path = ?1 ORDER BY num",
        )?;
        let mut rows = stmt.query(params![project, model])?;
        let mut missing = Vec::new();
        while missing.len() < limit {
            let Some(row) = rows.next()? else { break };
            let current =
                row.get::<_, bool>(2)? && row.get_ref(3)?.as_blob().is_ok_and(crate::vectors::is_sound);
            if !current {
                missing.push((row.get(0)?, row.get(1)?));
            }
        }
        Ok(missing)
    }

    async fn session(&self, id: &str) -> Result<Option<String>> {
        Ok(self
            .prepare_cached("SELECT thread FROM sessions WHERE id = ?1")?
            .query_row(params![id], |r| r.get(0))
            .optional()?)
    }

    async fn sessions(&self) -> Result<Vec<SessionInfo>> {
        let mut stmt = self.prepare_cached(
            "SELECT id, turns, messages, updated_at FROM sessions ORDER BY updated_at DESC, id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(SessionInfo {
                id: r.get(0)?,
                turns: r.get::<_, i64>(1)? as usize,
                messages: r.get::<_, i64>(2)? as usize,
                updated: (r.get::<_, i64>(3)? / 1000) as u64,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

/// The statement [`Reads::list`] runs: `?1` the project, `?2` the category (or NULL), `?3`/`?4`
/// limit and offset, `?5` whether superseded memories are listed too. A category is compared
/// so that the category index serves it ([`equal_if_given`]).
pub(super) fn list_statement(options: &ListOptions) -> String {
    let order = match options.order {
        ListOrder::Newest => "created_at DESC, id",
        ListOrder::Importance => "importance DESC, created_at DESC, id",
    };
    let in_category = equal_if_given("category", "?2", options.category.is_some());
    format!(
        "SELECT {COLS} FROM project_memories WHERE project_path = ?1 AND {in_category}
         AND (?5 OR superseded_by IS NULL)
         ORDER BY {order} LIMIT ?3 OFFSET ?4"
    )
}
