//! The sent-once layer: a provider that wears it sends each item once per conversation, again
//! when the item changed or the conversation forgot it, and a preview records nothing.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use ctxkit::{
    Context, ContextProvider, Message, ProviderExt, Result, RunInfo, Section, SectionKind, SentRecord,
    ThreadInfo,
};

/// Notes that each come in a version, left out when the conversation holds that version (as
/// the skills and memory providers do with [`RunInfo::sent`]).
struct Notes(Arc<Mutex<Vec<(&'static str, &'static str)>>>);

#[async_trait]
impl ContextProvider for Notes {
    fn name(&self) -> &str {
        "notes"
    }
    async fn invoking(&self, _: &[Message], run: &RunInfo) -> Result<Context> {
        let kind = SectionKind::new("notes");
        let fresh: Vec<(String, String)> = self
            .0
            .lock()
            .unwrap()
            .iter()
            .filter(|(item, version)| !run.was_sent(&kind, item, version))
            .map(|(item, version)| (item.to_string(), version.to_string()))
            .collect();
        if fresh.is_empty() {
            return Ok(Context::new());
        }
        let text: Vec<&str> = fresh.iter().map(|(item, _)| item.as_str()).collect();
        Ok(Context::new()
            .with_section(Section::per_message(kind, text.join(", ")).with_versioned_items(fresh)))
    }
}

fn run(thread: &str) -> RunInfo {
    RunInfo {
        thread_id: thread.into(),
        ..RunInfo::default()
    }
}

async fn text(provider: &dyn ContextProvider, run: &RunInfo) -> String {
    let messages = [Message::user("go")];
    provider
        .invoking(&messages, run)
        .await
        .unwrap()
        .system_text()
        .unwrap_or_default()
}

#[tokio::test]
async fn each_item_is_sent_once_per_conversation_until_it_changes() {
    let notes = Arc::new(Mutex::new(vec![("tabs", "v1"), ("deploys", "v1")]));
    let record = SentRecord::new();
    let provider = Notes(notes.clone()).sent_once(record.clone());
    assert_eq!(text(&provider, &run("t1")).await, "tabs, deploys");
    assert_eq!(
        text(&provider, &run("t1")).await,
        "",
        "the conversation holds both"
    );
    assert_eq!(
        text(&provider, &run("t2")).await,
        "tabs, deploys",
        "another conversation"
    );

    notes.lock().unwrap()[1].1 = "v2";
    assert_eq!(
        text(&provider, &run("t1")).await,
        "deploys",
        "a changed item is sent again"
    );

    // A compaction: the model forgot what it was sent.
    record.forget("t1");
    assert_eq!(text(&provider, &run("t1")).await, "tabs, deploys");

    // A new conversation with a reused id starts with nothing sent.
    let thread = ThreadInfo {
        thread_id: "t2".into(),
        ..ThreadInfo::default()
    };
    provider.thread_created(&thread).await.unwrap();
    assert_eq!(text(&provider, &run("t2")).await, "tabs, deploys");
}

#[tokio::test]
async fn a_preview_records_nothing_and_a_saved_record_is_restored() {
    let notes = Arc::new(Mutex::new(vec![("tabs", "v1")]));
    let record = SentRecord::new();
    let provider = Notes(notes).sent_once(record.clone());
    let preview = RunInfo {
        preview: true,
        ..run("t1")
    };
    assert_eq!(text(&provider, &preview).await, "tabs");
    assert!(record.get("t1").is_empty(), "a preview sends nothing");

    // A host whose process ends with each event saves the record and restores it.
    text(&provider, &run("t1")).await;
    let saved = serde_json::to_string(&record.get("t1")).unwrap();
    assert_eq!(saved, r#"{"notes":{"tabs":"v1"}}"#);
    let restored = SentRecord::new();
    restored.restore("t1", serde_json::from_str(&saved).unwrap());
    let again = Notes(Arc::new(Mutex::new(vec![("tabs", "v1")]))).sent_once(restored);
    assert_eq!(text(&again, &run("t1")).await, "");
}
