//! [`OwnSession`]: the view and the `# Memory updated` reminder of the session a stdio server serves (spec 001
//! "When the view changes": the view is taken when a session starts and holds still; entries written elsewhere reach
//! the model as a reminder).
//!
//! With `memory.injection.mode` `view` or `both`, a stdio server ([`OwnSession::start`]) takes the view of its
//! project's journal at start, records it as the snapshot of its own session id (`mcp-<pid>-<random>`), and sends it
//! in the `initialize` result's instructions, which clients give the model. After each tool call it attaches the
//! reminder rows of entries written since by others to the result, as `memory_updated` (each entry once; the
//! server's own writes, recognised by its process id, are left out).
//!
//! Subagents get the tools without the view: `cao-mcp-server --no-view` (or `CAO_MEMORY_NO_VIEW=1`) takes no
//! snapshot, sends no view and attaches no reminder. With a remote memory owner there is no local journal, so no
//! session is kept either.
//!
//! Nothing is created on disk at start: when the store does not exist yet, the session starts with an empty view,
//! recorded (as covering no entry) once a tool call has opened the store.

use crate::handle::ServiceHandle;
use cao_core::{Settings, TerminalContext};
use cao_memory::{JournalTarget, MemoryError, WriterFilter};
use std::sync::atomic::{AtomicBool, Ordering};

/// Environment variable that, set to `1`/`true`/`yes`, starts a stdio server without the view (for subagents).
pub const ENV_NO_VIEW: &str = "CAO_MEMORY_NO_VIEW";

/// The session of a stdio server (module docs).
#[derive(Debug)]
pub struct OwnSession {
    id: String,
    exclude: WriterFilter,
    /// The snapshot is recorded (false while the store did not exist).
    recorded: AtomicBool,
}

/// What [`OwnSession::start`] gives the server.
#[derive(Debug)]
pub struct SessionStart {
    /// The session, when one is kept.
    pub session: Option<OwnSession>,
    /// The view to send in the instructions (delimiters defused), when the journal has entries.
    pub view: Option<String>,
}

impl OwnSession {
    /// The session id its snapshot is stored under.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Start the session of this process (blocking; module docs): nothing when `no_view`, memory is disabled or the
    /// injection mode has no view; else the snapshot, taken now when the store exists.
    ///
    /// Errors: the store cannot be read, or the project cannot be resolved. The caller logs them and serves
    /// without a session.
    pub fn start(
        svc: &ServiceHandle,
        ctx: &TerminalContext,
        settings: &Settings,
        no_view: bool,
    ) -> Result<SessionStart, MemoryError> {
        let none = SessionStart {
            session: None,
            view: None,
        };
        if no_view || !settings.memory_enabled() || !settings.injection_mode().view() {
            return Ok(none);
        }
        let session = OwnSession {
            id: format!(
                "mcp-{}-{}",
                std::process::id(),
                &uuid::Uuid::new_v4().simple().to_string()[..12]
            ),
            exclude: WriterFilter {
                pid: Some(std::process::id()),
                ..WriterFilter::default()
            },
            recorded: AtomicBool::new(false),
        };
        if !svc.home().memory_dir().is_dir() {
            return Ok(SessionStart {
                session: Some(session),
                view: None,
            });
        }
        let target = JournalTarget::default();
        let snap = svc
            .get()?
            .with_settings(settings.clone())
            .session(ctx, &target, &session.id)
            .take_snapshot()?;
        session.recorded.store(true, Ordering::Release);
        let view = (snap.taken_at_entry > 0).then(|| cao_memory::neutralize_delimiters(&snap.view).into_owned());
        Ok(SessionStart {
            session: Some(session),
            view,
        })
    }

    /// The reminder to attach to a tool result (blocking): the rows of entries written since the snapshot by
    /// others, each once; `None` when there is nothing new, memory is disabled or the store does not exist.
    /// Records the empty snapshot first when the store did not exist at start.
    ///
    /// Errors: index and journal errors.
    pub fn reminder(&self, svc: &ServiceHandle, ctx: &TerminalContext) -> Result<Option<String>, MemoryError> {
        let settings = svc.settings();
        if !settings.memory_enabled() || !svc.home().memory_dir().is_dir() {
            return Ok(None);
        }
        let svc = svc.get()?.with_settings(settings);
        let target = JournalTarget::default();
        if !self.recorded.swap(true, Ordering::AcqRel)
            && let Err(e) = svc.session(ctx, &target, &self.id).record_empty_snapshot()
        {
            self.recorded.store(false, Ordering::Release);
            return Err(e);
        }
        svc.session(ctx, &target, &self.id).reminder(Some(&self.exclude))
    }
}
