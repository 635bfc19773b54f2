//! `ctxkit bench memory`: recall@5 and MRR of memory search on a labelled evaluation set, for
//! ctxkit's ranking and for a plain FTS5 bm25 baseline, side by side.

use std::io::Write;
use std::path::PathBuf;

use ctxkit_memory::eval::{EvalReport, EvalSet, Scores};

use crate::error::CliError;

/// Load the set (the embedded one unless `eval` names a folder with `memories.jsonl` and
/// `queries.jsonl`) into a temporary database, score both systems and print the report.
pub(crate) async fn run(eval: Option<PathBuf>, json: bool) -> Result<(), CliError> {
    let set = match &eval {
        Some(dir) => EvalSet::load(dir)?,
        None => EvalSet::embedded(),
    };
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("eval.db");
    // Loading and searching are blocking SQLite calls.
    let report = tokio::task::spawn_blocking(move || set.run(&db))
        .await
        .map_err(|e| CliError::caused_by(format!("the evaluation stopped: {e}"), e))??;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string(&report)?)?;
    } else {
        print_table(&mut out, &report)?;
    }
    Ok(())
}

fn print_table(out: &mut impl Write, r: &EvalReport) -> std::io::Result<()> {
    writeln!(
        out,
        "{} memories ({} superseded) in {} projects, {} queries",
        r.memories, r.superseded, r.projects, r.queries
    )?;
    if !r.superseded_unlabelled.is_empty() {
        writeln!(
            out,
            "superseded by the store on its own: {}",
            r.superseded_unlabelled.join(", ")
        )?;
    }
    writeln!(
        out,
        "{:<14} {:>9} {:>6} {:>10} {:>19} {:>14}",
        "", "recall@5", "MRR", "no result", "superseded in top 5", "other project"
    )?;
    let row = |out: &mut dyn Write, name: &str, s: &Scores| {
        writeln!(
            out,
            "{name:<14} {:>9.3} {:>6.3} {:>10} {:>19} {:>14}",
            s.recall_at_5, s.mrr, s.empty, s.superseded_in_top_5, s.other_project
        )
    };
    row(out, "ctxkit", &r.ctxkit)?;
    row(out, "fts5 bm25", &r.baseline)?;
    let missed: Vec<&str> = r
        .outcomes
        .iter()
        .filter(|o| o.ctxkit_rank.is_none_or(|rank| rank > 5))
        .map(|o| o.text.as_str())
        .collect();
    if !missed.is_empty() {
        writeln!(out, "ctxkit has no answer in its top 5 for {}:", missed.len())?;
        for text in missed {
            writeln!(out, "  {text}")?;
        }
    }
    Ok(())
}
