//! What every binding shares: the one error type Python sees and the runtime memory calls
//! run on.

use std::sync::OnceLock;

use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

create_exception!(
    ctxkit,
    CtxkitError,
    PyRuntimeError,
    "A ctxkit operation failed; the message says why in one sentence."
);

/// The runtime every memory call runs on: one worker, started on first use, shared by every
/// `Memory` of the process (SQLite work goes to its blocking pool, PostgreSQL I/O to the worker).
pub(crate) fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("ctxkit")
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start ctxkit's runtime: {e}"))
        })
        .as_ref()
        .map_err(|e| CtxkitError::new_err(e.clone()))
}
