//! `ctxkit bench select`: skill routing quality and speed, through the selection every surface
//! uses (`SkillContextProvider::select`, default config unless `--triggers-only`, `--floor` or
//! `--cut` change its selection), on the labelled set over the skills
//! corpus and on the public BFCL set (see [`ctxkit_skills::eval`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ctxkit_skills::eval::{self, Bfcl, Group, Report, RoutingSet};
use ctxkit_skills::{
    SelectOptions, SkillConfig, SkillContextProvider, SkillLibrary, SkillMeaning, SkillRoot, Source,
};
use serde_json::json;

use crate::embeddings::{embedder, vector_cache_file};
use crate::error::CliError;
use crate::printable::printable_line;
use crate::text_file::read_regular_text;

/// A BFCL file or a labelled set larger than this is refused (the largest BFCL file is 4 MB).
const MAX_DATA_BYTES: u64 = 64 << 20;

/// What `ctxkit bench select` measures.
pub(crate) struct SelectBench {
    /// The unpacked `bfcl_eval/data` folder.
    pub bfcl: Option<PathBuf>,
    /// The skills the labelled set is over.
    pub corpus: Option<PathBuf>,
    /// A labelled set instead of the built-in one.
    pub set: Option<PathBuf>,
    /// The selection measured: the default, or as `--triggers-only`, `--floor` and `--cut`
    /// changed it.
    pub options: SelectOptions,
    /// One JSON object per set.
    pub json: bool,
}

/// One set to measure: its name for the table, where its skills come from, its requests.
struct Measured {
    set: &'static str,
    source: String,
    notes: Vec<String>,
    report: Report,
}

impl SelectBench {
    /// Load the sets asked for (the corpus set whenever its corpus is there, BFCL when named),
    /// run them and print a table per set, or one JSON object per set with `--json`.
    pub(crate) async fn run(self) -> Result<(), CliError> {
        let corpus = match &self.corpus {
            Some(dir) if !dir.is_dir() => {
                return Err(CliError::new(format!(
                    "the corpus `{}` is not a folder",
                    dir.display()
                )))
            }
            Some(dir) => Some(dir.clone()),
            None => default_corpus().filter(|d| d.is_dir()),
        };
        if corpus.is_none() && self.set.is_some() {
            return Err(CliError::new(
                "--set needs the skills it is labelled over: give their folder with --corpus DIR",
            ));
        }
        if corpus.is_none() && self.bfcl.is_none() {
            return Err(CliError::new(
                "nothing to measure: the skills corpus is not at ../shared/corpora (or \
                 $CTXKIT_CORPORA); give it with --corpus DIR, or BFCL's data with --bfcl DIR",
            ));
        }
        let set = match &self.set {
            Some(file) => RoutingSet::parse(
                &read_regular_text(file, MAX_DATA_BYTES)?,
                &file.display().to_string(),
            )?,
            None => RoutingSet::embedded(),
        };
        let bfcl = match &self.bfcl {
            Some(dir) => Some(Bfcl::parse(|name| {
                read_regular_text(&dir.join(name), MAX_DATA_BYTES)
            })?),
            None => None,
        };
        let model = embedder()?;
        let with_model = model.as_ref().map(|m| m.id().to_string());
        let options = self.options.clone();
        let provider = move |library: Arc<SkillLibrary>| {
            let config = SkillConfig {
                select: options.clone(),
                ..SkillConfig::default()
            };
            let provider = SkillContextProvider::new(library, config);
            match &model {
                Some(model) => {
                    let mut meaning = SkillMeaning::new(model.clone());
                    if let Some(file) = vector_cache_file() {
                        meaning = meaning.cache_file(file);
                    }
                    provider.with_meaning(meaning)
                }
                None => provider,
            }
        };
        // Loading skills, embedding descriptions and selecting block: files and arithmetic.
        let measured = tokio::task::spawn_blocking(move || {
            let mut measured = Vec::new();
            if let Some(dir) = corpus {
                let library = Arc::new(SkillLibrary::load(vec![SkillRoot::new(&dir, Source::External)]));
                let index = library.snapshot();
                let unknown = set.unknown_names(&index);
                let report = eval::run(&provider(library), &index, &set.queries);
                let notes = match unknown.len() {
                    0 => Vec::new(),
                    n => vec![format!(
                        "{n} expected names are not in the corpus (a set for another corpus?): {}",
                        unknown.join(", ")
                    )],
                };
                measured.push(Measured {
                    set: "corpus",
                    source: dir.display().to_string(),
                    notes,
                    report,
                });
            }
            if let Some(bfcl) = bfcl {
                let library = Arc::new(SkillLibrary::from_index(bfcl.index()));
                let index = library.snapshot();
                let report = eval::run(&provider(library), &index, &bfcl.queries);
                measured.push(Measured {
                    set: "bfcl",
                    source: format!(
                        "{} functions pooled, one skill per name with its first description",
                        bfcl.pool.len()
                    ),
                    notes: Vec::new(),
                    report,
                });
            }
            measured
        })
        .await
        .map_err(|e| CliError::caused_by(format!("the measurement stopped: {e}"), e))?;
        let mut out = std::io::stdout().lock();
        for m in &measured {
            if self.json {
                let v = json!({
                    "set": m.set,
                    "source": m.source,
                    "triggers_only": !self.options.by_description,
                    "floor": if with_model.is_some() { self.options.meaning_floor } else { self.options.floor },
                    "cut": self.options.cut,
                    "model": with_model,
                    "notes": m.notes,
                    "report": m.report,
                });
                writeln!(out, "{v}")?;
            } else {
                print_table(&mut out, m, &self.options, with_model.as_deref())?;
            }
        }
        Ok(())
    }
}

/// The selection `--triggers-only`, `--floor` and `--cut` ask for: a floor is the one in use
/// with or without a model.
pub(crate) fn options(
    triggers_only: bool,
    floor: Option<f32>,
    cut: Option<f32>,
) -> Result<SelectOptions, CliError> {
    let mut options = SelectOptions {
        by_description: !triggers_only,
        ..SelectOptions::default()
    };
    if let Some(floor) = floor {
        if !floor.is_finite() {
            return Err(CliError::new(format!(
                "--floor {floor} is not a score: give a finite number"
            )));
        }
        (options.floor, options.meaning_floor) = (floor, floor);
    }
    if let Some(cut) = cut {
        if !(0.0..=1.0).contains(&cut) {
            return Err(CliError::new(format!(
                "--cut {cut} is not a share of the best score: give a number from 0 to 1"
            )));
        }
        options.cut = cut;
    }
    Ok(options)
}

/// How the table names the selection it measured.
fn describe(options: &SelectOptions) -> String {
    let default = SelectOptions::default();
    if !options.by_description {
        return "triggers only".into();
    }
    let mut changed = Vec::new();
    if (options.floor, options.meaning_floor) != (default.floor, default.meaning_floor) {
        changed.push(format!("floor {}", options.floor));
    }
    if options.cut != default.cut {
        changed.push(format!("cut {}", options.cut));
    }
    if changed.is_empty() {
        "default".into()
    } else {
        changed.join(", ")
    }
}

/// `$CTXKIT_CORPORA`, else `../shared/corpora` from the current folder (the project's).
fn default_corpus() -> Option<PathBuf> {
    match std::env::var_os("CTXKIT_CORPORA").filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => Some(Path::new("..").join("shared").join("corpora")),
    }
}

fn print_table(
    out: &mut impl Write,
    m: &Measured,
    options: &SelectOptions,
    model: Option<&str>,
) -> std::io::Result<()> {
    let r = &m.report;
    let title = match m.set {
        "corpus" => "labelled corpus set",
        _ => "BFCL v4 (multiple, live_multiple; irrelevance sets as requests expecting nothing)",
    };
    writeln!(
        out,
        "{title}: {} skills ({})",
        r.skills,
        printable_line(&m.source)
    )?;
    writeln!(
        out,
        "selection: {}{}",
        describe(options),
        model.map(|m| format!(" + meaning ({m})")).unwrap_or_default()
    )?;
    for note in &m.notes {
        writeln!(out, "note: {}", printable_line(note))?;
    }
    writeln!(
        out,
        "{:<20} {:>8} {:>6} {:>6} {:>9} {:>8} {:>8}",
        "kind", "requests", "Hit@1", "R@3", "precision", "no match", "sent"
    )?;
    let cell = |v: Option<f64>| v.map_or_else(|| "—".to_string(), |v| format!("{v:.3}"));
    for g in &r.groups {
        let Group {
            kind,
            queries,
            hit_at_1,
            recall_at_3,
            precision,
            no_match,
            selected_per_query,
            ..
        } = g;
        writeln!(
            out,
            "{:<20} {queries:>8} {:>6} {:>6} {:>9} {no_match:>8.3} {selected_per_query:>8.2}",
            printable_line(kind),
            cell(*hit_at_1),
            cell(*recall_at_3),
            cell(*precision)
        )?;
    }
    writeln!(
        out,
        "select: {:.1} µs per message (warm, mean of {})\n",
        r.micros_per_message,
        r.outcomes.len()
    )
}
