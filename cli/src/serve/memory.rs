//! The memory page: the project's memories by category, search, pages of 50, a memory's
//! detail with its history, and the writes `ctxkit memory` has (add, edit, delete and undo,
//! prune stale).

use std::sync::Arc;

use axum::extract::{Form, Path as UrlPath, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use ctxkit_memory::{ListOptions, MemoryCategory, MemoryEntry, MemoryStore, MemoryUpdate, NewMemoryEntry};
use maud::{html, Markup};
use serde::Deserialize;

use super::guard::forged;
use super::pages::{error_page, page, write_form};
use super::served::Served;
use crate::memory::{format_rfc3339, Store};

/// Memories per page: a store of 10,000 stays a few hundred pages.
const PAGE: usize = 50;

/// Importance under which "prune stale" removes a memory, as `ctxkit memory prune` does.
const STALE: f32 = 0.1;

/// The page saying memory is off.
fn memory_off() -> Response {
    error_page(
        StatusCode::NOT_FOUND,
        "memory is off for this server (--no-memory, or --read-only with no database yet)",
    )
}

/// Why a read failed, as a page; the store's sentences never quote a secret.
fn refused(e: ctxkit_memory::MemoryError) -> Response {
    error_page(StatusCode::BAD_REQUEST, &e.to_string())
}

/// Why a write was refused, said on the page the form was on (`page`, rendered with the
/// sentence), so the user keeps the list and the controls. The form is shown afresh: what was
/// typed, which may hold the secret refused, is never sent back.
fn refused_on(page: Response) -> Response {
    (StatusCode::BAD_REQUEST, page).into_response()
}

/// The refusal above a page's content: the store's sentence, which never quotes a secret.
fn alert(refusal: Option<&str>) -> Markup {
    html! { @if let Some(r) = refusal { p.alert role="alert" { (r) } } }
}

/// The memory `id` if it belongs to the served project.
async fn own(store: &dyn MemoryStore, served: &Served, id: &str) -> Option<MemoryEntry> {
    store
        .get(id)
        .await
        .ok()
        .flatten()
        .filter(|e| e.project_path == served.project)
}

#[derive(Deserialize, Default)]
pub(super) struct Listing {
    #[serde(default)]
    category: String,
    #[serde(default)]
    q: String,
    #[serde(default)]
    page: usize,
    #[serde(default)]
    superseded: Option<String>,
    /// The history entry of the delete just made, which "Undo" reverts.
    #[serde(default)]
    undo: Option<i64>,
}

/// `GET /memory`: counts per category, the filter and search, the add form, one page.
pub(super) async fn list(State(served): State<Arc<Served>>, Query(q): Query<Listing>) -> Response {
    listing(&served, q, None).await
}

/// The memory list, with `refusal` said above it.
async fn listing(served: &Arc<Served>, q: Listing, refusal: Option<&str>) -> Response {
    let Some(store) = served.memory.as_ref() else {
        return memory_off();
    };
    let project = &served.project;
    let category: Option<MemoryCategory> = q.category.parse().ok();
    let stats = match store.stats(project).await {
        Ok(s) => s,
        Err(e) => return refused(e),
    };
    let entries: Vec<MemoryEntry> = if q.q.trim().is_empty() {
        let options = ListOptions {
            category,
            offset: q.page * PAGE,
            limit: PAGE + 1,
            include_superseded: q.superseded.is_some(),
            ..ListOptions::default()
        };
        match store.shared().list(project, options).await {
            Ok(e) => e,
            Err(e) => return refused(e),
        }
    } else {
        let mut request =
            ctxkit_memory::MemorySearchRequest::new(project.as_str(), q.q.trim()).without_touch();
        request.top_k = PAGE;
        request.min_importance = 0.0;
        request.categories = category.map(|c| vec![c]);
        match store.shared().search(request).await {
            Ok(hits) => hits.into_iter().map(|h| h.entry).collect(),
            Err(e) => return refused(e),
        }
    };
    let more = entries.len() > PAGE;
    let read_only = served.read_only();
    let link = |page: usize| {
        format!(
            "/memory?category={}&page={page}{}",
            q.category,
            if q.superseded.is_some() {
                "&superseded=on"
            } else {
                ""
            }
        )
    };
    let body = html! {
        h1 { "Memory" }
        (alert(refusal))
        p.counts {
            (stats.total) " memories"
            @for c in MemoryCategory::ALL {
                " · " (stats.by_category.get(c.as_str()).copied().unwrap_or(0)) " " (c.as_str())
            }
        }
        @if let (Some(history), false) = (q.undo, read_only) {
            p role="status" {
                "Deleted. "
                (write_form("/memory/undo", &served.token, html! {
                    input type="hidden" name="history" value=(history);
                    button type="submit" { "Undo" }
                }))
            }
        }
        form.inline method="get" action="/memory" role="search" {
            select name="category" aria-label="Category" {
                option value="" selected[category.is_none()] { "All categories" }
                @for c in MemoryCategory::ALL {
                    option value=(c.as_str()) selected[category == Some(c)] { (c.as_str()) }
                }
            }
            input type="search" name="q" value=(q.q) aria-label="Search memories" placeholder="Search memories";
            label { input type="checkbox" name="superseded" checked[q.superseded.is_some()]; " superseded too" }
            button type="submit" { "Show" }
        }
        @if !read_only {
            (write_form("/memory", &served.token, html! {
                div.inline {
                    input type="text" name="content" aria-label="New memory" placeholder="New memory" required;
                    select name="category" aria-label="New memory's category" {
                        // `fact` first chosen, as `ctxkit memory add` defaults.
                        @for c in MemoryCategory::ALL {
                            option value=(c.as_str()) selected[c == MemoryCategory::Fact] { (c.as_str()) }
                        }
                    }
                    button type="submit" { "Add memory" }
                }
            }))
            (write_form("/memory/prune", &served.token, html! {
                button type="submit" { "Prune stale" } " " span.muted { "(importance under " (STALE) ")" }
            }))
        }
        @if entries.is_empty() { p { "No memories here." } }
        ul.rows {
            @for e in entries.iter().take(PAGE) {
                li { (row(e)) @if !read_only { (delete_button(served, e)) } }
            }
        }
        @if q.q.trim().is_empty() {
            p {
                @if q.page > 0 { a href=(link(q.page - 1)) { "Previous" } " " }
                @if more { a href=(link(q.page + 1)) { "Next" } }
            }
        }
    };
    page("Memory", body).into_response()
}

fn row(e: &MemoryEntry) -> Markup {
    html! {
        span.badge { (e.category.badge()) }
        span.grow {
            a href=(format!("/memory/{}", e.id)) { (e.content) }
            @if e.superseded_by.is_some() { " " span.badge { "superseded" } }
        }
        span.muted title="importance" { (format!("{:.2}", e.importance)) }
    }
}

fn delete_button(served: &Served, e: &MemoryEntry) -> Markup {
    write_form(
        &format!("/memory/{}/delete", e.id),
        &served.token,
        html! { button type="submit" aria-label=(format!("Delete: {}", e.content)) { "Delete" } },
    )
}

/// `GET /memory/ID`: everything about a memory, its history, and the edit form.
pub(super) async fn detail(State(served): State<Arc<Served>>, UrlPath(id): UrlPath<String>) -> Response {
    memory_page(&served, &id, None).await
}

/// A memory's page, with `refusal` said above it.
async fn memory_page(served: &Served, id: &str, refusal: Option<&str>) -> Response {
    let Some(store) = served.memory.as_ref().map(Store::shared) else {
        return memory_off();
    };
    let entry = match store.get(id).await {
        Ok(Some(e)) if e.project_path == served.project => e,
        Ok(_) => return error_page(StatusCode::NOT_FOUND, "no memory of this project has this id"),
        Err(e) => return refused(e),
    };
    let history = store.history(&served.project, id).await.unwrap_or_default();
    let body = html! {
        h1 { (entry.category.badge()) " memory" }
        (alert(refusal))
        dl.facts {
            dt { "Content" } dd { (entry.content) }
            dt { "Importance" } dd { (format!("{:.2}", entry.importance)) }
            dt { "Keywords" } dd { (entry.keywords.join(", ")) }
            dt { "Accessed" } dd { (entry.access_count) " times" }
            dt { "Created" } dd { (format_rfc3339(entry.created_at)) }
            dt { "Updated" } dd { (format_rfc3339(entry.updated_at)) }
            dt { "Last used" } dd { (format_rfc3339(entry.last_accessed_at)) }
            dt { "Source" } dd { (entry.source_session_id.as_deref().unwrap_or("added by hand")) }
            @if let Some(by) = &entry.superseded_by {
                dt { "Superseded by" } dd { a href=(format!("/memory/{by}")) { (by) } }
            }
        }
        @if !served.read_only() {
            h2 { "Edit" }
            (write_form(&format!("/memory/{}", entry.id), &served.token, html! {
                p { textarea name="content" aria-label="Content" rows="3" cols="70" { (entry.content) } }
                p {
                    label { "Importance " input type="number" name="importance" min="0" max="1" step="0.05" value=(format!("{:.2}", entry.importance)); }
                    " " button type="submit" { "Save" }
                }
            }))
            (delete_button(served, &entry))
        }
        h2 { "History" }
        ul {
            @for h in &history {
                li { (format_rfc3339(h.at)) " " (h.action.as_str()) @if let Some(r) = &h.reason { " (" (r) ")" } }
            }
        }
    };
    page("Memory", body).into_response()
}

#[derive(Deserialize)]
pub(super) struct NewMemory {
    token: String,
    content: String,
    category: String,
}

/// `POST /memory`: add a memory; a secret is refused with the store's sentence.
pub(super) async fn add(State(served): State<Arc<Served>>, Form(form): Form<NewMemory>) -> Response {
    if let Some(refusal) = forged(&served, &form.token) {
        return refusal;
    }
    let Some(store) = served.memory.as_ref().map(Store::shared) else {
        return memory_off();
    };
    let category = form.category.parse().unwrap_or(MemoryCategory::Fact);
    let entry = NewMemoryEntry::new(served.project.as_str(), category, form.content.trim());
    match store.add(entry).await {
        Ok(_) => Redirect::to("/memory").into_response(),
        Err(e) => refused_on(listing(&served, Listing::default(), Some(&e.to_string())).await),
    }
}

#[derive(Deserialize)]
pub(super) struct Edit {
    token: String,
    content: String,
    importance: f32,
}

/// `POST /memory/ID`: change a memory's content and importance.
pub(super) async fn edit(
    State(served): State<Arc<Served>>,
    UrlPath(id): UrlPath<String>,
    Form(form): Form<Edit>,
) -> Response {
    if let Some(refusal) = forged(&served, &form.token) {
        return refusal;
    }
    let Some(store) = served.memory.as_ref().map(Store::shared) else {
        return memory_off();
    };
    if own(&*store, &served, &id).await.is_none() {
        return error_page(StatusCode::NOT_FOUND, "no memory of this project has this id");
    }
    let update = MemoryUpdate {
        content: Some(form.content.trim().to_string()),
        importance: Some(form.importance),
        ..MemoryUpdate::default()
    };
    match store.update(&id, update).await {
        Ok(_) => Redirect::to(&format!("/memory/{id}")).into_response(),
        Err(e) => refused_on(memory_page(&served, &id, Some(&e.to_string())).await),
    }
}

#[derive(Deserialize)]
pub(super) struct Token {
    token: String,
}

/// `POST /memory/ID/delete`: delete it, and offer to undo on the list.
pub(super) async fn delete(
    State(served): State<Arc<Served>>,
    UrlPath(id): UrlPath<String>,
    Form(form): Form<Token>,
) -> Response {
    if let Some(refusal) = forged(&served, &form.token) {
        return refusal;
    }
    let Some(store) = served.memory.as_ref().map(Store::shared) else {
        return memory_off();
    };
    if own(&*store, &served, &id).await.is_none() {
        return error_page(StatusCode::NOT_FOUND, "no memory of this project has this id");
    }
    if let Err(e) = store.delete(&id).await {
        return refused(e);
    }
    let history = store.history(&served.project, &id).await.unwrap_or_default();
    match history.iter().map(|h| h.id).max() {
        Some(undo) => Redirect::to(&format!("/memory?undo={undo}")).into_response(),
        None => Redirect::to("/memory").into_response(),
    }
}

#[derive(Deserialize)]
pub(super) struct Undo {
    token: String,
    history: i64,
}

/// `POST /memory/undo`: revert one change (the delete just made).
pub(super) async fn undo(State(served): State<Arc<Served>>, Form(form): Form<Undo>) -> Response {
    if let Some(refusal) = forged(&served, &form.token) {
        return refusal;
    }
    let Some(store) = served.memory.as_ref().map(Store::shared) else {
        return memory_off();
    };
    match store.undo(&served.project, form.history).await {
        Ok(_) => Redirect::to("/memory").into_response(),
        Err(e) => refused(e),
    }
}

/// `POST /memory/prune`: remove memories whose importance has decayed under [`STALE`].
pub(super) async fn prune(State(served): State<Arc<Served>>, Form(form): Form<Token>) -> Response {
    if let Some(refusal) = forged(&served, &form.token) {
        return refusal;
    }
    let Some(store) = served.memory.as_ref() else {
        return memory_off();
    };
    match store.prune(&served.project, STALE).await {
        Ok(_) => Redirect::to("/memory").into_response(),
        Err(e) => refused(e),
    }
}
