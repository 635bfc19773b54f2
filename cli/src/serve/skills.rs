//! The skills page: the project's skills by tier with their switches, a skill's detail, and
//! "try a message".

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use axum::extract::{Form, Path as UrlPath, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use ctxkit::SectionKind;
use ctxkit_skills::render::{self, Rest};
use ctxkit_skills::{Reason, Skill, SkillIndex, Source};
use maud::{html, Markup, PreEscaped};
use serde::Deserialize;

use super::guard::forged;
use super::markdown::to_html;
use super::pages::{error_page, page, write_form};
use super::served::Served;
use crate::context_cmd::{decide, Decision};
use crate::error::CliError;
use crate::user_config::{toggle_skill, Layer};

/// An error as a page.
fn failed(status: StatusCode, e: &CliError) -> Response {
    error_page(status, e.message())
}

#[derive(Deserialize)]
pub(super) struct Filter {
    #[serde(default)]
    filter: String,
}

/// `GET /`: every skill of the project by tier, detected ones first, with its switch.
pub(super) async fn list(State(served): State<Arc<Served>>, Query(q): Query<Filter>) -> Response {
    let loaded = served.loaded();
    let index = loaded.library.snapshot();
    let project = match served.options.project() {
        Ok(p) => p,
        Err(e) => return failed(StatusCode::INTERNAL_SERVER_ERROR, &e),
    };
    let detected: HashSet<String> = index.detect(Path::new(&project)).into_iter().collect();
    let needle = q.filter.trim().to_lowercase();
    let shown = |s: &Skill| {
        needle.is_empty()
            || s.name.to_lowercase().contains(&needle)
            || s.description.to_lowercase().contains(&needle)
    };
    // The sections, detected skills first, then by tier; within one, by priority then name.
    let mut sections: [Vec<(&Skill, bool)>; 6] = Default::default();
    for (skill, enabled) in index
        .ranked()
        .map(|s| (s, true))
        .chain(index.disabled().iter().map(|s| (s, false)))
        .filter(|(s, _)| shown(s))
    {
        let section = match skill.source {
            _ if detected.contains(&skill.name) => 0,
            Source::Project => 1,
            Source::Learned => 2,
            Source::User => 3,
            Source::External => 4,
            Source::Builtin => 5,
        };
        sections[section].push((skill, enabled));
    }
    for rows in &mut sections {
        rows.sort_by(|a, b| {
            b.0.priority
                .cmp(&a.0.priority)
                .then_with(|| a.0.name.cmp(&b.0.name))
        });
    }
    const TITLES: [&str; 6] = [
        "Auto-detected",
        "Project",
        "Learned",
        "User",
        "External",
        "Built-in",
    ];
    let scanned = served
        .scanned
        .read()
        .map(|t| *t)
        .unwrap_or_else(|e| *e.into_inner());
    let ago = scanned.elapsed().map_or(0, |d| d.as_secs());
    let proposed = super::learned::proposals(&served).await;
    let body = html! {
        h1 { "Skills" }
        p.counts {
            (index.len() + index.disabled().len()) " skills · " (index.len()) " active · "
            (detected.len()) " detected · last scan " (ago) " s ago"
        }
        (try_form(""))
        form.inline method="get" action="/" role="search" {
            input type="search" name="filter" value=(q.filter) aria-label="Filter skills" placeholder="Filter skills";
            button type="submit" { "Filter" }
        }
        @if !served.read_only() {
            (write_form("/refresh", &served.token, html! { button type="submit" { "Rescan the skill folders" } }))
        }
        (super::learned::section(&served, &proposed))
        @for (title, rows) in TITLES.iter().zip(&sections) {
            @if !rows.is_empty() {
                h2 { (title) " (" (rows.len()) ")" }
                ul.rows {
                    @for (skill, enabled) in rows {
                        li { (switch(&served, skill, *enabled)) (row(skill)) }
                    }
                }
            }
        }
    };
    page("Skills", body).into_response()
}

/// A skill's on/off control: a button that posts the other state, named after the skill.
fn switch(served: &Served, skill: &Skill, enabled: bool) -> Markup {
    let label = format!("{} enabled", skill.name);
    let button = html! {
        input type="hidden" name="enabled" value=(if enabled { "false" } else { "true" });
        button type="submit" role="switch" aria-checked=(enabled) aria-label=(label) disabled[served.read_only()] {
            (if enabled { "on" } else { "off" })
        }
    };
    write_form(&skill_url(&skill.name), &served.token, button)
}

fn row(skill: &Skill) -> Markup {
    html! {
        span.grow {
            a href=(skill_url(&skill.name)) { strong { (skill.name) } }
            " " span.muted { (skill.description) }
        }
        span.badge { (tier(skill.source)) }
        span.badge title="priority" { "P" (skill.priority) }
    }
}

fn tier(source: Source) -> &'static str {
    match source {
        Source::Project => "project",
        Source::Learned => "learned",
        Source::User => "user",
        Source::External => "external",
        Source::Builtin => "builtin",
    }
}

/// Characters a path segment keeps as they are.
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

fn skill_url(name: &str) -> String {
    format!("/skills/{}", percent_encoding::utf8_percent_encode(name, SEGMENT))
}

/// The box that asks what ctxkit would inject.
fn try_form(message: &str) -> Markup {
    html! {
        form.inline method="get" action="/try" {
            input type="text" name="message" value=(message) aria-label="Try a message" placeholder="Try a message";
            button type="submit" { "Try" }
        }
    }
}

/// `GET /skills/NAME`: everything about one skill, its body as the model would get it.
pub(super) async fn detail(State(served): State<Arc<Served>>, UrlPath(name): UrlPath<String>) -> Response {
    let loaded = served.loaded();
    let index = loaded.library.snapshot();
    let Some((skill, enabled)) = find(&index, &name) else {
        return failed(
            StatusCode::NOT_FOUND,
            &CliError::new(format!("no skill is named `{name}`")),
        );
    };
    let project = served.options.project().unwrap_or_default();
    let detection = index
        .detect_report(Path::new(&project))
        .into_iter()
        .find(|d| d.name == skill.name);
    let exec = loaded.config.exec_options(
        &served.options.trust_tools,
        &served.options.allow_interpreters,
        None,
    );
    let trusted = exec.trust.trusts(skill);
    // A trusted skill's tools that run an interpreter the user did not name, and why.
    let refused: Vec<String> = skill
        .tools
        .iter()
        .filter(|_| trusted)
        .filter_map(|t| {
            exec.refusal(t)
                .map(|why| format!("{} is not offered: {why}", t.name()))
        })
        .collect();
    let config = loaded
        .config
        .skill_config(served.options.mode, served.options.max_skills);
    let limits = render::Limits {
        lines: config.max_content_lines,
        chars: config.max_content_chars,
    };
    let body = render::body(skill, limits, Rest::ReadSkill);
    let triggers: Vec<String> = skill
        .triggers
        .keywords
        .iter()
        .chain(&skill.triggers.verbs)
        .map(|t| {
            let forms = ctxkit_skills::inflect::forms(t);
            if forms.is_empty() {
                t.clone()
            } else {
                format!("{t} ({})", forms.join(", "))
            }
        })
        .collect();
    let diagnostics: Vec<String> = index
        .diagnostics()
        .iter()
        .filter(|d| d.to_string().contains(&skill.name))
        .map(|d| d.to_string())
        .collect();
    let markup = html! {
        h1 { (skill.name) }
        (switch(&served, skill, enabled))
        p { (skill.description) }
        dl.facts {
            dt { "Source" } dd { (skill.path.display()) }
            dt { "Tier" } dd { (tier(skill.source)) }
            dt { "Priority" } dd { (skill.priority) }
            dt { "Triggers" } dd { (joined(&triggers)) }
            @if !skill.triggers.patterns.is_empty() { dt { "Patterns" } dd { (joined(&skill.triggers.patterns)) } }
            dt { "Detected via" } dd {
                @match &detection {
                    Some(d) => (crate::skills_cmd::why_detected(d)),
                    None => "not detected in this project",
                }
            }
            dt { "Inject into" } dd {
                @if skill.inject_into.is_empty() { "every phase" }
                @else { (skill.inject_into.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ")) }
            }
            @if !skill.allowed_tools.is_empty() { dt { "Allowed tools" } dd { (joined(&skill.allowed_tools)) } }
            @if !skill.tools.is_empty() {
                dt { "Tools" } dd {
                    (skill.tools.iter().map(|t| t.name()).collect::<Vec<_>>().join(", "))
                    (if trusted { " (trusted)" } else { " (not trusted: they are not offered)" })
                    @if !refused.is_empty() { ul { @for r in &refused { li { (r) } } } }
                }
            }
            @if !diagnostics.is_empty() { dt { "Diagnostics" } dd { ul { @for d in &diagnostics { li { (d) } } } } }
        }
        h2 { "Body, as injected" }
        article.body { (PreEscaped(to_html(&body))) }
    };
    page(&skill.name, markup).into_response()
}

fn joined(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

/// A skill by name, loaded or turned off, and whether it is on.
fn find<'a>(index: &'a SkillIndex, name: &str) -> Option<(&'a Skill, bool)> {
    index.get(name).map(|s| (s, true)).or_else(|| {
        index
            .disabled()
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(name))
            .map(|s| (s, false))
    })
}

#[derive(Deserialize)]
pub(super) struct Toggle {
    token: String,
    enabled: bool,
}

/// `POST /skills/NAME`: turn the skill on or off in the project's config, as `ctxkit skills
/// enable|disable` does, then reload.
pub(super) async fn toggle(
    State(served): State<Arc<Served>>,
    UrlPath(name): UrlPath<String>,
    Form(form): Form<Toggle>,
) -> Response {
    if let Some(refusal) = forged(&served, &form.token) {
        return refusal;
    }
    let loaded = served.loaded();
    if find(&loaded.library.snapshot(), &name).is_none() {
        return failed(
            StatusCode::NOT_FOUND,
            &CliError::new(format!("no skill is named `{name}`")),
        );
    }
    if let Err(e) =
        toggle_skill(&loaded.config, Layer::Project, &name, !form.enabled).and_then(|_| served.reload())
    {
        return failed(StatusCode::INTERNAL_SERVER_ERROR, &e);
    }
    Redirect::to("/").into_response()
}

#[derive(Deserialize)]
pub(super) struct Token {
    token: String,
}

/// `POST /refresh`: read the config and rescan the skill folders.
pub(super) async fn refresh(State(served): State<Arc<Served>>, Form(form): Form<Token>) -> Response {
    if let Some(refusal) = forged(&served, &form.token) {
        return refusal;
    }
    match served.reload() {
        Ok(()) => Redirect::to("/").into_response(),
        Err(e) => failed(StatusCode::INTERNAL_SERVER_ERROR, &e),
    }
}

#[derive(Deserialize)]
pub(super) struct Try {
    #[serde(default)]
    message: String,
}

/// `GET /try?message=…`: what `ctxkit context` would inject for the message, and why.
pub(super) async fn try_message(State(served): State<Arc<Served>>, Query(q): Query<Try>) -> Response {
    let loaded = served.loaded();
    let decision = if q.message.trim().is_empty() {
        None
    } else {
        match decide(
            &served.options,
            &loaded,
            &served.counter,
            served.memory.as_ref(),
            &q.message,
        )
        .await
        {
            Ok(d) => Some(d),
            Err(e) => return failed(StatusCode::INTERNAL_SERVER_ERROR, &e),
        }
    };
    let markup = html! {
        h1 { "Try a message" }
        (try_form(&q.message))
        @if let Some(d) = &decision { (would_inject(d)) }
    };
    page("Try a message", markup).into_response()
}

/// The region the try box fills: the skills and why, the memories, the tokens against `full`.
fn would_inject(d: &Decision) -> Markup {
    let report = &d.report;
    let full = report.tokens_full.unwrap_or(report.tokens.total);
    let injected = |kind: SectionKind| report.injected.get(&kind).cloned().unwrap_or_default();
    let skills = injected(SectionKind::SKILLS);
    let memories = injected(SectionKind::MEMORIES);
    let essentials = injected(SectionKind::ESSENTIALS);
    html! {
        section.result role="region" aria-label="Would inject" {
            h2 { "Skills" }
            @if skills.is_empty() { p { "none" } } @else {
                ul {
                    @for s in d.selected.iter().filter(|s| skills.contains(&s.name)) {
                        li { strong { (s.name) } " — " (why(s, d)) }
                    }
                }
            }
            h2 { "Memories" }
            @if memories.is_empty() && essentials.is_empty() { p { "none" } } @else {
                ul {
                    @for m in essentials.iter().chain(&memories) { li { (m) } }
                }
            }
            h2 { "Tokens" }
            p { (report.tokens.total) " tokens, against " (full) " in full mode" }
        }
    }
}

/// Why a skill was selected, in words.
fn why(s: &ctxkit_skills::Selection, d: &Decision) -> String {
    match s.reason {
        Reason::Explicit => "named in the message".into(),
        Reason::Always => "always on".into(),
        Reason::Detected => d
            .detected
            .iter()
            .find(|x| x.name == s.name)
            .map_or("detected in the project".into(), |x| {
                format!("detected ({})", crate::skills_cmd::why_detected(x))
            }),
        Reason::Triggered => format!("triggered by {}", s.fired().join(", ")),
        Reason::Lexical => "similar words".into(),
        Reason::Semantic => format!("near in meaning (cosine 0.{:02})", s.score.min(99)),
    }
}
