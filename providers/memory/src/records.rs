//! What the store keeps and reports besides memories: the history of every change, episodic
//! records of runs, the records of an export, and the reports of an import, of an extraction
//! and of a project's counts. Most callers never name these; a [`MemoryStore`](crate::store::MemoryStore)
//! backend and tools that show or move a store's contents do.

pub use crate::extraction::ExtractionReport;
pub use crate::transfer::{ExportRecord, ImportReport};
pub use crate::types::{
    EpisodicRecord, HistoryAction, HistoryEntry, MaintenanceReport, MemoryStats, NewEpisodicRecord,
    RecordType,
};
