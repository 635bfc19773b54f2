//! `ctxkit mcp --http ADDR`: the same server over streamable HTTP, at `/mcp`. Loopback only
//! unless `--allow-remote`: anyone who reaches the port can read the skills and write the
//! memory, and there is no authentication. On loopback the SDK's `Host` check stays on, which
//! stops DNS rebinding (a web page's script reaching the port under a name it controls); and on
//! every address a request that carries an `Origin` other than the server's own is refused
//! with 403, so no web page a browser shows can drive the server (see [`served_origins`]).

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::replay::Replay;
use super::server::CtxkitServer;
use crate::error::CliError;

/// The path the endpoint is served at.
pub(super) const PATH: &str = "/mcp";

/// The address of `--http`: loopback unless `allow_remote` (see [`crate::listen::parse_addr`]).
pub(super) fn parse_addr(text: &str, allow_remote: bool) -> Result<SocketAddr, CliError> {
    crate::listen::parse_addr(
        text,
        allow_remote,
        "--http",
        "MCP",
        "read the skills and change the memory without authentication",
    )
}

/// Serve every client that connects to `addr`, each in its own session, until the process is
/// stopped. The address actually bound (useful with port 0) is printed on standard error.
pub(super) async fn serve(server: CtxkitServer, addr: SocketAddr) -> Result<(), CliError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| CliError::caused_by(format!("cannot listen on {addr}: {e}"), e))?;
    let bound = listener
        .local_addr()
        .map_err(|e| CliError::caused_by(format!("cannot read the address bound: {e}"), e))?;
    eprintln!("ctxkit mcp: serving streamable HTTP at http://{bound}{PATH}");
    axum::serve(listener, router(server, bound))
        .await
        .map_err(|e| CliError::caused_by(format!("the MCP HTTP server stopped: {e}"), e))
}

/// The endpoint at [`PATH`] for a server listening on `bound`.
pub(super) fn router(server: CtxkitServer, bound: SocketAddr) -> axum::Router {
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_origins(served_origins(bound))
        .enforce_origin_validation();
    if !bound.ip().is_loopback() {
        // Clients name a remote server however they reach it; `--allow-remote` accepted that.
        config = config.disable_allowed_hosts();
    }
    let service = StreamableHttpService::new(
        move || Ok(server.session()),
        Arc::new(LocalSessionManager::default().with_event_store(Arc::new(Replay::default()))),
        config,
    );
    axum::Router::new().nest_service(PATH, service)
}

/// The origins a request may name in `Origin`: the server's own, under the loopback names and
/// the address bound. Programs (the hosts MCP is made for) send no `Origin`; a browser sends
/// the origin of the page that makes the request, and ctxkit serves no page, so any other
/// origin is a foreign site's script (or a rebound name) and is refused, `--allow-remote` or
/// not: a remote server has no browser clients either.
fn served_origins(bound: SocketAddr) -> Vec<String> {
    let port = bound.port();
    let mut origins = vec![
        format!("http://localhost:{port}"),
        format!("http://127.0.0.1:{port}"),
        format!("http://[::1]:{port}"),
    ];
    if !bound.ip().is_loopback() && !bound.ip().is_unspecified() {
        origins.push(format!("http://{bound}"));
    }
    origins
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_loopback_unless_remote_is_allowed() {
        assert_eq!(parse_addr("8765", false).unwrap().to_string(), "127.0.0.1:8765");
        assert_eq!(
            parse_addr("localhost:0", false).unwrap().to_string(),
            "127.0.0.1:0"
        );
        assert_eq!(parse_addr("[::1]:9", false).unwrap().to_string(), "[::1]:9");
        let refused = parse_addr("0.0.0.0:8765", false).unwrap_err();
        assert!(
            refused.message().contains("--allow-remote"),
            "{}",
            refused.message()
        );
        assert_eq!(
            parse_addr("0.0.0.0:8765", true).unwrap().to_string(),
            "0.0.0.0:8765"
        );
        assert!(parse_addr("example.com:80", true).is_err());
        assert!(parse_addr("127.0.0.1", false).is_err());
    }
}
