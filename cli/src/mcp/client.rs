//! The other direction: an MCP server's tools in ctxkit's agent. [`mount`] starts a server as a
//! child process (no shell: the command line is split into words), and each of its tools
//! becomes an [`McpTool`] named `SERVER__tool`, with its input schema cleaned for providers
//! that reject parts of JSON Schema. A call that fails, times out or finds the server gone is a
//! tool error: the agent's run goes on.
//!
//! Only servers the user named (`chat --mcp`, the user config's `[mcp] servers`) are mounted,
//! the trust rule of skill tools: a project file never adds one.

use std::time::Duration;

use async_trait::async_trait;
use ctxkit::{Error, Result, Tool};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{Peer, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};

use crate::CliError;

/// Tool names providers accept: `^[A-Za-z0-9_-]{1,64}$` (OpenAI's rule, the strictest).
const MAX_TOOL_NAME: usize = 64;
/// Between the server's name and the tool's.
const SEPARATOR: &str = "__";
/// The most characters of a tool's answer handed to the model.
const MAX_OUTPUT_CHARS: usize = 100_000;
/// JSON Schema keywords removed from input schemas: metadata no model needs, and `format`,
/// which some OpenAI-compatible backends and Gemini reject for values they do not know.
const DROPPED_KEYWORDS: [&str; 6] = ["$schema", "$id", "$comment", "format", "examples", "default"];

/// One running server: its connection, kept alive as long as the agent's tools may call it.
pub struct Mounted {
    /// The name its tools are prefixed with.
    pub name: String,
    /// Its tools, ready to register.
    pub tools: Vec<McpTool>,
    _service: RunningService<RoleClient, ()>,
}

/// Start `command_line` (split like a shell would, run without one) and list its tools.
pub async fn mount(command_line: &str, timeout: Duration) -> std::result::Result<Mounted, CliError> {
    let words = shell_words::split(command_line)
        .map_err(|e| CliError::new(format!("cannot split the MCP server command: {e}")))?;
    let (program, args) = words
        .split_first()
        .ok_or_else(|| CliError::new("an MCP server command is empty"))?;
    let mut command = tokio::process::Command::new(program);
    command.args(args);
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .map_err(|e| CliError::new(format!("cannot start MCP server `{program}`: {e}")))?;
    let fallback = std::path::Path::new(program)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    connect(transport, &fallback, timeout).await
}

/// Connect over `transport`, name the server (its own name, else `fallback`) and list its tools.
pub async fn connect<T, E, A>(
    transport: T,
    fallback: &str,
    timeout: Duration,
) -> std::result::Result<Mounted, CliError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let service = tokio::time::timeout(timeout, ().serve(transport))
        .await
        .map_err(|_| {
            CliError::new(format!(
                "MCP server `{fallback}` did not start within {}s",
                timeout.as_secs()
            ))
        })?
        .map_err(|e| CliError::new(format!("MCP server `{fallback}` did not start: {e}")))?;
    let reported = service
        .peer_info()
        .and_then(|info| info.server_info.as_ref().map(|i| i.name.clone()));
    let name = prefix(reported.as_deref().unwrap_or(fallback));
    let listed = tokio::time::timeout(timeout, service.list_all_tools())
        .await
        .map_err(|_| CliError::new(format!("MCP server `{name}` did not list its tools in time")))?
        .map_err(|e| CliError::new(format!("MCP server `{name}` did not list its tools: {e}")))?;
    let tools = listed
        .into_iter()
        .map(|tool| {
            let mut schema = Value::Object((*tool.input_schema).clone());
            sanitize_schema(&mut schema);
            McpTool {
                peer: service.peer().clone(),
                name: tool_name(&name, &tool.name),
                server: name.clone(),
                remote: tool.name.to_string(),
                description: tool.description.map(|d| d.to_string()).unwrap_or_default(),
                schema,
                timeout,
            }
        })
        .collect();
    Ok(Mounted {
        name,
        tools,
        _service: service,
    })
}

/// A server's name as a tool-name prefix: letters, digits, `-` and `_`, others as `_`; at most
/// 24 characters, so the tool's own name keeps most of the 64.
fn prefix(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(24)
        .collect();
    let cleaned = cleaned.trim_matches('_').to_string();
    if cleaned.is_empty() {
        "mcp".into()
    } else {
        cleaned
    }
}

/// `SERVER__tool`, cleaned and cut to what providers accept.
fn tool_name(server: &str, tool: &str) -> String {
    let tool: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{server}{SEPARATOR}{tool}")
        .chars()
        .take(MAX_TOOL_NAME)
        .collect()
}

/// Remove [`DROPPED_KEYWORDS`] from a schema and every schema inside it (properties, items,
/// combinators, definitions), never from a `properties` map itself, where a property may well
/// be called `format`. The top level is made an object schema with `properties`, which
/// function-calling APIs require.
pub fn sanitize_schema(schema: &mut Value) {
    clean(schema);
    if let Value::Object(map) = schema {
        map.insert("type".into(), Value::String("object".into()));
        map.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

fn clean(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    for keyword in DROPPED_KEYWORDS {
        map.remove(keyword);
    }
    for key in ["properties", "$defs", "definitions", "patternProperties"] {
        if let Some(Value::Object(children)) = map.get_mut(key) {
            children.values_mut().for_each(clean);
        }
    }
    for key in ["items", "additionalProperties", "not", "contains"] {
        if let Some(child) = map.get_mut(key) {
            clean(child);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(children)) = map.get_mut(key) {
            children.iter_mut().for_each(clean);
        }
    }
}

/// One tool of a mounted server.
#[derive(Clone)]
pub struct McpTool {
    peer: Peer<RoleClient>,
    name: String,
    server: String,
    remote: String,
    description: String,
    schema: Value,
    timeout: Duration,
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
        match tokio::time::timeout(self.timeout, self.peer.call_tool(params)).await {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schemas_lose_what_providers_reject_and_keep_properties_named_like_keywords() {
        let mut schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "format": {"type": "string", "format": "date-time", "default": "x"},
                "list": {"type": "array", "items": {"type": "string", "format": "uri"}},
                "either": {"anyOf": [{"type": "string", "format": "email"}, {"type": "null"}]}
            },
            "required": ["format"]
        });
        sanitize_schema(&mut schema);
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "format": {"type": "string"},
                    "list": {"type": "array", "items": {"type": "string"}},
                    "either": {"anyOf": [{"type": "string"}, {"type": "null"}]}
                },
                "required": ["format"]
            })
        );
        let mut empty = json!({});
        sanitize_schema(&mut empty);
        assert_eq!(empty, json!({"type": "object", "properties": {}}));
    }

    #[test]
    fn tool_names_fit_what_providers_accept() {
        assert_eq!(tool_name(&prefix("ctxkit"), "read_skill"), "ctxkit__read_skill");
        assert_eq!(
            tool_name(&prefix("my server!"), "get.thing"),
            "my_server__get_thing"
        );
        assert_eq!(prefix("@@@"), "mcp");
        let long = tool_name(&prefix(&"s".repeat(100)), &"t".repeat(100));
        assert_eq!(long.len(), 64);
        assert!(long
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
    }
}
