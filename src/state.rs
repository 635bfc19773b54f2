//! Scoped key-value state of a thread: `temp:` keys live for one tool round,
//! `session:` keys for the thread, `project:` keys are meant to outlive it (a memory
//! provider persists them). Keys without a known prefix behave as `session:`.

use std::collections::BTreeMap;

use serde_json::Value;

/// Key-value state with scope prefixes.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct State {
    values: BTreeMap<String, Value>,
}

impl State {
    /// Prefix of keys for one tool round: the runner clears them after each round of tool calls.
    pub const TEMP: &'static str = "temp:";
    /// Prefix of keys that last as long as the thread; [`Thread::reset`](crate::agent::Thread::reset)
    /// clears them.
    pub const SESSION: &'static str = "session:";
    /// Prefix of keys meant to outlive the thread: a reset keeps them and a memory provider
    /// persists them.
    pub const PROJECT: &'static str = "project:";

    /// Set `key`; its prefix decides how long the value lives.
    pub fn set(&mut self, key: impl Into<String>, value: Value) {
        self.values.insert(key.into(), value);
    }

    /// The value of `key`, unless it was never set or its scope has been cleared.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.values.get(key)
    }

    /// Drop `key` before its scope ends, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.values.remove(key)
    }

    /// Drop every `temp:` key; the runner calls this after each tool round.
    pub fn clear_temp(&mut self) {
        self.values.retain(|k, _| !k.starts_with(Self::TEMP));
    }

    /// Drop everything but `project:` keys; a thread reset calls this.
    pub fn clear_session(&mut self) {
        self.values.retain(|k, _| k.starts_with(Self::PROJECT));
    }

    /// The `project:` entries, for persistence.
    pub fn project_entries(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.values
            .iter()
            .filter(|(k, _)| k.starts_with(Self::PROJECT))
            .map(|(k, v)| (k.as_str(), v))
    }

    /// Whether no key of any scope is set.
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
