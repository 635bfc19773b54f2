//! `SkillContextProvider`: selects skills for each message and injects them in one of four
//! modes, within a token budget.

use std::collections::HashMap;
use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use ctxkit::{
    latest_user_message, BpeCounter, CatalogEntry, Context, ContextProvider, LeftOut, Message, Phase, Result,
    Role, RunInfo, Section, SectionKind, TokenCounter, Tool, ToolRestriction,
};

use crate::exec::{ActiveHooks, ActiveSkill, ExecOptions, HookOptions, SkillHooks, SkillTool};
use crate::index::{SkillIndex, SkillLibrary};
use crate::meaning::{Described, SkillMeaning};
use crate::render::{skill_block, Budgeted, Limits, Measure, Rest};
use crate::select::{Ranking, Reason, SelectOptions, Selection};
use crate::skill::Skill;
use crate::tools::{ReadSkillTool, ReadSkillsTool};

/// How skills reach the model. A skill's own tools (its `tools.json`) come with its body:
/// every skill's in `Full`, the selected skills' in `Triggered` and `Hybrid`, none in
/// `OnDemand` (a catalog entry is a promise of instructions, not of tools).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Every body on every request: the static baseline.
    Full,
    /// Only the bodies of the skills selected for the message (by trigger, explicit
    /// invocation, `always` or auto-detection).
    Triggered,
    /// A catalog of names and descriptions plus `read_skill`, which the model calls to read a
    /// body (the read-on-demand mode other agents use).
    OnDemand,
    /// Catalog + `read_skill` + the bodies of selected skills.
    #[default]
    Hybrid,
}

impl Mode {
    /// Every mode, for listing and parsing.
    pub const ALL: [Mode; 4] = [Mode::Full, Mode::Triggered, Mode::OnDemand, Mode::Hybrid];

    /// The name `FromStr` and the CLI accept.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Full => "full",
            Mode::Triggered => "triggered",
            Mode::OnDemand => "on-demand",
            Mode::Hybrid => "hybrid",
        }
    }

    fn has_catalog(self) -> bool {
        matches!(self, Mode::OnDemand | Mode::Hybrid)
    }

    fn has_selection(self) -> bool {
        matches!(self, Mode::Triggered | Mode::Hybrid)
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Mode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| format!("unknown skill mode `{s}`; use full, triggered, on-demand or hybrid"))
    }
}

/// Who reads what the provider renders.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RenderProfile {
    /// A request this library sends: a token budget, and `read_skill` for the rest of a body
    /// that was cut.
    #[default]
    Request,
    /// An agent host that adds the text to its own request (`ctxkit hook`): only the selected
    /// skills' bodies (the host lists its skills and runs its own tools), within
    /// [`RunInfo::char_budget`] counted as the host's JSON counts them; a body longer than
    /// 6,000 characters, or one that does not fit whole, is sent as its start and the path of
    /// its `SKILL.md`, which the host's agent reads itself. `always` skills come only for an
    /// empty message, the host's session start, since its transcript keeps them.
    Host,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Settings of a [`SkillContextProvider`].
#[derive(Clone)]
pub struct SkillConfig {
    /// How skills reach the model (default [`Mode::Hybrid`]).
    pub mode: Mode,
    /// How skills are selected for a message.
    pub select: SelectOptions,
    /// Body lines kept per skill before the truncation marker (default 200).
    pub max_content_lines: usize,
    /// Body characters kept per skill before the truncation marker (default 20,000), so a
    /// body of a few enormous lines is cut too.
    pub max_content_chars: usize,
    /// Tokens for everything the provider injects (default [`SkillConfig::DEFAULT_TOKEN_BUDGET`]; `None`
    /// for no limit, as the `full`-mode baseline uses); the agent's budget, when smaller, wins.
    pub token_budget: Option<usize>,
    /// Tokens for the catalog (default 2,000); the catalog is cut to it in rank order.
    pub catalog_tokens: usize,
    /// Counts tokens for the budgets (default: the o200k_base tokenizer).
    pub counter: Arc<dyn TokenCounter>,
    /// Whether and how skills' own tools (`tools.json`) are offered and run. By default no
    /// skill is trusted, so none is offered.
    pub tools: ExecOptions,
    /// Who reads the rendered skills (default [`RenderProfile::Request`]).
    pub profile: RenderProfile,
}

impl SkillConfig {
    /// The default [`SkillConfig::token_budget`]: room for the catalog and a few long skills,
    /// and a bound on what one hostile skill can cost every request.
    pub const DEFAULT_TOKEN_BUDGET: usize = 16_000;
}

impl Default for SkillConfig {
    fn default() -> Self {
        SkillConfig {
            mode: Mode::Hybrid,
            select: SelectOptions::default(),
            max_content_lines: 200,
            max_content_chars: 20_000,
            token_budget: Some(SkillConfig::DEFAULT_TOKEN_BUDGET),
            catalog_tokens: 2_000,
            counter: Arc::new(BpeCounter),
            tools: ExecOptions::default(),
            profile: RenderProfile::Request,
        }
    }
}

const FULL_INTRO: &str = "You have access to the following skills. Use them when relevant.";
const TRIGGERED_INTRO: &str = "The following skills apply to this request. Follow them when relevant.";
const HOST_INTRO: &str =
    "ctxkit selected these skills for this request by their triggers, their meaning or this project's files; follow them where they apply.";
/// Bodies longer than this are sent to a host as their start and the file's path.
const HOST_BODY_CHARS: usize = 6_000;
const CATALOG_INTRO: &str = "Skills are available on demand. When one clearly applies, call the `read_skill` tool with its name to load its full instructions before following it.";

/// A skill rendered for injection, with its token count.
#[derive(Debug)]
struct Block {
    text: String,
    tokens: usize,
}

/// The catalog within its budget.
#[derive(Debug)]
struct Catalog {
    /// Shared with every request the whole catalog fits in.
    entries: Arc<[CatalogEntry]>,
    /// `tokens[i]`: tokens of the intro, the heading and the first `i + 1` entries.
    cumulative: Vec<usize>,
}

/// Most projects whose auto-detected skills are remembered per snapshot.
const MAX_DETECTED_PROJECTS: usize = 64;

/// What is computed at most once per index snapshot, so a request only matches and copies.
struct SnapshotCache {
    /// Holding the `Arc` keeps its address, the cache's key, from being reused.
    index: Arc<SkillIndex>,
    catalog: Option<Arc<Catalog>>,
    /// Each skill's tools, by position. Per snapshot rather than per skill id because the id
    /// hashes SKILL.md only: an edited `tools.json`, or a tool dropped for a name clash,
    /// changes the tools of a skill whose id stays the same.
    tools: Option<SkillTools>,
    /// Skills auto-detected for each project, by position.
    detected: HashMap<String, Arc<[usize]>>,
    /// Tokens of sending every skill in full, with every trusted tool: the baseline.
    full_tokens: Option<usize>,
    /// The skills' description vectors (with an embedding model).
    described: Option<Described>,
}

/// The per-snapshot cache and the per-skill blocks.
#[derive(Default)]
struct Caches {
    snapshot: Option<SnapshotCache>,
    /// Keyed by skill id (which includes the content hash), so they survive a reload.
    blocks: HashMap<String, Arc<Block>>,
}

impl Caches {
    /// The cache of `index`, started afresh when the snapshot changed.
    fn of(&mut self, index: &Arc<SkillIndex>) -> &mut SnapshotCache {
        let current = self
            .snapshot
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(&c.index, index));
        if !current {
            self.snapshot = Some(SnapshotCache {
                index: index.clone(),
                catalog: None,
                tools: None,
                detected: HashMap::new(),
                full_tokens: None,
                described: None,
            });
        }
        self.snapshot.as_mut().expect("set above")
    }
}

type SkillTools = Arc<Vec<Vec<Arc<dyn Tool>>>>;

/// Injects skills into requests; see [`Mode`].
pub struct SkillContextProvider {
    library: Arc<SkillLibrary>,
    config: SkillConfig,
    tools: Vec<Arc<dyn Tool>>,
    /// Tokens of the intro line above injected bodies, counted once.
    /// Tokens of the intro line, counted on the first request that injects: a provider used
    /// only to [`select`](Self::select) (the hooks, `match_skills`) never builds the
    /// tokenizer's tables.
    intro_tokens: OnceLock<usize>,
    caches: Mutex<Caches>,
    /// The trusted selected skills with hooks, per thread, for [`SkillHooks`].
    active: Arc<ActiveHooks>,
    /// Meaning in the ranking, when enabled with a model.
    meaning: Option<SkillMeaning>,
}

impl SkillContextProvider {
    /// A provider over `library` (shared, so a reload reaches it) with `config`.
    pub fn new(library: Arc<SkillLibrary>, config: SkillConfig) -> Self {
        let tools: Vec<Arc<dyn Tool>> = if config.mode.has_catalog() {
            vec![
                Arc::new(ReadSkillTool::new(library.clone())),
                Arc::new(ReadSkillsTool::new(library.clone())),
            ]
        } else {
            Vec::new()
        };
        SkillContextProvider {
            library,
            config,
            tools,
            intro_tokens: OnceLock::new(),
            caches: Mutex::default(),
            active: Arc::default(),
            meaning: None,
        }
    }

    /// The SKILL.md hooks of the skills this provider selects in each run, for the agent's
    /// hooks (`AgentBuilder::hook`). Only skills its tool trust ([`SkillConfig::tools`])
    /// trusts have their hooks run.
    pub fn hooks(&self, options: HookOptions) -> SkillHooks {
        SkillHooks::new(self.active.clone(), options)
    }

    /// Remember which selected skills bring hooks that may run in `run`'s thread.
    fn record_hooks(&self, index: &SkillIndex, selected: &[Selection], run: &RunInfo) {
        let active: Vec<ActiveSkill> = selected
            .iter()
            .map(|s| &index.skills()[s.skill])
            .filter(|skill| skill.hooks.is_some())
            .filter(|skill| {
                let trusted = self.config.tools.trust.trusts(skill);
                if !trusted {
                    tracing::debug!(skill = %skill.name, "skill hooks not run: the skill is not trusted");
                }
                trusted
            })
            .filter_map(ActiveSkill::of)
            .collect();
        self.active.set(&run.thread_id, active);
    }

    /// The library it reads a snapshot of on every request.
    pub fn library(&self) -> &Arc<SkillLibrary> {
        &self.library
    }

    /// Its settings.
    pub fn config(&self) -> &SkillConfig {
        &self.config
    }

    fn intro_tokens(&self) -> usize {
        *self.intro_tokens.get_or_init(|| {
            let intro = if self.config.mode == Mode::Full {
                FULL_INTRO
            } else {
                TRIGGERED_INTRO
            };
            self.config.counter.count(intro)
        })
    }

    fn caches(&self) -> std::sync::MutexGuard<'_, Caches> {
        self.caches.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The skills this provider selects for `messages` in `project` (whose files auto-detect
    /// skills; `None` detects nothing) during `phase` (`None`: every phase), with at most
    /// `max_skills` ranked when given (an MCP client's own cap), else the config's.
    pub fn select(
        &self,
        index: &Arc<SkillIndex>,
        messages: &[Message],
        project: Option<&str>,
        phase: Option<Phase>,
        max_skills: Option<usize>,
    ) -> Vec<Selection> {
        self.ranking(index, messages, project, phase, max_skills, 0)
            .selected
    }

    /// What [`select`](Self::select) selects, with the evidence behind each skill and the
    /// skills that nearly made it.
    pub fn explain(
        &self,
        index: &Arc<SkillIndex>,
        messages: &[Message],
        project: Option<&str>,
        phase: Option<Phase>,
        max_skills: Option<usize>,
    ) -> Ranking {
        self.ranking(
            index,
            messages,
            project,
            phase,
            max_skills,
            crate::select::NEAR_MISSES,
        )
    }

    /// [`explain`](Self::explain) with at most `near_misses` near misses.
    fn ranking(
        &self,
        index: &Arc<SkillIndex>,
        messages: &[Message],
        project: Option<&str>,
        phase: Option<Phase>,
        max_skills: Option<usize>,
        near_misses: usize,
    ) -> Ranking {
        let window: Vec<&str> = {
            let mut users: Vec<&str> = messages
                .iter()
                .rev()
                .filter(|m| m.role == Role::User)
                .take(self.config.select.window.max(1))
                .map(|m| m.content.as_str())
                .collect();
            users.reverse();
            users
        };
        let detected = project.map(|p| self.detected(index, p)).unwrap_or_default();
        let options = SelectOptions {
            phase: phase.or(self.config.select.phase),
            max_skills: max_skills.unwrap_or(self.config.select.max_skills),
            ..self.config.select.clone()
        };
        let cosines = match (&self.meaning, window.last()) {
            (Some(meaning), Some(message)) if options.by_description => {
                Some(self.cosines(meaning, index, message))
            }
            _ => None,
        };
        index.ranking(&window, &detected, &options, cosines.as_deref(), near_misses)
    }

    /// The cosine of `message` with every skill's name and description, the vectors of the
    /// descriptions computed once per index snapshot.
    fn cosines(&self, meaning: &SkillMeaning, index: &Arc<SkillIndex>, message: &str) -> Vec<f32> {
        let cached = self.caches().of(index).described.clone();
        let described = cached.unwrap_or_else(|| {
            // Embedded outside the lock; a racing request computes the same vectors.
            let described = meaning.describe(index);
            self.caches().of(index).described = Some(described.clone());
            described
        });
        meaning.cosines(message, &described, index.len())
    }

    /// The model meaning comes from, when there is one ([`SkillContextProvider::with_meaning`]).
    pub fn meaning(&self) -> Option<&SkillMeaning> {
        self.meaning.as_ref()
    }

    /// Weigh the message's nearness in meaning to each skill's name and description in the
    /// ranking ([`SkillMeaning`]).
    pub fn with_meaning(mut self, meaning: SkillMeaning) -> Self {
        self.meaning = Some(meaning);
        self
    }

    /// The skills auto-detected for `project`, found once per snapshot and project: the same
    /// for a preview and a run.
    fn detected(&self, index: &Arc<SkillIndex>, project: &str) -> Arc<[usize]> {
        if let Some(found) = self.caches().of(index).detected.get(project) {
            return found.clone();
        }
        // Reading project files happens outside the lock.
        let names = index.detect(Path::new(project));
        if !names.is_empty() {
            tracing::info!(project, skills = ?names, "skills auto-detected for the project");
        }
        let found: Arc<[usize]> = names.iter().filter_map(|n| index.position(n)).collect();
        let mut caches = self.caches();
        let detected = &mut caches.of(index).detected;
        if detected.len() >= MAX_DETECTED_PROJECTS {
            detected.clear();
        }
        detected.insert(project.to_string(), found.clone());
        found
    }

    fn block(&self, skill: &Skill, caches: &mut Caches) -> Arc<Block> {
        if let Some(b) = caches.blocks.get(&skill.id) {
            return b.clone();
        }
        let limits = Limits {
            lines: self.config.max_content_lines,
            chars: self.config.max_content_chars,
        };
        let text = skill_block(skill, limits, Rest::ReadSkill);
        let tokens = self.config.counter.count(&text);
        let block = Arc::new(Block { text, tokens });
        caches.blocks.insert(skill.id.clone(), block.clone());
        block
    }

    /// Every skill's tools for this snapshot, built once. Only trusted skills' tools are
    /// built, and of those only the ones the options let run (no script while scripts are
    /// disabled, no interpreter the user did not name), so the model is never offered a tool
    /// that can only refuse.
    fn skill_tools(&self, index: &Arc<SkillIndex>, caches: &mut Caches) -> SkillTools {
        if let Some(tools) = &caches.of(index).tools {
            return tools.clone();
        }
        let options = &self.config.tools;
        let tools: Vec<Vec<Arc<dyn Tool>>> = index
            .skills()
            .iter()
            .map(|skill| {
                if skill.tools.is_empty() {
                    return Vec::new();
                }
                if !options.trust.trusts(skill) {
                    tracing::debug!(skill = %skill.name, "skill tools not offered: the skill is not trusted");
                    return Vec::new();
                }
                let dir = skill.path.parent().unwrap_or(Path::new("."));
                skill
                    .tools
                    .iter()
                    .filter(|spec| match options.refusal(spec) {
                        Some(reason) => {
                            tracing::debug!(skill = %skill.name, tool = spec.name(), "tool not offered: {reason}");
                            false
                        }
                        None => true,
                    })
                    .map(|spec| Arc::new(SkillTool::new(spec.clone(), dir, options.clone())) as Arc<dyn Tool>)
                    .collect()
            })
            .collect();
        let tools = Arc::new(tools);
        caches.of(index).tools = Some(tools.clone());
        tools
    }

    /// The catalog, budgeted with the same heading and lines the request is rendered with.
    fn catalog(&self, index: &Arc<SkillIndex>, caches: &mut Caches) -> Arc<Catalog> {
        if let Some(catalog) = &caches.of(index).catalog {
            return catalog.clone();
        }
        let counter = &self.config.counter;
        let mut used = counter.count(CATALOG_INTRO) + counter.count(CatalogEntry::HEADING);
        let (mut entries, mut cumulative) = (Vec::new(), Vec::new());
        for skill in index.ranked().filter(|s| !s.disable_model_invocation) {
            let entry = CatalogEntry::new(skill.name.as_str(), skill.description.as_str());
            let line = counter.count(&entry.line()) + 1;
            if used + line > self.config.catalog_tokens {
                break;
            }
            used += line;
            entries.push(entry);
            cumulative.push(used);
        }
        let catalog = Arc::new(Catalog {
            entries: entries.into(),
            cumulative,
        });
        caches.of(index).catalog = Some(catalog.clone());
        catalog
    }

    /// Tokens of every skill in full with every offered tool: what `full` mode without a
    /// budget sends. Counted once per snapshot (every body, the first time).
    fn full_tokens(&self, index: &Arc<SkillIndex>, caches: &mut Caches) -> usize {
        if let Some(tokens) = caches.of(index).full_tokens {
            return tokens;
        }
        let counter = &self.config.counter;
        let bodies: usize = index.ranked().map(|skill| self.block(skill, caches).tokens).sum();
        let tools = self.skill_tools(index, caches);
        let definitions: Vec<_> = tools.iter().flatten().map(|t| t.definition()).collect();
        let tokens = counter.count(FULL_INTRO) + bodies + counter.count_tools(&definitions);
        caches.of(index).full_tokens = Some(tokens);
        tokens
    }

    /// Build the context for `selected` skills under `budget` tokens for `run`'s phase; when
    /// the run asks for a baseline, also what sending every skill in full would add.
    fn render(
        &self,
        index: &Arc<SkillIndex>,
        selected: &[Selection],
        budget: usize,
        run: &RunInfo,
    ) -> Context {
        if self.config.profile == RenderProfile::Host {
            return render_for_host(unsent(index, selected, run), run);
        }
        let mut caches = self.caches();
        let mut ctx = Context::new();
        let mut left = budget;

        if self.config.mode == Mode::Full {
            let skills = index.ranked().filter(|s| s.serves(run.phase));
            let blocks = skills.map(|skill| (skill, self.block(skill, &mut caches)));
            left = self.fit(
                FULL_INTRO,
                blocks,
                left,
                SectionKind::SKILLS,
                Section::stable,
                &mut ctx,
            );
            let tools = self.skill_tools(index, &mut caches);
            ctx.tools
                .extend(index.ranked.iter().flat_map(|&i| tools[i].iter().cloned()));
        } else {
            // With no skills loaded there is nothing to list or read (a `read_skill` tool
            // without skills would only confuse the model).
            if self.config.mode.has_catalog() && !index.is_empty() {
                let catalog = self.catalog(index, &mut caches);
                let fits = catalog.cumulative.iter().take_while(|&&t| t <= left).count();
                if fits > 0 {
                    left -= catalog.cumulative[fits - 1];
                    ctx.sections
                        .push(Section::stable(SectionKind::CATALOG, CATALOG_INTRO));
                    ctx.catalog = if fits == catalog.entries.len() {
                        catalog.entries.clone()
                    } else {
                        catalog.entries[..fits].into()
                    };
                }
                ctx.tools.extend(self.tools.iter().cloned());
            }
            if self.config.mode.has_selection() {
                left = self.render_selected(index, selected, left, run, &mut caches, &mut ctx);
            }
        }
        if run.baseline {
            let definitions: Vec<_> = ctx.tools.iter().map(|t| t.definition()).collect();
            let sent = budget.saturating_sub(left) + self.config.counter.count_tools(&definitions);
            ctx.baseline_delta = self.full_tokens(index, &mut caches) as i64 - sent as i64;
        }
        ctx
    }

    /// The bodies (but those the conversation holds) and tools of the selected skills, within
    /// `left` tokens; returns what is left.
    fn render_selected(
        &self,
        index: &Arc<SkillIndex>,
        selected: &[Selection],
        mut left: usize,
        run: &RunInfo,
        caches: &mut Caches,
        ctx: &mut Context,
    ) -> usize {
        let blocks = unsent(index, selected, run).map(|skill| (skill, self.block(skill, caches)));
        left = self.fit(
            TRIGGERED_INTRO,
            blocks,
            left,
            SectionKind::SKILLS,
            Section::per_message,
            ctx,
        );
        // A selected skill's tools come with it even when the budget cut its body: their
        // descriptions stand on their own.
        let tools = self.skill_tools(index, caches);
        ctx.tools
            .extend(selected.iter().flat_map(|s| tools[s.skill].iter().cloned()));
        // An active skill's `allowed-tools` holds for the whole run, whether or not its body
        // fit: the agent wraps every tool so that other calls are refused.
        ctx.restrictions.extend(selected.iter().filter_map(|s| {
            let skill = &index.skills()[s.skill];
            (!skill.allowed_tools.is_empty())
                .then(|| ToolRestriction::new(format!("skill `{}`", skill.name), skill.allowed_tools.clone()))
        }));
        left
    }

    /// Add a section of the `blocks` that fit in `left` tokens, led by `intro`; returns what is
    /// left. Blocks are counted once per snapshot (cached), so only the intro and the blank
    /// lines between blocks are counted here.
    fn fit<'s>(
        &self,
        intro: &str,
        blocks: impl Iterator<Item = (&'s Skill, Arc<Block>)>,
        left: usize,
        kind: SectionKind,
        section: fn(SectionKind, String) -> Section,
        ctx: &mut Context,
    ) -> usize {
        let mut text = Budgeted::new(left, Measure::Tokens(&*self.config.counter));
        if !text.push_costing(intro, self.intro_tokens()) {
            return left;
        }
        let mut items = Vec::new();
        for (skill, block) in blocks {
            if text.push_costing(&block.text, block.tokens) {
                items.push((skill.name.clone(), skill.hash.clone()));
            } else {
                tracing::debug!(skill = %skill.name, tokens = block.tokens, "skill cut by the token budget");
                ctx.left_out.push(LeftOut {
                    kind: kind.clone(),
                    name: skill.name.clone(),
                    why: "over the token budget".into(),
                });
            }
        }
        if items.is_empty() {
            return left;
        }
        let rest = text.left();
        if let Some(text) = text.finish() {
            ctx.sections.push(section(kind, text).with_versioned_items(items));
        }
        rest
    }

    /// The context for `messages` against the current index, and the selection behind it.
    pub fn context_for(&self, messages: &[Message], run: &RunInfo) -> (Context, Vec<Selection>) {
        self.context_in(&self.library.snapshot(), messages, run)
    }

    /// The context for `messages` against `index`.
    fn context_in(
        &self,
        index: &Arc<SkillIndex>,
        messages: &[Message],
        run: &RunInfo,
    ) -> (Context, Vec<Selection>) {
        let Ranking { mut selected, near } = if self.config.mode.has_selection() {
            self.ranking(index, messages, run.project.as_deref(), run.phase, None, 0)
        } else {
            Ranking::default()
        };
        // A host sends the always-on skills at its session start (an empty message), not
        // with each prompt.
        let prompt = latest_user_message(messages).is_some_and(|m| !m.content.trim().is_empty());
        if self.config.profile == RenderProfile::Host && prompt {
            selected.retain(|s| s.reason != Reason::Always);
        }
        let budget = match (self.config.token_budget, run.token_budget) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(usize::MAX),
        };
        let mut ctx = self.render(index, &selected, budget, run);
        // Selection without near misses lists only the skills the cap left out.
        ctx.left_out.extend(near.into_iter().map(|n| LeftOut {
            kind: SectionKind::SKILLS,
            name: n.name,
            why: n.why.into(),
        }));
        (ctx, selected)
    }
}

/// The selected skills but those the conversation already holds in this version
/// ([`RunInfo::sent`]).
fn unsent<'a>(
    index: &'a SkillIndex,
    selected: &'a [Selection],
    run: &'a RunInfo,
) -> impl Iterator<Item = &'a Skill> + 'a {
    selected
        .iter()
        .map(|s| &index.skills()[s.skill])
        .filter(|skill| !run.was_sent(&SectionKind::SKILLS, &skill.name, &skill.hash))
}

/// The [`RenderProfile::Host`] rendering: `skills` as blocks within the run's character
/// budget, cut to the room left rather than left out when a few hundred characters remain.
fn render_for_host<'a>(skills: impl Iterator<Item = &'a Skill>, run: &RunInfo) -> Context {
    let skills: Vec<&Skill> = skills.collect();
    let mut text = Budgeted::new(run.char_budget.unwrap_or(usize::MAX), Measure::JsonChars);
    let long = Limits {
        lines: usize::MAX,
        chars: HOST_BODY_CHARS,
    };
    let added = text.skills(HOST_INTRO, skills.iter().copied(), long, Rest::File, true);
    let (sent, over): (Vec<&Skill>, Vec<&Skill>) = skills.into_iter().partition(|s| added.contains(&s.name));
    let mut ctx = Context::new();
    ctx.left_out.extend(over.into_iter().map(|skill| LeftOut {
        kind: SectionKind::SKILLS,
        name: skill.name.clone(),
        why: "over the character budget".into(),
    }));
    if let Some(text) = text.finish() {
        let items = sent.into_iter().map(|s| (s.name.clone(), s.hash.clone()));
        ctx.sections
            .push(Section::per_message(SectionKind::SKILLS, text).with_versioned_items(items));
    }
    ctx
}

#[async_trait]
impl ContextProvider for SkillContextProvider {
    fn name(&self) -> &str {
        "skills"
    }

    async fn invoking(&self, messages: &[Message], run: &RunInfo) -> Result<Context> {
        let span = tracing::info_span!(
            "skills",
            mode = %self.config.mode,
            selected = tracing::field::Empty,
            why = tracing::field::Empty,
        );
        let _enter = span.enter();
        let index = self.library.snapshot();
        let (ctx, selected) = self.context_in(&index, messages, run);
        if !run.preview {
            self.record_hooks(&index, &selected, run);
        }
        if !span.is_disabled() {
            let names: Vec<&str> = selected.iter().map(|s| s.name.as_str()).collect();
            let why: Vec<String> = selected
                .iter()
                .map(|s| format!("{}: {:?} {:?}", s.name, s.reason, s.triggers))
                .collect();
            span.record("selected", tracing::field::debug(&names));
            span.record("why", tracing::field::debug(&why));
        }
        Ok(ctx)
    }
}
