//! `ctxkit mcp --http ADDR`: the same server over streamable HTTP, at `/mcp`. Loopback only
//! unless `--allow-remote`: anyone who reaches the port can read the skills and write the
//! memory, and there is no authentication. On loopback the SDK's `Host` check stays on, which
//! stops DNS rebinding (a web page's script reaching the port under a name it controls).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::CtxkitServer;
use crate::error::CliError;

/// The path the endpoint is served at.
pub(super) const PATH: &str = "/mcp";

/// `PORT`, `IP:PORT`, `[IPv6]:PORT` or `localhost:PORT` as a socket address; a bare port is on
/// 127.0.0.1. A non-loopback address is refused unless `allow_remote`.
pub(super) fn parse_addr(text: &str, allow_remote: bool) -> Result<SocketAddr, CliError> {
    let addr = if let Ok(port) = text.parse::<u16>() {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
    } else if let Some(port) = text.strip_prefix("localhost:") {
        let port = port.parse::<u16>().map_err(|_| bad_addr())?;
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
    } else {
        text.parse::<SocketAddr>().map_err(|_| bad_addr())?
    };
    if !addr.ip().is_loopback() && !allow_remote {
        return Err(CliError::new(format!(
            "refusing to serve MCP on {}, which is not a loopback address: anyone who can reach \
             it could read the skills and change the memory without authentication (pass \
             --allow-remote to do it anyway)",
            addr.ip()
        )));
    }
    Ok(addr)
}

fn bad_addr() -> CliError {
    CliError::new("--http takes PORT, IP:PORT or localhost:PORT (e.g. 127.0.0.1:8765)")
}

/// Serve every client that connects to `addr`, each in its own session, until the process is
/// stopped. The address actually bound (useful with port 0) is printed on standard error.
pub(super) async fn serve(server: CtxkitServer, addr: SocketAddr) -> Result<(), CliError> {
    let mut config = StreamableHttpServerConfig::default();
    if !addr.ip().is_loopback() {
        // Clients name a remote server however they reach it; `--allow-remote` accepted that.
        config = config.disable_allowed_hosts();
    }
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| CliError::caused_by(format!("cannot listen on {addr}: {e}"), e))?;
    let bound = listener
        .local_addr()
        .map_err(|e| CliError::caused_by(format!("cannot read the address bound: {e}"), e))?;
    eprintln!("ctxkit mcp: serving streamable HTTP at http://{bound}{PATH}");
    let router = axum::Router::new().nest_service(PATH, service);
    axum::serve(listener, router)
        .await
        .map_err(|e| CliError::caused_by(format!("the MCP HTTP server stopped: {e}"), e))
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
