//! Resumable HTTP streams. The transport lets a client that lost an SSE stream reconnect with
//! `Last-Event-ID` and get what it missed; the SDK's sessions forget a request's stream the
//! moment its answer is sent, so a client cut off before reading a tool's answer got nothing.
//! This store keeps the recent events of every stream for the SDK's resumption to replay
//! (its [`EventStore`] hook), in memory and bounded: the newest [`MAX_EVENTS`] of a stream,
//! the newest [`MAX_STREAMS`] streams, at most [`MAX_BYTES`] in all; older ones are forgotten,
//! and resuming after them gives an empty stream.
//!
//! An event id is `TOKEN-N`: `TOKEN` is 16 random bytes drawn for the stream, so an id is
//! only known to the client the stream was sent to (the SDK replays by event id alone, not
//! by session), and `N` counts the stream's events.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use rmcp::transport::streamable_http_server::session::{
    EventId, EventStore, EventStoreError, EventStream, ServerSseMessage,
};

/// The most events kept of one stream.
pub(super) const MAX_EVENTS: usize = 64;
/// The most streams kept.
pub(super) const MAX_STREAMS: usize = 1024;
/// The most bytes of messages kept in all.
pub(super) const MAX_BYTES: usize = 32 * 1024 * 1024;

/// The events kept, for [`EventStore`].
#[derive(Default)]
pub(super) struct Replay {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Each stream's token, by the SDK's stream id.
    tokens: HashMap<String, String>,
    /// The streams by token.
    streams: HashMap<String, Stream>,
    /// Tokens, oldest stream first.
    age: VecDeque<String>,
    bytes: usize,
}

struct Stream {
    stream_id: String,
    /// The number the next event gets.
    next: u64,
    /// `(number, event, size)`, oldest first.
    events: VecDeque<(u64, ServerSseMessage, usize)>,
}

fn token() -> Result<String, EventStoreError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| format!("cannot draw a stream token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn size(event: &ServerSseMessage) -> usize {
    let message = event.message.as_deref();
    message.map_or(0, |m| serde_json::to_vec(m).map_or(0, |v| v.len()))
}

impl State {
    /// Forget the oldest stream.
    fn evict_oldest(&mut self) {
        let Some(token) = self.age.pop_front() else { return };
        if let Some(stream) = self.streams.remove(&token) {
            self.tokens.remove(&stream.stream_id);
            self.bytes -= stream.events.iter().map(|(_, _, size)| size).sum::<usize>();
        }
    }
}

#[async_trait::async_trait]
impl EventStore for Replay {
    async fn store_event(
        &self,
        stream_id: &str,
        event: &ServerSseMessage,
    ) -> Result<EventId, EventStoreError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let token = match state.tokens.get(stream_id) {
            Some(token) => token.clone(),
            None => {
                while state.age.len() >= MAX_STREAMS {
                    state.evict_oldest();
                }
                let token = token()?;
                state.tokens.insert(stream_id.to_string(), token.clone());
                state.age.push_back(token.clone());
                let stream = Stream {
                    stream_id: stream_id.to_string(),
                    next: 0,
                    events: VecDeque::new(),
                };
                state.streams.insert(token.clone(), stream);
                token
            }
        };
        let size = size(event);
        let mut freed = 0;
        let stream = state.streams.get_mut(&token).ok_or("the stream was forgotten")?;
        let number = stream.next;
        stream.next += 1;
        let id = format!("{token}-{number}");
        let mut kept = event.clone();
        kept.event_id = Some(id.clone());
        stream.events.push_back((number, kept, size));
        if stream.events.len() > MAX_EVENTS {
            freed = stream.events.pop_front().map_or(0, |(_, _, size)| size);
        }
        state.bytes = state.bytes + size - freed;
        // The stream written to is the newest; older ones go first when the bytes run out.
        while state.bytes > MAX_BYTES && state.age.len() > 1 {
            if state.age.front() == Some(&token) {
                state.age.rotate_left(1);
            }
            state.evict_oldest();
        }
        Ok(id)
    }

    async fn replay_events_after(&self, last_event_id: &str) -> Result<EventStream, EventStoreError> {
        let (token, number) = last_event_id
            .rsplit_once('-')
            .and_then(|(token, n)| Some((token, n.parse::<u64>().ok()?)))
            .ok_or("not an event id of this server")?;
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let stream = state
            .streams
            .get(token)
            .ok_or("no stream has that event id, or it was forgotten")?;
        let events: Vec<ServerSseMessage> = (stream.events.iter())
            .filter(|(n, _, _)| *n > number)
            .map(|(_, event, _)| event.clone())
            .collect();
        Ok(Box::pin(futures_util::stream::iter(events)))
    }
}

#[cfg(test)]
mod tests {
    use futures_util::StreamExt;
    use rmcp::model::{ServerJsonRpcMessage, ServerNotification, ToolListChangedNotification};

    use super::*;

    fn event() -> ServerSseMessage {
        let note = ServerNotification::ToolListChangedNotification(ToolListChangedNotification::default());
        ServerSseMessage::from_message(ServerJsonRpcMessage::notification(note))
    }

    async fn after(store: &Replay, id: &str) -> Vec<String> {
        match store.replay_events_after(id).await {
            Ok(stream) => stream.map(|e| e.event_id.unwrap()).collect().await,
            Err(_) => Vec::new(),
        }
    }

    #[tokio::test]
    async fn a_stream_replays_what_followed_and_keeps_its_newest_events() {
        let store = Replay::default();
        let mut ids = Vec::new();
        for _ in 0..MAX_EVENTS + 10 {
            ids.push(store.store_event("a", &event()).await.unwrap());
        }
        let other = store.store_event("b", &event()).await.unwrap();
        assert_ne!(
            ids[0].split('-').next(),
            other.split('-').next(),
            "a token per stream"
        );
        assert_eq!(after(&store, &ids[MAX_EVENTS + 7]).await, ids[MAX_EVENTS + 8..]);
        assert_eq!(
            after(&store, &ids[9]).await,
            ids[10..],
            "the oldest are forgotten"
        );
        assert_eq!(after(&store, &other).await, Vec::<String>::new());
        for unknown in ["", "0", "x-1", "-", &format!("{}-x", ids[0])] {
            assert!(store.replay_events_after(unknown).await.is_err(), "{unknown}");
        }
    }

    #[tokio::test]
    async fn the_oldest_streams_are_forgotten() {
        let store = Replay::default();
        let first = store.store_event("s0", &event()).await.unwrap();
        let second = store.store_event("s1", &event()).await.unwrap();
        for n in 2..=MAX_STREAMS {
            store.store_event(&format!("s{n}"), &event()).await.unwrap();
        }
        assert!(store.replay_events_after(&first).await.is_err());
        assert!(store.replay_events_after(&second).await.is_ok());
        assert_eq!(store.state.lock().unwrap().streams.len(), MAX_STREAMS);
    }
}
