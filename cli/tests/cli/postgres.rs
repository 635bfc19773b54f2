//! `ctxkit memory` on PostgreSQL, through the binary: many writer processes at once, a writer
//! killed mid-import, a SQLite export moved to the server, and connection failures in one
//! sentence without the password. The server is a throwaway cluster the tests start (see
//! `providers/memory/tests/support/pg.rs`); without PostgreSQL the suite is skipped with one
//! line, and under `CTXKIT_EXTERNAL_SUITES=1` that is a failure.

use crate::pg;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

const PROJECT: &str = "/shared/project";

/// `ctxkit memory --db URL --project PROJECT …`, in a fresh folder, without the user's config.
fn memory(db: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ctxkit"));
    c.args(["memory", "--db", db, "--project", PROJECT])
        .args(args)
        .env_remove("CTXKIT_MEMORY_DB")
        .env_remove("RUST_LOG")
        .env("CTXKIT_CONFIG", "/nonexistent/ctxkit.toml")
        .current_dir(std::env::temp_dir());
    c
}

fn run(db: &str, args: &[&str]) -> Output {
    memory(db, args).output().unwrap()
}

fn ok(db: &str, args: &[&str]) -> String {
    let out = run(db, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn stats(db: &str) -> Value {
    serde_json::from_str(&ok(db, &["stats", "--json"])).unwrap()
}

#[test]
fn eight_writer_processes_lose_and_duplicate_nothing() {
    let Some(cluster) = pg::cluster() else { return };
    let url = cluster.database();
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let url = url.clone();
            std::thread::spawn(move || {
                for i in 0..100 {
                    let content = format!("writer {w} remembers fact number {i} about service s{w}x{i}");
                    ok(&url, &["add", &content]);
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let s = stats(&url);
    assert_eq!(s["total"], 800, "{s}");
    assert_eq!(s["history_entries"], 800, "{s}");
}

#[test]
fn a_writer_killed_mid_import_loses_nothing_committed() {
    let Some(cluster) = pg::cluster() else { return };
    let url = cluster.database();
    for i in 0..10 {
        ok(
            &url,
            &["add", &format!("committed before the import, number {i}")],
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.jsonl");
    let lines: Vec<String> = (0..4000)
        .map(|i| serde_json::json!({"content": format!("imported memory {i} about module m{i}")}).to_string())
        .collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    let file = file.to_str().unwrap();

    let mut child = memory(&url, &["import", file])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once its transaction has written (the server gave it a transaction id), while it
    // is still open.
    let writing = "SELECT count(*) FROM pg_stat_activity
                   WHERE datname = current_database() AND pid <> pg_backend_pid()
                   AND backend_xid IS NOT NULL AND state <> 'idle'";
    let name = pg::Cluster::name_of(&url);
    while cluster.psql(name, writing).trim() == "0" {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the import ended before it was seen writing"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "the import finished before it could be killed"
    );
    Command::new("kill")
        .args(["-KILL", &child.id().to_string()])
        .status()
        .unwrap();
    child.wait().unwrap();

    let s = stats(&url);
    assert_eq!(
        s["total"], 10,
        "the import was one transaction and never committed: {s}"
    );
    assert_eq!(s["history_entries"], 10, "{s}");
    // The database is healthy: the same import, run again, commits whole.
    ok(&url, &["import", file]);
    let s = stats(&url);
    assert_eq!(s["total"], 4010, "{s}");
}

#[test]
fn a_sqlite_export_moves_to_postgres_exactly() {
    let Some(cluster) = pg::cluster() else { return };
    let url = cluster.database();
    let dir = tempfile::tempdir().unwrap();
    let sqlite = dir.path().join("memory.db");
    let sqlite = sqlite.to_str().unwrap();
    ok(
        sqlite,
        &[
            "add",
            "--category",
            "preference",
            "--importance",
            "0.9",
            "Always use pnpm, not npm",
        ],
    );
    let id = ok(sqlite, &["add", "The API lives in src/api"])
        .trim()
        .to_string();
    ok(sqlite, &["update", &id, "--importance", "0.7"]);
    ok(sqlite, &["add", "A note to forget about the release train"]);
    ok(sqlite, &["forget", "--query", "release train"]);
    let export = dir.path().join("export.jsonl");
    ok(sqlite, &["export", export.to_str().unwrap()]);
    let imported = ok(&url, &["import", export.to_str().unwrap()]);
    assert!(imported.contains("imported 2 memories"), "{imported}");
    assert!(imported.contains("5 history entries"), "{imported}");
    let again = dir.path().join("again.jsonl");
    ok(&url, &["export", again.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_to_string(&export).unwrap(),
        std::fs::read_to_string(&again).unwrap(),
        "the same ids, counts and history, byte for byte"
    );
    assert_eq!(
        ok(sqlite, &["history", "--json", "--limit", "100"]),
        ok(&url, &["history", "--json", "--limit", "100"])
    );
}

#[test]
fn connection_failures_are_one_sentence_without_the_password() {
    let Some(cluster) = pg::cluster() else { return };
    let url = cluster.database();
    let name = pg::Cluster::name_of(&url);
    let wrong = "Wr0ng-Secret-4410";
    let port = pg::free_port();
    let unreachable = format!("postgres://ctxkit:{wrong}@127.0.0.1:{port}/memory?connect_timeout=2");
    let newer = cluster.database();
    ok(&newer, &["stats"]);
    cluster.psql(
        pg::Cluster::name_of(&newer),
        "UPDATE ctxkit_schema_version SET version = 42",
    );
    let cases = [
        (cluster.url(name, wrong), "password authentication failed"),
        (unreachable, "refused"),
        (newer.clone(), "has schema version 42"),
    ];
    for (db, says) in &cases {
        let out = run(db, &["search", "anything"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
        assert!(!err.contains(wrong) && !err.contains(pg::PASSWORD), "{err}");
    }
    // `$CTXKIT_MEMORY_DB` names a server too, and fails the same way.
    let out = Command::new(env!("CARGO_BIN_EXE_ctxkit"))
        .args(["memory", "--project", PROJECT, "stats"])
        .env("CTXKIT_MEMORY_DB", &newer)
        .env("CTXKIT_CONFIG", "/nonexistent/ctxkit.toml")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("has schema version 42") && !err.contains(pg::PASSWORD),
        "{err}"
    );
}
