//! Sessions: one row per thread id, as SQLite's (see [`crate::sessions`]).

use ctxkit::SessionInfo;

use super::{read_tx, write_tx, PostgresStore};
use crate::error::Result;
use crate::sessions::SavedSession;

pub(super) async fn load_session(store: &PostgresStore, id: &str) -> Result<Option<String>> {
    read_tx!(store, |tx| {
        tx.query_opt("SELECT thread FROM sessions WHERE id = $1", &[&id])
            .await?
            .map(|row| row.try_get::<_, String>(0))
            .transpose()?
    })
}

pub(super) async fn save_session(store: &PostgresStore, id: &str, saved: &SavedSession) -> Result<()> {
    // Saves of one session are serialized by a lock on its id.
    write_tx!(store, [format!("session:{id}").as_str()], |tx, now| {
        tx.execute(
            "INSERT INTO sessions (id, thread, turns, messages, updated_at) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (id) DO UPDATE SET thread = excluded.thread, turns = excluded.turns,
                 messages = excluded.messages, updated_at = excluded.updated_at",
            &[&id, &saved.json, &saved.turns, &saved.messages, &now],
        )
        .await?;
    })
}

pub(super) async fn list_sessions(store: &PostgresStore) -> Result<Vec<SessionInfo>> {
    read_tx!(store, |tx| {
        let rows = tx
            .query(
                "SELECT id, turns, messages, updated_at FROM sessions ORDER BY updated_at DESC, id COLLATE \"C\"",
                &[],
            )
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            out.push(SessionInfo {
                id: row.try_get(0)?,
                turns: row.try_get::<_, i64>(1)? as usize,
                messages: row.try_get::<_, i64>(2)? as usize,
                updated: (row.try_get::<_, i64>(3)? / 1000) as u64,
            });
        }
        out
    })
}

pub(super) async fn delete_session(store: &PostgresStore, id: &str) -> Result<bool> {
    write_tx!(store, [format!("session:{id}").as_str()], |tx, _now| {
        tx.execute("DELETE FROM sessions WHERE id = $1", &[&id]).await? > 0
    })
}
