//! quester's environments as a Python extension module, `quester_envs._native`; the Python
//! package in python/quester_envs wraps it with Gymnasium's text-env API. Env calls run without
//! the GIL, so Python threads can step different envs at once. Every bad input becomes a
//! Python exception.

mod convert;

use convert::{settings_table, to_py, Report, StrCache};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use quester_envs::episode::{self, Episode};
use quester_envs::{Env, EnvError};
use serde_json::Value;
use std::sync::{Mutex, MutexGuard};

/// One environment and its episode in play.
struct Inner {
    /// `None` once closed.
    env: Option<Box<dyn Env>>,
    episode: Option<Episode>,
}

/// The Python-facing env. The mutex makes it shareable between threads (pyo3 requires it); it
/// is only ever taken with the GIL released, so a thread waiting for it never blocks the one
/// holding it.
#[pyclass(module = "quester_envs._native")]
struct NativeEnv {
    inner: Mutex<Inner>,
    /// Taken only with the GIL held (and never across a release of it), so never contended.
    cache: Mutex<StrCache>,
}

/// Settings and names are the caller's to fix (ValueError); anything else failed in the env.
fn env_error(e: EnvError) -> PyErr {
    match e {
        EnvError::UnknownEnv { .. } | EnvError::Config { .. } => {
            PyValueError::new_err(e.to_string())
        }
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

impl NativeEnv {
    /// The info dict of `report`, its repeated texts from this env's string cache.
    fn info_dict<'py>(&self, py: Python<'py>, report: Report) -> PyResult<Bound<'py, PyDict>> {
        let mut cache = self
            .cache
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the env's string cache failed earlier"))?;
        report.into_dict(py, &mut cache)
    }

    fn lock(&self) -> PyResult<MutexGuard<'_, Inner>> {
        // Poisoned: an env call panicked midway, so the env's state is unknown.
        self.inner.lock().map_err(|_| {
            PyRuntimeError::new_err("the env failed in an earlier call; make a new one")
        })
    }
}

impl Inner {
    fn env(&mut self) -> PyResult<&mut Box<dyn Env>> {
        self.env
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("the env is closed"))
    }

    fn reset(&mut self, seed: u64, episode_id: Option<String>) -> PyResult<(String, Report)> {
        let env = self.env()?;
        let text = env.reset(seed).map_err(env_error)?;
        let episode = Episode::start(env.as_ref(), seed, episode_id);
        let report = Report::new(env.as_ref(), &episode, None);
        self.episode = Some(episode);
        Ok((text, report))
    }

    fn step(&mut self, text: &str) -> PyResult<(String, f64, bool, Report)> {
        let Some(env) = self.env.as_mut() else {
            return Err(PyRuntimeError::new_err("the env is closed"));
        };
        let Some(episode) = self.episode.as_mut() else {
            return Err(PyRuntimeError::new_err(
                "step before reset: call reset() to start an episode",
            ));
        };
        if episode.done {
            return Err(PyRuntimeError::new_err(
                "the episode is over: call reset() to start another",
            ));
        }
        let mut step = env.step(text);
        // `record` keeps no observation: move it out rather than copy it.
        let observation = std::mem::take(&mut step.observation);
        let reward = step.reward;
        let outcome = episode.record(step);
        let report = Report::new(env.as_ref(), episode, Some(outcome));
        Ok((observation, reward, episode.done, report))
    }
}

#[pymethods]
impl NativeEnv {
    /// Builds env `name` from `settings` (a dict of that env's config keys).
    #[new]
    fn new(py: Python<'_>, name: &str, settings: &Bound<'_, PyDict>) -> PyResult<NativeEnv> {
        let table = settings_table(settings)?;
        // Building may be slow (ScienceWorld starts Java): let other threads run meanwhile.
        let env = py
            .allow_threads(|| quester_envs::make_env(name, table))
            .map_err(env_error)?;
        Ok(NativeEnv {
            inner: Mutex::new(Inner {
                env: Some(env),
                episode: None,
            }),
            cache: Mutex::new(StrCache::default()),
        })
    }

    /// Starts an episode from `seed`; returns the first observation and the info dict.
    #[pyo3(signature = (seed, episode_id=None))]
    fn reset<'py>(
        &self,
        py: Python<'py>,
        seed: u64,
        episode_id: Option<String>,
    ) -> PyResult<(String, Bound<'py, PyDict>)> {
        let (text, report) = py.allow_threads(|| self.lock()?.reset(seed, episode_id))?;
        Ok((text, self.info_dict(py, report)?))
    }

    /// Plays the model's whole response; returns Gymnasium's (observation, reward,
    /// terminated, truncated, info). Terminated is the env's done; truncated is always False
    /// (the turn budget is the caller's). The tuple is built here: `TextEnv.step` is this
    /// method.
    fn step<'py>(
        &self,
        py: Python<'py>,
        text: &str,
    ) -> PyResult<(String, f64, bool, bool, Bound<'py, PyDict>)> {
        let (observation, reward, done, report) = py.allow_threads(|| self.lock()?.step(text))?;
        Ok((
            observation,
            reward,
            done,
            false,
            self.info_dict(py, report)?,
        ))
    }

    /// OpenEnv's state: `episode_id`, `step_count`, `env`, `max_turns`, and once an episode
    /// started `seed`, `done`, `won`, `total_reward`.
    fn state(&self, py: Python<'_>) -> PyResult<PyObject> {
        let state: PyResult<Value> = py.allow_threads(|| {
            let mut inner = self.lock()?;
            let episode = inner.episode.clone();
            Ok(episode::state(inner.env()?.as_ref(), episode.as_ref()))
        });
        to_py(py, &state?)
    }

    /// The env's registry name.
    fn name(&self, py: Python<'_>) -> PyResult<&'static str> {
        py.allow_threads(|| Ok(self.lock()?.env()?.name()))
    }

    /// The env's rules block (symbols, how an action is written).
    fn rules(&self, py: Python<'_>) -> PyResult<String> {
        py.allow_threads(|| Ok(self.lock()?.env()?.rules()))
    }

    /// Turns per attempt.
    fn max_turns(&self, py: Python<'_>) -> PyResult<usize> {
        py.allow_threads(|| Ok(self.lock()?.env()?.max_turns()))
    }

    /// Drops the env (and whatever it holds, e.g. a JVM); later calls raise.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.allow_threads(|| {
            let mut inner = self.lock()?;
            inner.env = None;
            inner.episode = None;
            Ok(())
        })
    }
}

/// The registered env names.
#[pyfunction]
fn env_names() -> Vec<&'static str> {
    quester_envs::env_names().collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeEnv>()?;
    m.add_function(wrap_pyfunction!(env_names, m)?)?;
    Ok(())
}
