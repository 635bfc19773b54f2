//! `memory_sketches` on SQLite: the packs a search reads first ([`super::search`]), and their
//! upkeep by the writes ([`crate::sketches`] decides what to write).

use rusqlite::{params, Transaction};

use super::json_array;
use crate::error::Result;
use crate::sketches::{self, CurrentVector, Pack, PackRow, Touched};

/// Bring the packs holding the `touched` rows up to date with the rows.
pub(super) fn sync(tx: &Transaction, touched: &Touched) -> Result<()> {
    if touched.is_empty() {
        return Ok(());
    }
    let mut current = current_vectors(tx, &touched.rows())?;
    let mut read = Vec::new();
    let mut stmt = tx.prepare_cached(
        "SELECT embedding_model, slots, sketches FROM memory_sketches WHERE project_path = ?1 AND pack = ?2",
    )?;
    for (project, pack) in touched.packs(&current) {
        let rows = stmt.query_map(params![project, pack], |r| {
            Ok((r.get::<_, String>(0)?, r.get(1)?, r.get(2)?))
        })?;
        for row in rows {
            let (model, slots, sketches) = row?;
            read.push(PackRow {
                project: project.clone(),
                model,
                pack,
                content: Pack::decode(slots, sketches),
            });
        }
    }
    for damaged in read.iter().filter(|r| r.content.is_none()) {
        let (first, last) = sketches::rows_of(damaged.pack);
        let mut stmt = tx.prepare_cached(
            "SELECT num, project_path, embedding_model, embedding FROM project_memories
             WHERE num BETWEEN ?2 AND ?3 AND project_path = ?1
               AND superseded_by IS NULL AND embedding IS NOT NULL AND embedding_model IS NOT NULL",
        )?;
        let rows = stmt.query_map(params![damaged.project, first, last], current_vector)?;
        current.extend(
            rows.filter_map(Result::transpose)
                .collect::<rusqlite::Result<Vec<_>>>()?,
        );
    }
    for row in sketches::apply(touched, read, current) {
        match row.content {
            Some(p) => tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO memory_sketches (project_path, embedding_model, pack, slots, sketches)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )?
                .execute(params![row.project, row.model, row.pack, p.slots, p.sketches])?,
            None => tx
                .prepare_cached(
                    "DELETE FROM memory_sketches WHERE project_path = ?1 AND embedding_model = ?2 AND pack = ?3",
                )?
                .execute(params![row.project, row.model, row.pack])?,
        };
    }
    Ok(())
}

/// The current vectors of rows `nums`.
fn current_vectors(tx: &Transaction, nums: &[i64]) -> Result<Vec<CurrentVector>> {
    let mut stmt = tx.prepare_cached(
        "SELECT num, project_path, embedding_model, embedding FROM project_memories
         WHERE num IN (SELECT value FROM json_each(?1))
           AND superseded_by IS NULL AND embedding IS NOT NULL AND embedding_model IS NOT NULL",
    )?;
    let rows = stmt.query_map(params![json_array(nums)], current_vector)?;
    Ok(rows
        .filter_map(Result::transpose)
        .collect::<rusqlite::Result<_>>()?)
}

/// A row's `num, project_path, embedding_model, embedding` as a current vector; `None` when the
/// vector is not a blob (a damaged row: it has no vector, and `embed_missing` gives it one).
fn current_vector(r: &rusqlite::Row) -> rusqlite::Result<Option<CurrentVector>> {
    let Ok(vector) = r.get_ref(3)?.as_blob() else {
        return Ok(None);
    };
    Ok(Some((r.get(0)?, r.get(1)?, r.get(2)?, vector.to_vec())))
}

/// Write the packs of every current vector (the migration that made the table).
pub(super) fn build_all(tx: &Transaction) -> Result<()> {
    let mut touched = Touched::default();
    let mut stmt = tx.prepare(
        "SELECT project_path, num FROM project_memories WHERE superseded_by IS NULL AND embedding IS NOT NULL",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        touched.note(&row.get::<_, String>(0)?, row.get(1)?);
    }
    sync(tx, &touched)
}
