//! `memory_sketches` on PostgreSQL: their upkeep by the writes ([`crate::sketches::sync`] over
//! [`Packs`]), as on SQLite; a search reads them in [`super::search`].

use std::collections::BTreeSet;

use deadpool_postgres::GenericClient;

use crate::error::Result;
use crate::sketches::{self, CurrentVector, Pack, PackRow, Packs, Touched};

/// A connection or a transaction, as the packs' upkeep sees it.
pub(super) struct PgPacks<'a, C>(pub(super) &'a C);

const CURRENT: &str = "SELECT num, project_path, embedding_model, embedding FROM project_memories";

impl<C: GenericClient> Packs for PgPacks<'_, C> {
    async fn current_vectors(&self, nums: &[i64]) -> Result<Vec<CurrentVector>> {
        let sql = format!(
            "{CURRENT} WHERE num = ANY($1)
               AND superseded_by IS NULL AND embedding IS NOT NULL AND embedding_model IS NOT NULL"
        );
        let rows = self.0.query(&sql, &[&nums]).await?;
        let current = rows
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?)));
        current.collect()
    }

    async fn pack_vectors(&self, project: &str, (first, last): (i64, i64)) -> Result<Vec<CurrentVector>> {
        let sql = format!(
            "{CURRENT} WHERE num BETWEEN $2 AND $3 AND project_path = $1
               AND superseded_by IS NULL AND embedding IS NOT NULL AND embedding_model IS NOT NULL"
        );
        let rows = self.0.query(&sql, &[&project, &first, &last]).await?;
        let current = rows
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?)));
        current.collect()
    }

    /// One statement for every place.
    async fn packs(&self, at: &BTreeSet<(String, i64)>) -> Result<Vec<PackRow>> {
        let (projects, packs): (Vec<&str>, Vec<i64>) = at.iter().map(|(p, n)| (p.as_str(), *n)).unzip();
        let rows = self
            .0
            .query(
                "SELECT s.project_path, s.embedding_model, s.pack, s.slots, s.sketches FROM memory_sketches s
                 JOIN unnest($1::text[], $2::bigint[]) AS u(project_path, pack)
                   ON s.project_path = u.project_path AND s.pack = u.pack",
                &[&projects, &packs],
            )
            .await?;
        let read = rows.iter().map(|row| {
            Ok(PackRow {
                project: row.try_get(0)?,
                model: row.try_get(1)?,
                pack: row.try_get(2)?,
                content: Pack::decode(row.try_get(3)?, row.try_get(4)?),
            })
        });
        read.collect()
    }

    async fn write_pack(&self, row: &PackRow) -> Result<()> {
        match &row.content {
            Some(p) => {
                self.0
                    .execute(
                        "INSERT INTO memory_sketches (project_path, embedding_model, pack, slots, sketches)
                         VALUES ($1, $2, $3, $4, $5)
                         ON CONFLICT (project_path, embedding_model, pack)
                         DO UPDATE SET slots = EXCLUDED.slots, sketches = EXCLUDED.sketches",
                        &[&row.project, &row.model, &row.pack, &p.slots, &p.sketches],
                    )
                    .await?
            }
            None => {
                self.0
                    .execute(
                        "DELETE FROM memory_sketches WHERE project_path = $1 AND embedding_model = $2 AND pack = $3",
                        &[&row.project, &row.model, &row.pack],
                    )
                    .await?
            }
        };
        Ok(())
    }
}

/// Write the packs of every current vector (the migration that made the table).
pub(super) async fn build_all(client: &impl GenericClient) -> Result<()> {
    let mut touched = Touched::default();
    for row in client
        .query(
            "SELECT project_path, num FROM project_memories WHERE superseded_by IS NULL AND embedding IS NOT NULL",
            &[],
        )
        .await?
    {
        touched.note(row.try_get(0)?, row.try_get(1)?);
    }
    sketches::sync(&PgPacks(client), &touched).await
}
