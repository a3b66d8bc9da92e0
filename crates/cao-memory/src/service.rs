//! The `MemoryService` facade: the embedding API of this crate. Every method resolves the call's settings,
//! checks the `memory.enabled` switch where the call needs it, and delegates to the feature module that implements
//! it (`write`, `recall`, `inspect`, `explain`, `inject`, `retention`, ...), each a set of free functions over the
//! [`Store`] (the rust-analyzer `ide` pattern). No logic lives here beyond that order of checks.

use cao_bundle::export;
use cao_bundle::export::{ExportDestination, ExportOutcome, ExportRequest};
use cao_bundle::import;
use cao_bundle::import::{ImportOutcome, ImportRequest};
use cao_core::{CaoHome, Clock, Key, Scope, Settings, SystemClock, TerminalContext};
use cao_learn::OutcomeDraft;
use cao_learn::learning;
use cao_learn::learning::{AgentSummary, LessonView};
use cao_learn::lessons;
use cao_learn::outcomes;
use cao_learn::outcomes::{Outcome, OutcomeList, ReportOutcomeResult};
use cao_learn::promote;
use cao_learn::promote::{PromoteRequest, PromotionReport};
use cao_lifecycle::RelationshipService;
use cao_lifecycle::eligibility::SupersedesLookup;
use cao_maint::auto_compact::AutoCompactStep;
use cao_maint::backfill::{self, EmbedReport};
use cao_maint::compact;
use cao_maint::compact::{CompactReport, CompactRequest};
use cao_maint::heal;
use cao_maint::heal::{HealReport, HealRequest};
use cao_maint::lint;
use cao_maint::lint_report::{LintReport, LintRequest};
use cao_maint::retention;
use cao_maint::retention::CleanupReport;
use cao_ops::audit_relationships;
use cao_ops::eligibility;
use cao_ops::explain;
use cao_ops::explain::ExplainRequest;
use cao_ops::inject;
use cao_ops::inject::ContextRequest;
use cao_ops::inspect;
use cao_ops::journal;
use cao_ops::journal::{
    JournalTarget, PurgeResult, ReadResult, SearchResult, SessionSnapshot, SummarizeReport, ViewResult, ZoomRequest,
    ZoomResult, ZoomedEntry,
};
use cao_ops::overview;
use cao_ops::overview::ContainerSummary;
use cao_ops::recall;
use cao_ops::types::*;
use cao_ops::write;
use cao_rank::ExplainReport;
use cao_store::MemoryError;
use cao_store::Store;
use cao_store::audit;
use std::sync::Arc;

/// The memory engine. Cheap to clone (shared state behind an `Arc`); safe to use from many threads, and many
/// processes may use the same home at once.
#[derive(Debug, Clone)]
pub struct MemoryService {
    store: Store,
    /// Topics waiting for automatic compaction (shared by every clone; enabled only by long-running processes).
    auto: Arc<cao_ops::auto_compact::Queue>,
    /// Settings the caller already loaded for the current call (`MemoryService::with_settings`); `None` = the
    /// service's own (fixed, or `settings.json` read per call).
    loaded: Option<Arc<Settings>>,
}

impl MemoryService {
    /// Open the store under `home` with the system clock; settings are re-read from `settings.json` per call.
    ///
    /// Creates `memory/` and the database as needed. Errors: [`MemoryError::Store`] when the database cannot be
    /// opened or migrated; [`MemoryError::Io`] when the memory dir cannot be created.
    pub fn open(home: CaoHome) -> Result<Self, MemoryError> {
        Self::build(home, None, Arc::new(SystemClock))
    }

    /// Open with fixed settings and a chosen clock (tests, embedding).
    pub fn open_with(home: CaoHome, settings: Settings, clock: Arc<dyn Clock>) -> Result<Self, MemoryError> {
        Self::build(home, Some(settings), clock)
    }

    fn build(home: CaoHome, settings: Option<Settings>, clock: Arc<dyn Clock>) -> Result<Self, MemoryError> {
        Ok(Self {
            store: Store::open(home, settings, clock, Some(&cao_journal::RULES))?,
            auto: Arc::new(cao_ops::auto_compact::Queue::default()),
            loaded: None,
        })
    }

    /// Replace how this service reads supersedes state (which identities are targets of active same-scope
    /// `supersedes` edges) for recall ordering, labels and the explain report: embedders that keep edges elsewhere,
    /// and tests that need a failing store. Set at most once, before use; returns `false` (and changes nothing) when
    /// a lookup was already set. The injection registry's built-in source keeps reading the index.
    pub fn set_supersedes_lookup(&self, lookup: Arc<SupersedesLookup>) -> bool {
        self.store.set_supersedes_lookup(lookup)
    }

    /// Let this service's reads (and every clone's) walk the mapped folders of the configured vault at most once
    /// per `interval` (`None`, the default: on every read). Long-running processes (the HTTP server, the MCP stdio
    /// server) set `cao_ops::vault::DEFAULT_WALK_INTERVAL`: an edited note is then recalled with its new text by
    /// the first read that starts at least `interval` after the last walk. A one-shot command keeps the default.
    pub fn set_vault_walk_interval(&self, interval: Option<std::time::Duration>) {
        self.store.set_vault_walk_interval(interval);
    }

    /// The home this service works on.
    pub fn home(&self) -> &CaoHome {
        self.store.home()
    }

    /// The store this service works on: the interface feature crates and tools (the memory inspector, benchmarks)
    /// call feature functions over. Cheap to clone.
    pub fn storage(&self) -> &Store {
        &self.store
    }

    /// The registration of terminal `id` (`POST /terminals`), if any.
    ///
    /// Errors: [`MemoryError::Store`] when it cannot be read.
    pub fn terminal(&self, id: &str) -> Result<Option<cao_store::TerminalRow>, MemoryError> {
        Ok(self.store.snapshot().terminal(id)?)
    }

    /// Register (or update) a terminal; the stored registration and whether it is new.
    ///
    /// Errors: [`MemoryError::Store`] when it cannot be written.
    pub fn register_terminal(
        &self,
        row: &cao_store::TerminalRow,
    ) -> Result<(cao_store::TerminalRow, bool), MemoryError> {
        Ok(self.store.write().upsert_terminal(row, self.store.now())?)
    }

    /// The time now by this service's clock (the system clock, or the one given to `MemoryService::open_with`).
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.store.now()
    }

    /// Current settings: those passed to `MemoryService::with_settings`, else the fixed ones, else
    /// `settings.json` read now (cheap; missing file = defaults).
    pub fn settings(&self) -> Settings {
        match &self.loaded {
            Some(s) => Settings::clone(s),
            None => self.store.settings(),
        }
    }

    /// This service for one call with settings the caller has already loaded (typically from
    /// `MemoryService::settings`, to check `memory.enabled` before deciding to call): every method of the returned
    /// value uses `settings` instead of reading `settings.json` again, so one request reads the file once. Shares
    /// the index and everything else with `self`. Keep it only for the call: a settings change takes effect on the
    /// next call only when each call loads its settings afresh.
    pub fn with_settings(&self, settings: Settings) -> MemoryService {
        MemoryService {
            store: self.store.clone(),
            auto: Arc::clone(&self.auto),
            loaded: Some(Arc::new(settings)),
        }
    }

    /// `memory.enabled` (env `CAO_MEMORY_ENABLED` > file > true; fails open).
    pub fn memory_enabled(&self) -> bool {
        self.settings().memory_enabled()
    }

    /// The call's settings, or [`MemoryError::Disabled`] when memory is switched off.
    fn ensure_enabled(&self) -> Result<Settings, MemoryError> {
        let s = self.settings();
        if s.memory_enabled() {
            self.store.note_settings(&s);
            Ok(s)
        } else {
            Err(MemoryError::Disabled)
        }
    }

    /// Store (upsert) a memory: a new key creates its topic file; an existing key gets a new timestamped entry
    /// and its header's type and tags are replaced (spec 000 "memory_store"). `call` is the tool's arguments
    /// ([`StoreArgs`], scope and type already the domain's enums), alone or in a [`Call`] whose
    /// [`CallOptions::caller_scope`] is the caller's own scope (default: the operator, `global`).
    ///
    /// Validation (before any I/O): content non-empty, at most [`MAX_CONTENT_BYTES`], no NUL; the key (service
    /// sanitising rule, or auto key from content); tags at most [`MAX_TAGS_BYTES`]; the caller's write
    /// authorisation; federated content, tags and key pass the secret gate (the reference checks content only); the
    /// scope id resolves.
    ///
    /// Errors: [`MemoryError::Disabled`], [`MemoryError::Invalid`], [`MemoryError::Secret`],
    /// [`MemoryError::Unauthorized`], [`MemoryError::Corrupt`] (existing file unparsable; nothing written),
    /// [`MemoryError::PartialWrite`] (file written, index not), I/O and index errors.
    pub fn store(&self, ctx: &TerminalContext, call: impl Into<Call<StoreArgs>>) -> Result<StoreResult, MemoryError> {
        let settings = self.ensure_enabled()?;
        write::store(&self.store, &settings, ctx, call.into(), &self.auto)
    }

    /// The automatic compaction of this process (`memory.compile_mode = model`; see [`AutoCompaction`]): shared by
    /// every clone of this service.
    pub fn auto_compaction(&self) -> AutoCompaction<'_> {
        AutoCompaction { svc: self }
    }

    /// Ranked retrieval (the `memory_recall` tool). `call` is the tool's arguments ([`RecallArgs`]), alone (the
    /// caller's own scopes, no access counted) or in a [`Call`] whose [`CallOptions`] widen it to every project,
    /// session and agent (`scan_all`, operator `--all`) or count an access per returned row (`record_access`; the
    /// MCP tool does, [`CallOptions::TOOL`]). Every argument is validated before any I/O.
    ///
    /// Errors: [`MemoryError::Disabled`]; [`MemoryError::Invalid`] for a bad limit (1..=100) or an over-long query;
    /// index errors.
    pub fn recall(
        &self,
        ctx: &TerminalContext,
        call: impl Into<Call<RecallArgs>>,
    ) -> Result<RecallResult, MemoryError> {
        let call = call.into();
        let plan = recall::plan(&call.args)?;
        let settings = self.ensure_enabled()?;
        recall::recall(&self.store, &settings, ctx, plan, &call)
    }

    /// Forget a memory by key (agent tool). The key uses the service sanitising rule; scope defaults to
    /// `project`; the scope id comes from the caller's context. A missing memory is not an error: the result
    /// has `deleted: false, action: "absent"` (and any stale index row is removed). Every relationship into or
    /// out of the memory is purged either way.
    ///
    /// Errors: [`MemoryError::Disabled`], [`MemoryError::Invalid`], I/O and index errors.
    pub fn forget(&self, ctx: &TerminalContext, req: ForgetArgs) -> Result<ForgetResult, MemoryError> {
        let settings = self.ensure_enabled()?;
        write::forget(&self.store, &settings, ctx, req)
    }

    /// Delete one memory (operator): by key, `key` in `scope` (default project) for the caller's scope id; or the
    /// exact memory (the memory inspector's `d` on the newest entry of a memory, which may be another session's or
    /// agent's). The memory's edges are purged; a missing memory is `action: "absent"`.
    ///
    /// Errors: [`MemoryError::Disabled`]; [`MemoryError::Invalid`] for an unresolvable scope id; I/O and store
    /// errors.
    pub fn delete(&self, ctx: &TerminalContext, target: MemoryTarget) -> Result<ForgetResult, MemoryError> {
        let settings = self.ensure_enabled()?;
        match target {
            MemoryTarget::Key { key, scope } => write::delete(&self.store, &settings, ctx, &key, scope),
            MemoryTarget::Exact(memory) => write::delete_memory(&self.store, ctx, &memory),
        }
    }

    /// Delete every memory of `scope` visible to the caller (its session/agent/project; global and federated
    /// entirely). Returns how many were deleted.
    pub fn clear(&self, ctx: &TerminalContext, scope: Scope) -> Result<usize, MemoryError> {
        let settings = self.ensure_enabled()?;
        write::clear(&self.store, &settings, ctx, scope)
    }

    /// The operator listing: every visible memory, scope precedence first then newest first; with `req.cursor`, the
    /// page after (or before) that memory (keyset paging). Counts an access for each returned row when
    /// `req.record_access` (the default; callers pass `!settings.non_accessing_inspection()` for operator views).
    /// With `memory.lifecycle.enabled`, active supersedes targets carry the transient `lifecycle_status` label
    /// (order and membership unchanged).
    ///
    /// Errors: [`MemoryError::Disabled`]; [`MemoryError::Invalid`] when the cursor's memory is outside the listed
    /// scopes or no longer exists; visibility and store errors.
    pub fn list(&self, ctx: &TerminalContext, req: ListRequest) -> Result<Vec<Memory>, MemoryError> {
        let settings = self.ensure_enabled()?;
        match req.cursor.clone() {
            Some(cursor) => inspect::list_from(&self.store, &settings, ctx, req, &cursor),
            None => inspect::list(&self.store, &settings, ctx, req),
        }
    }

    /// Show one memory (operator): by key, the first match in scope precedence order among every memory (all
    /// projects, sessions and agents), only within the scope when given; or the exact memory. Counts an access when
    /// `req.record_access`; carries the transient lifecycle label like `MemoryService::list`.
    ///
    /// Errors: [`MemoryError::Disabled`]; store errors. `Ok(None)` when no such memory exists.
    pub fn show(&self, ctx: &TerminalContext, req: ShowRequest) -> Result<Option<Memory>, MemoryError> {
        let settings = self.ensure_enabled()?;
        match req.target {
            MemoryTarget::Key { key, scope } => {
                inspect::show(&self.store, &settings, ctx, &key, scope, req.record_access)
            }
            MemoryTarget::Exact(m) => {
                inspect::show_exact(&self.store, &settings, &m.key, m.scope, m.scope_id(), req.record_access)
            }
        }
    }

    /// The relevance explain report (the `cao memory list --query Q --explain` diagnostic).
    ///
    /// Compares default recall (hybrid search, recency order, `limit`) with relevance recall over the same
    /// visibility; never counts an access, never expands related memories. One supersedes snapshot covers both
    /// pools and serves ordering, labels and the built-in injection verdict.
    ///
    /// Errors (checked in this order, before any index read): [`MemoryError::Invalid`] for a blank or over-long
    /// query or a limit outside 1..=100; [`MemoryError::Disabled`] when memory is off;
    /// [`MemoryError::ExplainDisabled`] when `memory.explain_enabled` is false; index errors.
    pub fn explain(&self, ctx: &TerminalContext, req: ExplainRequest) -> Result<ExplainReport, MemoryError> {
        let query = explain::validate(&req)?;
        let settings = self.ensure_enabled()?;
        explain::explain(&self.store, &settings, ctx, &query, &req)
    }

    /// The `<cao-memory>` block for `ctx` (the built-in eligibility registry for the current settings) and, with
    /// `memory.injection.mode` `view` or `both` (unless `req.block_only`), the journal's view after it; with
    /// `req.session_id`, the view is taken as that session's snapshot. `None` when memory is disabled or there is
    /// nothing to inject.
    ///
    /// Errors: [`MemoryError::Invalid`] for a budget outside `1..=`[`MAX_CONTEXT_BUDGET`](crate::MAX_CONTEXT_BUDGET),
    /// a malformed explicit project id or session id; [`MemoryError::Store`] when the store cannot be read.
    pub fn context_block(&self, ctx: &TerminalContext, req: ContextRequest) -> Result<Option<String>, MemoryError> {
        let settings = self.settings();
        let mode = settings.injection_mode();
        let session_id = req.session_id.clone();
        let view_wanted = mode.view() && !req.block_only;
        let block = if mode.block() {
            let registry = eligibility::registry(&self.store, &settings);
            inject::context_block_registry(&self.store, &settings, ctx, req, &registry)?
        } else {
            None
        };
        let view = if view_wanted {
            journal::injected_view(&self.store, &settings, ctx, session_id.as_deref())?
        } else {
            None
        };
        Ok(journal::compose(block, view))
    }

    /// The memory block alone with an explicit [`EligibilityFilter`](cao_ops::inject::EligibilityFilter) (embedders
    /// with eligibility rules of their own; `RegistryFilter` over a registry of sources).
    ///
    /// Errors: as `MemoryService::context_block`.
    pub fn context_block_with(
        &self,
        ctx: &TerminalContext,
        req: ContextRequest,
        filter: &dyn inject::EligibilityFilter,
    ) -> Result<Option<String>, MemoryError> {
        inject::context_block_with(&self.store, &self.settings(), ctx, req, filter)
    }

    /// Remove every expired memory (see the `retention` module for the table and the day rule); with `dry_run`
    /// only report what would be removed: no file, row, `index.md` mark or audit line is written.
    ///
    /// A memory that cannot be removed is reported in [`CleanupReport::failed`] and the run continues.
    ///
    /// Errors: [`MemoryError::Disabled`] (memory switched off: nothing is touched); index errors while listing
    /// the candidates.
    pub fn cleanup(&self, dry_run: bool) -> Result<CleanupReport, MemoryError> {
        self.ensure_enabled()?;
        retention::cleanup(&self.store, dry_run)
    }

    /// Lint the memories the caller sees (`cao memory lint`; see the `lint` module for the detectors, caps and
    /// severities). Read-only. The contradiction pass uses the model of `memory.model.*` (skipped with `none`; a
    /// configuration error is reported as a finding). `progress` hears about each stage.
    ///
    /// Errors: [`MemoryError::Disabled`]; [`MemoryError::Invalid`] for a malformed explicit project id; index and
    /// scan errors.
    pub fn lint(
        &self,
        ctx: &TerminalContext,
        req: LintRequest,
        progress: &dyn Progress,
    ) -> Result<LintReport, MemoryError> {
        let settings = self.ensure_enabled()?;
        match &req.model {
            Some(m) => lint::lint(&self.store, &settings, ctx, &req, Ok(m.model()), progress),
            None => lint::lint_configured(&self.store, &settings, ctx, &req, progress),
        }
    }

    /// Plan (and with `req.apply` carry out) the fixes of lint's findings (`cao memory heal`; see the `heal`
    /// module for the fix of each issue type). The contradiction pass uses the model of `memory.model.*`.
    ///
    /// Errors: [`MemoryError::Disabled`]; [`MemoryError::HealBusy`] when another heal runs (nothing done);
    /// lint's errors. Failed actions are reported in the report.
    pub fn heal(
        &self,
        ctx: &TerminalContext,
        req: HealRequest,
        progress: &dyn Progress,
    ) -> Result<HealReport, MemoryError> {
        let settings = self.ensure_enabled()?;
        match &req.model {
            Some(m) => heal::heal(&self.store, &settings, ctx, &req, Ok(m.model()), progress),
            None => heal::heal_configured(&self.store, &settings, ctx, &req, progress),
        }
    }

    /// Copy this service's whole store into `to`'s (`cao store copy`; see `cao_maint::copy`): memories with every
    /// entry, edges, outcomes, terminals, aliases, journals with their summary lines and snapshots. Idempotent;
    /// with `dry_run` nothing is written and the report counts what would be.
    ///
    /// Errors: a read of either store or a write to `to` failed (running the copy again completes it).
    pub fn copy_store(
        &self,
        to: &MemoryService,
        dry_run: bool,
        progress: &dyn Progress,
    ) -> Result<cao_maint::copy::CopyReport, MemoryError> {
        cao_maint::copy::copy(&self.store, &to.store, dry_run, progress)
    }

    /// Store a vector of the configured embedding model (`memory.embeddings.model_dir`) for every memory lacking
    /// one (`cao memory embed`; see the `backfill` module), reporting progress per memory.
    ///
    /// Errors: [`MemoryError::Disabled`]; [`MemoryError::Invalid`] when no model is configured, it cannot be
    /// loaded or the encoder fails; index errors.
    pub fn embed_backfill(&self, progress: &dyn Progress) -> Result<EmbedReport, MemoryError> {
        let settings = self.ensure_enabled()?;
        self.store.read()?;
        backfill::backfill(&self.store, &settings, progress)
    }

    /// Rewrite topics' entries into one consolidated article each with the model of `memory.model.*` (`cao memory
    /// compact`; see the `compact` module for candidates, caps and the acceptance rules). With the `none`
    /// provider the report says there is nothing to do.
    ///
    /// Errors: [`MemoryError::Disabled`]; [`MemoryError::Invalid`] for a malformed key or a model configuration
    /// error; [`MemoryError::NotFound`] for an unknown key. Per-topic refusals and failures are in the report.
    pub fn compact(
        &self,
        ctx: &TerminalContext,
        req: CompactRequest,
        progress: &dyn Progress,
    ) -> Result<CompactReport, MemoryError> {
        let settings = self.ensure_enabled()?;
        match &req.model {
            Some(m) => compact::compact(&self.store, &settings, ctx, &req, Ok(m.model()), progress),
            None => compact::compact_configured(&self.store, &settings, ctx, &req, progress),
        }
    }

    /// Export one scope as an OKF bundle directory or `.tar.gz` archive (spec 000 "cao memory export"; the rules
    /// are in the `export` module): private scopes only with `include_private`, the project resolved like every
    /// command, every file rendered by `cao-okf` and written only when its bytes change, `prune` for directories.
    /// Reads only the store. `progress` sees the file writes.
    ///
    /// Errors: [`MemoryError::Disabled`], [`MemoryError::PrivateScope`], [`MemoryError::Invalid`] (scope id,
    /// destination), [`MemoryError::Io`], index errors.
    pub fn export(
        &self,
        ctx: &TerminalContext,
        req: &ExportRequest,
        dest: &ExportDestination,
        progress: &dyn Progress,
    ) -> Result<ExportOutcome, MemoryError> {
        let settings = self.ensure_enabled()?;
        export::export(&self.store, &settings, ctx, req, dest, progress)
    }

    /// The `.tar.gz` bytes of an export (the HTTP route: `GET /memory/export`), and its outcome; nothing is
    /// written. Callers that serve it refuse private scopes themselves (pass `include_private: false`).
    ///
    /// Errors: as `MemoryService::export`, without the destination errors.
    pub fn export_archive(
        &self,
        ctx: &TerminalContext,
        req: &ExportRequest,
    ) -> Result<(Vec<u8>, ExportOutcome), MemoryError> {
        let settings = self.ensure_enabled()?;
        export::export_archive(&self.store, &settings, ctx, req)
    }

    /// Import an OKF bundle (a directory or a `.tar.gz` archive) into the global, project or federated scope (spec
    /// 000 "cao memory import"; the rules are in the `import` module): the bundle is untrusted and read within
    /// limits, every topic is planned by `cao-okf` and checked by the same rules as `memory_store`, and a real run
    /// writes through the store's write protocol in batches. A dry run reports exactly what a real run would do and
    /// writes nothing. Per-file problems are rejections in the report, not errors. `progress` sees the writes.
    ///
    /// Errors (nothing written): [`MemoryError::Disabled`], [`MemoryError::Invalid`] (target scope, project),
    /// [`MemoryError::Bundle`] (the bundle refused whole), index errors.
    pub fn import(
        &self,
        ctx: &TerminalContext,
        req: &ImportRequest,
        progress: &dyn Progress,
    ) -> Result<ImportOutcome, MemoryError> {
        let settings = self.ensure_enabled()?;
        import::import(&self.store, &settings, ctx, req, progress)
    }

    /// The live view of a journal (the `memory_view` tool, `cao memory view`; spec 001 "The view"): at most 32 KiB
    /// of lines, oldest first, inside `<memory>` ... `</memory>`. `target` picks the journal: the caller's project by
    /// default (see [`JournalTarget`]).
    ///
    /// Errors: [`MemoryError::Disabled`]; [`MemoryError::Invalid`] for an unknown scope, a malformed container or
    /// an unresolvable project; index errors.
    pub fn view(&self, ctx: &TerminalContext, target: &JournalTarget) -> Result<ViewResult, MemoryError> {
        let settings = self.ensure_enabled()?;
        journal::view(&self.store, &settings, ctx, target)
    }

    /// Zoom into line `id+n` (the `memory_zoom` tool): the two lines it was made from, or with n = 1 the entry whole
    /// and whether that version is current, rewritten, deleted or purged.
    ///
    /// Errors: [`MemoryError::Disabled`]; [`MemoryError::Invalid`] for a malformed address or one beyond the
    /// journal; as `MemoryService::view`.
    pub fn zoom(&self, ctx: &TerminalContext, req: &ZoomRequest) -> Result<ZoomResult, MemoryError> {
        let settings = self.ensure_enabled()?;
        journal::zoom(&self.store, &settings, ctx, req)
    }

    /// Search the caller's current memories by word (the `memory_search` tool): a word in the key counts 3, one in
    /// the body 1, the newer memory wins a tie, top 10, each with its key, first line and the matching line.
    ///
    /// Errors: [`MemoryError::Disabled`]; [`MemoryError::Invalid`] for a query without a word or over 1000 bytes;
    /// index errors.
    pub fn search(&self, ctx: &TerminalContext, req: &SearchArgs) -> Result<SearchResult, MemoryError> {
        let settings = self.ensure_enabled()?;
        journal::search(&self.store, &settings, ctx, req)
    }

    /// Recall advice for a new user message (the `memory_advise` tool and the UserPromptSubmit hook; spec 001
    /// "Relevance from the decision engine"): with `memory.decisions.recall = advise` and a configured model, up to
    /// 3 memories the engine scores at or above `memory.decisions.routing_confidence`, each named once per
    /// conversation. Empty when the feature is off or the engine fails, times out or refuses.
    ///
    /// Errors: [`MemoryError::Disabled`]; [`MemoryError::Invalid`] for a bad conversation id; index errors.
    pub fn advise(
        &self,
        ctx: &TerminalContext,
        req: &AdviseArgs,
    ) -> Result<cao_ops::decisions::AdviseResult, MemoryError> {
        let settings = self.ensure_enabled()?;
        cao_ops::decisions::advise(&self.store, &settings, ctx, req)
    }

    /// A memory's current text (the `memory_read` tool): the first visible memory named `key` (within `scope` when
    /// given), with its newest journal entry.
    ///
    /// Errors: [`MemoryError::Disabled`]; [`MemoryError::Invalid`]; [`MemoryError::NotFound`]; index errors.
    pub fn read(&self, ctx: &TerminalContext, req: &ReadArgs) -> Result<ReadResult, MemoryError> {
        let settings = self.ensure_enabled()?;
        journal::read(&self.store, &settings, ctx, req)
    }

    /// The containers overview: every container holding a memory or a journal (`global`, `federated`, then the
    /// projects), with its memory counts per scope and its journal's counters and view size (see the `overview`
    /// module). Read-only; no access is counted.
    ///
    /// Errors: [`MemoryError::Disabled`]; [`MemoryError::Io`] when the database was removed or replaced; index and
    /// journal errors.
    pub fn containers(&self) -> Result<Vec<ContainerSummary>, MemoryError> {
        self.ensure_enabled()?;
        overview::containers(&self.store)
    }

    /// The versions of the memory `(key, scope, scope_id)` in its container's journal, newest first, at most
    /// `limit`, each whole as zoom shows it (text, status, writer, time), and how many versions it has in all.
    /// `scope_id` is ignored for global and federated. Read-only; no access is counted.
    ///
    /// Errors: [`MemoryError::Disabled`]; [`MemoryError::Invalid`] when a project, session or agent memory has no
    /// scope id; index and journal errors.
    pub fn history(
        &self,
        key: &Key,
        scope: Scope,
        scope_id: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<ZoomedEntry>, usize), MemoryError> {
        self.ensure_enabled()?;
        journal::history(&self.store, key, scope, scope_id, limit)
    }

    /// Purge one memory (spec 001 "Forget"; operators only, no tool reaches it): by key, `key` in `scope` (default
    /// project) for the caller's scope id; or the exact memory (the memory inspector's `x`). Its text is then in no
    /// file of the store: content, row, search entries, every journal version and every summary line that may hold
    /// it, its edges and its audit lines.
    ///
    /// Errors: [`MemoryError::Disabled`]; [`MemoryError::Invalid`]; I/O, store and journal errors.
    pub fn purge(&self, ctx: &TerminalContext, target: MemoryTarget) -> Result<PurgeResult, MemoryError> {
        let settings = self.ensure_enabled()?;
        match target {
            MemoryTarget::Key { key, scope } => journal::purge(&self.store, &settings, ctx, &key, scope),
            MemoryTarget::Exact(memory) => journal::purge_memory(&self.store, ctx, &memory),
        }
    }

    /// The journal as one agent session sees it (its snapshot and reminders; see [`SessionJournal`]).
    pub fn session<'a>(
        &'a self,
        ctx: &'a TerminalContext,
        target: &'a JournalTarget,
        session_id: &'a str,
    ) -> SessionJournal<'a> {
        SessionJournal {
            svc: self,
            ctx,
            target,
            session_id,
        }
    }

    /// One summarizing pass over every journal of the home (long-running processes only): at most two model calls
    /// at a time, shared with other processes through leases. Does nothing when memory is disabled or
    /// `memory.summarize` is off.
    ///
    /// Errors: index and journal errors.
    pub fn summarize_pass(
        &self,
        model: &dyn cao_model::Model,
        worker: &cao_journal::Worker,
    ) -> Result<SummarizeReport, MemoryError> {
        let settings = self.settings();
        if !settings.memory_enabled() || !settings.summarize_enabled() {
            return Ok(SummarizeReport::default());
        }
        journal::summarize_pass(&self.store, model, worker)
    }

    /// Record an outcome reported by the agent `ctx` (the `report_outcome` tool; spec 004 "Phase 1 — outcome
    /// capture"): session and source terminal from the caller, agent profile defaulting to the caller's. See the
    /// `outcomes` module for the rules.
    ///
    /// Errors (in this order): [`MemoryError::Disabled`]; [`MemoryError::LearningDisabled`] before any argument
    /// is looked at; [`MemoryError::CallerUnresolved`] (no session); [`MemoryError::Invalid`] (a field rule); index
    /// errors.
    pub fn report_outcome(
        &self,
        ctx: &TerminalContext,
        req: ReportOutcomeArgs,
    ) -> Result<ReportOutcomeResult, MemoryError> {
        let settings = self.ensure_enabled()?;
        outcomes::record_for_caller(&self.store, &settings, ctx, req)
    }

    /// Record an outcome with every field explicit (operators: `POST /outcomes`).
    ///
    /// Errors: [`MemoryError::Disabled`], [`MemoryError::LearningDisabled`], [`MemoryError::Invalid`] (a rule of the learning loop), index errors.
    pub fn record_outcome(&self, draft: &OutcomeDraft) -> Result<Outcome, MemoryError> {
        let settings = self.ensure_enabled()?;
        outcomes::record(&self.store, &settings, draft)
    }

    /// The outcomes the agent `ctx` may read (the `list_outcomes` tool): of `query.session_name`, else of its own
    /// session, newest first; `disabled` and empty while learning is off.
    ///
    /// Errors: [`MemoryError::Disabled`]; [`MemoryError::CallerUnresolved`] when no session is named or
    /// resolvable (never a cross-session listing); index errors.
    pub fn list_outcomes_for(
        &self,
        ctx: &TerminalContext,
        query: ListOutcomesArgs,
    ) -> Result<OutcomeList, MemoryError> {
        let settings = self.ensure_enabled()?;
        outcomes::list_for_caller(&self.store, &settings, ctx, query)
    }

    /// The outcomes matching `query` (operators: `GET /outcomes`, `cao memory outcomes list`; no filter lists every
    /// session), newest first, at most `limit` (clamped to 1..200, default 50). Empty while learning is off.
    ///
    /// Errors: [`MemoryError::Disabled`]; index errors.
    pub fn list_outcomes(&self, query: &ListOutcomesArgs) -> Result<Vec<Outcome>, MemoryError> {
        let settings = self.ensure_enabled()?;
        outcomes::list(&self.store, &settings, query)
    }

    /// Store a lesson into `req.target_agent_profile`'s agent scope (the `store_lesson` tool; spec 004 "The
    /// retrospector agent"): the caller is resolved from its terminal record only, and another agent's scope
    /// needs the `store_lesson` capability in the caller's profile. See the `lessons` module for the rules.
    ///
    /// Errors: [`MemoryError::Disabled`], [`MemoryError::LearningDisabled`], [`MemoryError::Invalid`]
    /// (a rule of the learning loop), [`MemoryError::Secret`], [`MemoryError::CallerUnresolved`],
    /// [`MemoryError::CapabilityRequired`], and those of `MemoryService::store`.
    pub fn store_lesson(&self, ctx: &TerminalContext, req: StoreLessonArgs) -> Result<StoreResult, MemoryError> {
        let settings = self.ensure_enabled()?;
        lessons::store_lesson(&self.store, &settings, ctx, req)
    }

    /// The learning overview (the operator UI): every agent with a profile, outcomes or lessons, with its outcome,
    /// success and lesson counts. See the `learning` module.
    ///
    /// Errors: [`MemoryError::Disabled`], [`MemoryError::LearningDisabled`], [`MemoryError::Invalid`] (an agent
    /// directory cannot be listed), index errors.
    pub fn learning_agents(&self) -> Result<Vec<AgentSummary>, MemoryError> {
        let settings = self.ensure_enabled()?;
        learning::agents(&self.store, &settings)
    }

    /// `limit` lessons (agent-scope memories) of `agent` from `offset`, most recalled first, each with the
    /// promotion gate's verdict at `min_recalls` (the rule of `MemoryService::promote`), and whether more follow.
    /// Counts no access.
    ///
    /// Errors: [`MemoryError::Disabled`], [`MemoryError::LearningDisabled`], [`MemoryError::Invalid`] (agent name),
    /// index errors.
    pub fn agent_lessons(
        &self,
        agent: &str,
        min_recalls: u32,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<LessonView>, bool), MemoryError> {
        let settings = self.ensure_enabled()?;
        learning::lessons(&self.store, &settings, agent, min_recalls, offset, limit)
    }

    /// Plan (and with `req.apply`, write) the promotion of `req.agent`'s reinforced lessons into its profile's
    /// Learned Patterns block (`cao memory promote`; spec 004 "Phase 2 — instruction promotion"). The dry run
    /// is always allowed; `apply` needs `memory.instruction_promotion_enabled`. See the `promote` module.
    ///
    /// Errors: [`MemoryError::Disabled`], [`MemoryError::PromotionDisabled`], [`MemoryError::ProfileNotFound`],
    /// [`MemoryError::ProfileRefused`], [`MemoryError::Invalid`] (a rule of the learning loop), I/O and index errors.
    pub fn promote(&self, req: &PromoteRequest) -> Result<PromotionReport, MemoryError> {
        let settings = self.ensure_enabled()?;
        promote::promote(&self.store, &settings, req)
    }

    /// The audit log of this home (`<home>/memory/logs/`).
    pub fn audit_log(&self) -> audit::AuditLog {
        audit::log_of(&self.store)
    }

    /// The relationship service over this store's index and clock, recording every change it makes (create,
    /// recompute, promote, reject, soft delete, purge) in the audit log as `actor` (a terminal id, an agent
    /// profile, or `operator`; see [`cao_store::audit::actor_of`]).
    pub fn relationships(&self, actor: &str) -> RelationshipService {
        audit_relationships::relationships(&self.store, actor)
    }

    /// Rewrite every `index.md` whose container changed since its last refresh, from the index. Returns how many
    /// files were written. Safe to call from many processes (index lock per container).
    pub fn flush_index_md(&self) -> Result<usize, MemoryError> {
        self.store.flush_index_md()
    }

    /// Look for changes made to the wiki files outside the tool now (edited, added or removed topic files, a writer
    /// killed between its file write and its index transaction) and bring them into the index; remove the temp files
    /// of dead writers it sees. Every read does this itself, at most once per second per process (see
    /// ARCHITECTURE.md "External edits"); call this to force it (benchmarks, embedders that just wrote files).
    /// Returns what changed; `scanned` counts the files that had to be compared with their rows under their topic
    /// lock (new files, replaced files, files whose stamp is not the one their row recorded).
    ///
    /// Errors: [`MemoryError::Io`] when the database was removed or replaced; scan, lock and index errors.
    pub fn pick_up_changes(&self) -> Result<RepairReport, MemoryError> {
        self.store.ensure_current()?;
        self.store.pick_up_changes()
    }

    /// The state of the store, for a health check (`cao-server`'s `/health`): [`StoreHealth`] `ok`, or `degraded`
    /// with a one-line reason naming the remedy when the database file was removed or replaced after this service
    /// opened it, the index cannot be read, or the memory directory is gone. Cheap (two `stat`s and one indexed
    /// query); reads no setting and changes nothing.
    pub fn health(&self) -> StoreHealth {
        self.store.health()
    }

    /// Rebuild the index from the wiki files and report what changed: rows for files without one are added,
    /// rows that disagree with their file (content, type, tags, entry count, times, path) are updated, rows whose
    /// file is gone are removed; unparsable files are reported and left alone. Existing access counts and ids
    /// (including rows written by the reference implementation) are kept. Every `index.md` is rewritten. Temp files
    /// of writers that are gone are removed ([`cao_store::sweep_temp_files`]).
    pub fn repair(&self) -> Result<RepairReport, MemoryError> {
        self.store.repair()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cao_core::{FixedClock, Key};
    use chrono::{DateTime, TimeZone, Utc};

    fn at(secs: i64, millis: u32) -> DateTime<Utc> {
        Utc.timestamp_opt(1_700_000_000 + secs, millis * 1_000_000)
            .single()
            .expect("valid instant")
    }

    fn ctx() -> TerminalContext {
        TerminalContext {
            project_id: Some("p".into()),
            ..Default::default()
        }
    }

    /// The pre-filter must not change what is counted: the 60-second rule at its boundary, checked through recall.
    #[test]
    fn recall_counts_accesses_by_the_sixty_second_rule() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(FixedClock::new(at(0, 0)));
        let svc = MemoryService::open_with(CaoHome::new(dir.path()), Settings::default(), clock.clone()).expect("open");
        svc.store(
            &ctx(),
            StoreArgs {
                content: "the build uses cargo xtask".into(),
                key: Some("build".into()),
                ..Default::default()
            },
        )
        .expect("store");
        let key = Key::sanitize("build").expect("key");
        let count = || {
            svc.recall(
                &ctx(),
                crate::Call::new(
                    RecallArgs {
                        query: Some("cargo".into()),
                        ..Default::default()
                    },
                    crate::CallOptions {
                        record_access: true,
                        ..Default::default()
                    },
                ),
            )
            .expect("recall");
            svc.storage()
                .snapshot()
                .get(Scope::Project, Some("p"), &key)
                .expect("get")
                .expect("row")
                .access_count
        };
        clock.set(at(10, 0));
        assert_eq!(count(), 1, "first access counts");
        clock.set(at(40, 0));
        assert_eq!(count(), 1, "30 s later: not due");
        clock.set(at(69, 500));
        assert_eq!(count(), 1, "59.5 s later: inside the margin, the index still refuses");
        clock.set(at(70, 0));
        assert_eq!(count(), 2, "60 s later: counted");
        clock.set(at(71, 0));
        assert_eq!(count(), 2, "1 s after that: not due");
    }

    #[test]
    fn with_settings_replaces_the_per_call_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = CaoHome::new(dir.path());
        let svc = MemoryService::open(home.clone()).expect("open");
        let req = || RecallArgs {
            query: Some("anything".into()),
            ..Default::default()
        };
        let off = Settings::from_value(serde_json::json!({"memory": {"enabled": false}}));
        assert!(matches!(
            svc.with_settings(off).recall(&ctx(), req()),
            Err(MemoryError::Disabled)
        ));
        assert!(
            svc.recall(&ctx(), req()).is_ok(),
            "the service itself still reads settings.json"
        );
        std::fs::write(home.settings_path(), r#"{"memory": {"enabled": false}}"#).expect("write settings");
        assert!(matches!(svc.recall(&ctx(), req()), Err(MemoryError::Disabled)));
        let on = svc.with_settings(Settings::from_value(serde_json::json!({})));
        assert!(
            on.recall(&ctx(), req()).is_ok(),
            "the loaded settings are used, not the file"
        );
    }
}

/// The automatic compaction of one process (from [`MemoryService::auto_compaction`]): long-running processes
/// (`cao-server`, `cao-mcp-server`) enable it, one-shot commands never do. Once enabled, a store to a topic with two
/// or more entries since its last compaction queues it (bounded, coalesced); one worker of the process calls
/// [`AutoCompaction::next`] in a loop.
#[derive(Debug, Clone, Copy)]
pub struct AutoCompaction<'a> {
    svc: &'a MemoryService,
}

impl AutoCompaction<'_> {
    /// Let this process compact updated topics in the background, from now on.
    pub fn enable(&self) {
        self.svc.auto.enable();
    }

    /// Stop (shutdown): nothing more is queued, the topics still waiting are dropped (their number is returned) and
    /// a worker waiting in [`AutoCompaction::next`] returns [`AutoCompactStep::Closed`] at once.
    pub fn close(&self) -> usize {
        self.svc.auto.close()
    }

    /// Drop the topics waiting (the worker has no usable model); returns how many.
    pub fn clear(&self) -> usize {
        self.svc.auto.clear()
    }

    /// How many topics wait.
    pub fn waiting(&self) -> usize {
        self.svc.auto.len()
    }

    /// The worker's step: wait at most `wait` for a queued topic, then compact it with `model` through the same
    /// validated path as `cao memory compact` (any refusal or failure leaves the topic unchanged and is logged to
    /// stderr). Blocking (a model call, bounded by its timeout). Nothing is compacted while memory is disabled or
    /// `memory.compile_mode` is `off` (a topic taken then is dropped).
    pub fn next(&self, model: &dyn cao_model::Model, wait: std::time::Duration) -> AutoCompactStep {
        let settings = self.svc.settings();
        self.svc.store.note_settings(&settings);
        cao_maint::auto_compact::next(&self.svc.store, &self.svc.auto, &settings, model, wait)
    }
}

/// The journal as one agent session sees it (from [`MemoryService::session`]): the view it took (spec 001 "When the
/// view changes": taken when a session starts and at each rebuild) and the reminder of what changed since.
#[derive(Debug, Clone, Copy)]
pub struct SessionJournal<'a> {
    svc: &'a MemoryService,
    ctx: &'a TerminalContext,
    target: &'a JournalTarget,
    session_id: &'a str,
}

impl SessionJournal<'_> {
    /// Take the view of the target's journal and record it as the session's snapshot.
    ///
    /// Errors: [`MemoryError::Disabled`]; [`MemoryError::Invalid`] for a malformed session id (empty, over 256
    /// bytes, control characters) or target; store and journal errors.
    pub fn take_snapshot(&self) -> Result<SessionSnapshot, MemoryError> {
        let settings = self.svc.ensure_enabled()?;
        journal::take_snapshot(&self.svc.store, &settings, self.ctx, self.target, self.session_id)
    }

    /// Record an empty snapshot covering no entry (a session that started before its store existed: every entry
    /// then reaches it as a reminder).
    ///
    /// Errors: as [`SessionJournal::take_snapshot`].
    pub fn record_empty_snapshot(&self) -> Result<(), MemoryError> {
        let settings = self.svc.ensure_enabled()?;
        journal::record_empty_snapshot(&self.svc.store, &settings, self.ctx, self.target, self.session_id)
    }

    /// The `# Memory updated` reminder of the entries appended since the session's snapshot that it has not been
    /// told about (each entry once per snapshot), leaving out the entries `exclude` matches (its own writes).
    /// `None` when there is nothing new.
    ///
    /// Errors: as [`SessionJournal::take_snapshot`].
    pub fn reminder(&self, exclude: Option<&cao_journal::WriterFilter>) -> Result<Option<String>, MemoryError> {
        let settings = self.svc.ensure_enabled()?;
        journal::reminder(
            &self.svc.store,
            &settings,
            self.ctx,
            self.target,
            self.session_id,
            exclude,
        )
    }
}
