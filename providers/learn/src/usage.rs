//! Learned skills measured in use: every run a learned skill was injected into counts a use,
//! and whether the run ended well feeds its success rate.

use std::sync::Arc;

use async_trait::async_trait;
use ctxkit::{Context, ContextProvider, Message, RunInfo, RunOutcome, SectionKind};
use ctxkit_memory::{LearnedChange, MemoryStore};
use ctxkit_skills::{SkillLibrary, Source};

/// A provider that adds nothing and, when a run ends, counts a use of each learned skill the
/// run carried. Put it beside the skills provider of the same library.
pub struct LearnedUsage {
    store: Arc<dyn MemoryStore>,
    library: Arc<SkillLibrary>,
    project: String,
}

impl LearnedUsage {
    /// Count uses of `library`'s learned skills into `store`, for `project`.
    pub fn new(store: Arc<dyn MemoryStore>, library: Arc<SkillLibrary>, project: impl Into<String>) -> Self {
        LearnedUsage {
            store,
            library,
            project: project.into(),
        }
    }
}

#[async_trait]
impl ContextProvider for LearnedUsage {
    fn name(&self) -> &str {
        "learned-usage"
    }

    async fn invoking(&self, _messages: &[Message], _run: &RunInfo) -> ctxkit::Result<Context> {
        Ok(Context::default())
    }

    /// A store that fails is a warning: the run was answered either way.
    async fn run_finished(&self, _run: &RunInfo, outcome: &RunOutcome<'_>) -> ctxkit::Result<()> {
        let index = self.library.snapshot();
        let success = outcome.result.is_ok();
        let carried = outcome
            .context
            .sections
            .iter()
            .filter(|s| s.kind == SectionKind::SKILLS)
            .flat_map(|s| &s.items)
            .filter(|name| index.get(name).is_some_and(|s| s.source == Source::Learned));
        for name in carried {
            let counted = self
                .store
                .change_learned_skill(&self.project, name, LearnedChange::Used { success })
                .await;
            if let Err(e) = counted {
                tracing::warn!(skill = %name, "the use of a learned skill was not counted: {e}");
            }
        }
        Ok(())
    }
}
