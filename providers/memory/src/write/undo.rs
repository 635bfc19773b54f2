//! Undo: a memory put back as it was before one of its history entries.

use super::memories::refuse_duplicate;
use super::rows::{deletion, insert, remove, replace, Change, Rows};
use crate::decide;
use crate::error::{MemoryError, Result};
use crate::rules;
use crate::types::{HistoryAction, MemoryEntry};

/// Put a memory of `project` back as it was before history entry `history_id`: an undone
/// insert deletes the memory, anything else restores the earlier version (re-creating a
/// deleted or merged-away memory under its old id). Returns the memory as it now is (`None`
/// when the undo deleted it). The undo is itself recorded.
///
/// Undo never crosses projects: an entry of another project is
/// [`MemoryError::HistoryNotFound`], and if the memory id were ever held by another project's
/// memory (which the store prevents) the undo is refused rather than touching it.
pub(crate) async fn undo(
    rows: &mut impl Rows,
    project: &str,
    history_id: i64,
    now: i64,
) -> Result<Option<MemoryEntry>> {
    let h = rows
        .history_entry(history_id)
        .await?
        .filter(|h| h.project_path == project)
        .ok_or_else(|| MemoryError::HistoryNotFound {
            id: history_id,
            project: project.to_string(),
        })?;
    let current = rows.load(&h.memory_id).await?;
    decide::check_undo(&h, current.as_ref().map(|(_, cur)| cur), project)?;
    let reason = format!("undo of history entry {history_id}");
    let Some(mut restored) = h.before else {
        let Some((num, cur)) = current else {
            return Err(decide::insert_gone(&h.memory_id));
        };
        remove(rows, num, deletion(&cur, &reason, now)).await?;
        return Ok(None);
    };
    // A version stored before a rule found its secret is not written back: undo stores text
    // like any write, and nothing stores a secret.
    rules::check_secret_fields(
        "memory",
        std::iter::once(restored.content.as_str())
            .chain(restored.keywords.iter().map(String::as_str))
            .chain(restored.source_context.as_deref()),
    )?;
    refuse_duplicate(
        rows,
        &restored.project_path,
        &restored.content,
        Some(&restored.id),
    )
    .await?;
    restored.updated_at = now;
    match current {
        Some((num, cur)) => {
            let change = Change {
                action: HistoryAction::Restore,
                before: Some(&cur),
                after: Some(&restored),
                related_id: None,
                reason: &reason,
                at: now,
            };
            replace(rows, num, change).await?;
        }
        None => {
            let change = Change {
                action: HistoryAction::Restore,
                before: None,
                after: Some(&restored),
                related_id: None,
                reason: &reason,
                at: now,
            };
            insert(rows, change).await?;
        }
    }
    Ok(Some(restored))
}
