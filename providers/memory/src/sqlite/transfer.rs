//! Export and import: every field of every memory and episodic record, as JSON lines.

use std::io::{BufRead, Write};

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

use super::rows::{
    find_by_content, insert_entry, insert_episode, new_unique_id, row_to_episode, select_entries, COLS,
};
use super::write::{check_content, check_importance, check_project};
use super::{history, MemoryDb};
use crate::error::{MemoryError, Result};
use crate::secrets;
use crate::types::{EpisodicRecord, HistoryAction, MemoryEntry};

/// One line of an export.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ExportRecord {
    Memory(MemoryEntry),
    Episode(EpisodicRecord),
}

/// What an import did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    pub memories_added: usize,
    /// Already present (same project and content).
    pub memories_skipped: usize,
    /// Added under a new id because their id was taken by another memory.
    pub memories_renamed: usize,
    pub episodes_added: usize,
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

    /// Read JSON lines; blank lines are skipped, anything else that is not a record is an
    /// error naming its line.
    pub fn read_jsonl(input: impl BufRead) -> Result<Vec<ExportRecord>> {
        let mut out = Vec::new();
        for (i, line) in input.lines().enumerate() {
            let line = line.map_err(|e| MemoryError::Import {
                line: i + 1,
                message: e.to_string(),
            })?;
            if line.trim().is_empty() {
                continue;
            }
            let record = serde_json::from_str(&line).map_err(|e| MemoryError::Import {
                line: i + 1,
                message: e.to_string(),
            })?;
            out.push(record);
        }
        Ok(out)
    }
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
            .map(|(_, e)| ExportRecord::Memory(e))
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
    /// holds the same content is skipped, so importing a file twice adds nothing; a record
    /// holding a secret refuses the whole import.
    pub fn import(&self, records: &[ExportRecord], project: Option<&str>) -> Result<ImportReport> {
        let project = project.map(check_project).transpose()?;
        let invalid = |n: usize, err: MemoryError| MemoryError::Import {
            line: n + 1,
            message: err.to_string(),
        };
        let mut records = records.to_vec();
        for (n, r) in records.iter_mut().enumerate() {
            match r {
                ExportRecord::Memory(m) => {
                    if let Some(p) = &project {
                        m.project_path = p.clone();
                    }
                    check_project(&m.project_path).map_err(|e| invalid(n, e))?;
                    let content = check_content(&m.content).map_err(|e| invalid(n, e))?;
                    if content != m.content {
                        m.content = content;
                    }
                    check_importance(m.importance).map_err(|e| invalid(n, e))?;
                    super::write::check_secrets(
                        &m.content,
                        &m.keywords,
                        m.source_context.as_deref(),
                        m.source_session_id.as_deref(),
                    )
                    .map_err(|e| invalid(n, e))?;
                }
                ExportRecord::Episode(e) => {
                    if let Some(p) = &project {
                        e.project_path = p.clone();
                    }
                    check_project(&e.project_path).map_err(|err| invalid(n, err))?;
                    for text in [
                        &e.task_summary,
                        &e.approach_summary,
                        &e.outcome_summary,
                        &e.session_id,
                    ]
                    .into_iter()
                    .chain(&e.tools_used)
                    .chain(&e.keywords)
                    {
                        secrets::check("episodic record", text).map_err(|err| invalid(n, err))?;
                    }
                }
            }
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
                        let taken = tx
                            .prepare_cached("SELECT 1 FROM project_memories WHERE id = ?1")?
                            .query_row(params![m.id], |_| Ok(()))
                            .optional()?
                            .is_some();
                        if taken || m.id.trim().is_empty() {
                            m.id = new_unique_id(tx, "project_memories")?;
                            report.memories_renamed += 1;
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
                    ExportRecord::Episode(e) => {
                        let exists = tx
                            .prepare_cached("SELECT 1 FROM episodic_records WHERE id = ?1")?
                            .query_row(params![e.id], |_| Ok(()))
                            .optional()?
                            .is_some();
                        if exists {
                            report.episodes_skipped += 1;
                            continue;
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
