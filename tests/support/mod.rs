//! A scripted HTTP/1.1 server on 127.0.0.1 for tests that speak to model backends: it answers
//! each connection with the next scripted reply and records every request.
#![allow(dead_code)]

pub(crate) mod capture;
pub(crate) mod suites;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

// ---------------------------------------------------------------------------------------------
// The scripted server: one connection per request (every reply says `Connection: close`).

/// What the server does with the next request.
pub(crate) enum Reply {
    /// Answer with this status, extra headers and body.
    Http {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// Read the request, then close the connection without answering.
    Close,
    /// Read the request and never answer.
    Hang,
    /// Answer with this status and a body that never ends: chunked without a length, or with a
    /// `Content-Length` of 1 GiB. Writing stops when the client hangs up.
    Endless { status: u16, chunked: bool },
    /// Wait this long after reading the request, then give the inner reply.
    Delayed(Duration, Box<Reply>),
}

pub(crate) fn ok(body: Value) -> Reply {
    status(200, body.to_string())
}

pub(crate) fn status(code: u16, body: impl Into<String>) -> Reply {
    Reply::Http {
        status: code,
        headers: Vec::new(),
        body: body.into(),
    }
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub method: String,
    pub path: String,
    /// Lower-cased names.
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

pub(crate) struct Server {
    pub url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Server {
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

/// Serve `script` in order, one reply per connection; once it is used up the port is closed,
/// so an unexpected extra request fails loudly instead of being answered.
pub(crate) async fn serve(script: Vec<Reply>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&requests);
    tokio::spawn(async move {
        let mut hung = Vec::new();
        for reply in script {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let Some(request) = read_request(&mut stream).await else {
                continue;
            };
            log.lock().unwrap().push(request);
            let mut reply = reply;
            while let Reply::Delayed(wait, inner) = reply {
                tokio::time::sleep(wait).await;
                reply = *inner;
            }
            match reply {
                Reply::Http {
                    status,
                    headers,
                    body,
                } => {
                    let mut head = format!(
                        "HTTP/1.1 {status} Scripted\r\nContent-Type: application/json\r\n\
                         Content-Length: {}\r\nConnection: close\r\n",
                        body.len()
                    );
                    for (name, value) in headers {
                        head.push_str(&format!("{name}: {value}\r\n"));
                    }
                    head.push_str("\r\n");
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(body.as_bytes()).await;
                    let _ = stream.shutdown().await;
                }
                Reply::Close => drop(stream),
                Reply::Hang => hung.push(stream),
                Reply::Endless { status, chunked } => endless(stream, status, chunked).await,
                // Unwrapped by the loop above.
                Reply::Delayed(..) => {}
            }
        }
        drop(listener);
        // Keep hung connections open until the test's runtime shuts down.
        std::future::pending::<()>().await;
        drop(hung);
    });
    Server { url, requests }
}

async fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).ok()?;
    let mut lines = head.split("\r\n");
    let mut start = lines.next()?.split(' ');
    let (method, path) = (start.next()?.to_string(), start.next()?.to_string());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or(Value::Null);
    Some(Recorded {
        method,
        path,
        headers,
        body,
    })
}

/// Write a body that starts like a chat completion and never ends, until the client hangs up.
async fn endless(mut stream: TcpStream, status: u16, chunked: bool) {
    let length = if chunked {
        "Transfer-Encoding: chunked".to_string()
    } else {
        format!("Content-Length: {}", 1u64 << 30)
    };
    let head = format!(
        "HTTP/1.1 {status} Scripted\r\nContent-Type: application/json\r\n{length}\r\nConnection: close\r\n\r\n"
    );
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let start = br#"{"choices":[{"message":{"role":"assistant","content":""#;
    let filler = vec![b'a'; 64 * 1024];
    let mut pieces = std::iter::once(&start[..]).chain(std::iter::repeat(&filler[..]));
    loop {
        let piece = pieces.next().unwrap_or(&filler);
        let written = if chunked {
            let mut framed = format!("{:x}\r\n", piece.len()).into_bytes();
            framed.extend_from_slice(piece);
            framed.extend_from_slice(b"\r\n");
            stream.write_all(&framed).await
        } else {
            stream.write_all(piece).await
        };
        if written.is_err() {
            return;
        }
    }
}
