//! Token counting: real BPE counts (tiktoken's `o200k_base`, embedded, offline) and a fast
//! approximation, behind one trait so budgets and reports can use either.

use std::sync::Arc;

use crate::model::ModelRequest;
use crate::Message;

/// Counts tokens of text and of whole requests.
pub trait TokenCounter: Send + Sync {
    /// Tokens of plain text. The other counts build on it, so it is the one method to implement.
    fn count(&self, text: &str) -> usize;

    /// Tokens of one message, with the few tokens of per-message framing chat formats add.
    fn count_message(&self, message: &Message) -> usize {
        const FRAMING: usize = 4;
        let calls: usize = message
            .tool_calls
            .iter()
            .map(|c| self.count(&c.function.name) + self.count(&c.function.arguments))
            .sum();
        FRAMING + self.count(&message.content) + calls
    }

    /// Tokens of a whole request: every message plus the JSON of the tool definitions.
    fn count_request(&self, request: &ModelRequest) -> usize {
        const REPLY_PRIMING: usize = 3;
        let messages: usize = request.messages.iter().map(|m| self.count_message(m)).sum();
        messages + self.count_tools(&request.tools) + REPLY_PRIMING
    }

    /// Tokens of tool definitions as they are sent.
    fn count_tools(&self, tools: &[crate::ToolDefinition]) -> usize {
        tools
            .iter()
            .map(|t| self.count(&t.to_function_json().to_string()))
            .sum()
    }
}

/// Exact BPE counts with OpenAI's `o200k_base` encoding (GPT-4o and later).
///
/// The encoding ships inside the binary; the first use builds it (tens of milliseconds) and
/// every later use shares it.
#[derive(Clone, Copy, Debug, Default)]
pub struct BpeCounter;

impl TokenCounter for BpeCounter {
    fn count(&self, text: &str) -> usize {
        tiktoken_rs::o200k_base_singleton().encode_ordinary(text).len()
    }
}

/// About four bytes per token: free to compute, within ~20 % on English prose.
#[derive(Clone, Copy, Debug, Default)]
pub struct ApproxCounter;

impl TokenCounter for ApproxCounter {
    fn count(&self, text: &str) -> usize {
        text.len().div_ceil(4)
    }
}

/// The default counter: real BPE.
pub fn default_counter() -> Arc<dyn TokenCounter> {
    Arc::new(BpeCounter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bpe_counts_real_tokens() {
        // "hello world" is two tokens in every OpenAI encoding.
        assert_eq!(BpeCounter.count("hello world"), 2);
        assert_eq!(BpeCounter.count(""), 0);
        let long = "The quick brown fox jumps over the lazy dog. ".repeat(20);
        let (bpe, approx) = (BpeCounter.count(&long), ApproxCounter.count(&long));
        assert!(bpe > 150 && bpe < 260, "{bpe}");
        assert!(approx.abs_diff(bpe) * 3 < bpe, "approx {approx} vs bpe {bpe}");
    }
}
