//! `ctxkit memory`: manage project memory in a SQLite database or on a PostgreSQL server.
//!
//! `--db FILE|URL` (default: `$CTXKIT_MEMORY_DB`, else `memory.db` under the user's data
//! directory in `ctxkit/`; a `postgres://` or `postgresql://` URL names a server, and every
//! command, maintenance included, works on both) and `--project P` (default: the canonical current directory; a path that
//! exists is canonicalised, anything else is used as given) are accepted before or after the
//! subcommand. JSON output is one object per line; human-readable output passes memory text
//! (content, keywords, project, source, reasons) through [`printable_line`], so a memory can't drive
//! the terminal.
//!
//! A database that can't be written (a read-only file or folder) still answers `search`,
//! `list`, `get`, `stats`, `export` and `history`; a command that writes fails with one
//! sentence saying the database is read-only.
//!
//! [`open`] finds the database and the project (other commands build their memory provider
//! and hook there too); [`output`] prints.

pub(crate) mod open;
pub(crate) mod output;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use ctxkit_memory::records::ExportRecord;
use ctxkit_memory::{
    ListOptions, MemoryCategory, MemoryEntry, MemoryError, MemorySearchRequest, MemoryUpdate, NewMemoryEntry,
    UpsertResult,
};
use ctxkit_secrets::find_secret;

pub(crate) use self::open::Store;
use self::open::{default_project, normalize_project, open_store};
pub(crate) use self::output::format_rfc3339;
use crate::error::CliError;
use crate::printable::printable_line;

#[derive(Args, Debug)]
pub(crate) struct MemoryArgs {
    /// The memory database: a SQLite file, or a PostgreSQL server as a postgres:// URL (default: $CTXKIT_MEMORY_DB, else ctxkit/memory.db in the user's data directory).
    #[arg(long, value_name = "FILE|URL", global = true)]
    pub db: Option<PathBuf>,
    /// The project the memories belong to (default: the current directory).
    #[arg(long, value_name = "P", global = true)]
    pub project: Option<String>,
    #[command(subcommand)]
    pub command: MemoryCommand,
}

#[derive(Subcommand, Debug)]
pub(crate) enum MemoryCommand {
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
        /// Also superseded memories (replaced by newer ones, kept for history and undo).
        #[arg(long)]
        all: bool,
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
    /// Store the search terms of the project's memories written by a version of ctxkit that
    /// did not, and give every memory a sentence vector of the embedding model (--embeddings,
    /// $CTXKIT_EMBEDDINGS or `[memory] embeddings` in the user config) when one is configured:
    /// those written before it was, or by another model. Progress goes to stderr.
    Reindex,
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
    /// Read JSON lines ('-' for stdin): records written by export, or minimal ones such as
    /// {"content": "…", "category": "preference"}; memories already present are skipped.
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

/// The memory `id`, which must belong to `project`.
async fn get_in(store: &Store, id: &str, project: &str) -> Result<MemoryEntry, CliError> {
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

/// Memories embedded and written per transaction by `reindex` (about a second of work each).
const REINDEX_PAGE: usize = 256;
/// Memories whose terms `reindex` stores per transaction: tokenizing is quick, and each page
/// walks the project's rows from the first.
const TERMS_PAGE: usize = 10_000;

/// Run one `ctxkit memory` command.
pub(crate) async fn run(args: MemoryArgs) -> Result<(), CliError> {
    // The project as typed, before it is canonicalised (and never echoed).
    if let Some(found) = args.project.as_deref().and_then(find_secret) {
        return Err(CliError::new(format!(
            "refused to use this --project: it contains what looks like {} (rule `{}`); secrets are never stored",
            found.description, found.rule
        )));
    }
    let store = open_store(args.db.as_deref())?;
    let project = match &args.project {
        Some(p) => normalize_project(p),
        None => default_project()?,
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    execute(&store, &project, args.command, &mut out).await?;
    out.flush()?;
    Ok(())
}

/// Carry out `command` on `project`, printing to `out`.
async fn execute(
    store: &Store,
    project: &str,
    command: MemoryCommand,
    out: &mut impl Write,
) -> Result<(), CliError> {
    match command {
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
            add(store, entry, merge, out).await?;
        }
        MemoryCommand::List {
            category,
            all,
            limit,
            offset,
            json,
        } => {
            let options = ListOptions {
                category,
                limit,
                offset,
                include_superseded: all,
                ..ListOptions::default()
            };
            list(store, project, options, json, out).await?;
        }
        MemoryCommand::Search {
            query,
            top_k,
            category,
            json,
        } => {
            let mut request = MemorySearchRequest::new(project, query.join(" ")).top_k(top_k);
            request.categories = category.map(|c| vec![c]);
            for hit in store.search(request).await? {
                output::search_hit(out, &hit, json)?;
            }
        }
        MemoryCommand::Get { id, json } => {
            let e = get_in(store, &id, project).await?;
            output::entry(out, &e, json)?;
        }
        MemoryCommand::Update {
            id,
            content,
            category,
            importance,
            keywords,
        } => {
            let update = MemoryUpdate {
                content,
                category,
                importance,
                keywords: keywords.as_deref().map(keyword_list),
            };
            update_in(store, &id, project, update, out).await?;
        }
        MemoryCommand::Forget { id, query } => forget(store, project, id, query, out).await?,
        MemoryCommand::Decay => writeln!(out, "decayed {} memories", store.decay(project).await?)?,
        MemoryCommand::Prune { min_importance } => writeln!(
            out,
            "pruned {} memories below importance {min_importance}",
            store.prune(project, min_importance).await?
        )?,
        MemoryCommand::Compact => writeln!(
            out,
            "merged {} memories into similar ones",
            store.compact(project).await?
        )?,
        MemoryCommand::Reindex => {
            let mut stored = 0;
            loop {
                let step = store.fill_terms(project, TERMS_PAGE).await?;
                if step == 0 {
                    break;
                }
                stored += step;
                eprintln!("stored the terms of {stored} memories…");
            }
            writeln!(out, "stored the terms of {stored} memories")?;
            if crate::embeddings::embedder()?.is_none() {
                eprintln!("no sentence-embedding model is configured (--embeddings DIR): no vectors given");
                return Ok(());
            }
            let mut done = 0;
            loop {
                let step = store.embed_missing(project, REINDEX_PAGE).await?;
                if step == 0 {
                    break;
                }
                done += step;
                eprintln!("reindexed {done} memories…");
            }
            writeln!(out, "gave {done} memories a sentence vector")?;
        }
        MemoryCommand::Stats { json } => output::stats(out, &store.stats(project).await?, json)?,
        MemoryCommand::Export { file, all_projects } => {
            let scope = if all_projects { None } else { Some(project) };
            export(store, scope, file, out).await?;
        }
        MemoryCommand::Import { file, keep_projects } => {
            let target = if keep_projects { None } else { Some(project) };
            import(store, &file, target, out).await?;
        }
        MemoryCommand::History { id, limit, json } => history(store, project, id, limit, json, out).await?,
        MemoryCommand::Undo { history_id } => {
            // Scoped by the store: an entry of another project is "not found" and never undone.
            match store.undo(project, history_id).await? {
                Some(e) => writeln!(out, "restored {}", output::line(&e))?,
                None => writeln!(out, "removed the memory again (undid its insert)")?,
            }
        }
        MemoryCommand::Clear { yes: false } => {
            return Err(CliError::new(format!(
                "clear deletes every memory of project `{project}`; pass --yes to confirm"
            )));
        }
        MemoryCommand::Clear { yes: true } => {
            writeln!(out, "cleared {} memories", store.clear(project).await?)?
        }
    }
    Ok(())
}

/// Memories of `project`, one per line (or JSON object).
async fn list(
    store: &Store,
    project: &str,
    options: ListOptions,
    json: bool,
    out: &mut impl Write,
) -> Result<(), CliError> {
    for e in store.list(project, options).await? {
        if json {
            output::write_json(out, &e)?;
        } else {
            writeln!(out, "{}", output::line(&e))?;
        }
    }
    Ok(())
}

/// Add a memory, or with `merge` upsert it; prints the id that now holds it.
async fn add(
    store: &Store,
    entry: NewMemoryEntry,
    merge: bool,
    out: &mut impl Write,
) -> Result<(), CliError> {
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
                printable_line(&merged.id)
            );
            writeln!(out, "{}", merged.id)?;
        }
        UpsertResult::Skipped { reason, existing_id } => {
            eprintln!("nothing added: {}", printable_line(&reason));
            if let Some(id) = existing_id {
                writeln!(out, "{id}")?;
            }
        }
    }
    Ok(())
}

/// Change the memory `id` of `project`.
async fn update_in(
    store: &Store,
    id: &str,
    project: &str,
    update: MemoryUpdate,
    out: &mut impl Write,
) -> Result<(), CliError> {
    get_in(store, id, project).await?;
    if update == MemoryUpdate::default() {
        return Err(CliError::new(
            "nothing to update; give --content, --category, --importance or --keywords",
        ));
    }
    let e = store.update(id, update).await?;
    writeln!(out, "{}", output::line(&e))?;
    Ok(())
}

/// Delete the memory `id` of `project`, or the memories that best match `query`.
async fn forget(
    store: &Store,
    project: &str,
    id: Option<String>,
    query: Option<String>,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let gone = match (id, query) {
        (Some(id), _) => {
            get_in(store, &id, project).await?;
            vec![store.delete(&id).await?]
        }
        (None, Some(q)) => store.forget(project, &q).await?,
        (None, None) => return Err(CliError::new("give a memory id or --query Q")),
    };
    if gone.is_empty() {
        eprintln!("no memory matched; nothing was forgotten");
    }
    for e in gone {
        writeln!(out, "forgot {}", output::line(&e))?;
    }
    Ok(())
}

/// Write the records of `project` (or of every project) as JSON lines to `file` or `out`.
async fn export(
    store: &Store,
    project: Option<&str>,
    file: Option<PathBuf>,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let records = store.export(project).await?;
    let Some(path) = file else {
        ExportRecord::write_jsonl(&records, out)?;
        return Ok(());
    };
    let cannot =
        |e: std::io::Error| CliError::caused_by(format!("cannot write `{}`: {e}", path.display()), e);
    let f = std::fs::File::create(&path).map_err(cannot)?;
    ExportRecord::write_jsonl(&records, std::io::BufWriter::new(f)).map_err(cannot)?;
    eprintln!("exported {} records to {}", records.len(), path.display());
    Ok(())
}

/// Read JSON lines from `file` ('-' for stdin) into `target` (or each record's own project).
async fn import(
    store: &Store,
    file: &Path,
    target: Option<&str>,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let reader: Box<dyn BufRead> = if file.as_os_str() == "-" {
        Box::new(BufReader::new(std::io::stdin()))
    } else {
        let f = std::fs::File::open(file)
            .map_err(|e| CliError::caused_by(format!("cannot read `{}`: {e}", file.display()), e))?;
        Box::new(BufReader::new(f))
    };
    let in_file = |e: MemoryError| CliError::caused_by(format!("{}: {e}", file.display()), e);
    let records = ExportRecord::read_jsonl(reader).map_err(in_file)?;
    let memories = records
        .iter()
        .filter(|r| matches!(r, ExportRecord::Memory(_)))
        .count();
    if memories >= 1_000 && crate::embeddings::embedder()?.is_some() {
        // Embedding runs before the import's transaction, a few hundred memories a second.
        eprintln!("embedding {memories} memories before importing them…");
    }
    let report = store.import(records, target).await.map_err(in_file)?;
    writeln!(
        out,
        "imported {} memories ({} already present, {} under new ids), {} episodic records ({} already present) and {} history entries ({} already present)",
        report.memories_added,
        report.memories_skipped,
        report.memories_renamed,
        report.episodes_added,
        report.episodes_skipped,
        report.history_added,
        report.history_skipped
    )?;
    Ok(())
}

/// The changes to the memory `id` of `project`, or the project's latest `limit` changes.
async fn history(
    store: &Store,
    project: &str,
    id: Option<String>,
    limit: usize,
    json: bool,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let entries = match id {
        Some(id) => {
            // Only this project's history: another project's memory is "not found".
            let all = store.history(project, &id).await?;
            if all.is_empty() {
                return Err(MemoryError::NotFound(id).into());
            }
            all
        }
        None => store.project_history(project, limit).await?,
    };
    for h in &entries {
        if json {
            output::write_json(out, h)?;
        } else {
            output::history_entry(out, h)?;
        }
    }
    Ok(())
}

/// `--keywords a, b,c` as a list (blank entries dropped).
fn keyword_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use ctxkit_memory::{MemoryStore, SqliteMemoryStore};

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
        assert!(err.message().contains("password-assignment") && !err.message().contains("hunter22"));
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
        assert!(err.message().contains("--yes"));
    }
}
