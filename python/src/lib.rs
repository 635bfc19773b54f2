//! The `ctxkit._native` Python module: a thin binding over `ctxkit-skills` and `ctxkit-memory`.
//!
//! Nothing is decided here. `Skills` asks the same `SkillContextProvider` every other surface
//! asks, and `Memory` the same store and `MemoryContextProvider`; this crate only converts
//! arguments, errors and results, bounds what a message may cost, and releases the GIL while a
//! call reads files or a database. The Python package around it (`python/ctxkit`) adds the
//! Microsoft Agent Framework providers.

#![deny(missing_docs)]

mod memory;
mod messages;
mod skills;

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
fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
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

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<skills::Skills>()?;
    m.add_class::<skills::SkillContext>()?;
    m.add_class::<skills::Tool>()?;
    m.add_class::<memory::Memory>()?;
    m.add_class::<memory::Invocation>()?;
    m.add("CtxkitError", m.py().get_type::<CtxkitError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
