//! Export and import: every field of every memory and episodic record, as JSON lines.

use std::io::{BufRead, Write};

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

use super::rows::{
    find_by_content, id_is_free, insert_entry, insert_episode, new_unique_id, row_to_episode, select_entries,
    COLS,
};
use super::write::{check_content, check_importance, check_project, check_raw_secrets};
use super::{history, MemoryDb, MAX_ACCESS_COUNT, MAX_TIMESTAMP_MS};
use crate::error::{MemoryError, Result};
use crate::secrets;
use crate::types::{EpisodicRecord, HistoryAction, MemoryCategory, MemoryEntry};

/// One line of an export: a memory or an episodic record, tagged by `kind`, so a project's
/// memories can move between databases and machines as plain JSON lines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ExportRecord {
    /// A memory, with its id, counters and timestamps.
    Memory(MemoryEntry),
    /// An episodic record.
    Episode(EpisodicRecord),
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
            let at = |message: String| MemoryError::Import { line: i + 1, message };
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
pub const MAX_LINE_BYTES: usize = 1 << 20;

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
fn well_formed_id(id: &str) -> bool {
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

impl MemoryDb {
    /// Every memory (oldest first) and episodic record of a project, or of all projects.
    pub fn export(&self, project: Option<&str>) -> Result<Vec<ExportRecord>> {
        self.read(|tx| {
            let mut out: Vec<ExportRecord> = select_entries(
                tx,
                &format!(
                    "SELECT {COLS} FROM project_memories WHERE ?1 IS NULL OR project_path = ?1
                     ORDER BY project_path, created_at, id"
                ),
                params![project],
            )?
            .into_iter()
            .map(|(_, mut e)| {
                self.redact_read(&mut e);
                ExportRecord::Memory(e)
            })
            .collect();
            let mut stmt = tx.prepare_cached(
                "SELECT id, project_path, session_id, record_type, task_summary, approach_summary,
                        outcome_summary, tools_used, keywords, created_at
                 FROM episodic_records WHERE ?1 IS NULL OR project_path = ?1
                 ORDER BY project_path, created_at, id",
            )?;
            for e in stmt.query_map(params![project], row_to_episode)? {
                out.push(ExportRecord::Episode(e?));
            }
            Ok(out)
        })
    }

    /// Import records in one transaction (all or nothing). With `project`, every record is
    /// moved into that project; otherwise each keeps its own. A memory whose project already
    /// holds the same content is skipped, so importing a file twice adds nothing.
    ///
    /// Every record is checked before anything is written, and one bad record refuses the
    /// whole import with one sentence naming its line:
    /// - every field is checked for secrets as given (content, keywords, context, session,
    ///   id, project path, the target `project`; every field of an episode);
    /// - the project, content and importance are checked as for [`add`](MemoryDb::add);
    /// - `access_count` must lie in `0..=`[`MAX_ACCESS_COUNT`] and every timestamp in
    ///   `0..=`[`MAX_TIMESTAMP_MS`].
    ///
    /// **Ids are never shared across projects.** An imported memory keeps its id only when no
    /// memory has it and no other project's history mentions it; otherwise (or when the id is
    /// empty, longer than 64 characters or not made of letters, digits, `-` and `_`) it is
    /// stored under a new id and counted in [`ImportReport::memories_renamed`]. So an export of
    /// project A imported into project B can never be reached by an undo in A. Episodes whose
    /// id another project uses are re-numbered the same way.
    pub fn import(&self, records: &[ExportRecord], project: Option<&str>) -> Result<ImportReport> {
        if let Some(p) = project {
            secrets::check("memory", p)?;
        }
        let project = project.map(check_project).transpose()?;
        let mut records = records.to_vec();
        for (n, r) in records.iter_mut().enumerate() {
            check_record(r, project.as_deref()).map_err(|err| MemoryError::Import {
                line: n + 1,
                message: err.to_string(),
            })?;
        }
        self.write(|tx, now| {
            let mut report = ImportReport::default();
            for r in records {
                match r {
                    ExportRecord::Memory(mut m) => {
                        if find_by_content(tx, &m.project_path, &m.content)?.is_some() {
                            report.memories_skipped += 1;
                            continue;
                        }
                        if m.id.is_empty() {
                            // A minimal record: a new memory, with the import's time when it
                            // gave none.
                            m.id = new_unique_id(tx, "project_memories")?;
                            if m.created_at == 0 {
                                (m.created_at, m.updated_at, m.last_accessed_at) = (now, now, now);
                            }
                        } else if !well_formed_id(&m.id) || !id_is_free(tx, &m.id, Some(&m.project_path))? {
                            m.id = new_unique_id(tx, "project_memories")?;
                            report.memories_renamed += 1;
                        }
                        if m.superseded_by.as_deref().is_some_and(|s| !well_formed_id(s)) {
                            m.superseded_by = None;
                            m.superseded_at = None;
                        }
                        insert_entry(tx, &m)?;
                        history::record(
                            tx,
                            HistoryAction::Insert,
                            &m.id,
                            &m.project_path,
                            None,
                            Some(&m),
                            None,
                            Some("imported"),
                            now,
                        )?;
                        report.memories_added += 1;
                    }
                    ExportRecord::Episode(mut e) => {
                        let owner: Option<String> = tx
                            .prepare_cached("SELECT project_path FROM episodic_records WHERE id = ?1")?
                            .query_row(params![e.id], |r| r.get(0))
                            .optional()?;
                        match owner {
                            Some(p) if p == e.project_path => {
                                report.episodes_skipped += 1;
                                continue;
                            }
                            Some(_) => e.id = new_unique_id(tx, "episodic_records")?,
                            None if !well_formed_id(&e.id) => e.id = new_unique_id(tx, "episodic_records")?,
                            None => {}
                        }
                        insert_episode(tx, &e)?;
                        report.episodes_added += 1;
                    }
                }
            }
            Ok(report)
        })
    }
}

/// Check one imported record like any write, moving it into `project` when one is given.
fn check_record(record: &mut ExportRecord, project: Option<&str>) -> Result<()> {
    match record {
        ExportRecord::Memory(m) => {
            check_raw_secrets(
                &m.project_path,
                &m.content,
                &m.keywords,
                m.source_context.as_deref(),
                m.source_session_id.as_deref(),
            )
            .and_then(|()| secrets::check("memory", &m.id))
            .and_then(|()| secrets::check_all("memory", m.superseded_by.as_deref()))?;
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
            super::write::check_secrets(
                &m.content,
                &m.keywords,
                m.source_context.as_deref(),
                m.source_session_id.as_deref(),
            )?;
        }
        ExportRecord::Episode(e) => {
            secrets::check_all(
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
    }
    Ok(())
}
