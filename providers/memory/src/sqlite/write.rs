//! Validation and the write operations on memories: add, update, upsert, delete, forget,
//! clear, touch.

use rusqlite::{params, Transaction};

use super::rows::{
    delete_row, find_by_content, insert_entry, load, new_unique_id, select_entries, store_row, COLS,
};
use super::search::Filter;
use super::{history, index, MemoryDb};
use crate::decide::{self, may_supersede, merge_changes_nothing, merge_into};
use crate::error::{MemoryError, Result};
use crate::rules::{
    check_new, check_project, check_update, numbered, Checked, MAX_ACCESS_COUNT, MERGE_SIMILARITY,
};
use crate::text::terms;
use crate::types::*;

impl MemoryDb {
    // ----- writes -----------------------------------------------------------------------

    /// Add a memory, marking the older memories it contradicts as superseded (see
    /// [`supersede`](crate::supersede)). An identical content in the same project is
    /// [`MemoryError::Duplicate`].
    pub(crate) fn add(&self, new: NewMemoryEntry) -> Result<MemoryEntry> {
        let checked = check_new(&new)?;
        self.write(|tx, now| {
            let similar = if may_supersede(&checked) {
                self.similar_current(tx, &checked)?
            } else {
                Vec::new()
            };
            let entry = insert_checked(tx, checked, now, "added")?;
            self.supersede(tx, &entry, similar, &new.supersedes, now)?;
            Ok(entry)
        })
    }

    /// Add several memories in one transaction: all are stored or none. A bulk load marks as
    /// superseded only what a memory names ([`NewMemoryEntry::supersedes`]) or says it replaces
    /// ("instead of …"); comparing every memory with its neighbours is left to single adds.
    pub(crate) fn add_many(&self, entries: Vec<NewMemoryEntry>) -> Result<Vec<MemoryEntry>> {
        let checked = entries
            .iter()
            .enumerate()
            .map(|(i, e)| check_new(e).map_err(|err| numbered(i, entries.len(), err)))
            .collect::<Result<Vec<_>>>()?;
        self.write(|tx, now| {
            let total = checked.len();
            let mut out = Vec::with_capacity(total);
            for (i, (c, new)) in checked.into_iter().zip(&entries).enumerate() {
                let explicit = crate::supersede::replaced_terms(&c.content).is_some();
                let similar = if explicit {
                    self.similar_current(tx, &c)?
                } else {
                    Vec::new()
                };
                let entry = insert_checked(tx, c, now, "added").map_err(|err| numbered(i, total, err))?;
                if explicit || !new.supersedes.is_empty() {
                    self.supersede(tx, &entry, similar, &new.supersedes, now)?;
                }
                out.push(entry);
            }
            Ok(out)
        })
    }

    /// The current memories of the project most similar to a new memory, with their TF-IDF
    /// cosine: what it may supersede, so none below the lowest similarity a rule accepts
    /// ([`similarity_floor`](crate::supersede::similarity_floor)) nor of another category when
    /// a rule needs the same one ([`candidate_category`](crate::supersede::candidate_category)).
    /// Call before the transaction
    /// writes anything (the in-memory index is brought to the transaction's snapshot).
    fn similar_current(&self, tx: &Transaction, new: &Checked) -> Result<Vec<(f32, MemoryEntry)>> {
        let (project, content) = (new.project_path.as_str(), new.content.as_str());
        let q_terms = terms(content);
        if q_terms.is_empty() {
            return Ok(Vec::new());
        }
        let n = crate::supersede::CANDIDATES;
        let floor = crate::supersede::similarity_floor(content);
        let category = crate::supersede::candidate_category(content, new.category);
        if let Some(hits) = self.with_index(tx, project, |ix| {
            ix.most_similar(tx, &q_terms, n, floor, category)
        })? {
            return Ok(hits.into_iter().map(|(sim, _, e)| (sim, e)).collect());
        }
        let vocab = self.inner.vocab.get(tx, project)?;
        let only = category.map(|c| [c]);
        let filter = Filter {
            project,
            min_importance: 0.0,
            categories: only.as_ref().map(|c| c.as_slice()),
        };
        let qv = vocab.vector(&q_terms);
        let mut scored: Vec<(f32, MemoryEntry)> = self
            .candidates(tx, &filter, &q_terms, &vocab)?
            .into_iter()
            .map(|(_, e)| (qv.cosine(&vocab.vector(&terms(&e.content))), e))
            .filter(|(sim, _)| *sim > 0.0 && *sim >= floor)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
        scored.truncate(n);
        Ok(scored)
    }

    /// The current memory of a project most similar to `content` if more than
    /// [`MERGE_SIMILARITY`] (what an upsert merges into), with its cosine and row number: from
    /// the in-memory index when there is one, else from the full-text candidates. Call before
    /// the transaction writes anything.
    fn most_similar(
        &self,
        tx: &Transaction,
        project: &str,
        content: &str,
    ) -> Result<Option<(f32, i64, MemoryEntry)>> {
        let new_terms = terms(content);
        let merging = |hit: &(f32, i64, MemoryEntry)| hit.0 > MERGE_SIMILARITY;
        if let Some(mut hits) = self.with_index(tx, project, |ix| {
            ix.most_similar(tx, &new_terms, 1, MERGE_SIMILARITY, None)
        })? {
            return Ok(hits.pop().filter(merging));
        }
        // Without the index, the document frequencies of the whole project are read.
        let vocab = self.inner.vocab.get(tx, project)?;
        let new_vec = vocab.vector(&new_terms);
        let filter = Filter {
            project,
            min_importance: 0.0,
            categories: None,
        };
        let mut best: Option<(f32, i64, MemoryEntry)> = None;
        for (num, e) in self.candidates(tx, &filter, &new_terms, &vocab)? {
            let sim = new_vec.cosine(&vocab.vector(&terms(&e.content)));
            if best
                .as_ref()
                .is_none_or(|(s, _, b)| sim > *s || (sim == *s && e.id < b.id))
            {
                best = Some((sim, num, e));
            }
        }
        Ok(best.filter(merging))
    }

    /// Mark as superseded by `new` the memories it names (`named`) and those among `similar`
    /// it contradicts; each is recorded in the history (action `supersede`) and can be undone.
    fn supersede(
        &self,
        tx: &Transaction,
        new: &MemoryEntry,
        similar: Vec<(f32, MemoryEntry)>,
        named: &[String],
        now: i64,
    ) -> Result<()> {
        let mut targets: Vec<(i64, MemoryEntry, &'static str)> = Vec::new();
        for id in named {
            match load(tx, id)? {
                Some((num, old)) if decide::can_name(&old, new) => {
                    targets.push((num, old, decide::NAMED_REASON));
                }
                _ => {
                    tracing::debug!(memory = %new.id, named = %id, "a superseded id is not a current memory of the project")
                }
            }
        }
        let taken: Vec<String> = targets.iter().map(|t| t.1.id.clone()).collect();
        for (id, reason) in decide::superseded_by_similarity(new, similar, &taken) {
            if let Some((num, current)) = load(tx, &id)? {
                targets.push((num, current, reason));
            }
        }
        for (num, old, reason) in targets {
            let after = decide::superseded(&old, &new.id, now);
            store_row(tx, num, &old, &after)?;
            history::record(
                tx,
                HistoryAction::Supersede,
                &after.id,
                &after.project_path,
                Some(&old),
                Some(&after),
                Some(&new.id),
                Some(reason),
                now,
            )?;
        }
        Ok(())
    }

    /// Change fields of a memory. Changing the content keeps the keywords unless new ones are
    /// given; an empty keyword list derives them from the content.
    pub(crate) fn update(&self, id: &str, update: MemoryUpdate) -> Result<MemoryEntry> {
        let update = check_update(update)?;
        self.write(|tx, now| {
            let (num, old) = load(tx, id)?.ok_or_else(|| MemoryError::NotFound(id.to_string()))?;
            let mut new = update.apply(&old);
            if new == old {
                return Ok(old);
            }
            if new.content != old.content {
                if let Some(existing) = find_by_content(tx, &new.project_path, &new.content)? {
                    return Err(MemoryError::Duplicate {
                        project: new.project_path,
                        existing,
                    });
                }
            }
            new.updated_at = now;
            store_row(tx, num, &old, &new)?;
            history::record(
                tx,
                HistoryAction::Update,
                &new.id,
                &new.project_path,
                Some(&old),
                Some(&new),
                None,
                Some("updated"),
                now,
            )?;
            Ok(new)
        })
    }

    /// Insert (marking what the new memory supersedes, as [`add`](Self::add) does), or merge
    /// into a memory more than 0.85 similar, or skip an identical one.
    ///
    /// A merge keeps the more informative content (the new one when it has at least as many
    /// distinct terms), the union of the keywords and the higher importance; the history keeps
    /// the memory as it was.
    pub(crate) fn upsert(&self, new: NewMemoryEntry) -> Result<UpsertResult> {
        let checked = check_new(&new)?;
        self.write(|tx, now| {
            if let Some(existing) = find_by_content(tx, &checked.project_path, &checked.content)? {
                return Ok(UpsertResult::Skipped {
                    reason: format!("an identical memory already exists (id `{existing}`)"),
                    existing_id: Some(existing),
                });
            }
            let similar = if may_supersede(&checked) {
                self.similar_current(tx, &checked)?
            } else {
                Vec::new()
            };
            match self.most_similar(tx, &checked.project_path, &checked.content)? {
                Some((sim, num, old)) => {
                    let merged = merge_into(&old, &checked, now);
                    if merge_changes_nothing(&old, &merged) {
                        return Ok(UpsertResult::Skipped {
                            reason: format!("memory `{}` already says as much (similarity {sim:.2})", old.id),
                            existing_id: Some(old.id),
                        });
                    }
                    store_row(tx, num, &old, &merged)?;
                    let reason = format!("merged a similar memory (similarity {sim:.2})");
                    history::record(
                        tx,
                        HistoryAction::Merge,
                        &merged.id,
                        &merged.project_path,
                        Some(&old),
                        Some(&merged),
                        None,
                        Some(&reason),
                        now,
                    )?;
                    Ok(UpsertResult::Merged {
                        original_id: old.id,
                        merged,
                        similarity: sim,
                    })
                }
                None => {
                    let entry = insert_checked(tx, checked, now, "added")?;
                    self.supersede(tx, &entry, similar, &new.supersedes, now)?;
                    Ok(UpsertResult::Inserted(entry))
                }
            }
        })
    }

    /// Delete a memory, returning it.
    pub(crate) fn delete(&self, id: &str) -> Result<MemoryEntry> {
        self.write(|tx, now| {
            let (num, old) = load(tx, id)?.ok_or_else(|| MemoryError::NotFound(id.to_string()))?;
            delete_row(tx, num, &old, "deleted", now)?;
            Ok(old)
        })
    }

    /// Delete the memories of a project that best match `query` (those at least 0.3 similar and
    /// within 80 % of the best match, at most five), returning them.
    pub(crate) fn forget(&self, project: &str, query: &str) -> Result<Vec<MemoryEntry>> {
        let project = check_project(project)?;
        let q_terms = terms(query);
        if q_terms.is_empty() {
            return Ok(Vec::new());
        }
        let reason = decide::forget_reason(query);
        self.write(|tx, now| {
            let vocab = self.inner.vocab.get(tx, &project)?;
            let filter = Filter {
                project: &project,
                min_importance: 0.0,
                categories: None,
            };
            let qv = vocab.vector(&q_terms);
            let candidates = self.candidates(tx, &filter, &q_terms, &vocab)?;
            let mut out = Vec::new();
            for (num, e) in decide::forget_pick(&qv, &vocab, candidates) {
                delete_row(tx, num, &e, &reason, now)?;
                out.push(e);
            }
            Ok(out)
        })
    }

    /// Delete every memory of a project, returning how many there were.
    pub(crate) fn clear(&self, project: &str) -> Result<usize> {
        let project = check_project(project)?;
        self.write(|tx, now| {
            let rows = select_entries(
                tx,
                &format!("SELECT {COLS} FROM project_memories WHERE project_path = ?1"),
                params![project],
            )?;
            for (_, e) in &rows {
                history::record(
                    tx,
                    HistoryAction::Delete,
                    &e.id,
                    &project,
                    Some(e),
                    None,
                    None,
                    Some("cleared"),
                    now,
                )?;
            }
            let nums: Vec<i64> = rows.iter().map(|(n, _)| *n).collect();
            index::clear_project(tx, &project, &nums)?;
            tx.prepare_cached("DELETE FROM project_memories WHERE project_path = ?1")?
                .execute(params![project])?;
            Ok(rows.len())
        })
    }

    /// Bump access counts (saturating at [`MAX_ACCESS_COUNT`]) and
    /// last-access times: what a search does to what it returns.
    pub(crate) fn touch(&self, ids: &[String]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.write(|tx, now| {
            let mut stmt = tx.prepare_cached(
                "UPDATE project_memories SET access_count = MIN(CAST(access_count AS INTEGER), ?3 - 1) + 1,
                     last_accessed_at = ?1 WHERE id = ?2",
            )?;
            for id in ids {
                stmt.execute(params![now, id, MAX_ACCESS_COUNT])?;
            }
            Ok(())
        })
    }
}

fn insert_checked(tx: &Transaction, c: Checked, now: i64, reason: &str) -> Result<MemoryEntry> {
    if let Some(existing) = find_by_content(tx, &c.project_path, &c.content)? {
        return Err(MemoryError::Duplicate {
            project: c.project_path,
            existing,
        });
    }
    let entry = c.into_entry(new_unique_id(tx, "project_memories")?, now);
    insert_entry(tx, &entry)?;
    history::record(
        tx,
        HistoryAction::Insert,
        &entry.id,
        &entry.project_path,
        None,
        Some(&entry),
        None,
        Some(reason),
        now,
    )?;
    Ok(entry)
}
