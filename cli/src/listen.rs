//! The address a server of the command line listens on: loopback unless the user says
//! otherwise, because what it serves has no authentication of its own.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use crate::error::CliError;

/// `PORT`, `IP:PORT`, `[IPv6]:PORT` or `localhost:PORT` as a socket address; a bare port is on
/// 127.0.0.1. A non-loopback address is refused, naming what anyone reaching it could do
/// (`exposes`), unless `allow_remote`. `flag` and `what` name the option and the service in
/// errors.
pub(crate) fn parse_addr(
    text: &str,
    allow_remote: bool,
    flag: &str,
    what: &str,
    exposes: &str,
) -> Result<SocketAddr, CliError> {
    let bad = || {
        CliError::new(format!(
            "{flag} takes PORT, IP:PORT or localhost:PORT (e.g. 127.0.0.1:8765)"
        ))
    };
    let addr = if let Ok(port) = text.parse::<u16>() {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
    } else if let Some(port) = text.strip_prefix("localhost:") {
        let port = port.parse::<u16>().map_err(|_| bad())?;
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
    } else {
        text.parse::<SocketAddr>().map_err(|_| bad())?
    };
    if !addr.ip().is_loopback() && !allow_remote {
        return Err(CliError::new(format!(
            "refusing to serve {what} on {}, which is not a loopback address: anyone who can reach \
             it could {exposes} (pass --allow-remote to do it anyway)",
            addr.ip()
        )));
    }
    Ok(addr)
}
