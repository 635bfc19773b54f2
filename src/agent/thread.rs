//! A conversation: its id, history, scoped state and injection bookkeeping.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::lazy::ContextManager;
use crate::message::{Message, Role};
use crate::state::State;
use crate::tokens::TokenCounter;

/// One conversation with an agent.
///
/// A thread serializes (serde) to a versioned object, so a host can keep a session between
/// processes and resume it: the history, the scoped state, what lazy injection already sent,
/// and the session's counts. A resumed thread starts again in its new process (providers see
/// `thread_created`, hooks `session_start`, as hosts send on resume) and otherwise goes on as
/// if never interrupted.
///
/// ```
/// use ctxkit::Thread;
/// let mut thread = Thread::with_id("s-1");
/// let saved = serde_json::to_string(&thread).unwrap();
/// let resumed: Thread = serde_json::from_str(&saved).unwrap();
/// assert_eq!(resumed.id(), "s-1");
/// ```
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "Saved", into = "Saved")]
pub struct Thread {
    id: String,
    history: Vec<Message>,
    pub(crate) state: State,
    pub(crate) context: ContextManager,
    pub(crate) started: bool,
    pub(crate) turns: usize,
    pub(crate) tool_usage: BTreeMap<String, usize>,
    /// Runs that ended in an error.
    pub(crate) failed_turns: usize,
    /// Tool calls whose tool failed (its error went back to the model).
    pub(crate) failed_tool_calls: usize,
}

/// The saved form of a [`Thread`], version 1.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Saved {
    version: u32,
    id: String,
    history: Vec<Message>,
    state: State,
    context: ContextManager,
    turns: usize,
    tool_usage: BTreeMap<String, usize>,
    failed_turns: usize,
    failed_tool_calls: usize,
}

/// The version [`Saved`] writes and reads.
const SAVED_VERSION: u32 = 1;

impl From<Thread> for Saved {
    fn from(t: Thread) -> Saved {
        Saved {
            version: SAVED_VERSION,
            id: t.id,
            history: t.history,
            state: t.state,
            context: t.context,
            turns: t.turns,
            tool_usage: t.tool_usage,
            failed_turns: t.failed_turns,
            failed_tool_calls: t.failed_tool_calls,
        }
    }
}

impl TryFrom<Saved> for Thread {
    type Error = String;

    fn try_from(s: Saved) -> Result<Thread, String> {
        if s.version != SAVED_VERSION {
            return Err(format!(
                "a saved thread of version {} (this build reads version {SAVED_VERSION})",
                s.version
            ));
        }
        Ok(Thread {
            id: s.id,
            history: s.history,
            state: s.state,
            context: s.context,
            started: false,
            turns: s.turns,
            tool_usage: s.tool_usage,
            failed_turns: s.failed_turns,
            failed_tool_calls: s.failed_tool_calls,
        })
    }
}

impl Default for Thread {
    fn default() -> Self {
        Self::new()
    }
}

impl Thread {
    /// A new thread with a fresh id.
    pub fn new() -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        Self::with_id(format!("t-{nanos:x}-{n}"))
    }

    /// A new thread under an id of your choosing, e.g. one that must stay the same across
    /// processes; providers see it as [`RunInfo::thread_id`](crate::provider::RunInfo::thread_id).
    pub fn with_id(id: impl Into<String>) -> Self {
        Thread {
            id: id.into(),
            history: Vec::new(),
            state: State::default(),
            context: ContextManager::new(),
            started: false,
            turns: 0,
            tool_usage: BTreeMap::new(),
            failed_turns: 0,
            failed_tool_calls: 0,
        }
    }

    /// The id providers, hooks and tracing spans know this conversation by.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Runs this conversation has had.
    pub fn turns(&self) -> usize {
        self.turns
    }

    /// The conversation so far: user messages, replies, tool calls and their results, and in
    /// lazy mode the context messages injected into it.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    pub(crate) fn history_mut(&mut self) -> &mut Vec<Message> {
        &mut self.history
    }

    /// The thread's scoped state, as hooks and [`state_mut`](Self::state_mut) left it.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Change the state between runs, e.g. to restore `project:` keys kept elsewhere.
    pub fn state_mut(&mut self) -> &mut State {
        &mut self.state
    }

    /// Drop all but the last `keep_last` messages and return the dropped ones.
    ///
    /// The kept part starts at a user message (it keeps a few more messages rather than
    /// orphan a tool result). Lazy injection is reset, so the next request carries the full
    /// context again.
    pub fn compact(&mut self, keep_last: usize) -> Vec<Message> {
        let mut cut = self.history.len().saturating_sub(keep_last);
        while cut > 0 && cut < self.history.len() && self.history[cut].role != Role::User {
            cut -= 1;
        }
        // Only a compaction that dropped something re-arms lazy injection: the context the
        // history still carries needs no second copy.
        if cut > 0 {
            self.context.reset();
        }
        self.history.drain(..cut).collect()
    }

    /// How many of the latest messages fit in `budget` tokens, starting at a user message so
    /// no tool result loses its call; at least from the latest user message, whatever it
    /// costs.
    pub(crate) fn fitting(&self, budget: usize, counter: &dyn TokenCounter) -> usize {
        let mut total = 0usize;
        let mut keep = 0;
        for (at, m) in self.history.iter().enumerate().rev() {
            total = total.saturating_add(counter.count_message(m));
            if total > budget {
                break;
            }
            if m.role == Role::User {
                keep = self.history.len() - at;
            }
        }
        let latest_user = self.history.iter().rposition(|m| m.role == Role::User);
        keep.max(latest_user.map_or(0, |at| self.history.len() - at))
    }

    /// Answer every tool call of the last assistant message that has no result yet with
    /// `output`, so a run that stopped between a call and its result leaves a conversation
    /// the next request can still send (APIs refuse a call without its result).
    pub(crate) fn answer_open_calls(&mut self, output: &str) {
        let Some(at) = self.history.iter().rposition(|m| m.role == Role::Assistant) else {
            return;
        };
        let answered: Vec<String> = self.history[at + 1..]
            .iter()
            .filter_map(|m| m.tool_call_id.clone())
            .collect();
        let open: Vec<Message> = self.history[at]
            .tool_calls
            .iter()
            .filter(|call| !answered.contains(&call.id))
            .map(|call| Message::tool_result(&call.id, output))
            .collect();
        self.history.extend(open);
    }

    /// Forget the conversation (history and `temp:`/`session:` state), keeping the id and
    /// `project:` state. The next request carries the full context again.
    pub fn reset(&mut self) {
        self.history.clear();
        self.state.clear_session();
        self.context.reset();
        self.turns = 0;
        self.tool_usage.clear();
        self.failed_turns = 0;
        self.failed_tool_calls = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    #[test]
    fn compact_keeps_tool_pairs_together() {
        let mut t = Thread::new();
        let h = t.history_mut();
        h.push(Message::user("one"));
        h.push(Message::assistant("a1"));
        h.push(Message::user("two"));
        h.push(Message::tool_calls(vec![ToolCall::new(
            "c",
            "x",
            &serde_json::json!({}),
        )]));
        h.push(Message::tool_result("c", "out"));
        h.push(Message::assistant("a2"));
        let removed = t.compact(2);
        // The last two would orphan a tool result, so the turn is kept from its user message.
        assert_eq!(removed.len(), 2);
        assert_eq!(t.history()[0].content, "two");
        assert_eq!(t.history().len(), 4);
        assert_eq!(t.compact(0).len(), 4);
        assert!(t.history().is_empty());
    }

    #[test]
    fn a_compaction_that_drops_nothing_keeps_the_injection() {
        let mut t = Thread::new();
        t.history_mut().push(Message::user("one"));
        t.context.prepare("context", &[], &[]);
        assert!(t.compact(5).is_empty());
        assert!(t.context.is_injected(), "nothing dropped, nothing to re-send");
        assert_eq!(t.compact(0).len(), 1);
        assert!(!t.context.is_injected(), "dropped: the next request re-sends");
    }

    #[test]
    fn fitting_counts_from_the_latest_turn_back_to_a_user_message() {
        let mut t = Thread::new();
        let h = t.history_mut();
        h.push(Message::user("old ".repeat(50)));
        h.push(Message::assistant("a1"));
        h.push(Message::user("two"));
        h.push(Message::tool_calls(vec![ToolCall::new(
            "c",
            "x",
            &serde_json::json!({}),
        )]));
        h.push(Message::tool_result("c", "out"));
        h.push(Message::assistant("a2"));
        h.push(Message::user("three"));
        let counter = crate::tokens::ApproxCounter;
        let cost =
            |from: usize| -> usize { t.history()[from..].iter().map(|m| counter.count_message(m)).sum() };
        // Everything fits: keep all.
        assert_eq!(t.fitting(usize::MAX, &counter), 7);
        // Room for the last two turns but not the long first one: keep from "two", with the
        // tool call and its result.
        assert_eq!(t.fitting(cost(2), &counter), 5);
        // Room for part of a turn only: from the next user message on, so no result is cut
        // from its call.
        assert_eq!(t.fitting(cost(3), &counter), 1);
        // No room at all: the latest user message is kept whatever it costs.
        assert_eq!(t.fitting(0, &counter), 1);
    }

    #[test]
    fn open_calls_get_a_result_and_answered_ones_keep_theirs() {
        let mut t = Thread::new();
        let call = |id: &str| ToolCall {
            id: id.into(),
            kind: "function".into(),
            function: crate::message::FunctionCall {
                name: "f".into(),
                arguments: "{}".into(),
            },
        };
        t.history_mut().push(Message::user("go"));
        t.history_mut().push(Message {
            tool_calls: vec![call("a"), call("b")],
            ..Message::assistant("")
        });
        t.history_mut().push(Message::tool_result("a", "done"));
        t.answer_open_calls("error: not run");
        let results: Vec<(&str, &str)> = t.history()[2..]
            .iter()
            .map(|m| (m.tool_call_id.as_deref().unwrap(), m.content.as_str()))
            .collect();
        assert_eq!(results, [("a", "done"), ("b", "error: not run")]);
        t.answer_open_calls("again");
        assert_eq!(t.history().len(), 4, "nothing left open, nothing added");
    }

    #[test]
    fn ids_are_unique() {
        assert_ne!(Thread::new().id(), Thread::new().id());
    }
}
