//! The data the store keeps and hands out, with timestamps in Unix milliseconds.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::MemoryError;

/// What kind of knowledge a memory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryCategory {
    /// A user preference ("always use pnpm").
    Preference,
    /// A project convention ("API routes live in src/routes/").
    Convention,
    /// A recurring code or architecture pattern.
    Pattern,
    /// A mistake to avoid.
    Correction,
    /// A general project fact.
    Fact,
}

impl MemoryCategory {
    /// All five, in display order.
    pub const ALL: [MemoryCategory; 5] = [
        MemoryCategory::Preference,
        MemoryCategory::Convention,
        MemoryCategory::Pattern,
        MemoryCategory::Correction,
        MemoryCategory::Fact,
    ];

    /// The name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryCategory::Preference => "preference",
            MemoryCategory::Convention => "convention",
            MemoryCategory::Pattern => "pattern",
            MemoryCategory::Correction => "correction",
            MemoryCategory::Fact => "fact",
        }
    }

    /// The badge shown in the injected `## Project Memory` section.
    pub fn badge(self) -> &'static str {
        match self {
            MemoryCategory::Preference => "[PREF]",
            MemoryCategory::Convention => "[CONV]",
            MemoryCategory::Pattern => "[PATN]",
            MemoryCategory::Correction => "[WARN]",
            MemoryCategory::Fact => "[FACT]",
        }
    }
}

impl fmt::Display for MemoryCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for MemoryCategory {
    type Err = MemoryError;

    /// The category names, their plurals and the badges' words, in any case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_lowercase();
        Ok(match lower.trim_end_matches('s') {
            "preference" | "pref" => MemoryCategory::Preference,
            "convention" | "conv" => MemoryCategory::Convention,
            "pattern" | "patn" => MemoryCategory::Pattern,
            "correction" | "warn" | "warning" => MemoryCategory::Correction,
            "fact" => MemoryCategory::Fact,
            _ => return Err(MemoryError::UnknownCategory(s.to_string())),
        })
    }
}

/// One stored memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryEntry {
    /// Names this memory of this project for the life of the database (never reused).
    pub id: String,
    /// The project the memory belongs to; searches and history never cross projects.
    pub project_path: String,
    /// What kind of knowledge it is; shown as a badge when injected.
    pub category: MemoryCategory,
    /// The statement itself, trimmed, at most 2,000 characters.
    pub content: String,
    /// Lowercased terms matched against queries (keyword overlap).
    pub keywords: Vec<String>,
    /// 0.0-1.0; decays over time.
    pub importance: f32,
    /// Times the memory was returned by a search or injected.
    pub access_count: i64,
    /// The session (thread) it was learned in, if known.
    pub source_session_id: Option<String>,
    /// How it was learned ("explicit user command", "extracted from a session by the model"…).
    pub source_context: Option<String>,
    /// When it was stored (Unix milliseconds).
    pub created_at: i64,
    /// When it last changed (Unix milliseconds).
    pub updated_at: i64,
    /// When a search last returned it (Unix milliseconds); recency counts from here.
    pub last_accessed_at: i64,
    /// When decay last lowered the importance; decay counts from the later of this and
    /// `last_accessed_at`, so running it often compounds to the same result as running it once.
    #[serde(default)]
    pub decayed_at: Option<i64>,
    /// The memory that replaced this one (a newer, contradicting statement on the same
    /// subject). A superseded memory is kept for history and undo but never injected or found
    /// by a search; `list` shows it only when asked ([`ListOptions::include_superseded`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// When it was superseded (Unix milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_at: Option<i64>,
}

/// A memory to create.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NewMemoryEntry {
    /// The project it belongs to.
    pub project_path: String,
    /// What kind of knowledge it is.
    pub category: MemoryCategory,
    /// The statement to remember.
    pub content: String,
    /// Empty: derived from the content (its first distinct terms).
    #[serde(default)]
    pub keywords: Vec<String>,
    /// 0.0-1.0 (default 0.5); ranks it against other memories.
    #[serde(default = "default_importance")]
    pub importance: f32,
    /// The session (thread) it was learned in.
    #[serde(default)]
    pub source_session_id: Option<String>,
    /// How it was learned, for whoever reads the memory later.
    #[serde(default)]
    pub source_context: Option<String>,
    /// Ids of memories of the same project this one replaces (the extraction model's
    /// `supersedes`); they are marked superseded when it is stored. Contradictions stated in
    /// the content ("… instead of …", "no longer …") are found without it.
    #[serde(default)]
    pub supersedes: Vec<String>,
}

fn default_importance() -> f32 {
    0.5
}

impl NewMemoryEntry {
    /// A memory with importance 0.5 and derived keywords.
    pub fn new(
        project_path: impl Into<String>,
        category: MemoryCategory,
        content: impl Into<String>,
    ) -> Self {
        NewMemoryEntry {
            project_path: project_path.into(),
            category,
            content: content.into(),
            keywords: Vec::new(),
            importance: default_importance(),
            source_session_id: None,
            source_context: None,
            supersedes: Vec::new(),
        }
    }

    /// Set the importance (0.0-1.0).
    pub fn importance(mut self, importance: f32) -> Self {
        self.importance = importance;
        self
    }

    /// Set the keywords instead of deriving them from the content.
    pub fn keywords<S: Into<String>>(mut self, keywords: impl IntoIterator<Item = S>) -> Self {
        self.keywords = keywords.into_iter().map(Into::into).collect();
        self
    }

    /// Record the session (thread) it was learned in.
    pub fn session(mut self, session_id: impl Into<String>) -> Self {
        self.source_session_id = Some(session_id.into());
        self
    }

    /// Record how it was learned.
    pub fn context(mut self, context: impl Into<String>) -> Self {
        self.source_context = Some(context.into());
        self
    }

    /// Mark these memories (by id) as replaced by this one when it is stored.
    pub fn supersedes<S: Into<String>>(mut self, ids: impl IntoIterator<Item = S>) -> Self {
        self.supersedes = ids.into_iter().map(Into::into).collect();
        self
    }
}

/// Fields to change; `None` leaves a field as it is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryUpdate {
    /// New content; the keywords stay unless new ones are given.
    pub content: Option<String>,
    /// New category.
    pub category: Option<MemoryCategory>,
    /// New importance (0.0-1.0).
    pub importance: Option<f32>,
    /// New keywords; an empty list derives them from the content.
    pub keywords: Option<Vec<String>>,
}

/// What an upsert did.
#[derive(Clone, Debug, PartialEq)]
pub enum UpsertResult {
    /// Nothing similar existed; the memory was added.
    Inserted(MemoryEntry),
    /// A memory with cosine similarity above 0.85 existed and absorbed the new one.
    Merged {
        /// The memory that absorbed it (its id does not change).
        original_id: String,
        /// That memory as it now is.
        merged: MemoryEntry,
        /// The cosine similarity that made them one.
        similarity: f32,
    },
    /// Nothing was written.
    Skipped {
        /// Why, in one sentence.
        reason: String,
        /// The memory that already says as much, if one does.
        existing_id: Option<String>,
    },
}

impl UpsertResult {
    /// The id of the memory that now holds the content, if any.
    pub fn id(&self) -> Option<&str> {
        match self {
            UpsertResult::Inserted(e) => Some(&e.id),
            UpsertResult::Merged { merged, .. } => Some(&merged.id),
            UpsertResult::Skipped { existing_id, .. } => existing_id.as_deref(),
        }
    }
}

/// A search: which project, what text, and how many of which memories to return.
#[derive(Clone, Debug, PartialEq)]
pub struct MemorySearchRequest {
    /// The project to search; other projects are never seen.
    pub project_path: String,
    /// The text to match (a user message, a question).
    pub query: String,
    /// Only these categories; `None` for all.
    pub categories: Option<Vec<MemoryCategory>>,
    /// At most this many results (default 10).
    pub top_k: usize,
    /// Ignore memories below this importance (default 0.1).
    pub min_importance: f32,
    /// Bump `access_count` and `last_accessed_at` of what is returned (default true).
    pub touch: bool,
}

impl MemorySearchRequest {
    /// The 10 best memories of importance ≥ 0.1 for `query`, counting an access to each.
    pub fn new(project_path: impl Into<String>, query: impl Into<String>) -> Self {
        MemorySearchRequest {
            project_path: project_path.into(),
            query: query.into(),
            categories: None,
            top_k: 10,
            min_importance: 0.1,
            touch: true,
        }
    }

    /// Return at most this many.
    pub fn top_k(mut self, top_k: usize) -> Self {
        self.top_k = top_k;
        self
    }

    /// Only these categories.
    pub fn categories(mut self, categories: impl IntoIterator<Item = MemoryCategory>) -> Self {
        self.categories = Some(categories.into_iter().collect());
        self
    }

    /// Ignore memories below this importance.
    pub fn min_importance(mut self, min_importance: f32) -> Self {
        self.min_importance = min_importance;
        self
    }

    /// Leave access counts alone (for previews and maintenance).
    pub fn without_touch(mut self) -> Self {
        self.touch = false;
        self
    }
}

/// One search hit with the parts of its score.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemorySearchResult {
    /// The memory found.
    pub entry: MemoryEntry,
    /// What results are ranked by: `0.40 · similarity + 0.25 · keyword_overlap + 0.20 ·
    /// importance + 0.15 · recency`, recency being `1 / (1 + 0.1 · days since last access)`;
    /// with an embedding model, the blend described at `semantic_similarity`.
    pub relevance_score: f32,
    /// TF-IDF cosine similarity to the query.
    pub similarity: f32,
    /// Jaccard overlap of the query's terms and the memory's keyword terms.
    pub keyword_overlap: f32,
    /// Cosine of the query's and the memory's sentence vectors, when a model is configured
    /// ([`OpenOptions::embeddings`](crate::OpenOptions::embeddings)) and the memory has a vector
    /// of it. `relevance_score` is then `0.90 · cosine + 0.10 · (0.40 · similarity + 0.25 ·
    /// keyword_overlap) / 0.65`, and a memory sharing no word with the query is kept only from
    /// a cosine of 0.10.
    pub semantic_similarity: Option<f32>,
}

/// Paging and filtering for [`list`](crate::store::MemoryStore::list); newest first by default.
#[derive(Clone, Debug, PartialEq)]
pub struct ListOptions {
    /// Only this category; `None` for all.
    pub category: Option<MemoryCategory>,
    /// Skip this many (default 0).
    pub offset: usize,
    /// Return at most this many (default 100).
    pub limit: usize,
    /// Which come first.
    pub order: ListOrder,
    /// Also list superseded memories (default false: only what is current).
    pub include_superseded: bool,
}

impl Default for ListOptions {
    fn default() -> Self {
        ListOptions {
            category: None,
            offset: 0,
            limit: 100,
            order: ListOrder::Newest,
            include_superseded: false,
        }
    }
}

/// Order of a listing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ListOrder {
    /// Most recently created first.
    #[default]
    Newest,
    /// Most important first, then most recently created.
    Importance,
}

/// Counts for a project.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MemoryStats {
    /// The project counted.
    pub project_path: String,
    /// Memories in all.
    pub total: usize,
    /// Count per category name (all five present).
    pub by_category: BTreeMap<String, usize>,
    /// Mean importance, rounded to 4 decimals; 0 without memories.
    pub average_importance: f32,
    /// Accesses summed over the memories.
    pub total_accesses: i64,
    /// Episodic records of the project.
    pub episodes: usize,
    /// History entries of the project.
    pub history_entries: usize,
    /// Memories replaced by newer ones (kept, not counted in `total`).
    pub superseded: usize,
    /// When the oldest memory was stored.
    pub oldest_created_at: Option<i64>,
    /// When a memory last changed.
    pub newest_updated_at: Option<i64>,
}

/// What [`maintain`](crate::store::MemoryStore::maintain) did to a project.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MaintenanceReport {
    /// Memories whose importance decay lowered.
    pub decayed: usize,
    /// Memories deleted for falling below the threshold.
    pub pruned: usize,
}

/// The kind of an episodic record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordType {
    /// The run ended with an answer.
    Success,
    /// The model call failed.
    Failure,
    /// Something learned along the way.
    Discovery,
}

impl RecordType {
    /// The name stored in the database and exports.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordType::Success => "success",
            RecordType::Failure => "failure",
            RecordType::Discovery => "discovery",
        }
    }

    const ALL: [RecordType; 3] = [RecordType::Success, RecordType::Failure, RecordType::Discovery];

    /// The inverse of [`RecordType::as_str`].
    pub(crate) fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// What happened in one run: the task, the approach and the outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpisodicRecord {
    /// Its id, unique in the database.
    pub id: String,
    /// The project the run worked on.
    pub project_path: String,
    /// The session (thread) of the run.
    pub session_id: String,
    /// How the run ended.
    pub record_type: RecordType,
    /// What was asked (secrets redacted, cut to 300 characters).
    pub task_summary: String,
    /// How it was approached ("answered directly", "used tools: …").
    pub approach_summary: String,
    /// What came of it (secrets redacted, cut to 300 characters).
    pub outcome_summary: String,
    /// Tools called during the run, first call first.
    pub tools_used: Vec<String>,
    /// Terms of the task, to find the record again.
    pub keywords: Vec<String>,
    /// When it was recorded (Unix milliseconds).
    pub created_at: i64,
}

/// An episodic record to create.
#[derive(Clone, Debug, PartialEq)]
pub struct NewEpisodicRecord {
    /// The project the run worked on.
    pub project_path: String,
    /// The session (thread) of the run.
    pub session_id: String,
    /// How the run ended.
    pub record_type: RecordType,
    /// What was asked.
    pub task_summary: String,
    /// How it was approached.
    pub approach_summary: String,
    /// What came of it.
    pub outcome_summary: String,
    /// Tools called during the run.
    pub tools_used: Vec<String>,
    /// Terms of the task.
    pub keywords: Vec<String>,
}

/// What a history entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryAction {
    /// The memory was added.
    Insert,
    /// It absorbed a similar memory, or was absorbed into one.
    Merge,
    /// Its fields were changed.
    Update,
    /// It was deleted (forgotten, pruned, cleared).
    Delete,
    /// Decay lowered its importance.
    Decay,
    /// An undo put a memory back as it was before an earlier entry.
    Restore,
    /// A newer memory replaced it (`related_id`), or it became current again because that
    /// newer memory was removed.
    Supersede,
}

impl HistoryAction {
    /// The name stored in the database and shown by `memory history`.
    pub fn as_str(self) -> &'static str {
        match self {
            HistoryAction::Insert => "insert",
            HistoryAction::Merge => "merge",
            HistoryAction::Update => "update",
            HistoryAction::Delete => "delete",
            HistoryAction::Decay => "decay",
            HistoryAction::Restore => "restore",
            HistoryAction::Supersede => "supersede",
        }
    }

    const ALL: [HistoryAction; 7] = [
        HistoryAction::Insert,
        HistoryAction::Merge,
        HistoryAction::Update,
        HistoryAction::Delete,
        HistoryAction::Decay,
        HistoryAction::Restore,
        HistoryAction::Supersede,
    ];

    /// The inverse of [`HistoryAction::as_str`].
    pub(crate) fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == s)
    }
}

/// One change to one memory, with the memory before and after it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// Its id, which [`undo`](crate::store::MemoryStore::undo) takes.
    pub id: i64,
    /// The memory that changed.
    pub memory_id: String,
    /// The memory's project.
    pub project_path: String,
    /// What happened.
    pub action: HistoryAction,
    /// `None` for an insert.
    pub before: Option<MemoryEntry>,
    /// `None` when the memory was removed.
    pub after: Option<MemoryEntry>,
    /// For merges and supersessions: the other memory.
    pub related_id: Option<String>,
    /// Why, in a few words ("forgotten on request: …").
    pub reason: Option<String>,
    /// When (Unix milliseconds).
    pub at: i64,
}

/// A history entry's columns as stored: `id, memory_id, project_path, action, before, after,
/// related_id, reason, at`, the action by name and the memories as JSON.
pub(crate) type HistoryColumns = (
    i64,
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
);

impl HistoryEntry {
    /// The entry its stored columns hold; else the column that is not as written, and why.
    pub(crate) fn from_columns(c: HistoryColumns) -> Result<Self, (usize, String)> {
        let (id, memory_id, project_path, action, before, after, related_id, reason, at) = c;
        let memory = |col: usize, text: Option<String>| {
            text.map(|t| serde_json::from_str(&t))
                .transpose()
                .map_err(|e| (col, format!("history snapshot is not a memory: {e}")))
        };
        Ok(HistoryEntry {
            id,
            memory_id,
            project_path,
            action: HistoryAction::parse(&action)
                .ok_or_else(|| (3, format!("unknown history action `{action}`")))?,
            before: memory(4, before)?,
            after: memory(5, after)?,
            related_id,
            reason,
            at,
        })
    }
}

/// A memory as the history stores it (JSON).
pub(crate) fn snapshot(e: Option<&MemoryEntry>) -> Option<String> {
    e.and_then(|e| serde_json::to_string(e).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_parse_by_name_plural_and_badge() {
        for c in MemoryCategory::ALL {
            assert_eq!(c.as_str().parse::<MemoryCategory>().unwrap(), c);
            assert_eq!(c.badge().parse::<MemoryCategory>().unwrap(), c);
        }
        assert_eq!(
            "Preferences".parse::<MemoryCategory>().unwrap(),
            MemoryCategory::Preference
        );
        let err = "opinion".parse::<MemoryCategory>().unwrap_err().to_string();
        assert!(err.contains("`opinion`") && err.contains("preference"), "{err}");
    }

    #[test]
    fn badges_are_the_seeds() {
        let badges: Vec<&str> = MemoryCategory::ALL.iter().map(|c| c.badge()).collect();
        assert_eq!(badges, ["[PREF]", "[CONV]", "[PATN]", "[WARN]", "[FACT]"]);
    }
}
