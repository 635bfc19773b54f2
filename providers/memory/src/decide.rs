//! The decisions a write makes once it has read what it needs: what an upsert merges, what a
//! new memory supersedes, what `forget` removes, what decay lowers, what compaction merges, and
//! whether an undo may proceed. Backends read and write rows; these functions decide, so
//! SQLite and PostgreSQL make the same changes from the same rows.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use crate::clock::DAY_MS;
use crate::error::{MemoryError, Result};
use crate::retrieval::Vocabulary;
use crate::rules::{Checked, COMPACT_SIMILARITY, MAX_ACCESS_COUNT};
use crate::supersede::{
    claims_differ, names_replaced, replaced_terms, single_valued, EXPLICIT_SAME_CATEGORY_SIMILARITY,
    EXPLICIT_SIMILARITY, SUPERSEDE_SIMILARITY,
};
use crate::text::{self, terms};
use crate::types::*;

/// `forget` removes matches at least this similar to the query…
pub(crate) const FORGET_MIN_SIMILARITY: f32 = 0.3;
/// …at most this many…
pub(crate) const FORGET_MAX: usize = 5;
/// …and within this fraction of the best match.
const FORGET_RELATIVE: f32 = 0.8;

/// The merge of an upsert: the more informative content, the union of keywords, the higher
/// importance.
pub(crate) fn merge_into(old: &MemoryEntry, new: &Checked, now: i64) -> MemoryEntry {
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

/// Whether a merge changes nothing a reader sees (then the upsert skips).
pub(crate) fn merge_changes_nothing(old: &MemoryEntry, merged: &MemoryEntry) -> bool {
    merged.content == old.content && merged.keywords == old.keywords && merged.importance == old.importance
}

/// Whether a new memory could supersede anything found by similarity: it says it replaces
/// something, or its category holds one statement per subject.
pub(crate) fn may_supersede(c: &Checked) -> bool {
    single_valued(c.category) || replaced_terms(&c.content).is_some()
}

/// Whether a memory named by a new one ([`NewMemoryEntry::supersedes`]) can be superseded by it.
pub(crate) fn can_name(old: &MemoryEntry, new: &MemoryEntry) -> bool {
    old.project_path == new.project_path && old.superseded_by.is_none() && old.id != new.id
}

/// Reason recorded for a memory superseded because the newer one names it.
pub(crate) const NAMED_REASON: &str = "superseded: named by the newer memory";
/// Reason recorded for a memory current again after what superseded it was removed.
pub(crate) const CURRENT_AGAIN_REASON: &str = "current again: the memory that superseded it was removed";

/// Among `similar` (current memories with their cosine to `new`), those `new` supersedes, with
/// the reason; `taken` are ids already chosen (named ones).
pub(crate) fn superseded_by_similarity(
    new: &MemoryEntry,
    similar: Vec<(f32, MemoryEntry)>,
    taken: &[String],
) -> Vec<(String, &'static str)> {
    let replaced = replaced_terms(&new.content);
    let mut out: Vec<(String, &'static str)> = Vec::new();
    for (sim, old) in similar {
        if old.id == new.id
            || old.superseded_by.is_some()
            || taken.contains(&old.id)
            || out.iter().any(|t| t.0 == old.id)
        {
            continue;
        }
        let said = replaced.as_ref().is_some_and(|r| {
            names_replaced(&old.content, r)
                && ((old.category == new.category && sim >= EXPLICIT_SAME_CATEGORY_SIMILARITY)
                    || sim >= EXPLICIT_SIMILARITY)
        });
        let contradicts = old.category == new.category
            && single_valued(new.category)
            && sim >= SUPERSEDE_SIMILARITY
            && claims_differ(&new.content, &old.content);
        let reason = if said {
            "superseded: the newer memory says it replaces this"
        } else if contradicts {
            "superseded: a newer memory on the same subject says otherwise"
        } else {
            continue;
        };
        out.push((old.id, reason));
    }
    out
}

/// `old` marked as superseded by `by` at `now`.
pub(crate) fn superseded(old: &MemoryEntry, by: &str, now: i64) -> MemoryEntry {
    let mut after = old.clone();
    after.superseded_by = Some(by.to_string());
    after.superseded_at = Some(now);
    after.updated_at = now;
    after
}

/// `old` current again (what superseded it was removed) at `now`.
pub(crate) fn current_again(old: &MemoryEntry, now: i64) -> MemoryEntry {
    let mut after = old.clone();
    after.superseded_by = None;
    after.superseded_at = None;
    after.updated_at = now;
    after
}

/// The history reason of a `forget` for this query (secrets redacted, cut to 200 characters).
pub(crate) fn forget_reason(query: &str) -> String {
    format!(
        "forgotten on request: {}",
        ctxkit_secrets::redact(&text::truncate_chars(query, 200))
    )
}

/// What `forget` removes of its matches (most similar first, with their cosine to the query,
/// none below [`FORGET_MIN_SIMILARITY`], at most [`FORGET_MAX`]): those within 80 % of the
/// best match.
pub(crate) fn forget_pick<T>(matches: Vec<(f32, T)>) -> Vec<T> {
    let best = matches.first().map_or(0.0, |m| m.0);
    matches
        .into_iter()
        .take_while(|(sim, _)| *sim >= best * FORGET_RELATIVE)
        .map(|(_, t)| t)
        .collect()
}

/// `importance × 0.95^(days / 7)` for `days` without access: importance halves in about three
/// months.
pub(crate) fn decayed_importance(importance: f32, days: f64) -> f32 {
    (f64::from(importance) * 0.95f64.powf(days.max(0.0) / 7.0)) as f32
}

/// A memory after decay at `now`, with the history reason; `None` when it does not change.
/// `days` counts from the later of the last access and the last decay, so decaying daily or
/// once a month ends at the same importance.
pub(crate) fn decay_step(old: &MemoryEntry, now: i64) -> Option<(MemoryEntry, String)> {
    let since = old
        .decayed_at
        .map_or(old.last_accessed_at, |d| d.max(old.last_accessed_at));
    let days = (now - since) as f64 / DAY_MS as f64;
    if days <= 0.0 {
        return None;
    }
    let importance = decayed_importance(old.importance, days);
    if importance == old.importance {
        return None;
    }
    let mut new = old.clone();
    new.importance = importance;
    new.decayed_at = Some(now);
    Some((new, format!("decayed after {days:.1} days without access")))
}

/// The history reason of a prune.
pub(crate) fn prune_reason(e: &MemoryEntry, min_importance: f32) -> String {
    format!("pruned: importance {:.3} below {min_importance:.3}", e.importance)
}

/// One merge of a compaction: `rows[survivor]` absorbs `rows[j]` for each `(j, similarity)`.
pub(crate) struct Absorption {
    pub(crate) survivor: usize,
    pub(crate) absorbed: Vec<(usize, f32)>,
}

/// Plan a compaction of `rows` (a whole project): memories more than 0.90 similar merge into
/// the more important one (then the more used, then the older). Sorts `rows` into that order;
/// the plan's indexes refer to the sorted rows.
pub(crate) fn plan_compaction<T>(rows: &mut [(T, MemoryEntry)], vocab: &Vocabulary) -> Vec<Absorption> {
    rows.sort_by(|(_, a), (_, b)| {
        b.importance
            .total_cmp(&a.importance)
            .then(b.access_count.cmp(&a.access_count))
            .then(a.created_at.cmp(&b.created_at))
            .then(a.id.cmp(&b.id))
    });
    let texts: Vec<Vec<String>> = rows.iter().map(|(_, e)| terms(&e.content)).collect();
    let vectors: Vec<_> = texts.iter().map(|t| vocab.vector(t)).collect();
    let mut postings: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, v) in vectors.iter().enumerate() {
        for &(term, _) in v.weights() {
            postings.entry(term).or_default().push(i);
        }
    }
    let mut gone: HashSet<usize> = HashSet::new();
    let mut plan = Vec::new();
    for i in 0..rows.len() {
        if gone.contains(&i) {
            continue;
        }
        // Any memory at least COMPACT_SIMILARITY similar shares one of these terms.
        let mut candidates: Vec<usize> = vectors[i]
            .prefix_terms(COMPACT_SIMILARITY)
            .into_iter()
            .flat_map(|t| postings.get(t).into_iter().flatten().copied())
            .filter(|&j| j > i && !gone.contains(&j))
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        let absorbed: Vec<(usize, f32)> = candidates
            .into_iter()
            .map(|j| (j, vectors[i].cosine(&vectors[j])))
            .filter(|&(_, sim)| sim > COMPACT_SIMILARITY)
            .collect();
        if absorbed.is_empty() {
            continue;
        }
        gone.extend(absorbed.iter().map(|&(j, _)| j));
        plan.push(Absorption {
            survivor: i,
            absorbed,
        });
    }
    plan
}

/// The survivor of a compaction merge: it keeps its content and gains the others' keywords,
/// the highest importance, the summed access counts and the latest access.
pub(crate) fn absorbed_survivor<'a>(
    old: &MemoryEntry,
    others: impl IntoIterator<Item = &'a MemoryEntry>,
    now: i64,
) -> MemoryEntry {
    let mut survivor = old.clone();
    let mut keywords = survivor.keywords.clone();
    for other in others {
        keywords.extend(other.keywords.iter().cloned());
        survivor.importance = survivor.importance.max(other.importance);
        survivor.access_count = survivor
            .access_count
            .saturating_add(other.access_count)
            .min(MAX_ACCESS_COUNT);
        survivor.last_accessed_at = survivor.last_accessed_at.max(other.last_accessed_at);
    }
    survivor.keywords = text::normalize_keywords(&keywords);
    survivor.updated_at = now;
    survivor
}

/// The history reason of a compaction survivor.
pub(crate) fn absorb_reason(absorbed: usize) -> String {
    format!("absorbed {absorbed} similar memories by compact")
}

/// The history reason of a memory merged away by compaction.
pub(crate) fn compact_reason(survivor: &str, sim: f32) -> String {
    format!("merged into `{survivor}` by compact (similarity {sim:.2})")
}

/// Counts of a project built from one row per category (`count`, `Σ importance`,
/// `Σ access_count`, oldest creation, newest update), as both backends' `stats` query them.
pub(crate) struct StatsBuilder {
    stats: MemoryStats,
    importance: f64,
}

impl StatsBuilder {
    pub(crate) fn new(project: &str) -> Self {
        StatsBuilder {
            stats: MemoryStats {
                project_path: project.to_string(),
                by_category: MemoryCategory::ALL
                    .iter()
                    .map(|c| (c.as_str().to_string(), 0))
                    .collect(),
                ..Default::default()
            },
            importance: 0.0,
        }
    }

    /// Add one category's row.
    pub(crate) fn category(
        &mut self,
        category: String,
        n: i64,
        importance: f64,
        accesses: f64,
        oldest: i64,
        newest: i64,
    ) {
        let stats = &mut self.stats;
        stats.by_category.insert(category, n as usize);
        stats.total += n as usize;
        self.importance += importance;
        stats.total_accesses = stats.total_accesses.saturating_add(accesses as i64);
        stats.oldest_created_at = Some(stats.oldest_created_at.map_or(oldest, |o| o.min(oldest)));
        stats.newest_updated_at = Some(stats.newest_updated_at.map_or(newest, |o| o.max(newest)));
    }

    /// The stats, with the episode, history and superseded counts.
    pub(crate) fn finish(
        mut self,
        episodes: usize,
        history_entries: usize,
        superseded: usize,
    ) -> MemoryStats {
        if self.stats.total > 0 {
            // Rounded to 4 decimals: an average of f32 values has no more precision.
            self.stats.average_importance =
                ((self.importance / self.stats.total as f64) * 1e4).round() as f32 / 1e4;
        }
        self.stats.episodes = episodes;
        self.stats.history_entries = history_entries;
        self.stats.superseded = superseded;
        self.stats
    }
}

/// Refuse an undo of `h` (an entry of `project`) that would reach outside the project: the
/// memory's current row, or the snapshot to restore, belongs to another project or memory.
pub(crate) fn check_undo(h: &HistoryEntry, current: Option<&MemoryEntry>, project: &str) -> Result<()> {
    let foreign = current.is_some_and(|cur| cur.project_path != h.project_path)
        || h.before
            .as_ref()
            .is_some_and(|b| b.project_path != h.project_path || b.id != h.memory_id);
    if foreign {
        return Err(MemoryError::Invalid(format!(
            "history entry {} cannot be undone: memory `{}` is not a memory of project `{project}`",
            h.id, h.memory_id
        )));
    }
    Ok(())
}

/// The refusal of undoing the insert of a memory that no longer exists.
pub(crate) fn insert_gone(memory_id: &str) -> MemoryError {
    MemoryError::Invalid(format!(
        "memory `{memory_id}` no longer exists, so its insert cannot be undone"
    ))
}

/// What a store hands back that may hold text stored before a secret rule existed: every
/// memory and history entry a read or a write returns passes through the store's
/// [`ReadRedactor`] with this, so no caller sees a secret a newer rule finds.
pub(crate) trait Redact {
    /// Redact `self` in place.
    fn redact_with(&mut self, redactor: &ReadRedactor);
}

impl Redact for MemoryEntry {
    fn redact_with(&mut self, redactor: &ReadRedactor) {
        redactor.redact(self);
    }
}

impl Redact for HistoryEntry {
    fn redact_with(&mut self, redactor: &ReadRedactor) {
        for e in self.before.iter_mut().chain(self.after.iter_mut()) {
            redactor.redact(e);
        }
        if let Some(reason) = &mut self.reason {
            *reason = ctxkit_secrets::redact(reason);
        }
    }
}

impl<T: Redact> Redact for Option<T> {
    fn redact_with(&mut self, redactor: &ReadRedactor) {
        self.iter_mut().for_each(|v| v.redact_with(redactor));
    }
}

impl<T: Redact> Redact for Vec<T> {
    fn redact_with(&mut self, redactor: &ReadRedactor) {
        self.iter_mut().for_each(|v| v.redact_with(redactor));
    }
}

/// Redacts what a secret rule matches in memories read back: a row stored before the rule
/// existed must not reach a request, a search result or an export. Each such memory is
/// reported once per open store (a warning naming it and the rule, never the text).
#[derive(Default)]
pub(crate) struct ReadRedactor {
    reported: Mutex<HashSet<String>>,
}

impl ReadRedactor {
    /// `value` with every memory and history entry in it redacted.
    pub(crate) fn redacted<T: Redact>(&self, mut value: T) -> T {
        value.redact_with(self);
        value
    }

    /// Redact `e` in place.
    pub(crate) fn redact(&self, e: &mut MemoryEntry) {
        let mut rule = None;
        let mut clean = |text: &mut String| {
            if let Some(found) = ctxkit_secrets::find_secret(text) {
                rule.get_or_insert(found.rule);
                *text = ctxkit_secrets::redact(text);
            }
        };
        clean(&mut e.content);
        for k in &mut e.keywords {
            clean(k);
        }
        if let Some(c) = &mut e.source_context {
            clean(c);
        }
        if let Some(rule) = rule {
            let first = self
                .reported
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(e.id.clone());
            if first {
                tracing::warn!(
                    memory = %e.id,
                    rule,
                    "a stored memory holds what looks like a secret; it is redacted wherever it is read \
                     (forget or update it to remove it for good)"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decay_formula_by_hand() {
        assert_eq!(decayed_importance(0.8, 0.0), 0.8);
        assert!((decayed_importance(0.8, 7.0) - 0.76).abs() < 1e-6);
        assert!((decayed_importance(1.0, 14.0) - 0.9025).abs() < 1e-6);
        assert!((decayed_importance(0.5, 3.5) - 0.5 * 0.95f32.sqrt()).abs() < 1e-6);
    }
}
