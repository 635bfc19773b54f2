//! The frame every page shares, and its style sheet (served from here: nothing comes from
//! another host).

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{html, Markup, DOCTYPE};

/// A whole page: the title, the two sections' links, `body`.
pub(super) fn page(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · ctxkit" }
                link rel="stylesheet" href="/style.css";
                link rel="icon" href="/icon.svg" type="image/svg+xml";
            }
            body {
                nav aria-label="Sections" {
                    a href="/" { "Skills" }
                    a href="/memory" { "Memory" }
                }
                main { (body) }
            }
        }
    }
}

/// A failure as a page: one sentence, with the status it deserves.
pub(super) fn error_page(status: StatusCode, message: &str) -> Response {
    (
        status,
        page("Error", html! { h1 { "Something went wrong" } p { (message) } }),
    )
        .into_response()
}

/// A form that writes: posted to `action` with the page's token.
pub(super) fn write_form(action: &str, token: &str, fields: Markup) -> Markup {
    html! {
        form method="post" action=(action) {
            input type="hidden" name="token" value=(token);
            (fields)
        }
    }
}

/// `GET /icon.svg`: the tab's icon (without one, browsers ask for `/favicon.ico`).
pub(super) async fn icon() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "image/svg+xml")], ICON)
}

const ICON: &str = r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#1d1d1f"/><path d="M11 5.2A3.6 3.6 0 1 0 11 10.8" fill="none" stroke="#fff" stroke-width="2"/></svg>"##;

/// `GET /style.css`.
pub(super) async fn style() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE)
}

const STYLE: &str = "\
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}\
nav{display:flex;gap:1.2em;padding:.7em 1.2em;background:#1d1d1f}nav a{color:#fff;text-decoration:none;font-weight:600}\
main{max-width:62em;margin:0 auto;padding:1em 1.2em}\
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em;border-bottom:1px solid #ddd}\
.counts{color:#555}.muted{color:#777}.alert{background:#fdecea;border:1px solid #e0a39b;border-radius:.4em;padding:.5em .8em}\
ul.rows{list-style:none;padding:0}ul.rows li{display:flex;gap:.8em;align-items:baseline;padding:.35em 0;border-bottom:1px solid #eee}\
ul.rows form{margin:0}.grow{flex:1}\
button[role=switch]{min-width:3.2em;border:1px solid #999;border-radius:1em;padding:.1em .6em;background:#eee;cursor:pointer}\
button[role=switch][aria-checked=true]{background:#2e7d32;color:#fff;border-color:#2e7d32}\
.badge{font-size:.8em;padding:0 .45em;border-radius:.4em;background:#e3e3e8}\
.inline{display:flex;gap:.5em;margin:.6em 0}.inline input[type=text],.inline input[type=search]{flex:1;padding:.35em}\
section.result{background:#fff;border:1px solid #ddd;border-radius:.5em;padding:.2em 1em;margin:1em 0}\
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.3em 1em}dl.facts dt{font-weight:600}\
article.body{background:#fff;border:1px solid #ddd;border-radius:.5em;padding:0 1.2em}\
pre{overflow:auto;background:#f2f2f2;padding:.6em}\
";
