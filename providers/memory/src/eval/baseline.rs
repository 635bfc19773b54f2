//! The baseline of the evaluation: plain SQLite FTS5, as one would set it up without ctxkit.
//!
//! One `fts5(content, project UNINDEXED)` table in an in-memory database, the default
//! `unicode61` tokenizer (no stemming, no stop words), every memory of the set (superseded ones
//! too: plain full text knows nothing of supersession), and each query as its words OR-ed,
//! filtered by project, best `bm25` first.

use rusqlite::{params, Connection};

use super::EvalMemory;
use crate::error::Result;

/// The baseline's index of one evaluation set.
pub(super) struct PlainFts<'a> {
    conn: Connection,
    memories: &'a [EvalMemory],
}

impl<'a> PlainFts<'a> {
    /// Index every memory; rowid `i + 1` is `memories[i]`.
    pub(super) fn new(memories: &'a [EvalMemory]) -> Result<Self> {
        let conn = Connection::open_in_memory()?;
        conn.execute_batch("CREATE VIRTUAL TABLE plain USING fts5(content, project UNINDEXED)")?;
        {
            let mut insert =
                conn.prepare("INSERT INTO plain(rowid, content, project) VALUES (?1, ?2, ?3)")?;
            for (i, m) in memories.iter().enumerate() {
                insert.execute(params![i as i64 + 1, m.content, m.project])?;
            }
        }
        Ok(PlainFts { conn, memories })
    }

    /// The ids of the best `limit` memories of `project` for `query`.
    pub(super) fn search(&self, project: &str, query: &str, limit: usize) -> Result<Vec<&'a str>> {
        let Some(expr) = or_query(query) else {
            return Ok(Vec::new());
        };
        let mut stmt = self.conn.prepare_cached(
            "SELECT rowid FROM plain WHERE plain MATCH ?1 AND project = ?2 ORDER BY bm25(plain) LIMIT ?3",
        )?;
        let rows = stmt.query_map(params![expr, project, limit as i64], |r| r.get::<_, i64>(0))?;
        rows.map(|r| Ok(self.memories[(r? - 1) as usize].id.as_str()))
            .collect()
    }
}

/// The query's words (runs of letters and digits, as `unicode61` splits them), each quoted,
/// joined with OR; `None` when it has none.
fn or_query(query: &str) -> Option<String> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{w}\""))
        .collect();
    (!words.is_empty()).then(|| words.join(" OR "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_is_its_words_or_ed() {
        assert_eq!(
            or_query("how do I install lodash?").as_deref(),
            Some("\"how\" OR \"do\" OR \"I\" OR \"install\" OR \"lodash\"")
        );
        assert_eq!(or_query("?!"), None);
    }
}
