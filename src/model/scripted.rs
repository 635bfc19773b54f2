use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;

use super::{ChatModel, ModelReply, ModelRequest};
use crate::error::{Error, Result};
use crate::message::Message;

/// A model that plays back scripted replies in order and records every request, for tests.
///
/// When the script runs out it fails with a clear error rather than inventing a reply.
#[derive(Debug, Default)]
pub struct ScriptedModel {
    replies: Mutex<VecDeque<std::result::Result<Message, String>>>,
    requests: Mutex<Vec<ModelRequest>>,
}

impl ScriptedModel {
    /// A model that answers with `replies` in order; queue more with [`push`](Self::push).
    pub fn new(replies: impl IntoIterator<Item = Message>) -> Self {
        ScriptedModel {
            replies: Mutex::new(replies.into_iter().map(Ok).collect()),
            requests: Mutex::default(),
        }
    }

    /// Queue a reply.
    pub fn push(&self, reply: Message) {
        self.replies.lock().unwrap().push_back(Ok(reply));
    }

    /// Queue a failure with this message.
    pub fn push_error(&self, message: impl Into<String>) {
        self.replies.lock().unwrap().push_back(Err(message.into()));
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait]
impl ChatModel for ScriptedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply> {
        self.requests.lock().unwrap().push(request.clone());
        let model = || self.name().to_string();
        match self.replies.lock().unwrap().pop_front() {
            Some(Ok(reply)) => Ok(reply.into()),
            Some(Err(message)) => Err(Error::Model {
                model: model(),
                message,
                retryable: false,
            }),
            None => Err(Error::Model {
                model: model(),
                message: "the script has no more replies".into(),
                retryable: false,
            }),
        }
    }
}
