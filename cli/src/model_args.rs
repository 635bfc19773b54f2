//! The model options of commands that call a model: which one, where, and its bounds.

use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use ctxkit::http::{model_from_spec, ModelOptions};
use ctxkit::{ChatModel, Limits};

use crate::error::CliError;

#[derive(Args, Debug)]
pub(crate) struct ModelArgs {
    /// The model: dry-run (offline, the default), openai:NAME, anthropic:NAME or ollama:NAME.
    /// Keys come from OPENAI_API_KEY and ANTHROPIC_API_KEY and are never printed.
    #[arg(long, default_value = "dry-run")]
    pub model: String,
    /// Base URL of the model server (default: the backend's usual address); credentials in it
    /// are sent but never printed.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Seconds one request to the model may take, from connecting to the reply's last byte.
    #[arg(long, default_value_t = 120, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub model_timeout: u64,
    /// The most bytes of a model's reply that are read; a larger reply fails the message.
    #[arg(long, default_value_t = ctxkit::http::DEFAULT_MAX_RESPONSE_BYTES, value_name = "BYTES", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1024..))]
    pub max_response_bytes: usize,
    /// Seconds one message may take in all: every model call and tool call of every round.
    #[arg(long, default_value_t = 600, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub run_timeout: u64,
}

impl ModelArgs {
    /// The model the options name, with their bounds.
    pub(crate) fn model(&self) -> Result<Arc<dyn ChatModel>, CliError> {
        let mut options = ModelOptions::default()
            .timeout(Duration::from_secs(self.model_timeout))
            .max_response_bytes(self.max_response_bytes);
        if let Some(url) = &self.base_url {
            options = options.base_url(url);
        }
        Ok(model_from_spec(&self.model, &options)?)
    }

    /// The bounds of one run.
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            run_timeout: Some(Duration::from_secs(self.run_timeout)),
            ..Limits::default()
        }
    }
}
