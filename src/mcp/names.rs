//! Tool names providers accept. The registry takes any name, but OpenAI's rule
//! (`^[A-Za-z0-9_-]{1,64}$`) is the strictest backend's, so a mounted tool's name is cleaned to
//! it: `SERVER__tool`.

/// The longest tool name providers accept.
const MAX_TOOL_NAME: usize = 64;
/// The longest server prefix, so the tool's own name keeps most of the 64.
const MAX_PREFIX: usize = 24;
/// Between the server's name and the tool's.
const SEPARATOR: &str = "__";

/// A server's name as a tool-name prefix: letters, digits and `-`, others as `_`; at most
/// [`MAX_PREFIX`] characters; `mcp` when nothing is left.
pub(crate) fn prefix(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_PREFIX)
        .collect();
    let cleaned = cleaned.trim_matches('_');
    if cleaned.is_empty() {
        "mcp".into()
    } else {
        cleaned.to_string()
    }
}

/// `SERVER__tool`, cleaned and cut to what providers accept.
pub(crate) fn tool_name(server: &str, tool: &str) -> String {
    let tool: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{server}{SEPARATOR}{tool}")
        .chars()
        .take(MAX_TOOL_NAME)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_fit_what_providers_accept() {
        assert_eq!(tool_name(&prefix("ctxkit"), "read_skill"), "ctxkit__read_skill");
        assert_eq!(
            tool_name(&prefix("my server!"), "get.thing"),
            "my_server__get_thing"
        );
        assert_eq!(prefix("@@@"), "mcp");
        let long = tool_name(&prefix(&"s".repeat(100)), &"t".repeat(100));
        assert_eq!(long.len(), 64);
        assert!(long
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
    }
}
