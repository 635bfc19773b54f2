//! How each composed provider fared in one call: the record composition keeps in a
//! [`Context`](crate::context::Context) and a run's report shows. Below both the context and the
//! providers, so neither depends on the other.

use std::time::Duration;

use serde::Serialize;

/// How one provider fared in one call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProviderReport {
    /// The provider, by the [`name`](crate::provider::ContextProvider::name) logs and errors use.
    pub name: String,
    /// Wall time of the call, to spot the provider that slows requests down (serialized in
    /// microseconds as `elapsed_us`).
    #[serde(rename = "elapsed_us", serialize_with = "as_micros")]
    pub elapsed: Duration,
    /// Whether its context made it into the request.
    pub outcome: Outcome,
}

fn as_micros<S: serde::Serializer>(d: &Duration, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_micros() as u64)
}

/// Whether a provider contributed, failed, or ran out of time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status", content = "error")]
pub enum Outcome {
    /// It answered in time; its context was merged.
    Ok,
    /// It returned an error or panicked (the message); fail-open, so the run went on without
    /// it.
    Failed(String),
    /// It ran past its timeout or the run's deadline and was left out.
    TimedOut,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Ok => f.write_str("ok"),
            Outcome::Failed(e) => write!(f, "failed: {e}"),
            Outcome::TimedOut => f.write_str("timed out"),
        }
    }
}
