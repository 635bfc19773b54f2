//! What one provider contributes to one request, with the source of every part.

use std::sync::Arc;

use serde::Serialize;

use crate::provider::ProviderReport;
use crate::{Message, Tool};

/// Where a section goes in the system text.
///
/// Stable sections come first so that a provider-side prompt cache keeps hitting; sections
/// that change with every message (matched skills, memories) come after them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    Stable,
    PerMessage,
}

/// One block of instructions with its source.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Section {
    /// The provider that produced it (filled in by composition when empty).
    pub source: String,
    /// What it is, for token accounting: `instructions`, `skills`, `memories`…
    pub kind: String,
    pub text: String,
    pub placement: Placement,
    /// What it carries, by name (selected skills, memory ids), for reports.
    pub items: Vec<String>,
}

impl Section {
    /// A section that is the same on every request.
    pub fn stable(kind: impl Into<String>, text: impl Into<String>) -> Self {
        Section {
            source: String::new(),
            kind: kind.into(),
            text: text.into(),
            placement: Placement::Stable,
            items: Vec::new(),
        }
    }

    /// A section chosen for this message.
    pub fn per_message(kind: impl Into<String>, text: impl Into<String>) -> Self {
        Section {
            placement: Placement::PerMessage,
            ..Self::stable(kind, text)
        }
    }

    /// Name what the section carries.
    pub fn with_items(mut self, items: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.items = items.into_iter().map(Into::into).collect();
        self
    }
}

/// A thing the model can load by name on demand (a skill), listed by name and description.
///
/// The text is shared (`Arc<str>`): a catalog is the same on every request, so copying it into
/// each request's context costs reference counts, not allocations.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct CatalogEntry {
    pub name: Arc<str>,
    pub description: Arc<str>,
}

impl CatalogEntry {
    pub fn new(name: impl Into<Arc<str>>, description: impl Into<Arc<str>>) -> Self {
        CatalogEntry {
            name: name.into(),
            description: description.into(),
        }
    }
}

/// What providers contribute to one request: instructions, extra messages, tools and a
/// catalog, each attributed to its source.
#[derive(Clone, Default)]
pub struct Context {
    pub sections: Vec<Section>,
    pub catalog: Vec<CatalogEntry>,
    pub messages: Vec<Message>,
    pub tools: Vec<Arc<dyn Tool>>,
    /// How each composed provider fared (filled in by composition).
    pub reports: Vec<ProviderReport>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tools: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
        f.debug_struct("Context")
            .field("sections", &self.sections)
            .field("catalog", &self.catalog)
            .field("messages", &self.messages)
            .field("tools", &tools)
            .field("reports", &self.reports)
            .finish()
    }
}

impl Context {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add stable instructions (kind `instructions`).
    pub fn with_instructions(self, text: impl Into<String>) -> Self {
        self.with_section(Section::stable("instructions", text))
    }

    pub fn with_section(mut self, section: Section) -> Self {
        self.sections.push(section);
        self
    }

    pub fn with_message(mut self, message: Message) -> Self {
        self.messages.push(message);
        self
    }

    pub fn with_tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    pub fn with_catalog(mut self, entries: impl IntoIterator<Item = CatalogEntry>) -> Self {
        self.catalog.extend(entries);
        self
    }

    pub fn is_empty(&self) -> bool {
        self.sections.is_empty()
            && self.catalog.is_empty()
            && self.messages.is_empty()
            && self.tools.is_empty()
    }

    /// Sections in request order: stable ones first, then per-message ones, each group in
    /// registration order.
    pub fn ordered_sections(&self) -> impl Iterator<Item = &Section> {
        let stable = self.sections.iter().filter(|s| s.placement == Placement::Stable);
        let volatile = self
            .sections
            .iter()
            .filter(|s| s.placement == Placement::PerMessage);
        stable.chain(volatile)
    }

    /// All instructions as one text, sections separated by a blank line; `None` when empty.
    pub fn instructions(&self) -> Option<String> {
        join_blocks(self.ordered_sections().map(|s| s.text.as_str()))
    }

    /// Names of the items carried by sections of `kind` (e.g. the selected skills).
    pub fn items_of(&self, kind: &str) -> Vec<String> {
        self.sections
            .iter()
            .filter(|s| s.kind == kind)
            .flat_map(|s| s.items.iter().cloned())
            .collect()
    }
}

/// Join non-empty text blocks with a blank line; `None` when nothing remains.
pub fn join_blocks<'a>(blocks: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut out = String::new();
    for block in blocks.into_iter().map(str::trim).filter(|b| !b.is_empty()) {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(block);
    }
    (!out.is_empty()).then_some(out)
}
