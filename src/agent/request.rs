//! Request assembly: base instructions and stable provider output first (so prompt caches keep
//! hitting), per-message context after them, then the conversation.

use std::collections::BTreeMap;

use serde::Serialize;

use super::thread::Thread;
use crate::context::{join_blocks, Placement, Section, SectionKind};
use crate::context::{CatalogEntry, Context};
use crate::message::{Message, Role};
use crate::model::{ModelRequest, RequestMeta};
use crate::tokens::TokenCounter;
use crate::tool::{ToolDefinition, ToolRegistry};

/// How context reaches the model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Assembly {
    /// A fresh system message on every request (the default).
    #[default]
    PerRequest,
    /// The full context once into the history, then only deltas: a `[Context Update]` when
    /// the instructions, tools or catalog changed, nothing when they did not.
    Lazy,
}

/// Token counts of one request, in total and by section kind (instructions, skills, catalog,
/// memories, tools, history, …).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TokenReport {
    /// Tokens of the whole request, framing included.
    pub total: usize,
    /// Tokens of each kind of content.
    pub by_section: BTreeMap<SectionKind, usize>,
}

fn join_sections<'a>(sections: impl IntoIterator<Item = &'a Section>) -> Option<String> {
    join_blocks(sections.into_iter().map(|s| s.text.as_str()))
}

/// Build the request for the next model call. In lazy mode this may add a context message to
/// the thread's history, which is why the thread is mutable.
pub(crate) fn assemble(
    base: &Section,
    ctx: &Context,
    tools: &ToolRegistry,
    thread: &mut Thread,
    assembly: Assembly,
    counter: &dyn TokenCounter,
) -> (ModelRequest, TokenReport) {
    let stable: Vec<&Section> = std::iter::once(base)
        .chain(ctx.sections.iter().filter(|s| s.placement == Placement::Stable))
        .collect();
    let volatile: Vec<&Section> = ctx
        .sections
        .iter()
        .filter(|s| s.placement == Placement::PerMessage)
        .collect();
    let definitions = tools.definitions();
    let catalog = ctx.catalog_section();
    let (messages, sent, stable_prefix) = match assembly {
        Assembly::PerRequest => per_request(ctx, &stable, catalog.as_ref(), &volatile, thread),
        // The stable part lives in the history, where a breakpoint on the last message covers it.
        Assembly::Lazy => {
            let (messages, sent) = lazy(ctx, &stable, &volatile, &definitions, thread);
            (messages, sent, 0)
        }
    };
    let attributed = stable
        .iter()
        .copied()
        .chain(catalog.as_ref())
        .chain(volatile.iter().copied());
    let mut request = ModelRequest {
        messages,
        tools: definitions,
        reply_schema: None,
        stable_prefix,
        meta: RequestMeta {
            sections: attributed.cloned().collect(),
            tokens: 0,
        },
    };
    let report = count(&request, &sent, thread, counter);
    request.meta.tokens = report.total;
    (request, report)
}

/// One system message with every section (stable ones first), then the providers' messages
/// and the conversation. Returns the messages, the sections sent and the length of the system
/// text's stable prefix (the stable sections and the catalog).
fn per_request<'a>(
    ctx: &Context,
    stable: &[&'a Section],
    catalog: Option<&'a Section>,
    volatile: &[&'a Section],
    thread: &Thread,
) -> (Vec<Message>, Vec<&'a Section>, usize) {
    let constant = stable.len() + usize::from(catalog.is_some());
    let sent: Vec<&Section> = stable
        .iter()
        .copied()
        .chain(catalog)
        .chain(volatile.iter().copied())
        .collect();
    let mut messages = Vec::with_capacity(thread.history().len() + ctx.messages.len() + 1);
    // The stable part and the rest are joined apart, so the prefix's length is known.
    let prefix = join_sections(sent[..constant].iter().copied());
    let stable_prefix = prefix.as_ref().map_or(0, String::len);
    let system = match (prefix, join_sections(sent[constant..].iter().copied())) {
        (Some(prefix), Some(rest)) => Some(prefix + "\n\n" + &rest),
        (prefix, rest) => prefix.or(rest),
    };
    if let Some(system) = system {
        messages.push(Message::system(system));
    }
    messages.extend(ctx.messages.iter().cloned());
    messages.extend(thread.history().iter().cloned());
    (messages, sent, stable_prefix)
}

/// The stable part goes into the thread's history when it is new or changed (in full, or as
/// a delta); the per-message sections go just before the latest user message, never stored.
/// Returns the messages and the sections sent outside the history.
fn lazy<'a>(
    ctx: &Context,
    stable: &[&Section],
    volatile: &[&'a Section],
    definitions: &[ToolDefinition],
    thread: &mut Thread,
) -> (Vec<Message>, Vec<&'a Section>) {
    let preamble = join_sections(stable.iter().copied()).unwrap_or_default();
    let tool_entries: Vec<CatalogEntry> = definitions
        .iter()
        .map(|d| CatalogEntry::new(d.name.as_str(), d.description.as_str()))
        .collect();
    let last_user = last_user_index(thread.history());
    if let Some(text) = thread.context.prepare(&preamble, &tool_entries, &ctx.catalog) {
        thread.history_mut().insert(last_user, Message::system(text));
    }
    // The preamble and catalog live in the history now; they are counted there.
    let mut messages = Vec::with_capacity(thread.history().len() + ctx.messages.len() + 1);
    messages.extend(ctx.messages.iter().cloned());
    messages.extend(thread.history().iter().cloned());
    if let Some(text) = join_sections(volatile.iter().copied()) {
        let at = last_user_index(&messages);
        messages.insert(at, Message::system(text));
    }
    (messages, volatile.to_vec())
}

/// Token counts of `request`: in total, per kind of section sent, for the tools and for the
/// conversation.
fn count(
    request: &ModelRequest,
    sent: &[&Section],
    thread: &Thread,
    counter: &dyn TokenCounter,
) -> TokenReport {
    let mut report = TokenReport::default();
    for s in sent {
        *report.by_section.entry(s.kind.clone()).or_default() += counter.count(&s.text);
    }
    report
        .by_section
        .insert(SectionKind::TOOLS, counter.count_tools(&request.tools));
    let history: usize = thread.history().iter().map(|m| counter.count_message(m)).sum();
    report.by_section.insert(SectionKind::HISTORY, history);
    report.total = counter.count_request(request);
    report
}

/// Where a context message goes: just before the latest user message (or at the end).
fn last_user_index(messages: &[Message]) -> usize {
    messages
        .iter()
        .rposition(|m| m.role == Role::User)
        .unwrap_or(messages.len())
}
