//! `ctxkit context`: the request ctxkit would send for a message.

use std::io::Write;
use std::sync::Arc;

use clap::Args;
use ctxkit::{DryRunModel, Role, SectionKind, Thread};
use serde_json::{json, Value};

use crate::error::CliError;
use crate::printable::{list_or_none, printable};
use crate::setup::{save_counts, token_counter, RequestOptions};

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
    let loaded = args.request.load()?;
    let counter = token_counter();
    let agent = args.request.agent(
        &loaded,
        args.request.mode(&loaded.config),
        Arc::new(DryRunModel),
        true,
        &counter,
        Vec::new(),
    )?;
    let (request, report) = agent.preview(&Thread::new(), &args.message).await?;
    // What auto-detection found in the project, and why (the provider injects the same skills).
    let project = args.request.project()?;
    let detected = loaded
        .library
        .snapshot()
        .detect_report(std::path::Path::new(&project));
    save_counts(&counter);
    let tokens_full = report.tokens_full.unwrap_or(report.tokens.total);

    let system = request
        .messages
        .iter()
        .find(|m| m.role == Role::System)
        .map(|m| m.content.as_str());
    let messages: Vec<&ctxkit::Message> = request
        .messages
        .iter()
        .filter(|m| m.role != Role::System)
        .collect();
    let providers: Vec<Value> = report
        .providers
        .iter()
        .map(|p| json!({"name": p.name, "elapsed_us": p.elapsed.as_micros() as u64, "outcome": p.outcome.to_string()}))
        .collect();
    let skills = report
        .injected
        .get(&SectionKind::SKILLS)
        .cloned()
        .unwrap_or_default();
    let memories = report.injected.get(&SectionKind::MEMORIES).map_or(0, Vec::len);
    let essentials = report.injected.get(&SectionKind::ESSENTIALS).map_or(0, Vec::len);
    let episodes = report.injected.get(&SectionKind::EPISODES).map_or(0, Vec::len);
    let stats = json!({
        "tokens": report.tokens.total,
        "tokens_full": tokens_full,
        "by_section": report.tokens.by_section,
        "skills": skills,
        "memories": memories,
        "essentials": essentials,
        "episodes": episodes,
        "providers": providers,
    });

    let mut out = std::io::stdout().lock();
    if args.json {
        let value = json!({
            "system": system.unwrap_or(""),
            "messages": messages,
            "tools": request.tools,
            "stats": stats,
            "detected": detected,
        });
        writeln!(out, "{value}")?;
        return Ok(());
    }
    // Skill and memory text is untrusted: escape terminal controls in human-readable output.
    writeln!(out, "=== system ===\n{}\n", printable(system.unwrap_or("(none)")))?;
    writeln!(out, "=== messages ===")?;
    for m in messages {
        let role = serde_json::to_value(m.role)?;
        writeln!(out, "{}: {}", role.as_str().unwrap_or("?"), printable(&m.content))?;
    }
    writeln!(out, "\n=== tools ===")?;
    for t in &request.tools {
        writeln!(out, "- {}: {}", printable(&t.name), printable(&t.description))?;
    }
    let reduction = 100.0 * (1.0 - report.tokens.total as f64 / tokens_full.max(1) as f64);
    writeln!(
        out,
        "\n=== stats ===\ntokens: {} (full mode: {}, {reduction:.0}% fewer)\nskills: {}\nmemories: {memories} (+ {essentials} essentials, {episodes} past runs)",
        report.tokens.total,
        tokens_full,
        list_or_none(&skills),
    )?;
    for d in &detected {
        writeln!(
            out,
            "detected {}: {}",
            printable(&d.name),
            crate::skills_cmd::why_detected(d)
        )?;
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
