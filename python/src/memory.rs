//! `ctxkit.Memory`: one project's memories in a SQLite file or on a PostgreSQL server, through
//! the same store and `MemoryContextProvider` as the CLI.

use std::future::Future;
use std::sync::Arc;

use ctxkit::{Context, ContextProvider, Message, RunInfo, RunOutcome, State};
use ctxkit_memory::{
    is_postgres_url, ListOptions, MemoryCategory, MemoryContextProvider, MemoryEntry, MemoryError,
    MemorySearchRequest, MemoryStore, NewMemoryEntry, OpenOptions, PostgresStore, SqliteMemoryStore,
};
use ctxkit_secrets::redact_url;
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::messages::{cut, from_pairs};
use crate::runtime::{runtime, CtxkitError};

/// The memories of one project. Every call that reads or writes the database releases the GIL.
#[pyclass(frozen, module = "ctxkit")]
pub(crate) struct Memory {
    provider: MemoryContextProvider,
    project: String,
}

/// What the memory provider contributed to one run, kept from `before_run` to `after_run` so
/// the run's end counts the access of exactly what was injected.
#[pyclass(frozen, module = "ctxkit")]
pub(crate) struct Invocation {
    messages: Vec<Message>,
    context: Context,
    run: RunInfo,
}

#[pymethods]
impl Invocation {
    /// The text injected into the run, or `None` when no memory was relevant.
    #[getter]
    fn text(&self) -> Option<String> {
        self.context.system_text()
    }
}

#[pymethods]
impl Memory {
    /// Open the memories of `project` in `db`: a SQLite file (created when missing) or a
    /// `postgres://` URL (connected on first use).
    #[new]
    fn new(py: Python<'_>, db: &str, project: &str) -> PyResult<Self> {
        let store: Arc<dyn MemoryStore> = if is_postgres_url(db) {
            // The pool is made on ctxkit's runtime, which later calls run on.
            let _runtime = runtime()?.enter();
            Arc::new(PostgresStore::open_with(db, OpenOptions::default()).map_err(to_py)?)
        } else if db.contains("://") {
            // Never a SQLite file named after a URL (password included).
            return Err(PyValueError::new_err(format!(
                "`{}` is neither a SQLite file nor a postgres:// URL",
                redact_url(db)
            )));
        } else {
            let opened = py.detach(|| SqliteMemoryStore::open(db));
            Arc::new(opened.map_err(to_py)?)
        };
        let provider = MemoryContextProvider::new(store)
            .with_project(project)
            .without_state();
        Ok(Memory {
            provider,
            project: project.to_string(),
        })
    }

    /// Store a memory and return its id. `category` is one of `preference`, `convention`,
    /// `pattern`, `correction`, `fact`; `importance` is from 0.0 to 1.0. A content that looks
    /// like a secret raises `ValueError` (the message names the rule, never the secret).
    #[pyo3(signature = (content, category = "fact", importance = 0.5))]
    fn add(&self, py: Python<'_>, content: &str, category: &str, importance: f32) -> PyResult<String> {
        let category: MemoryCategory = category.parse().map_err(to_py)?;
        let new = NewMemoryEntry::new(&self.project, category, content).importance(importance);
        let entry = block_on(py, self.store().add(new))?;
        Ok(entry.id)
    }

    /// The memories most relevant to `query`, best first: dicts with the memory's fields
    /// and its `score`. Each result's access is counted, as `ctxkit memory search` does. Only
    /// the query's first 100,000 characters are read.
    #[pyo3(signature = (query, limit = 5))]
    fn search<'py>(
        &self,
        py: Python<'py>,
        mut query: String,
        limit: usize,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        cut(&mut query);
        let request = MemorySearchRequest::new(&self.project, query).top_k(limit);
        let hits = block_on(py, self.store().search(request))?;
        hits.iter()
            .map(|hit| {
                let d = entry_dict(py, &hit.entry)?;
                d.set_item("score", decimal(hit.relevance_score))?;
                Ok(d)
            })
            .collect()
    }

    /// The project's memories, newest first (at most `limit`).
    #[pyo3(signature = (limit = 100))]
    fn list<'py>(&self, py: Python<'py>, limit: usize) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let options = ListOptions {
            limit,
            ..ListOptions::default()
        };
        let entries = block_on(py, self.store().list(&self.project, options))?;
        entries.iter().map(|e| entry_dict(py, e)).collect()
    }

    /// Delete the memory `id` of this project; `KeyError` when there is none.
    fn delete(&self, py: Python<'_>, id: &str) -> PyResult<()> {
        let entry = block_on(py, self.store().get(id))?;
        match entry {
            Some(e) if e.project_path == self.project => {
                block_on(py, self.store().delete(id))?;
                Ok(())
            }
            _ => Err(to_py(MemoryError::NotFound(id.to_string()))),
        }
    }

    /// The project these memories belong to.
    #[getter]
    fn project(&self) -> &str {
        &self.project
    }

    /// The memory context for a run's `(role, text)` messages (the provider's `invoking`).
    #[pyo3(signature = (messages, thread_id = String::new()))]
    fn invoking(
        &self,
        py: Python<'_>,
        messages: Vec<(String, String)>,
        thread_id: String,
    ) -> PyResult<Invocation> {
        let messages = from_pairs(messages)?;
        let run = RunInfo {
            thread_id,
            project: Some(self.project.clone()),
            ..RunInfo::default()
        };
        let context = block_on(py, async { self.provider.invoking(&messages, &run).await })?;
        Ok(Invocation {
            messages,
            context,
            run,
        })
    }

    /// The end of a run begun with [`invoking`](Self::invoking), which replied `reply`
    /// (the provider's `run_finished`): counts the access of the memories injected, carries
    /// out "remember …" / "forget …" in the user's message and records an episode.
    fn run_finished(&self, py: Python<'_>, invocation: &Invocation, reply: &str) -> PyResult<()> {
        let Some(input) = invocation
            .messages
            .iter()
            .rev()
            .find(|m| m.role == ctxkit::Role::User)
        else {
            return Ok(());
        };
        let reply = Message::assistant(reply);
        let state = State::default();
        let outcome = RunOutcome {
            messages: &invocation.messages,
            input,
            result: Ok(&reply),
            context: &invocation.context,
            state: &state,
        };
        block_on(py, self.provider.run_finished(&invocation.run, &outcome))
    }

    fn __repr__(&self) -> String {
        format!("Memory(project={:?})", self.project)
    }
}

impl Memory {
    fn store(&self) -> &Arc<dyn MemoryStore> {
        self.provider.store()
    }
}

/// Run `work` on ctxkit's runtime with the GIL released.
fn block_on<T, E>(py: Python<'_>, work: impl Future<Output = Result<T, E>> + Send) -> PyResult<T>
where
    T: Send,
    E: Into<Failure> + Send,
{
    let runtime = runtime()?;
    py.detach(|| runtime.block_on(work))
        .map_err(|e| e.into().into_py())
}

/// An error of the store or of a provider, on its way to becoming a Python exception.
enum Failure {
    Store(MemoryError),
    Provider(ctxkit::Error),
}

impl From<MemoryError> for Failure {
    fn from(e: MemoryError) -> Self {
        Failure::Store(e)
    }
}

impl From<ctxkit::Error> for Failure {
    fn from(e: ctxkit::Error) -> Self {
        Failure::Provider(e)
    }
}

impl Failure {
    fn into_py(self) -> PyErr {
        match self {
            Failure::Store(e) => to_py(e),
            Failure::Provider(e) => CtxkitError::new_err(e.to_string()),
        }
    }
}

/// A store error as the Python exception a caller expects, with the store's one-sentence
/// message (which names a secret's rule, never the secret).
fn to_py(e: MemoryError) -> PyErr {
    let message = e.to_string();
    match e {
        MemoryError::Secret { .. }
        | MemoryError::Invalid(_)
        | MemoryError::UnknownCategory(_)
        | MemoryError::Duplicate { .. }
        | MemoryError::WrongProject { .. } => PyValueError::new_err(message),
        MemoryError::NotFound(_) | MemoryError::HistoryNotFound { .. } => PyKeyError::new_err(message),
        _ => CtxkitError::new_err(message),
    }
}

fn entry_dict<'py>(py: Python<'py>, e: &MemoryEntry) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("id", &e.id)?;
    d.set_item("content", &e.content)?;
    d.set_item("category", e.category.as_str())?;
    d.set_item("importance", decimal(e.importance))?;
    d.set_item("keywords", &e.keywords)?;
    d.set_item("access_count", e.access_count)?;
    d.set_item("created_at", e.created_at)?;
    d.set_item("updated_at", e.updated_at)?;
    Ok(d)
}

/// An `f32` as the `float` its shortest decimal names (0.9, not 0.8999999761581421).
fn decimal(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}
