//! MCP servers' tools in the agent (feature `mcp`): [`McpServer`] says how to reach a server (a
//! child process over stdio, or streamable HTTP), [`McpServer::connect`] starts it and lists its
//! tools, and [`AgentBuilder::mcp`](crate::agent::AgentBuilder::mcp) registers them. Each tool is an
//! [`McpTool`] named `SERVER__tool`, its input schema cleaned for providers that reject parts of
//! JSON Schema; a call that fails, times out or finds the server gone is a tool error the model
//! sees, and the run goes on.
//!
//! Mount only servers the user chose: their tools run with the agent's authority, and their
//! descriptions and answers are untrusted text (answers are cut to 100,000 characters).
//!
//! ```no_run
//! use ctxkit::mcp::McpServer;
//! use ctxkit::{Agent, Thread};
//!
//! # #[tokio::main] async fn main() -> ctxkit::Result<()> {
//! let everything = McpServer::stdio("npx", ["-y", "@modelcontextprotocol/server-everything"])
//!     .connect()
//!     .await?;
//! let docs = McpServer::http("http://127.0.0.1:8080/mcp").name("docs").connect().await?;
//! let agent = Agent::builder().mcp(everything).mcp(docs).build()?;
//! agent.run(&mut Thread::new(), "Echo hello").await?;
//! # Ok(()) }
//! ```

mod names;
mod schema;
mod tool;

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

pub use self::tool::McpTool;
use crate::error::{Error, Result};

/// How long a server may take to start, list its tools or answer one call, unless
/// [`McpServer::timeout`] says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How to reach one MCP server; [`connect`](Self::connect) mounts it.
#[derive(Clone, Debug)]
pub struct McpServer {
    endpoint: Endpoint,
    name: Option<String>,
    timeout: Duration,
}

#[derive(Clone)]
enum Endpoint {
    Stdio { program: String, args: Vec<String> },
    Http { url: String },
}

/// Never prints a URL: it may carry a token.
impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Stdio { program, args } => write!(f, "stdio `{program}` with {} arguments", args.len()),
            Endpoint::Http { url } => write!(f, "streamable HTTP at {}", host(url).unwrap_or("?")),
        }
    }
}

impl McpServer {
    /// A server run as a child process speaking MCP on its standard input and output: `program`
    /// with `args`, run without a shell. Its standard error goes to this process's.
    pub fn stdio<S: Into<String>>(program: impl Into<String>, args: impl IntoIterator<Item = S>) -> Self {
        Self::with(Endpoint::Stdio {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
        })
    }

    /// A server at `url` (`http://` or `https://`) speaking streamable HTTP.
    pub fn http(url: impl Into<String>) -> Self {
        Self::with(Endpoint::Http { url: url.into() })
    }

    fn with(endpoint: Endpoint) -> Self {
        McpServer {
            endpoint,
            name: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The prefix of its tools' names (default: the name the server reports, else the program's
    /// file name or the URL's host), cleaned to letters, digits, `-` and `_`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// How long the server may take to start, to list its tools, and to answer each call
    /// (default [`DEFAULT_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Start the server (or open the connection) and list its tools. Fails with one sentence
    /// naming the server when it cannot start, does not answer in time or cannot list its tools.
    pub async fn connect(self) -> Result<McpTools> {
        match &self.endpoint {
            Endpoint::Stdio { program, args } => {
                let fallback = std::path::Path::new(program)
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let mut command = tokio::process::Command::new(program);
                command.args(args);
                let (transport, _) = TokioChildProcess::builder(command)
                    .stderr(std::process::Stdio::inherit())
                    .spawn()
                    .map_err(|e| Error::other(format!("cannot start MCP server `{program}`: {e}")))?;
                let pid = transport.id();
                let mut tools = self.mount(transport, &fallback).await?;
                tools.process_id = pid;
                Ok(tools)
            }
            Endpoint::Http { url } => {
                let Some(host) = host(url) else {
                    return Err(Error::other(
                        "an MCP server URL must start with http:// or https:// and name a host",
                    ));
                };
                let transport = StreamableHttpClientTransport::from_uri(url.as_str());
                self.mount(transport, host).await
            }
        }
    }

    /// Connect over any rmcp client transport (an in-process duplex stream, a custom one),
    /// ignoring this server's endpoint; `fallback` names it when neither [`name`](Self::name)
    /// nor the server does.
    pub async fn connect_transport<T, E, A>(self, transport: T, fallback: &str) -> Result<McpTools>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        self.mount(transport, fallback).await
    }

    async fn mount<T, E, A>(&self, transport: T, fallback: &str) -> Result<McpTools>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let label = self.name.as_deref().unwrap_or(fallback);
        let secs = self.timeout.as_secs();
        let service = tokio::time::timeout(self.timeout, ().serve(transport))
            .await
            .map_err(|_| Error::other(format!("MCP server `{label}` did not start within {secs}s")))?
            .map_err(|e| Error::other(format!("MCP server `{label}` did not start: {e}")))?;
        let reported = service
            .peer_info()
            .and_then(|info| info.server_info.as_ref().map(|i| i.name.clone()));
        let name = names::prefix(self.name.as_deref().or(reported.as_deref()).unwrap_or(fallback));
        let listed = tokio::time::timeout(self.timeout, service.list_all_tools())
            .await
            .map_err(|_| {
                Error::other(format!(
                    "MCP server `{name}` did not list its tools within {secs}s"
                ))
            })?
            .map_err(|e| Error::other(format!("MCP server `{name}` did not list its tools: {e}")))?;
        let connection: tool::Connection = Arc::new(service);
        let tools = listed
            .into_iter()
            .map(|listed| {
                let mut schema = Value::Object((*listed.input_schema).clone());
                schema::sanitize_schema(&mut schema);
                McpTool {
                    connection: connection.clone(),
                    name: names::tool_name(&name, &listed.name),
                    server: name.clone(),
                    remote: listed.name.to_string(),
                    description: listed.description.map(|d| d.to_string()).unwrap_or_default(),
                    schema,
                    timeout: self.timeout,
                }
            })
            .collect();
        Ok(McpTools {
            name,
            tools,
            process_id: None,
        })
    }
}

/// The host of an `http://` or `https://` URL (credentials and port left out), or `None` for
/// anything else.
fn host(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit('@').next()?;
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => host_port.split(':').next()?,
    };
    (!host.is_empty()).then_some(host)
}

/// A mounted server: its name and tools. The connection stays open while any of its tools
/// lives (in an agent or here); a child process is stopped when the last one is dropped.
#[derive(Clone, Debug)]
pub struct McpTools {
    name: String,
    tools: Vec<McpTool>,
    process_id: Option<u32>,
}

impl McpTools {
    /// The prefix of its tools' names (`SERVER` in `SERVER__tool`).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Its tools, as the server listed them.
    pub fn tools(&self) -> &[McpTool] {
        &self.tools
    }
    /// Its tools, to register one by one.
    pub fn into_tools(self) -> Vec<McpTool> {
        self.tools
    }
    /// The child process's id, for a server started by [`McpServer::stdio`] (to watch or stop
    /// it from outside); `None` otherwise.
    pub fn process_id(&self) -> Option<u32> {
        self.process_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_their_host_and_nothing_else() {
        assert_eq!(host("http://127.0.0.1:8080/mcp"), Some("127.0.0.1"));
        assert_eq!(host("https://user:token@example.com/x?k=v"), Some("example.com"));
        assert_eq!(host("http://[::1]:9/mcp"), Some("::1"));
        assert_eq!(host("file:///etc/passwd"), None);
        assert_eq!(host("http:///nohost"), None);
        let debug = format!("{:?}", McpServer::http("https://u:secret@example.com/?t=secret"));
        assert!(!debug.contains("secret"), "{debug}");
    }
}
