//! `ctxkit skills`: list, show, validate and match skills, turn them on and off, report
//! auto-detection — the skill author's and operator's tools. Scaffolding and example tests
//! are in [`crate::skills_author`].

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Args, Subcommand};
use ctxkit::Message;
use ctxkit_skills::{Detection, Diagnostic, Evidence, Ranking, Selection, SkillIndex, SkillLibrary};
use serde_json::{json, Value};

use crate::error::CliError;
use crate::printable::{printable, printable_line};
use crate::setup::{current_dir, SkillDirs};
use crate::text_file::read_text;
use crate::user_config::{toggle_skill, Config, Layer};

#[derive(Args, Debug)]
pub(crate) struct SkillsArgs {
    #[command(flatten)]
    pub dirs: SkillDirs,
    /// Where the project's learned skills are read from.
    #[command(flatten)]
    pub scope: crate::learned::Scope,
    #[command(subcommand)]
    pub command: SkillsCommand,
}

#[derive(Subcommand, Debug)]
pub(crate) enum SkillsCommand {
    /// List loaded skills: name, source, format (skill, convention, cursor, copilot),
    /// priority, triggers and description; skills turned off are listed last, marked
    /// `(disabled)`.
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
    /// Check every skill file and print each problem as `path:line: severity: message`, with
    /// a warning for a trigger that is a common English word. Exits 1 when any skill was
    /// skipped; warnings alone exit 0.
    Validate {
        #[arg(long)]
        json: bool,
        /// Check each SKILL.md against the agentskills.io specification to the letter instead:
        /// a bad name, no frontmatter, a `metadata` value that is not a string, a long
        /// `compatibility`, a field the specification does not define, … are errors, each with
        /// its fix. Exits 1 on any.
        #[arg(long)]
        spec: bool,
    },
    /// Show which skills a message selects, with their scores and the triggers that fired:
    /// what every entry point selects (the config's selection settings, and with `[skills]
    /// semantic = true` and an embedding model, meaning in the ranking).
    Match {
        /// The message to match (omit with --batch).
        #[arg(required_unless_present = "batch")]
        message: Option<String>,
        /// Read JSON lines `{"id", "text"}` and write one line `{"id", "skills", "elapsed_us"}` each.
        #[arg(long, value_name = "FILE", conflicts_with = "message")]
        batch: Option<PathBuf>,
        /// The most skills sent, always-on and detected ones included (default: the config's, else 3).
        #[arg(long)]
        max_skills: Option<usize>,
        /// Show what counted for each skill (triggers, name and description words, meaning,
        /// the score against the floor) and the skills that nearly made it, with why not.
        #[arg(long, conflicts_with = "batch")]
        explain: bool,
        #[arg(long)]
        json: bool,
    },
    /// Turn a skill back on: in the project's .ctxkit/config.toml, or with --user in the
    /// user's config.
    Enable {
        name: String,
        /// Change the user's config (every project) instead of the project's.
        #[arg(long)]
        user: bool,
    },
    /// Turn a skill off for every entry point (context, chat, hooks, MCP): in the project's
    /// .ctxkit/config.toml, or with --user in the user's config.
    Disable {
        name: String,
        /// Change the user's config (every project) instead of the project's.
        #[arg(long)]
        user: bool,
    },
    /// List the skills a project's files auto-detect, with the files and patterns that matched.
    /// The folder is `--project` (default: the current directory).
    Detect {
        #[arg(long)]
        json: bool,
    },
    /// Create a skill folder with a SKILL.md that follows the agentskills.io specification
    /// (`skills validate --spec`; its triggers under `metadata`) and a tests.jsonl of examples
    /// that `skills test` passes.
    New(crate::skills_author::NewArgs),
    /// Run the examples skills declare (`examples: {fire: [...], silent: [...]}` or a
    /// tests.jsonl beside SKILL.md): hits, misses, false fires and cross-fires per skill; and
    /// built-in everyday sentences, listing each skill one fires (a warning). Exits 1 on a
    /// miss or a false fire of an example.
    Test(crate::skills_author::TestArgs),
    /// Review the skills learned from this project's sessions: list, show, accept, reject,
    /// export.
    Learned {
        #[command(subcommand)]
        command: crate::learned::LearnedCommand,
    },
    /// Learn a skill from a finished session (a Claude Code transcript, a Codex rollout or a
    /// `chat --record` file), with the criteria and checks of a chat's session end: one model
    /// call, one proposed skill at most.
    Learn(crate::learned::LearnArgs),
}

pub(crate) async fn run(args: SkillsArgs) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    match args.command {
        SkillsCommand::New(new) => return crate::skills_author::new(&new, &args.dirs, &mut out),
        SkillsCommand::Learned { command } => {
            return crate::learned::run(&args.scope, command, &mut out).await
        }
        _ => {}
    }
    let project = current_dir()?;
    let config = Config::load(&project)?;
    // Without a memory database to find (no HOME, say), skills load without learned ones.
    let learned = match args.scope.resolve() {
        Ok((db, project)) => {
            crate::learned::sync_before_loading(Some(&db), &project, false).await;
            crate::learned::root(&db, &project)
        }
        Err(_) => None,
    };
    let library = args.dirs.library(&config, learned)?;
    let index = library.snapshot();
    match args.command {
        SkillsCommand::List { json } => list(&index, json, &mut out),
        SkillsCommand::Show { name, json } => show(&index, &name, json, &mut out),
        SkillsCommand::Validate { json, spec: false } => validate(&index, json, &mut out),
        SkillsCommand::Validate { json, spec: true } => validate_spec(&library, json, &mut out),
        SkillsCommand::Detect { json } => {
            let dir = args.scope.project.as_ref().map_or(project, PathBuf::from);
            detect(&index, &dir, json, &mut out)
        }
        SkillsCommand::Test(test) => crate::skills_author::test(&index, &test, &mut out),
        SkillsCommand::Match {
            message,
            batch,
            max_skills,
            explain,
            json,
        } => {
            let provider = crate::embeddings::skill_provider(
                &config,
                library,
                config.skill_config(None, max_skills),
                false,
            )?;
            let rank = |text: &str| provider.explain(&index, &[Message::user(text)], None, None, None);
            match batch {
                Some(file) => match_batch(&file, |text| rank(text).selected, &mut out),
                None => match_one(
                    &index,
                    &message.unwrap_or_default(),
                    rank,
                    explain,
                    json,
                    &mut out,
                ),
            }
        }
        SkillsCommand::Enable { name, user } => toggle(&index, &config, &name, user, false, &mut out),
        SkillsCommand::Disable { name, user } => toggle(&index, &config, &name, user, true, &mut out),
        SkillsCommand::Learn(learn) => {
            crate::learned::learn(&args.scope, learn, library, config.learn_options(), &mut out).await
        }
        // Answered above, before any skill is loaded.
        SkillsCommand::New(_) | SkillsCommand::Learned { .. } => Ok(()),
    }
}

/// Turn `name` off (`disable`) or on in the project's or the user's config file.
fn toggle(
    index: &SkillIndex,
    config: &Config,
    name: &str,
    user: bool,
    disable: bool,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let layer = if user { Layer::User } else { Layer::Project };
    let path = toggle_skill(config, layer, name, disable)?;
    let state = if disable { "disabled" } else { "enabled" };
    let known =
        index.get(name).is_some() || index.disabled().iter().any(|s| s.name.eq_ignore_ascii_case(name));
    if !known {
        // Recorded anyway (the skill may be installed later), but a typo should not pass unseen.
        writeln!(out, "note: no loaded skill is named `{}`", printable_line(name))?;
    }
    writeln!(
        out,
        "{} {state} in {}",
        printable_line(name),
        printable_line(&path.display().to_string())
    )?;
    if !disable && layer == Layer::User && config.disables_in(Layer::Project, name) {
        writeln!(
            out,
            "note: the project's config still disables it here; run without --user to change that"
        )?;
    }
    Ok(())
}

/// The skills `project`'s files detect, with the files and patterns that matched.
fn detect(index: &SkillIndex, project: &Path, json: bool, out: &mut impl Write) -> Result<(), CliError> {
    if !project.is_dir() {
        return Err(CliError::new(format!(
            "project folder `{}` does not exist or is not a folder",
            project.display()
        )));
    }
    let found = index.detect_report(project);
    for d in &found {
        if json {
            writeln!(out, "{}", serde_json::to_value(d)?)?;
        } else {
            writeln!(out, "{:<28} {}", printable_line(&d.name), why_detected(d))?;
        }
    }
    if found.is_empty() && !json {
        writeln!(
            out,
            "no skill detected in {}",
            printable_line(&project.display().to_string())
        )?;
    }
    Ok(())
}

/// Every skill in rank order, one line (or JSON object) each.
fn list(index: &SkillIndex, json: bool, out: &mut impl Write) -> Result<(), CliError> {
    let listed = index
        .ranked()
        .map(|s| (s, true))
        .chain(index.disabled().iter().map(|s| (s, false)));
    for (s, enabled) in listed {
        if json {
            let v = json!({
                "name": s.name, "id": s.id, "description": s.description, "source": s.source,
                "priority": s.priority, "triggers": s.triggers, "path": s.path, "enabled": enabled,
                "inject_into": s.inject_into, "format": s.format,
            });
            writeln!(out, "{v}")?;
        } else {
            let n = s.triggers.literals().count() + s.triggers.patterns.len();
            writeln!(
                out,
                "{:<28} {:<8} {:<10} {:>4}  {:>2} triggers  {}{}",
                printable_line(&s.name),
                format!("{:?}", s.source).to_lowercase(),
                s.format.as_str(),
                s.priority,
                n,
                if enabled { "" } else { "(disabled) " },
                printable_line(&s.description)
            )?;
        }
    }
    if index.is_empty() && index.disabled().is_empty() && !json {
        writeln!(out, "no skills found")?;
    }
    Ok(())
}

/// One skill: where it comes from, its triggers and its body.
fn show(index: &SkillIndex, name: &str, json: bool, out: &mut impl Write) -> Result<(), CliError> {
    let disabled = index
        .disabled()
        .iter()
        .find(|s| s.name.eq_ignore_ascii_case(name));
    let s = index.get(name).or(disabled).ok_or_else(|| {
        CliError::new(format!(
            "no skill is named `{}`; `ctxkit skills list` shows the loaded ones",
            printable_line(name)
        ))
    })?;
    let enabled = index.get(name).is_some();
    if json {
        let mut v = serde_json::to_value(s)?;
        v["enabled"] = json!(enabled);
        writeln!(out, "{v}")?;
        return Ok(());
    }
    if !enabled {
        writeln!(
            out,
            "state:       disabled (`ctxkit skills enable {}` turns it on)",
            printable_line(&s.name)
        )?;
    }
    writeln!(
        out,
        "name:        {}\nid:          {}\npath:        {}\nsource:      {:?} (priority {})\ndescription: {}",
        printable_line(&s.name),
        printable_line(&s.id),
        printable_line(&s.path.display().to_string()),
        s.source,
        s.priority,
        printable_line(&s.description)
    )?;
    let t = &s.triggers;
    writeln!(
        out,
        "keywords:    {}\nverbs:       {}\npatterns:    {}",
        printable_line(&t.keywords.join(", ")),
        printable_line(&t.verbs.join(", ")),
        printable_line(&t.patterns.join(", "))
    )?;
    if !s.inject_into.is_empty() {
        let phases: Vec<&str> = s.inject_into.iter().map(|p| p.as_str()).collect();
        writeln!(out, "phases:      {}", phases.join(", "))?;
    }
    if !s.allowed_tools.is_empty() {
        writeln!(
            out,
            "tools:       only {} while active",
            printable_line(&s.allowed_tools.join(", "))
        )?;
    }
    if s.user_invocable == Some(false) {
        writeln!(out, "invocable:   no ($name and /name do not select it)")?;
    }
    writeln!(out, "\n{}", printable(&s.body))?;
    Ok(())
}

/// Every diagnostic, then a count; exit 1 when a skill file was skipped.
fn validate(index: &SkillIndex, json: bool, out: &mut impl Write) -> Result<(), CliError> {
    let mut advice = unknown_tools(index);
    advice.extend(crate::skills_author::common_word_triggers(index));
    for d in index.diagnostics().iter().chain(&advice) {
        if json {
            writeln!(out, "{}", serde_json::to_value(d)?)?;
        } else {
            writeln!(out, "{}", printable_line(&d.to_string()))?;
        }
    }
    let errors = index.diagnostics().iter().filter(|d| d.is_error()).count();
    let warnings = index.diagnostics().len() + advice.len() - errors;
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

/// Every departure from the agentskills.io specification, then a count; exit 1 on any.
fn validate_spec(library: &SkillLibrary, json: bool, out: &mut impl Write) -> Result<(), CliError> {
    let found = library.check_spec();
    for d in &found {
        if json {
            writeln!(out, "{}", serde_json::to_value(d)?)?;
        } else {
            writeln!(out, "{}", printable_line(&d.to_string()))?;
        }
    }
    let files: HashSet<&Path> = found.iter().map(|d| d.path.as_path()).collect();
    if !json {
        let summary = match found.len() {
            0 => "every SKILL.md follows the agentskills.io specification".to_string(),
            n => format!(
                "{n} errors against the agentskills.io specification in {} SKILL.md files",
                files.len()
            ),
        };
        writeln!(out, "{summary}")?;
    }
    if !found.is_empty() {
        return Err(CliError::quiet(format!(
            "{} SKILL.md files do not follow the specification",
            files.len()
        )));
    }
    Ok(())
}

/// The files and patterns that detected a skill, printable.
pub(crate) fn why_detected(d: &Detection) -> String {
    let mut why = format!("files: {}", printable_line(&d.files.join(", ")));
    if !d.patterns.is_empty() {
        why.push_str(&format!("; patterns: {}", printable_line(&d.patterns.join(", "))));
    }
    why
}

/// Tools agent hosts ctxkit serves provide (Claude Code, Codex, Gemini CLI), which a skill's
/// `allowed-tools` may name.
const HOST_TOOLS: &[&str] = &[
    "Read",
    "Write",
    "Edit",
    "MultiEdit",
    "Bash",
    "Grep",
    "Glob",
    "LS",
    "WebFetch",
    "WebSearch",
    "Task",
    "TodoWrite",
    "NotebookEdit",
    "NotebookRead",
    "BashOutput",
    "KillShell",
    "SlashCommand",
    "Skill",
    "shell",
    "apply_patch",
    "update_plan",
    "view_image",
    "read_file",
    "write_file",
    "replace",
    "list_directory",
    "glob",
    "search_file_content",
    "run_shell_command",
    "web_fetch",
    "google_web_search",
    "save_memory",
    "read_many_files",
];

/// A warning for each `allowed-tools` entry no registry provides: not ctxkit's own tools,
/// not a loaded skill's `tools.json`, not a host's built-in tool, not an MCP tool (`mcp__…`).
fn unknown_tools(index: &SkillIndex) -> Vec<Diagnostic> {
    let provided: Vec<&str> = ["read_skill", "read_skills"]
        .into_iter()
        .chain(HOST_TOOLS.iter().copied())
        .chain(
            index
                .skills()
                .iter()
                .flat_map(|s| s.tools.iter().map(|t| t.name())),
        )
        .collect();
    let mut found = Vec::new();
    for skill in index.skills() {
        for entry in &skill.allowed_tools {
            let name = entry.split('(').next().unwrap_or(entry).trim();
            if name.starts_with("mcp__") || provided.iter().any(|p| p.eq_ignore_ascii_case(name)) {
                continue;
            }
            found.push(Diagnostic::warning(
                &skill.path,
                None,
                format!(
                    "`allowed-tools` names `{name}`, which no tool registry provides (ctxkit's tools, the loaded skills' tools.json, the hosts' built-in tools); while `{}` is active, calls to the tools it does not name are refused",
                    skill.name
                ),
            ));
        }
    }
    found
}

/// What `rank` (the provider's selection) chooses for `message`, and why; with `explain`,
/// what counted for each skill and the skills that nearly made it.
fn match_one(
    index: &SkillIndex,
    message: &str,
    rank: impl Fn(&str) -> Ranking,
    explain: bool,
    json: bool,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let start = Instant::now();
    let Ranking { selected, near } = rank(message);
    let elapsed = start.elapsed();
    if json {
        let why: serde_json::Map<String, Value> = selected
            .iter()
            .map(|s| (s.name.clone(), json!(s.triggers)))
            .collect();
        let v = json!({
            "skills": selected.iter().map(|s| &s.name).collect::<Vec<_>>(),
            "why": why,
            "not_invocable": index.refused_invocations(&[message]),
            "selected": selected,
            "near": near,
            "elapsed_us": elapsed.as_micros() as u64,
        });
        writeln!(out, "{v}")?;
        return Ok(());
    }
    let refused = index.refused_invocations(&[message]);
    for name in &refused {
        writeln!(
            out,
            "{:<28} not selected: the skill declares `user-invocable: false`, so `$name` and `/name` do not select it",
            printable_line(name)
        )?;
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
            format!(" triggers: {}", printable_line(&s.fired().join(", ")))
        };
        writeln!(
            out,
            "{:<28} score {:>2}  {}{triggers}",
            printable_line(&s.name),
            s.score,
            reason.as_str().unwrap_or("")
        )?;
        if explain && s.evidence != Evidence::default() {
            writeln!(out, "    {}", evidence_line(&s.evidence))?;
        }
    }
    if explain {
        for n in &near {
            writeln!(out, "{:<28} not selected: {}", printable_line(&n.name), n.why)?;
            writeln!(out, "    {}", evidence_line(&n.evidence))?;
        }
    }
    Ok(())
}

/// What counted for a skill, on one line: `score 2.4 (floor 1.5): name: pdf; description:
/// rotate, merge; body: qpdf; meaning 0.52`.
fn evidence_line(e: &Evidence) -> String {
    let mut parts = vec![format!("score {:.2} (floor {:.2})", e.score, e.floor)];
    if !e.name_words.is_empty() {
        parts.push(format!("name: {}", e.name_words.join(", ")));
    }
    if !e.description_words.is_empty() {
        parts.push(format!("description: {}", e.description_words.join(", ")));
    }
    if !e.body_words.is_empty() {
        parts.push(format!("body: {}", e.body_words.join(", ")));
    }
    if let Some(m) = e.meaning {
        parts.push(format!("meaning {m:.2}"));
    }
    if !e.against.is_empty() {
        parts.push(format!("against (when_not_to_use): {}", e.against.join(", ")));
    }
    printable_line(&parts.join("; ")).into_owned()
}

/// One output line per input line, in order; a bad line gets an `error` line and exit 1 at the end.
fn match_batch(
    file: &Path,
    select: impl Fn(&str) -> Vec<Selection>,
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
        let selected = select(text);
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
