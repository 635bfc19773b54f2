//! Learned skills in the CLI. The memory database is where they live; a project's *accepted*
//! ones are also written, as plain SKILL.md files, into a folder of the cache that every
//! command loads as a skill root of the `learned` tier — so matching, detection, toggles,
//! `read_skill`, MCP, the hooks and the page treat them as the skills they are. The folder is
//! brought in step with the database by [`sync`] whenever a command that opens the database
//! starts, and after every change made here.
//!
//! `ctxkit skills learned list|show|accept|reject|export` review them; `ctxkit skills learn
//! --transcript FILE` learns from a Claude Code transcript, a Codex rollout or a ctxkit session
//! record.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use ctxkit_learn::{Learned, Trajectory};
use ctxkit_memory::{LearnedChange, LearnedSkill, LearnedStatus, MemoryStore};
use ctxkit_skills::{SkillLibrary, SkillRoot, Source};
use serde_json::json;

use crate::error::CliError;
use crate::memory::open::{
    default_project, memory_db_path, normalize_project, open_store, open_store_read_only, server_url,
    skill_learner,
};
use crate::printable::{printable, printable_line};

/// The database and project learned skills are read from and written to.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct Scope {
    /// The memory database holding the learned skills, a SQLite file or a postgres:// URL
    /// (default: the one `ctxkit memory` uses).
    #[arg(long, value_name = "DB", global = true)]
    pub memory: Option<PathBuf>,
    /// The project: the one the learned skills belong to, and the folder `skills detect`
    /// reads (default: the current directory).
    #[arg(long, value_name = "P", global = true)]
    pub project: Option<String>,
}

impl Scope {
    /// The database and the project.
    pub(crate) fn resolve(&self) -> Result<(PathBuf, String), CliError> {
        let project = self
            .project
            .as_deref()
            .map_or_else(default_project, |p| Ok(normalize_project(p)))?;
        Ok((memory_db_path(self.memory.as_deref())?, project))
    }
}

/// Where `project`'s accepted learned skills from `db` are written: one folder per database and
/// project in the cache folder; `None` without a cache folder.
pub(crate) fn folder(db: &Path, project: &str) -> Option<PathBuf> {
    use sha2::{Digest, Sha256};
    // A stable name, the same in every process and version, that shows neither (a database
    // URL may hold a password).
    let mut hash = Sha256::new();
    hash.update(db.to_string_lossy().as_bytes());
    hash.update([0]);
    hash.update(project.as_bytes());
    let name: String = hash.finalize()[..8].iter().map(|b| format!("{b:02x}")).collect();
    Some(crate::places::cache_dir()?.join("learned").join(name))
}

/// The root that loads the accepted learned skills of `project` from `db` (none yet is fine).
pub(crate) fn root(db: &Path, project: &str) -> Option<SkillRoot> {
    Some(SkillRoot::new(folder(db, project)?, Source::Learned).optional())
}

/// Bring `project`'s folder in step with `store`: each accepted skill's SKILL.md written (only
/// when it changed), every other skill folder removed. Only plain names are written (the store
/// refuses any other, and a row a shared database got from elsewhere is skipped), so every path
/// stays inside the folder.
pub(crate) async fn sync(store: &dyn MemoryStore, db: &Path, project: &str) -> Result<(), CliError> {
    let Some(folder) = folder(db, project) else {
        return Ok(());
    };
    let accepted: Vec<LearnedSkill> = store
        .learned_skills(project)
        .await?
        .into_iter()
        .filter(|s| s.status == LearnedStatus::Accepted && LearnedSkill::is_plain_name(&s.name))
        .collect();
    if accepted.is_empty() && !folder.exists() {
        return Ok(());
    }
    let failed = |e: std::io::Error| {
        CliError::caused_by(
            format!("cannot write the learned skills into {}: {e}", folder.display()),
            e,
        )
    };
    std::fs::create_dir_all(&folder).map_err(failed)?;
    for skill in &accepted {
        let file = folder.join(&skill.name).join("SKILL.md");
        if std::fs::read_to_string(&file).ok().as_deref() != Some(skill.text.as_str()) {
            std::fs::create_dir_all(folder.join(&skill.name)).map_err(failed)?;
            std::fs::write(&file, &skill.text).map_err(failed)?;
        }
    }
    for entry in std::fs::read_dir(&folder).map_err(failed)?.flatten() {
        let name = entry.file_name();
        if !accepted.iter().any(|s| name == s.name.as_str()) {
            std::fs::remove_dir_all(entry.path()).map_err(failed)?;
        }
    }
    Ok(())
}

/// [`sync`] for a command that loads skills: the database when it exists (a command that only
/// reads skills does not create one), a failure a warning (the last synced skills load).
/// `read_only`: the database is opened for reading only (`--read-only`).
pub(crate) async fn sync_before_loading(db: Option<&Path>, project: &str, read_only: bool) {
    let Some(db) = db else { return };
    if server_url(db).ok().flatten().is_none() && !db.is_file() {
        return;
    }
    let synced = async {
        let store = if read_only {
            open_store_read_only(Some(db))?
        } else {
            open_store(Some(db))?
        };
        sync(&*store, db, project).await
    };
    if let Err(e) = synced.await {
        tracing::warn!("the learned skills may be out of date: {}", e.message());
    }
}

#[derive(Subcommand, Debug)]
pub(crate) enum LearnedCommand {
    /// The project's learned skills: name, status, uses and success rate, description.
    List {
        #[arg(long)]
        json: bool,
    },
    /// One learned skill: what is known about it, then its SKILL.md.
    Show { name: String },
    /// Accept a proposed skill: from now on it is a skill like any other, in the learned tier.
    Accept { name: String },
    /// Reject a skill: never injected, and not proposed again.
    Reject { name: String },
    /// Write the skill as DIR/NAME/SKILL.md, to move it into the repository.
    Export { name: String, dir: PathBuf },
}

/// `ctxkit skills learned …`.
pub(crate) async fn run(
    scope: &Scope,
    command: LearnedCommand,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let (db, project) = scope.resolve()?;
    let store = open_store(Some(&db))?;
    let skills = store.learned_skills(&project).await?;
    let find = |name: &str| {
        skills.iter().find(|s| s.name == name).ok_or_else(|| {
            CliError::new(format!(
                "no learned skill of this project is named `{}`",
                printable_line(name)
            ))
        })
    };
    match command {
        LearnedCommand::List { json } => {
            for s in &skills {
                if json {
                    writeln!(
                        out,
                        "{}",
                        json!({"name": s.name, "status": s.status.as_str(), "uses": s.uses,
                               "success_rate": s.success_rate(), "description": s.description,
                               "triggers": s.triggers, "sessions": s.sessions.len()})
                    )?;
                } else {
                    writeln!(
                        out,
                        "{:<28} {:<9} {:>4} uses {:>5}  {}",
                        printable_line(&s.name),
                        s.status.as_str(),
                        s.uses,
                        s.success_rate()
                            .map_or_else(|| "-".to_string(), |r| format!("{:.0}%", r * 100.0)),
                        printable_line(&s.description)
                    )?;
                }
            }
            if skills.is_empty() && !json {
                writeln!(out, "no learned skills in this project yet")?;
            }
        }
        LearnedCommand::Show { name } => {
            let s = find(&name)?;
            writeln!(out, "status:   {}", s.status.as_str())?;
            writeln!(out, "triggers: {}", printable_line(&s.triggers.join(", ")))?;
            writeln!(out, "sessions: {}", s.sessions.len())?;
            writeln!(out, "uses:     {}", s.uses)?;
            writeln!(out)?;
            write!(out, "{}", printable(&s.text))?;
        }
        LearnedCommand::Accept { name } => {
            find(&name)?;
            review(&*store, &db, &project, &name, LearnedStatus::Accepted).await?;
            writeln!(
                out,
                "{} accepted: it is now a skill of this project (learned tier)",
                printable_line(&name)
            )?;
        }
        LearnedCommand::Reject { name } => {
            find(&name)?;
            review(&*store, &db, &project, &name, LearnedStatus::Rejected).await?;
            writeln!(
                out,
                "{} rejected: it will not be injected or proposed again",
                printable_line(&name)
            )?;
        }
        LearnedCommand::Export { name, dir } => {
            let s = find(&name)?;
            if !LearnedSkill::is_plain_name(&s.name) {
                return Err(CliError::new(
                    "this learned skill's name is not a plain folder name; it is not written anywhere",
                ));
            }
            let target = dir.join(&s.name);
            std::fs::create_dir_all(&target)
                .and_then(|()| std::fs::write(target.join("SKILL.md"), &s.text))
                .map_err(|e| CliError::caused_by(format!("cannot write {}: {e}", target.display()), e))?;
            writeln!(
                out,
                "wrote {}",
                printable_line(&target.join("SKILL.md").display().to_string())
            )?;
        }
    }
    Ok(())
}

/// Writes each session that ends as `DIR/SESSION.jsonl`, a record `ctxkit skills learn
/// --transcript` reads (`ctxkit chat --record DIR`).
pub(crate) struct RecordSessions(pub PathBuf);

#[async_trait::async_trait]
impl ctxkit::Hook for RecordSessions {
    fn name(&self) -> &str {
        "record-sessions"
    }

    async fn session_end(
        &self,
        _ctx: &mut ctxkit::HookContext<'_>,
        summary: &ctxkit::SessionSummary,
    ) -> Result<(), ctxkit::BoxError> {
        // A plain file name whatever the thread's id.
        let name: String = summary
            .thread_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let file = self.0.join(format!("{name}.jsonl"));
        std::fs::create_dir_all(&self.0)
            .and_then(|()| std::fs::write(&file, Trajectory::record(summary)))
            .map_err(|e| format!("the session record {} was not written: {e}", file.display()).into())
    }
}

/// Set a skill's review status and bring the folder in step.
pub(crate) async fn review(
    store: &dyn MemoryStore,
    db: &Path,
    project: &str,
    name: &str,
    status: LearnedStatus,
) -> Result<(), CliError> {
    store
        .change_learned_skill(project, name, LearnedChange::Review(status))
        .await?;
    sync(store, db, project).await
}

#[derive(Args, Debug)]
pub(crate) struct LearnArgs {
    /// A finished session: a Claude Code transcript, a Codex rollout or a ctxkit session
    /// record (`ctxkit chat --record DIR`), all JSON lines.
    #[arg(long, value_name = "FILE")]
    pub transcript: PathBuf,
    #[command(flatten)]
    pub model: crate::model_args::ModelArgs,
}

/// The most bytes of a transcript read.
const MAX_TRANSCRIPT: u64 = 64 * 1024 * 1024;

/// `ctxkit skills learn --transcript FILE`: the same criteria and checks as a session end.
pub(crate) async fn learn(
    scope: &Scope,
    args: LearnArgs,
    library: std::sync::Arc<SkillLibrary>,
    options: ctxkit_learn::LearnOptions,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let model = args.model.model()?;
    if model.name() == "dry-run" {
        return Err(CliError::new(
            "learning a skill needs a model: pass --model (e.g. openai:gpt-4o-mini)",
        ));
    }
    let text = crate::text_file::read_regular_text(&args.transcript, MAX_TRANSCRIPT)?;
    let trajectory = Trajectory::read(&text).ok_or_else(|| {
        CliError::new(format!(
            "{} is not a Claude Code transcript, a Codex rollout or a ctxkit session record",
            args.transcript.display()
        ))
    })?;
    let (db, project) = scope.resolve()?;
    let store = open_store(Some(&db))?;
    let learner = skill_learner(model, store.shared(), library, project.clone(), options)?;
    let learned = learner
        .learn(&trajectory)
        .await
        .map_err(|e| CliError::new(format!("no skill learned: {e}")))?;
    sync(&*store, &db, &project).await?;
    let line = match learned {
        Learned::NotEligible(why) => format!("not learned from: {}", printable_line(&why)),
        Learned::Declined => "the model found nothing reusable in the session".into(),
        Learned::Dropped(why) => format!("nothing kept: {}", printable_line(&why)),
        Learned::Exists(name) => format!(
            "nothing kept: skill `{}` already covers it",
            printable_line(&name)
        ),
        Learned::New(s) => format!(
            "{} {}: review it with `ctxkit skills learned show {}`",
            printable_line(&s.name),
            s.status.as_str(),
            printable_line(&s.name)
        ),
        Learned::Refined(s) => format!(
            "{} refined: learned again from this session",
            printable_line(&s.name)
        ),
    };
    writeln!(out, "{line}")?;
    Ok(())
}
