//! `ctxkit skills`: list, show, validate and match skills — the skill author's tools.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::{Args, Subcommand};
use ctxkit_skills::{SelectOptions, SkillIndex};
use serde_json::{json, Value};

use crate::printable::printable;
use crate::setup::{read_text, SkillDirs};
use crate::CliError;

#[derive(Args, Debug)]
pub struct SkillsArgs {
    #[command(flatten)]
    pub dirs: SkillDirs,
    #[command(subcommand)]
    pub command: SkillsCommand,
}

#[derive(Subcommand, Debug)]
pub enum SkillsCommand {
    /// List loaded skills: name, source, priority, triggers and description.
    List {
        /// One JSON object per skill per line.
        #[arg(long)]
        json: bool,
    },
    /// Show one skill: its metadata and body.
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Check every skill file and print each problem as `path:line: severity: message`.
    /// Exits 1 when any skill was skipped; warnings alone exit 0.
    Validate {
        #[arg(long)]
        json: bool,
    },
    /// Show which skills a message selects, with their scores and the triggers that fired.
    Match {
        /// The message to match (omit with --batch).
        #[arg(required_unless_present = "batch")]
        message: Option<String>,
        /// Read JSON lines `{"id", "text"}` and write one line `{"id", "skills", "elapsed_us"}` each.
        #[arg(long, value_name = "FILE", conflicts_with = "message")]
        batch: Option<PathBuf>,
        /// The most skills selected by their triggers.
        #[arg(long, default_value_t = 3)]
        max_skills: usize,
        #[arg(long)]
        json: bool,
    },
}

fn load(dirs: &SkillDirs) -> Result<Arc<SkillIndex>, CliError> {
    Ok(dirs.library()?.snapshot())
}

pub fn run(args: SkillsArgs) -> Result<(), CliError> {
    let index = load(&args.dirs)?;
    let mut out = std::io::stdout().lock();
    match args.command {
        SkillsCommand::List { json } => list(&index, json, &mut out),
        SkillsCommand::Show { name, json } => show(&index, &name, json, &mut out),
        SkillsCommand::Validate { json } => validate(&index, json, &mut out),
        SkillsCommand::Match {
            message,
            batch,
            max_skills,
            json,
        } => {
            let options = SelectOptions {
                max_skills,
                ..Default::default()
            };
            match batch {
                Some(file) => match_batch(&index, &file, &options, &mut out),
                None => match_one(&index, &message.unwrap_or_default(), &options, json, &mut out),
            }
        }
    }
}

/// Every skill in rank order, one line (or JSON object) each.
fn list(index: &SkillIndex, json: bool, out: &mut impl Write) -> Result<(), CliError> {
    for s in index.ranked() {
        if json {
            let v = json!({
                "name": s.name, "id": s.id, "description": s.description, "source": s.source,
                "priority": s.priority, "triggers": s.triggers, "path": s.path,
            });
            writeln!(out, "{v}")?;
        } else {
            let n = s.triggers.literals().count() + s.triggers.patterns.len();
            writeln!(
                out,
                "{:<28} {:<8} {:>4}  {:>2} triggers  {}",
                printable(&s.name),
                format!("{:?}", s.source).to_lowercase(),
                s.priority,
                n,
                printable(&s.description)
            )?;
        }
    }
    if index.is_empty() && !json {
        writeln!(out, "no skills found")?;
    }
    Ok(())
}

/// One skill: where it comes from, its triggers and its body.
fn show(index: &SkillIndex, name: &str, json: bool, out: &mut impl Write) -> Result<(), CliError> {
    let s = index.get(name).ok_or_else(|| {
        CliError::new(format!(
            "no skill is named `{}`; `ctxkit skills list` shows the loaded ones",
            printable(name)
        ))
    })?;
    if json {
        writeln!(out, "{}", serde_json::to_value(s)?)?;
        return Ok(());
    }
    writeln!(
        out,
        "name:        {}\nid:          {}\npath:        {}\nsource:      {:?} (priority {})\ndescription: {}",
        printable(&s.name),
        printable(&s.id),
        printable(&s.path.display().to_string()),
        s.source,
        s.priority,
        printable(&s.description)
    )?;
    let t = &s.triggers;
    writeln!(
        out,
        "keywords:    {}\nverbs:       {}\npatterns:    {}",
        printable(&t.keywords.join(", ")),
        printable(&t.verbs.join(", ")),
        printable(&t.patterns.join(", "))
    )?;
    writeln!(out, "\n{}", printable(&s.body))?;
    Ok(())
}

/// Every diagnostic, then a count; exit 1 when a skill file was skipped.
fn validate(index: &SkillIndex, json: bool, out: &mut impl Write) -> Result<(), CliError> {
    for d in index.diagnostics() {
        if json {
            writeln!(out, "{}", serde_json::to_value(d)?)?;
        } else {
            writeln!(out, "{}", printable(&d.to_string()))?;
        }
    }
    let errors = index.diagnostics().iter().filter(|d| d.is_error()).count();
    let warnings = index.diagnostics().len() - errors;
    if !json {
        writeln!(
            out,
            "{} skills loaded, {warnings} warnings, {errors} skipped",
            index.len()
        )?;
    }
    if errors > 0 {
        return Err(CliError::quiet(format!("{errors} skill files were skipped")));
    }
    Ok(())
}

fn match_one(
    index: &SkillIndex,
    message: &str,
    options: &SelectOptions,
    json: bool,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let start = Instant::now();
    let selected = index.select(&[message], &[], options);
    let elapsed = start.elapsed();
    if json {
        let why: serde_json::Map<String, Value> = selected
            .iter()
            .map(|s| (s.name.clone(), json!(s.triggers)))
            .collect();
        let v = json!({
            "skills": selected.iter().map(|s| &s.name).collect::<Vec<_>>(),
            "why": why,
            "selected": selected,
            "elapsed_us": elapsed.as_micros() as u64,
        });
        writeln!(out, "{v}")?;
        return Ok(());
    }
    if selected.is_empty() {
        writeln!(
            out,
            "no skill selected ({} skills checked in {} µs)",
            index.len(),
            elapsed.as_micros()
        )?;
    }
    for s in &selected {
        let reason = serde_json::to_value(s.reason)?;
        let triggers = if s.triggers.is_empty() {
            String::new()
        } else {
            format!(" triggers: {}", printable(&s.triggers.join(", ")))
        };
        writeln!(
            out,
            "{:<28} score {:>2}  {}{triggers}",
            printable(&s.name),
            s.score,
            reason.as_str().unwrap_or("")
        )?;
    }
    Ok(())
}

/// One output line per input line, in order; a bad line gets an `error` line and exit 1 at the end.
fn match_batch(
    index: &SkillIndex,
    file: &Path,
    options: &SelectOptions,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let text = read_text(file)?;
    let mut bad = 0;
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let input: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                bad += 1;
                writeln!(
                    out,
                    "{}",
                    json!({"line": n + 1, "error": format!("not JSON: {e}")})
                )?;
                continue;
            }
        };
        let Some(text) = input.get("text").and_then(Value::as_str) else {
            bad += 1;
            writeln!(
                out,
                "{}",
                json!({"id": input.get("id"), "line": n + 1, "error": "missing string field `text`"})
            )?;
            continue;
        };
        let start = Instant::now();
        let selected = index.select(&[text], &[], options);
        let elapsed = start.elapsed();
        let names: Vec<&str> = selected.iter().map(|s| s.name.as_str()).collect();
        writeln!(
            out,
            "{}",
            json!({"id": input.get("id"), "skills": names, "elapsed_us": elapsed.as_micros() as u64})
        )?;
    }
    if bad > 0 {
        return Err(CliError::new(format!(
            "{bad} lines of `{}` were not `{{\"id\", \"text\"}}` JSON",
            file.display()
        )));
    }
    Ok(())
}
