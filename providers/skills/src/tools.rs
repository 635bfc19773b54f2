//! `read_skill` and `read_skills`: the model loads skill text by name, never by path.

use std::sync::Arc;

use async_trait::async_trait;
use ctxkit::{Error, Result, Tool};
use serde_json::{json, Value};

use crate::index::SkillLibrary;

/// Returns one skill's full instructions, or one of its files. Only names of loaded skills
/// are accepted, and only paths the skill lists ([`Skill::files`](crate::Skill::files)); the
/// instructions come from the index in memory, a file through the skill's confined read.
pub(crate) struct ReadSkillTool {
    library: Arc<SkillLibrary>,
}

impl ReadSkillTool {
    pub(crate) fn new(library: Arc<SkillLibrary>) -> Self {
        ReadSkillTool { library }
    }
}

fn tool_error(message: impl Into<String>) -> Error {
    Error::Tool {
        tool: "read_skill".into(),
        message: message.into(),
    }
}

#[async_trait]
impl Tool for ReadSkillTool {
    fn name(&self) -> &str {
        "read_skill"
    }
    fn description(&self) -> &str {
        "Load the full instructions of one skill by name, before following it; with `file`, one of the files it lists."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The skill's name, as listed."},
                "file": {"type": "string", "description": "A file of the skill, by the path its instructions list (e.g. references/api.md); omit it for the instructions."}
            },
            "required": ["name"]
        })
    }
    async fn call(&self, args: Value) -> Result<String> {
        let name = args["name"].as_str().unwrap_or_default();
        let index = self.library.snapshot();
        let skill = index.get(name).ok_or_else(|| {
            let known: Vec<&str> = index.ranked().take(20).map(|s| s.name.as_str()).collect();
            tool_error(format!(
                "no skill is named `{name}`; call read_skill with one of the listed names (e.g. {})",
                if known.is_empty() {
                    "none are loaded".to_string()
                } else {
                    known.join(", ")
                }
            ))
        })?;
        if let Some(file) = args["file"].as_str() {
            return skill.read_text_file(file).map_err(|e| tool_error(e.to_string()));
        }
        let mut text = format!("# {}\n{}\n\n{}", skill.name, skill.description, skill.body);
        let files = skill.supporting_files();
        if !files.is_empty() {
            text.push_str(&format!(
                "\n\nFiles of this skill (read one with read_skill and `file`): {}",
                files.join(", ")
            ));
        }
        Ok(text)
    }
}

/// Lists every skill's name and description, so the model can find a skill before reading it
/// with `read_skill`.
pub(crate) struct ReadSkillsTool {
    library: Arc<SkillLibrary>,
}

impl ReadSkillsTool {
    pub(crate) fn new(library: Arc<SkillLibrary>) -> Self {
        ReadSkillsTool { library }
    }
}

#[async_trait]
impl Tool for ReadSkillsTool {
    fn name(&self) -> &str {
        "read_skills"
    }
    fn description(&self) -> &str {
        "List available skills with their descriptions."
    }
    async fn call(&self, _args: Value) -> Result<String> {
        let index = self.library.snapshot();
        let list: Vec<Value> = index
            .ranked()
            .map(|s| json!({"name": s.name, "description": s.description}))
            .collect();
        Ok(Value::Array(list).to_string())
    }
}
