//! Persistent project memory for ctxkit (seed 004 §4), on SQLite.
//!
//! Memories are short statements about a project — preferences, conventions, patterns,
//! corrections, facts — kept across sessions and injected into requests when they are relevant.
//!
//! - [`MemoryDb`] is the blocking SQLite core (one file, WAL, `BEGIN IMMEDIATE` writes, a
//!   full-text index for candidate retrieval, a history of every change);
//!   [`SqliteMemoryStore`] puts it behind the async [`MemoryStore`] trait, running each call
//!   on tokio's blocking pool.
//! - [`retrieval`] ranks with the seed's formula: `0.40 · TF-IDF cosine + 0.25 · keyword
//!   Jaccard + 0.20 · importance + 0.15 · recency`, over candidates that share a term with the
//!   query only (an important but unrelated memory never surfaces).
//! - [`MemoryContextProvider`] injects `## Project Memory` per request and carries out explicit
//!   commands ([`detect_memory_command`]); [`MemoryHook`] runs [`MemoryExtractor`] at session
//!   end and compaction and persists `project:` state.
//! - [`secrets`] refuses API keys, tokens, private keys and passwords on every write path,
//!   checking every field as given, before any normalisation.
//! - Projects are walls: a memory id names one memory of one project for the life of the
//!   database, and history and undo only ever see their own project's entries.
//! - Imports are checked like any write (secrets, project, content, importance) and their
//!   counters and timestamps are range-checked; a read-only database opens for reading.
//!
//! Timestamps are Unix milliseconds (UTC); inject a [`ManualClock`] through [`OpenOptions`]
//! to simulate time.
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
//! let text = ctx.instructions().unwrap();
//! assert!(text.starts_with("## Project Memory"));
//! assert!(text.contains("- [PREF] Always use pnpm, not npm"));
//! # Ok(()) }
//! ```

mod clock;
pub mod commands;
mod error;
pub mod extraction;
mod hook;
mod ids;
mod provider;
pub mod retrieval;
pub mod secrets;
mod sqlite;
mod store;
pub mod text;
mod types;

pub use clock::{days_between, format_rfc3339, Clock, ManualClock, SystemClock, DAY_MS};
pub use commands::{detect_memory_command, MemoryCommand, EXPLICIT_IMPORTANCE};
pub use error::{MemoryError, Result};
pub use extraction::{ExtractedMemory, ExtractionInput, ExtractionReport, MemoryExtractor};
pub use hook::MemoryHook;
pub use provider::{render_memories, MemoryContextProvider, DEFAULT_MAX_CHARS, HEADING, INTRO};
pub use sqlite::{
    ExportRecord, ImportReport, MemoryDb, OpenOptions, SearchIndex, COMPACT_SIMILARITY, IMPORTANCE_RANGE,
    MAX_ACCESS_COUNT, MAX_CONTENT_CHARS, MAX_TIMESTAMP_MS, MERGE_SIMILARITY,
};
pub use store::{MemoryStore, SqliteMemoryStore};
pub use types::{
    EpisodicRecord, HistoryAction, HistoryEntry, ListOptions, ListOrder, MemoryCategory, MemoryEntry,
    MemorySearchRequest, MemorySearchResult, MemoryStats, MemoryUpdate, NewEpisodicRecord, NewMemoryEntry,
    RecordType, UpsertResult,
};

/// The seed's decay: `importance × 0.95^(days / 7)`.
pub use sqlite::decayed_importance;
