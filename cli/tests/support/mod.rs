//! What the CLI's end-to-end tests share: the binary run with every user folder inside a
//! temporary folder, and its output as text.
#![allow(dead_code)] // each test file uses its own part

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `ctxkit` with `dir` holding its user config (`config.toml`), index cache (`cache/`),
/// default memory database (`memory.db`) and home (`home/`), never the user's, and no log
/// level or embedding model from the environment.
pub(crate) fn isolated(dir: &Path) -> Command {
    isolated_program(Path::new(env!("CARGO_BIN_EXE_ctxkit")), dir)
}

/// `program` with the environment [`isolated`] gives `ctxkit`: a host that runs `ctxkit` (its
/// hook, its MCP server) passes it on.
pub(crate) fn isolated_program(program: &Path, dir: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .env("CTXKIT_CONFIG", dir.join("config.toml"))
        .env("CTXKIT_CACHE_DIR", dir.join("cache"))
        .env("CTXKIT_MEMORY_DB", dir.join("memory.db"))
        .env("HOME", dir.join("home"))
        .env_remove("CTXKIT_LOG")
        .env_remove("CTXKIT_EMBEDDINGS");
    command
}

/// Run `command` with `stdin` piped in and collect its output. A process that stops reading
/// early (as a hook does with oversized input) is not an error.
pub(crate) fn run_with_stdin(command: &mut Command, stdin: &[u8]) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let _ = pipe.write_all(stdin);
    drop(pipe);
    child.wait_with_output().unwrap()
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// Write `text` at `path`, creating its folders.
pub(crate) fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}
