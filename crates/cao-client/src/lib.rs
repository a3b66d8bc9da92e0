//! `cao-client`: the HTTP client of a remote memory owner (layer 4; over `cao-protocol`), for a node whose memory
//! owner is another `cao-server` (spec 000 "Context Injection", last paragraph).
//!
//! With `CAO_MEMORY_API_URL` set (for example `http://127.0.0.1:9889`), the MCP tools, context building and the
//! provider-file writes of this node go to the owner's internal routes (`cao_http::api::internal`):
//! `POST <url><Tool::internal_path>` (`/internal/memory/{store,recall,forget,view,zoom,search,read}`) with the MCP
//! tool arguments plus a `context` object (the caller's terminal context), and `POST <url>/internal/memory/context`
//! for a block.
//! `CAO_MEMORY_API_TOKEN`, when set, is sent as `Authorization: Bearer <token>`; `CAO_MEMORY_API_TIMEOUT_SECS`
//! (default 5) bounds both connecting and the whole request.
//!
//! This crate is what the `cao` and `cao-mcp-server` binaries link for that: reqwest with rustls, no HTTP server
//! code (no axum, utoipa or jsonwebtoken).
//!
//! Invariants:
//! - The local `memory.enabled` switch is checked by the callers before any method here runs, so with it off
//!   nothing is sent.
//! - No call panics or waits longer than the timeout. A connection failure, a timeout, a 401, a 5xx or a body that
//!   is not the API's JSON object is [`ToolError::RemoteUnavailable`] (`error_kind` `remote_unavailable`, naming the
//!   URL), and so is a 404 without a message (a base URL with a wrong path: the message says so); any other 4xx
//!   carrying the API's error JSON is the owner refusing the call, relayed with the owner's code
//!   ([`ToolError::Remote`]), so an agent can correct its arguments.
//! - An answer is read up to [`MAX_ANSWER_BYTES`] and no further: a broken or hostile owner cannot make this node
//!   allocate more.
//! - The URL carries no credentials (refused without echoing it; the token goes in `CAO_MEMORY_API_TOKEN`) and is
//!   not the MCP endpoint (`.../mcp`, refused naming the base URL expected).
//! - Tool arguments are forwarded as the agent sent them (the owner validates them), so the wire is the same
//!   whichever version either side runs.

use cao_core::{Settings, TerminalContext};
use cao_protocol::{Arguments, BackendFuture, CONTEXT_PATH, MemoryBackend, Tool, ToolError};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;

/// Environment variable naming the owner's base URL; unset or empty = memory is local.
pub const ENV_URL: &str = "CAO_MEMORY_API_URL";
/// Environment variable holding the bearer token sent to the owner (optional).
pub const ENV_TOKEN: &str = "CAO_MEMORY_API_TOKEN";
/// The largest answer read from the owner (bytes): 16 MiB, room for a recall of 100 memories of the 64 KiB
/// maximum with JSON escaping. A larger answer is [`ToolError::RemoteUnavailable`] and is not read further.
pub const MAX_ANSWER_BYTES: usize = 16 << 20;

/// Environment variable overriding the connect and request timeout, in whole seconds (1..=300).
pub const ENV_TIMEOUT: &str = "CAO_MEMORY_API_TIMEOUT_SECS";
/// Connect and request timeout when [`ENV_TIMEOUT`] is unset: 5 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// A remote owner configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// `CAO_MEMORY_API_URL` is not an absolute http(s) URL.
    #[error("invalid {ENV_URL} {0:?}: expected an http:// or https:// URL such as http://127.0.0.1:9889")]
    Url(String),
    /// `CAO_MEMORY_API_URL` carries a user name or password (`user:pass@host`); the URL is not echoed.
    #[error(
        "invalid {ENV_URL}: it carries credentials (user:password@); give the server's base URL and put the bearer token in {ENV_TOKEN}"
    )]
    Credentials,
    /// `CAO_MEMORY_API_URL` names the MCP endpoint instead of the server's base URL.
    #[error(
        "invalid {ENV_URL} {0:?}: that is the MCP endpoint; give the server's base URL, such as http://127.0.0.1:9889"
    )]
    McpPath(String),
    /// `CAO_MEMORY_API_TIMEOUT_SECS` is not a whole number of seconds in 1..=300.
    #[error("invalid {ENV_TIMEOUT} {0:?}: expected whole seconds in 1..=300")]
    Timeout(String),
    /// `CAO_MEMORY_API_TOKEN` cannot be sent in a header (control characters).
    #[error("invalid {ENV_TOKEN}: it must be a single line of visible characters")]
    Token,
    /// The HTTP client could not be built (TLS setup).
    #[error("cannot build the HTTP client for the memory owner: {0}")]
    Client(String),
}

/// Where the owner is and how to reach it.
#[derive(Clone)]
pub struct RemoteConfig {
    /// Base URL without a trailing `/`.
    pub url: String,
    /// Bearer token, if any.
    pub token: Option<String>,
    /// Connect and request timeout.
    pub timeout: Duration,
}

impl std::fmt::Debug for RemoteConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteConfig")
            .field("url", &self.url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl RemoteConfig {
    /// A configuration for `url` without a token and with [`DEFAULT_TIMEOUT`].
    ///
    /// Errors: [`RemoteError::Url`] when `url` is not an http(s) URL.
    pub fn new(url: &str) -> Result<Self, RemoteError> {
        let trimmed = url.trim().trim_end_matches('/');
        let parsed = reqwest::Url::parse(trimmed).map_err(|_| RemoteError::Url(url.to_owned()))?;
        if !parsed.username().is_empty() || parsed.password().is_some() {
            // Never echo the URL: it holds a secret.
            return Err(RemoteError::Credentials);
        }
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(RemoteError::Url(url.to_owned()));
        }
        if parsed.path().trim_end_matches('/').ends_with("/mcp") {
            return Err(RemoteError::McpPath(url.to_owned()));
        }
        Ok(Self {
            url: trimmed.to_owned(),
            token: None,
            timeout: DEFAULT_TIMEOUT,
        })
    }

    /// The configuration in the environment ([`ENV_URL`], [`ENV_TOKEN`], [`ENV_TIMEOUT`]); `None` when
    /// `CAO_MEMORY_API_URL` is unset or empty (memory is local).
    ///
    /// Errors: a malformed URL, timeout or token ([`RemoteError`]).
    pub fn from_env() -> Result<Option<Self>, RemoteError> {
        let var = |name| {
            std::env::var(name)
                .ok()
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let Some(url) = var(ENV_URL) else {
            return Ok(None);
        };
        let mut config = Self::new(&url)?;
        config.token = var(ENV_TOKEN);
        if let Some(t) = var(ENV_TIMEOUT) {
            config.timeout = t
                .parse::<u64>()
                .ok()
                .filter(|s| (1..=300).contains(s))
                .map(Duration::from_secs)
                .ok_or(RemoteError::Timeout(t))?;
        }
        Ok(Some(config))
    }
}

/// The HTTP client of a remote memory owner (see the module docs). Cheap to clone.
#[derive(Debug, Clone)]
pub struct RemoteBackend {
    config: RemoteConfig,
    client: reqwest::Client,
}

impl RemoteBackend {
    /// A client for `config` (rustls; no request is made now).
    ///
    /// Errors: [`RemoteError::Token`] for a token that cannot be a header value, [`RemoteError::Client`] when
    /// the TLS client cannot be built.
    pub fn new(config: RemoteConfig) -> Result<Self, RemoteError> {
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(token) = &config.token {
            let mut value =
                reqwest::header::HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| RemoteError::Token)?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        let client = reqwest::Client::builder()
            .default_headers(headers)
            .connect_timeout(config.timeout)
            .timeout(config.timeout)
            .build()
            .map_err(|e| RemoteError::Client(e.to_string()))?;
        Ok(Self { config, client })
    }

    /// The owner's base URL.
    pub fn url(&self) -> &str {
        &self.config.url
    }

    fn unavailable(&self, reason: impl Into<String>) -> ToolError {
        ToolError::RemoteUnavailable {
            url: self.config.url.clone(),
            reason: reason.into(),
        }
    }

    /// Run `tool` with the agent's `args` as `ctx` on the owner: its success payload.
    ///
    /// Errors: [`ToolError::Remote`] when the owner refused the call, [`ToolError::RemoteUnavailable`] otherwise
    /// (see the crate docs).
    pub async fn call_tool(&self, tool: Tool, args: Arguments, ctx: &TerminalContext) -> Result<Value, ToolError> {
        self.call_tool_with(tool, args, ctx, None).await
    }

    /// [`RemoteBackend::call_tool`] with this node's `settings` for resolving the project identity here
    /// ([`local_project`]).
    async fn call_tool_with(
        &self,
        tool: Tool,
        args: Arguments,
        ctx: &TerminalContext,
        settings: Option<&Settings>,
    ) -> Result<Value, ToolError> {
        let ctx = local_project(ctx, settings);
        let mut body = args;
        body.insert("context".to_owned(), context_json(&ctx));
        self.post(tool.internal_path(), Value::Object(body)).await
    }

    /// The owner's `<cao-memory>` block for `ctx` within `budget` characters (owner default 3000); `None` when
    /// there is nothing to inject.
    ///
    /// Errors: as [`RemoteBackend::call_tool`]; an answer without a `block` string is
    /// [`ToolError::RemoteUnavailable`].
    pub async fn context_block(
        &self,
        ctx: &TerminalContext,
        budget: Option<usize>,
    ) -> Result<Option<String>, ToolError> {
        self.context_block_with(ctx, budget, None).await
    }

    /// [`RemoteBackend::context_block`] with this node's `settings` for resolving the project identity here.
    async fn context_block_with(
        &self,
        ctx: &TerminalContext,
        budget: Option<usize>,
        settings: Option<&Settings>,
    ) -> Result<Option<String>, ToolError> {
        let ctx = local_project(ctx, settings);
        let body = json!({"budget": budget, "context": context_json(&ctx)});
        let answer = self.post(CONTEXT_PATH, body).await?;
        match &answer["block"] {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.clone())),
            _ => Err(self.unavailable("answered a context without a `block` string")),
        }
    }

    /// POST `body` to `<url><path>` and return the 2xx JSON body.
    async fn post(&self, path: &str, body: Value) -> Result<Value, ToolError> {
        let bytes =
            serde_json::to_vec(&body).map_err(|e| self.unavailable(format!("cannot encode the request: {e}")))?;
        let response = self
            .client
            .post(format!("{}{path}", self.config.url))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(bytes)
            .send()
            .await
            .map_err(|e| self.unavailable(describe(&e)))?;
        let status = response.status();
        if response.content_length().is_some_and(|n| n > MAX_ANSWER_BYTES as u64) {
            return Err(self.unavailable(format!("answered {status} with more than {MAX_ANSWER_BYTES} bytes")));
        }
        let mut response = response;
        let mut text = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.unavailable(describe(&e)))? {
            if text.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(self.unavailable(format!("answered {status} with more than {MAX_ANSWER_BYTES} bytes")));
            }
            text.extend_from_slice(&chunk);
        }
        let json: Option<Value> = serde_json::from_slice(&text).ok();
        if status.is_success() {
            return match json {
                Some(v @ Value::Object(_)) => Ok(v),
                Some(_) => Err(self.unavailable(format!("answered {status} with JSON that is not an object"))),
                None => Err(self.unavailable(format!("answered {status} with a body that is not JSON"))),
            };
        }
        if status == StatusCode::NOT_FOUND
            && json
                .as_ref()
                .is_none_or(|v| v["message"].as_str().is_none_or(str::is_empty))
        {
            return Err(self.unavailable(format!(
                "answered {status} for {path}: is {ENV_URL} the server's base URL (scheme://host:port, no path)?"
            )));
        }
        let error = json
            .as_ref()
            .and_then(|v| Some((v["error"].as_str()?, v["message"].as_str().unwrap_or(""))));
        match error {
            Some((code, message)) if status.is_client_error() && status != StatusCode::UNAUTHORIZED => {
                Err(ToolError::Remote {
                    code: code.to_owned(),
                    message: message.to_owned(),
                })
            }
            Some((code, message)) => Err(self.unavailable(format!("answered {status} {code}: {message}"))),
            None => Err(self.unavailable(format!("answered {status}"))),
        }
    }
}

/// One line for a transport error (timeouts and refused connections named as such).
fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "no answer within the timeout (CAO_MEMORY_API_TIMEOUT_SECS)".to_owned()
    } else if e.is_connect() {
        "cannot connect".to_owned()
    } else {
        e.to_string()
    }
}

/// `ctx` with its project identity resolved on this node (explicit id > `memory.project_id` of `settings` > the
/// cwd's git remote > the cwd's hash, [`TerminalContext::project`]) when it names no project id itself: the cwd is
/// a path on this machine, so the owner must not look it up on its own (another machine's checkout of the same
/// repository would land in another project, and the owner would run `git` in a directory a client names). When
/// the identity cannot be resolved here, `ctx` goes as it is and the owner reports what is missing.
pub fn local_project(ctx: &TerminalContext, settings: Option<&Settings>) -> TerminalContext {
    let mut ctx = ctx.clone();
    if ctx.project_id.is_none() && ctx.cwd.is_some() {
        let defaults;
        let settings = match settings {
            Some(s) => s,
            None => {
                defaults = Settings::default();
                &defaults
            }
        };
        if let Ok(identity) = ctx.project(settings) {
            ctx.project_id = Some(identity.project_id);
        }
    }
    ctx
}

/// The `context` object of the internal routes for `ctx`.
fn context_json(ctx: &TerminalContext) -> Value {
    json!({
        "terminal_id": ctx.terminal_id,
        "session_name": ctx.session_name,
        "agent_profile": ctx.agent_profile,
        "cwd": ctx.cwd.as_ref().map(|p| p.to_string_lossy().into_owned()),
        "project_id": ctx.project_id,
        "provider": ctx.provider,
    })
}

impl MemoryBackend for RemoteBackend {
    /// [`RemoteBackend::call_tool`]; `settings` (this machine's) resolve the project identity here
    /// ([`local_project`]); the owner reads its own for everything else.
    fn call(
        &self,
        tool: Tool,
        args: Arguments,
        ctx: TerminalContext,
        settings: Option<Settings>,
    ) -> BackendFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move { self.call_tool_with(tool, args, &ctx, settings.as_ref()).await })
    }

    /// [`RemoteBackend::context_block`]; `settings` resolve the project identity here ([`local_project`]).
    fn context(
        &self,
        ctx: TerminalContext,
        budget: Option<usize>,
        settings: Option<Settings>,
    ) -> BackendFuture<'_, Result<Option<String>, ToolError>> {
        Box::pin(async move { self.context_block_with(&ctx, budget, settings.as_ref()).await })
    }
}
