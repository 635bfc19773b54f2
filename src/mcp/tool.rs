//! One tool of a mounted server, as a [`Tool`]: a call that fails, times out or finds the server
//! gone is a tool error, which the agent hands the model; the run goes on.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::RoleClient;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::tool::Tool;

/// The most characters of a tool's answer handed to the model: answers are untrusted text.
const MAX_OUTPUT_CHARS: usize = 100_000;

/// The connection, shared by a server's tools: it stays open as long as one of them lives.
pub(crate) type Connection = Arc<RunningService<RoleClient, ()>>;

/// One tool of a mounted MCP server, named `SERVER__tool`, with its input schema cleaned.
#[derive(Clone)]
pub struct McpTool {
    pub(crate) connection: Connection,
    pub(crate) name: String,
    pub(crate) server: String,
    pub(crate) remote: String,
    pub(crate) description: String,
    pub(crate) schema: Value,
    pub(crate) timeout: Duration,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.name)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    fn error(&self, message: String) -> Error {
        Error::Tool {
            tool: self.name.clone(),
            message,
        }
    }
}

/// The text of a result: its text blocks, else its structured content as JSON; cut to
/// [`MAX_OUTPUT_CHARS`].
fn result_text(result: &CallToolResult) -> String {
    let mut text: String = result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .map(|t| t.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    if text.is_empty() {
        if let Some(structured) = &result.structured_content {
            text = structured.to_string();
        }
    }
    if let Some((cut, _)) = text.char_indices().nth(MAX_OUTPUT_CHARS) {
        text.truncate(cut);
        text.push_str("\n[output cut]");
    }
    text
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn parameters(&self) -> Value {
        self.schema.clone()
    }
    async fn call(&self, args: Value) -> Result<String> {
        let arguments = match args {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let params = CallToolRequestParams::new(self.remote.clone()).with_arguments(arguments);
        let server = &self.server;
        match tokio::time::timeout(self.timeout, self.connection.call_tool(params)).await {
            Err(_) => Err(self.error(format!(
                "MCP server `{server}` did not answer within {}s",
                self.timeout.as_secs()
            ))),
            Ok(Err(e)) => Err(self.error(format!("MCP server `{server}` is unavailable: {e}"))),
            Ok(Ok(result)) if result.is_error == Some(true) => Err(self.error(result_text(&result))),
            Ok(Ok(result)) => Ok(result_text(&result)),
        }
    }
}
