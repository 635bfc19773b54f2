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
mod skills;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use axum::routing::{get, post};
use axum::Router;
use clap::Args;
use ctxkit::MemoCounter;

use crate::error::CliError;
use crate::memory::Store;
use crate::setup::{follow_toggles, token_counter, Loaded, RequestOptions};

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

/// What every request reads: the options the server was started with and what they load,
/// reloaded after a change.
pub(crate) struct Served {
    options: RequestOptions,
    /// The project folder: its `.ctxkit/config.toml` is read and written.
    dir: PathBuf,
    loaded: RwLock<Arc<Loaded>>,
    scanned: RwLock<SystemTime>,
    counter: Arc<MemoCounter>,
    /// Sent with every form and required back with every write: another site cannot read it.
    token: String,
    /// `Host` values a request may carry (`None`: any, for `--allow-remote`).
    hosts: Option<Vec<String>>,
    /// The project memory, unless memory is off.
    memory: Option<Store>,
    /// The project memories are scoped to.
    project: String,
}

impl Served {
    /// Load what `options` name in the project folder `dir`, for a server answering at `addr`.
    pub(crate) fn new(
        options: RequestOptions,
        dir: PathBuf,
        addr: SocketAddr,
    ) -> Result<Arc<Served>, CliError> {
        let loaded = options.load_in(&dir)?;
        let hosts = addr
            .ip()
            .is_loopback()
            .then(|| vec![addr.to_string(), format!("localhost:{}", addr.port())]);
        let memory = memory::open(&options)?;
        let project = options.project()?;
        Ok(Arc::new(Served {
            memory,
            project,
            options,
            dir,
            loaded: RwLock::new(Arc::new(loaded)),
            scanned: RwLock::new(SystemTime::now()),
            counter: token_counter(),
            token: guard::new_token()?,
            hosts,
        }))
    }

    /// The config and library in force, with the skills the config turns off now set aside
    /// (a toggle made in a terminal shows on the next page).
    fn loaded(&self) -> Arc<Loaded> {
        let loaded = self.loaded.read().unwrap_or_else(|e| e.into_inner()).clone();
        follow_toggles(&loaded.library, &self.dir);
        loaded
    }

    /// Read the config and rescan the skill folders, after a toggle or on request.
    fn reload(&self) -> Result<(), CliError> {
        let loaded = Arc::new(self.options.load_in(&self.dir)?);
        *self.loaded.write().unwrap_or_else(|e| e.into_inner()) = loaded;
        *self.scanned.write().unwrap_or_else(|e| e.into_inner()) = SystemTime::now();
        Ok(())
    }

    fn read_only(&self) -> bool {
        self.options.read_only
    }
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
