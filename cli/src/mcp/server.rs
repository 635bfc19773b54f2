//! The protocol handler: what the server declares, the tools (see [`super::tools`]), skills as
//! resources, prompts and Skills-extension entries (see [`super::skills`]), and the watcher
//! that tells the client when the skill index changed.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ctxkit_memory::MemoryStore;
use ctxkit_skills::{SkillContextProvider, SkillIndex};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CustomRequest, CustomResult, ErrorCode, GetPromptRequestParams, GetPromptResponse, GetPromptResult,
    GetSkillRequestParams, GetSkillResult, Implementation, ListPromptsResult, ListResourcesResult,
    ListSkillsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, ServerCapabilities, ServerConfig,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{tool_handler, ErrorData, RoleServer, ServerHandler};

use super::skills;
use crate::setup::follow_toggles;

const INSTRUCTIONS: &str = "ctxkit serves this project's skills and memory. Call match_skills with the user's message to get the skills that apply (follow them), read_skill for one skill by name, and search_memories before answering questions about the project's conventions. add_memory stores durable project facts; never store secrets.";

/// One MCP session's view of ctxkit: the skill library, the memory store and the project
/// memories are scoped to. Cloned per connection; the clones share everything.
#[derive(Clone)]
pub(crate) struct CtxkitServer {
    /// The skill provider every command selects through, so `match_skills` picks what
    /// `context`, `chat` and the hooks pick for the same project and message.
    pub(super) skills: Arc<SkillContextProvider>,
    pub(super) store: Arc<dyn MemoryStore>,
    pub(super) project: String,
    /// The project folder whose config may turn skills on and off while the server runs;
    /// `None` to keep the list the library loaded with.
    config_dir: Option<Arc<Path>>,
    tool_router: ToolRouter<Self>,
    /// The skills last announced (see [`skills::fingerprint`]).
    listed: Arc<Mutex<Vec<(String, String, bool)>>>,
}

impl CtxkitServer {
    pub(crate) fn new(
        provider: SkillContextProvider,
        store: Arc<dyn MemoryStore>,
        project: String,
        config_dir: Option<&Path>,
    ) -> Self {
        let listed = skills::fingerprint(&provider.library().snapshot());
        CtxkitServer {
            skills: Arc::new(provider),
            store,
            project,
            config_dir: config_dir.map(Arc::from),
            tool_router: Self::router(),
            listed: Arc::new(Mutex::new(listed)),
        }
    }

    /// The skills as they are now, with the ones the config turns off now set aside (every
    /// request asks, so a toggle counts from the next one).
    pub(super) fn index(&self) -> Arc<SkillIndex> {
        let library = self.skills.library();
        if let Some(dir) = &self.config_dir {
            follow_toggles(library, dir);
        }
        library.snapshot()
    }

    /// Whether what the server lists changed since it last looked, under the library's
    /// current index.
    pub(crate) fn listing_changed(&self) -> bool {
        let now = skills::fingerprint(&self.index());
        let mut listed = self.listed.lock().unwrap_or_else(|e| e.into_inner());
        if *listed == now {
            return false;
        }
        *listed = now;
        true
    }

    /// Watch the skill roots and the config every `every`
    /// ([`ctxkit_skills::SkillLibrary::watch`]: a changed index is swapped in once the files
    /// have settled, a broken edit keeps the last good skill) and tell the client when what
    /// the server lists changed (`resources/list_changed`, `prompts/list_changed`); ends when
    /// a notification finds the client gone. Every tool call reads the current index, so
    /// `match_skills` and `read_skill` follow edits and toggles at once.
    pub(crate) async fn watch(self, peer: Peer<RoleServer>, every: Duration) {
        self.skills.library().watch(every, |_| {});
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            let server = self.clone();
            // Reading the config and rescanning are blocking file work.
            let changed = tokio::task::spawn_blocking(move || server.listing_changed());
            if !changed.await.unwrap_or(false) {
                continue;
            }
            tracing::info!("skills changed; notifying the client");
            if peer.notify_resource_list_changed().await.is_err()
                || peer.notify_prompt_list_changed().await.is_err()
            {
                return;
            }
        }
    }
}

fn not_found(what: &'static str) -> ErrorData {
    ErrorData::invalid_params(what, None)
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for CtxkitServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_skills()
            .build();
        let mut info = ServerConfig::new(capabilities);
        info.server_info = Implementation::new("ctxkit", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(INSTRUCTIONS.to_string());
        info
    }

    /// An unknown method: the SDK's own answer repeats the method name, which is the client's
    /// text and may hold a token; this one quotes nothing.
    async fn on_custom_request(
        &self,
        _request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            "no such method",
            None,
        ))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(skills::resources(
            &self.index(),
        )))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let index = self.index();
        let skill = skills::by_uri(&index, &request.uri).ok_or_else(|| {
            ErrorData::resource_not_found("no skill resource has that URI; resources/list gives them", None)
        })?;
        Ok(ReadResourceResult::new(vec![skills::contents(skill, &request.uri)]).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(skills::prompts(&self.index())))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let index = self.index();
        let skill = skills::prompt_skill(&index, &request.name)
            .ok_or_else(|| not_found("no prompt has that name; prompts/list gives them"))?;
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("request"))
            .and_then(|v| v.as_str());
        Ok(GetPromptResult::new(vec![skills::prompt_message(skill, text)])
            .with_description(skill.description.clone())
            .into())
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        let index = self.index();
        Ok(ListSkillsResult::with_all_items(
            index.ranked().filter_map(skills::extension_entry).collect(),
        ))
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        let index = self.index();
        skills::by_uri(&index, &request.uri)
            .and_then(skills::extension_entry)
            .map(GetSkillResult::new)
            .ok_or_else(|| not_found("no skill has that URI; skills/list gives them"))
    }
}
