//! Adding, merging, changing and removing memories: add, add_many, upsert, update, delete,
//! forget, and the supersession an added memory brings.

use super::rows::{deletion, insert, remove, replace, Change, Rows, Similar};
use crate::decide::{self, may_supersede, merge_changes_nothing, merge_into};
use crate::error::{MemoryError, Result};
use crate::rules::{numbered, Checked, CheckedUpdate, MERGE_SIMILARITY};
use crate::supersede::{candidate_category, replaced_terms, similarity_floor, CANDIDATES};
use crate::text::terms;
use crate::types::*;

/// Add a checked memory, marking the older memories it contradicts as superseded (see
/// [`supersede`](crate::supersede)). An identical content in the same project is
/// [`MemoryError::Duplicate`].
pub(crate) async fn add(
    rows: &mut impl Rows,
    new: Checked,
    named: &[String],
    now: i64,
) -> Result<MemoryEntry> {
    let similar = if may_supersede(&new) {
        similar_current(rows, &new).await?
    } else {
        Vec::new()
    };
    let entry = insert_checked(rows, new, now).await?;
    supersede(rows, &entry, similar, named, now).await?;
    Ok(entry)
}

/// Add several checked memories (each with the ids it names as superseded): all are stored or
/// none. A bulk load marks as superseded only what a memory names or says it replaces
/// ("instead of …"); comparing every memory with its neighbours is left to single adds.
pub(crate) async fn add_many(
    rows: &mut impl Rows,
    entries: Vec<(Checked, Vec<String>)>,
    now: i64,
) -> Result<Vec<MemoryEntry>> {
    let total = entries.len();
    let mut out = Vec::with_capacity(total);
    for (i, (new, named)) in entries.into_iter().enumerate() {
        let explicit = replaced_terms(&new.content).is_some();
        let similar = if explicit {
            similar_current(rows, &new).await?
        } else {
            Vec::new()
        };
        let entry = insert_checked(rows, new, now)
            .await
            .map_err(|err| numbered(i, total, err))?;
        if explicit || !named.is_empty() {
            supersede(rows, &entry, similar, &named, now).await?;
        }
        out.push(entry);
    }
    Ok(out)
}

/// Insert (marking what the new memory supersedes, as [`add`] does), or merge into a memory
/// more than 0.85 similar, or skip an identical one.
///
/// A merge keeps the more informative content (the new one when it has at least as many
/// distinct terms), the union of the keywords and the higher importance; the history keeps
/// the memory as it was.
pub(crate) async fn upsert(
    rows: &mut impl Rows,
    new: Checked,
    named: &[String],
    now: i64,
) -> Result<UpsertResult> {
    if let Some(existing) = rows.find_by_content(&new.project_path, &new.content).await? {
        return Ok(UpsertResult::Skipped {
            reason: format!("an identical memory already exists (id `{existing}`)"),
            existing_id: Some(existing),
        });
    }
    let closest = Similar {
        terms: &terms(&new.content),
        limit: 1,
        floor: MERGE_SIMILARITY,
        category: None,
    };
    let best = rows.similar(&new.project_path, closest).await?.into_iter().next();
    let Some((sim, (num, old))) = best.filter(|(sim, _)| *sim > MERGE_SIMILARITY) else {
        return add(rows, new, named, now).await.map(UpsertResult::Inserted);
    };
    let merged = merge_into(&old, &new, now);
    if merge_changes_nothing(&old, &merged) {
        return Ok(UpsertResult::Skipped {
            reason: format!("memory `{}` already says as much (similarity {sim:.2})", old.id),
            existing_id: Some(old.id),
        });
    }
    let reason = format!("merged a similar memory (similarity {sim:.2})");
    let change = Change {
        action: HistoryAction::Merge,
        before: Some(&old),
        after: Some(&merged),
        related_id: None,
        reason: &reason,
        at: now,
    };
    replace(rows, num, change).await?;
    Ok(UpsertResult::Merged {
        original_id: old.id,
        merged,
        similarity: sim,
    })
}

/// Change fields of a memory. Changing the content keeps the keywords unless new ones are
/// given; an empty keyword list derives them from the content.
pub(crate) async fn update(
    rows: &mut impl Rows,
    id: &str,
    update: CheckedUpdate,
    now: i64,
) -> Result<MemoryEntry> {
    let (num, old) = rows
        .load(id)
        .await?
        .ok_or_else(|| MemoryError::NotFound(id.to_string()))?;
    let mut new = update.apply(&old);
    if new == old {
        return Ok(old);
    }
    if new.content != old.content {
        refuse_duplicate(rows, &new.project_path, &new.content, None).await?;
    }
    new.updated_at = now;
    let change = Change {
        action: HistoryAction::Update,
        before: Some(&old),
        after: Some(&new),
        related_id: None,
        reason: "updated",
        at: now,
    };
    replace(rows, num, change).await?;
    Ok(new)
}

/// Delete a memory, returning it.
pub(crate) async fn delete(rows: &mut impl Rows, id: &str, now: i64) -> Result<MemoryEntry> {
    let (num, old) = rows
        .load(id)
        .await?
        .ok_or_else(|| MemoryError::NotFound(id.to_string()))?;
    remove(rows, num, deletion(&old, "deleted", now)).await?;
    Ok(old)
}

/// Delete the memories of a project that best match `query` (those at least 0.3 similar and
/// within 80 % of the best match, at most five), returning them.
pub(crate) async fn forget(
    rows: &mut impl Rows,
    project: &str,
    query: &str,
    now: i64,
) -> Result<Vec<MemoryEntry>> {
    let q_terms = terms(query);
    if q_terms.is_empty() {
        return Ok(Vec::new());
    }
    let reason = decide::forget_reason(query);
    let query = Similar {
        terms: &q_terms,
        limit: decide::FORGET_MAX,
        floor: decide::FORGET_MIN_SIMILARITY,
        category: None,
    };
    let matches = rows.similar(project, query).await?;
    let mut out = Vec::new();
    for (num, e) in decide::forget_pick(matches) {
        remove(rows, num, deletion(&e, &reason, now)).await?;
        out.push(e);
    }
    Ok(out)
}

/// [`MemoryError::Duplicate`] when another memory of `project` than `except` has `content`.
pub(super) async fn refuse_duplicate(
    rows: &mut impl Rows,
    project: &str,
    content: &str,
    except: Option<&str>,
) -> Result<()> {
    match rows.find_by_content(project, content).await? {
        Some(existing) if Some(existing.as_str()) != except => Err(MemoryError::Duplicate {
            project: project.to_string(),
            existing,
        }),
        _ => Ok(()),
    }
}

/// Insert a checked memory under a fresh id and record it.
async fn insert_checked(rows: &mut impl Rows, c: Checked, now: i64) -> Result<MemoryEntry> {
    refuse_duplicate(rows, &c.project_path, &c.content, None).await?;
    let entry = c.into_entry(rows.new_memory_id().await?, now);
    let change = Change {
        action: HistoryAction::Insert,
        before: None,
        after: Some(&entry),
        related_id: None,
        reason: "added",
        at: now,
    };
    insert(rows, change).await?;
    Ok(entry)
}

/// The current memories most similar to a new memory, with their cosine: what it may
/// supersede, so none below the lowest similarity a rule accepts nor of another category when
/// a rule needs the same one. Read before the new memory is stored.
async fn similar_current(rows: &mut impl Rows, new: &Checked) -> Result<Vec<(f32, MemoryEntry)>> {
    let q_terms = terms(&new.content);
    if q_terms.is_empty() {
        return Ok(Vec::new());
    }
    let query = Similar {
        terms: &q_terms,
        limit: CANDIDATES,
        floor: similarity_floor(&new.content),
        category: candidate_category(&new.content, new.category),
    };
    let found = rows.similar(&new.project_path, query).await?;
    Ok(found.into_iter().map(|(sim, (_, e))| (sim, e)).collect())
}

/// Mark as superseded by `new` the memories it names (`named`) and those among `similar` it
/// contradicts; each is recorded in the history (action `supersede`) and can be undone.
async fn supersede(
    rows: &mut impl Rows,
    new: &MemoryEntry,
    similar: Vec<(f32, MemoryEntry)>,
    named: &[String],
    now: i64,
) -> Result<()> {
    let mut targets: Vec<(i64, MemoryEntry, &'static str)> = Vec::new();
    for id in named {
        match rows.load(id).await? {
            Some((num, old)) if decide::can_name(&old, new) => targets.push((num, old, decide::NAMED_REASON)),
            _ => {
                tracing::debug!(memory = %new.id, named = %id, "a superseded id is not a current memory of the project")
            }
        }
    }
    let taken: Vec<String> = targets.iter().map(|t| t.1.id.clone()).collect();
    for (id, reason) in decide::superseded_by_similarity(new, similar, &taken) {
        if let Some((num, current)) = rows.load(&id).await? {
            targets.push((num, current, reason));
        }
    }
    for (num, old, reason) in targets {
        let after = decide::superseded(&old, &new.id, now);
        let change = Change {
            action: HistoryAction::Supersede,
            before: Some(&old),
            after: Some(&after),
            related_id: Some(&new.id),
            reason,
            at: now,
        };
        replace(rows, num, change).await?;
    }
    Ok(())
}
