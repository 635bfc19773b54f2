//! The export format — every field of every memory, episodic record and history entry, as
//! JSON lines — and the checks an import applies before a backend writes anything.

use std::collections::HashSet;
use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};

use crate::error::{MemoryError, Result};
use crate::rules;
use crate::rules::{
    check_content, check_importance, check_project, check_raw_secrets, check_secrets, MAX_ACCESS_COUNT,
    MAX_TIMESTAMP_MS,
};
use crate::types::{EpisodicRecord, HistoryEntry, MemoryCategory, MemoryEntry};

/// One line of an export: a memory or an episodic record, tagged by `kind`, so a project's
/// memories can move between databases and machines as plain JSON lines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ExportRecord {
    /// A memory, with its id, counters and timestamps.
    Memory(MemoryEntry),
    /// An episodic record.
    Episode(EpisodicRecord),
    /// A history entry (written after the memories, oldest first), so the changes to a
    /// project's memories move with them and can still be inspected and undone.
    History(Box<HistoryEntry>),
}

/// What an import did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    /// Memories added.
    pub memories_added: usize,
    /// Already present (same project and content).
    pub memories_skipped: usize,
    /// Added under a new id because their id was taken by another memory.
    pub memories_renamed: usize,
    /// Episodic records added.
    pub episodes_added: usize,
    /// Episodic records already present.
    pub episodes_skipped: usize,
    /// History entries added.
    pub history_added: usize,
    /// History entries already present, or of memories the import skipped.
    pub history_skipped: usize,
}

impl ExportRecord {
    /// Write records as JSON lines.
    pub fn write_jsonl<'a>(
        records: impl IntoIterator<Item = &'a ExportRecord>,
        mut out: impl Write,
    ) -> std::io::Result<()> {
        for r in records {
            serde_json::to_writer(&mut out, r)?;
            out.write_all(b"\n")?;
        }
        out.flush()
    }

    /// Read JSON lines; blank lines are skipped. A line is a full record (with `kind`, as
    /// [`write_jsonl`](Self::write_jsonl) writes) or a minimal one: an object with `content`
    /// and optionally `category`, `importance`, `keywords`, `created_at` and `project` (the
    /// format is `providers/memory/docs/record.schema.json`). Anything else is an error naming
    /// its line. At most 1 MiB per line is read.
    pub fn read_jsonl(input: impl BufRead) -> Result<Vec<ExportRecord>> {
        let mut out = Vec::new();
        for (i, line) in input.lines().enumerate() {
            // serde's messages quote the value they reject ("unknown variant `ghp_…`").
            let at = |message: String| MemoryError::Import {
                line: i + 1,
                message: ctxkit_secrets::redact(&message),
            };
            let line = line.map_err(|e| at(e.to_string()))?;
            if line.trim().is_empty() {
                continue;
            }
            if line.len() > MAX_LINE_BYTES {
                return Err(at(format!(
                    "the line is {} bytes long; a record is at most {MAX_LINE_BYTES}",
                    line.len()
                )));
            }
            let value: serde_json::Value = serde_json::from_str(&line).map_err(|e| at(e.to_string()))?;
            let record = if value.get("kind").is_some() {
                serde_json::from_value(value).map_err(|e| at(e.to_string()))?
            } else {
                let minimal: MinimalRecord = serde_json::from_value(value).map_err(|e| at(e.to_string()))?;
                minimal.into_record().map_err(|e| at(e.to_string()))?
            };
            out.push(record);
        }
        Ok(out)
    }
}

/// The longest line `read_jsonl` accepts: a memory is at most 2,000 characters, so a record
/// is far below this; a longer line is not a record.
const MAX_LINE_BYTES: usize = 1 << 20;

/// A memory as another tool writes it: the content and, if known, a few fields. Stored with
/// a new id, importance 0.5 and category `fact` unless given.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MinimalRecord {
    content: String,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    importance: Option<f32>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    created_at: Option<i64>,
    #[serde(default)]
    project: Option<String>,
}

impl MinimalRecord {
    /// A full memory record with an empty id (the import mints one) and its project empty
    /// unless given (the import's target project fills it).
    fn into_record(self) -> Result<ExportRecord> {
        let category = match self.category {
            Some(c) => c.parse()?,
            None => MemoryCategory::Fact,
        };
        let importance = match self.importance {
            Some(i) => check_importance(i)?,
            None => 0.5,
        };
        let at = self.created_at.unwrap_or(0);
        if self.created_at.is_some() {
            check_timestamp("created_at", at)?;
        }
        let keywords = if self.keywords.iter().all(|k| k.trim().is_empty()) {
            crate::text::derive_keywords(&self.content)
        } else {
            crate::text::normalize_keywords(&self.keywords)
        };
        Ok(ExportRecord::Memory(MemoryEntry {
            id: String::new(),
            project_path: self.project.unwrap_or_default(),
            category,
            content: self.content,
            keywords,
            importance,
            access_count: 0,
            source_session_id: None,
            source_context: Some("imported".into()),
            // 0 = "when imported": filled in by the import.
            created_at: at,
            updated_at: at,
            last_accessed_at: at,
            decayed_at: None,
            superseded_by: None,
            superseded_at: None,
        }))
    }
}

/// The longest id an import may keep.
const MAX_ID_CHARS: usize = 64;

/// An id an import may keep as it is: 1-64 letters, digits, `-` or `_`.
pub(crate) fn well_formed_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_CHARS
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// An imported timestamp must be a plausible Unix-millisecond time.
fn check_timestamp(field: &str, at: i64) -> Result<()> {
    if (0..=MAX_TIMESTAMP_MS).contains(&at) {
        return Ok(());
    }
    Err(MemoryError::Invalid(format!(
        "`{field}` {at} is outside 0-{MAX_TIMESTAMP_MS} (Unix milliseconds up to the year 9999)"
    )))
}

/// An imported memory's counter and timestamps must be in range, so later arithmetic on them
/// (access counting, decay, recency) cannot overflow.
fn check_counters(m: &MemoryEntry) -> Result<()> {
    if !(0..=MAX_ACCESS_COUNT).contains(&m.access_count) {
        return Err(MemoryError::Invalid(format!(
            "`access_count` {} is outside 0-{MAX_ACCESS_COUNT}",
            m.access_count
        )));
    }
    check_timestamp("created_at", m.created_at)?;
    check_timestamp("updated_at", m.updated_at)?;
    check_timestamp("last_accessed_at", m.last_accessed_at)?;
    if let Some(d) = m.decayed_at {
        check_timestamp("decayed_at", d)?;
    }
    if let Some(s) = m.superseded_at {
        check_timestamp("superseded_at", s)?;
    }
    Ok(())
}

/// Every field of a memory as given (before any normalisation).
fn check_memory_secrets(m: &MemoryEntry) -> Result<()> {
    check_raw_secrets(
        &m.project_path,
        &m.content,
        &m.keywords,
        m.source_context.as_deref(),
        m.source_session_id.as_deref(),
    )
}

/// Check one imported record like any write, moving it into `project` when one is given.
fn check_record(record: &mut ExportRecord, project: Option<&str>) -> Result<()> {
    match record {
        ExportRecord::Memory(m) => check_memory(m, project)?,
        ExportRecord::Episode(e) => {
            rules::check_secret_fields(
                "episodic record",
                [
                    e.id.as_str(),
                    &e.project_path,
                    &e.session_id,
                    &e.task_summary,
                    &e.approach_summary,
                    &e.outcome_summary,
                ]
                .into_iter()
                .chain(e.tools_used.iter().map(String::as_str))
                .chain(e.keywords.iter().map(String::as_str)),
            )?;
            if let Some(p) = project {
                e.project_path = p.to_string();
            }
            check_project(&e.project_path)?;
            check_timestamp("created_at", e.created_at)?;
        }
        ExportRecord::History(h) => {
            // An `undo` may make a snapshot a memory again: it passes what a memory passes.
            let snapshots = h.before.iter_mut().chain(h.after.iter_mut());
            for m in snapshots {
                check_memory(m, project)?;
                if !well_formed_id(&m.id) {
                    return Err(MemoryError::Invalid(format!(
                        "history entry {} of memory `{}` holds a memory without a valid id",
                        h.id, h.memory_id
                    )));
                }
            }
            rules::check_secret_fields(
                "history entry",
                [h.memory_id.as_str(), &h.project_path]
                    .into_iter()
                    .chain(h.related_id.as_deref())
                    .chain(h.reason.as_deref()),
            )?;
            if let Some(p) = project {
                h.project_path = p.to_string();
            }
            check_project(&h.project_path)?;
            check_timestamp("at", h.at)?;
            if !(1..=MAX_HISTORY_ID).contains(&h.id) || !well_formed_id(&h.memory_id) {
                return Err(MemoryError::Invalid(format!(
                    "history entry {} of memory `{}` has no valid id",
                    h.id, h.memory_id
                )));
            }
        }
    }
    Ok(())
}

/// The largest history id an import keeps (what a JSON number holds exactly): the id sequence
/// moves past imported ids, so a crafted `i64::MAX` would leave no id for any later write.
const MAX_HISTORY_ID: i64 = 1 << 53;

/// The checks every imported memory passes, a history entry's snapshots included.
fn check_memory(m: &mut MemoryEntry, project: Option<&str>) -> Result<()> {
    check_memory_secrets(m)
        .and_then(|()| rules::check_secret("memory", &m.id))
        .and_then(|()| rules::check_secret_fields("memory", m.superseded_by.as_deref()))?;
    if let Some(p) = project {
        m.project_path = p.to_string();
    }
    if m.project_path.trim().is_empty() && m.id.is_empty() {
        return Err(MemoryError::Invalid(
            "a minimal record needs a `project` when it is not imported into one".into(),
        ));
    }
    check_project(&m.project_path)?;
    let content = check_content(&m.content)?;
    if content != m.content {
        m.content = content;
    }
    check_importance(m.importance)?;
    check_counters(m)?;
    check_secrets(
        &m.content,
        &m.keywords,
        m.source_context.as_deref(),
        m.source_session_id.as_deref(),
    )
}

/// Checked records of an import, in the order a backend writes them: memories, then episodes,
/// then history (which refers to the memories' final ids).
pub(crate) struct ImportPlan {
    pub(crate) memories: Vec<MemoryEntry>,
    pub(crate) episodes: Vec<EpisodicRecord>,
    pub(crate) history: Vec<HistoryEntry>,
    /// Memories whose history the import carries: they get no `imported` entry of their own.
    with_history: HashSet<String>,
}

impl ImportPlan {
    /// Check every record (one bad record refuses the whole import with one sentence naming
    /// its line), moving each into `project` when one is given.
    pub(crate) fn new(records: Vec<ExportRecord>, project: Option<&str>) -> Result<Self> {
        if let Some(p) = project {
            rules::check_secret("memory", p)?;
        }
        let project = project.map(check_project).transpose()?;
        let mut plan = ImportPlan {
            memories: Vec::new(),
            episodes: Vec::new(),
            history: Vec::new(),
            with_history: HashSet::new(),
        };
        for (n, mut r) in records.into_iter().enumerate() {
            check_record(&mut r, project.as_deref()).map_err(|err| MemoryError::Import {
                line: n + 1,
                message: err.to_string(),
            })?;
            match r {
                ExportRecord::Memory(m) => plan.memories.push(m),
                ExportRecord::Episode(e) => plan.episodes.push(e),
                ExportRecord::History(h) => {
                    plan.with_history.insert(h.memory_id.clone());
                    plan.history.push(*h);
                }
            }
        }
        Ok(plan)
    }

    /// Whether an imported memory (by its id in the file) needs an `imported` history entry:
    /// only when the file carries none of its history.
    pub(crate) fn records_insert(&self, original_id: &str) -> bool {
        original_id.is_empty() || !self.with_history.contains(original_id)
    }
}
