//! `ctxkit.Skills`: the skills of some folders, selected and injected by the same
//! `SkillContextProvider` the CLI, the hooks and the MCP server use.

use std::path::PathBuf;
use std::sync::Arc;

use ctxkit::RunInfo;
use ctxkit_skills::{Mode, Selection, SkillConfig, SkillContextProvider, SkillLibrary, SkillRoot, Source};
use pyo3::exceptions::{PyFileNotFoundError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::messages::from_pairs;
use crate::runtime::{runtime, CtxkitError};

/// The skills found under some folders, matched against messages by their triggers.
///
/// Loading reads every `SKILL.md` once; matching is one pass over the message, whatever the
/// number of skills. Safe to share between threads.
#[pyclass(frozen, module = "ctxkit")]
pub(crate) struct Skills {
    provider: SkillContextProvider,
}

#[pymethods]
impl Skills {
    /// Load the skills under `paths` (folders holding `SKILL.md` files, at any depth).
    #[new]
    #[pyo3(signature = (paths, max_skills = 3, mode = "triggered"))]
    fn new(py: Python<'_>, paths: Vec<PathBuf>, max_skills: usize, mode: &str) -> PyResult<Self> {
        let mode: Mode = mode.parse().map_err(PyValueError::new_err)?;
        if paths.is_empty() {
            return Err(PyValueError::new_err(
                "no skills folder given; pass one or more folders holding SKILL.md files",
            ));
        }
        if let Some(missing) = paths.iter().find(|p| !p.is_dir()) {
            return Err(PyFileNotFoundError::new_err(format!(
                "skills folder `{}` does not exist or is not a folder",
                missing.display()
            )));
        }
        let roots = paths
            .into_iter()
            .map(|p| SkillRoot::new(p, Source::Project))
            .collect();
        let library = py.detach(|| SkillLibrary::load(roots));
        let mut config = SkillConfig {
            mode,
            ..SkillConfig::default()
        };
        config.select.max_skills = max_skills;
        Ok(Skills {
            provider: SkillContextProvider::new(Arc::new(library), config),
        })
    }

    /// The names of the skills `message` selects, in the order they are injected.
    #[pyo3(name = "match")]
    fn match_(&self, message: &str) -> PyResult<Vec<String>> {
        Ok(self.selections(message)?.into_iter().map(|s| s.name).collect())
    }

    /// Why each skill is selected: a dict per skill with its `name`, the `reason`
    /// (`triggered`, `explicit`, `always`, `detected`, `lexical`, `semantic`) and the `triggers` that
    /// fired (an inflected form says so: `"greet (as greeted)"`).
    fn explain<'py>(&self, py: Python<'py>, message: &str) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.selections(message)?
            .into_iter()
            .map(|s| {
                let d = PyDict::new(py);
                d.set_item("name", &s.name)?;
                d.set_item("reason", s.reason.as_str())?;
                d.set_item("triggers", s.fired())?;
                Ok(d)
            })
            .collect()
    }

    /// The text injected for `message`: the selected skills' bodies (and, in `hybrid` and
    /// `on-demand` modes, the catalog), or `""` when there is nothing to add.
    fn context(&self, message: &str) -> PyResult<String> {
        let messages = from_pairs(vec![("user".into(), message.into())])?;
        Ok(self.contribution(&messages).system_text().unwrap_or_default())
    }

    /// What the provider contributes to a conversation of `(role, text)` pairs: the text and
    /// the tools (`read_skill` and `read_skills` in `hybrid` and `on-demand` modes). What a
    /// framework's provider calls with the run's messages.
    fn context_for(&self, py: Python<'_>, messages: Vec<(String, String)>) -> PyResult<SkillContext> {
        let context = self.contribution(&from_pairs(messages)?);
        Ok(SkillContext {
            // Made a Python string once: a body of a few thousand characters costs
            // microseconds to convert, and the getter hands out the same object.
            text: context.system_text().map(|t| PyString::new(py, &t).unbind()),
            tools: context.tools.iter().map(|t| Tool(t.clone())).collect(),
        })
    }

    /// Read the folders again (after skills were added, changed or removed).
    fn reload(&self, py: Python<'_>) {
        py.detach(|| {
            self.provider.library().reload();
        });
    }

    /// Every loaded skill: `name`, `description`, `path` and its literal `triggers`.
    fn skills<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let index = self.provider.library().snapshot();
        index
            .skills()
            .iter()
            .map(|skill| {
                let d = PyDict::new(py);
                d.set_item("name", &skill.name)?;
                d.set_item("description", &skill.description)?;
                d.set_item("path", &skill.path)?;
                d.set_item("triggers", skill.triggers.literals().collect::<Vec<_>>())?;
                Ok(d)
            })
            .collect()
    }

    /// What the last load found wrong in the skill files (a warning or an error per line,
    /// naming the file), as `ctxkit skills validate` shows it.
    fn diagnostics(&self) -> Vec<String> {
        let index = self.provider.library().snapshot();
        index.diagnostics().iter().map(ToString::to_string).collect()
    }

    fn __len__(&self) -> usize {
        self.provider.library().snapshot().len()
    }

    fn __repr__(&self) -> String {
        let config = self.provider.config();
        format!(
            "Skills({} skills, max_skills={}, mode={:?})",
            self.__len__(),
            config.select.max_skills,
            config.mode.as_str()
        )
    }
}

impl Skills {
    /// Matching and rendering read no file and take microseconds, so the GIL is kept:
    /// releasing and taking it again would cost a fair share of the call.
    fn contribution(&self, messages: &[ctxkit::Message]) -> ctxkit::Context {
        self.provider.context_for(messages, &RunInfo::default()).0
    }

    fn selections(&self, message: &str) -> PyResult<Vec<Selection>> {
        let index = self.provider.library().snapshot();
        let messages = from_pairs(vec![("user".into(), message.into())])?;
        Ok(self.provider.select(&index, &messages, None, None, None))
    }
}

/// What the skills provider contributes to one run.
#[pyclass(frozen, module = "ctxkit")]
pub(crate) struct SkillContext {
    text: Option<Py<PyString>>,
    tools: Vec<Tool>,
}

#[pymethods]
impl SkillContext {
    /// The system text to add (stable parts first, then per-message ones), or `None`.
    #[getter]
    fn text(&self, py: Python<'_>) -> Option<Py<PyString>> {
        self.text.as_ref().map(|t| t.clone_ref(py))
    }

    /// The tools that come with it.
    #[getter]
    fn tools(&self) -> Vec<Tool> {
        self.tools.clone()
    }
}

/// A tool the model may call: `read_skill` loads one skill's instructions by name (never by
/// path), `read_skills` lists them.
#[pyclass(frozen, module = "ctxkit")]
#[derive(Clone)]
pub(crate) struct Tool(Arc<dyn ctxkit::Tool>);

#[pymethods]
impl Tool {
    /// The tool's name.
    #[getter]
    fn name(&self) -> String {
        self.0.name().to_string()
    }

    /// What the tool does, for the model.
    #[getter]
    fn description(&self) -> String {
        self.0.description().to_string()
    }

    /// The JSON schema of its arguments, as JSON text.
    #[getter]
    fn parameters_json(&self) -> String {
        self.0.parameters().to_string()
    }

    /// Run the tool on `arguments_json` (a JSON object) and return its answer; a refusal
    /// (an unknown skill, say) is a `CtxkitError` saying why.
    fn call(&self, py: Python<'_>, arguments_json: &str) -> PyResult<String> {
        let arguments: serde_json::Value = serde_json::from_str(arguments_json)
            .map_err(|e| PyValueError::new_err(format!("the tool's arguments are not JSON: {e}")))?;
        let runtime = runtime()?;
        let tool = self.0.clone();
        py.detach(|| runtime.block_on(tool.call(arguments)))
            .map_err(|e| CtxkitError::new_err(e.to_string()))
    }

    fn __repr__(&self) -> String {
        format!("Tool({:?})", self.0.name())
    }
}
