//! Lazy injection: send the full context once, then only what changed, so a long conversation
//! does not pay for the same instructions, tools and catalog on every turn.
//!
//! The [`ContextManager`] remembers hashes of the preamble, the tools and the skills it last
//! injected. On the first message (and after compact or reset) it produces one full
//! `[System Prompt]` / `[Available Tools]` / `[Available Skills]` message; afterwards a
//! `[Context Update]` with `ADDED` / `REMOVED` / `CHANGED` lines when a hash differs, and
//! nothing when nothing changed.

use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};

use crate::context::CatalogEntry;

/// Decides what context message, if any, the next request needs. Saved with a thread, so a
/// resumed conversation sends only what changed since; its hashes are xxh3, the same in every
/// process and build.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ContextManager {
    injected: bool,
    preamble_hash: u64,
    tools_hash: u64,
    skills_hash: u64,
    tools: Vec<CatalogEntry>,
    skills: Vec<CatalogEntry>,
}

fn hash_of<T: Hash + ?Sized>(value: &T) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    value.hash(&mut h);
    h.finish()
}

impl ContextManager {
    /// A manager that has injected nothing yet: the first [`prepare`](Self::prepare) gives
    /// the full context.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the full context has been injected since the last reset.
    pub fn is_injected(&self) -> bool {
        self.injected
    }

    /// Forget the injection so the next message gets the full context again (compact, reset).
    pub fn reset(&mut self) {
        self.injected = false;
    }

    /// The context message the next request needs: full, a delta, or `None`.
    pub fn prepare(
        &mut self,
        preamble: &str,
        tools: &[CatalogEntry],
        skills: &[CatalogEntry],
    ) -> Option<String> {
        let (p, t, s) = (hash_of(preamble), hash_of(tools), hash_of(skills));
        let message = if !self.injected {
            Some(full_message(preamble, tools, skills))
        } else if (p, t, s) == (self.preamble_hash, self.tools_hash, self.skills_hash) {
            None
        } else {
            let mut out = String::from("[Context Update]");
            if p != self.preamble_hash {
                out.push_str("\nSystem prompt changed:\n");
                out.push_str(preamble);
            }
            if s != self.skills_hash {
                out.push_str("\nSkills changed:");
                push_delta(&mut out, &self.skills, skills);
            }
            if t != self.tools_hash {
                out.push_str("\nTools changed:");
                push_delta(&mut out, &self.tools, tools);
            }
            Some(out)
        };
        self.injected = true;
        (self.preamble_hash, self.tools_hash, self.skills_hash) = (p, t, s);
        self.tools = tools.to_vec();
        self.skills = skills.to_vec();
        message
    }
}

fn full_message(preamble: &str, tools: &[CatalogEntry], skills: &[CatalogEntry]) -> String {
    let mut out = format!("[System Prompt]\n{}\n\n[Available Tools]", preamble.trim());
    for t in tools {
        out.push_str(&format!("\n- {}: {}", t.name, t.description));
    }
    out.push_str("\n\n[Available Skills]");
    for s in skills {
        out.push_str(&format!("\n- {}: {}", s.name, s.description));
    }
    out
}

fn push_delta(out: &mut String, old: &[CatalogEntry], new: &[CatalogEntry]) {
    let find = |list: &[CatalogEntry], name: &str| list.iter().position(|e| &*e.name == name);
    for e in new {
        match find(old, &e.name) {
            None => out.push_str(&format!("\n- ADDED: {}: {}", e.name, e.description)),
            Some(i) if old[i].description != e.description => {
                out.push_str(&format!("\n- CHANGED: {}: {}", e.name, e.description))
            }
            Some(_) => {}
        }
    }
    for e in old.iter().filter(|e| find(new, &e.name).is_none()) {
        out.push_str(&format!("\n- REMOVED: {}", e.name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, description: &str) -> CatalogEntry {
        CatalogEntry {
            name: name.into(),
            description: description.into(),
        }
    }

    fn setup() -> (Vec<CatalogEntry>, Vec<CatalogEntry>) {
        (
            vec![
                entry("bash", "Execute bash commands"),
                entry("read_skills", "List available skills"),
            ],
            vec![
                entry("coding-assistant", "Expert coding guidance"),
                entry("translator", "Translation"),
            ],
        )
    }

    #[test]
    fn first_message_injects_full_context() {
        let (tools, skills) = setup();
        let mut cm = ContextManager::new();
        let msg = cm.prepare("You are helpful.", &tools, &skills).unwrap();
        assert_eq!(
            msg,
            "[System Prompt]\nYou are helpful.\n\n[Available Tools]\n- bash: Execute bash commands\n\
             - read_skills: List available skills\n\n[Available Skills]\n\
             - coding-assistant: Expert coding guidance\n- translator: Translation"
        );
        assert!(cm.is_injected());
    }

    #[test]
    fn unchanged_context_is_not_reinjected() {
        let (tools, skills) = setup();
        let mut cm = ContextManager::new();
        cm.prepare("p", &tools, &skills).unwrap();
        assert_eq!(cm.prepare("p", &tools, &skills), None);
        assert_eq!(cm.prepare("p", &tools, &skills), None);
    }

    #[test]
    fn compact_and_reset_reinject_in_full() {
        let (tools, skills) = setup();
        let mut cm = ContextManager::new();
        cm.prepare("p", &tools, &skills);
        cm.reset();
        assert!(!cm.is_injected());
        let again = cm.prepare("p", &tools, &skills).unwrap();
        assert!(again.starts_with("[System Prompt]\np"));
        assert_eq!(cm.prepare("p", &tools, &skills), None);
    }

    #[test]
    fn changes_are_injected_as_deltas() {
        let (tools, mut skills) = setup();
        let mut cm = ContextManager::new();
        cm.prepare("p", &tools, &skills);
        skills.remove(1);
        skills[0].description = "Better coding guidance".into();
        skills.push(entry("new-skill", "Description of new skill"));
        let mut tools2 = tools.clone();
        tools2.push(entry("new_tool", "Description of new tool"));
        let delta = cm.prepare("p", &tools2, &skills).unwrap();
        assert_eq!(
            delta,
            "[Context Update]\nSkills changed:\n- CHANGED: coding-assistant: Better coding guidance\n\
             - ADDED: new-skill: Description of new skill\n- REMOVED: translator\n\
             Tools changed:\n- ADDED: new_tool: Description of new tool"
        );
        // Only the changed section appears.
        let delta = cm.prepare("q", &tools2, &skills).unwrap();
        assert_eq!(delta, "[Context Update]\nSystem prompt changed:\nq");
        assert_eq!(cm.prepare("q", &tools2, &skills), None);
    }
}
