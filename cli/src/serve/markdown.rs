//! A skill body as HTML. Skills are untrusted: HTML written in them is shown as text, links
//! go only to http(s) and mail addresses, and images become their alternative text, so a
//! skill can neither run script in the page nor make it load anything from elsewhere.

use pulldown_cmark::{CowStr, Event, LinkType, Parser, Tag, TagEnd};

/// `text` rendered as Markdown, safe to put in the page as is.
pub(super) fn to_html(text: &str) -> String {
    let events = Parser::new(text).filter_map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
        // The alternative text inside stays, as text.
        Event::Start(Tag::Image { .. }) | Event::End(TagEnd::Image) => None,
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => Some(Event::Start(Tag::Link {
            link_type,
            dest_url: safe_url(dest_url, link_type),
            title,
            id,
        })),
        other => Some(other),
    });
    let mut html = String::with_capacity(text.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, events);
    html
}

/// The link's address if it is http(s) or mail, else `#`.
fn safe_url(url: CowStr<'_>, link_type: LinkType) -> CowStr<'_> {
    let lower = url.trim_start().to_ascii_lowercase();
    let ok = lower.starts_with("https://")
        || lower.starts_with("http://")
        || lower.starts_with("mailto:")
        || link_type == LinkType::Email;
    if ok {
        url
    } else {
        CowStr::Borrowed("#")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_script_links_and_images_are_defused() {
        let html = to_html(
            "# Title\n\n<script>alert(1)</script>\n\nSee [x](javascript:alert(1)), [ok](https://example.com) \
             and ![tracker](https://evil.example/p.png) <b onmouseover=x>bold</b>.\n",
        );
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(!html.contains("<script"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(html.contains(r#"<a href="https://example.com">ok</a>"#), "{html}");
        assert!(!html.contains("<img") && html.contains("tracker"), "{html}");
        assert!(!html.contains("<b "), "{html}");
    }
}
