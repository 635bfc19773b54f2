//! Tools the model may call, and the registry that dispatches them.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::{Error, Result};

pub use tokio_util::sync::CancellationToken;

/// What a tool call runs within: the conversation, the project and the run, and a token the
/// run cancels when it ends (its time budget ran out, its caller dropped it, or it finished), so
/// a tool that started work elsewhere (a task, a process) can stop it.
#[derive(Clone, Debug, Default)]
pub struct ToolContext {
    /// The conversation's id ([`Thread::id`](crate::Thread::id)).
    pub session: String,
    /// The project the agent works in, when it has one.
    pub project: Option<String>,
    /// The run: the conversation's id and its turn, `ID#N`.
    pub run: String,
    /// Cancelled when the run ends.
    pub cancel: CancellationToken,
}

/// A function the model can call.
///
/// `parameters` is a JSON Schema object; the registry checks required properties and
/// basic types before `call` runs, so `call` can rely on them.
#[async_trait]
pub trait Tool: Send + Sync {
    /// What the model writes in a tool call to run it; unique among the agent's and its
    /// providers' tools.
    fn name(&self) -> &str;
    /// What the tool does and when to call it; the model chooses tools by it.
    fn description(&self) -> &str;
    /// JSON Schema of the arguments (default: no arguments).
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    /// Run the tool with already-validated arguments and return its text output.
    async fn call(&self, args: Value) -> Result<String>;

    /// Run the tool within `ctx`: what the agent calls. Provided: [`call`](Self::call), so a
    /// tool that needs no context implements `call` alone. One that needs the session, the
    /// project or cancellation implements this too (its `call` may run it in a
    /// [`ToolContext::default`]).
    async fn call_in(&self, args: Value, ctx: &ToolContext) -> Result<String> {
        let _ = ctx;
        self.call(args).await
    }

    /// The definition sent to the model.
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name().to_string(),
            description: self.description().to_string(),
            parameters: self.parameters(),
        }
    }
}

/// What the model sees of a tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// What the model writes in a tool call to run the tool.
    pub name: String,
    /// What the tool does and when to call it.
    pub description: String,
    /// JSON Schema of the arguments; the registry checks calls against it.
    pub parameters: Value,
}

impl ToolDefinition {
    /// The `{"type": "function", "function": {…}}` shape of OpenAI and Ollama.
    pub fn to_function_json(&self) -> Value {
        json!({"type": "function", "function": self})
    }
}

/// Tools by name, in registration order.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    index: HashMap<String, usize>,
}

impl ToolRegistry {
    /// A registry with no tools.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a tool; a second tool with the same name is an error naming both owners.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<()> {
        self.register_from(tool, "agent", |_| "agent".to_string())
    }

    /// Add a tool offered by `owner`; `owner_of` names the owner of an existing tool for the error.
    pub(crate) fn register_from(
        &mut self,
        tool: Arc<dyn Tool>,
        owner: &str,
        owner_of: impl Fn(&str) -> String,
    ) -> Result<()> {
        let name = tool.name().to_string();
        if self.index.contains_key(&name) {
            return Err(Error::DuplicateTool {
                first: owner_of(&name),
                second: owner.to_string(),
                tool: name,
            });
        }
        self.index.insert(name, self.tools.len());
        self.tools.push(tool);
        Ok(())
    }

    /// Remove a tool by name, returning it.
    pub fn unregister(&mut self, name: &str) -> Option<Arc<dyn Tool>> {
        let pos = self.index.remove(name)?;
        let tool = self.tools.remove(pos);
        for i in self.index.values_mut() {
            if *i > pos {
                *i -= 1;
            }
        }
        Some(tool)
    }

    /// The tool a call by `name` would run.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.index.get(name).map(|&i| &self.tools[i])
    }

    /// How many tools a request offers.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether a request offers no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tools in registration order, the order the model sees them in.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.iter()
    }

    /// Definitions of every tool, in registration order.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools.iter().map(|t| t.definition()).collect()
    }

    /// Parse `arguments` (JSON text from the model), check them against the tool's schema
    /// and run the tool, outside any run.
    pub async fn execute(&self, name: &str, arguments: &str) -> Result<String> {
        self.execute_in(name, arguments, &ToolContext::default()).await
    }

    /// [`execute`](Self::execute) within `ctx`.
    pub async fn execute_in(&self, name: &str, arguments: &str, ctx: &ToolContext) -> Result<String> {
        let tool = self.get(name).ok_or_else(|| Error::UnknownTool {
            tool: name.to_string(),
            available: self.names_list(),
        })?;
        let args = parse_arguments(name, arguments)?;
        validate_arguments(name, &tool.parameters(), &args)?;
        tool.call_in(args, ctx).await
    }

    fn names_list(&self) -> String {
        let names: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
        crate::text::list_or_none(&names)
    }
}

fn parse_arguments(tool: &str, arguments: &str) -> Result<Value> {
    if arguments.trim().is_empty() {
        return Ok(json!({}));
    }
    let value: Value = serde_json::from_str(arguments).map_err(|e| Error::ToolArguments {
        tool: tool.into(),
        message: format!("arguments are not valid JSON ({e})"),
    })?;
    if !value.is_object() {
        return Err(Error::ToolArguments {
            tool: tool.into(),
            message: "arguments must be a JSON object".into(),
        });
    }
    Ok(value)
}

/// Check required properties and the JSON types the schema declares for each property.
fn validate_arguments(tool: &str, schema: &Value, args: &Value) -> Result<()> {
    let bad = |message: String| Error::ToolArguments {
        tool: tool.into(),
        message,
    };
    for req in schema["required"].as_array().into_iter().flatten() {
        let Some(req) = req.as_str() else { continue };
        if args.get(req).is_none_or(Value::is_null) {
            return Err(bad(format!("missing required argument `{req}`")));
        }
    }
    let Some(props) = schema["properties"].as_object() else {
        return Ok(());
    };
    for (key, value) in args.as_object().into_iter().flatten() {
        let Some(expected) = props.get(key).and_then(|p| p["type"].as_str()) else {
            continue;
        };
        let ok = match expected {
            "string" => value.is_string(),
            "number" => value.is_number(),
            "integer" => value.is_i64() || value.is_u64(),
            "boolean" => value.is_boolean(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            _ => true,
        };
        if !ok && !value.is_null() {
            return Err(bad(format!("argument `{key}` must be a {expected}, got {value}")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Echo;
    #[async_trait]
    impl Tool for Echo {
        fn name(&self) -> &str {
            "echo"
        }
        fn description(&self) -> &str {
            "Echo the text"
        }
        fn parameters(&self) -> Value {
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
        }
        async fn call(&self, args: Value) -> Result<String> {
            Ok(args["text"].as_str().unwrap_or_default().to_string())
        }
    }

    #[tokio::test]
    async fn executes_and_reports_bad_calls() {
        let mut reg = ToolRegistry::new();
        reg.register(Arc::new(Echo)).unwrap();
        assert_eq!(reg.execute("echo", r#"{"text":"hi"}"#).await.unwrap(), "hi");

        let err = reg.execute("nope", "{}").await.unwrap_err().to_string();
        assert_eq!(err, "unknown tool `nope`; available tools: echo");
        let err = reg.execute("echo", "{}").await.unwrap_err().to_string();
        assert!(err.contains("missing required argument `text`"), "{err}");
        let err = reg
            .execute("echo", r#"{"text": 3}"#)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("`text` must be a string"), "{err}");
        let err = reg.execute("echo", "{not json").await.unwrap_err().to_string();
        assert!(err.contains("not valid JSON"), "{err}");
    }

    #[test]
    fn register_unregister_and_duplicates() {
        let mut reg = ToolRegistry::new();
        reg.register(Arc::new(Echo)).unwrap();
        let err = reg.register(Arc::new(Echo)).unwrap_err();
        assert!(matches!(err, Error::DuplicateTool { .. }));
        assert_eq!(reg.definitions()[0].name, "echo");
        assert!(reg.unregister("echo").is_some());
        assert!(reg.get("echo").is_none());
        assert!(reg.is_empty());
    }
}
