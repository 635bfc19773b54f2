//! What one provider contributes to one request, with the source of every part.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::Serialize;

use crate::message::Message;
use crate::report::ProviderReport;
use crate::tool::Tool;

/// Where a section goes in the system text.
///
/// Stable sections come first so that a provider-side prompt cache keeps hitting; sections
/// that change with every message (matched skills, memories) come after them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// The same on every request: part of the prefix a prompt cache can reuse.
    Stable,
    /// Chosen for this message: after the stable sections, or in lazy mode in a transient
    /// system message before the latest user message, never stored in the thread.
    PerMessage,
}

/// What a section holds: the key of token accounting ([`TokenReport`](crate::agent::TokenReport)) and of
/// what a run injected ([`RunReport`](crate::agent::RunReport)). The built-in kinds are constants; a
/// provider of your own names its kind with [`SectionKind::new`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct SectionKind(Cow<'static, str>);

impl SectionKind {
    /// Standing instructions: the agent's own and a provider's fixed text.
    pub const INSTRUCTIONS: SectionKind = SectionKind(Cow::Borrowed("instructions"));
    /// Skill bodies.
    pub const SKILLS: SectionKind = SectionKind(Cow::Borrowed("skills"));
    /// The catalog of things the model may load on demand, and its introduction.
    pub const CATALOG: SectionKind = SectionKind(Cow::Borrowed("catalog"));
    /// Project memories chosen for this message.
    pub const MEMORIES: SectionKind = SectionKind(Cow::Borrowed("memories"));
    /// Project memories sent with every request of the project (standing preferences and
    /// corrections): stable, so they sit in the cacheable prefix.
    pub const ESSENTIALS: SectionKind = SectionKind(Cow::Borrowed("essentials"));
    /// Past runs similar to this message ("avoid" / "worked before").
    pub const EPISODES: SectionKind = SectionKind(Cow::Borrowed("episodes"));
    /// Tool definitions (token accounting only).
    pub const TOOLS: SectionKind = SectionKind(Cow::Borrowed("tools"));
    /// The conversation itself (token accounting only).
    pub const HISTORY: SectionKind = SectionKind(Cow::Borrowed("history"));

    /// A kind of your own, e.g. `SectionKind::new("weather")`.
    pub fn new(name: impl Into<Cow<'static, str>>) -> Self {
        SectionKind(name.into())
    }

    /// The kind's name, as reports and JSON show it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SectionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One block of instructions with its source.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Section {
    /// The provider that produced it (filled in by composition when empty).
    pub source: String,
    /// What it is.
    pub kind: SectionKind,
    /// The text as it goes into the system message.
    pub text: String,
    /// Whether it belongs in the cacheable prefix or to this message only.
    pub placement: Placement,
    /// What it carries, by name (selected skills, memory ids), for reports.
    pub items: Vec<String>,
    /// The version of each item (a content hash, a time of change), in the order of `items`,
    /// so a conversation is sent an item again only when it changed
    /// ([`SentOnce`](crate::provider::SentOnce)); empty when the provider does not version them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<String>,
}

impl Section {
    /// A section that is the same on every request.
    pub fn stable(kind: SectionKind, text: impl Into<String>) -> Self {
        Section {
            source: String::new(),
            kind,
            text: text.into(),
            placement: Placement::Stable,
            items: Vec::new(),
            versions: Vec::new(),
        }
    }

    /// A section chosen for this message.
    pub fn per_message(kind: SectionKind, text: impl Into<String>) -> Self {
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

    /// Name what the section carries, each item with its version (see [`Section::versions`]).
    pub fn with_versioned_items(mut self, items: impl IntoIterator<Item = (String, String)>) -> Self {
        (self.items, self.versions) = items.into_iter().unzip();
        self
    }
}

/// A thing the model can load by name on demand (a skill), listed by name and description.
///
/// The text is shared (`Arc<str>`): a catalog is the same on every request, so copying it into
/// each request's context costs reference counts, not allocations.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub struct CatalogEntry {
    /// What the model asks for to load the thing (e.g. a skill's name for `read_skill`).
    pub name: Arc<str>,
    /// When the thing applies; the model decides whether to load it from this line alone.
    pub description: Arc<str>,
}

impl CatalogEntry {
    /// The heading the catalog is listed under in a request's system text.
    pub const HEADING: &'static str = "## Available skills";

    /// An entry.
    pub fn new(name: impl Into<Arc<str>>, description: impl Into<Arc<str>>) -> Self {
        CatalogEntry {
            name: name.into(),
            description: description.into(),
        }
    }

    /// The entry's line under [`CatalogEntry::HEADING`]. The request is rendered with it and a
    /// provider budgets its catalog with it, so the two cannot disagree.
    pub fn line(&self) -> String {
        format!("- {}: {}", self.name, self.description)
    }
}

/// What providers contribute to one request: instructions, extra messages, tools and a
/// catalog, each attributed to its source.
#[derive(Clone, Default)]
pub struct Context {
    /// Instructions, each with its kind, placement and source.
    pub sections: Vec<Section>,
    /// Things the model may load on demand, listed under [`CatalogEntry::HEADING`]. Shared:
    /// a provider hands out the same catalog on every request for one reference count, not
    /// one per entry.
    pub catalog: Arc<[CatalogEntry]>,
    /// Extra messages sent after the system text and before the conversation, never stored in
    /// the thread.
    pub messages: Vec<Message>,
    /// Tools offered for this run only, beside the agent's own; names must be unique across
    /// the agent and every provider.
    pub tools: Vec<Arc<dyn Tool>>,
    /// Limits on which tools the model may call in this run (a skill's `allowed-tools`); the
    /// runner refuses a call any of them does not allow.
    pub restrictions: Vec<crate::restrict::ToolRestriction>,
    /// How each composed provider fared (filled in by composition).
    pub reports: Vec<ProviderReport>,
    /// What providers chose but did not send, each with why.
    pub left_out: Vec<LeftOut>,
    /// Tokens a baseline request would have added (or, when negative, saved) compared with this
    /// context, filled in only when [`RunInfo::baseline`](crate::provider::RunInfo::baseline) asks: a skills
    /// provider reports what sending every skill in full would cost. Composition sums it.
    pub baseline_delta: i64,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tools: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
        f.debug_struct("Context")
            .field("sections", &self.sections)
            .field("catalog", &self.catalog)
            .field("messages", &self.messages)
            .field("tools", &tools)
            .field("restrictions", &self.restrictions)
            .field("reports", &self.reports)
            .field("left_out", &self.left_out)
            .field("baseline_delta", &self.baseline_delta)
            .finish()
    }
}

impl Context {
    /// An empty contribution; add parts with the `with_*` methods.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add stable instructions (kind [`SectionKind::INSTRUCTIONS`]).
    pub fn with_instructions(self, text: impl Into<String>) -> Self {
        self.with_section(Section::stable(SectionKind::INSTRUCTIONS, text))
    }

    /// Add a section of any kind and placement.
    pub fn with_section(mut self, section: Section) -> Self {
        self.sections.push(section);
        self
    }

    /// Add a message to send before the conversation.
    pub fn with_message(mut self, message: Message) -> Self {
        self.messages.push(message);
        self
    }

    /// Offer a tool for this run.
    pub fn with_tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Add entries to the catalog, after those already there.
    pub fn with_catalog(mut self, entries: impl IntoIterator<Item = CatalogEntry>) -> Self {
        self.extend_catalog(entries.into_iter().collect());
        self
    }

    /// Put `more` after the catalog: shared as it is when the catalog is empty, copied only
    /// when both hold entries.
    fn extend_catalog(&mut self, more: Arc<[CatalogEntry]>) {
        if self.catalog.is_empty() {
            self.catalog = more;
        } else if !more.is_empty() {
            self.catalog = self.catalog.iter().chain(more.iter()).cloned().collect();
        }
    }

    /// Add another contribution's parts after this one's: how composition merges providers,
    /// and how a host that runs providers one after another (to share a budget) joins them.
    pub fn append(&mut self, other: &mut Context) {
        self.sections.append(&mut other.sections);
        self.extend_catalog(std::mem::take(&mut other.catalog));
        self.messages.append(&mut other.messages);
        self.tools.append(&mut other.tools);
        self.restrictions.append(&mut other.restrictions);
        self.reports.append(&mut other.reports);
        self.left_out.append(&mut other.left_out);
        self.baseline_delta += other.baseline_delta;
    }

    /// Whether there is nothing to send (reports, items left out and the baseline delta do not
    /// count).
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

    /// The catalog as the section a request carries: [`CatalogEntry::HEADING`] and one line per
    /// entry; `None` when the catalog is empty.
    pub fn catalog_section(&self) -> Option<Section> {
        if self.catalog.is_empty() {
            return None;
        }
        let mut text = String::from(CatalogEntry::HEADING);
        for e in self.catalog.iter() {
            text.push('\n');
            text.push_str(&e.line());
        }
        let names = self.catalog.iter().map(|e| e.name.to_string());
        Some(Section {
            source: "catalog".into(),
            ..Section::stable(SectionKind::CATALOG, text).with_items(names)
        })
    }

    /// Everything this context puts in a request's system text, in the order a request
    /// carries it: stable sections, the catalog, then per-message sections; `None` when empty.
    /// For a host that sends the request itself (a framework's agent) rather than an
    /// [`Agent`](crate::agent::Agent).
    pub fn system_text(&self) -> Option<String> {
        let catalog = self.catalog_section();
        let stable = self.sections.iter().filter(|s| s.placement == Placement::Stable);
        let volatile = self
            .sections
            .iter()
            .filter(|s| s.placement == Placement::PerMessage);
        join_blocks(
            stable
                .chain(catalog.as_ref())
                .chain(volatile)
                .map(|s| s.text.as_str()),
        )
    }

    /// All instructions as one text, sections separated by a blank line; `None` when empty.
    pub fn instructions(&self) -> Option<String> {
        join_blocks(self.ordered_sections().map(|s| s.text.as_str()))
    }

    /// Names of the items carried by sections of `kind` (e.g. the selected skills).
    pub fn items_of(&self, kind: &SectionKind) -> Vec<String> {
        self.sections
            .iter()
            .filter(|s| &s.kind == kind)
            .flat_map(|s| s.items.iter().cloned())
            .collect()
    }
}

/// Join non-empty text blocks with a blank line; `None` when nothing remains.
pub(crate) fn join_blocks<'a>(blocks: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut out = String::new();
    for block in blocks.into_iter().map(str::trim).filter(|b| !b.is_empty()) {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(block);
    }
    (!out.is_empty()).then_some(out)
}

/// Something a provider chose for the request but did not send: a skill past the cap or over
/// the token budget. Listed so a cap or a budget never drops an item without a word.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    /// The kind of section it would have gone to (`skills`, …).
    pub kind: SectionKind,
    /// The item, as [`Section::items`](crate::context::Section::items) would have named it.
    pub name: String,
    /// Why, in a few words: `past the cap`, `over the token budget`.
    pub why: String,
}
