//! Skills learned from sessions that worked: after a session with no failed run and enough
//! successful tool calls, one model call asks for a short procedural SKILL.md; the reply is
//! checked like hostile input and stored, per project, as a *proposed* skill in the memory
//! database, which a person accepts or rejects. Published results favour exactly this: skills
//! induced from successful trajectories help, skills a model writes without feedback do not.
//!
//! ```text
//! session end ─► Trajectory ─► eligible? ─► one model call ─► read_reply (parse, name,
//!                                                              secrets, fires on its task)
//!                                         ─► same as an existing skill? ─► store: propose
//!                                                                      or refine
//! ```
//!
//! [`SkillLearner`] is a [`Hook`]: add it to an agent and it learns at `session_end`; or call
//! [`SkillLearner::learn`] with a [`Trajectory`] read from a transcript.

#![deny(missing_docs)]

mod candidate;
mod trajectory;
mod usage;

use std::sync::Arc;

use async_trait::async_trait;
use ctxkit::{BoxError, ChatModel, Hook, HookContext, ModelRequest, SessionSummary};
use ctxkit_memory::{LearnedChange, LearnedSkill, LearnedStatus, MemoryStore};
use ctxkit_skills::{SkillLibrary, Source};
use tracing::Instrument;

pub use trajectory::{ToolUse, Trajectory};
pub use usage::LearnedUsage;

use candidate::{
    purpose, purpose_text, read_reply, request, similarity, Refusal, MAX_REPLY, SAME_MEANING, SAME_SKILL,
};
use ctxkit_embed::{cosine, Embedder, VectorCache};

/// When a session is learned from, and what happens to what is learned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LearnOptions {
    /// Successful tool calls a session needs (default 3): shorter ones hold no procedure.
    pub min_tool_calls: usize,
    /// Accept a new skill at once instead of proposing it (default off: a person reviews).
    pub auto_accept: bool,
}

impl Default for LearnOptions {
    fn default() -> Self {
        LearnOptions {
            min_tool_calls: 3,
            auto_accept: false,
        }
    }
}

/// What came of one session.
#[derive(Clone, Debug, PartialEq)]
pub enum Learned {
    /// Not learned from (a failed run, too few successful tool calls); no model call made.
    NotEligible(String),
    /// The model found nothing reusable.
    Declined,
    /// The reply was not kept, for this reason (never quoting it).
    Dropped(String),
    /// A skill that is not learned already covers it: nothing stored.
    Exists(String),
    /// A new skill, proposed (or accepted, with `auto_accept`).
    New(LearnedSkill),
    /// A learned skill it matches gained this session as a source.
    Refined(LearnedSkill),
}

/// Learns skills from sessions of one project (see the crate docs).
pub struct SkillLearner {
    model: Arc<dyn ChatModel>,
    store: Arc<dyn MemoryStore>,
    library: Arc<SkillLibrary>,
    project: String,
    options: LearnOptions,
    embeddings: Option<Arc<Embedder>>,
    /// Where the skills' vectors are kept between sessions, when anywhere.
    vectors: Option<VectorCache>,
}

impl SkillLearner {
    /// A learner asking `model`, storing in `store` for `project`, comparing with the skills of
    /// `library` (and the project's learned ones).
    pub fn new(
        model: Arc<dyn ChatModel>,
        store: Arc<dyn MemoryStore>,
        library: Arc<SkillLibrary>,
        project: impl Into<String>,
    ) -> Self {
        SkillLearner {
            model,
            store,
            library,
            project: project.into(),
            options: LearnOptions::default(),
            embeddings: None,
            vectors: None,
        }
    }

    /// Tell a new skill from the ones there by meaning as well as words: with a
    /// sentence-embedding model, a candidate whose description and triggers are at least 0.80
    /// similar in meaning to a skill's (cosine of their vectors) is that skill, even in other
    /// words. Without one, only the words are compared.
    pub fn embeddings(mut self, model: Arc<Embedder>) -> Self {
        self.embeddings = Some(model);
        self
    }

    /// With [`embeddings`](Self::embeddings), keep the vectors of the skills compared with in
    /// `file` between sessions (a [`VectorCache`], which the skills' semantic fallback may
    /// share): a session then embeds only its candidate and the skills that changed, not the
    /// whole library (seconds for hundreds of skills).
    pub fn vector_cache_file(mut self, file: std::path::PathBuf) -> Self {
        self.vectors = Some(VectorCache::new(file));
        self
    }

    /// Replace the options.
    pub fn options(mut self, options: LearnOptions) -> Self {
        self.options = options;
        self
    }

    /// The cosine of `new`'s vector with each of `texts`', in order; empty without a model.
    /// Embedding is arithmetic (a few hundred texts take seconds), so it runs on the blocking
    /// pool.
    async fn meaning(&self, new: &str, texts: &[String]) -> Result<Vec<f32>, BoxError> {
        let Some(model) = self.embeddings.clone() else {
            return Ok(Vec::new());
        };
        let (new, texts, cache) = (new.to_owned(), texts.to_vec(), self.vectors.clone());
        let span = tracing::debug_span!("learn_skill.embed", texts = texts.len() + 1);
        let (new, known) = tokio::task::spawn_blocking(move || {
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            let known = match &cache {
                Some(cache) => cache.embed(&model, &texts),
                None => model.embed_batch(&texts),
            };
            (model.embed(&new), known)
        })
        .instrument(span)
        .await?;
        Ok(known.iter().map(|v| cosine(&new, v)).collect())
    }

    /// Learn from one session: at most one model call, at most one stored change.
    pub async fn learn(&self, session: &Trajectory) -> Result<Learned, BoxError> {
        if session.failed_turns > 0 {
            return Ok(Learned::NotEligible(format!(
                "{} runs of the session failed",
                session.failed_turns
            )));
        }
        let calls = session.successful_calls();
        if calls < self.options.min_tool_calls {
            return Ok(Learned::NotEligible(format!(
                "{calls} successful tool calls, fewer than {}",
                self.options.min_tool_calls
            )));
        }
        let learned = self.store.learned_skills(&self.project).await?;
        let index = self.library.snapshot();
        let written: Vec<_> = index
            .skills()
            .iter()
            .chain(index.disabled())
            .filter(|s| s.source != Source::Learned)
            .collect();
        let mut existing: Vec<(String, String)> = written
            .iter()
            .map(|s| (s.name.clone(), s.description.clone()))
            .chain(learned.iter().map(|l| (l.name.clone(), l.description.clone())))
            .collect();
        existing.sort();
        existing.dedup();

        let span = tracing::info_span!("learn_skill", project = %self.project, session = %session.session);
        let reply = self
            .model
            .complete(&ModelRequest {
                messages: request(session, &existing),
                ..ModelRequest::default()
            })
            .instrument(span)
            .await?
            .message
            .content;
        let candidate = match read_reply(&reply, &session.task) {
            Ok(c) => c,
            Err(Refusal::Declined) => return Ok(Learned::Declined),
            Err(Refusal::Dropped(why)) => {
                tracing::warn!(bytes = reply.len().min(MAX_REPLY + 1), "no skill learned: {why}");
                return Ok(Learned::Dropped(why));
            }
        };
        let skill = &candidate.skill;
        let purpose_of_new = purpose(&skill.description, skill.triggers.literals());
        let new_text = purpose_text(&skill.description, skill.triggers.literals());
        let texts: Vec<String> = written
            .iter()
            .map(|w| purpose_text(&w.description, w.triggers.literals()))
            .chain(
                learned
                    .iter()
                    .map(|l| purpose_text(&l.description, l.triggers.iter().map(String::as_str))),
            )
            .collect();
        let meaning = self.meaning(&new_text, &texts).await?;
        let alike = |i: usize, words: std::collections::BTreeSet<String>| {
            similarity(&words, &purpose_of_new) >= SAME_SKILL
                || meaning.get(i).is_some_and(|&c| c >= SAME_MEANING)
        };
        if let Some(same) = written.iter().enumerate().find_map(|(i, w)| {
            let same = w.name.eq_ignore_ascii_case(&skill.name)
                || alike(i, purpose(&w.description, w.triggers.literals()));
            same.then_some(w)
        }) {
            return Ok(Learned::Exists(same.name.clone()));
        }
        // The learned skill it repeats, if any, is refined under its own name.
        let name = learned
            .iter()
            .enumerate()
            .find(|(i, l)| {
                l.name == skill.name
                    || alike(
                        written.len() + i,
                        purpose(&l.description, l.triggers.iter().map(String::as_str)),
                    )
            })
            .map_or_else(|| skill.name.clone(), |(_, l)| l.name.clone());
        let refines = learned.iter().any(|l| l.name == name);
        let proposal = LearnedSkill::proposed(
            &self.project,
            &name,
            &skill.description,
            skill.triggers.literals().map(str::to_string).collect(),
            &candidate.text,
            &session.session,
        );
        let stored = self
            .store
            .change_learned_skill(&self.project, &name, LearnedChange::Propose(Box::new(proposal)))
            .await?
            .ok_or("the store kept nothing")?;
        if refines {
            return Ok(Learned::Refined(stored));
        }
        let stored = if self.options.auto_accept {
            self.store
                .change_learned_skill(
                    &self.project,
                    &name,
                    LearnedChange::Review(LearnedStatus::Accepted),
                )
                .await?
                .ok_or("the store kept nothing")?
        } else {
            stored
        };
        tracing::info!(skill = %stored.name, status = stored.status.as_str(), "skill learned");
        Ok(Learned::New(stored))
    }
}

#[async_trait]
impl Hook for SkillLearner {
    fn name(&self) -> &str {
        "skill-learner"
    }

    /// Learn from the session that ended. Whatever happens is logged, never an error: the
    /// conversation was answered, and learning is a bonus.
    async fn session_end(
        &self,
        _ctx: &mut HookContext<'_>,
        summary: &SessionSummary,
    ) -> Result<(), BoxError> {
        match self.learn(&Trajectory::from_summary(summary)).await {
            Ok(Learned::NotEligible(why)) => tracing::debug!("no skill learned from the session: {why}"),
            Ok(other) => tracing::debug!(?other, "learning from the session done"),
            Err(e) => tracing::warn!("no skill learned from the session: {e}"),
        }
        Ok(())
    }
}

// Shared with an agent's hooks across tasks.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<SkillLearner>();
    send_sync::<Learned>();
    send_sync::<LearnOptions>();
    send_sync::<Trajectory>();
    send_sync::<LearnedUsage>();
};
