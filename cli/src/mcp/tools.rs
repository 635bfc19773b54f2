//! The server's tools. Every argument is untrusted: each has a bound and a check, and every
//! failure is a tool result with `isError` and one sentence that never repeats a value the
//! client sent (a secret given in the wrong field must not come back in an error).

use std::collections::BTreeMap;
use std::sync::Arc;

use ctxkit::Message;
use ctxkit_memory::{
    ListOptions, MemoryCategory, MemoryEntry, MemoryError, MemorySearchRequest, NewMemoryEntry, UpsertResult,
};
use ctxkit_secrets::redact;
use ctxkit_skills::render::{self, Limits, Rest};
use ctxkit_skills::{Mode, SkillFileError};
use rmcp::handler::server::common::{schema_for_empty_input, schema_for_input};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::JsonObject;
use rmcp::{tool, tool_router, Json};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::server::CtxkitServer;

/// The most skills one `match_skills` call may ask for.
pub(super) const MAX_SKILLS: usize = 20;
/// The most characters of a message matched against triggers.
pub(super) const MAX_MESSAGE_CHARS: usize = 100_000;
/// The most characters of a memory search query.
pub(super) const MAX_QUERY_CHARS: usize = 10_000;
/// The most memories one search returns.
pub(super) const MAX_TOP_K: usize = 50;
/// The most characters of a skill name or memory id (longer ones name nothing).
pub(super) const MAX_NAME_CHARS: usize = 256;
/// The most characters of a skill file's path.
pub(super) const MAX_PATH_CHARS: usize = 1024;
/// The most keywords given with a memory.
pub(super) const MAX_KEYWORDS: usize = 32;
/// The most memories one listing returns.
pub(super) const MAX_LISTED: usize = 200;
/// The most characters of a deserialisation error passed on to the client.
const MAX_ERROR_CHARS: usize = 300;

/// Arguments of `match_skills`.
#[derive(Deserialize, JsonSchema)]
pub(super) struct MatchArgs {
    /// The user's message, matched against every skill's triggers (and `$name` / `/name`).
    pub message: String,
    /// The most skills sent, always-on and detected ones included (1-20; default: the server's
    /// setting).
    pub max_skills: Option<u64>,
}

/// Arguments of `read_skill`.
#[derive(Deserialize, JsonSchema)]
pub(super) struct ReadArgs {
    /// A loaded skill's name, as `list_skills` gives it.
    pub name: String,
    /// One of the skill's files, by the path its `files` list gives (`references/api.md`);
    /// omit it for the instructions.
    pub file: Option<String>,
}

/// Arguments of `add_memory`.
#[derive(Deserialize, JsonSchema)]
pub(super) struct AddMemoryArgs {
    /// The statement to remember (at most 2,000 characters); text that looks like a secret is
    /// refused.
    pub content: String,
    /// preference, convention, pattern, correction or fact (default: fact).
    pub category: Option<String>,
    /// 0.0-1.0 (default 0.5); 0.8 and above is sent with every request of the project.
    pub importance: Option<f32>,
    /// Terms to find it by (default: derived from the content).
    pub keywords: Option<Vec<String>>,
}

/// Arguments of `search_memories`.
#[derive(Deserialize, JsonSchema)]
pub(super) struct SearchArgs {
    /// What to look for.
    pub query: String,
    /// The most memories returned (1-50, default 10).
    pub top_k: Option<u64>,
}

/// Arguments of `list_memories`.
#[derive(Deserialize, JsonSchema)]
pub(super) struct ListMemoriesArgs {
    /// Only this category: preference, convention, pattern, correction or fact.
    pub category: Option<String>,
}

/// Arguments of `delete_memory`.
#[derive(Deserialize, JsonSchema)]
pub(super) struct DeleteArgs {
    /// The memory's id, as `list_memories` or `search_memories` give it.
    pub id: String,
}

/// One skill in a `match_skills` answer.
#[derive(Serialize, JsonSchema)]
pub(super) struct Matched {
    /// The skill's name.
    pub name: String,
    /// Why it was selected: explicit, always, detected, triggered, lexical or semantic.
    pub reason: String,
    /// The triggers that fired, as the skill declares them.
    pub triggers: Vec<String>,
    /// The triggers that fired only as an inflected form, with the form the message holds
    /// (`{"greet": "greeted"}`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub forms: BTreeMap<String, String>,
    /// What the skill is for.
    pub description: String,
    /// Its instructions (cut at 200 lines or 20,000 characters); absent in on-demand mode,
    /// where `read_skill` gives them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

/// The answer of `match_skills`.
#[derive(Serialize, JsonSchema)]
pub(super) struct MatchAnswer {
    /// The skills that fire, best first; empty when none does.
    pub skills: Vec<Matched>,
}

/// One skill in `list_skills`.
#[derive(Serialize, JsonSchema)]
pub(super) struct Listed {
    /// The name `read_skill` takes.
    pub name: String,
    /// What the skill is for.
    pub description: String,
    /// The words that make it fire.
    pub triggers: Vec<String>,
    /// Whether it is meant to be called as `/name` (then it is also a prompt).
    pub user_invocable: bool,
}

/// The answer of `list_skills`.
#[derive(Serialize, JsonSchema)]
pub(super) struct ListAnswer {
    /// Every loaded skill, in catalog order (priority, then name).
    pub skills: Vec<Listed>,
}

/// The answer of `read_skill`.
#[derive(Serialize, JsonSchema)]
pub(super) struct ReadAnswer {
    /// The skill's name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// Its full instructions, or the text of the `file` asked for.
    pub body: String,
    /// The file read, when one was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The skill's other files, by the paths `file` takes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}

/// A memory as the tools show it.
#[derive(Serialize, JsonSchema)]
pub(super) struct Memory {
    /// Names it for `delete_memory`.
    pub id: String,
    /// preference, convention, pattern, correction or fact.
    pub category: String,
    /// The statement.
    pub content: String,
    /// Terms it is found by.
    pub keywords: Vec<String>,
    /// 0.0-1.0.
    pub importance: f32,
    /// When it was stored (Unix milliseconds).
    pub created_at: i64,
}

impl From<MemoryEntry> for Memory {
    fn from(e: MemoryEntry) -> Self {
        Memory {
            id: e.id,
            category: e.category.as_str().to_string(),
            content: e.content,
            keywords: e.keywords,
            importance: e.importance,
            created_at: e.created_at,
        }
    }
}

/// The answer of `add_memory`.
#[derive(Serialize, JsonSchema)]
pub(super) struct AddAnswer {
    /// inserted, merged (into a memory saying nearly the same) or skipped.
    pub outcome: String,
    /// The memory that now holds the content, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Why nothing was written, for `skipped`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The answer of `search_memories` and `list_memories`.
#[derive(Serialize, JsonSchema)]
pub(super) struct Memories {
    /// The memories, best (or newest) first.
    pub memories: Vec<Memory>,
}

/// The answer of `delete_memory`.
#[derive(Serialize, JsonSchema)]
pub(super) struct Deleted {
    /// The memory that was deleted.
    pub deleted: Memory,
}

// The macro reads output schemas from `Result<Json<T>, _>` as written: no type alias.

/// The input schema of a tool taking `T`: generated from the type, as the SDK would, while
/// the arguments themselves are parsed by [`parse`] so that errors stay ours.
fn input_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    schema_for_input::<T>().unwrap_or_else(|_| schema_for_empty_input())
}

/// `args` as `T`, or one sentence. serde quotes the values it rejects, so the message is
/// redacted and cut before it goes back.
fn parse<T: DeserializeOwned>(tool: &str, args: JsonObject) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::Object(args)).map_err(|e| {
        let detail: String = redact(&e.to_string()).chars().take(MAX_ERROR_CHARS).collect();
        format!("invalid arguments for {tool}: {detail}")
    })
}

/// A text argument within `max` characters.
fn bounded<'a>(what: &str, text: &'a str, max: usize) -> Result<&'a str, String> {
    if text.chars().nth(max).is_some() {
        return Err(format!("the {what} is longer than {max} characters"));
    }
    Ok(text)
}

/// A count within `1..=max`, or `default`.
fn count(what: &str, value: Option<u64>, default: usize, max: usize) -> Result<usize, String> {
    match value {
        None => Ok(default),
        Some(n) if n >= 1 && n <= max as u64 => Ok(n as usize),
        Some(_) => Err(format!("{what} must be between 1 and {max}")),
    }
}

/// A category name, checked without repeating what was sent.
fn category(name: &str) -> Result<MemoryCategory, String> {
    name.parse().map_err(|_| {
        "unknown memory category; use preference, convention, pattern, correction or fact".to_string()
    })
}

/// A store error as one sentence: the store's own messages name rules and ids, never secrets.
fn store_error(e: MemoryError) -> String {
    e.to_string()
}

#[tool_router(router = tool_router)]
impl CtxkitServer {
    /// Which skills a message fires and why, with their instructions (or, in on-demand mode,
    /// their descriptions, to be read with `read_skill`).
    #[tool(
        name = "match_skills",
        input_schema = input_schema::<MatchArgs>(),
        annotations(title = "Match skills", read_only_hint = true, open_world_hint = false)
    )]
    async fn match_skills(&self, args: JsonObject) -> Result<Json<MatchAnswer>, String> {
        let args: MatchArgs = parse("match_skills", args)?;
        let message = bounded("message", &args.message, MAX_MESSAGE_CHARS)?;
        let config = self.skills.config();
        let max_skills = count(
            "max_skills",
            args.max_skills,
            config.select.max_skills,
            MAX_SKILLS,
        )?;
        // Bodies are cut as the provider cuts them.
        let limits = Limits {
            lines: config.max_content_lines,
            chars: config.max_content_chars,
        };
        let index = self.index();
        let skills = self
            .skills
            .select(
                &index,
                &[Message::user(message)],
                Some(&self.project),
                None,
                Some(max_skills),
            )
            .into_iter()
            .filter_map(|selection| {
                let skill = index.get(&selection.name)?;
                Some(Matched {
                    body: (config.mode != Mode::OnDemand)
                        .then(|| render::body(skill, limits, Rest::ReadSkill).into_owned()),
                    name: selection.name,
                    reason: selection.reason.as_str().to_string(),
                    triggers: selection.triggers,
                    forms: selection.forms,
                    description: skill.description.clone(),
                })
            })
            .collect();
        Ok(Json(MatchAnswer { skills }))
    }

    /// Every loaded skill: its name, what it is for, and what makes it fire.
    #[tool(
        name = "list_skills",
        annotations(title = "List skills", read_only_hint = true, open_world_hint = false)
    )]
    async fn list_skills(&self) -> Result<Json<ListAnswer>, String> {
        let index = self.index();
        let skills = index
            .ranked()
            .map(|s| Listed {
                name: s.name.clone(),
                description: s.description.clone(),
                triggers: s.triggers.literals().map(str::to_string).collect(),
                user_invocable: s.user_invocable == Some(true),
            })
            .collect();
        Ok(Json(ListAnswer { skills }))
    }

    /// One loaded skill's full instructions, by its name, or one of its files, by a path the
    /// skill lists (never any other path).
    #[tool(
        name = "read_skill",
        input_schema = input_schema::<ReadArgs>(),
        annotations(title = "Read a skill", read_only_hint = true, open_world_hint = false)
    )]
    async fn read_skill(&self, args: JsonObject) -> Result<Json<ReadAnswer>, String> {
        let args: ReadArgs = parse("read_skill", args)?;
        let index = self.index();
        let skill = (args.name.chars().nth(MAX_NAME_CHARS).is_none())
            .then(|| index.get(&args.name))
            .flatten()
            .ok_or("no loaded skill has that name; call list_skills for the names")?;
        let files = skill.supporting_files();
        let body = match &args.file {
            None => skill.body.to_string(),
            Some(file) => {
                // A path longer than any listed one names nothing.
                bounded("file", file, MAX_PATH_CHARS).and_then(|file| {
                    skill.read_text_file(file).map_err(|e| match e {
                        SkillFileError::NotText => format!("{e}; resources/read gives its bytes"),
                        e => e.to_string(),
                    })
                })?
            }
        };
        Ok(Json(ReadAnswer {
            name: skill.name.clone(),
            description: skill.description.clone(),
            body,
            file: args.file,
            files,
        }))
    }

    /// Remember a statement about this project; one saying nearly the same is merged into, and
    /// text that looks like a secret is refused.
    #[tool(
        name = "add_memory",
        input_schema = input_schema::<AddMemoryArgs>(),
        annotations(
            title = "Remember",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn add_memory(&self, args: JsonObject) -> Result<Json<AddAnswer>, String> {
        let args: AddMemoryArgs = parse("add_memory", args)?;
        let category = match &args.category {
            Some(name) => category(name)?,
            None => MemoryCategory::Fact,
        };
        let mut entry = NewMemoryEntry::new(self.project.clone(), category, args.content)
            .context("added by an MCP client");
        if let Some(importance) = args.importance {
            if !(0.0..=1.0).contains(&importance) {
                return Err("importance must be between 0.0 and 1.0".into());
            }
            entry = entry.importance(importance);
        }
        if let Some(keywords) = args.keywords {
            if keywords.len() > MAX_KEYWORDS {
                return Err(format!("give at most {MAX_KEYWORDS} keywords"));
            }
            entry = entry.keywords(keywords);
        }
        let answer = match self.store.upsert(entry).await.map_err(store_error)? {
            UpsertResult::Inserted(e) => AddAnswer {
                outcome: "inserted".into(),
                id: Some(e.id),
                reason: None,
            },
            UpsertResult::Merged { merged, .. } => AddAnswer {
                outcome: "merged".into(),
                id: Some(merged.id),
                reason: None,
            },
            UpsertResult::Skipped { reason, existing_id } => AddAnswer {
                outcome: "skipped".into(),
                id: existing_id,
                reason: Some(reason),
            },
        };
        Ok(Json(answer))
    }

    /// The project's memories most relevant to a query (counts no access: a search here only
    /// reads).
    #[tool(
        name = "search_memories",
        input_schema = input_schema::<SearchArgs>(),
        annotations(title = "Search memories", read_only_hint = true, open_world_hint = false)
    )]
    async fn search_memories(&self, args: JsonObject) -> Result<Json<Memories>, String> {
        let args: SearchArgs = parse("search_memories", args)?;
        let query = bounded("query", &args.query, MAX_QUERY_CHARS)?;
        let top_k = count("top_k", args.top_k, 10, MAX_TOP_K)?;
        let request = MemorySearchRequest::new(self.project.clone(), query)
            .top_k(top_k)
            .without_touch();
        let found = self.store.search(request).await.map_err(store_error)?;
        Ok(Json(Memories {
            memories: found.into_iter().map(|r| r.entry.into()).collect(),
        }))
    }

    /// The project's current memories, newest first (at most 200).
    #[tool(
        name = "list_memories",
        input_schema = input_schema::<ListMemoriesArgs>(),
        annotations(title = "List memories", read_only_hint = true, open_world_hint = false)
    )]
    async fn list_memories(&self, args: JsonObject) -> Result<Json<Memories>, String> {
        let args: ListMemoriesArgs = parse("list_memories", args)?;
        let options = ListOptions {
            category: args.category.as_deref().map(category).transpose()?,
            limit: MAX_LISTED,
            ..Default::default()
        };
        let listed = self
            .store
            .list(&self.project, options)
            .await
            .map_err(store_error)?;
        Ok(Json(Memories {
            memories: listed.into_iter().map(Memory::from).collect(),
        }))
    }

    /// Delete one memory of this project by id.
    #[tool(
        name = "delete_memory",
        input_schema = input_schema::<DeleteArgs>(),
        annotations(
            title = "Forget a memory",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn delete_memory(&self, args: JsonObject) -> Result<Json<Deleted>, String> {
        let args: DeleteArgs = parse("delete_memory", args)?;
        const UNKNOWN: &str = "no memory of this project has that id; list_memories gives the ids";
        if args.id.chars().nth(MAX_NAME_CHARS).is_some() {
            return Err(UNKNOWN.into());
        }
        // Projects are walls: an id of another project's memory is as unknown as a made-up one.
        match self.store.get(&args.id).await.map_err(store_error)? {
            Some(e) if e.project_path == self.project => {}
            _ => return Err(UNKNOWN.into()),
        }
        let gone = self.store.delete(&args.id).await.map_err(store_error)?;
        Ok(Json(Deleted { deleted: gone.into() }))
    }
}

impl CtxkitServer {
    /// The tools, for the handler.
    pub(super) fn router() -> ToolRouter<Self> {
        Self::tool_router()
    }
}
