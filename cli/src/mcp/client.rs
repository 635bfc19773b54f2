//! `chat --mcp "CMD ARGS…"` and the user config's `[mcp] servers`: a command line, split into
//! words like a shell would (and run without one), as the core's [`McpServer`]. Only servers the
//! user named are mounted, the trust rule of skill tools: a project file never adds one.

use std::time::Duration;

use ctxkit::mcp::{McpServer, McpTools};

use crate::error::CliError;

/// The server `command_line` starts, bounded by `timeout` (start, listing, each call).
pub(crate) fn server(command_line: &str, timeout: Duration) -> Result<McpServer, CliError> {
    let words = shell_words::split(command_line)
        .map_err(|e| CliError::caused_by(format!("cannot split the MCP server command: {e}"), e))?;
    let (program, args) = words
        .split_first()
        .ok_or_else(|| CliError::new("an MCP server command is empty"))?;
    Ok(McpServer::stdio(program.as_str(), args).timeout(timeout))
}

/// Start `command_line` and list its tools.
pub(crate) async fn mount(command_line: &str, timeout: Duration) -> Result<McpTools, CliError> {
    Ok(server(command_line, timeout)?.connect().await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_split_into_words_and_refuse_nothing_to_run() {
        let s = format!("{:?}", server("npx -y 'a b'", Duration::from_secs(1)).unwrap());
        assert!(s.contains("`npx` with 2 arguments"), "{s}");
        assert_eq!(
            server("  ", Duration::from_secs(1)).unwrap_err().message(),
            "an MCP server command is empty"
        );
        assert!(server("npx 'open", Duration::from_secs(1)).is_err());
    }
}
