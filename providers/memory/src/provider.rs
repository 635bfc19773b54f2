//! [`MemoryContextProvider`]: project memory as a ctxkit context provider.
//!
//! - `invoking` injects, in the stable prefix of every request, `## Project Essentials`: the
//!   project's preferences and corrections of importance ≥ 0.8 (an explicit "remember that …"
//!   is 0.95), most important then newest first, within their own 1,000 characters — a
//!   standing preference applies whether or not the message shares a word with it. Then, per
//!   message, `## Project Memory` with the other memories most relevant to the latest user
//!   message (category badges, best first) and `## Past Runs`, similar earlier runs as short
//!   "avoid" / "worked before" / "found" lines, together within 2,000 characters and the run's
//!   token budget; for "what do you remember about …" it injects what matches that query
//!   instead, and for a "remember …" holding a secret it tells the model the request was
//!   refused and why. Text matching a secret rule is redacted when read, whenever it was stored.
//! - `invoking` only reads: previews call it too, and nothing a preview does is recorded.
//! - `run_finished`, once per run, does every write: it counts an access for each memory the
//!   run injected, carries out explicit commands ("remember …", "forget …"), persists the
//!   thread's `project:` state and records one episodic record: a failure when the run
//!   failed, a discovery when a tool failed and the run still got its answer, else a success.
//!
//! Memories are scoped by `RunInfo::project` (or the provider's own project); without a
//! project the provider contributes nothing and writes nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use ctxkit::{
    latest_user_message, BpeCounter, Context, ContextProvider, Error, Message, Role, RunInfo, RunOutcome,
    Section, SectionKind, TokenCounter,
};

use crate::commands::{detect_memory_command, MemoryCommand, EXPLICIT_IMPORTANCE};
use crate::error::MemoryError;
use crate::rules;
use crate::store::MemoryStore;
use crate::text::{derive_keywords, truncate_chars};
use crate::types::*;
use crate::types::{ListOptions, ListOrder};

/// The section heading.
pub(crate) const HEADING: &str = "## Project Memory";
/// The line under the heading, telling the model where the facts come from.
pub(crate) const INTRO: &str = "The following facts were learned from previous sessions:";
/// The default injection budget in characters (about 500 tokens).
pub(crate) const DEFAULT_MAX_CHARS: usize = 2000;
const SUMMARY_CHARS: usize = 300;
/// The heading of the memories sent with every request.
pub(crate) const ESSENTIALS_HEADING: &str = "## Project Essentials";
/// The line under it.
pub(crate) const ESSENTIALS_INTRO: &str =
    "Standing preferences and corrections for this project; always apply them:";
/// The essentials' own budget in characters.
pub(crate) const DEFAULT_ESSENTIAL_CHARS: usize = 1000;
/// The most essentials read per request (their budget cuts them further).
const MAX_ESSENTIALS: usize = 64;
/// A short essential's line in characters: each category's page holds as many as the
/// budget could show of them, so a one-shot process reads about 50 rows, not 128.
const SHORT_ESSENTIAL_CHARS: usize = 40;
/// Preferences and corrections at least this important are essentials.
pub(crate) const DEFAULT_ESSENTIAL_IMPORTANCE: f32 = 0.8;
/// The heading of similar earlier runs.
pub(crate) const EPISODES_HEADING: &str = "## Past Runs";
/// Earlier runs at least this similar to the message are shown…
const EPISODE_SIMILARITY: f32 = 0.35;
/// …at most this many, from the latest this many.
const MAX_EPISODES: usize = 3;
const EPISODE_WINDOW: usize = 200;
const EPISODE_LINE_CHARS: usize = 240;

/// The line a command is read from, as typed: the message's first line.
fn command_line(message: &str) -> &str {
    message.trim().lines().next().unwrap_or("")
}

/// Render memories as the `## Project Memory` section, best first, keeping only what fits in
/// `max_chars` characters and (when given) `max_tokens` tokens. Returns the text and the ids of
/// the memories in it; no memory fits → empty text.
pub(crate) fn render_memories(
    entries: &[&MemoryEntry],
    max_chars: usize,
    max_tokens: Option<(usize, &dyn TokenCounter)>,
) -> (String, Vec<String>) {
    let lines: Vec<(String, String)> = entries.iter().map(|e| (e.id.clone(), memory_line(e))).collect();
    render_lines(&format!("{HEADING}\n{INTRO}\n"), &lines, max_chars, max_tokens)
}

/// Render `head` and as many `(id, line)` as fit in `max_chars` characters and (when given)
/// `max_tokens` tokens, in order, skipping a line that does not fit. Nothing fits → empty.
fn render_lines(
    head: &str,
    lines: &[(String, String)],
    max_chars: usize,
    max_tokens: Option<(usize, &dyn TokenCounter)>,
) -> (String, Vec<String>) {
    let mut text = head.to_string();
    let mut chars = text.chars().count();
    let mut ids = Vec::new();
    for (id, body) in lines {
        let line = format!("\n- {body}");
        let line_chars = line.chars().count();
        if chars + line_chars > max_chars {
            continue;
        }
        if let Some((budget, counter)) = max_tokens {
            let candidate = format!("{text}{line}");
            if counter.count(&candidate) > budget {
                continue;
            }
        }
        text.push_str(&line);
        chars += line_chars;
        ids.push(id.clone());
    }
    if ids.is_empty() {
        return (String::new(), ids);
    }
    (text, ids)
}

/// Whether the conversation already holds `entry` as it is now ([`RunInfo::sent`]), as an
/// essential or as a relevant memory: its version is the time it last changed.
fn was_sent(run: &RunInfo, entry: &MemoryEntry) -> bool {
    run.sent.is_some() && {
        let version = entry.updated_at.to_string();
        [SectionKind::ESSENTIALS, SectionKind::MEMORIES]
            .iter()
            .any(|kind| run.was_sent(kind, &entry.id, &version))
    }
}

/// The rendered `ids` of `entries`, each with its version (see [`was_sent`]).
fn versioned(entries: &[MemoryEntry], ids: Vec<String>) -> Vec<(String, String)> {
    ids.into_iter()
        .map(|id| {
            let version = entries
                .iter()
                .find(|e| e.id == id)
                .map_or_else(String::new, |e| e.updated_at.to_string());
            (id, version)
        })
        .collect()
}

/// The tokens a request has left, and how they are counted.
#[derive(Clone, Copy)]
struct TokensLeft<'a> {
    left: usize,
    counter: &'a dyn TokenCounter,
}

impl<'a> TokensLeft<'a> {
    fn pair(self) -> (usize, &'a dyn TokenCounter) {
        (self.left, self.counter)
    }
}

/// What is left after `section` (when there is one) took its tokens.
fn spent<'a>(tokens: &mut Option<TokensLeft<'a>>, section: &Option<Section>) -> Option<TokensLeft<'a>> {
    if let (Some(t), Some(s)) = (tokens.as_mut(), section) {
        t.left = t.left.saturating_sub(t.counter.count(&s.text));
    }
    *tokens
}

/// A memory as one line: its category badge and content.
fn memory_line(e: &MemoryEntry) -> String {
    format!("{} {}", e.category.badge(), e.content.trim())
}

/// An earlier run as one line: what to avoid, what was found, or what worked.
fn episode_line(e: &EpisodicRecord) -> String {
    let task = ctxkit_secrets::redact(&e.task_summary);
    let line = match e.record_type {
        RecordType::Failure => format!(
            "[AVOID] {task} — failed: {}",
            ctxkit_secrets::redact(&e.outcome_summary)
        ),
        RecordType::Discovery => format!("[FOUND] {task} — {}", ctxkit_secrets::redact(&e.outcome_summary)),
        RecordType::Success => format!(
            "[WORKED] {task} — {}",
            ctxkit_secrets::redact(&e.approach_summary)
        ),
    };
    truncate_chars(&line.replace('\n', " "), EPISODE_LINE_CHARS)
}

/// What the model is told about a memory command in `message`: a "remember" refused for a
/// secret, or a "what do you remember" that found nothing.
fn command_notes(message: &str, command: Option<&MemoryCommand>, nothing_found: bool) -> Vec<String> {
    match command {
        Some(MemoryCommand::Remember { content, .. }) => {
            // The raw line first: the command's content is already recased ("Ghp_…").
            ctxkit_secrets::find_secret(command_line(message))
                .or_else(|| ctxkit_secrets::find_secret(content))
                .map(|found| {
                    format!(
                        "Note: the user asked to remember something that contains what looks like {} (rule `{}`). \
                         It was not stored, because secrets are never stored; tell the user so.",
                        found.description, found.rule
                    )
                })
                .into_iter()
                .collect()
        }
        Some(MemoryCommand::Query { query, .. }) if nothing_found => vec![if query.is_empty() {
            "Nothing has been remembered for this project yet.".to_string()
        } else {
            format!(
                "Nothing is remembered about \"{}\" yet.",
                ctxkit_secrets::redact(query)
            )
        }],
        _ => Vec::new(),
    }
}

/// Injects project memories and learns from explicit commands (see the crate docs).
///
/// ```no_run
/// use std::sync::Arc;
/// use ctxkit_memory::{MemoryContextProvider, SqliteMemoryStore};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = Arc::new(SqliteMemoryStore::open("memory.db")?);
/// let provider = MemoryContextProvider::new(store).with_project("/work/repo");
/// // Agent::builder().provider(provider)…
/// # Ok(()) }
/// ```
pub struct MemoryContextProvider {
    store: Arc<dyn MemoryStore>,
    name: String,
    project: Option<String>,
    max_chars: usize,
    max_memories: usize,
    min_importance: f32,
    essential_chars: usize,
    essential_importance: f32,
    counter: Arc<dyn TokenCounter>,
    commands: bool,
    episodes: bool,
    persist_state: bool,
    count_access: bool,
    /// `project:` state values already persisted, per project and key.
    persisted: Mutex<HashMap<(String, String), serde_json::Value>>,
}

impl std::fmt::Debug for MemoryContextProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryContextProvider")
            .field("name", &self.name)
            .field("project", &self.project)
            .field("max_chars", &self.max_chars)
            .field("max_memories", &self.max_memories)
            .finish_non_exhaustive()
    }
}

impl MemoryContextProvider {
    /// A provider over `store`: at most 10 memories, 2,000 characters, importance ≥ 0.1,
    /// explicit commands, episodic records and `project:` state on.
    pub fn new(store: Arc<dyn MemoryStore>) -> Self {
        MemoryContextProvider {
            store,
            name: "memory".into(),
            project: None,
            max_chars: DEFAULT_MAX_CHARS,
            max_memories: 10,
            min_importance: 0.1,
            essential_chars: DEFAULT_ESSENTIAL_CHARS,
            essential_importance: DEFAULT_ESSENTIAL_IMPORTANCE,
            counter: Arc::new(BpeCounter),
            commands: true,
            episodes: true,
            persist_state: true,
            count_access: true,
            persisted: Mutex::default(),
        }
    }

    /// The project used when the run does not name one.
    pub fn with_project(mut self, project: impl Into<String>) -> Self {
        self.project = Some(project.into());
        self
    }

    /// The provider's name in reports and errors (default `memory`).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Character budget of the injected section (default 2,000).
    pub fn with_max_chars(mut self, max_chars: usize) -> Self {
        self.max_chars = max_chars;
        self
    }

    /// At most this many memories per request (default 10).
    pub fn with_max_memories(mut self, max_memories: usize) -> Self {
        self.max_memories = max_memories;
        self
    }

    /// Ignore memories below this importance (default 0.1).
    pub fn with_min_importance(mut self, min_importance: f32) -> Self {
        self.min_importance = min_importance;
        self
    }

    /// Character budget of the essentials sent with every request (default 1,000; 0 turns
    /// them off). It also sizes what is read: the most important `chars / 40` preferences and
    /// as many corrections (at most 64 of each), so the budget, not the project, sets the cost.
    pub fn with_essential_chars(mut self, chars: usize) -> Self {
        self.essential_chars = chars;
        self
    }

    /// Preferences and corrections at least this important are essentials (default 0.8).
    pub fn with_essential_importance(mut self, importance: f32) -> Self {
        self.essential_importance = importance;
        self
    }

    /// How the run's token budget is counted (default: real BPE counts).
    pub fn with_token_counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.counter = counter;
        self
    }

    /// Do not act on explicit commands.
    pub fn without_commands(mut self) -> Self {
        self.commands = false;
        self
    }

    /// Do not record episodic records.
    pub fn without_episodes(mut self) -> Self {
        self.episodes = false;
        self
    }

    /// Write nothing: no access counts, commands, episodic records or `project:` state; for a
    /// database opened read-only.
    pub fn read_only(mut self) -> Self {
        self.commands = false;
        self.episodes = false;
        self.persist_state = false;
        self.count_access = false;
        self
    }

    /// Do not persist `project:` state.
    pub fn without_state(mut self) -> Self {
        self.persist_state = false;
        self
    }

    /// The store behind the provider.
    pub fn store(&self) -> &Arc<dyn MemoryStore> {
        &self.store
    }

    fn project_of(&self, run: &RunInfo) -> Option<String> {
        run.project.clone().or_else(|| self.project.clone())
    }

    fn err(&self, e: MemoryError) -> Error {
        Error::provider(self.name.clone(), e)
    }

    /// The project's essentials: current preferences and corrections of at least the
    /// essential importance, most important then newest first. Each category is listed on
    /// its own, so the project's other memories never crowd them out of the page, and the
    /// read is two pages sized by the budget whatever the project's size.
    async fn essentials(&self, project: &str) -> Result<Vec<MemoryEntry>, MemoryError> {
        if self.essential_chars == 0 {
            return Ok(Vec::new());
        }
        let page = (self.essential_chars / SHORT_ESSENTIAL_CHARS).clamp(1, MAX_ESSENTIALS);
        let mut entries = Vec::new();
        for category in [MemoryCategory::Preference, MemoryCategory::Correction] {
            let options = ListOptions {
                limit: page,
                order: ListOrder::Importance,
                category: Some(category),
                ..ListOptions::default()
            };
            entries.extend(self.store.list(project, options).await?);
        }
        entries.retain(|e| e.importance >= self.essential_importance.max(self.min_importance));
        // The two pages merged in their own order, `ListOrder::Importance`.
        entries.sort_by(|a, b| {
            b.importance
                .total_cmp(&a.importance)
                .then(b.created_at.cmp(&a.created_at))
                .then_with(|| a.id.cmp(&b.id))
        });
        entries.truncate(MAX_ESSENTIALS);
        Ok(entries)
    }

    /// Earlier runs of the project similar to `message`, most similar first: failures and
    /// discoveries always, successes only when they used tools (an answer alone teaches little).
    async fn similar_episodes(
        &self,
        project: &str,
        message: &str,
    ) -> Result<Vec<EpisodicRecord>, MemoryError> {
        let q_terms = crate::text::terms(message);
        if q_terms.is_empty() {
            return Ok(Vec::new());
        }
        let episodes = self.store.episodes(project, EPISODE_WINDOW).await?;
        let tasks: Vec<Vec<String>> = episodes
            .iter()
            .map(|e| crate::text::terms(&e.task_summary))
            .collect();
        let mut df: HashMap<String, u32> = HashMap::new();
        for t in &tasks {
            for term in t.iter().collect::<std::collections::BTreeSet<_>>() {
                *df.entry(term.clone()).or_default() += 1;
            }
        }
        let vocab = crate::retrieval::Vocabulary::new(tasks.len() as u64, df);
        let qv = vocab.vector(&q_terms);
        let mut scored: Vec<(f32, EpisodicRecord)> = episodes
            .into_iter()
            .zip(&tasks)
            .filter(|(e, _)| e.record_type != RecordType::Success || !e.tools_used.is_empty())
            .map(|(e, t)| (qv.cosine(&vocab.vector(t)), e))
            .filter(|(s, _)| *s >= EPISODE_SIMILARITY)
            .collect();
        scored.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| b.1.created_at.cmp(&a.1.created_at))
        });
        Ok(scored.into_iter().take(MAX_EPISODES).map(|(_, e)| e).collect())
    }

    /// The memories to consider for this message, best first.
    async fn select(
        &self,
        project: &str,
        message: &str,
        command: Option<&MemoryCommand>,
    ) -> Result<Vec<MemoryEntry>, MemoryError> {
        let (query, category) = match command {
            Some(MemoryCommand::Query { query, category }) => (query.as_str(), *category),
            _ => (message, None),
        };
        if query.trim().is_empty() {
            // "What do you remember?": the most important memories.
            let options = ListOptions {
                category,
                limit: self.max_memories,
                order: ListOrder::Importance,
                ..ListOptions::default()
            };
            let mut entries = self.store.list(project, options).await?;
            entries.retain(|e| e.importance >= self.min_importance);
            return Ok(entries);
        }
        let mut request = MemorySearchRequest::new(project, query)
            .top_k(self.max_memories)
            .min_importance(self.min_importance)
            .without_touch();
        if let Some(c) = category {
            request = request.categories([c]);
        }
        Ok(self
            .store
            .search(request)
            .await?
            .into_iter()
            .map(|r| r.entry)
            .collect())
    }

    /// `## Project Essentials`, within its own characters and the run's tokens.
    async fn essentials_section(
        &self,
        project: &str,
        run: &RunInfo,
        tokens: Option<TokensLeft<'_>>,
    ) -> ctxkit::Result<Option<Section>> {
        let mut essentials = self.essentials(project).await.map_err(|e| self.err(e))?;
        essentials.retain(|e| !was_sent(run, e));
        let lines: Vec<(String, String)> = essentials
            .iter()
            .map(|e| (e.id.clone(), memory_line(e)))
            .collect();
        let head = format!("{ESSENTIALS_HEADING}\n{ESSENTIALS_INTRO}\n");
        let (text, ids) = render_lines(&head, &lines, self.essential_chars, tokens.map(TokensLeft::pair));
        Ok((!text.is_empty()).then(|| {
            Section::stable(SectionKind::ESSENTIALS, text).with_versioned_items(versioned(&essentials, ids))
        }))
    }

    /// `## Project Memory`: the memories relevant to `message` (or what a "what do you
    /// remember" asks for) but those already `taken`, and the notes a command calls for.
    async fn memories_section(
        &self,
        project: &str,
        message: &str,
        command: Option<&MemoryCommand>,
        taken: &[String],
        run: &RunInfo,
        tokens: Option<TokensLeft<'_>>,
    ) -> ctxkit::Result<Option<Section>> {
        let mut entries = self
            .select(project, message, command)
            .await
            .map_err(|e| self.err(e))?;
        entries.retain(|e| !taken.contains(&e.id) && !was_sent(run, e));
        let refs: Vec<&MemoryEntry> = entries.iter().collect();
        let (mut text, ids) = render_memories(&refs, self.max_chars, tokens.map(TokensLeft::pair));
        let notes = command_notes(message, command, ids.is_empty());
        if !notes.is_empty() && text.is_empty() {
            text = HEADING.to_string();
        }
        for note in notes {
            text.push_str("\n\n");
            text.push_str(&note);
        }
        Ok((!text.is_empty()).then(|| {
            Section::per_message(SectionKind::MEMORIES, text).with_versioned_items(versioned(&entries, ids))
        }))
    }

    /// `## Past Runs`: earlier runs similar to `message`, in what the memories left.
    async fn episodes_section(
        &self,
        project: &str,
        message: &str,
        chars: usize,
        tokens: Option<TokensLeft<'_>>,
    ) -> ctxkit::Result<Option<Section>> {
        let episodes = self
            .similar_episodes(project, message)
            .await
            .map_err(|e| self.err(e))?;
        let lines: Vec<(String, String)> = episodes.iter().map(|e| (e.id.clone(), episode_line(e))).collect();
        let head = format!("{EPISODES_HEADING}\nEarlier runs of similar tasks in this project:\n");
        let (text, ids) = render_lines(&head, &lines, chars, tokens.map(TokensLeft::pair));
        Ok((!text.is_empty()).then(|| Section::per_message(SectionKind::EPISODES, text).with_items(ids)))
    }

    /// Carry out `command`, which was read from `line` (the message's first line, as typed).
    async fn run_command(
        &self,
        project: &str,
        command: MemoryCommand,
        line: &str,
        run: &RunInfo,
    ) -> Result<(), Error> {
        match command {
            MemoryCommand::Remember { content, category } => {
                // Check what the user typed, before the command recased or trimmed it.
                if let Err(e) = rules::check_secret("memory", line) {
                    tracing::warn!(provider = %self.name, project, error = %e, "refused to remember");
                    return Ok(());
                }
                let entry = NewMemoryEntry::new(project, category, content)
                    .importance(EXPLICIT_IMPORTANCE)
                    .context("explicit user command");
                let entry = if run.thread_id.is_empty() {
                    entry
                } else {
                    entry.session(run.thread_id.clone())
                };
                match self.store.upsert(entry).await {
                    Ok(result) => {
                        tracing::info!(provider = %self.name, project, id = ?result.id(), "remembered on request");
                        Ok(())
                    }
                    Err(e @ MemoryError::Secret { .. }) => {
                        // The model was told in `invoking`; nothing is stored.
                        tracing::warn!(provider = %self.name, project, error = %e, "refused to remember");
                        Ok(())
                    }
                    Err(e) => Err(self.err(e)),
                }
            }
            MemoryCommand::Forget { query } => {
                let gone = self
                    .store
                    .forget(project, &query)
                    .await
                    .map_err(|e| self.err(e))?;
                let ids: Vec<&str> = gone.iter().map(|e| e.id.as_str()).collect();
                tracing::info!(provider = %self.name, project, forgotten = ?ids, "forgot on request");
                Ok(())
            }
            MemoryCommand::Query { .. } => Ok(()),
        }
    }

    /// Write the `project:` entries of `state` the store does not hold yet.
    async fn persist_state(&self, project: &str, state: &ctxkit::State) {
        for (key, value) in state.project_entries() {
            let key = key.trim_start_matches(ctxkit::State::PROJECT);
            let cache_key = (project.to_string(), key.to_string());
            let known = self
                .persisted
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&cache_key)
                == Some(value);
            if known {
                continue;
            }
            match self.store.set_state(project, key, value.clone()).await {
                Ok(()) => {
                    self.persisted
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(cache_key, value.clone());
                }
                Err(e) => {
                    tracing::warn!(provider = %self.name, project, key, error = %e, "project state not persisted")
                }
            }
        }
    }

    /// One episodic record of the run: what was asked, how (tools), and how it ended.
    async fn record_episode(
        &self,
        project: &str,
        outcome: &RunOutcome<'_>,
        run: &RunInfo,
    ) -> Result<(), Error> {
        // Tools called during this run: tool calls after its user message, the thread's last.
        let start = outcome
            .messages
            .iter()
            .rposition(|m| m.role == Role::User)
            .unwrap_or(0);
        let mut tools: Vec<String> = Vec::new();
        for m in &outcome.messages[start..] {
            for call in &m.tool_calls {
                if !tools.contains(&call.function.name) {
                    tools.push(call.function.name.clone());
                }
            }
        }
        let user = outcome.input;
        // A tool that failed (its error went back to the model) in a run that still ended
        // with an answer: the way around it is worth finding again.
        let failed_tool = outcome.messages[start..]
            .iter()
            .find(|m| m.role == Role::Tool && m.content.trim_start().starts_with("error:"));
        let (record_type, ending) = match (outcome.result, failed_tool) {
            (Ok(reply), Some(t)) => (
                RecordType::Discovery,
                format!(
                    "`{}` failed ({}), then: {}",
                    t.name.as_deref().unwrap_or("a tool"),
                    truncate_chars(t.content.trim(), 80),
                    reply.content
                ),
            ),
            (Ok(reply), None) => (RecordType::Success, reply.content.clone()),
            (Err(e), _) => (RecordType::Failure, format!("the run failed: {e}")),
        };
        let clean = |s: &str| truncate_chars(&ctxkit_secrets::redact(s.trim()), SUMMARY_CHARS);
        let task = clean(&user.content);
        let approach = if tools.is_empty() {
            "answered directly".to_string()
        } else {
            format!("used tools: {}", tools.join(", "))
        };
        let record = NewEpisodicRecord {
            project_path: project.to_string(),
            session_id: if run.thread_id.is_empty() {
                "unknown".into()
            } else {
                run.thread_id.clone()
            },
            record_type,
            keywords: derive_keywords(&task),
            task_summary: task,
            approach_summary: approach,
            outcome_summary: clean(&ending),
            tools_used: tools,
        };
        self.store.add_episode(record).await.map_err(|e| self.err(e))?;
        Ok(())
    }
}

#[async_trait]
impl ContextProvider for MemoryContextProvider {
    fn name(&self) -> &str {
        &self.name
    }

    async fn invoking(&self, messages: &[Message], run: &RunInfo) -> ctxkit::Result<Context> {
        let (Some(project), Some(user)) = (self.project_of(run), latest_user_message(messages)) else {
            return Ok(Context::new());
        };
        let command = self
            .commands
            .then(|| detect_memory_command(&user.content))
            .flatten();
        let mut tokens = run.token_budget.map(|b| TokensLeft {
            left: b,
            counter: &*self.counter,
        });
        let essentials = self.essentials_section(&project, run, tokens).await?;
        let taken = essentials.as_ref().map_or(&[][..], |s| &s.items[..]);
        let memories = self
            .memories_section(
                &project,
                &user.content,
                command.as_ref(),
                taken,
                run,
                spent(&mut tokens, &essentials),
            )
            .await?;
        let episodes = match command {
            None => {
                let chars = self
                    .max_chars
                    .saturating_sub(memories.as_ref().map_or(0, |s| s.text.chars().count()));
                self.episodes_section(&project, &user.content, chars, spent(&mut tokens, &memories))
                    .await?
            }
            Some(_) => None,
        };
        let mut ctx = Context::new();
        ctx.sections
            .extend([essentials, memories, episodes].into_iter().flatten());
        Ok(ctx)
    }

    async fn run_finished(&self, run: &RunInfo, outcome: &RunOutcome<'_>) -> ctxkit::Result<()> {
        let Some(project) = self.project_of(run) else {
            return Ok(());
        };
        let used: Vec<String> = outcome
            .context
            .sections
            .iter()
            // Its own sections: attributed to it by composition, or unattributed when the
            // provider is called on its own.
            .filter(|s| {
                (s.kind == SectionKind::MEMORIES || s.kind == SectionKind::ESSENTIALS)
                    && (s.source == self.name || s.source.is_empty())
            })
            .flat_map(|s| s.items.iter().cloned())
            .collect();
        if !used.is_empty() && self.count_access {
            self.store.touch(&used).await.map_err(|e| self.err(e))?;
        }
        if self.commands {
            let message = &outcome.input.content;
            if let Some(command) = detect_memory_command(message) {
                self.run_command(&project, command, command_line(message), run)
                    .await?;
            }
        }
        if self.persist_state {
            self.persist_state(&project, outcome.state).await;
        }
        if self.episodes {
            self.record_episode(&project, outcome, run).await?;
        }
        Ok(())
    }
}
