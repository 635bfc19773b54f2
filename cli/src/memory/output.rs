//! How `ctxkit memory` prints: one JSON object per line with `--json`, else one line per
//! memory, with every memory text (content, keywords, project, source, reasons) passed through
//! [`printable_line`] so a stored memory can neither drive the terminal nor forge a row.

use std::io::Write;

use ctxkit_memory::records::{HistoryEntry, MemoryStats};
use ctxkit_memory::{MemoryEntry, MemorySearchResult};
use serde_json::json;

use crate::error::CliError;
use crate::printable::printable_line;

/// A memory on one line: id, badge, content and importance.
pub(super) fn line(e: &MemoryEntry) -> String {
    let superseded = e
        .superseded_by
        .as_ref()
        .map(|s| format!(", superseded by {}", printable_line(s)))
        .unwrap_or_default();
    format!(
        "{}  {} {}  (importance {:.2}{superseded})",
        printable_line(&e.id),
        e.category.badge(),
        printable_line(&e.content),
        e.importance
    )
}

/// `value` as one line of JSON.
pub(super) fn write_json(out: &mut impl Write, value: &impl serde::Serialize) -> Result<(), CliError> {
    serde_json::to_writer(&mut *out, value)?;
    writeln!(out)?;
    Ok(())
}

/// A search hit: its memory, score and importance.
pub(super) fn search_hit(out: &mut impl Write, hit: &MemorySearchResult, json: bool) -> Result<(), CliError> {
    let e = &hit.entry;
    if json {
        return write_json(
            out,
            &json!({
                "id": e.id,
                "category": e.category,
                "content": e.content,
                "importance": short(e.importance),
                "score": short(hit.relevance_score),
            }),
        );
    }
    writeln!(
        out,
        "{}  {} {}  (score {:.3}, importance {:.2})",
        printable_line(&e.id),
        e.category.badge(),
        printable_line(&e.content),
        hit.relevance_score,
        e.importance
    )?;
    Ok(())
}

/// One memory: as JSON, or every field on a line of its own.
pub(super) fn entry(out: &mut impl Write, e: &MemoryEntry, json: bool) -> Result<(), CliError> {
    if json {
        return write_json(out, e);
    }
    writeln!(out, "id:            {}", printable_line(&e.id))?;
    writeln!(out, "project:       {}", printable_line(&e.project_path))?;
    writeln!(out, "category:      {} {}", e.category, e.category.badge())?;
    writeln!(out, "content:       {}", printable_line(&e.content))?;
    writeln!(out, "keywords:      {}", printable_line(&e.keywords.join(", ")))?;
    writeln!(out, "importance:    {:.3}", e.importance)?;
    writeln!(out, "accesses:      {}", e.access_count)?;
    writeln!(out, "created:       {}", format_rfc3339(e.created_at))?;
    writeln!(out, "updated:       {}", format_rfc3339(e.updated_at))?;
    writeln!(out, "last accessed: {}", format_rfc3339(e.last_accessed_at))?;
    if let Some(s) = &e.source_session_id {
        writeln!(out, "session:       {}", printable_line(s))?;
    }
    if let Some(c) = &e.source_context {
        writeln!(out, "source:        {}", printable_line(c))?;
    }
    Ok(())
}

/// A project's counts, as JSON or one per line.
pub(super) fn stats(out: &mut impl Write, stats: &MemoryStats, json: bool) -> Result<(), CliError> {
    if json {
        return write_json(out, stats);
    }
    writeln!(out, "project: {}", printable_line(&stats.project_path))?;
    writeln!(out, "total: {}", stats.total)?;
    for (category, n) in &stats.by_category {
        writeln!(out, "  {category}: {n}")?;
    }
    writeln!(out, "average importance: {:.2}", stats.average_importance)?;
    writeln!(out, "accesses: {}", stats.total_accesses)?;
    writeln!(out, "episodic records: {}", stats.episodes)?;
    writeln!(out, "history entries: {}", stats.history_entries)?;
    Ok(())
}

/// One history entry: its id (which `undo` takes), when, what, and the memory's content.
pub(super) fn history_entry(out: &mut impl Write, h: &HistoryEntry) -> Result<(), CliError> {
    let content = h
        .after
        .as_ref()
        .or(h.before.as_ref())
        .map_or("", |e| e.content.as_str());
    writeln!(
        out,
        "#{}  {}  {:<7} {}  {}{}",
        h.id,
        format_rfc3339(h.at),
        h.action.as_str(),
        printable_line(&h.memory_id),
        printable_line(content),
        h.reason
            .as_ref()
            .map(|r| format!("  ({})", printable_line(r)))
            .unwrap_or_default()
    )?;
    Ok(())
}

/// An `f32` as the JSON number it prints as (`0.9`, not `0.8999999761581421`).
fn short(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

/// A timestamp (Unix milliseconds) as RFC 3339 UTC with second precision, e.g.
/// `2024-05-01T12:00:00Z`.
pub(crate) fn format_rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_dates() {
        assert_eq!(format_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_rfc3339(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(format_rfc3339(1_714_564_800_000), "2024-05-01T12:00:00Z");
    }

    #[test]
    fn scores_print_as_their_shortest_decimal() {
        assert!(short(0.9) == 0.9);
    }
}
