//! `ctxkit context`: the request ctxkit would send for a message.

use std::io::Write;
use std::sync::Arc;

use clap::Args;
use ctxkit::{DryRunModel, MemoCounter, Message, ModelRequest, Role, RunReport, SectionKind, Thread};
use ctxkit_skills::{Detection, NearMiss, Ranking, Selection};
use serde_json::{json, Value};

use crate::error::CliError;
use crate::memory::Store;
use crate::printable::{list_or_none, printable, printable_line};
use crate::setup::{save_counts, token_counter, Loaded, RequestOptions};

#[derive(Args, Debug)]
pub(crate) struct ContextArgs {
    #[command(flatten)]
    pub request: RequestOptions,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// The user message.
    pub message: String,
}

pub(crate) async fn run(args: ContextArgs) -> Result<(), CliError> {
    let loaded = args.request.load().await?;
    let counter = token_counter();
    let memory = args.request.open_memory()?;
    let decision = decide(&args.request, &loaded, &counter, memory.as_ref(), &args.message).await?;
    save_counts(&counter);
    let preview = Preview(&decision);
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", preview.json())?;
        Ok(())
    } else {
        preview.print(&mut out)
    }
}

/// What ctxkit would send for a message and why: the one decision `ctxkit context` prints and
/// `ctxkit serve` shows.
pub(crate) struct Decision {
    /// The request, as the agent would send it.
    pub request: ModelRequest,
    /// What went into it, with the token counts of `full` mode beside.
    pub report: RunReport,
    /// The skills selected, each with why.
    pub selected: Vec<Selection>,
    /// The skills that nearly made it, each with why not.
    pub near: Vec<NearMiss>,
    /// What auto-detection found in the project.
    pub detected: Vec<Detection>,
}

/// The decision for `message` in a new conversation, as `options` and `loaded` configure it.
pub(crate) async fn decide(
    options: &RequestOptions,
    loaded: &Loaded,
    counter: &Arc<MemoCounter>,
    memory: Option<&Store>,
    message: &str,
) -> Result<Decision, CliError> {
    let mode = options.mode(&loaded.config);
    let skills = Arc::new(options.skills_provider(&loaded.config, &loaded.library, mode, counter)?);
    let agent = options
        .agent(
            loaded,
            skills.clone(),
            Arc::new(DryRunModel),
            counter,
            Vec::new(),
            memory,
        )?
        .report_baseline()
        .build()?;
    let (request, report) = agent.preview(&Thread::new(), message).await?;
    // Why the skills were chosen, and what auto-detection found in the project: asked of the
    // provider the agent used, on the same snapshot (its detection and description vectors
    // are computed once).
    let project = options.project()?;
    let index = loaded.library.snapshot();
    let Ranking { selected, near } =
        skills.explain(&index, &[Message::user(message)], Some(&project), None, None);
    let detected = index.detect_report(std::path::Path::new(&project));
    Ok(Decision {
        request,
        report,
        selected,
        near,
        detected,
    })
}

/// A decision, printed.
struct Preview<'a>(&'a Decision);

impl Preview<'_> {
    /// The system text: the request's first message, when it is one.
    fn system(&self) -> Option<&str> {
        self.0
            .request
            .messages
            .first()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.as_str())
    }

    /// Every other message, as the run sends it: in lazy mode that includes the context
    /// message with the matched skills, just before the user's.
    fn messages(&self) -> impl Iterator<Item = &Message> {
        let skip = usize::from(self.system().is_some());
        self.0.request.messages.iter().skip(skip)
    }

    /// Characters at the start of the system text that stay the same from one request to
    /// the next (instructions, stable context, catalog): what prompt caches keep.
    fn stable_chars(&self) -> usize {
        let stable = self.0.request.stable_prefix;
        self.system()
            .and_then(|s| s.get(..stable))
            .map_or(0, |s| s.chars().count())
    }

    fn tokens_full(&self) -> usize {
        self.0.report.tokens_full.unwrap_or(self.0.report.tokens.total)
    }

    fn injected(&self, kind: SectionKind) -> Vec<String> {
        self.0.report.injected.get(&kind).cloned().unwrap_or_default()
    }

    /// The whole preview as one JSON object.
    fn json(&self) -> Value {
        let report = &self.0.report;
        let providers: Vec<Value> = report
            .providers
            .iter()
            .map(|p| json!({"name": p.name, "elapsed_us": p.elapsed.as_micros() as u64, "outcome": p.outcome.to_string()}))
            .collect();
        let stats = json!({
            "tokens": report.tokens.total,
            "tokens_full": self.tokens_full(),
            "by_section": report.tokens.by_section,
            "skills": self.injected(SectionKind::SKILLS),
            "memories": self.injected(SectionKind::MEMORIES).len(),
            "essentials": self.injected(SectionKind::ESSENTIALS).len(),
            "episodes": self.injected(SectionKind::EPISODES).len(),
            "providers": providers,
        });
        json!({
            "system": self.system().unwrap_or(""),
            "stable_chars": self.stable_chars(),
            "messages": self.messages().collect::<Vec<_>>(),
            "tools": self.0.request.tools,
            "stats": stats,
            "selected": self.0.selected,
            "near": self.0.near,
            "left_out": report.left_out,
            "detected": self.0.detected,
        })
    }

    /// The preview for a person. Skill and memory text is untrusted: terminal controls are
    /// escaped.
    fn print(&self, out: &mut impl Write) -> Result<(), CliError> {
        let report = &self.0.report;
        writeln!(
            out,
            "=== system ===\n{}\n",
            printable(self.system().unwrap_or("(none)"))
        )?;
        writeln!(out, "=== messages ===")?;
        for m in self.messages() {
            let role = serde_json::to_value(m.role)?;
            writeln!(out, "{}: {}", role.as_str().unwrap_or("?"), printable(&m.content))?;
        }
        writeln!(out, "\n=== tools ===")?;
        for t in &self.0.request.tools {
            writeln!(
                out,
                "- {}: {}",
                printable_line(&t.name),
                printable_line(&t.description)
            )?;
        }
        let tokens_full = self.tokens_full();
        let reduction = 100.0 * (1.0 - report.tokens.total as f64 / tokens_full.max(1) as f64);
        writeln!(
            out,
            "\n=== stats ===\ntokens: {} (full mode: {tokens_full}, {reduction:.0}% fewer)\nskills: {}\nmemories: {} (+ {} essentials, {} past runs)",
            report.tokens.total,
            list_or_none(&self.injected(SectionKind::SKILLS)),
            self.injected(SectionKind::MEMORIES).len(),
            self.injected(SectionKind::ESSENTIALS).len(),
            self.injected(SectionKind::EPISODES).len(),
        )?;
        for s in self.0.selected.iter().filter(|s| !s.triggers.is_empty()) {
            writeln!(
                out,
                "triggered {}: {}",
                printable_line(&s.name),
                printable_line(&s.fired().join(", "))
            )?;
        }
        for d in &self.0.detected {
            writeln!(
                out,
                "detected {}: {}",
                printable_line(&d.name),
                crate::skills_cmd::why_detected(d)
            )?;
        }
        for l in &report.left_out {
            writeln!(out, "left out {} {}: {}", l.kind, printable_line(&l.name), l.why)?;
        }
        for (section, tokens) in &report.tokens.by_section {
            writeln!(out, "  {section}: {tokens} tokens")?;
        }
        for p in &report.providers {
            writeln!(
                out,
                "provider {}: {} in {} µs",
                p.name,
                p.outcome,
                p.elapsed.as_micros()
            )?;
        }
        Ok(())
    }
}
