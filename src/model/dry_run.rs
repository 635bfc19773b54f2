use async_trait::async_trait;

use super::{ChatModel, ModelReply, ModelRequest};
use crate::context::SectionKind;
use crate::error::Result;
use crate::message::Message;
use crate::text::list_or_none;

/// The offline default: answers with a one-paragraph summary of the request it received —
/// which instructions, skills, memories (per message and essential) and tools, and how many
/// tokens.
#[derive(Clone, Copy, Debug, Default)]
pub struct DryRunModel;

#[async_trait]
impl ChatModel for DryRunModel {
    fn name(&self) -> &str {
        "dry-run"
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply> {
        Ok(Message::assistant(summarize(request)).into())
    }
}

fn summarize(request: &ModelRequest) -> String {
    let meta = &request.meta;
    let mut sources: Vec<&str> = Vec::new();
    for section in &meta.sections {
        if !sources.contains(&section.source.as_str()) {
            sources.push(&section.source);
        }
    }
    let tools: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    format!(
        "[dry-run] {} messages, {} tokens. Instructions from: {}. Skills: {}. Memories: {}. Tools: {}.",
        request.messages.len(),
        meta.tokens,
        list_or_none(&sources),
        list_or_none(&meta.items_of(&SectionKind::SKILLS)),
        meta.items_of(&SectionKind::MEMORIES).len() + meta.items_of(&SectionKind::ESSENTIALS).len(),
        list_or_none(&tools),
    )
}
