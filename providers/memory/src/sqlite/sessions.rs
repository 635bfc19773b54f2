//! Sessions: one row per thread id (see [`crate::sessions`]).

use ctxkit::SessionInfo;
use rusqlite::{params, OptionalExtension};

use super::MemoryDb;
use crate::error::Result;
use crate::sessions::SavedSession;

impl MemoryDb {
    /// The saved form of session `id`, if any.
    pub(crate) fn load_session(&self, id: &str) -> Result<Option<String>> {
        self.read(|tx| {
            Ok(tx
                .prepare_cached("SELECT thread FROM sessions WHERE id = ?1")?
                .query_row(params![id], |r| r.get(0))
                .optional()?)
        })
    }

    /// Save session `id`, replacing what was saved before.
    pub(crate) fn save_session(&self, id: &str, saved: &SavedSession) -> Result<()> {
        self.write_statement(|conn, now| {
            conn.prepare_cached(
                "INSERT INTO sessions (id, thread, turns, messages, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (id) DO UPDATE SET thread = excluded.thread, turns = excluded.turns,
                     messages = excluded.messages, updated_at = excluded.updated_at",
            )?
            .execute(params![id, saved.json, saved.turns, saved.messages, now])?;
            Ok(())
        })
    }

    /// Every session, the most recently saved first.
    pub(crate) fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(
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
        })
    }

    /// Forget session `id`; whether there was one.
    pub(crate) fn delete_session(&self, id: &str) -> Result<bool> {
        self.write_statement(|conn, _| {
            Ok(conn
                .prepare_cached("DELETE FROM sessions WHERE id = ?1")?
                .execute(params![id])?
                > 0)
        })
    }
}
