//! `ctxkit mcp --http`: the server over streamable HTTP, reached by the core's MCP client
//! (`ctxkit::mcp::McpServer::http`, rmcp's streamable HTTP client) — both directions over HTTP.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use ctxkit::mcp::McpServer;
use ctxkit::Tool;
use serde_json::json;

fn skills_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../skills"))
}

fn ctxkit(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ctxkit"));
    command
        .args(args)
        .current_dir(dir)
        .env("CTXKIT_CACHE_DIR", dir.join("cache"))
        .env("CTXKIT_MEMORY_DB", dir.join("memory.db"))
        .env("CTXKIT_CONFIG", dir.join("config.toml"));
    command
}

/// Stops the server however the test ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn the_server_answers_over_streamable_http() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = ctxkit(dir.path(), &["mcp", "--http", "127.0.0.1:0", "--watch", "0"]);
    command
        .arg("--skills")
        .arg(skills_dir())
        .args(["--project", "/repo"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut server = Server(command.spawn().unwrap());
    // The bound address (port 0 picks one) is announced on standard error.
    let mut stderr = BufReader::new(server.0.stderr.take().unwrap()).lines();
    let url = stderr
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| {
            line.split_once("serving streamable HTTP at ")
                .map(|(_, url)| url.to_string())
        })
        .expect("the server announces its address");
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    std::thread::spawn(move || stderr.for_each(drop));

    let mounted = McpServer::http(&url).connect().await.unwrap();
    assert_eq!(mounted.name(), "ctxkit");
    assert_eq!(mounted.tools().len(), 7);
    let tool = |name: &str| {
        mounted
            .tools()
            .iter()
            .find(|t| t.name() == name)
            .unwrap_or_else(|| panic!("no tool {name}"))
            .clone()
    };
    let listed = tool("ctxkit__list_skills").call(json!({})).await.unwrap();
    assert!(listed.contains("\"skills\""), "{listed}");
    let refused = tool("ctxkit__read_skill")
        .call(json!({"name": "../../etc/passwd"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("ctxkit__read_skill"), "{refused}");
    assert!(!refused.contains("root:"), "{refused}");
}

#[test]
fn a_remote_address_is_refused_without_allow_remote() {
    let dir = tempfile::tempdir().unwrap();
    let output = ctxkit(dir.path(), &["mcp", "--http", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("not a loopback address") && stderr.contains("--allow-remote"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
    assert!(!dir.path().join("memory.db").exists(), "nothing was created");
}
