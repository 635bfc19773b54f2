//! Embedding ctxkit in an agent with a provider of your own, beside the skill provider.
//!
//! Run with `cargo run --example custom_provider`. Uses the offline dry-run model, so the reply is
//! a summary of what the model would have been sent.

use std::sync::Arc;

use async_trait::async_trait;
use ctxkit::{
    Agent, Context, ContextProvider, Message, ProviderExt, Result, RunInfo, Section, SectionKind, Thread,
};
use ctxkit_skills::{SkillConfig, SkillContextProvider, SkillLibrary, SkillRoot, Source};

/// Adds the user's open tickets when the message mentions tickets — a stand-in for any
/// lookup (a database, an API) that should only cost tokens when it matters.
struct Tickets;

#[async_trait]
impl ContextProvider for Tickets {
    fn name(&self) -> &str {
        "tickets"
    }

    async fn invoking(&self, messages: &[Message], _run: &RunInfo) -> Result<Context> {
        let wants = ctxkit::latest_user_message(messages)
            .is_some_and(|m| m.content.to_lowercase().contains("ticket"));
        if !wants {
            return Ok(Context::new());
        }
        let text = "## Open tickets\n- OPS-12: disk full on build-3\n- OPS-15: rotate the TLS certificate";
        Ok(Context::new().with_section(
            Section::per_message(SectionKind::new("tickets"), text).with_items(["OPS-12", "OPS-15"]),
        ))
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let skills_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/skills");
    let library = Arc::new(SkillLibrary::load(vec![SkillRoot::new(
        skills_dir,
        Source::Project,
    )]));
    let agent = Agent::builder()
        .instructions("You are the on-call assistant. Be brief.")
        .provider(SkillContextProvider::new(library, SkillConfig::default()))
        // A slow ticket system must not hold up the request: cut it off after 200 ms.
        .provider(Tickets.with_timeout(std::time::Duration::from_millis(200)))
        .build()?;

    let mut thread = Thread::new();
    for input in [
        "Say bonjour to Alice",
        "Which tickets are open? Then git rebase my branch.",
    ] {
        let out = agent.run(&mut thread, input).await?;
        println!("> {input}\n{}", out.reply.content);
        println!("  injected: {:?}", out.report.injected);
        println!("  tokens by section: {:?}\n", out.report.tokens.by_section);
    }
    Ok(())
}
