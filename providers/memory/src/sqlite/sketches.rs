//! `memory_sketches` on SQLite: the packs a search reads first ([`super::search`]), and their
//! upkeep by the writes ([`crate::sketches::sync`] over [`Packs`]).

use std::collections::BTreeSet;

use rusqlite::{params, Transaction};

use super::json_array;
use super::writer::run_now;
use crate::error::Result;
use crate::sketches::{self, CurrentVector, Pack, PackRow, Packs, Touched};

const CURRENT: &str = "SELECT num, project_path, embedding_model, embedding FROM project_memories";

impl Packs for Transaction<'_> {
    async fn current_vectors(&self, nums: &[i64]) -> Result<Vec<CurrentVector>> {
        let mut stmt = self.prepare_cached(&format!(
            "{CURRENT} WHERE num IN (SELECT value FROM json_each(?1))
               AND superseded_by IS NULL AND embedding IS NOT NULL AND embedding_model IS NOT NULL"
        ))?;
        let rows = stmt.query_map(params![json_array(nums)], current_vector)?;
        Ok(rows
            .filter_map(Result::transpose)
            .collect::<rusqlite::Result<_>>()?)
    }

    async fn pack_vectors(&self, project: &str, (first, last): (i64, i64)) -> Result<Vec<CurrentVector>> {
        let mut stmt = self.prepare_cached(&format!(
            "{CURRENT} WHERE num BETWEEN ?2 AND ?3 AND project_path = ?1
               AND superseded_by IS NULL AND embedding IS NOT NULL AND embedding_model IS NOT NULL"
        ))?;
        let rows = stmt.query_map(params![project, first, last], current_vector)?;
        Ok(rows
            .filter_map(Result::transpose)
            .collect::<rusqlite::Result<_>>()?)
    }

    async fn packs(&self, at: &BTreeSet<(String, i64)>) -> Result<Vec<PackRow>> {
        let mut stmt = self.prepare_cached(
            "SELECT embedding_model, slots, sketches FROM memory_sketches WHERE project_path = ?1 AND pack = ?2",
        )?;
        let mut read = Vec::new();
        for (project, pack) in at {
            let rows = stmt.query_map(params![project, pack], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            for row in rows {
                let (model, slots, sketches) = row?;
                read.push(PackRow {
                    project: project.clone(),
                    model,
                    pack: *pack,
                    content: Pack::decode(slots, sketches),
                });
            }
        }
        Ok(read)
    }

    async fn write_pack(&self, row: &PackRow) -> Result<()> {
        match &row.content {
            Some(p) => self
                .prepare_cached(
                    "INSERT OR REPLACE INTO memory_sketches (project_path, embedding_model, pack, slots, sketches)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )?
                .execute(params![row.project, row.model, row.pack, p.slots, p.sketches])?,
            None => self
                .prepare_cached(
                    "DELETE FROM memory_sketches WHERE project_path = ?1 AND embedding_model = ?2 AND pack = ?3",
                )?
                .execute(params![row.project, row.model, row.pack])?,
        };
        Ok(())
    }
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
    run_now(sketches::sync(tx, &touched))
}
