//! Durability: a writer killed with SIGKILL in the middle of its write loop leaves a database
//! that opens, passes `PRAGMA integrity_check` and holds every row it had committed.
//!
//! The test re-runs its own binary as the child (told so by an environment variable); the child
//! appends each committed id to a log file and syncs it before writing the next memory.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ctxkit_memory::{MemoryCategory, MemoryStore, NewMemoryEntry, SqliteMemoryStore};

const TEST_NAME: &str = "durability::sigkill_mid_write_loop_keeps_every_committed_row";
const CHILD_DB: &str = "CTXKIT_MEMORY_TEST_CHILD_DB";
const CHILD_LOG: &str = "CTXKIT_MEMORY_TEST_CHILD_LOG";
const PROJECT: &str = "/durability";

/// The child: write memories until killed, logging each committed id.
async fn child_loop(db: &Path, log: &Path) {
    let db = SqliteMemoryStore::open(db).expect("child opens the database");
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("child opens the log");
    // Bounded so an orphaned child cannot run forever.
    for i in 0..200_000 {
        let entry = NewMemoryEntry::new(
            PROJECT,
            MemoryCategory::Fact,
            format!("durable note {i} on subject{}", i % 97),
        )
        .keywords([format!("k{}", i % 13)]);
        let e = db.add(entry).await.expect("child writes");
        writeln!(log, "{}", e.id).expect("child logs");
        log.sync_data().expect("child syncs the log");
    }
}

fn logged_ids(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        // A line cut short by the kill is not a committed id.
        .filter(|l| l.len() == 12)
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn sigkill_mid_write_loop_keeps_every_committed_row() {
    if let (Ok(db), Ok(log)) = (std::env::var(CHILD_DB), std::env::var(CHILD_LOG)) {
        child_loop(Path::new(&db), Path::new(&log)).await;
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("durable.db");
    let log_path = dir.path().join("committed.log");
    SqliteMemoryStore::open(&db_path).unwrap();

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
        .env(CHILD_DB, &db_path)
        .env(CHILD_LOG, &log_path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();

    // Let it commit a few hundred rows, then kill it mid-loop. The deadline only guards
    // against a child that never starts; it asserts nothing about speed.
    let deadline = Instant::now() + Duration::from_secs(120);
    while logged_ids(&log_path).len() < 300 {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the child exited early with {status}");
        }
        assert!(
            Instant::now() < deadline,
            "the child did not commit 300 rows in 120 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();

    let committed = logged_ids(&log_path);
    let conn = rusqlite::Connection::open(&db_path).unwrap();
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    // The search index went with the rows: no posting of a row that is not there, no row
    // without its postings.
    let orphans: i64 = conn
        .query_row(
            "SELECT (SELECT COUNT(*) FROM memory_postings WHERE num NOT IN (SELECT num FROM project_memories))
                  + (SELECT COUNT(*) FROM project_memories WHERE num NOT IN (SELECT num FROM memory_postings))",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(orphans, 0, "the search index is consistent with the rows");

    let db = SqliteMemoryStore::open(&db_path).unwrap();
    for id in &committed {
        assert!(
            db.get(id).await.unwrap().is_some(),
            "committed memory {id} is missing"
        );
    }
    // At most one row committed after its id was logged (the kill landed between the two).
    let count = db.count(PROJECT).await.unwrap();
    assert!(
        count >= committed.len() && count <= committed.len() + 1,
        "{count} rows for {} logged",
        committed.len()
    );
    // And the database still takes writes.
    db.add(NewMemoryEntry::new(
        PROJECT,
        MemoryCategory::Fact,
        "written after the crash",
    ))
    .await
    .unwrap();
}
