//! Where ctxkit keeps things on the user's machine: one definition of each folder, each with
//! an environment override so tests and unusual setups can move it. The memory database may
//! also be a PostgreSQL server: a `postgres://` URL in `$CTXKIT_MEMORY_DB` or `--db`.
//!
//! | What            | Override            | Default (Linux; `dirs` gives the macOS/Windows folder)   |
//! |-----------------|---------------------|----------------------------------------------------------|
//! | memory database | `$CTXKIT_MEMORY_DB` | `$XDG_DATA_HOME/ctxkit/memory.db` (`~/.local/share/…`)   |
//! | user config     | `$CTXKIT_CONFIG`    | `$XDG_CONFIG_HOME/ctxkit/config.toml` (`~/.config/…`)    |
//! | cache           | `$CTXKIT_CACHE_DIR` | `$XDG_CACHE_HOME/ctxkit` (`~/.cache/ctxkit`)             |
//! | embedding model | `--embeddings`, `$CTXKIT_EMBEDDINGS` | the user config's `[memory] embeddings`; none: lexical memory only |

use std::path::PathBuf;

use crate::error::CliError;

fn var(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The memory database used when none is given.
pub(crate) fn memory_db() -> Result<PathBuf, CliError> {
    if let Some(path) = var("CTXKIT_MEMORY_DB") {
        return Ok(path);
    }
    let base = dirs::data_dir().ok_or_else(|| {
        CliError::new("cannot find the user's data directory (HOME is not set); pass --db FILE")
    })?;
    Ok(base.join("ctxkit").join("memory.db"))
}

/// The user config file, if the user has a config directory.
pub(crate) fn user_config() -> Option<PathBuf> {
    var("CTXKIT_CONFIG").or_else(|| Some(dirs::config_dir()?.join("ctxkit").join("config.toml")))
}

/// The folder for caches that can be deleted at any time (index cache, hook session state).
pub(crate) fn cache_dir() -> Option<PathBuf> {
    var("CTXKIT_CACHE_DIR").or_else(|| Some(dirs::cache_dir()?.join("ctxkit")))
}
