//! Skills learned from sessions, kept per project beside the memories: what they are, and
//! every change to one, decided here once for both backends.
//!
//! A backend stores each skill as one row keyed by project and name and applies a
//! [`LearnedChange`] inside one write transaction: it reads the row, calls [`apply`], and
//! writes (or deletes) what comes back, so two processes changing the same skill never lose
//! each other's change.

use serde::{Deserialize, Serialize};

use crate::error::{MemoryError, Result};
use crate::rules;
use crate::rules::check_project;

/// The longest SKILL.md a learned skill may hold (the skills parser cuts bodies far sooner).
pub const MAX_LEARNED_TEXT: usize = 32 * 1024;

/// Uses after which an accepted skill's success rate is judged.
pub const REVIEW_AFTER_USES: u64 = 10;
/// The success rate under which an accepted skill goes back to review (proposed: no longer
/// injected) once it has [`REVIEW_AFTER_USES`] uses.
pub const SUCCESS_FLOOR: f64 = 0.5;

/// Where a learned skill stands in review.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LearnedStatus {
    /// Written by the model, waiting for a person: listed, never injected.
    Proposed,
    /// Accepted by a person (or by `auto_accept`): a skill like any other, in the learned tier.
    Accepted,
    /// Turned down; kept so the same skill is not proposed again.
    Rejected,
}

impl LearnedStatus {
    /// The word `ctxkit skills learned list` shows.
    pub fn as_str(self) -> &'static str {
        match self {
            LearnedStatus::Proposed => "proposed",
            LearnedStatus::Accepted => "accepted",
            LearnedStatus::Rejected => "rejected",
        }
    }
}

/// How a learned skill came to be what it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LearnedOrigin {
    /// Written from one session.
    Generated,
    /// Seen again in a later session, which was added to its sources.
    Refined,
}

/// A skill learned from sessions: its SKILL.md and what is known about it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LearnedSkill {
    /// The project it was learned in, and is offered to.
    pub project: String,
    /// Its name: a plain skill name, no path.
    pub name: String,
    /// What it is for (the frontmatter's `description`).
    pub description: String,
    /// The words that make it fire (the frontmatter's `triggers`).
    pub triggers: Vec<String>,
    /// The whole SKILL.md, frontmatter and body.
    pub text: String,
    /// Where it stands in review.
    pub status: LearnedStatus,
    /// Written once, or refined by later sessions.
    pub origin: LearnedOrigin,
    /// The sessions it was learned from, oldest first.
    pub sessions: Vec<String>,
    /// Runs it was injected into.
    pub uses: u64,
    /// Of those, runs that ended without an error.
    pub successes: u64,
    /// When it was first proposed (Unix milliseconds).
    pub created_at: i64,
    /// When it last changed (Unix milliseconds).
    pub updated_at: i64,
}

impl LearnedSkill {
    /// A new proposal of `text` (a SKILL.md already parsed by the caller, whose name,
    /// description and triggers are given) from `session`.
    pub fn proposed(
        project: &str,
        name: &str,
        description: &str,
        triggers: Vec<String>,
        text: &str,
        session: &str,
    ) -> Self {
        LearnedSkill {
            project: project.to_string(),
            name: name.to_string(),
            description: description.to_string(),
            triggers,
            text: text.to_string(),
            status: LearnedStatus::Proposed,
            origin: LearnedOrigin::Generated,
            sessions: vec![session.to_string()],
            uses: 0,
            successes: 0,
            created_at: 0,
            updated_at: 0,
        }
    }

    /// Whether `name` may name a learned skill: 1 to 64 lowercase ASCII letters, digits and
    /// hyphens, so it is one plain folder name wherever it is written.
    pub fn is_plain_name(name: &str) -> bool {
        (1..=64).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    }

    /// The share of its uses that ended well, once it has been used.
    pub fn success_rate(&self) -> Option<f64> {
        (self.uses > 0).then(|| self.successes as f64 / self.uses as f64)
    }
}

/// One change to a project's learned skill, applied atomically by
/// [`LearnedSkillStore::change_learned_skill`](crate::LearnedSkillStore::change_learned_skill).
#[derive(Clone, Debug, PartialEq)]
pub enum LearnedChange {
    /// Store a new proposal; a skill of that name already kept is refined instead (the
    /// session joins its sources, its text and status stay).
    Propose(Box<LearnedSkill>),
    /// Set its review status.
    Review(LearnedStatus),
    /// Count one run it was injected into, and whether that run ended well. An accepted skill
    /// that fails too often ([`SUCCESS_FLOOR`] after [`REVIEW_AFTER_USES`]) goes back to review.
    Used {
        /// The run ended without an error.
        success: bool,
    },
    /// Delete it.
    Remove,
}

/// What a change does to the skill `current` (`None`: not stored) at `now`: the row to write,
/// `None` to delete it. The one place the rules of learned skills live.
pub(crate) fn apply(
    project: &str,
    name: &str,
    current: Option<LearnedSkill>,
    change: LearnedChange,
    now: i64,
) -> Result<Option<LearnedSkill>> {
    let missing = || MemoryError::Invalid(format!("no learned skill is named `{name}`"));
    match change {
        LearnedChange::Propose(new) => {
            let mut new = *new;
            check(&new)?;
            if new.project != project || new.name != name {
                return Err(MemoryError::Invalid(
                    "a proposal is stored under its own project and name".into(),
                ));
            }
            Ok(Some(match current {
                Some(mut kept) => {
                    for session in new.sessions {
                        if !kept.sessions.contains(&session) {
                            kept.sessions.push(session);
                        }
                    }
                    kept.origin = LearnedOrigin::Refined;
                    kept.updated_at = now;
                    kept
                }
                None => {
                    new.created_at = now;
                    new.updated_at = now;
                    new
                }
            }))
        }
        LearnedChange::Review(status) => {
            let mut kept = current.ok_or_else(missing)?;
            kept.status = status;
            kept.updated_at = now;
            Ok(Some(kept))
        }
        LearnedChange::Used { success } => {
            let mut kept = current.ok_or_else(missing)?;
            kept.uses += 1;
            kept.successes += u64::from(success);
            let failing =
                kept.uses >= REVIEW_AFTER_USES && kept.success_rate().is_some_and(|r| r < SUCCESS_FLOOR);
            if failing && kept.status == LearnedStatus::Accepted {
                kept.status = LearnedStatus::Proposed;
                kept.updated_at = now;
            }
            Ok(Some(kept))
        }
        LearnedChange::Remove => {
            current.ok_or_else(missing)?;
            Ok(None)
        }
    }
}

/// Refuse what a learned skill must never hold: a secret, a name that is a path, an oversized
/// text, an empty project.
fn check(skill: &LearnedSkill) -> Result<()> {
    check_project(&skill.project)?;
    if !LearnedSkill::is_plain_name(&skill.name) {
        return Err(MemoryError::Invalid(
            "a learned skill's name is lowercase letters, digits and hyphens, at most 64".into(),
        ));
    }
    if skill.text.len() > MAX_LEARNED_TEXT {
        return Err(MemoryError::Invalid(format!(
            "a learned skill holds at most {MAX_LEARNED_TEXT} bytes"
        )));
    }
    rules::check_secret("learned skill", &skill.text)?;
    rules::check_secret("learned skill", &skill.description)?;
    for trigger in &skill.triggers {
        rules::check_secret("learned skill", trigger)?;
    }
    Ok(())
}

/// The row's stored form (JSON), and back.
pub(crate) fn to_record(skill: &LearnedSkill) -> Result<String> {
    serde_json::to_string(skill)
        .map_err(|e| MemoryError::Invalid(format!("cannot store a learned skill: {e}")))
}

pub(crate) fn from_record(text: &str) -> Result<LearnedSkill> {
    serde_json::from_str(text)
        .map_err(|e| MemoryError::Invalid(format!("a stored learned skill cannot be read: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proposal(session: &str) -> LearnedSkill {
        LearnedSkill::proposed(
            "/p",
            "ship-it",
            "Ship the service",
            vec!["ship".into()],
            "---\nname: ship-it\n---\nRun ./ship.sh",
            session,
        )
    }

    #[test]
    fn a_second_proposal_of_a_name_refines_the_first() {
        let first = apply(
            "/p",
            "ship-it",
            None,
            LearnedChange::Propose(Box::new(proposal("s1"))),
            10,
        )
        .unwrap()
        .unwrap();
        assert_eq!((first.created_at, first.origin), (10, LearnedOrigin::Generated));
        let mut other = proposal("s2");
        other.text = "something else".into();
        let refined = apply(
            "/p",
            "ship-it",
            Some(first),
            LearnedChange::Propose(Box::new(other)),
            20,
        )
        .unwrap()
        .unwrap();
        assert_eq!(refined.sessions, ["s1", "s2"]);
        assert_eq!(refined.origin, LearnedOrigin::Refined);
        assert!(refined.text.contains("ship.sh"), "the reviewed text stays");
        assert_eq!((refined.created_at, refined.updated_at), (10, 20));
    }

    #[test]
    fn hostile_proposals_are_refused() {
        let mut climbing = proposal("s");
        climbing.name = "../../etc".into();
        let mut secret = proposal("s");
        secret
            .text
            .push_str("\ntoken ghp_0123456789abcdefghijklmnopqrstuvwxyzAB");
        let mut huge = proposal("s");
        huge.text = "x".repeat(MAX_LEARNED_TEXT + 1);
        for bad in [climbing, secret, huge] {
            let name = bad.name.clone();
            let err = apply("/p", &name, None, LearnedChange::Propose(Box::new(bad)), 1).unwrap_err();
            assert!(!err.to_string().contains("ghp_"), "{err}");
        }
    }

    #[test]
    fn uses_count_and_review_needs_a_skill() {
        let kept = apply(
            "/p",
            "ship-it",
            None,
            LearnedChange::Propose(Box::new(proposal("s"))),
            1,
        )
        .unwrap();
        let used = apply("/p", "ship-it", kept, LearnedChange::Used { success: false }, 2)
            .unwrap()
            .unwrap();
        let used = apply(
            "/p",
            "ship-it",
            Some(used),
            LearnedChange::Used { success: true },
            3,
        )
        .unwrap()
        .unwrap();
        assert_eq!(used.success_rate(), Some(0.5));
        assert!(apply(
            "/p",
            "nope",
            None,
            LearnedChange::Review(LearnedStatus::Accepted),
            1
        )
        .is_err());
    }

    #[test]
    fn an_accepted_skill_that_keeps_failing_goes_back_to_review() {
        let mut skill = apply(
            "/p",
            "ship-it",
            None,
            LearnedChange::Propose(Box::new(proposal("s"))),
            1,
        )
        .unwrap()
        .unwrap();
        skill.status = LearnedStatus::Accepted;
        for i in 0..REVIEW_AFTER_USES {
            assert_eq!(
                skill.status,
                LearnedStatus::Accepted,
                "judged only after enough uses"
            );
            skill = apply(
                "/p",
                "ship-it",
                Some(skill),
                LearnedChange::Used { success: i < 3 },
                2,
            )
            .unwrap()
            .unwrap();
        }
        assert_eq!(skill.status, LearnedStatus::Proposed);
    }
}
