//! `ctxkit bench memory`: recall@5 and MRR of memory search on a labelled evaluation set, for
//! ctxkit's ranking and for a plain FTS5 bm25 baseline, side by side; with an embedding model,
//! for the lexical, semantic and hybrid rankings on the tuning and held-out queries too.

use std::io::Write;
use std::path::PathBuf;

use ctxkit_memory::eval::{EvalReport, EvalSet, MeaningReport, Scores, Systems, TunePoint};

use crate::embeddings::embedder;
use crate::error::CliError;

/// Load the set (the embedded one unless `eval` names a folder with `memories.jsonl` and
/// `queries.jsonl`) into temporary databases, score the systems and print the report.
pub(crate) async fn run(eval: Option<PathBuf>, json: bool, tune: bool) -> Result<(), CliError> {
    let set = match &eval {
        Some(dir) => EvalSet::load(dir)?,
        None => EvalSet::embedded(),
    };
    let model = embedder()?;
    if tune && model.is_none() {
        return Err(CliError::new(
            "--tune needs an embedding model: give one with --embeddings DIR or $CTXKIT_EMBEDDINGS",
        ));
    }
    let dir = tempfile::tempdir()?;
    let path = dir.path().to_path_buf();
    // Loading, embedding and searching block: SQLite calls and arithmetic.
    let (report, meaning, grid) = tokio::task::spawn_blocking(move || -> Result<_, CliError> {
        let report = set.run(&path.join("eval.db"))?;
        let meaning = model
            .as_ref()
            .map(|m| set.run_meaning(&path, m.clone()))
            .transpose()?;
        let grid = match (&model, tune) {
            (Some(m), true) => Some(set.tune(&path, m.clone())?),
            _ => None,
        };
        Ok((report, meaning, grid))
    })
    .await
    .map_err(|e| CliError::caused_by(format!("the evaluation stopped: {e}"), e))??;
    let mut out = std::io::stdout().lock();
    if json {
        // The lexical report as before, with the rankings by meaning beside it when measured.
        let mut value = serde_json::to_value(&report)?;
        if let Some(fields) = value.as_object_mut() {
            if let Some(m) = &meaning {
                fields.insert("meaning".into(), serde_json::to_value(m)?);
            }
            if let Some(g) = &grid {
                fields.insert("tune".into(), serde_json::to_value(g)?);
            }
        }
        writeln!(out, "{}", serde_json::to_string(&value)?)?;
        return Ok(());
    }
    print_table(&mut out, &report)?;
    match &meaning {
        Some(m) => print_meaning(&mut out, m)?,
        None => writeln!(
            out,
            "\nby meaning: no embedding model; give one (a sentence-transformers folder such as \
             all-MiniLM-L6-v2) with --embeddings DIR or $CTXKIT_EMBEDDINGS"
        )?,
    }
    if let Some(grid) = &grid {
        print_grid(&mut out, grid)?;
    }
    Ok(())
}

fn print_meaning(out: &mut impl Write, m: &MeaningReport) -> std::io::Result<()> {
    writeln!(
        out,
        "\nby meaning (model {}; blend: {:.2} × cosine + {:.2} × words, a memory sharing no word kept from cosine {:.2})",
        m.model,
        m.weight,
        1.0 - m.weight,
        m.floor
    )?;
    writeln!(
        out,
        "{:<14} {:>22} {:>22} {:>22}",
        "", "tuning (odd queries)", "held out (even)", "all"
    )?;
    let cell = |s: &Scores| format!("{:.3} / {:.3}", s.recall_at_5, s.mrr);
    let row = |out: &mut dyn Write, name: &str, pick: fn(&Systems) -> &Scores| {
        writeln!(
            out,
            "{name:<14} {:>22} {:>22} {:>22}",
            cell(pick(&m.tuning)),
            cell(pick(&m.held_out)),
            cell(pick(&m.all))
        )
    };
    writeln!(out, "{:<14} {:>22} {:>22} {:>22}", "recall@5 / MRR", "", "", "")?;
    row(out, "lexical", |s| &s.lexical)?;
    row(out, "semantic", |s| &s.semantic)?;
    row(out, "hybrid", |s| &s.hybrid)
}

fn print_grid(out: &mut impl Write, grid: &[TunePoint]) -> std::io::Result<()> {
    writeln!(
        out,
        "\nblends on the odd-numbered queries, best first (recall@5 + MRR):"
    )?;
    writeln!(
        out,
        "{:>7} {:>6} {:>9} {:>6}",
        "weight", "floor", "recall@5", "MRR"
    )?;
    for p in grid {
        writeln!(
            out,
            "{:>7.2} {:>6.2} {:>9.3} {:>6.3}",
            p.weight, p.floor, p.tuning.recall_at_5, p.tuning.mrr
        )?;
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
