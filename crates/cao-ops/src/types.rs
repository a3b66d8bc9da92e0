//! Request and result shapes of the service. A tool's arguments are its `cao_protocol` type (enumerated fields are
//! the domain's enums, parsed where strings arrive: `cao_protocol::ToolCall::parse`, the CLI's flags); every other
//! rule is checked by the service before any I/O. Results serialise to the payloads of spec/reference-facts.md
//! "MCP payloads".

use cao_core::{Key, MemoryRef, MemoryType, Scope};
use cao_store::MemoryRow;
use chrono::{DateTime, Utc};
use serde::Serialize;

/// Upper bound on content size in bytes (UTF-8). Larger content is rejected before any I/O. The reference has
/// no limit; 64 KiB is far above a 1-2 sentence memory and keeps files, rows and injection blocks bounded.
pub const MAX_CONTENT_BYTES: usize = cao_store::MAX_CONTENT_BYTES;

/// Upper bound on the tag string in bytes after normalisation.
pub const MAX_TAGS_BYTES: usize = 1024;

/// Default and bounds of `limit` for recall (spec 000 "memory_recall": default 10, max 100).
pub const DEFAULT_RECALL_LIMIT: i64 = 10;
/// The largest accepted recall limit.
pub const MAX_RECALL_LIMIT: i64 = 100;

pub use cao_core::{SearchMode, SortBy};
pub use cao_protocol::{
    AdviseArgs, ForgetArgs, ListOutcomesArgs, ReadArgs, RecallArgs, ReportOutcomeArgs, SearchArgs, StoreArgs,
    StoreLessonArgs, ViewArgs, ZoomArgs,
};

/// What a call carries besides its tool's arguments: who is asking and how far a read reaches. The tools'
/// arguments are `cao_protocol`'s types (the same for the MCP tool list, the owner's internal routes, the remote
/// client and the service); these options are never tool arguments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallOptions {
    /// The caller's own scope for the write-authorisation rule of a store (`cao_core::scope::scope_write_allowed`);
    /// `None` is the operator (`global`), as the reference server passes no caller scope.
    pub caller_scope: Option<Scope>,
    /// A recall sees every project, session and agent (operator `--all`), not only the caller's.
    pub scan_all: bool,
    /// A recall counts an access for each returned primary row (at most once per 60 s per row).
    pub record_access: bool,
}

impl CallOptions {
    /// The options of an agent's tool call: the operator's write authorisation (the reference passes no caller
    /// scope), only the caller's own project, session and agent, and recall counts accesses (spec 000
    /// "memory_recall").
    pub const TOOL: CallOptions = CallOptions {
        caller_scope: None,
        scan_all: false,
        record_access: true,
    };
}

/// A tool's typed arguments with the [`CallOptions`] of the call. Any argument type converts into a call with the
/// default options (operator authorisation, the caller's own scopes, no access counted), so
/// `svc.recall(&ctx, RecallArgs { .. })` reads without counting.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Call<A> {
    /// The tool's arguments.
    pub args: A,
    /// Everything else about the call.
    pub options: CallOptions,
}

impl<A> Call<A> {
    /// `args` with `options`.
    pub fn new(args: A, options: CallOptions) -> Self {
        Call { args, options }
    }

    /// `args` as an agent's tool call ([`CallOptions::TOOL`]).
    pub fn tool(args: A) -> Self {
        Call::new(args, CallOptions::TOOL)
    }
}

impl<A> From<A> for Call<A> {
    /// `args` with the default [`CallOptions`].
    fn from(args: A) -> Self {
        Call::new(args, CallOptions::default())
    }
}

/// Arguments of the operator listing (`cao memory list`). The default lists the current scopes, 100 rows, and
/// counts an access for each (`record_access: true`, the reference behaviour).
#[derive(Debug, Clone)]
pub struct ListRequest {
    /// Restrict to one scope.
    pub scope: Option<Scope>,
    /// Restrict to one type.
    pub memory_type: Option<MemoryType>,
    /// Every project, session and agent, not only the current ones.
    pub all: bool,
    /// Maximum rows; default 100 (`usize::MAX`: every row).
    pub limit: Option<usize>,
    /// Rows of the full order skipped before the first returned one (paging: the second page of 100 is
    /// `offset: 100`); default 0.
    pub offset: usize,
    /// Count an access for each returned row; default true. Operator views pass
    /// `!settings.non_accessing_inspection()` (spec 000 "Non-accessing operator inspection").
    pub record_access: bool,
    /// Keyset paging (the operator UI's next and previous pages): `limit` memories after this memory, or before it
    /// with `before`, in the listing's order; `offset` is then ignored. A page costs what the first page costs,
    /// however deep.
    pub cursor: Option<cao_store::visibility::ListCursor>,
}

impl Default for ListRequest {
    fn default() -> Self {
        ListRequest {
            scope: None,
            memory_type: None,
            all: false,
            limit: None,
            offset: 0,
            record_access: true,
            cursor: None,
        }
    }
}

/// One memory as the service returns it to operators (CLI, HTTP).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Memory {
    /// The index row id.
    pub id: String,
    /// The key.
    pub key: String,
    /// Current content: the text of the newest entry.
    pub content: String,
    /// The type label.
    pub memory_type: MemoryType,
    /// The scope.
    pub scope: Scope,
    /// The scope id (`None` for global and federated).
    pub scope_id: Option<String>,
    /// Normalised tags csv.
    pub tags: String,
    /// Absolute path of the topic file.
    pub file_path: String,
    /// First entry's time; serialised `YYYY-MM-DDTHH:MM:SSZ` ([`cao_core::time::serde_ts`]).
    #[serde(serialize_with = "cao_core::time::serde_ts")]
    pub created_at: DateTime<Utc>,
    /// Last write time; serialised `YYYY-MM-DDTHH:MM:SSZ`.
    #[serde(serialize_with = "cao_core::time::serde_ts")]
    pub updated_at: DateTime<Utc>,
    /// Recall count (bumped at most once per 60 s).
    pub access_count: i64,
    /// Number of `## <ts>` entries in the file.
    pub entry_count: i64,
    /// True for entries added by `include_related` expansion.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_related: bool,
    /// Transient lifecycle label (only with `memory.lifecycle.enabled`); serialised only when set and never written
    /// to files or rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifecycle_status: Option<LifecycleStatus>,
}

/// The operator view of an index row (not related, no lifecycle label).
pub fn row_to_memory(r: &MemoryRow) -> Memory {
    Memory {
        id: r.id.clone(),
        key: r.key.to_string(),
        content: r.content.clone(),
        memory_type: r.memory_type,
        scope: r.scope,
        scope_id: r.scope_id.clone(),
        tags: r.tags.clone(),
        file_path: r.file_path.clone(),
        created_at: r.created_at,
        updated_at: r.updated_at,
        access_count: r.access_count,
        entry_count: r.entry_count,
        is_related: false,
        lifecycle_status: None,
    }
}

pub use cao_protocol::{
    ForgetResult, IndexFreshness, LifecycleStatus, PossibleDuplicate, RecallResult, RecalledMemory, StoreResult,
};

impl From<&Memory> for RecalledMemory {
    /// The recall payload's view of a memory.
    fn from(m: &Memory) -> Self {
        Self {
            key: m.key.clone(),
            content: m.content.clone(),
            memory_type: m.memory_type,
            scope: m.scope,
            tags: m.tags.clone(),
            file_path: m.file_path.clone(),
            updated_at: cao_core::time::format_ts(m.updated_at),
            lifecycle_status: m.lifecycle_status,
            source_kind: None,
            source_path: None,
            indexed_at: None,
            index_freshness: None,
        }
    }
}

pub use cao_store::visibility::ListCursor;
pub use cao_store::{HealthStatus, NoProgress, Progress, RepairReport, StoreHealth};

/// Which memory an operator call acts on (delete, purge, show).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryTarget {
    /// By key, resolved by the call's own rule: for delete and purge, `key` in `scope` (default project) for the
    /// caller's scope id; for show, the first memory named `key` in scope precedence order among every memory (all
    /// projects, sessions and agents), only within `scope` when given.
    Key {
        /// The key.
        key: Key,
        /// The scope (`None`: the call's default).
        scope: Option<Scope>,
    },
    /// Exactly this memory (operator views that name a scope id; the memory inspector, which acts on the memory of
    /// the entry it shows, perhaps another session's or agent's).
    Exact(MemoryRef),
}

impl MemoryTarget {
    /// [`MemoryTarget::Key`] of `key` in `scope`.
    pub fn key(key: &Key, scope: Option<Scope>) -> Self {
        MemoryTarget::Key {
            key: key.clone(),
            scope,
        }
    }
}

/// Arguments of `MemoryService::show`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShowRequest {
    /// The memory.
    pub target: MemoryTarget,
    /// Count an access (agent-facing reads do; operator views pass `!settings.non_accessing_inspection()`, spec 000
    /// "Non-accessing operator inspection").
    pub record_access: bool,
}

impl ShowRequest {
    /// Show the first memory named `key` (in `scope` when given), counting an access.
    pub fn key(key: &Key, scope: Option<Scope>) -> Self {
        ShowRequest {
            target: MemoryTarget::key(key, scope),
            record_access: true,
        }
    }
}
