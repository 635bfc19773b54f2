//! Skills learned from this project's sessions, waiting for a person: shown on the skills page
//! with their SKILL.md, accepted or rejected by the same function as `ctxkit skills learned`.

use std::sync::Arc;

use axum::extract::{Form, Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use ctxkit_memory::{LearnedSkill, LearnedStatus};
use maud::{html, Markup};
use serde::Deserialize;

use super::guard::forged;
use super::pages::{error_page, write_form};
use super::served::Served;

/// The project's proposed skills (none without memory, or when the store cannot say). Only
/// plain names: a name goes into a form's address, where `../` would aim the button elsewhere.
pub(super) async fn proposals(served: &Served) -> Vec<LearnedSkill> {
    let Some(store) = &served.memory else {
        return Vec::new();
    };
    match store.learned_skills(&served.project).await {
        Ok(all) => all
            .into_iter()
            .filter(|s| s.status == LearnedStatus::Proposed && LearnedSkill::is_plain_name(&s.name))
            .collect(),
        Err(e) => {
            tracing::warn!("the learned skills could not be read: {e}");
            Vec::new()
        }
    }
}

/// The section of the skills page that lists them, each with Accept and Reject.
pub(super) fn section(served: &Served, proposed: &[LearnedSkill]) -> Markup {
    html! {
        @if !proposed.is_empty() {
            h2 { "Learned, to review (" (proposed.len()) ")" }
            ul.rows {
                @for s in proposed {
                    li {
                        span.grow {
                            strong { (s.name) } " " span.muted { (s.description) }
                            br;
                            span.muted {
                                "triggers: " (s.triggers.join(", ")) " · from " (s.sessions.len()) " sessions"
                            }
                            details { summary { "SKILL.md" } pre { (s.text) } }
                        }
                        @if !served.read_only() {
                            (decision(served, &s.name, "accept", "Accept"))
                            (decision(served, &s.name, "reject", "Reject"))
                        }
                    }
                }
            }
        }
    }
}

fn decision(served: &Served, name: &str, value: &str, label: &str) -> Markup {
    write_form(
        &format!("/learned/{name}"),
        &served.token,
        html! {
            input type="hidden" name="decision" value=(value);
            button type="submit" aria-label=(format!("{label} {name}")) { (label) }
        },
    )
}

#[derive(Deserialize)]
pub(super) struct Decision {
    token: String,
    decision: String,
}

/// `POST /learned/NAME`: accept or reject a proposed skill, then load the skills again.
pub(super) async fn review(
    State(served): State<Arc<Served>>,
    UrlPath(name): UrlPath<String>,
    Form(form): Form<Decision>,
) -> Response {
    if let Some(refusal) = forged(&served, &form.token) {
        return refusal;
    }
    let status = match form.decision.as_str() {
        "accept" => LearnedStatus::Accepted,
        "reject" => LearnedStatus::Rejected,
        _ => return error_page(StatusCode::BAD_REQUEST, "the decision is accept or reject"),
    };
    let (Some(store), Ok(Some(db))) = (&served.memory, served.options.memory_db()) else {
        return error_page(StatusCode::NOT_FOUND, "memory is off for this server");
    };
    if !proposals(&served).await.iter().any(|s| s.name == name) {
        return error_page(
            StatusCode::NOT_FOUND,
            "no learned skill of this project waits under this name",
        );
    }
    let reviewed = crate::learned::review(&**store, &db, &served.project, &name, status).await;
    match reviewed.and_then(|()| served.reload()) {
        Ok(()) => Redirect::to("/").into_response(),
        Err(e) => error_page(StatusCode::INTERNAL_SERVER_ERROR, e.message()),
    }
}
