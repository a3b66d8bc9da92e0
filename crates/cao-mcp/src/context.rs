//! Where a tool call's [`TerminalContext`] (who is calling) comes from.
//!
//! The stdio server serves one agent terminal, so its context is captured once from the environment at start
//! ([`FixedContext`], `TerminalContext::from_env`). The HTTP server serves many terminals, so its context is
//! derived per request from headers; that source lives with the HTTP code and implements [`ContextSource`].

use cao_core::TerminalContext;
use rmcp::RoleServer;
use rmcp::service::RequestContext;

/// Produces the terminal context of one tool call from the request it arrived with.
///
/// Implementations must not fail: a missing piece of context leaves the matching field `None`, and the service
/// then reports the scope that needs it as unresolvable (it never guesses a scope id).
pub trait ContextSource: Send + Sync + 'static {
    /// The context of the call carried by `request`.
    fn context(&self, request: &RequestContext<RoleServer>) -> TerminalContext;
}

/// The same context for every call (the stdio server: one process per agent terminal).
#[derive(Debug, Clone, Default)]
pub struct FixedContext(pub TerminalContext);

impl FixedContext {
    /// The context of this process: `CAO_TERMINAL_ID`, `CAO_SESSION_NAME`, `CAO_AGENT_PROFILE`, `CAO_PROVIDER`,
    /// `CAO_PROJECT_ID` and the current directory.
    pub fn from_env() -> Self {
        Self(TerminalContext::from_env())
    }
}

impl ContextSource for FixedContext {
    fn context(&self, _request: &RequestContext<RoleServer>) -> TerminalContext {
        self.0.clone()
    }
}
