//! The protocol handler: what the server declares, the tools (see [`super::tools`]), skills as
//! resources, prompts and Skills-extension entries (see [`super::skills`]), and the watcher
//! that tells each session's client when the skill index changed.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ctxkit_memory::MemoryStore;
use ctxkit_skills::{SkillContextProvider, SkillIndex};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolRequestMethod, CancelTaskMethod, CompleteRequestMethod, ConstString, CustomRequest, CustomResult,
    DiscoverRequestMethod, ErrorCode, GetPromptRequestMethod, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, GetSkillRequestMethod, GetSkillRequestParams, GetSkillResult, GetTaskMethod,
    Implementation, InitializeResultMethod, ListPromptsRequestMethod, ListPromptsResult,
    ListResourceTemplatesRequestMethod, ListResourceTemplatesResult, ListResourcesRequestMethod,
    ListResourcesResult, ListSkillsRequestMethod, ListSkillsResult, ListToolsRequestMethod, ListToolsResult,
    PaginatedRequestParams, PingRequestMethod, ReadResourceDirectoryRequestMethod, ReadResourceRequestMethod,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig,
    SetLevelRequestMethod, SubscribeRequestMethod, SubscriptionsListenRequestMethod,
    UnsubscribeRequestMethod, UpdateTaskMethod,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{tool_handler, ErrorData, RoleServer, ServerHandler};

use super::skills;
use crate::setup::follow_toggles;

const INSTRUCTIONS: &str = "ctxkit serves this project's skills and memory. Call match_skills with the user's message to get the skills that apply (follow them), read_skill for one skill by name (with `file`, one of the files it lists), and search_memories before answering questions about the project's conventions. add_memory stores durable project facts; never store secrets.";

/// One MCP session's view of ctxkit: the skill library, the memory store and the project
/// memories are scoped to. [`session`](Self::session) makes each connection's; the clones of
/// one session share everything, sessions share all but what was last announced to each.
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
    /// How often the skill folders are looked at (see [`watching`](Self::watching)).
    watch: Option<Duration>,
    /// The skills last announced to this session's client (see [`skills::fingerprint`]).
    listed: Arc<Mutex<Vec<(String, String, bool)>>>,
    /// The Skills-extension entries, built once per change and shared by every session.
    entries: Arc<skills::Entries>,
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
            watch: None,
            listed: Arc::new(Mutex::new(listed)),
            entries: Arc::default(),
        }
    }

    /// Look at the skill roots and the config every `every`
    /// ([`ctxkit_skills::SkillLibrary::watch`]: a changed index is swapped in once the files
    /// have settled, a broken edit keeps the last good skill), and tell each session's client
    /// when what the server lists changed (see [`notify_changes`](Self::notify_changes)).
    /// Every tool call reads the current index, so `match_skills` and `read_skill` follow
    /// edits and toggles at once.
    pub(crate) fn watching(mut self, every: Duration) -> Self {
        self.skills.library().watch(every, |_| {});
        self.watch = Some(every);
        self
    }

    /// The server for a new connection, over standard input and output or HTTP alike: what
    /// it has announced starts from the skills as they are now.
    pub(crate) fn session(&self) -> Self {
        CtxkitServer {
            listed: Arc::new(Mutex::new(skills::fingerprint(&self.index()))),
            ..self.clone()
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
    pub(super) fn listing_changed(&self) -> bool {
        let now = skills::fingerprint(&self.index());
        let mut listed = self.listed.lock().unwrap_or_else(|e| e.into_inner());
        if *listed == now {
            return false;
        }
        *listed = now;
        true
    }

    /// Tell this session's client, every `every`, when what the server lists changed
    /// (`resources/list_changed`, `prompts/list_changed`); ends with the session.
    async fn notify_changes(self, peer: Peer<RoleServer>, every: Duration) {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            if peer.is_transport_closed() {
                return;
            }
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

/// The methods a client may call: the SDK parses each into its own request type, so one that
/// reaches [`ServerHandler::on_custom_request`] had params that do not fit it.
const PROTOCOL_METHODS: &[&str] = &[
    PingRequestMethod::VALUE,
    InitializeResultMethod::VALUE,
    DiscoverRequestMethod::VALUE,
    CompleteRequestMethod::VALUE,
    SetLevelRequestMethod::VALUE,
    GetPromptRequestMethod::VALUE,
    ListPromptsRequestMethod::VALUE,
    ListResourcesRequestMethod::VALUE,
    ListResourceTemplatesRequestMethod::VALUE,
    ReadResourceRequestMethod::VALUE,
    SubscriptionsListenRequestMethod::VALUE,
    SubscribeRequestMethod::VALUE,
    UnsubscribeRequestMethod::VALUE,
    CallToolRequestMethod::VALUE,
    ListToolsRequestMethod::VALUE,
    GetTaskMethod::VALUE,
    UpdateTaskMethod::VALUE,
    CancelTaskMethod::VALUE,
    ListSkillsRequestMethod::VALUE,
    GetSkillRequestMethod::VALUE,
    ReadResourceDirectoryRequestMethod::VALUE,
];

/// Every list is answered whole, so the server never hands out a cursor and none is valid.
fn one_page(request: Option<PaginatedRequestParams>) -> Result<(), ErrorData> {
    match request.and_then(|r| r.cursor) {
        None => Ok(()),
        Some(_) => Err(ErrorData::invalid_params(
            "invalid cursor: every list is one page, so no cursor is valid",
            None,
        )),
    }
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

    /// A request the SDK could not read as any method it knows: either the method is unknown
    /// (-32601) or it is one of the protocol's with params that do not fit it (-32602). The
    /// SDK's own answer repeats the method name, which is the client's text and may hold a
    /// token; these quote nothing.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(if PROTOCOL_METHODS.contains(&request.method.as_str()) {
            ErrorData::invalid_params("invalid params: they are missing or do not fit the method", None)
        } else {
            ErrorData::new(ErrorCode::METHOD_NOT_FOUND, "no such method", None)
        })
    }

    /// The tools; like every list, one page.
    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        one_page(request)?;
        Ok(ListToolsResult::with_all_items(self.tool_router.list_all()))
    }

    /// The session is open: from now on its client hears of changed skills.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if let Some(every) = self.watch {
            tokio::spawn(self.clone().notify_changes(context.peer, every));
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        one_page(request)?;
        Ok(ListResourcesResult::with_all_items(skills::resources(
            &self.index(),
        )))
    }

    /// No templates: skills are listed one by one.
    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        one_page(request)?;
        Ok(ListResourceTemplatesResult::with_all_items(Vec::new()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let index = self.index();
        let contents = blocking(move || {
            let (skill, path) = skills::by_uri(&index, &request.uri).ok_or_else(|| {
                ErrorData::resource_not_found(
                    "no skill resource has that URI; resources/list gives them",
                    None,
                )
            })?;
            skills::contents(skill, &path, &request.uri)
        })
        .await??;
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        one_page(request)?;
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
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        one_page(request)?;
        let (index, entries) = (self.index(), self.entries.clone());
        let all = blocking(move || entries.all(&index)).await?;
        Ok(ListSkillsResult::with_all_items(all))
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        let (index, entries) = (self.index(), self.entries.clone());
        blocking(move || skills::skill_by_uri(&index, &request.uri).and_then(|s| entries.one(s)))
            .await?
            .map(GetSkillResult::new)
            .ok_or_else(|| not_found("no skill has that URI; skills/list gives them"))
    }
}

/// Run file reading off the protocol's tasks.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, ErrorData> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ErrorData::internal_error(format!("reading the skills failed ({e})"), None))
}
