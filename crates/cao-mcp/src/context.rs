//! Where a tool call's [`TerminalContext`] (who is calling) comes from.
//!
//! The stdio server serves one agent terminal, so its context is captured once from the environment at start
//! ([`FixedContext`], `TerminalContext::from_env`). The HTTP server serves many terminals, so its context is
//! derived per request from headers; that source lives with the HTTP code and implements [`ContextSource`].
//!
//! Whatever its source, a context naming a terminal id is completed from that terminal's registration, which
//! wins over what the call names ([`resolve_terminal`]), before a call runs: every route and transport resolves a
//! terminal id the same way.

use cao_core::TerminalContext;
use cao_memory::{MemoryError, MemoryService};
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

/// `ctx` completed from the registration of its terminal id (`POST /terminals`, kept in the index database), when
/// it names one that is registered: the registration's session name, agent profile and cwd are the terminal's
/// identity, filling the fields the call left out; a call naming another value for any of them is refused
/// ([`MemoryError::TerminalContextMismatch`]), so a header, an environment variable or a context field cannot move a
/// registered terminal into another agent's or session's scope or another project. (A field the registration
/// leaves empty may be given by the call; the provider is filled only when absent.) A context without a terminal
/// id, or naming an unregistered one, is returned as it is. The one terminal resolution of every route: `/mcp`,
/// the internal routes, the stdio server (`CAO_TERMINAL_ID`) and context blocks.
///
/// Errors: [`MemoryError::TerminalContextMismatch`]; [`MemoryError::Store`] when the registration cannot be read.
pub fn resolve_terminal(svc: &MemoryService, mut ctx: TerminalContext) -> Result<TerminalContext, MemoryError> {
    let Some(id) = ctx.terminal_id.clone() else {
        return Ok(ctx);
    };
    let Some(row) = svc.terminal(&id)? else {
        return Ok(ctx);
    };
    let reg = row.context();
    let mismatch = |field: &'static str, registered: String, given: String| MemoryError::TerminalContextMismatch {
        terminal: id.clone(),
        field,
        registered,
        given,
    };
    if let (Some(r), Some(g)) = (&reg.session_name, &ctx.session_name)
        && r != g
    {
        return Err(mismatch("session", r.clone(), g.clone()));
    }
    if let (Some(r), Some(g)) = (&reg.agent_profile, &ctx.agent_profile)
        && r != g
    {
        return Err(mismatch("agent profile", r.clone(), g.clone()));
    }
    if let (Some(r), Some(g)) = (&reg.cwd, &ctx.cwd)
        && r != g
    {
        return Err(mismatch("cwd", r.display().to_string(), g.display().to_string()));
    }
    ctx.session_name = ctx.session_name.or(reg.session_name);
    ctx.agent_profile = ctx.agent_profile.or(reg.agent_profile);
    ctx.provider = ctx.provider.or(reg.provider);
    ctx.cwd = ctx.cwd.or(reg.cwd);
    Ok(ctx)
}
