//! The reads of the PostgreSQL store ([`Reads`]), each in one read-only `REPEATABLE READ`
//! transaction; the same answers, in the same order, as SQLite's.

use ctxkit::SessionInfo;
use deadpool_postgres::Transaction;

use super::rows::{load, row_to_episode, select_entries, select_history, COLS, EPISODE_COLS, HISTORY_COLS};
use crate::error::Result;
use crate::reads::Reads;
use crate::transfer::ExportRecord;
use crate::types::*;
use crate::write::Keyed;

impl Reads for Transaction<'_> {
    async fn get(&self, id: &str) -> Result<Option<MemoryEntry>> {
        Ok(load(self, id).await?.map(|(_, e)| e))
    }

    /// A category is compared as such, as on SQLite (where the `IS NULL OR` form kept the plan
    /// off the category index); a plan made before the values are known can use the index.
    async fn list(&self, project: &str, options: &ListOptions) -> Result<Vec<MemoryEntry>> {
        let order = match options.order {
            ListOrder::Newest => "created_at DESC, id",
            ListOrder::Importance => "importance DESC, created_at DESC, id",
        };
        let category = options.category.map(|c| c.as_str());
        let in_category = match category {
            Some(_) => "category = $2",
            None => "$2::text IS NULL",
        };
        let sql = format!(
            "SELECT {COLS} FROM project_memories WHERE project_path = $1 AND {in_category}
             AND ($5 OR superseded_by IS NULL)
             ORDER BY {order} LIMIT $3 OFFSET $4"
        );
        let limit = i64::try_from(options.limit).unwrap_or(i64::MAX);
        let offset = i64::try_from(options.offset).unwrap_or(i64::MAX);
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] =
            [&project, &category, &limit, &offset, &options.include_superseded];
        let rows = select_entries(self, &sql, &params).await?;
        Ok(rows.into_iter().map(|(_, e)| e).collect())
    }

    async fn count(&self, project: &str) -> Result<usize> {
        let n: i64 = self
            .query_one(
                "SELECT COUNT(*) FROM project_memories WHERE project_path = $1 AND superseded_by IS NULL",
                &[&project],
            )
            .await?
            .try_get(0)?;
        Ok(n as usize)
    }

    async fn history(&self, project: &str, memory_id: &str) -> Result<Vec<HistoryEntry>> {
        let sql = format!(
            "SELECT {HISTORY_COLS} FROM memory_history WHERE memory_id = $1 AND project_path = $2 ORDER BY id"
        );
        select_history(self, &sql, &[&memory_id, &project]).await
    }

    async fn project_history(&self, project: &str, limit: usize) -> Result<Vec<HistoryEntry>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let sql = format!(
            "SELECT {HISTORY_COLS} FROM memory_history WHERE project_path = $1 ORDER BY id DESC LIMIT $2"
        );
        select_history(self, &sql, &[&project, &limit]).await
    }

    async fn history_entry(&self, project: &str, history_id: i64) -> Result<Option<HistoryEntry>> {
        let sql = format!("SELECT {HISTORY_COLS} FROM memory_history WHERE id = $1 AND project_path = $2");
        Ok(select_history(self, &sql, &[&history_id, &project]).await?.pop())
    }

    async fn episodes(&self, project: &str, limit: usize) -> Result<Vec<EpisodicRecord>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let sql = format!(
            "SELECT {EPISODE_COLS} FROM episodic_records WHERE project_path = $1
             ORDER BY created_at DESC, id LIMIT $2"
        );
        let stmt = self.prepare_cached(&sql).await?;
        let rows = self.query(&stmt, &[&project, &limit]).await?;
        rows.iter().map(row_to_episode).collect()
    }

    async fn keyed(&self, of: Keyed, project: &str) -> Result<Vec<(String, String)>> {
        let (table, key, value) = of.columns();
        let exists: bool = self
            .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])
            .await?
            .try_get(0)?;
        if !exists {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {key}, {value} FROM {table} WHERE project_path = $1 ORDER BY {key} COLLATE \"C\""
        );
        let mut out = Vec::new();
        for row in self.query(&sql, &[&project]).await? {
            out.push((row.try_get(0)?, row.try_get(1)?));
        }
        Ok(out)
    }

    async fn export(&self, project: Option<&str>) -> Result<Vec<ExportRecord>> {
        let sql = format!(
            "SELECT {COLS} FROM project_memories WHERE $1::text IS NULL OR project_path = $1
             ORDER BY project_path COLLATE \"C\", created_at, id COLLATE \"C\""
        );
        let memories = select_entries(self, &sql, &[&project]).await?;
        let mut out: Vec<ExportRecord> = memories
            .into_iter()
            .map(|(_, e)| ExportRecord::Memory(e))
            .collect();
        let sql = format!(
            "SELECT {EPISODE_COLS} FROM episodic_records WHERE $1::text IS NULL OR project_path = $1
             ORDER BY project_path COLLATE \"C\", created_at, id COLLATE \"C\""
        );
        for row in self.query(&sql, &[&project]).await? {
            out.push(ExportRecord::Episode(row_to_episode(&row)?));
        }
        let sql = format!(
            "SELECT {HISTORY_COLS} FROM memory_history WHERE $1::text IS NULL OR project_path = $1 ORDER BY id"
        );
        for h in select_history(self, &sql, &[&project]).await? {
            out.push(ExportRecord::History(Box::new(h)));
        }
        Ok(out)
    }

    async fn stats(&self, project: &str) -> Result<MemoryStats> {
        let mut stats = crate::decide::StatsBuilder::new(project);
        let rows = self
            .query(
                "SELECT category, COUNT(*), SUM(importance::float8), SUM(access_count::float8), MIN(created_at), MAX(updated_at)
                 FROM project_memories WHERE project_path = $1 AND superseded_by IS NULL GROUP BY category",
                &[&project],
            )
            .await?;
        for row in rows {
            stats.category(
                row.try_get(0)?,
                row.try_get(1)?,
                row.try_get(2)?,
                row.try_get(3)?,
                row.try_get(4)?,
                row.try_get(5)?,
            );
        }
        let counts = self
            .query_one(
                "SELECT (SELECT COUNT(*) FROM episodic_records WHERE project_path = $1),
                        (SELECT COUNT(*) FROM memory_history WHERE project_path = $1),
                        (SELECT COUNT(*) FROM project_memories WHERE project_path = $1 AND superseded_by IS NOT NULL)",
                &[&project],
            )
            .await?;
        let count = |i: usize| -> Result<usize> { Ok(counts.try_get::<_, i64>(i)? as usize) };
        Ok(stats.finish(count(0)?, count(1)?, count(2)?))
    }

    /// Superseded memories too: they may become current again. A vector is missing when
    /// absent, of another model, or damaged (values no model makes): only the last needs
    /// reading it, so rows come in pages until `limit` are found.
    async fn missing_vectors(&self, project: &str, model: &str, limit: usize) -> Result<Vec<(i64, String)>> {
        const PAGE: i32 = 1024;
        let mut missing = Vec::new();
        if limit == 0 {
            return Ok(missing);
        }
        let portal = self
            .bind(
                "SELECT num, content, embedding_model IS NOT DISTINCT FROM $2, embedding FROM project_memories
                 WHERE project_path = $1 ORDER BY num",
                &[&project, &model],
            )
            .await?;
        loop {
            let rows = self.query_portal(&portal, PAGE).await?;
            for r in &rows {
                let vector: Option<&[u8]> = r.try_get(3)?;
                if !(r.try_get::<_, bool>(2)? && vector.is_some_and(crate::vectors::is_sound)) {
                    missing.push((r.try_get(0)?, r.try_get(1)?));
                    if missing.len() == limit {
                        return Ok(missing);
                    }
                }
            }
            if rows.len() < PAGE as usize {
                return Ok(missing);
            }
        }
    }

    async fn session(&self, id: &str) -> Result<Option<String>> {
        let row = self
            .query_opt("SELECT thread FROM sessions WHERE id = $1", &[&id])
            .await?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }

    async fn sessions(&self) -> Result<Vec<SessionInfo>> {
        let sql =
            "SELECT id, turns, messages, updated_at FROM sessions ORDER BY updated_at DESC, id COLLATE \"C\"";
        let mut out = Vec::new();
        for row in self.query(sql, &[]).await? {
            out.push(SessionInfo {
                id: row.try_get(0)?,
                turns: row.try_get::<_, i64>(1)? as usize,
                messages: row.try_get::<_, i64>(2)? as usize,
                updated: (row.try_get::<_, i64>(3)? / 1000) as u64,
            });
        }
        Ok(out)
    }
}
