//! Persistent project memory for ctxkit, on SQLite or (feature `postgres`) PostgreSQL.
//!
//! Memories are short statements about a project — preferences, conventions, patterns,
//! corrections, facts — kept across sessions and injected into requests when they are relevant.
//!
//! - [`SqliteMemoryStore`] keeps them in one SQLite file (WAL, `BEGIN IMMEDIATE` writes, a
//!   search index of impact-ordered postings, a history of every change), opened with [`OpenOptions`]
//!   and [`SearchIndex`]. It implements [`MemoryStore`] (memories, over [`RunStore`] for
//!   episodes and state and [`LearnedSkillStore`] for learned skills), the async traits the rest
//!   of the crate sees, and [`Maintenance`] (upkeep); implement them to keep memories elsewhere.
//! - `PostgresStore` (feature `postgres`) keeps them on a PostgreSQL server shared by many
//!   machines, with the same behaviour: the validation ([secrets](ctxkit_secrets) included), decisions and
//!   ranking are one implementation both backends call.
//! - Search ranks with `0.40 · TF-IDF cosine + 0.25 · keyword Jaccard + 0.20 · importance +
//!   0.15 · recency`, over candidates that share a term with the query only (an important but
//!   unrelated memory never surfaces).
//! - With a sentence-embedding model ([`OpenOptions::embeddings`], an [`Embedder`]), every
//!   memory written carries its vector and search ranks by meaning too: the memories nearest the
//!   query join those sharing its words, scored `0.90 · cosine + 0.10 · words` (recall@5 0.731
//!   → 0.920 on the evaluation set). `embed_missing` gives older memories their vectors.
//! - [`MemoryContextProvider`] injects `## Project Memory` per request (read-only, so previews
//!   change nothing) and, once at the end of each run, counts the access of what it injected,
//!   carries out explicit commands ("remember that …", "forget …"), persists `project:` state
//!   and records an episode. [`MemoryHook`] loads `project:` state at session start and runs a
//!   [`MemoryExtractor`] at session end and compaction.
//! - Secrets ([`ctxkit_secrets`]) are refused on every write path, checking every field as given, before any
//!   normalisation.
//! - Projects are walls: a memory id names one memory of one project for the life of the
//!   database, and history and undo only ever see their own project's entries.
//! - Imports are checked like any write (secrets, project, content, importance) and their
//!   counters and timestamps are range-checked; a read-only database opens for reading.
//! - [`records`] holds what the store keeps besides memories (history, episodes, exports) and
//!   the reports it returns.
//! - [`eval`] measures retrieval on a labelled set against a plain full-text baseline
//!   (`ctxkit bench memory`).
//!
//! # Layering
//!
//! Each module uses only modules on lower lines. Every write is written once, in `write`, over a
//! small row-level interface that each backend implements on one of its transactions, every
//! search once, in `search`, over the reads a backend answers in one snapshot, and the store's
//! traits are implemented once, in `backend`, over the seam a backend implements (run a checked
//! write, answer a read, rank a search); a backend adds only its rows, its schema and its SQL:
//!
//! ```text
//! eval                               measure retrieval on a labelled set, on SQLite
//! provider, hook, records            inject memories per request; session start and end; what the
//!                                    store keeps besides memories
//! sqlite, postgres                   the backends: rows, schema, the reads' SQL; each runs a write's
//!                                    `Op` in one transaction and a search in one snapshot
//! extraction                         learn memories from a finished session
//! backend                            the seam (`Backend`) and the store's traits written once over it:
//!                                    checks, redaction, upkeep, learned skills' rule
//! reads                              every read as a `Read`, which a backend answers in one snapshot
//!                                    (`Reads`)
//! write                              every write, once, as a checked `Op`: add, upsert, supersede,
//!                                    update, forget, undo, import, decay, prune, compact, clear
//! store, search                      MemoryStore, RunStore, LearnedSkillStore, Maintenance; a
//!                                    search, once, over a backend's snapshot (`Snapshot`)
//! decide, transfer, postings         what a write changes; the export format, import checks; the
//!                                    candidate index beside the rows
//! learned, supersede, retrieval      learned skills and their changes; when a memory replaces
//!                                    another; ranking
//! rules, options, commands           input checks; opening options; "remember …" / "forget …"
//! sketches, text                     a first pass over sentence vectors; terms
//! sessions, types, vectors           saved conversations, redacted; the data model; sentence vectors
//! clock, error, ids                  time; errors; short random ids
//! ```
//!
//! Timestamps are Unix milliseconds (UTC); give [`OpenOptions::clock`] a [`ManualClock`] to
//! simulate time.
//!
//! ```
//! use std::sync::Arc;
//! use ctxkit::{ContextProvider, Message, RunInfo};
//! use ctxkit_memory::{MemoryCategory, MemoryContextProvider, MemoryStore, NewMemoryEntry, SqliteMemoryStore};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let store = Arc::new(SqliteMemoryStore::open(dir.path().join("memory.db"))?);
//! store
//!     .add(NewMemoryEntry::new("/repo", MemoryCategory::Preference, "Always use pnpm, not npm").importance(0.9))
//!     .await?;
//!
//! let provider = MemoryContextProvider::new(store.clone());
//! let run = RunInfo { project: Some("/repo".into()), ..RunInfo::default() };
//! let ctx = provider.invoking(&[Message::user("How do I add a dependency with npm?")], &run).await?;
//! // An important preference is an essential: in every request of the project, whatever
//! // the message says.
//! let text = ctx.instructions().unwrap();
//! assert!(text.starts_with("## Project Essentials"));
//! assert!(text.contains("- [PREF] Always use pnpm, not npm"));
//! # Ok(()) }
//! ```

#![deny(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]

mod backend;
mod clock;
mod commands;
mod decide;
mod error;
pub mod eval;
mod extraction;
mod hook;
mod ids;
mod learned;
mod options;
#[cfg(feature = "postgres")]
mod postgres;
mod postings;
mod provider;
mod reads;
pub mod records;
mod retrieval;
mod rules;
mod search;
mod sessions;
mod sketches;
mod sqlite;
mod store;
mod supersede;
mod text;
mod transfer;
mod types;
mod vectors;
mod write;

pub use clock::ManualClock;
pub use ctxkit_embed::Embedder;
pub use error::{MemoryError, Result};
pub use extraction::MemoryExtractor;
pub use hook::MemoryHook;
pub use learned::{
    LearnedChange, LearnedOrigin, LearnedSkill, LearnedStatus, MAX_LEARNED_TEXT, REVIEW_AFTER_USES,
    SUCCESS_FLOOR,
};
pub use options::{OpenOptions, SearchIndex};
#[cfg(feature = "postgres")]
pub use postgres::{is_postgres_url, PostgresStore};
pub use provider::MemoryContextProvider;
pub use sqlite::SqliteMemoryStore;
pub use store::{LearnedSkillStore, Maintenance, MemoryStore, RunStore};
pub use types::{
    ListOptions, ListOrder, MemoryCategory, MemoryEntry, MemorySearchRequest, MemorySearchResult,
    MemoryUpdate, NewMemoryEntry, UpsertResult,
};

// Every public type can be shared across threads and tasks: an agent holds the provider and the
// hook behind `Arc` on a multi-threaded runtime. A type that stopped being `Send + Sync` would
// break callers, so it fails here first.
const _: () = {
    fn assert_send_sync<T: Send + Sync>() {}
    fn assert_all() {
        assert_send_sync::<SqliteMemoryStore>();
        assert_send_sync::<OpenOptions>();
        assert_send_sync::<SearchIndex>();
        assert_send_sync::<ManualClock>();
        assert_send_sync::<MemoryContextProvider>();
        assert_send_sync::<MemoryHook>();
        assert_send_sync::<MemoryExtractor>();
        assert_send_sync::<MemoryError>();
        assert_send_sync::<MemoryEntry>();
        assert_send_sync::<LearnedSkill>();
        assert_send_sync::<LearnedChange>();
        assert_send_sync::<NewMemoryEntry>();
        assert_send_sync::<MemoryCategory>();
        assert_send_sync::<MemoryUpdate>();
        assert_send_sync::<UpsertResult>();
        assert_send_sync::<ListOptions>();
        assert_send_sync::<ListOrder>();
        assert_send_sync::<MemorySearchRequest>();
        assert_send_sync::<MemorySearchResult>();
        assert_send_sync::<records::HistoryEntry>();
        assert_send_sync::<records::HistoryAction>();
        assert_send_sync::<records::EpisodicRecord>();
        assert_send_sync::<records::NewEpisodicRecord>();
        assert_send_sync::<records::RecordType>();
        assert_send_sync::<records::ExportRecord>();
        assert_send_sync::<records::ImportReport>();
        assert_send_sync::<records::ExtractionReport>();
        assert_send_sync::<records::MemoryStats>();
        assert_send_sync::<records::MaintenanceReport>();
        assert_send_sync::<eval::EvalSet>();
        assert_send_sync::<eval::EvalReport>();
        assert_send_sync::<Box<dyn MemoryStore>>();
    }
    let _ = assert_all;
};
