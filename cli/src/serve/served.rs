//! What every request of the page reads: the options the server was started with and what
//! they load, reloaded after a change.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use ctxkit::MemoCounter;

use crate::error::CliError;
use crate::memory::Store;
use crate::setup::{follow_toggles, token_counter, Loaded, RequestOptions};

/// What every request reads: the options the server was started with and what they load,
/// reloaded after a change.
pub(crate) struct Served {
    pub(super) options: RequestOptions,
    /// The project folder: its `.ctxkit/config.toml` is read and written.
    pub(super) dir: PathBuf,
    pub(super) loaded: RwLock<Arc<Loaded>>,
    pub(super) scanned: RwLock<SystemTime>,
    pub(super) counter: Arc<MemoCounter>,
    /// Sent with every form and required back with every write: another site cannot read it.
    pub(super) token: String,
    /// `Host` values a request may carry (`None`: any, for `--allow-remote`).
    pub(super) hosts: Option<Vec<String>>,
    /// The project memory, unless memory is off.
    pub(super) memory: Option<Store>,
    /// The project memories are scoped to.
    pub(super) project: String,
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
        // With `--read-only` the store is opened for reading only (a database that does not
        // exist is none); the page's lists and every "Try a message" share it.
        let memory = options.open_memory()?;
        let project = options.project()?;
        Ok(Arc::new(Served {
            memory,
            project,
            options,
            dir,
            loaded: RwLock::new(Arc::new(loaded)),
            scanned: RwLock::new(SystemTime::now()),
            counter: token_counter(),
            token: new_token()?,
            hosts,
        }))
    }

    /// The config and library in force, with the skills the config turns off now set aside
    /// (a toggle made in a terminal shows on the next page).
    pub(super) fn loaded(&self) -> Arc<Loaded> {
        let loaded = self.loaded.read().unwrap_or_else(|e| e.into_inner()).clone();
        follow_toggles(&loaded.library, &self.dir);
        loaded
    }

    /// Read the config and rescan the skill folders, after a toggle or on request.
    pub(super) fn reload(&self) -> Result<(), CliError> {
        let loaded = Arc::new(self.options.load_in(&self.dir)?);
        *self.loaded.write().unwrap_or_else(|e| e.into_inner()) = loaded;
        *self.scanned.write().unwrap_or_else(|e| e.into_inner()) = SystemTime::now();
        Ok(())
    }

    pub(super) fn read_only(&self) -> bool {
        self.options.read_only
    }
}

/// A new random token for this process's forms.
fn new_token() -> Result<String, CliError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| CliError::new(format!("cannot draw a random token for the page's forms: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
