//! `ctxkit bench tokens`: request tokens of each injection mode, per query, against `full`;
//! `ctxkit bench memory` is in [`crate::bench_memory`], `ctxkit bench select` in
//! [`crate::bench_select`].

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand};
use ctxkit::{Agent, DryRunModel, SectionKind, Thread};
use ctxkit_skills::Mode;
use serde_json::json;

use crate::error::CliError;
use crate::setup::{save_counts, token_counter, RequestOptions};
use crate::text_file::read_text;

/// The three requests the design record this project started from estimated its token savings
/// on: two that no shipped skill serves and one that fires `hello-extended`.
pub(crate) const ADR_QUERIES: [&str; 3] = ["What is 2+2?", "Say bonjour to Alice", "Calculate pi"];

#[derive(Args, Debug)]
pub(crate) struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

#[derive(Subcommand, Debug)]
pub(crate) enum BenchCommand {
    /// Request tokens of full, triggered, on-demand and hybrid modes for each query.
    Tokens {
        #[command(flatten)]
        request: RequestOptions,
        /// A file with one query per line; default: "What is 2+2?", "Say bonjour to Alice" and
        /// "Calculate pi".
        #[arg(long, value_name = "FILE")]
        queries: Option<PathBuf>,
        /// One JSON object per query per line.
        #[arg(long)]
        json: bool,
    },
    /// Memory search quality: recall@5 and MRR of ctxkit and of plain FTS5 bm25 on a labelled
    /// evaluation set; with an embedding model (--embeddings), also by meaning alone and by
    /// ctxkit's blend of words and meaning.
    Memory {
        /// A folder with memories.jsonl and queries.jsonl; default: the set built into ctxkit.
        #[arg(long, value_name = "DIR")]
        eval: Option<PathBuf>,
        /// One JSON object with both systems' scores and every query's ranks.
        #[arg(long)]
        json: bool,
        /// With an embedding model (--embeddings): try every blend of words and meaning on
        /// the odd-numbered queries and print them, best first (how the shipped blend was
        /// chosen).
        #[arg(long)]
        tune: bool,
    },
    /// Skill routing quality and speed of the default selection: Hit@1, R@3, precision,
    /// no-match rate and µs per message, per kind of request, on the labelled set over the
    /// skills corpus (built in; needs the corpus) and on BFCL v4 (--bfcl); with an embedding
    /// model (--embeddings), meaning joins selection.
    ///
    /// BFCL's pool rule, which its figures depend on: every function of BFCL_v4_multiple and
    /// BFCL_v4_live_multiple (in that order, line by line) is one skill per name, keeping the
    /// FIRST description seen for that name; each of their requests expects the function its
    /// possible_answer calls; the requests of BFCL_v4_irrelevance and BFCL_v4_live_irrelevance
    /// expect nothing. A request is the last user message of the entry's turn.
    Select {
        /// The unpacked `bfcl_eval/data` folder of the PyPI package bfcl-eval 2026.3.23 (its
        /// four BFCL_v4_{multiple,live_multiple,irrelevance,live_irrelevance}.json and
        /// possible_answer/); default: BFCL is not measured.
        #[arg(long, value_name = "DIR")]
        bfcl: Option<PathBuf>,
        /// The folder of skills the labelled set is over (loaded as any skill folder); default:
        /// $CTXKIT_CORPORA, else ../shared/corpora, measured when it is there.
        #[arg(long, value_name = "DIR")]
        corpus: Option<PathBuf>,
        /// A labelled set in the built-in one's format (JSON Lines of {"query", "expect",
        /// "kind"}) instead of it.
        #[arg(long, value_name = "FILE")]
        set: Option<PathBuf>,
        /// Select by triggers alone (`SelectOptions::by_description` off), as ctxkit did before
        /// the ranking, for comparison.
        #[arg(long)]
        triggers_only: bool,
        /// The score the best skill must reach for any skill to be selected by words or
        /// meaning, with or without a model, instead of the default (1.5; 2.0 with a model).
        /// With --cut 0, --floor 0 sends the best three whatever they score: the ceiling of
        /// any floor and cut.
        #[arg(long, value_name = "SCORE")]
        floor: Option<f32>,
        /// The share of the best score the other skills need, between 0 and 1, instead of the
        /// default (0.75).
        #[arg(long, value_name = "SHARE")]
        cut: Option<f32>,
        /// One JSON object per set, with every request's selection.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) async fn run(args: BenchArgs) -> Result<(), CliError> {
    let (mut request, queries, json) = match args.command {
        BenchCommand::Tokens {
            request,
            queries,
            json,
        } => (request, queries, json),
        BenchCommand::Memory { eval, json, tune } => return crate::bench_memory::run(eval, json, tune).await,
        BenchCommand::Select {
            bfcl,
            corpus,
            set,
            triggers_only,
            floor,
            cut,
            json,
        } => {
            let bench = crate::bench_select::SelectBench {
                bfcl,
                corpus,
                set,
                options: crate::bench_select::options(triggers_only, floor, cut)?,
                json,
            };
            return bench.run().await;
        }
    };
    // The modes differ in skills only: project memory (the same in every mode) is left out
    // unless a database is named, and measuring never creates the user's default database.
    request.no_memory |= request.memory.is_none();
    let queries: Vec<String> = match &queries {
        Some(file) => read_text(file)?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect(),
        None => ADR_QUERIES.iter().map(|q| q.to_string()).collect(),
    };
    let loaded = request.load().await?;
    let counter = token_counter();
    let memory = request.open_memory()?;
    let agents = Mode::ALL
        .iter()
        .map(|&mode| -> Result<Agent, CliError> {
            let skills = request.skills_provider(&loaded.config, &loaded.library, mode, &counter)?;
            Ok(request
                .agent(
                    &loaded,
                    Arc::new(skills),
                    Arc::new(DryRunModel),
                    &counter,
                    Vec::new(),
                    memory.as_ref(),
                )?
                .build()?)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = std::io::stdout().lock();
    if !json {
        writeln!(
            out,
            "{:<32} {:>7} {:>16} {:>16} {:>16}  hybrid skills",
            "query", "full", "triggered", "on-demand", "hybrid"
        )?;
    }
    for query in &queries {
        let mut tokens = Vec::with_capacity(4);
        let mut skills = Vec::new();
        for (mode, agent) in Mode::ALL.iter().zip(&agents) {
            let (_, report) = agent.preview(&Thread::new(), query).await?;
            tokens.push(report.tokens.total);
            if *mode == Mode::Hybrid {
                skills = report
                    .injected
                    .get(&SectionKind::SKILLS)
                    .cloned()
                    .unwrap_or_default();
            }
        }
        let [full, triggered, on_demand, hybrid] = tokens[..] else {
            unreachable!("four modes")
        };
        if json {
            let v = json!({"query": query, "full": full, "triggered": triggered, "on_demand": on_demand, "hybrid": hybrid, "skills": skills});
            writeln!(out, "{v}")?;
        } else {
            let cell = |t: usize| format!("{t} ({:+.0}%)", 100.0 * (t as f64 / full.max(1) as f64 - 1.0));
            let shown: String = query.chars().take(32).collect();
            writeln!(
                out,
                "{shown:<32} {full:>7} {:>16} {:>16} {:>16}  {}",
                cell(triggered),
                cell(on_demand),
                cell(hybrid),
                skills.join(", ")
            )?;
        }
    }
    save_counts(&counter);
    Ok(())
}
