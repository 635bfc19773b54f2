//! `ctxkit serve`: the skills and memory of a project as a local web page.
//!
//! Pages are rendered on the server (no script is needed to read them, none is loaded from
//! elsewhere) from the same parts every command uses: the config and library of
//! [`RequestOptions::load`], the decision of `ctxkit context`, the config writes of
//! `ctxkit skills disable`. [`guard`] keeps other hosts and other sites out.

mod guard;
mod learned;
mod markdown;
mod memory;
mod pages;
mod served;
mod skills;

use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;
use clap::Args;

use self::served::Served;
use crate::error::CliError;
use crate::setup::RequestOptions;

#[derive(Args, Debug)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    pub request: RequestOptions,
    /// Where to listen: PORT, IP:PORT or localhost:PORT; port 0 takes a free one.
    #[arg(long, default_value = "127.0.0.1:7878", value_name = "ADDR")]
    pub addr: String,
    /// Listen on an address that is not loopback. Anyone who reaches it can read the skills
    /// and memories, and change them unless --read-only.
    #[arg(long)]
    pub allow_remote: bool,
}

/// Every route of the page.
pub(crate) fn router(served: Arc<Served>) -> Router {
    Router::new()
        .route("/", get(skills::list))
        .route("/skills/{name}", get(skills::detail).post(skills::toggle))
        .route("/refresh", post(skills::refresh))
        .route("/learned/{name}", post(learned::review))
        .route("/try", get(skills::try_message))
        .route("/memory", get(memory::list).post(memory::add))
        .route("/memory/undo", post(memory::undo))
        .route("/memory/prune", post(memory::prune))
        .route("/memory/{id}", get(memory::detail).post(memory::edit))
        .route("/memory/{id}/delete", post(memory::delete))
        .route("/style.css", get(pages::style))
        .route("/icon.svg", get(pages::icon))
        .layer(axum::middleware::from_fn_with_state(served.clone(), guard::check))
        .with_state(served)
}

/// Serve until interrupted; the first line on standard output is the URL.
pub(crate) async fn run(args: ServeArgs) -> Result<(), CliError> {
    let addr = crate::listen::parse_addr(
        &args.addr,
        args.allow_remote,
        "--addr",
        "the skills and memory manager",
        "read the skills and memories and change them",
    )?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| CliError::caused_by(format!("cannot listen on {addr}: {e}"), e))?;
    let bound = listener
        .local_addr()
        .map_err(|e| CliError::caused_by(format!("cannot read the address bound: {e}"), e))?;
    args.request.sync_learned().await?;
    let served = Served::new(args.request, crate::setup::current_dir()?, bound)?;
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "http://{bound}/")?;
        out.flush()?;
    }
    axum::serve(listener, router(served))
        .await
        .map_err(|e| CliError::caused_by(format!("the server stopped: {e}"), e))
}

#[cfg(test)]
mod tests;
