//! The write operations on PostgreSQL: add, upsert, update, delete, forget, touch — the same
//! decisions as SQLite's (see [`crate::decide`]), each in one transaction holding its
//! project's advisory lock, so concurrent writers of a project take turns.

use deadpool_postgres::Transaction;

use super::history::record;
use super::rows::{delete_row, find_by_content, insert_entry, load, new_unique_id, store_row};
use super::search::{candidates, Filter};
use super::{write_tx, PostgresStore};
use crate::decide::{self, may_supersede, merge_changes_nothing, merge_into};
use crate::error::{MemoryError, Result};
use crate::rules::{
    check_new, check_project, check_update, numbered, Checked, MAX_ACCESS_COUNT, MERGE_SIMILARITY,
};
use crate::supersede::{candidate_category, replaced_terms, similarity_floor, CANDIDATES};
use crate::text::terms;
use crate::types::*;

/// The project a memory id belongs to, read before its project's lock is taken (a memory
/// never changes project, so it is still right once the lock is held).
async fn project_of(store: &PostgresStore, id: &str) -> Result<String> {
    let client = store.client().await?;
    let row = client
        .query_opt("SELECT project_path FROM project_memories WHERE id = $1", &[&id])
        .await?;
    row.map(|r| r.get(0))
        .ok_or_else(|| MemoryError::NotFound(id.to_string()))
}

/// Add one memory, marking the older memories it contradicts as superseded.
pub(super) async fn add(store: &PostgresStore, new: NewMemoryEntry) -> Result<MemoryEntry> {
    let checked = check_new(&new)?;
    let project = checked.project_path.clone();
    write_tx!(store, [project.as_str()], |tx, now| {
        let similar = if may_supersede(&checked) {
            similar_current(store, &tx, &checked).await?
        } else {
            Vec::new()
        };
        let entry = insert_checked(&tx, checked.clone(), now).await?;
        supersede(&tx, &entry, similar, &new.supersedes, now).await?;
        entry
    })
}

/// Add several memories in one transaction: all are stored or none (as on SQLite, a bulk load
/// supersedes only what a memory names or says it replaces).
pub(super) async fn add_many(
    store: &PostgresStore,
    entries: Vec<NewMemoryEntry>,
) -> Result<Vec<MemoryEntry>> {
    let checked = entries
        .iter()
        .enumerate()
        .map(|(i, e)| check_new(e).map_err(|err| numbered(i, entries.len(), err)))
        .collect::<Result<Vec<_>>>()?;
    let projects: Vec<&str> = checked.iter().map(|c| c.project_path.as_str()).collect();
    write_tx!(store, projects.iter().copied(), |tx, now| {
        let total = checked.len();
        let mut out = Vec::with_capacity(total);
        for (i, (c, new)) in checked.iter().zip(&entries).enumerate() {
            let explicit = replaced_terms(&c.content).is_some();
            let similar = if explicit {
                similar_current(store, &tx, c).await?
            } else {
                Vec::new()
            };
            let entry = insert_checked(&tx, c.clone(), now)
                .await
                .map_err(|err| numbered(i, total, err))?;
            if explicit || !new.supersedes.is_empty() {
                supersede(&tx, &entry, similar, &new.supersedes, now).await?;
            }
            out.push(entry);
        }
        out
    })
}

/// Insert a checked memory (taken by value: a transaction that lost a race runs again on a
/// fresh clone).
async fn insert_checked(tx: &Transaction<'_>, c: Checked, now: i64) -> Result<MemoryEntry> {
    if let Some(existing) = find_by_content(tx, &c.project_path, &c.content).await? {
        return Err(MemoryError::Duplicate {
            project: c.project_path,
            existing,
        });
    }
    let entry = c.into_entry(new_unique_id(tx, true).await?, now);
    insert_entry(tx, &entry).await?;
    record(
        tx,
        HistoryAction::Insert,
        &entry,
        None,
        Some(&entry),
        None,
        Some("added"),
        now,
    )
    .await?;
    Ok(entry)
}

/// The current memories most similar to a new one (what it may supersede), with their cosine,
/// from the full-text candidates.
async fn similar_current(
    store: &PostgresStore,
    tx: &Transaction<'_>,
    new: &Checked,
) -> Result<Vec<(f32, MemoryEntry)>> {
    let scored = scored_candidates(store, tx, &new.project_path, &new.content).await?;
    Ok(supersedable(&scored, new))
}

/// Of the scored candidates, those `new` may supersede: of its candidate category, at least
/// the similarity floor, most similar first (then by id), at most [`CANDIDATES`] — what the
/// SQLite store's lookup returns.
fn supersedable(scored: &[(f32, i64, MemoryEntry)], new: &Checked) -> Vec<(f32, MemoryEntry)> {
    let floor = similarity_floor(&new.content);
    let category = candidate_category(&new.content, new.category);
    let mut similar: Vec<(f32, MemoryEntry)> = scored
        .iter()
        .filter(|(sim, _, e)| *sim > 0.0 && *sim >= floor && category.is_none_or(|c| e.category == c))
        .map(|(sim, _, e)| (*sim, e.clone()))
        .collect();
    similar.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
    similar.truncate(CANDIDATES);
    similar
}

/// Every candidate for `content` in `project` with its cosine to it and its row number.
async fn scored_candidates(
    store: &PostgresStore,
    tx: &Transaction<'_>,
    project: &str,
    content: &str,
) -> Result<Vec<(f32, i64, MemoryEntry)>> {
    let q_terms = terms(content);
    if q_terms.is_empty() {
        return Ok(Vec::new());
    }
    let filter = Filter {
        project,
        min_importance: 0.0,
        categories: None,
    };
    let (vocab, found) = candidates(store, tx, &filter, &q_terms).await?;
    let qv = vocab.vector(&q_terms);
    Ok(found
        .into_iter()
        .map(|(num, e)| (qv.cosine(&vocab.vector(&terms(&e.content))), num, e))
        .collect())
}

/// Mark as superseded by `new` the memories it names and those among `similar` it contradicts.
async fn supersede(
    tx: &Transaction<'_>,
    new: &MemoryEntry,
    similar: Vec<(f32, MemoryEntry)>,
    named: &[String],
    now: i64,
) -> Result<()> {
    let mut targets: Vec<(i64, MemoryEntry, &'static str)> = Vec::new();
    for id in named {
        match load(tx, id).await? {
            Some((num, old)) if decide::can_name(&old, new) => targets.push((num, old, decide::NAMED_REASON)),
            _ => {
                tracing::debug!(memory = %new.id, named = %id, "a superseded id is not a current memory of the project")
            }
        }
    }
    let taken: Vec<String> = targets.iter().map(|t| t.1.id.clone()).collect();
    for (id, reason) in decide::superseded_by_similarity(new, similar, &taken) {
        if let Some((num, current)) = load(tx, &id).await? {
            targets.push((num, current, reason));
        }
    }
    for (num, old, reason) in targets {
        let after = decide::superseded(&old, &new.id, now);
        store_row(tx, num, &old, &after).await?;
        record(
            tx,
            HistoryAction::Supersede,
            &after,
            Some(&old),
            Some(&after),
            Some(&new.id),
            Some(reason),
            now,
        )
        .await?;
    }
    Ok(())
}

/// Change fields of a memory.
pub(super) async fn update(store: &PostgresStore, id: &str, update: MemoryUpdate) -> Result<MemoryEntry> {
    let update = check_update(update)?;
    let project = project_of(store, id).await?;
    write_tx!(store, [project.as_str()], |tx, now| {
        let (num, old) = load(&tx, id)
            .await?
            .ok_or_else(|| MemoryError::NotFound(id.to_string()))?;
        let mut new = update.clone().apply(&old);
        if new == old {
            return Ok(old);
        }
        if new.content != old.content {
            if let Some(existing) = find_by_content(&tx, &new.project_path, &new.content).await? {
                return Err(MemoryError::Duplicate {
                    project: new.project_path,
                    existing,
                });
            }
        }
        new.updated_at = now;
        store_row(&tx, num, &old, &new).await?;
        record(
            &tx,
            HistoryAction::Update,
            &new,
            Some(&old),
            Some(&new),
            None,
            Some("updated"),
            now,
        )
        .await?;
        new
    })
}

/// Insert, or merge into a memory more than 0.85 similar, or skip an identical one.
pub(super) async fn upsert(store: &PostgresStore, new: NewMemoryEntry) -> Result<UpsertResult> {
    let checked = check_new(&new)?;
    let project = checked.project_path.clone();
    write_tx!(store, [project.as_str()], |tx, now| {
        if let Some(existing) = find_by_content(&tx, &project, &checked.content).await? {
            return Ok(UpsertResult::Skipped {
                reason: format!("an identical memory already exists (id `{existing}`)"),
                existing_id: Some(existing),
            });
        }
        let scored = scored_candidates(store, &tx, &project, &checked.content).await?;
        let similar = if may_supersede(&checked) {
            supersedable(&scored, &checked)
        } else {
            Vec::new()
        };
        let best = scored
            .into_iter()
            .fold(None::<(f32, i64, MemoryEntry)>, |best, hit| match best {
                Some(b) if !(hit.0 > b.0 || (hit.0 == b.0 && hit.2.id < b.2.id)) => Some(b),
                _ => Some(hit),
            })
            .filter(|hit| hit.0 > MERGE_SIMILARITY);
        match best {
            Some((sim, num, old)) => {
                let merged = merge_into(&old, &checked, now);
                if merge_changes_nothing(&old, &merged) {
                    return Ok(UpsertResult::Skipped {
                        reason: format!("memory `{}` already says as much (similarity {sim:.2})", old.id),
                        existing_id: Some(old.id),
                    });
                }
                store_row(&tx, num, &old, &merged).await?;
                let reason = format!("merged a similar memory (similarity {sim:.2})");
                record(
                    &tx,
                    HistoryAction::Merge,
                    &merged,
                    Some(&old),
                    Some(&merged),
                    None,
                    Some(&reason),
                    now,
                )
                .await?;
                UpsertResult::Merged {
                    original_id: old.id,
                    merged,
                    similarity: sim,
                }
            }
            None => {
                let entry = insert_checked(&tx, checked.clone(), now).await?;
                supersede(&tx, &entry, similar, &new.supersedes, now).await?;
                UpsertResult::Inserted(entry)
            }
        }
    })
}

/// Delete a memory, returning it.
pub(super) async fn delete(store: &PostgresStore, id: &str) -> Result<MemoryEntry> {
    let project = project_of(store, id).await?;
    write_tx!(store, [project.as_str()], |tx, now| {
        let (num, old) = load(&tx, id)
            .await?
            .ok_or_else(|| MemoryError::NotFound(id.to_string()))?;
        delete_row(&tx, num, &old, "deleted", now).await?;
        old
    })
}

/// Delete the memories of a project that best match `query`.
pub(super) async fn forget(store: &PostgresStore, project: &str, query: &str) -> Result<Vec<MemoryEntry>> {
    let project = check_project(project)?;
    let q_terms = terms(query);
    if q_terms.is_empty() {
        return Ok(Vec::new());
    }
    let reason = decide::forget_reason(query);
    write_tx!(store, [project.as_str()], |tx, now| {
        let filter = Filter {
            project: &project,
            min_importance: 0.0,
            categories: None,
        };
        let (vocab, found) = candidates(store, &tx, &filter, &q_terms).await?;
        let qv = vocab.vector(&q_terms);
        let mut out = Vec::new();
        for (num, e) in decide::forget_pick(&qv, &vocab, found) {
            delete_row(&tx, num, &e, &reason, now).await?;
            out.push(e);
        }
        out
    })
}

/// Bump access counts (saturating at [`MAX_ACCESS_COUNT`]) and last-access times. Takes the
/// locks of the memories' projects, so a merge never writes back a count read before it.
pub(super) async fn touch(store: &PostgresStore, ids: &[String]) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let projects: Vec<String> = {
        let client = store.client().await?;
        client
            .query(
                "SELECT DISTINCT project_path FROM project_memories WHERE id = ANY($1)",
                &[&ids],
            )
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    write_tx!(store, projects.iter().map(String::as_str), |tx, now| {
        tx.execute(
            "UPDATE project_memories SET access_count = LEAST(access_count, $3::bigint - 1) + 1, last_accessed_at = $1
             WHERE id = ANY($2)",
            &[&now, &ids, &MAX_ACCESS_COUNT],
        )
        .await?;
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, category: MemoryCategory) -> MemoryEntry {
        MemoryEntry {
            id: id.into(),
            project_path: "/p".into(),
            category,
            content: id.into(),
            keywords: Vec::new(),
            importance: 0.5,
            access_count: 0,
            source_session_id: None,
            source_context: None,
            created_at: 0,
            updated_at: 0,
            last_accessed_at: 0,
            decayed_at: None,
            superseded_by: None,
            superseded_at: None,
        }
    }

    /// More similar memories of other categories do not crowd a same-category one out of an
    /// implicit contradiction's candidates; an explicit replacement compares every category.
    #[test]
    fn supersession_candidates_are_of_the_new_memorys_category() {
        let mut scored: Vec<(f32, i64, MemoryEntry)> = (0..CANDIDATES + 2)
            .map(|n| {
                (
                    0.99,
                    n as i64,
                    entry(&format!("fact{n:02}"), MemoryCategory::Fact),
                )
            })
            .collect();
        scored.push((0.9, 99, entry("old-preference", MemoryCategory::Preference)));
        let implicit = check_new(&NewMemoryEntry::new(
            "/p",
            MemoryCategory::Preference,
            "Always use bun for installing packages",
        ))
        .unwrap();
        let ids = |v: Vec<(f32, MemoryEntry)>| v.into_iter().map(|(_, e)| e.id).collect::<Vec<_>>();
        assert_eq!(ids(supersedable(&scored, &implicit)), ["old-preference"]);
        let explicit = check_new(&NewMemoryEntry::new(
            "/p",
            MemoryCategory::Preference,
            "Use bun instead of pnpm for installing packages",
        ))
        .unwrap();
        let crossed = ids(supersedable(&scored, &explicit));
        assert_eq!(crossed.len(), CANDIDATES);
        assert!(crossed.iter().all(|id| id.starts_with("fact")), "{crossed:?}");
    }
}
