//! The remote memory owner (`CAO_MEMORY_API_URL`) for the commands that build the `<cao-memory>` block
//! (`context`, `hook`, `inject`): the block is fetched from the owner's `POST /internal/memory/context` instead of
//! the local store. Callers check the local `memory.enabled` switch first, so with it off nothing is sent.

use crate::error::CliError;
use cao_client::{RemoteBackend, RemoteConfig};
use cao_core::TerminalContext;

/// The owner configured in the environment, if any.
///
/// Errors: a malformed `CAO_MEMORY_API_URL`, token or timeout (exit 1, naming the variable).
pub(crate) fn owner() -> Result<Option<RemoteConfig>, CliError> {
    RemoteConfig::from_env().map_err(|e| CliError::failure(e.to_string()))
}

/// The block for `ctx` within `budget` characters, built by `owner` (`None`: nothing to inject).
///
/// Errors (one line): the owner is unavailable (down, timeout, 401/5xx, naming the URL) or refused the call.
pub(crate) fn block(owner: RemoteConfig, ctx: &TerminalContext, budget: usize) -> Result<Option<String>, String> {
    let backend = RemoteBackend::new(owner).map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime
        .block_on(backend.context_block(ctx, Some(budget)))
        .map_err(|e| e.to_string())
}
