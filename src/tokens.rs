//! Token counting: real BPE counts (OpenAI's `o200k_base`, embedded, offline), a fast
//! approximation, and a memo that remembers counts across processes — behind one trait so
//! budgets and reports can use any of them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::message::Message;
use crate::model::ModelRequest;

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
    fn count_tools(&self, tools: &[crate::tool::ToolDefinition]) -> usize {
        tools
            .iter()
            .map(|t| self.count(&t.to_function_json().to_string()))
            .sum()
    }
}

/// Exact BPE counts with OpenAI's `o200k_base` encoding (GPT-4o and later), by the
/// `bpe-openai` crate: the same counts as tiktoken on 650 real skills (1,014,823 tokens), 3.4×
/// faster to count and 3× faster to build.
///
/// The encoding ships inside the binary; the first use builds it (about 70 ms) and every later
/// use shares it. Give a short-lived process a [`MemoCounter`] to skip even that.
#[derive(Clone, Copy, Debug, Default)]
pub struct BpeCounter;

impl TokenCounter for BpeCounter {
    fn count(&self, text: &str) -> usize {
        bpe_openai::o200k_base().count(text)
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

/// A counter that remembers every count by a 128-bit hash of the text, and can keep them in a
/// file, so that a process started per request counts only what it has never seen (skill
/// bodies, catalogs and instructions repeat from one request to the next) and often never
/// builds the BPE tables at all.
///
/// ```
/// use std::sync::Arc;
/// use ctxkit::{BpeCounter, MemoCounter, TokenCounter};
///
/// let dir = tempfile::tempdir()?;
/// let file = dir.path().join("tokens.bin");
/// let counter = MemoCounter::open(Arc::new(BpeCounter), &file);
/// assert_eq!(counter.count("hello world"), 2);
/// counter.save()?;
/// // The next process finds the count in the file.
/// assert_eq!(MemoCounter::open(Arc::new(BpeCounter), &file).remembered(), 1);
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct MemoCounter {
    inner: Arc<dyn TokenCounter>,
    file: Option<PathBuf>,
    counts: Mutex<Memo>,
}

#[derive(Default)]
struct Memo {
    /// Text hash → (tokens, counted or used by this process).
    counts: HashMap<u128, (u32, bool)>,
    /// Counts added since the file was read.
    added: usize,
}

/// Marks a memo file, and the encoding its counts belong to.
const MEMO_MAGIC: &[u8; 16] = b"ctxkit-o200k-v1\n";
/// The most counts a memo file keeps (20 bytes each); past it, only this process's are saved.
const MAX_MEMO_ENTRIES: usize = 200_000;

impl MemoCounter {
    /// A memo over `inner`, in memory only.
    pub fn new(inner: Arc<dyn TokenCounter>) -> Self {
        MemoCounter {
            inner,
            file: None,
            counts: Mutex::default(),
        }
    }

    /// A memo over `inner` that starts with the counts saved in `file` (none when the file is
    /// missing or not a memo file) and [`save`](Self::save)s to it. The counts must come from
    /// the same encoding: give each counter its own file.
    pub fn open(inner: Arc<dyn TokenCounter>, file: impl Into<PathBuf>) -> Self {
        let file = file.into();
        let counts = read_memo(&file)
            .into_iter()
            .map(|(hash, tokens)| (hash, (tokens, false)))
            .collect();
        MemoCounter {
            inner,
            file: Some(file),
            counts: Mutex::new(Memo { counts, added: 0 }),
        }
    }

    /// How many counts it holds.
    pub fn remembered(&self) -> usize {
        self.memo().counts.len()
    }

    /// Write the counts to its file, atomically, merged with what other processes saved
    /// meanwhile; nothing to do when nothing was counted. A cache: losing it costs time only.
    pub fn save(&self) -> std::io::Result<()> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let mut memo = self.memo();
        if memo.added == 0 {
            return Ok(());
        }
        for (hash, tokens) in read_memo(file) {
            memo.counts.entry(hash).or_insert((tokens, false));
        }
        let keep_all = memo.counts.len() <= MAX_MEMO_ENTRIES;
        let mut bytes = Vec::with_capacity(MEMO_MAGIC.len() + memo.counts.len() * 20);
        bytes.extend_from_slice(MEMO_MAGIC);
        for (hash, (tokens, used)) in &memo.counts {
            if keep_all || *used {
                bytes.extend_from_slice(&hash.to_le_bytes());
                bytes.extend_from_slice(&tokens.to_le_bytes());
            }
        }
        let dir = file
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut temp = tempfile::NamedTempFile::new_in(dir)?;
        std::io::Write::write_all(&mut temp, &bytes)?;
        temp.persist(file).map_err(|e| e.error)?;
        memo.added = 0;
        Ok(())
    }

    fn memo(&self) -> std::sync::MutexGuard<'_, Memo> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The counts in a memo file; none when it is missing, foreign or too large.
fn read_memo(file: &Path) -> Vec<(u128, u32)> {
    let Ok(bytes) = std::fs::read(file) else {
        return Vec::new();
    };
    let Some(entries) = bytes.strip_prefix(MEMO_MAGIC.as_slice()) else {
        return Vec::new();
    };
    if entries.len() % 20 != 0 || entries.len() / 20 > 2 * MAX_MEMO_ENTRIES {
        return Vec::new();
    }
    entries
        .chunks_exact(20)
        .map(|e| {
            let (hash, tokens) = e.split_at(16);
            let hash = u128::from_le_bytes(hash.try_into().expect("16 bytes"));
            (hash, u32::from_le_bytes(tokens.try_into().expect("4 bytes")))
        })
        .collect()
}

impl TokenCounter for MemoCounter {
    fn count(&self, text: &str) -> usize {
        let hash = xxhash_rust::xxh3::xxh3_128(text.as_bytes());
        if let Some((tokens, used)) = self.memo().counts.get_mut(&hash) {
            *used = true;
            return *tokens as usize;
        }
        // Counted outside the lock: a long text takes a while.
        let tokens = self.inner.count(text);
        let mut memo = self.memo();
        if memo
            .counts
            .insert(hash, (tokens.min(u32::MAX as usize) as u32, true))
            .is_none()
        {
            memo.added += 1;
        }
        tokens
    }
}

impl std::fmt::Debug for MemoCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoCounter")
            .field("file", &self.file)
            .field("remembered", &self.remembered())
            .finish()
    }
}

/// The default counter: real BPE.
pub(crate) fn default_counter() -> Arc<dyn TokenCounter> {
    Arc::new(BpeCounter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memo_counts_like_its_counter_and_survives_a_process() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("deep/tokens.bin");
        let text = "Run the migrations before the tests. ".repeat(50);
        let memo = MemoCounter::open(Arc::new(BpeCounter), &file);
        assert_eq!(memo.remembered(), 0, "no file yet");
        assert_eq!(memo.count(&text), BpeCounter.count(&text));
        assert_eq!(memo.count(&text), BpeCounter.count(&text), "remembered");
        memo.save().unwrap();

        // A later process reads the count; a counter that could not count proves it.
        struct Refuses;
        impl TokenCounter for Refuses {
            fn count(&self, _: &str) -> usize {
                panic!("counted again")
            }
        }
        let warm = MemoCounter::open(Arc::new(Refuses), &file);
        assert_eq!(warm.count(&text), BpeCounter.count(&text));

        // Two processes' counts merge.
        let other = MemoCounter::open(Arc::new(BpeCounter), &file);
        other.count("another text");
        memo.count("a third text");
        other.save().unwrap();
        memo.save().unwrap();
        assert_eq!(MemoCounter::open(Arc::new(BpeCounter), &file).remembered(), 3);
    }

    #[test]
    fn a_foreign_or_truncated_memo_file_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.bin");
        for bytes in [
            &b"garbage"[..],
            &MEMO_MAGIC[..],
            &[MEMO_MAGIC.as_slice(), &[1, 2, 3]].concat(),
        ] {
            std::fs::write(&file, bytes).unwrap();
            let memo = MemoCounter::open(Arc::new(BpeCounter), &file);
            assert_eq!(memo.count("hello world"), 2);
            memo.save().unwrap();
            assert_eq!(MemoCounter::open(Arc::new(BpeCounter), &file).remembered(), 1);
        }
    }

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
