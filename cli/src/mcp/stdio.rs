//! `ctxkit mcp` over standard input and output: one JSON-RPC message a line, each way. The
//! SDK's line transport drops a line that is not JSON, and one longer than its limit, without a
//! word, so the client waits for an answer that never comes. This one answers both as
//! JSON-RPC says (-32700 Parse error, -32600 Invalid Request; `id` null unless the line has a
//! readable one) and goes on with the next line. A line is never held past [`MAX_LINE`]: the rest of
//! a longer one is skipped as it arrives.

use std::borrow::Cow;
use std::future::Future;

use rmcp::model::{ClientJsonRpcMessage, ErrorCode, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleServer;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The longest message line read, as the SDK's own limit (and its HTTP client's largest event).
pub(super) const MAX_LINE: usize = 16 * 1024 * 1024;
/// Lines waiting for the writer: a client that stops reading stops the server, not its memory.
const QUEUE: usize = 64;

/// The transport over `read` and `write` (standard input and output in `ctxkit mcp`).
pub(super) struct LineTransport<R> {
    read: BufReader<R>,
    /// The line read so far; a cancelled read resumes it.
    line: Vec<u8>,
    /// Skipping the rest of a line longer than [`MAX_LINE`].
    skipping: bool,
    /// An error answer to a line, not yet queued.
    pending: Option<String>,
    /// Serialised messages, written in order by `writer`, one a line.
    out: mpsc::Sender<String>,
    writer: Option<JoinHandle<()>>,
}

/// What reading one line gave.
enum Read {
    Line,
    TooLong,
    End,
}

impl<R: AsyncRead + Send + Unpin> LineTransport<R> {
    pub(super) fn new(read: R, mut write: impl AsyncWrite + Send + Unpin + 'static) -> Self {
        let (out, mut lines) = mpsc::channel::<String>(QUEUE);
        let writer = tokio::spawn(async move {
            while let Some(line) = lines.recv().await {
                let written = async {
                    write.write_all(line.as_bytes()).await?;
                    write.write_all(b"\n").await?;
                    write.flush().await
                };
                if let Err(e) = written.await {
                    tracing::warn!("the MCP client's output is closed: {e}");
                    return;
                }
            }
        });
        LineTransport {
            read: BufReader::new(read),
            line: Vec::new(),
            skipping: false,
            pending: None,
            out,
            writer: Some(writer),
        }
    }

    /// Read up to the next newline into `self.line`, never past [`MAX_LINE`]. Safe to cancel
    /// (the SDK polls `receive` in a `select!`): bytes are consumed only once copied or
    /// skipped, with no await in between.
    async fn read_line(&mut self) -> std::io::Result<Read> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                return Ok(Read::End);
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let skipping = self.skipping;
            let too_long = !skipping && self.line.len() + take > MAX_LINE + 1;
            if !skipping && !too_long {
                self.line.extend_from_slice(&available[..take]);
            }
            self.read.consume(take);
            if too_long {
                self.line.clear();
                self.skipping = newline.is_none();
                return Ok(Read::TooLong);
            }
            if newline.is_some() {
                if skipping {
                    self.skipping = false;
                } else {
                    return Ok(Read::Line);
                }
            }
        }
    }
}

/// The answer to a line that is no message, or `None` for a notification (never answered).
/// JSON that is not a message is answered with its `id` when it has a valid one, so the client
/// waiting for it learns; anything else with `id` null.
fn refusal(line: &[u8]) -> Option<String> {
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return Some(error_line(
            Value::Null,
            ErrorCode::PARSE_ERROR,
            "Parse error: the line is not JSON",
        ));
    };
    let id = match value.get("id") {
        None if value.get("method").is_some() => {
            tracing::debug!("ignored a notification that is not one of the protocol's");
            return None;
        }
        Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
        _ => Value::Null,
    };
    Some(error_line(
        id,
        ErrorCode::INVALID_REQUEST,
        "Invalid Request: the line is not a JSON-RPC message of the protocol",
    ))
}

fn error_line(id: Value, code: ErrorCode, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code.0, "message": message}}).to_string()
}

impl<R: AsyncRead + Send + Unpin> Transport<RoleServer> for LineTransport<R> {
    type Error = std::io::Error;

    fn name() -> Cow<'static, str> {
        "stdio".into()
    }

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        async move {
            let line = serde_json::to_string(&item).map_err(std::io::Error::other)?;
            out.send(line)
                .await
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the output is closed"))
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            if self.pending.is_some() {
                // `reserve` is safe to cancel: the answer stays pending until it is queued.
                let permit = self.out.reserve().await.ok()?;
                permit.send(self.pending.take()?);
            }
            match self.read_line().await {
                Ok(Read::Line) => {}
                Ok(Read::TooLong) => {
                    tracing::warn!("a message longer than {MAX_LINE} bytes was skipped");
                    self.pending = Some(error_line(
                        Value::Null,
                        ErrorCode::INVALID_REQUEST,
                        "Invalid Request: a message is at most 16 MiB",
                    ));
                    continue;
                }
                Ok(Read::End) => return None,
                Err(e) => {
                    tracing::warn!("cannot read the MCP client's input: {e}");
                    return None;
                }
            }
            let parsed = {
                let text = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
                let text = text.strip_suffix(b"\r").unwrap_or(text);
                let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
                (!text.iter().all(u8::is_ascii_whitespace))
                    .then(|| serde_json::from_slice(text).map_err(|_| refusal(text)))
            };
            self.line.clear();
            match parsed {
                None => {}
                Some(Ok(message)) => return Some(message),
                Some(Err(refusal)) => self.pending = refusal,
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // The writer ends once every sender is gone; wait for it so the last answers are out.
        self.out = mpsc::channel(1).0;
        if let Some(writer) = self.writer.take() {
            let _ = writer.await;
        }
        Ok(())
    }
}
