//! Restrictions on the tools a run may call: context in force (a skill's `allowed-tools`) can
//! say which tools it lets the model use, and the runner wraps every tool of the run in
//! [`Restricted`], so the promise holds at the one place tools are called.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::tool::{Tool, ToolContext};

/// The tools a piece of context allows while it is in force; every other call is refused
/// with a tool error naming it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolRestriction {
    /// What imposes it, as the refusal names it (`skill `deploy``).
    pub by: String,
    /// Tool names allowed, case-insensitive; an entry written `Bash(git:*)` allows `Bash`.
    pub allowed: Vec<String>,
}

impl ToolRestriction {
    /// A restriction imposed by `by`, allowing `allowed`.
    pub fn new(by: impl Into<String>, allowed: Vec<String>) -> Self {
        ToolRestriction {
            by: by.into(),
            allowed,
        }
    }

    /// Whether `tool` may be called under this restriction.
    pub fn allows(&self, tool: &str) -> bool {
        self.allowed.iter().any(|entry| {
            let name = entry.split('(').next().unwrap_or(entry).trim();
            name.eq_ignore_ascii_case(tool)
        })
    }
}

/// A tool that refuses calls some restriction of the run does not allow; otherwise it is the
/// tool it wraps.
pub(crate) struct Restricted {
    inner: Arc<dyn Tool>,
    rules: Arc<[ToolRestriction]>,
}

impl Restricted {
    pub(crate) fn new(inner: Arc<dyn Tool>, rules: Arc<[ToolRestriction]>) -> Self {
        Restricted { inner, rules }
    }
}

#[async_trait]
impl Tool for Restricted {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn description(&self) -> &str {
        self.inner.description()
    }
    fn parameters(&self) -> Value {
        self.inner.parameters()
    }
    async fn call(&self, args: Value) -> Result<String> {
        self.call_in(args, &ToolContext::default()).await
    }
    async fn call_in(&self, args: Value, ctx: &ToolContext) -> Result<String> {
        let name = self.inner.name();
        if let Some(rule) = self.rules.iter().find(|r| !r.allows(name)) {
            return Err(Error::Tool {
                tool: name.to_string(),
                message: format!(
                    "refused: {} is active and allows only these tools: {}",
                    rule.by,
                    if rule.allowed.is_empty() {
                        "none".to_string()
                    } else {
                        rule.allowed.join(", ")
                    }
                ),
            });
        }
        self.inner.call_in(args, ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Echo;

    #[async_trait]
    impl Tool for Echo {
        fn name(&self) -> &str {
            "Write"
        }
        fn description(&self) -> &str {
            "echo"
        }
        async fn call(&self, _args: Value) -> Result<String> {
            Ok("ran".into())
        }
    }

    #[tokio::test]
    async fn a_call_no_restriction_allows_is_a_tool_error_naming_it() {
        let rules: Arc<[ToolRestriction]> = Arc::new([
            ToolRestriction::new("skill `a`", vec!["write".into(), "Read".into()]),
            ToolRestriction::new("skill `review`", vec!["Read".into(), "Bash(git:*)".into()]),
        ]);
        let tool = Restricted::new(Arc::new(Echo), rules);
        let err = tool.call(Value::Null).await.unwrap_err().to_string();
        assert!(
            err.contains("skill `review`") && err.contains("Read, Bash(git:*)"),
            "{err}"
        );
        let open = Restricted::new(
            Arc::new(Echo),
            Arc::new([ToolRestriction::new("s", vec!["Write".into()])]),
        );
        assert_eq!(open.call(Value::Null).await.unwrap(), "ran");
        assert!(ToolRestriction::new("s", vec!["Bash(git:*)".into()]).allows("bash"));
    }
}
