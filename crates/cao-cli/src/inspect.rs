//! `cao memory inspect [--project-id P | --container C]`: start the memory inspector (`cao-tui`) on the local store.
//!
//! Checks, in order, before anything is opened: the arguments (a malformed project id or container is a usage
//! error, exit 2); a remote memory owner (`CAO_MEMORY_API_URL`) is refused with the reason (exit 1); stdin and stdout
//! must be a terminal (exit 1); `memory.enabled` (exit 1 naming it).

use crate::cli::InspectArgs;
use crate::error::CliError;
use cao_core::{CaoHome, Settings, TerminalContext};
use cao_memory::{JournalTarget, MemoryError, MemoryService};
use std::io::IsTerminal;

/// Why the inspector does not run over a remote owner: the owner's REST routes serve the view, zoom and search
/// tools and the purge route, but not the tree's state the inspector draws (which lines are written and by whom,
/// the leases of lines being written, the pairs ready to merge, the sessions' snapshots).
pub(crate) const REMOTE_REFUSAL: &str = "the memory inspector reads the journal's summary tree (written lines and their \
     writers, lines being written, pairs ready to merge, session snapshots), which the remote memory owner's REST \
     routes do not serve (they offer the view, zoom, search and purge only); run `cao memory inspect` on the owner's \
     machine";

/// Run the inspector until the operator closes it.
///
/// Errors: usage errors (exit 2); a remote owner, no terminal, memory disabled, a store or terminal failure
/// (exit 1).
pub(crate) fn run(args: InspectArgs) -> Result<(), CliError> {
    if let Some(p) = &args.project_id
        && let Err(e) = cao_core::identity::validate_project_id(p)
    {
        return Err(CliError::Usage(format!("--project-id: {e}")));
    }
    if let Some(c) = args
        .container
        .as_deref()
        .filter(|c| !cao_core::container::is_safe_segment(c))
    {
        return Err(CliError::Usage(format!(
            "--container {:?} is not global, federated or a project id (1 to 255 bytes of [A-Za-z0-9._-], not . or ..)",
            c.chars().take(64).collect::<String>()
        )));
    }
    if let Some(owner) = crate::remote::owner()? {
        return Err(CliError::failure_with_hint(
            format!("cannot inspect through {}: {REMOTE_REFUSAL}", owner.url),
            "unset CAO_MEMORY_API_URL to inspect this machine's own store",
        ));
    }
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(CliError::failure(
            "the memory inspector needs a terminal (use `cao memory view` for the view as text)",
        ));
    }
    let home = CaoHome::from_env();
    if !Settings::load(&home).memory_enabled() {
        return Err(MemoryError::Disabled.into());
    }
    let svc = MemoryService::open(home)?;
    let mut ctx = TerminalContext::from_env();
    if let Some(p) = args.project_id {
        ctx.project_id = Some(p);
    }
    // Inspecting a project's container acts as that project: search, delete and purge reach its memories, not
    // those of the directory the inspector was started in.
    if let Some(c) = args.container.as_deref().filter(|c| {
        *c != cao_core::container::GLOBAL_CONTAINER
            && *c != cao_core::container::FEDERATED_CONTAINER
            && cao_core::identity::validate_project_id(c).is_ok()
    }) {
        ctx.project_id = Some(c.to_owned());
    }
    let target = JournalTarget {
        scope: None,
        container: args.container,
    };
    let mut source = cao_tui::LocalSource::new(svc, ctx, target);
    cao_tui::run(&mut source).map_err(|e| CliError::failure(e.to_string()))
}
