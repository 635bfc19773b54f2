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
mod runtime;
mod skills;

use pyo3::prelude::*;

use self::runtime::CtxkitError;

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
