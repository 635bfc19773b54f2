//! Scoped key-value state of a thread (seed 004 §8): `temp:` keys live for one tool round,
//! `session:` keys for the thread, `project:` keys are meant to outlive it (a memory
//! provider persists them). Keys without a known prefix behave as `session:`.

use std::collections::BTreeMap;

use serde_json::Value;

pub const TEMP: &str = "temp:";
pub const SESSION: &str = "session:";
pub const PROJECT: &str = "project:";

/// Key-value state with scope prefixes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct State {
    values: BTreeMap<String, Value>,
}

impl State {
    pub fn set(&mut self, key: impl Into<String>, value: Value) {
        self.values.insert(key.into(), value);
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.values.get(key)
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.values.remove(key)
    }

    /// Drop every `temp:` key; the runner calls this after each tool round.
    pub fn clear_temp(&mut self) {
        self.values.retain(|k, _| !k.starts_with(TEMP));
    }

    /// Drop everything but `project:` keys; a thread reset calls this.
    pub fn clear_session(&mut self) {
        self.values.retain(|k, _| k.starts_with(PROJECT));
    }

    /// The `project:` entries, for persistence.
    pub fn project_entries(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.values
            .iter()
            .filter(|(k, _)| k.starts_with(PROJECT))
            .map(|(k, v)| (k.as_str(), v))
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_clear_as_documented() {
        let mut s = State::default();
        s.set("temp:file", Value::from("a.rs"));
        s.set("session:goal", Value::from("fix"));
        s.set("project:pm", Value::from("pnpm"));
        s.clear_temp();
        assert!(s.get("temp:file").is_none());
        assert!(s.get("session:goal").is_some());
        s.clear_session();
        assert!(s.get("session:goal").is_none());
        assert_eq!(s.project_entries().count(), 1);
    }
}
