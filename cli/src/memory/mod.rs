//! `ctxkit memory`: manage project memory in a SQLite database.
//!
//! `--db FILE` (default: `$CTXKIT_MEMORY_DB`, else `memory.db` under the user's data directory
//! in `ctxkit/`) and `--project P` (default: the canonical current directory; a path that
//! exists is canonicalised, anything else is used as given) are accepted before or after the
//! subcommand. JSON output is one object per line; human-readable output passes memory text
//! (content, keywords, project, source, reasons) through [`printable`], so a memory can't drive
//! the terminal.
//!
//! A database that can't be written (a read-only file or folder) still answers `search`,
//! `list`, `get`, `stats`, `export` and `history`; a command that writes fails with one
//! sentence saying the database is read-only.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Subcommand};
use ctxkit::ChatModel;
use ctxkit_memory::{
    format_rfc3339, ExportRecord, ListOptions, MemoryCategory, MemoryContextProvider, MemoryEntry,
    MemoryError, MemoryExtractor, MemoryHook, MemorySearchRequest, MemoryStore, MemoryUpdate, NewMemoryEntry,
    OpenOptions, SearchIndex, SqliteMemoryStore, UpsertResult,
};
use serde_json::json;

use crate::printable::printable;
use crate::CliError;

impl From<MemoryError> for CliError {
    fn from(e: MemoryError) -> Self {
        CliError::new(e.to_string())
    }
}

#[derive(Args, Debug)]
pub struct MemoryArgs {
    /// The memory database (default: $CTXKIT_MEMORY_DB, else ctxkit/memory.db in the user's data directory).
    #[arg(long, value_name = "FILE", global = true)]
    pub db: Option<PathBuf>,
    /// The project the memories belong to (default: the current directory).
    #[arg(long, value_name = "P", global = true)]
    pub project: Option<String>,
    #[command(subcommand)]
    pub command: MemoryCommand,
}

#[derive(Subcommand, Debug)]
pub enum MemoryCommand {
    /// Add a memory and print its id.
    Add {
        /// preference, convention, pattern, correction or fact.
        #[arg(long, default_value = "fact", value_parser = parse_category)]
        category: MemoryCategory,
        /// 0.0-1.0.
        #[arg(long, default_value_t = 0.5)]
        importance: f32,
        /// Comma-separated keywords (default: derived from the content).
        #[arg(long, value_name = "A,B", value_delimiter = ',')]
        keywords: Vec<String>,
        /// Merge into a memory more than 0.85 similar instead of adding a near-duplicate.
        #[arg(long)]
        merge: bool,
        /// The memory (several words are joined with spaces).
        #[arg(required = true, num_args = 1..)]
        content: Vec<String>,
    },
    /// List memories, newest first.
    List {
        #[arg(long, value_parser = parse_category)]
        category: Option<MemoryCategory>,
        #[arg(long, default_value_t = 100)]
        limit: usize,
        #[arg(long, default_value_t = 0)]
        offset: usize,
        #[arg(long)]
        json: bool,
    },
    /// Find the memories relevant to a query, best first.
    Search {
        #[arg(required = true, num_args = 1..)]
        query: Vec<String>,
        #[arg(long, default_value_t = 10)]
        top_k: usize,
        #[arg(long, value_parser = parse_category)]
        category: Option<MemoryCategory>,
        #[arg(long)]
        json: bool,
    },
    /// Show one memory.
    Get {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Change a memory's content, category, importance or keywords.
    Update {
        id: String,
        #[arg(long)]
        content: Option<String>,
        #[arg(long, value_parser = parse_category)]
        category: Option<MemoryCategory>,
        #[arg(long)]
        importance: Option<f32>,
        /// Comma-separated; an empty value derives them from the content.
        #[arg(long, value_name = "A,B")]
        keywords: Option<String>,
    },
    /// Delete a memory by id, or the memories that best match a query.
    Forget {
        #[arg(required_unless_present = "query", conflicts_with = "query")]
        id: Option<String>,
        #[arg(long, value_name = "Q")]
        query: Option<String>,
    },
    /// Lower the importance of memories not accessed lately (× 0.95 per week).
    Decay,
    /// Delete memories below an importance.
    Prune {
        #[arg(long, default_value_t = 0.1)]
        min_importance: f32,
    },
    /// Merge memories that say the same thing (cosine above 0.90).
    Compact,
    /// Counts by category.
    Stats {
        #[arg(long)]
        json: bool,
    },
    /// Write the project's memories and episodic records as JSON lines (to FILE or stdout).
    Export {
        file: Option<PathBuf>,
        /// Every project in the database, not only --project.
        #[arg(long)]
        all_projects: bool,
    },
    /// Read JSON lines written by export ('-' for stdin); memories already present are skipped.
    Import {
        file: PathBuf,
        /// Keep each record's own project instead of moving it into --project.
        #[arg(long)]
        keep_projects: bool,
    },
    /// The changes to one memory, or the latest changes in the project.
    History {
        id: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[arg(long)]
        json: bool,
    },
    /// Put a memory back as it was before a history entry.
    Undo { history_id: i64 },
    /// Delete every memory of the project.
    Clear {
        /// Confirm.
        #[arg(long)]
        yes: bool,
    },
}

fn parse_category(s: &str) -> Result<MemoryCategory, String> {
    s.parse().map_err(|e: MemoryError| e.to_string())
}

/// The database used when `--db` is not given: `$CTXKIT_MEMORY_DB`, else `ctxkit/memory.db`
/// under `$XDG_DATA_HOME` (or `~/.local/share`; `~/Library/Application Support` on macOS;
/// `%APPDATA%` on Windows).
pub fn default_db() -> Result<PathBuf, CliError> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(p) = var("CTXKIT_MEMORY_DB") {
        return Ok(p);
    }
    let base = if cfg!(windows) {
        var("APPDATA").or_else(|| var("LOCALAPPDATA"))
    } else if cfg!(target_os = "macos") {
        var("HOME").map(|h| h.join("Library").join("Application Support"))
    } else {
        var("XDG_DATA_HOME")
            .filter(|p| p.is_absolute())
            .or_else(|| var("HOME").map(|h| h.join(".local").join("share")))
    };
    let base = base.ok_or_else(|| {
        CliError::new("cannot find the user's data directory (HOME is not set); pass --db FILE")
    })?;
    Ok(base.join("ctxkit").join("memory.db"))
}

/// A project key: an existing path canonicalised, anything else as given.
pub fn normalize_project(project: &str) -> String {
    match std::fs::canonicalize(project) {
        Ok(p) if !project.trim().is_empty() => p.to_string_lossy().into_owned(),
        _ => project.to_string(),
    }
}

/// Open the store at `db`, or at the default path (creating its folder), for one command:
/// searches use the on-disk full-text index only.
pub fn open_store(db: Option<&Path>) -> Result<SqliteMemoryStore, CliError> {
    open_store_with(db, SearchIndex::Off)
}

fn open_store_with(db: Option<&Path>, mode: SearchIndex) -> Result<SqliteMemoryStore, CliError> {
    let path = match db {
        Some(p) => p.to_path_buf(),
        None => {
            let p = default_db()?;
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| CliError::new(format!("cannot create `{}`: {e}", parent.display())))?;
            }
            p
        }
    };
    Ok(SqliteMemoryStore::open_with(
        &path,
        OpenOptions::default().search_index(mode),
    )?)
}

/// The memory provider for `ctxkit context` / `ctxkit chat --memory DB`, scoped to `project`.
pub fn open_provider(db: &Path, project: &str) -> Result<MemoryContextProvider, CliError> {
    let store = Arc::new(open_store_with(Some(db), SearchIndex::Background)?);
    Ok(MemoryContextProvider::new(store).with_project(normalize_project(project)))
}

/// The lifecycle hook for `ctxkit chat --memory DB`: loads and persists `project:` state and,
/// given a model, extracts memories at `/new`, `/compact` and the end of the session. Give it
/// no model with the offline dry-run model, whose replies are not extraction JSON.
pub fn open_hook(
    db: &Path,
    project: &str,
    extraction_model: Option<Arc<dyn ChatModel>>,
) -> Result<MemoryHook, CliError> {
    let store: Arc<dyn MemoryStore> = Arc::new(open_store_with(Some(db), SearchIndex::Background)?);
    let hook = MemoryHook::new(store.clone()).with_project(normalize_project(project));
    Ok(match extraction_model {
        Some(model) => hook.with_extractor(MemoryExtractor::new(model, store)),
        None => hook,
    })
}

fn line(e: &MemoryEntry) -> String {
    format!(
        "{}  {} {}  (importance {:.2})",
        printable(&e.id),
        e.category.badge(),
        printable(&e.content),
        e.importance
    )
}

/// The memory `id`, which must belong to `project`.
async fn get_in(store: &SqliteMemoryStore, id: &str, project: &str) -> Result<MemoryEntry, CliError> {
    match store.get(id).await? {
        Some(e) if e.project_path == project => Ok(e),
        Some(_) => Err(MemoryError::WrongProject {
            id: id.to_string(),
            project: project.to_string(),
        }
        .into()),
        None => Err(MemoryError::NotFound(id.to_string()).into()),
    }
}

/// An `f32` as the JSON number it prints as (`0.9`, not `0.8999999761581421`).
fn short(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

fn write_json(out: &mut impl Write, value: &impl serde::Serialize) -> Result<(), CliError> {
    serde_json::to_writer(&mut *out, value)?;
    writeln!(out)?;
    Ok(())
}

pub async fn run(args: MemoryArgs) -> Result<(), CliError> {
    // The project as typed, before it is canonicalised (and never echoed).
    if let Some(found) = args
        .project
        .as_deref()
        .and_then(ctxkit_memory::secrets::find_secret)
    {
        return Err(CliError::new(format!(
            "refused to use this --project: it contains what looks like {} (rule `{}`); secrets are never stored",
            found.description, found.rule
        )));
    }
    let store = open_store(args.db.as_deref())?;
    let project = match &args.project {
        Some(p) => normalize_project(p),
        None => crate::setup::default_project()?,
    };
    let project = project.as_str();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match args.command {
        MemoryCommand::Add {
            category,
            importance,
            keywords,
            merge,
            content,
        } => {
            let entry = NewMemoryEntry::new(project, category, content.join(" "))
                .importance(importance)
                .keywords(keywords)
                .context("added with the ctxkit CLI");
            if !merge {
                let e = store.add(entry).await?;
                writeln!(out, "{}", e.id)?;
                return Ok(());
            }
            match store.upsert(entry).await? {
                UpsertResult::Inserted(e) => writeln!(out, "{}", e.id)?,
                UpsertResult::Merged {
                    merged, similarity, ..
                } => {
                    eprintln!(
                        "merged into memory {} (similarity {similarity:.2})",
                        printable(&merged.id)
                    );
                    writeln!(out, "{}", merged.id)?;
                }
                UpsertResult::Skipped { reason, existing_id } => {
                    eprintln!("nothing added: {}", printable(&reason));
                    if let Some(id) = existing_id {
                        writeln!(out, "{id}")?;
                    }
                }
            }
        }
        MemoryCommand::List {
            category,
            limit,
            offset,
            json,
        } => {
            let options = ListOptions {
                category,
                limit,
                offset,
                ..ListOptions::default()
            };
            for e in store.list(project, options).await? {
                if json {
                    write_json(&mut out, &e)?;
                } else {
                    writeln!(out, "{}", line(&e))?;
                }
            }
        }
        MemoryCommand::Search {
            query,
            top_k,
            category,
            json,
        } => {
            let mut request = MemorySearchRequest::new(project, query.join(" ")).top_k(top_k);
            if let Some(c) = category {
                request = request.categories([c]);
            }
            for hit in store.search(request).await? {
                let e = &hit.entry;
                if json {
                    write_json(
                        &mut out,
                        &json!({
                            "id": e.id,
                            "category": e.category,
                            "content": e.content,
                            "importance": short(e.importance),
                            "score": short(hit.relevance_score),
                        }),
                    )?;
                } else {
                    writeln!(
                        out,
                        "{}  {} {}  (score {:.3}, importance {:.2})",
                        printable(&e.id),
                        e.category.badge(),
                        printable(&e.content),
                        hit.relevance_score,
                        e.importance
                    )?;
                }
            }
        }
        MemoryCommand::Get { id, json } => {
            let e = get_in(&store, &id, project).await?;
            if json {
                write_json(&mut out, &e)?;
            } else {
                writeln!(out, "id:            {}", printable(&e.id))?;
                writeln!(out, "project:       {}", printable(&e.project_path))?;
                writeln!(out, "category:      {} {}", e.category, e.category.badge())?;
                writeln!(out, "content:       {}", printable(&e.content))?;
                writeln!(out, "keywords:      {}", printable(&e.keywords.join(", ")))?;
                writeln!(out, "importance:    {:.3}", e.importance)?;
                writeln!(out, "accesses:      {}", e.access_count)?;
                writeln!(out, "created:       {}", format_rfc3339(e.created_at))?;
                writeln!(out, "updated:       {}", format_rfc3339(e.updated_at))?;
                writeln!(out, "last accessed: {}", format_rfc3339(e.last_accessed_at))?;
                if let Some(s) = &e.source_session_id {
                    writeln!(out, "session:       {}", printable(s))?;
                }
                if let Some(c) = &e.source_context {
                    writeln!(out, "source:        {}", printable(c))?;
                }
            }
        }
        MemoryCommand::Update {
            id,
            content,
            category,
            importance,
            keywords,
        } => {
            get_in(&store, &id, project).await?;
            let keywords = keywords.map(|k| {
                k.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
            });
            let update = MemoryUpdate {
                content,
                category,
                importance,
                keywords,
            };
            if update == MemoryUpdate::default() {
                return Err(CliError::new(
                    "nothing to update; give --content, --category, --importance or --keywords",
                ));
            }
            let e = store.update(&id, update).await?;
            writeln!(out, "{}", line(&e))?;
        }
        MemoryCommand::Forget { id, query } => {
            let gone = match (id, query) {
                (Some(id), _) => {
                    get_in(&store, &id, project).await?;
                    vec![store.delete(&id).await?]
                }
                (None, Some(q)) => store.forget(project, &q).await?,
                (None, None) => return Err(CliError::new("give a memory id or --query Q")),
            };
            if gone.is_empty() {
                eprintln!("no memory matched; nothing was forgotten");
            }
            for e in gone {
                writeln!(out, "forgot {}", line(&e))?;
            }
        }
        MemoryCommand::Decay => {
            let n = store.decay(project).await?;
            writeln!(out, "decayed {n} memories")?;
        }
        MemoryCommand::Prune { min_importance } => {
            let n = store.prune(project, min_importance).await?;
            writeln!(out, "pruned {n} memories below importance {min_importance}")?;
        }
        MemoryCommand::Compact => {
            let n = store.compact(project).await?;
            writeln!(out, "merged {n} memories into similar ones")?;
        }
        MemoryCommand::Stats { json } => {
            let stats = store.stats(project).await?;
            if json {
                write_json(&mut out, &stats)?;
            } else {
                writeln!(out, "project: {}", printable(&stats.project_path))?;
                writeln!(out, "total: {}", stats.total)?;
                for (category, n) in &stats.by_category {
                    writeln!(out, "  {category}: {n}")?;
                }
                writeln!(out, "average importance: {:.2}", stats.average_importance)?;
                writeln!(out, "accesses: {}", stats.total_accesses)?;
                writeln!(out, "episodic records: {}", stats.episodes)?;
                writeln!(out, "history entries: {}", stats.history_entries)?;
            }
        }
        MemoryCommand::Export { file, all_projects } => {
            let records = store
                .export(if all_projects { None } else { Some(project) })
                .await?;
            match file {
                None => ExportRecord::write_jsonl(&records, &mut out)?,
                Some(path) => {
                    let f = std::fs::File::create(&path)
                        .map_err(|e| CliError::new(format!("cannot write `{}`: {e}", path.display())))?;
                    ExportRecord::write_jsonl(&records, std::io::BufWriter::new(f))
                        .map_err(|e| CliError::new(format!("cannot write `{}`: {e}", path.display())))?;
                    eprintln!("exported {} records to {}", records.len(), path.display());
                }
            }
        }
        MemoryCommand::Import { file, keep_projects } => {
            let reader: Box<dyn BufRead> = if file.as_os_str() == "-" {
                Box::new(BufReader::new(std::io::stdin()))
            } else {
                let f = std::fs::File::open(&file)
                    .map_err(|e| CliError::new(format!("cannot read `{}`: {e}", file.display())))?;
                Box::new(BufReader::new(f))
            };
            let records = ExportRecord::read_jsonl(reader)
                .map_err(|e| CliError::new(format!("{}: {e}", file.display())))?;
            let target = if keep_projects { None } else { Some(project) };
            let report = store
                .import(records, target)
                .await
                .map_err(|e| CliError::new(format!("{}: {e}", file.display())))?;
            writeln!(
                out,
                "imported {} memories ({} already present, {} under new ids) and {} episodic records ({} already present)",
                report.memories_added,
                report.memories_skipped,
                report.memories_renamed,
                report.episodes_added,
                report.episodes_skipped
            )?;
        }
        MemoryCommand::History { id, limit, json } => {
            let entries = match &id {
                Some(id) => {
                    // Only this project's history: another project's memory is "not found".
                    let all = store.history(project, id).await?;
                    if all.is_empty() {
                        return Err(MemoryError::NotFound(id.clone()).into());
                    }
                    all
                }
                None => store.project_history(project, limit).await?,
            };
            for h in entries {
                if json {
                    write_json(&mut out, &h)?;
                } else {
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
                        printable(&h.memory_id),
                        printable(content),
                        h.reason
                            .map(|r| format!("  ({})", printable(&r)))
                            .unwrap_or_default()
                    )?;
                }
            }
        }
        MemoryCommand::Undo { history_id } => {
            // Scoped by the store: an entry of another project is "not found" and never undone.
            match store.undo(project, history_id).await? {
                Some(e) => writeln!(out, "restored {}", line(&e))?,
                None => writeln!(out, "removed the memory again (undid its insert)")?,
            }
        }
        MemoryCommand::Clear { yes } => {
            if !yes {
                return Err(CliError::new(format!(
                    "clear deletes every memory of project `{project}`; pass --yes to confirm"
                )));
            }
            let n = store.clear(project).await?;
            writeln!(out, "cleared {n} memories")?;
        }
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser, Debug)]
    struct Harness {
        #[command(subcommand)]
        command: Top,
    }

    #[derive(clap::Subcommand, Debug)]
    enum Top {
        Memory(MemoryArgs),
    }

    fn parse(args: &[&str]) -> MemoryArgs {
        let Top::Memory(m) = Harness::try_parse_from(["ctxkit", "memory"].iter().chain(args))
            .unwrap()
            .command;
        m
    }

    #[test]
    fn db_and_project_go_before_or_after_the_subcommand() {
        for args in [
            &["--db", "x.db", "--project", "/p", "stats"][..],
            &["stats", "--db", "x.db", "--project", "/p"][..],
            &["--db", "x.db", "stats", "--project", "/p"][..],
        ] {
            let m = parse(args);
            assert_eq!(m.db.as_deref(), Some(Path::new("x.db")), "{args:?}");
            assert_eq!(m.project.as_deref(), Some("/p"), "{args:?}");
            assert!(matches!(m.command, MemoryCommand::Stats { json: false }));
        }
        let m = parse(&["add", "--category", "pref", "--keywords", "a,b", "use", "pnpm"]);
        match m.command {
            MemoryCommand::Add {
                category,
                keywords,
                content,
                ..
            } => {
                assert_eq!(category, MemoryCategory::Preference);
                assert_eq!(keywords, ["a", "b"]);
                assert_eq!(content.join(" "), "use pnpm");
            }
            other => panic!("{other:?}"),
        }
        assert!(Harness::try_parse_from(["ctxkit", "memory", "add", "--category", "opinion", "x"]).is_err());
        assert!(Harness::try_parse_from(["ctxkit", "memory", "forget", "id1", "--query", "q"]).is_err());
    }

    #[test]
    fn projects_are_canonical_paths_or_names() {
        let dir = tempfile::tempdir().unwrap();
        let canonical = std::fs::canonicalize(dir.path()).unwrap();
        let dotted = dir.path().join(".");
        assert_eq!(
            normalize_project(dotted.to_str().unwrap()),
            canonical.to_string_lossy()
        );
        assert_eq!(normalize_project("my-project"), "my-project");
    }

    #[tokio::test]
    async fn commands_write_where_they_are_told() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("m.db");
        let db_arg = db.to_str().unwrap();
        run(parse(&[
            "--db",
            db_arg,
            "--project",
            "/p",
            "add",
            "Always",
            "use",
            "pnpm",
        ]))
        .await
        .unwrap();
        let secret = format!("password={}", "hunter22");
        let err = run(parse(&["--db", db_arg, "--project", "/p", "add", &secret]))
            .await
            .unwrap_err();
        assert!(err.message.contains("password-assignment") && !err.message.contains("hunter22"));
        let store = SqliteMemoryStore::open(&db).unwrap();
        assert_eq!(store.count("/p").await.unwrap(), 1);
        let file = dir.path().join("out.jsonl");
        run(parse(&[
            "--db",
            db_arg,
            "--project",
            "/p",
            "export",
            file.to_str().unwrap(),
        ]))
        .await
        .unwrap();
        let other = dir.path().join("other.db");
        for _ in 0..2 {
            run(parse(&[
                "--db",
                other.to_str().unwrap(),
                "--project",
                "/p",
                "import",
                file.to_str().unwrap(),
            ]))
            .await
            .unwrap();
        }
        let store = SqliteMemoryStore::open(&other).unwrap();
        assert_eq!(
            store.count("/p").await.unwrap(),
            1,
            "importing twice adds nothing"
        );
        let err = run(parse(&["--db", db_arg, "--project", "/q", "clear"]))
            .await
            .unwrap_err();
        assert!(err.message.contains("--yes"));
        assert!(short(0.9) == 0.9);
    }
}
