//! Between Python objects and the JSON and TOML values the envs speak.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::{intern, IntoPyObjectExt};
use quester_envs::episode::{json_to_toml, valid_actions, Episode, Outcome};
use quester_envs::Env;
use serde_json::Value;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FxHash (rustc's): the cache's keys are short action texts and info keys, for which
/// SipHash's cost is most of a lookup.
#[derive(Default)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let word = u64::from_le_bytes(c.try_into().unwrap_or_default());
            self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Python strings for the texts an env repeats every step (its action texts, info keys and
/// short info values, the episode id), so a step makes no new str objects for them (fresh
/// strings for the valid-actions list were about a tenth of a MineSweeper step). Only touched
/// with the GIL held.
#[derive(Default)]
pub struct StrCache {
    map: HashMap<Box<str>, Py<PyString>, BuildHasherDefault<FxHasher>>,
    /// The last episode id given out (one per episode, so kept apart from the map).
    episode_id: Option<(String, Py<PyString>)>,
}

/// Most strings kept; past it the cache starts over (envs whose action texts never repeat,
/// e.g. WebShop's search queries, would otherwise grow it without end).
const MAX_CACHED: usize = 4096;
/// Longest info value cached (longer ones are messages, rarely repeated).
const MAX_CACHED_VALUE: usize = 32;

impl StrCache {
    fn get<'py>(&mut self, py: Python<'py>, s: &str) -> Bound<'py, PyString> {
        if let Some(p) = self.map.get(s) {
            return p.bind(py).clone();
        }
        if self.map.len() >= MAX_CACHED {
            self.map.clear();
        }
        let p = PyString::new(py, s);
        self.map.insert(s.into(), p.clone().unbind());
        p
    }

    fn episode_id<'py>(&mut self, py: Python<'py>, id: &str) -> Bound<'py, PyString> {
        match &self.episode_id {
            Some((s, p)) if s == id => p.bind(py).clone(),
            _ => {
                let p = PyString::new(py, id);
                self.episode_id = Some((id.to_string(), p.clone().unbind()));
                p
            }
        }
    }

    /// An info value; short strings come from the cache.
    fn value(&mut self, py: Python<'_>, value: &Value) -> PyResult<PyObject> {
        match value {
            Value::String(s) if s.len() <= MAX_CACHED_VALUE => {
                Ok(self.get(py, s).into_any().unbind())
            }
            other => to_py(py, other),
        }
    }
}

/// A JSON value as a Python object (dicts, lists, str, int, float, bool, None).
pub fn to_py(py: Python<'_>, value: &Value) -> PyResult<PyObject> {
    Ok(match value {
        Value::Null => py.None(),
        Value::Bool(b) => b.into_py_any(py)?,
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_py_any(py)?,
            (None, Some(u)) => u.into_py_any(py)?,
            _ => n.as_f64().unwrap_or(f64::NAN).into_py_any(py)?,
        },
        Value::String(s) => s.into_py_any(py)?,
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any().unbind()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, to_py(py, v)?)?;
            }
            dict.into_any().unbind()
        }
    })
}

/// What a reset or step reports besides the observation: the fields of the server's
/// observation metadata (`Episode::metadata`, same keys in the same order) and the valid
/// actions. Plain Rust data, gathered without the GIL and turned into a dict after; built
/// directly rather than through a JSON map, which cost more than the env's own step
/// (python/tests checks the keys against `quester env serve`).
pub struct Report {
    env: &'static str,
    episode_id: String,
    seed: u64,
    step_count: u64,
    outcome: Option<Outcome>,
    /// The env's key for what the attempt achieved, once done.
    final_outcome: Option<String>,
    valid_actions: Option<Vec<String>>,
}

impl Report {
    pub fn new(env: &dyn Env, episode: &Episode, outcome: Option<Outcome>) -> Report {
        Report {
            env: env.name(),
            episode_id: episode.id.clone(),
            seed: episode.seed,
            step_count: episode.steps,
            outcome,
            final_outcome: episode.done.then(|| env.outcome()),
            valid_actions: valid_actions(env, episode.done),
        }
    }

    /// The info dict: `env`, `episode_id`, `seed`, `step_count`; after a step `won`, `valid`,
    /// `info`; once done `outcome`; then `valid_actions`. Repeated texts come from `cache`.
    pub fn into_dict<'py>(
        self,
        py: Python<'py>,
        cache: &mut StrCache,
    ) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        dict.set_item(intern!(py, "env"), cache.get(py, self.env))?;
        dict.set_item(
            intern!(py, "episode_id"),
            cache.episode_id(py, &self.episode_id),
        )?;
        dict.set_item(intern!(py, "seed"), self.seed)?;
        dict.set_item(intern!(py, "step_count"), self.step_count)?;
        if let Some(o) = self.outcome {
            dict.set_item(intern!(py, "won"), o.won)?;
            dict.set_item(intern!(py, "valid"), o.valid)?;
            let info = PyDict::new(py);
            for (k, v) in &o.info {
                info.set_item(cache.get(py, k), cache.value(py, v)?)?;
            }
            dict.set_item(intern!(py, "info"), info)?;
        }
        if let Some(key) = self.final_outcome {
            dict.set_item(intern!(py, "outcome"), cache.get(py, &key))?;
        }
        match self.valid_actions {
            Some(actions) => {
                let items: Vec<_> = actions.iter().map(|a| cache.get(py, a)).collect();
                dict.set_item(intern!(py, "valid_actions"), PyList::new(py, items)?)?;
            }
            None => dict.set_item(intern!(py, "valid_actions"), py.None())?,
        }
        Ok(dict)
    }
}

/// Env settings from a Python dict; a value TOML cannot hold is an error naming its key.
pub fn settings_table(settings: &Bound<'_, PyDict>) -> PyResult<toml::Table> {
    let mut table = toml::Table::new();
    for (key, value) in settings.iter() {
        let key: String = key
            .extract()
            .map_err(|_| PyTypeError::new_err("setting names must be strings"))?;
        let json = to_json(&value)
            .map_err(|why| PyValueError::new_err(format!("setting `{key}`: {why}")))?;
        let value = json_to_toml(json).ok_or_else(|| {
            PyValueError::new_err(format!("setting `{key}`: None is not a setting value"))
        })?;
        table.insert(key, value);
    }
    Ok(table)
}

/// A Python value as JSON (then TOML through the server's own conversion).
fn to_json(value: &Bound<'_, PyAny>) -> Result<Value, String> {
    if value.is_none() {
        return Ok(Value::Null);
    }
    // bool before int: Python's bools are ints.
    if let Ok(b) = value.downcast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if value.is_instance_of::<PyInt>() {
        let i: i64 = value
            .extract()
            .map_err(|_| format!("{value} does not fit a 64-bit integer"))?;
        return Ok(i.into());
    }
    if let Ok(f) = value.downcast::<PyFloat>() {
        return serde_json::Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| format!("{} is not a finite number", f.value()));
    }
    if value.is_instance_of::<PyString>() {
        return value
            .extract::<String>()
            .map(Value::String)
            .map_err(|e| e.to_string());
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for item in value.try_iter().map_err(|e| e.to_string())? {
            items.push(to_json(&item.map_err(|e| e.to_string())?)?);
        }
        return Ok(Value::Array(items));
    }
    if let Ok(d) = value.downcast::<PyDict>() {
        let mut map = serde_json::Map::new();
        for (k, v) in d.iter() {
            let k: String = k
                .extract()
                .map_err(|_| "table keys must be strings".to_string())?;
            map.insert(k, to_json(&v)?);
        }
        return Ok(Value::Object(map));
    }
    let kind = value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    Err(format!(
        "a value of type {kind} is not a setting (use str, int, float, bool, list or dict)"
    ))
}
