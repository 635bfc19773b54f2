//! Running one command: no shell, no standard input, a deadline and a cap on what it says.
//!
//! The cap stops the process rather than draining it: a command that floods its output (`yes`)
//! would otherwise run until the timeout and the model would get an error instead of the
//! useful first bytes.

use std::io;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};

/// What a finished (or capped) command produced.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// Standard output and standard error, interleaved in arrival order, at most the cap.
    pub output: Vec<u8>,
    /// The cap was reached and the process was stopped.
    pub truncated: bool,
    /// `None` when the process was stopped at the cap.
    pub status: Option<ExitStatus>,
}

#[derive(Debug)]
pub(crate) enum RunError {
    /// The program could not be started (missing, not executable…).
    Spawn(io::Error),
    /// Reading its output or waiting for it failed.
    Io(io::Error),
    /// The deadline passed; the process was killed.
    TimedOut,
}

/// Run `program args…` in `cwd` with exactly the environment `env` (nothing inherited). The child is killed if this future is dropped or times out
/// (`kill_on_drop`), so an abandoned tool call leaves no process behind.
pub(crate) async fn run(
    program: &Path,
    args: &[String],
    env: &[(String, String)],
    cwd: &Path,
    timeout: Duration,
    cap: usize,
) -> Result<Outcome, RunError> {
    let mut child = Command::new(program)
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(RunError::Spawn)?;
    let work = async {
        let (output, truncated) = collect(&mut child, cap).await?;
        if truncated {
            // Already exited is fine: there is nothing left to stop.
            let _ = child.start_kill();
            child.wait().await?;
            return Ok(Outcome {
                output,
                truncated,
                status: None,
            });
        }
        let status = child.wait().await?;
        Ok(Outcome {
            output,
            truncated,
            status: Some(status),
        })
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(result) => result.map_err(RunError::Io),
        Err(_) => Err(RunError::TimedOut),
    }
}

/// Read both pipes until they close or `cap` bytes have arrived; `true` when capped.
async fn collect(child: &mut Child, cap: usize) -> io::Result<(Vec<u8>, bool)> {
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut output = Vec::new();
    let (mut a, mut b) = ([0u8; 4096], [0u8; 4096]);
    while stdout.is_some() || stderr.is_some() {
        let (n, from_stdout) = tokio::select! {
            r = read_some(&mut stdout, &mut a) => (r?, true),
            r = read_some(&mut stderr, &mut b) => (r?, false),
        };
        let chunk = if from_stdout { &a[..n] } else { &b[..n] };
        if n == 0 {
            if from_stdout {
                stdout = None;
            } else {
                stderr = None;
            }
            continue;
        }
        let room = cap.saturating_sub(output.len());
        if chunk.len() > room {
            output.extend_from_slice(&chunk[..room]);
            return Ok((output, true));
        }
        output.extend_from_slice(chunk);
    }
    Ok((output, false))
}

/// Read from a pipe that is still open; a closed one never answers, so `select!` waits on the
/// other.
async fn read_some<R: AsyncRead + Unpin>(pipe: &mut Option<R>, buf: &mut [u8]) -> io::Result<usize> {
    match pipe {
        Some(r) => r.read(buf).await,
        None => std::future::pending().await,
    }
}
