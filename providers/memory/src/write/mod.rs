//! Every write to the store, written once for both backends.
//!
//! A write reads what it needs through [`Rows`] — a backend's open write transaction, seen as
//! rows — asks [`crate::decide`] what to change, and applies each change as one row operation
//! and its history entry. A backend implements [`Rows`] (a dozen row-level reads and writes,
//! and its own search for similar memories) and runs a checked [`Op`] over them in one
//! transaction; it never decides anything itself, so SQLite and PostgreSQL make the same changes from the same
//! rows, and a fix here reaches both.
//!
//! ```text
//!   store call ──► Op (rules: check) ──► backend ──► Op::run ──► write::* ──► decide
//!                                                                   │
//!                                                                   ▼
//!                                                                 Rows (one transaction)
//!                                                                   ├─ sqlite::SqliteRows
//!                                                                   └─ postgres::PgRows
//! ```

mod import;
mod maintenance;
mod memories;
mod op;
mod rows;
mod undo;

#[cfg(feature = "postgres")]
pub(crate) use op::Locks;
pub(crate) use op::{Done, Op};
pub(crate) use rows::{Change, Key, Keyed, Row, Rows, Similar, Which};
