//! Validation and the write operations on memories: add, update, upsert, delete, forget,
//! clear, touch.

use rusqlite::{params, Transaction};

use super::rows::{
    delete_row, find_by_content, insert_entry, load, new_unique_id, select_entries, store_row, COLS,
};
use super::search::Filter;
use super::{
    history, index, MemoryDb, IMPORTANCE_RANGE, MAX_ACCESS_COUNT, MAX_CONTENT_CHARS, MERGE_SIMILARITY,
};
use crate::error::{MemoryError, Result};
use crate::secrets;
use crate::text::{self, terms};
use crate::types::*;

/// Longest `source_context` kept, in characters (longer ones are cut).
const MAX_SOURCE_CONTEXT_CHARS: usize = 500;
/// `forget` removes matches at least this similar to the query…
const FORGET_MIN_SIMILARITY: f32 = 0.3;
/// …and within this fraction of the best match, at most this many.
const FORGET_RELATIVE: f32 = 0.8;
const FORGET_MAX: usize = 5;

/// A validated memory ready to store.
struct Checked {
    project_path: String,
    category: MemoryCategory,
    content: String,
    keywords: Vec<String>,
    importance: f32,
    source_session_id: Option<String>,
    source_context: Option<String>,
}

impl MemoryDb {
    // ----- validation -------------------------------------------------------------------

    fn check_new(&self, new: &NewMemoryEntry) -> Result<Checked> {
        // Secrets first, on every field exactly as given (before trimming or lowercasing).
        check_raw_secrets(
            &new.project_path,
            &new.content,
            &new.keywords,
            new.source_context.as_deref(),
            new.source_session_id.as_deref(),
        )?;
        let project_path = check_project(&new.project_path)?;
        let content = check_content(&new.content)?;
        let importance = check_importance(new.importance)?;
        let keywords = if new.keywords.iter().all(|k| k.trim().is_empty()) {
            text::derive_keywords(&content)
        } else {
            text::normalize_keywords(&new.keywords)
        };
        let source_context = new
            .source_context
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| text::truncate_chars(s, MAX_SOURCE_CONTEXT_CHARS));
        let source_session_id = new.source_session_id.clone().filter(|s| !s.trim().is_empty());
        check_secrets(
            &content,
            &keywords,
            source_context.as_deref(),
            source_session_id.as_deref(),
        )?;
        Ok(Checked {
            project_path,
            category: new.category,
            content,
            keywords,
            importance,
            source_session_id,
            source_context,
        })
    }

    // ----- writes -----------------------------------------------------------------------

    /// Add a memory, marking the older memories it contradicts as superseded (see
    /// [`supersede`](crate::supersede)). An identical content in the same project is
    /// [`MemoryError::Duplicate`].
    pub fn add(&self, new: NewMemoryEntry) -> Result<MemoryEntry> {
        let checked = self.check_new(&new)?;
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
    pub fn add_many(&self, entries: Vec<NewMemoryEntry>) -> Result<Vec<MemoryEntry>> {
        let checked = entries
            .iter()
            .enumerate()
            .map(|(i, e)| self.check_new(e).map_err(|err| numbered(i, entries.len(), err)))
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
        use crate::supersede::{
            claims_differ, names_replaced, replaced_terms, EXPLICIT_SAME_CATEGORY_SIMILARITY,
            EXPLICIT_SIMILARITY, SUPERSEDE_SIMILARITY,
        };
        let mut targets: Vec<(i64, MemoryEntry, &'static str)> = Vec::new();
        for id in named {
            match load(tx, id)? {
                Some((num, old))
                    if old.project_path == new.project_path
                        && old.superseded_by.is_none()
                        && old.id != new.id =>
                {
                    targets.push((num, old, "superseded: named by the newer memory"));
                }
                _ => {
                    tracing::debug!(memory = %new.id, named = %id, "a superseded id is not a current memory of the project")
                }
            }
        }
        let replaced = replaced_terms(&new.content);
        for (sim, old) in similar {
            if old.id == new.id || old.superseded_by.is_some() || targets.iter().any(|t| t.1.id == old.id) {
                continue;
            }
            let said = replaced.as_ref().is_some_and(|r| {
                names_replaced(&old.content, r)
                    && ((old.category == new.category && sim >= EXPLICIT_SAME_CATEGORY_SIMILARITY)
                        || sim >= EXPLICIT_SIMILARITY)
            });
            let contradicts = old.category == new.category
                && crate::supersede::single_valued(new.category)
                && sim >= SUPERSEDE_SIMILARITY
                && claims_differ(&new.content, &old.content);
            let reason = if said {
                "superseded: the newer memory says it replaces this"
            } else if contradicts {
                "superseded: a newer memory on the same subject says otherwise"
            } else {
                continue;
            };
            if let Some((num, current)) = load(tx, &old.id)? {
                targets.push((num, current, reason));
            }
        }
        for (num, old, reason) in targets {
            let mut after = old.clone();
            after.superseded_by = Some(new.id.clone());
            after.superseded_at = Some(now);
            after.updated_at = now;
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
    pub fn update(&self, id: &str, update: MemoryUpdate) -> Result<MemoryEntry> {
        if let Some(c) = &update.content {
            secrets::check("memory", c)?;
        }
        if let Some(k) = &update.keywords {
            check_keyword_secrets(k)?;
        }
        let content = update.content.as_deref().map(check_content).transpose()?;
        let importance = update.importance.map(check_importance).transpose()?;
        let keywords = update.keywords.as_ref().map(|k| text::normalize_keywords(k));
        if let Some(c) = &content {
            secrets::check("memory", c)?;
        }
        if let Some(k) = &keywords {
            secrets::check("memory", &k.join(" "))?;
        }
        self.write(|tx, now| {
            let (num, old) = load(tx, id)?.ok_or_else(|| MemoryError::NotFound(id.to_string()))?;
            let mut new = old.clone();
            if let Some(c) = content {
                new.content = c;
            }
            if let Some(c) = update.category {
                new.category = c;
            }
            if let Some(i) = importance {
                new.importance = i;
            }
            if let Some(k) = keywords {
                new.keywords = if k.is_empty() {
                    text::derive_keywords(&new.content)
                } else {
                    k
                };
            }
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
    pub fn upsert(&self, new: NewMemoryEntry) -> Result<UpsertResult> {
        let checked = self.check_new(&new)?;
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
                    if merged.content == old.content
                        && merged.keywords == old.keywords
                        && merged.importance == old.importance
                    {
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
    pub fn delete(&self, id: &str) -> Result<MemoryEntry> {
        self.write(|tx, now| {
            let (num, old) = load(tx, id)?.ok_or_else(|| MemoryError::NotFound(id.to_string()))?;
            delete_row(tx, num, &old, "deleted", now)?;
            Ok(old)
        })
    }

    /// Delete the memories of a project that best match `query` (those at least 0.3 similar and
    /// within 80 % of the best match, at most five), returning them.
    pub fn forget(&self, project: &str, query: &str) -> Result<Vec<MemoryEntry>> {
        let project = check_project(project)?;
        let q_terms = terms(query);
        if q_terms.is_empty() {
            return Ok(Vec::new());
        }
        let reason = format!(
            "forgotten on request: {}",
            secrets::redact(&text::truncate_chars(query, 200))
        );
        self.write(|tx, now| {
            let vocab = self.inner.vocab.get(tx, &project)?;
            let filter = Filter {
                project: &project,
                min_importance: 0.0,
                categories: None,
            };
            let qv = vocab.vector(&q_terms);
            let mut scored: Vec<(f32, i64, MemoryEntry)> = self
                .candidates(tx, &filter, &q_terms, &vocab)?
                .into_iter()
                .map(|(num, e)| (qv.cosine(&vocab.vector(&terms(&e.content))), num, e))
                .filter(|(s, _, _)| *s >= FORGET_MIN_SIMILARITY)
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.2.id.cmp(&b.2.id)));
            let best = scored.first().map_or(0.0, |s| s.0);
            let mut out = Vec::new();
            for (sim, num, e) in scored.into_iter().take(FORGET_MAX) {
                if sim < best * FORGET_RELATIVE {
                    break;
                }
                delete_row(tx, num, &e, &reason, now)?;
                out.push(e);
            }
            Ok(out)
        })
    }

    /// Delete every memory of a project, returning how many there were.
    pub fn clear(&self, project: &str) -> Result<usize> {
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

    /// Bump access counts (saturating at [`MAX_ACCESS_COUNT`](super::MAX_ACCESS_COUNT)) and
    /// last-access times: what a search does to what it returns.
    pub fn touch(&self, ids: &[String]) -> Result<()> {
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

/// The merge of an upsert: the more informative content, the union of keywords, the higher
/// importance.
fn merge_into(old: &MemoryEntry, new: &Checked, now: i64) -> MemoryEntry {
    let mut merged = old.clone();
    if text::term_set(&new.content).len() >= text::term_set(&old.content).len() {
        merged.content = new.content.clone();
        merged.category = new.category;
        if new.source_session_id.is_some() {
            merged.source_session_id = new.source_session_id.clone();
        }
        if new.source_context.is_some() {
            merged.source_context = new.source_context.clone();
        }
    }
    let mut keywords = old.keywords.clone();
    keywords.extend(new.keywords.iter().cloned());
    merged.keywords = text::normalize_keywords(&keywords);
    merged.importance = old.importance.max(new.importance);
    merged.updated_at = now;
    merged
}

/// Whether a new memory could supersede anything found by similarity: it says it replaces
/// something, or its category holds one statement per subject.
fn may_supersede(c: &Checked) -> bool {
    crate::supersede::single_valued(c.category) || crate::supersede::replaced_terms(&c.content).is_some()
}

/// Error of the `i`-th of `total` batch items.
fn numbered(i: usize, total: usize, err: MemoryError) -> MemoryError {
    match err {
        MemoryError::Invalid(m) => MemoryError::Invalid(format!("memory {} of {total}: {m}", i + 1)),
        other => other,
    }
}

pub(crate) fn check_project(project: &str) -> Result<String> {
    if project.trim().is_empty() {
        return Err(MemoryError::Invalid("the project path must not be empty".into()));
    }
    Ok(project.to_string())
}

pub(super) fn check_content(content: &str) -> Result<String> {
    let content = content.trim();
    if content.is_empty() {
        return Err(MemoryError::Invalid("the content must not be empty".into()));
    }
    let chars = content.chars().count();
    if chars > MAX_CONTENT_CHARS {
        return Err(MemoryError::Invalid(format!(
            "the content is {chars} characters long; the limit is {MAX_CONTENT_CHARS}"
        )));
    }
    Ok(content.to_string())
}

/// Importance must be in [`IMPORTANCE_RANGE`] (`[0, 1]`; NaN is not); it is kept at `f32`
/// precision so exports round-trip exactly. Thresholds compared with importance (`prune`) are
/// checked by this too.
pub(super) fn check_importance(importance: f32) -> Result<f32> {
    if !IMPORTANCE_RANGE.contains(&importance) {
        return Err(MemoryError::Invalid(format!(
            "importance {importance} is outside 0.0-1.0"
        )));
    }
    Ok(importance)
}

/// The access count after one more access: saturates at [`MAX_ACCESS_COUNT`], like `touch`.
pub(super) fn bumped(count: i64) -> i64 {
    count.min(MAX_ACCESS_COUNT - 1) + 1
}

/// Each keyword as given, and all of them together (a secret split across keywords).
pub(super) fn check_keyword_secrets(keywords: &[String]) -> Result<()> {
    secrets::check_all("memory", keywords.iter().map(String::as_str))?;
    secrets::check("memory", &keywords.join(" "))
}

/// Every field of a memory as given, before any normalisation.
pub(super) fn check_raw_secrets(
    project: &str,
    content: &str,
    keywords: &[String],
    context: Option<&str>,
    session: Option<&str>,
) -> Result<()> {
    secrets::check("memory", project)?;
    secrets::check("memory", content)?;
    check_keyword_secrets(keywords)?;
    secrets::check_all("memory", context.into_iter().chain(session))
}

pub(super) fn check_secrets(
    content: &str,
    keywords: &[String],
    context: Option<&str>,
    session: Option<&str>,
) -> Result<()> {
    secrets::check("memory", content)?;
    secrets::check("memory", &keywords.join(" "))?;
    if let Some(c) = context {
        secrets::check("memory", c)?;
    }
    if let Some(s) = session {
        secrets::check("memory", s)?;
    }
    Ok(())
}

fn insert_checked(tx: &Transaction, c: Checked, now: i64, reason: &str) -> Result<MemoryEntry> {
    if let Some(existing) = find_by_content(tx, &c.project_path, &c.content)? {
        return Err(MemoryError::Duplicate {
            project: c.project_path,
            existing,
        });
    }
    let entry = MemoryEntry {
        id: new_unique_id(tx, "project_memories")?,
        project_path: c.project_path,
        category: c.category,
        content: c.content,
        keywords: c.keywords,
        importance: c.importance,
        access_count: 0,
        source_session_id: c.source_session_id,
        source_context: c.source_context,
        created_at: now,
        updated_at: now,
        last_accessed_at: now,
        decayed_at: None,
        superseded_by: None,
        superseded_at: None,
    };
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
