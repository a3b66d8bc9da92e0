//! `store_lesson` (spec 004 "The retrospector agent"): a lesson stored into an agent's scope by a caller that may
//! be another agent (the retrospector), through the ordinary store pipeline (validation, lock, index, audit).
//!
//! Rules, in order:
//! 1. Learning must be on ([`MemoryError::LearningDisabled`], before anything else).
//! 2. Arguments, no I/O: the target is a profile name (`crate::profile::validate_name`); the content follows
//!    the `memory_store` rules and the lesson contract's hard edges: no Learned Patterns block markers, no control
//!    or bidirectional-override characters, nothing the secret gate matches (a lesson may end up in a profile
//!    shared by every session). Scope `agent`, type `feedback`, key and tags as `memory_store`.
//! 3. The caller is resolved from its terminal record only (`CAO_TERMINAL_ID` / `X-CAO-Terminal-Id` registered with
//!    `POST /terminals`), never from tool arguments or context headers: no terminal id, an unregistered terminal
//!    or a registration without an agent profile is [`MemoryError::CallerUnresolved`].
//! 4. Writing into another agent's scope needs `store_lesson` in the caller profile's frontmatter `capabilities`
//!    (`crate::profile`, agent directories then built-ins); writing into its own scope needs nothing
//!    ([`MemoryError::CapabilityRequired`]).
//! 5. The memory is written with scope id = the target, and provenance (provider, terminal id) and the audit
//!    line name the caller.

use crate::{STORE_LESSON_CAPABILITY, learned, profile};
use cao_core::key::sanitize_scope_id;
use cao_core::{MemoryType, Scope};
use cao_core::{Settings, TerminalContext};
use cao_ops::types::{StoreArgs, StoreLessonArgs, StoreResult};
use cao_ops::write;
use cao_store::MemoryError;
use cao_store::Store;

/// Store a lesson (rules in the module documentation). Returns the `memory_store` result of the write.
///
/// Errors: [`MemoryError::LearningDisabled`], [`MemoryError::Invalid`] (also for the profile name),
/// [`MemoryError::Secret`], [`MemoryError::CallerUnresolved`], [`MemoryError::CapabilityRequired`], and those
/// of a store.
pub fn store_lesson(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    req: StoreLessonArgs,
) -> Result<StoreResult, MemoryError> {
    if !settings.learning_enabled() {
        return Err(MemoryError::LearningDisabled);
    }
    let target = req.target_agent_profile.trim().to_owned();
    profile::validate_name(&target)?;
    check_lesson_content(&req.content)?;
    let prepared = write::prepare(
        &StoreArgs {
            content: req.content,
            scope: Some(Scope::Agent),
            memory_type: Some(MemoryType::Feedback),
            key: req.key,
            tags: req.tags,
        },
        None,
    )?;

    let Some(terminal_id) = ctx.terminal_id.as_deref().filter(|t| !t.trim().is_empty()) else {
        return Err(MemoryError::CallerUnresolved(
            "store_lesson needs the caller's terminal: run it from a terminal registered with POST /terminals \
             (CAO_TERMINAL_ID / X-CAO-Terminal-Id)"
                .into(),
        ));
    };
    let Some(row) = store.snapshot().terminal(terminal_id)? else {
        return Err(MemoryError::CallerUnresolved(format!(
            "terminal {:?} is not registered (POST /terminals); store_lesson resolves the caller only from its \
             terminal record",
            bounded(terminal_id)
        )));
    };
    let Some(caller) = row.agent_profile.clone().filter(|p| !p.trim().is_empty()) else {
        return Err(MemoryError::CallerUnresolved(format!(
            "terminal {:?} was registered without an agent profile; store_lesson needs the caller's profile",
            bounded(terminal_id)
        )));
    };
    if sanitize_scope_id(&caller) != target {
        let dirs = settings.agent_dirs(store.home());
        let allowed = match profile::validate_name(&caller) {
            Ok(()) => profile::find(&caller, &dirs)?.is_some_and(|p| p.has_capability(STORE_LESSON_CAPABILITY)),
            Err(_) => false,
        };
        if !allowed {
            return Err(MemoryError::CapabilityRequired { caller, target });
        }
    }
    let writer = TerminalContext {
        terminal_id: Some(row.id.clone()),
        session_name: row.session_name.clone(),
        agent_profile: Some(caller),
        provider: Some(row.provider.clone()),
        cwd: row.cwd.as_ref().map(std::path::PathBuf::from),
        project_id: None,
    };
    write::commit(store, settings, &writer, &prepared, Some(target), None)
}

/// The lesson contract's hard edges on `content` (see the module documentation).
///
/// Errors: [`MemoryError::Invalid`] for block markers or forbidden characters; [`MemoryError::Secret`].
pub fn check_lesson_content(content: &str) -> Result<(), MemoryError> {
    if learned::has_block_marker(content) {
        return Err(MemoryError::Invalid(
            "a lesson must not contain the Learned Patterns block markers (<!-- cao-learned:begin -->, <!-- \
             cao-learned:end -->, <!-- lesson: ... -->)"
                .into(),
        ));
    }
    if let Some(c) = content.chars().find(|c| learned::is_forbidden_char(*c)) {
        return Err(MemoryError::Invalid(format!(
            "a lesson must not contain control characters (found U+{:04X})",
            u32::from(c)
        )));
    }
    if let Some(pattern) = cao_core::secret::scan(content) {
        return Err(MemoryError::Secret { pattern });
    }
    Ok(())
}

/// A caller-given value for a message: at most 80 characters.
fn bounded(s: &str) -> String {
    s.chars().take(80).collect()
}
