//! `memory_sketches` on PostgreSQL: their upkeep by the writes ([`crate::sketches`] decides
//! what to write), as on SQLite; a search reads them in [`super::search`].

use deadpool_postgres::GenericClient;

use crate::error::Result;
use crate::sketches::{self, CurrentVector, Pack, PackRow, Touched};

/// Bring the packs holding the `touched` rows up to date with the rows.
pub(super) async fn sync(client: &impl GenericClient, touched: &Touched) -> Result<()> {
    if touched.is_empty() {
        return Ok(());
    }
    let nums = touched.rows();
    let mut current: Vec<CurrentVector> = Vec::new();
    for row in client
        .query(
            "SELECT num, project_path, embedding_model, embedding FROM project_memories
             WHERE num = ANY($1) AND superseded_by IS NULL AND embedding IS NOT NULL AND embedding_model IS NOT NULL",
            &[&nums],
        )
        .await?
    {
        current.push((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, row.try_get(3)?));
    }
    let (projects, packs): (Vec<String>, Vec<i64>) = touched.packs(&current).into_iter().unzip();
    let mut read = Vec::new();
    for row in client
        .query(
            "SELECT s.project_path, s.embedding_model, s.pack, s.slots, s.sketches FROM memory_sketches s
             JOIN unnest($1::text[], $2::bigint[]) AS u(project_path, pack)
               ON s.project_path = u.project_path AND s.pack = u.pack",
            &[&projects, &packs],
        )
        .await?
    {
        read.push(PackRow {
            project: row.try_get(0)?,
            model: row.try_get(1)?,
            pack: row.try_get(2)?,
            content: Pack::decode(row.try_get(3)?, row.try_get(4)?),
        });
    }
    for damaged in read.iter().filter(|r| r.content.is_none()) {
        let (first, last) = sketches::rows_of(damaged.pack);
        for row in client
            .query(
                "SELECT num, project_path, embedding_model, embedding FROM project_memories
                 WHERE num BETWEEN $2 AND $3 AND project_path = $1
                   AND superseded_by IS NULL AND embedding IS NOT NULL AND embedding_model IS NOT NULL",
                &[&damaged.project, &first, &last],
            )
            .await?
        {
            current.push((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, row.try_get(3)?));
        }
    }
    for row in sketches::apply(touched, read, current) {
        match row.content {
            Some(p) => client
                .execute(
                    "INSERT INTO memory_sketches (project_path, embedding_model, pack, slots, sketches)
                     VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (project_path, embedding_model, pack)
                     DO UPDATE SET slots = EXCLUDED.slots, sketches = EXCLUDED.sketches",
                    &[&row.project, &row.model, &row.pack, &p.slots, &p.sketches],
                )
                .await?,
            None => client
                .execute(
                    "DELETE FROM memory_sketches WHERE project_path = $1 AND embedding_model = $2 AND pack = $3",
                    &[&row.project, &row.model, &row.pack],
                )
                .await?,
        };
    }
    Ok(())
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
    sync(client, &touched).await
}
