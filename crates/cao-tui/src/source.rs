//! Where the inspector reads and writes: the [`Source`] trait, and [`LocalSource`], the local store through
//! `cao-memory` (every read first runs the store's read preparation, so edits made outside the tool are picked up)
//! and `cao-journal`'s inspector functions. The state machine only talks to a `Source`, so it runs the same on a
//! real home in tests.

use crate::error::TuiError;
use cao_core::{MemoryRef, Scope, TerminalContext};
use cao_journal::{Address, Mechanism, Node};
use cao_memory::{JournalTarget, MemoryService, MemoryTarget, SearchArgs};
use cao_store::{EntryKind, EntryRow, SnapshotRow};
use chrono::{DateTime, Utc};
use std::path::PathBuf;

/// Most entries "This session" lists after a snapshot.
pub const SESSION_ENTRIES_MAX: usize = 500;

/// One read of the mechanism and the settings that shape the screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// The container whose journal this is (`global`, `federated` or a project id).
    pub container: String,
    /// The journal's state ([`cao_journal::mechanism`]).
    pub mechanism: Mechanism,
    /// `memory.summarize`: false shows `summarizing off` in the header.
    pub summarize: bool,
    /// `ui.tree_drawing`: boxes (true) or the outline's tree lines (false) in the detail pane.
    pub tree_drawing: bool,
    /// Sessions that took a snapshot of this journal, the most recent first.
    pub sessions: Vec<SnapshotRow>,
    /// When this was read (the source's clock).
    pub at: DateTime<Utc>,
}

/// One search hit, with the newest journal entry of its memory (what "reveal" selects).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// The memory's key.
    pub key: String,
    /// Its scope.
    pub scope: Scope,
    /// Its scope id.
    pub scope_id: Option<String>,
    /// The first line of its text holding a query word. Untrusted.
    pub matching_line: String,
    /// The newest entry of the memory in this journal, when it has one here.
    pub newest_entry: Option<u64>,
    /// For a note of an Obsidian vault (which has no journal entries): its path and freshness; `None` for a
    /// native memory.
    pub vault: Option<VaultMark>,
}

/// A search hit that is a note of an Obsidian vault (spec/vault-facts.md section 5: `source_path`,
/// `index_freshness`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VaultMark {
    /// The note's path inside the vault. Untrusted (a file name someone chose).
    pub source_path: String,
    /// Whether the note changed on disk since it was indexed.
    pub stale: bool,
}

/// What the inspector reads and changes. Every method may fail with a [`TuiError`], which the inspector shows on
/// its message line (it never ends the program).
pub trait Source {
    /// The mechanism now, with the settings and the sessions.
    fn load(&mut self) -> Result<Loaded, TuiError>;
    /// The lines at `addresses`, in that order.
    fn nodes(&mut self, addresses: &[Address]) -> Result<Vec<Node>, TuiError>;
    /// Search the current memories visible from here by word (the `memory_search` rule), best first.
    fn search(&mut self, query: &str) -> Result<Vec<Hit>, TuiError>;
    /// The entries from `from` on, oldest first (at most [`SESSION_ENTRIES_MAX`]).
    fn entries_since(&mut self, from: u64) -> Result<Vec<EntryRow>, TuiError>;
    /// Delete the memory of `entry` (a delete entry is appended); returns a one-line report.
    fn delete(&mut self, entry: &EntryRow) -> Result<String, TuiError>;
    /// Purge the memory of `entry` (spec 001 "Forget"); returns a one-line report.
    fn purge(&mut self, entry: &EntryRow) -> Result<String, TuiError>;
    /// The topic file of the memory of `entry`.
    fn memory_path(&self, entry: &EntryRow) -> Option<PathBuf>;
}

/// The local store: a [`MemoryService`], the caller's context and the journal picked.
pub struct LocalSource {
    svc: MemoryService,
    ctx: TerminalContext,
    target: JournalTarget,
}

impl LocalSource {
    /// A source over `svc` for the caller `ctx` reading the journal `target` names (the caller's project by
    /// default, or a container).
    pub fn new(svc: MemoryService, ctx: TerminalContext, target: JournalTarget) -> LocalSource {
        LocalSource { svc, ctx, target }
    }

    /// The container, after the store's read preparation (external edits picked up, the journal opened).
    fn container(&self) -> Result<String, TuiError> {
        Ok(self.svc.view(&self.ctx, &self.target)?.container)
    }

    fn memory_ref(entry: &EntryRow) -> MemoryRef {
        MemoryRef::new(entry.scope, entry.scope_id.clone(), entry.key.clone())
    }
}

impl Source for LocalSource {
    fn load(&mut self) -> Result<Loaded, TuiError> {
        let container = self.container()?;
        let settings = self.svc.settings();
        let now = self.svc.now();
        let store = self.svc.storage();
        Ok(Loaded {
            mechanism: cao_journal::mechanism(&*store.write(), &container, now)?,
            sessions: cao_journal::sessions(&*store.snapshot(), &container)?,
            summarize: settings.summarize_enabled(),
            tree_drawing: settings.tree_drawing(),
            container,
            at: now,
        })
    }

    fn nodes(&mut self, addresses: &[Address]) -> Result<Vec<Node>, TuiError> {
        let container = self.container()?;
        Ok(cao_journal::nodes(
            &*self.svc.storage().snapshot(),
            &container,
            addresses,
            self.svc.now(),
        )?)
    }

    fn search(&mut self, query: &str) -> Result<Vec<Hit>, TuiError> {
        let container = self.container()?;
        let settings = self.svc.settings();
        let result = self.svc.search(
            &self.ctx,
            &SearchArgs {
                query: query.to_owned(),
            },
        )?;
        result
            .hits
            .into_iter()
            .map(|h| {
                let key = cao_core::Key::parse_strict(&h.key).map_err(|e| TuiError::Invalid(e.to_string()))?;
                let newest_entry = cao_journal::memory_entries(
                    &*self.svc.storage().snapshot(),
                    &container,
                    h.scope,
                    h.scope_id.as_deref(),
                    &key,
                )?
                .last()
                .copied();
                // Vault notes have no journal entries; a hit without one may be a vault note.
                let vault = match newest_entry {
                    Some(_) => None,
                    None => cao_memory::vault_fresh::show(
                        self.svc.storage(),
                        &settings,
                        h.scope,
                        h.scope_id.as_deref(),
                        &key,
                    )?
                    .map(|(_, v)| VaultMark {
                        source_path: v.source_path,
                        stale: v.freshness == cao_memory::IndexFreshness::Stale,
                    }),
                };
                Ok(Hit {
                    key: h.key,
                    scope: h.scope,
                    scope_id: h.scope_id,
                    matching_line: h.matching_line,
                    newest_entry,
                    vault,
                })
            })
            .collect()
    }

    fn entries_since(&mut self, from: u64) -> Result<Vec<EntryRow>, TuiError> {
        let container = self.container()?;
        Ok(cao_journal::entries_since(
            &*self.svc.storage().snapshot(),
            &container,
            from,
            SESSION_ENTRIES_MAX,
        )?)
    }

    fn delete(&mut self, entry: &EntryRow) -> Result<String, TuiError> {
        let r = self
            .svc
            .delete(&self.ctx, MemoryTarget::Exact(Self::memory_ref(entry)))?;
        self.svc.flush_index_md()?;
        Ok(match r.journal_entry {
            Some(id) if r.deleted => format!(
                "deleted {}: entry {id} appended",
                cao_journal::render::entry_name(entry)
            ),
            _ => format!("{} was already gone", cao_journal::render::entry_name(entry)),
        })
    }

    fn purge(&mut self, entry: &EntryRow) -> Result<String, TuiError> {
        let r = self
            .svc
            .purge(&self.ctx, MemoryTarget::Exact(Self::memory_ref(entry)))?;
        self.svc.flush_index_md()?;
        Ok(format!(
            "purged {}: {} version(s) blanked, {} summary line(s) dropped",
            cao_journal::render::entry_name(entry),
            r.versions_purged,
            r.lines_dropped
        ))
    }

    fn memory_path(&self, entry: &EntryRow) -> Option<PathBuf> {
        if entry.kind == EntryKind::Delete && entry.next.is_none() {
            return None;
        }
        self.svc.storage().locator(&Self::memory_ref(entry)).ok()
    }
}
