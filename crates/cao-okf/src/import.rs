//! Import planning: from a bundle (relative path -> bytes) and the state of the target scope, what a run of
//! `cao memory import` writes, skips and rejects, file by file, and the report it prints. Pure: the pipeline
//! gathers the files and the existing keys, then executes the plan through the store (spec 000
//! "cao memory import"; spec/reference-facts.md "OKF bundles"; conformance `okf_import.json`).
//!
//! # Per file, in the reference's order ([`plan_file`])
//! 1. The path must be a safe bundle path ([`crate::path::validate_bundle_path`]); a path seen before is rejected.
//! 2. Not `*.md`, a file named `index.md` / `manifest.md`, or under `history/`: ignored (not counted).
//! 3. A symlink (or anything the pipeline found escaping the bundle): rejected. A nested path: rejected. The stem
//!    must survive [`cao_core::Key::sanitize`] unchanged. A directory or device named `*.md`: rejected. A file
//!    the reader did not read because it is over its per-file cap ([`EntryKind::TooLarge`]): rejected.
//! 4. The bytes must be UTF-8; a leading byte order mark is dropped; `\r\n` and `\r` become `\n` (Python's
//!    universal newlines).
//! 5. Frontmatter ([`crate::frontmatter`]): required, must parse, must carry a non-null `type` (an unknown or
//!    non-string type becomes `reference`, noted as a [`FileNotice`]); `tags` a list or a csv string; a
//!    timestamp-shaped but impossible `timestamp` rejects the file (PyYAML fails to load it), one that is no date
//!    and time is ignored (noted).
//! 6. Body ([`import_body`]): `## See Also` blocks dropped (their link lines counted), lines carrying a
//!    `## <timestamp>` or `<!-- id:` marker escaped as the reference does, a leading `# <key>` line dropped,
//!    stripped.
//! 7. Federated target: the body, then the tags, then the key go through [`cao_core::secret::scan`]; a hit
//!    rejects the file naming the pattern (our store checks all three; the reference's import the body).
//! 8. The key exists and the policy is skip: skipped (counted as `skipped_conflict`).
//! 9. An empty body is rejected (our store refuses empty content; the reference would store an empty entry).
//! 10. Timestamp: the frontmatter time is the entry time unless it is after `now`, or (merge into an existing
//!     topic only) before that topic's latest entry; then the entry is recorded at `now` and its content starts
//!     with `_Originally recorded: <ts>_` and a newline ([`clamp`]). Without a usable timestamp: `now`.
//! 11. The write: `imported` (new key), `replaced` (forget, then store), or `merged` (append an entry; the type and
//!     tags become the imported ones, as every store does).
//!
//! `see_also_dropped` and `bodies_escaped` count every file that reached step 6, even if it is rejected or
//! skipped later, exactly as the reference counts them.
//!
//! A dry run executes nothing and reports this plan; a real run executes it. If the store then refuses a
//! planned write (content over its size limit, ...), the pipeline records that with
//! [`FilePlan::reject_after_planning`] and rebuilds the report with [`ImportReport::from_plans`].

use crate::error::OkfError;
use crate::frontmatter::{self, FrontmatterError, TagsField, Timestamp, TypeField};
use crate::path::{BundlePathKind, PathError, classify_bundle_path, validate_bundle_path};
use crate::pytext;
use cao_core::key::normalize_tags;
use cao_core::time::{format_ts, truncate_secs};
use cao_core::{Key, MemoryType, Scope};
use chrono::{DateTime, Utc};
use regex::Regex;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::str::FromStr;
use std::sync::LazyLock;

/// What an import does when a bundle topic's key already exists in the target scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConflictPolicy {
    /// Leave the existing memory alone (the default).
    #[default]
    Skip,
    /// Forget the existing memory, then store the imported one as new.
    Replace,
    /// Append the imported entry to the existing memory.
    Merge,
}

impl ConflictPolicy {
    /// The CLI spelling: `skip`, `replace` or `merge`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConflictPolicy::Skip => "skip",
            ConflictPolicy::Replace => "replace",
            ConflictPolicy::Merge => "merge",
        }
    }
}

impl fmt::Display for ConflictPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ConflictPolicy {
    type Err = OkfError;
    /// `skip`, `replace` or `merge` exactly; anything else is [`OkfError::ConflictPolicy`].
    fn from_str(s: &str) -> Result<Self, OkfError> {
        match s {
            "skip" => Ok(ConflictPolicy::Skip),
            "replace" => Ok(ConflictPolicy::Replace),
            "merge" => Ok(ConflictPolicy::Merge),
            other => Err(OkfError::ConflictPolicy(other.chars().take(40).collect())),
        }
    }
}

/// Check an import's target scope: only global, project and federated may be imported into (the private
/// session and agent tiers never are). The pipeline calls this before reading anything.
///
/// Errors: [`OkfError::ImportScope`].
pub fn check_import_scope(scope: Scope) -> Result<(), OkfError> {
    match scope {
        Scope::Global | Scope::Project | Scope::Federated => Ok(()),
        other => Err(OkfError::ImportScope(other)),
    }
}

/// The parameters of one import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportOptions {
    /// Target scope (checked by [`check_import_scope`]).
    pub target_scope: Scope,
    /// The resolved scope id of the target (the project id for project scope), echoed in the report only.
    pub target_scope_id: Option<String>,
    /// Conflict policy.
    pub conflict: ConflictPolicy,
    /// Whether this is a dry run, echoed in the report only: the plan is the same either way.
    pub dry_run: bool,
    /// The import time (UTC): the entry time of topics without a usable timestamp and the clamp bound.
    pub now: DateTime<Utc>,
}

/// The target scope's current topics, as far as an import needs them: which keys exist and the time of each
/// one's latest entry.
pub trait ExistingTopics {
    /// The latest entry time of `key` in the target scope, or `None` when the key does not exist there.
    fn latest_entry(&self, key: &Key) -> Option<DateTime<Utc>>;
}

impl ExistingTopics for BTreeMap<Key, DateTime<Utc>> {
    fn latest_entry(&self, key: &Key) -> Option<DateTime<Utc>> {
        self.get(key).copied()
    }
}

impl<S: std::hash::BuildHasher> ExistingTopics for HashMap<Key, DateTime<Utc>, S> {
    fn latest_entry(&self, key: &Key) -> Option<DateTime<Utc>> {
        self.get(key).copied()
    }
}

/// What the pipeline found at a bundle path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind<'a> {
    /// A regular file and its bytes.
    File(&'a [u8]),
    /// A symbolic link, a hard link to elsewhere, or a path that resolves outside the bundle root.
    Link,
    /// A directory, device, fifo or socket.
    NotRegular,
    /// A regular file larger than the reader's per-file cap (its size in bytes): its bytes were not read.
    TooLarge(u64),
}

/// One path of a bundle as the pipeline found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BundleEntry<'a> {
    /// The raw relative path (a directory walk's or a tar entry's name), checked by [`validate_bundle_path`].
    pub path: &'a [u8],
    /// What is there.
    pub kind: EntryKind<'a>,
}

/// Why a bundle path is not read at all (not reported, not counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IgnoreReason {
    /// The name does not end in `.md`.
    NotMarkdown,
    /// A file named `index.md` or `manifest.md`.
    Reserved,
    /// Under `history/`.
    History,
}

/// Why a bundle file is rejected (reported with its path; counted as `rejected`). Display texts never contain
/// file content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RejectReason {
    /// The path is unsafe or unusable.
    InvalidPath(PathError),
    /// The same path appeared earlier in the bundle (a tar can repeat a name).
    Duplicate,
    /// A symlink or a path escaping the bundle root.
    Link,
    /// A topic below the bundle root.
    Nested,
    /// The file stem is not a key that survives the key rules unchanged.
    StemNotKey,
    /// A directory or special file with a `.md` name.
    NotRegular,
    /// The file is larger than the bundle reader reads (its size in bytes); nothing of it was read.
    TooLarge(u64),
    /// The bytes are not UTF-8 (byte offset of the first invalid sequence).
    NotUtf8(usize),
    /// No `---` frontmatter block.
    NoFrontmatter,
    /// The frontmatter could not be read.
    Frontmatter(FrontmatterError),
    /// The frontmatter has no (or a null) `type`.
    MissingType,
    /// The `tags` text is larger than [`frontmatter::MAX_FRONTMATTER_BYTES`].
    TagsTooLarge,
    /// The `timestamp` looks like a timestamp but is not a valid date and time.
    InvalidTimestamp,
    /// Nothing is left of the body.
    EmptyBody,
    /// Federated target and a secret pattern matched (its name).
    Secret(&'static str),
    /// The store refused the planned write (set by the pipeline; the store's message).
    Store(String),
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RejectReason::InvalidPath(e) => write!(f, "unsafe path: {e}"),
            RejectReason::Duplicate => f.write_str("the path appears more than once in the bundle"),
            RejectReason::Link => f.write_str("symlink or path escaping the bundle root"),
            RejectReason::Nested => {
                f.write_str("nested topic paths are not supported; place topics in the bundle root")
            }
            RejectReason::StemNotKey => {
                f.write_str("filename stem fails key sanitizer round-trip (keys are [a-z0-9-], at most 60)")
            }
            RejectReason::NotRegular => f.write_str("not a regular file"),
            RejectReason::TooLarge(size) => write!(f, "the file is too large to be a topic ({size} bytes)"),
            RejectReason::NotUtf8(at) => write!(f, "not valid UTF-8 (at byte {at})"),
            RejectReason::NoFrontmatter => {
                f.write_str("no frontmatter: the file must start with a `---` block carrying `type`")
            }
            RejectReason::Frontmatter(e) => write!(f, "{e}"),
            RejectReason::MissingType => f.write_str("missing required frontmatter key: type"),
            RejectReason::TagsTooLarge => write!(
                f,
                "frontmatter tags are larger than {} bytes",
                frontmatter::MAX_FRONTMATTER_BYTES
            ),
            RejectReason::InvalidTimestamp => f.write_str("frontmatter timestamp is not a valid date and time"),
            RejectReason::EmptyBody => f.write_str("the body is empty"),
            RejectReason::Secret(name) => write!(f, "matched credential pattern '{name}'"),
            RejectReason::Store(msg) => f.write_str(msg),
        }
    }
}

/// How a planned topic is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteAction {
    /// The key is new in the target scope.
    Import,
    /// The key exists: forget it, then store the imported topic as new.
    Replace,
    /// The key exists: append the imported entry.
    Merge,
}

/// One topic write that the import will perform through the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedWrite {
    /// The key (the file stem).
    pub key: Key,
    /// The memory type (`reference` when the frontmatter's type is unknown).
    pub memory_type: MemoryType,
    /// The tags csv, normalised as the store normalises it.
    pub tags: String,
    /// The entry content to store (with the `_Originally recorded: <ts>_` line when clamped).
    pub content: String,
    /// The entry heading time (whole seconds).
    pub entry_time: DateTime<Utc>,
    /// New, replace or merge.
    pub action: WriteAction,
    /// The frontmatter timestamp when it was clamped (the entry is then at the import time), else `None`.
    pub clamped_from: Option<DateTime<Utc>>,
}

/// What the import does with one bundle path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOutcome {
    /// Not read.
    Ignored(IgnoreReason),
    /// Refused, with the reason.
    Rejected(RejectReason),
    /// The key exists and the policy is skip.
    SkippedConflict(Key),
    /// Written through the store.
    Write(PlannedWrite),
}

/// The plan for one bundle path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePlan {
    /// The bundle path (normalised when valid; a lossy rendering of the raw bytes otherwise).
    pub path: String,
    /// Link lines dropped from `## See Also` blocks of this file.
    pub see_also_dropped: usize,
    /// Whether a structural marker line of this file was escaped.
    pub body_escaped: bool,
    /// What the import changed silently in this file, to report ([`FileNotice`]); empty for most files.
    pub notices: Vec<FileNotice>,
    /// The outcome.
    pub outcome: FileOutcome,
}

/// Something an import does to a file that it writes without refusing it, named in the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileNotice {
    /// The frontmatter's `type` is a string that is no memory type (`admin`): stored as `reference`, as the
    /// reference does.
    UnknownType,
    /// The frontmatter's `type` is not a string (`[project]`, a number, a map): stored as `reference`.
    TypeNotText,
    /// The frontmatter's `timestamp` is not a date and time (`last tuesday`, a date alone): the entry is recorded at
    /// the import time, as the reference does.
    TimestampIgnored,
}

impl fmt::Display for FileNotice {
    /// One line naming the rule, never the file's content.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileNotice::UnknownType => {
                "frontmatter type is not project, user, feedback or reference: stored as reference"
            }
            FileNotice::TypeNotText => "frontmatter type is not a string: stored as reference",
            FileNotice::TimestampIgnored => {
                "frontmatter timestamp is not a date and time: the entry is recorded at the import time"
            }
        })
    }
}

impl FilePlan {
    fn with(path: String, outcome: FileOutcome) -> FilePlan {
        FilePlan {
            path,
            see_also_dropped: 0,
            body_escaped: false,
            notices: Vec::new(),
            outcome,
        }
    }

    /// Turn a planned merge into a skipped conflict because the topic already holds an entry with the same text
    /// ([`same_entry_text`]): importing one bundle again with `--conflict merge` appends nothing, so a periodic
    /// sync does not grow every topic (the reference appends a duplicate each time; docs/conformance.md). No
    /// effect on other outcomes.
    pub fn skip_present_merge(&mut self) {
        if let FileOutcome::Write(w) = &self.outcome
            && w.action == WriteAction::Merge
        {
            self.outcome = FileOutcome::SkippedConflict(w.key.clone());
        }
    }

    /// Turn a planned write into a rejection because the store refused it (`message` must not contain content).
    /// The file's See Also and escape counts stay, as in the reference. No effect on other outcomes.
    pub fn reject_after_planning(&mut self, message: impl Into<String>) {
        if matches!(self.outcome, FileOutcome::Write(_)) {
            self.outcome = FileOutcome::Rejected(RejectReason::Store(message.into()));
        }
    }
}

/// The import report, with the reference's field names (`ImportReport` of the reference's archive backend).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct ImportReport {
    /// Topics written under new keys.
    pub imported: usize,
    /// Existing keys skipped under the skip policy.
    pub skipped_conflict: usize,
    /// Existing keys replaced.
    pub replaced: usize,
    /// Existing keys merged into.
    pub merged: usize,
    /// Files rejected (each also in `errors`).
    pub rejected: usize,
    /// Link lines dropped from `## See Also` blocks.
    pub see_also_dropped: usize,
    /// Files with at least one escaped structural marker line.
    pub bodies_escaped: usize,
    /// Written topics whose timestamp was clamped.
    pub timestamps_clamped: usize,
    /// Written topics whose frontmatter `type` was unknown or not a string, stored as `reference`
    /// ([`FileNotice::UnknownType`], [`FileNotice::TypeNotText`]; each also in `notices`).
    pub types_defaulted: usize,
    /// Written topics whose frontmatter `timestamp` was not a date and time, recorded at the import time
    /// ([`FileNotice::TimestampIgnored`]; each also in `notices`).
    pub timestamps_ignored: usize,
    /// Written bundle path -> what the import changed silently in it (the [`FileNotice`]s, joined with `; `).
    pub notices: BTreeMap<String, String>,
    /// Written topics already past the target scope's retention horizon at import time (their entry time is
    /// older than it), which the next retention cleanup removes. The bundle format knows no retention: the store
    /// that runs the import counts them; [`ImportReport::from_plans`] leaves 0.
    pub past_retention: usize,
    /// Rejected bundle path -> reason.
    pub errors: BTreeMap<String, String>,
    /// The target scope.
    pub target_scope: String,
    /// The target's resolved scope id, if any.
    pub target_scope_id: Option<String>,
    /// Whether nothing was written.
    pub dry_run: bool,
}

impl ImportReport {
    /// The report of a set of file plans (ignored files count nowhere).
    pub fn from_plans(opts: &ImportOptions, plans: &[FilePlan]) -> ImportReport {
        let mut r = ImportReport {
            target_scope: opts.target_scope.to_string(),
            target_scope_id: opts.target_scope_id.clone(),
            dry_run: opts.dry_run,
            ..ImportReport::default()
        };
        for p in plans {
            r.see_also_dropped += p.see_also_dropped;
            r.bodies_escaped += usize::from(p.body_escaped);
            match &p.outcome {
                FileOutcome::Ignored(_) => {}
                FileOutcome::Rejected(reason) => {
                    r.rejected += 1;
                    r.errors.insert(p.path.clone(), reason.to_string());
                }
                FileOutcome::SkippedConflict(_) => r.skipped_conflict += 1,
                FileOutcome::Write(w) => {
                    r.timestamps_clamped += usize::from(w.clamped_from.is_some());
                    let has = |n: FileNotice| p.notices.contains(&n);
                    r.types_defaulted += usize::from(has(FileNotice::UnknownType) || has(FileNotice::TypeNotText));
                    r.timestamps_ignored += usize::from(has(FileNotice::TimestampIgnored));
                    if !p.notices.is_empty() {
                        let lines: Vec<String> = p.notices.iter().map(ToString::to_string).collect();
                        r.notices.insert(p.path.clone(), lines.join("; "));
                    }
                    match w.action {
                        WriteAction::Import => r.imported += 1,
                        WriteAction::Replace => r.replaced += 1,
                        WriteAction::Merge => r.merged += 1,
                    }
                }
            }
        }
        r
    }
}

/// A whole import plan: one [`FilePlan`] per bundle path, in path order, and its report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportPlan {
    /// Per-path plans, sorted by path segments (the reference's `sorted(rglob(...))` order).
    pub files: Vec<FilePlan>,
    /// The report these plans give.
    pub report: ImportReport,
}

impl ImportPlan {
    /// The writes to perform, in order.
    pub fn writes(&self) -> impl Iterator<Item = &PlannedWrite> {
        self.files.iter().filter_map(|f| match &f.outcome {
            FileOutcome::Write(w) => Some(w),
            _ => None,
        })
    }
}

/// Whether a stored entry and a planned entry carry the same text: compared trimmed, each without a leading
/// `_Originally recorded: <ts>_` line (a re-import of an old entry is clamped again, with another `now`).
pub fn same_entry_text(stored: &str, planned: &str) -> bool {
    fn core(text: &str) -> &str {
        let t = text.trim();
        match t.split_once('\n') {
            Some((first, rest)) if first.starts_with("_Originally recorded: ") && first.ends_with('_') => rest.trim(),
            _ => t,
        }
    }
    core(stored) == core(planned)
}

/// Plan a whole bundle (rules in the module docs). Entries are sorted by path; every copy of a repeated path (after
/// normalisation, e.g. `a.md` and `./a.md`) is rejected: which copy is "the" file depends on the tool that reads
/// the bundle (`tar x` keeps the last, a streaming reader sees the first first), so a reviewer of the unpacked
/// bundle could read other text than the one imported.
///
/// Errors: [`OkfError::ImportScope`] for a session or agent target (nothing is planned).
pub fn plan_import<'a>(
    opts: &ImportOptions,
    entries: impl IntoIterator<Item = BundleEntry<'a>>,
    existing: &impl ExistingTopics,
) -> Result<ImportPlan, OkfError> {
    check_import_scope(opts.target_scope)?;
    let entries: Vec<BundleEntry<'a>> = entries.into_iter().collect();
    let (order, repeated) = plan_order(entries.iter().map(|e| e.path));
    let files: Vec<FilePlan> = order
        .into_iter()
        .map(|i| plan_entry(opts, entries[i], existing, &repeated))
        .collect();
    let report = ImportReport::from_plans(opts, &files);
    Ok(ImportPlan { files, report })
}

/// The order [`plan_import`] plans and writes a bundle's paths in (indices into `paths`, sorted by the normalised
/// path's segments, raw bytes for an invalid path; stable), and the normalised paths that appear more than once
/// (every copy is rejected). Lets a caller plan a bundle a part at a time ([`plan_entry`]) in the same order, with
/// the same result, without holding every file's bytes at once.
pub fn plan_order<'p>(paths: impl IntoIterator<Item = &'p [u8]>) -> (Vec<usize>, BTreeSet<String>) {
    let mut keyed: Vec<(Vec<Vec<u8>>, usize)> = Vec::new();
    let mut seen = BTreeSet::new();
    let mut repeated = BTreeSet::new();
    for (i, path) in paths.into_iter().enumerate() {
        let valid = validate_bundle_path(path);
        if let Ok(rel) = &valid
            && !seen.insert(rel.clone())
        {
            repeated.insert(rel.clone());
        }
        let norm = valid.map_or_else(|_| path.to_vec(), String::into_bytes);
        keyed.push((norm.split(|&c| c == b'/').map(<[u8]>::to_vec).collect(), i));
    }
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    (keyed.into_iter().map(|(_, i)| i).collect(), repeated)
}

/// Plan one bundle path as [`plan_import`] does, `repeated` being the second part of [`plan_order`] over the whole
/// bundle. A session or agent target is not checked here: call [`check_import_scope`] first.
pub fn plan_entry(
    opts: &ImportOptions,
    entry: BundleEntry<'_>,
    existing: &impl ExistingTopics,
    repeated: &BTreeSet<String>,
) -> FilePlan {
    match validate_bundle_path(entry.path) {
        Ok(rel) if repeated.contains(&rel) => FilePlan::with(rel, FileOutcome::Rejected(RejectReason::Duplicate)),
        _ => plan_file(opts, entry, existing),
    }
}

/// Plan one bundle path (steps 1-11 of the module docs; the duplicate check of [`plan_import`] excepted).
/// A session or agent target is not checked here: call [`check_import_scope`] first. Never panics.
pub fn plan_file(opts: &ImportOptions, entry: BundleEntry<'_>, existing: &impl ExistingTopics) -> FilePlan {
    let rel = match validate_bundle_path(entry.path) {
        Ok(rel) => rel,
        Err(e) => {
            return FilePlan::with(
                String::from_utf8_lossy(entry.path).into_owned(),
                FileOutcome::Rejected(RejectReason::InvalidPath(e)),
            );
        }
    };
    let kind = classify_bundle_path(&rel);
    let reject = |rel: String, reason| FilePlan::with(rel, FileOutcome::Rejected(reason));
    match (&kind, entry.kind) {
        (BundlePathKind::Ignored(why), _) => return FilePlan::with(rel, FileOutcome::Ignored(*why)),
        (_, EntryKind::Link) => return reject(rel, RejectReason::Link),
        (BundlePathKind::Rejected(reason), _) => return reject(rel, reason.clone()),
        (_, EntryKind::NotRegular) => return reject(rel, RejectReason::NotRegular),
        (_, EntryKind::TooLarge(size)) => return reject(rel, RejectReason::TooLarge(size)),
        (BundlePathKind::Topic(_), EntryKind::File(_)) => {}
    }
    let (BundlePathKind::Topic(key), EntryKind::File(bytes)) = (kind, entry.kind) else {
        return reject(rel, RejectReason::NotRegular);
    };
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => return reject(rel, RejectReason::NotUtf8(e.valid_up_to())),
    };
    // A byte order mark some editors write before the frontmatter is no part of it (the reference's reader
    // keeps it and finds no frontmatter; docs/conformance.md).
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let text = frontmatter::universal_newlines(text);
    let mut notices = Vec::new();
    let Some(split) = frontmatter::split(&text) else {
        return reject(rel, RejectReason::NoFrontmatter);
    };
    let fm = match frontmatter::parse_yaml(split.yaml) {
        Ok(fm) => fm,
        Err(e) => return reject(rel, RejectReason::Frontmatter(e)),
    };
    let occurred = match fm.timestamp.as_deref().map(frontmatter::parse_timestamp) {
        Some(Timestamp::Invalid) => return reject(rel, RejectReason::InvalidTimestamp),
        Some(Timestamp::At(t)) => Some(t),
        Some(Timestamp::Absent) => {
            notices.push(FileNotice::TimestampIgnored);
            None
        }
        None => None,
    };
    let memory_type = match fm.memory_type {
        None => return reject(rel, RejectReason::MissingType),
        Some(TypeField::Text(t)) => t.parse().unwrap_or_else(|_| {
            notices.push(FileNotice::UnknownType);
            MemoryType::Reference
        }),
        Some(TypeField::Other) => {
            notices.push(FileNotice::TypeNotText);
            MemoryType::Reference
        }
    };
    let tags = match fm.tags {
        TagsField::None => String::new(),
        TagsField::Csv(csv) => normalize_tags(&csv),
        TagsField::List(items) => normalize_tags(
            &items
                .iter()
                .map(|t| pytext::strip(t))
                .filter(|t| !t.is_empty())
                .collect::<Vec<_>>()
                .join(","),
        ),
        TagsField::TooLarge => return reject(rel, RejectReason::TagsTooLarge),
    };

    let body = import_body(split.body, &key);
    let mut plan = FilePlan {
        path: rel,
        see_also_dropped: body.see_also_dropped,
        body_escaped: body.escaped,
        notices,
        outcome: FileOutcome::Ignored(IgnoreReason::NotMarkdown),
    };
    plan.outcome = decide(opts, key, memory_type, tags, body.text, occurred, existing);
    plan
}

/// Steps 7-11 for a parsed file.
fn decide(
    opts: &ImportOptions,
    key: Key,
    memory_type: MemoryType,
    tags: String,
    body: String,
    occurred: Option<DateTime<Utc>>,
    existing: &impl ExistingTopics,
) -> FileOutcome {
    if opts.target_scope == Scope::Federated
        && let Some(name) = [body.as_str(), tags.as_str(), key.as_str()]
            .into_iter()
            .find_map(cao_core::secret::scan)
    {
        return FileOutcome::Rejected(RejectReason::Secret(name));
    }
    let latest = existing.latest_entry(&key);
    let action = match (latest, opts.conflict) {
        (None, _) => WriteAction::Import,
        (Some(_), ConflictPolicy::Skip) => return FileOutcome::SkippedConflict(key),
        (Some(_), ConflictPolicy::Replace) => WriteAction::Replace,
        (Some(_), ConflictPolicy::Merge) => WriteAction::Merge,
    };
    if body.is_empty() {
        return FileOutcome::Rejected(RejectReason::EmptyBody);
    }
    let bound = if action == WriteAction::Merge { latest } else { None };
    let (entry_time, clamped_from) = clamp(occurred, bound, opts.now);
    let content = match clamped_from {
        Some(original) => format!("_Originally recorded: {}_\n{body}", format_ts(original)),
        None => body,
    };
    FileOutcome::Write(PlannedWrite {
        key,
        memory_type,
        tags,
        content,
        entry_time,
        action,
        clamped_from,
    })
}

/// The clamp rule: an `occurred` time after `now`, or before `latest` (the existing topic's latest entry, for a
/// merge), is replaced by `now`. Returns the entry time (whole seconds) and, when clamped, the original time.
/// Without `occurred` the entry is at `now`, unclamped.
pub fn clamp(
    occurred: Option<DateTime<Utc>>,
    latest: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> (DateTime<Utc>, Option<DateTime<Utc>>) {
    match occurred {
        None => (truncate_secs(now), None),
        Some(t) if t > now || latest.is_some_and(|l| t < l) => (truncate_secs(now), Some(t)),
        Some(t) => (truncate_secs(t), None),
    }
}

/// An imported body after the body pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportBody {
    /// The text to store (before any clamp line).
    pub text: String,
    /// `## See Also` link lines dropped.
    pub see_also_dropped: usize,
    /// Whether a structural marker line was escaped.
    pub escaped: bool,
}

/// The body pipeline of an import, in the reference's order: [`strip_see_also`], [`escape_structural_markers`],
/// [`strip_leading_title`], then Python `strip()`. `body` is the frontmatter split's body.
pub fn import_body(body: &str, key: &Key) -> ImportBody {
    let (text, see_also_dropped) = strip_see_also(body);
    let (text, escaped) = escape_structural_markers(&text);
    let text = pytext::strip(strip_leading_title(&text, key).as_ref()).to_owned();
    ImportBody {
        text,
        see_also_dropped,
        escaped,
    }
}

/// A See Also link line (`- [text](target)` at the start of a stripped line).
static SEE_ALSO_LINK: LazyLock<Result<Regex, regex::Error>> = LazyLock::new(|| Regex::new(r"^- \[[^\]]*\]\([^)]*\)"));

/// Drop every `## See Also` block: from a line that strips to `## See Also` up to (not including) the next
/// line starting `## ` once stripped. Returns the text (lines joined with `\n`, Python `splitlines` boundaries)
/// and the number of dropped link lines (`- [text](target)`). Links are never resolved.
pub fn strip_see_also(body: &str) -> (String, usize) {
    let mut out = Vec::new();
    let mut dropped = 0;
    let mut in_block = false;
    for line in pytext::splitlines(body) {
        let stripped = pytext::strip(line);
        if stripped == "## See Also" {
            in_block = true;
            continue;
        }
        if in_block && stripped.starts_with("## ") {
            in_block = false;
        }
        if in_block {
            if SEE_ALSO_LINK.as_ref().is_ok_and(|re| re.is_match(stripped)) {
                dropped += 1;
            }
            continue;
        }
        out.push(line);
    }
    (out.join("\n"), dropped)
}

/// An entry heading anywhere in a line (the reference's unanchored `## \d{4}-...Z`; `\d` is any Unicode digit).
static HEADING_MARKER: LazyLock<Result<Regex, regex::Error>> =
    LazyLock::new(|| Regex::new(r"## \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z"));
/// A header comment anywhere in a line (`<!--\s*id:`, Python whitespace).
static HEADER_MARKER: LazyLock<Result<Regex, regex::Error>> = LazyLock::new(|| Regex::new(r"<!--[\s\x1C-\x1F]*id:"));

/// Escape spoofed structure as the reference does: on a line containing an entry heading (`## <ts>`, anywhere)
/// every `##` becomes `\#\#`; then on a line containing a header comment (`<!-- id:`) every `<!--` becomes
/// `<!\--`. Returns the text (lines joined with `\n`) and whether any line changed.
pub fn escape_structural_markers(body: &str) -> (String, bool) {
    let mut escaped = false;
    let lines: Vec<String> = pytext::splitlines(body)
        .into_iter()
        .map(|line| {
            let mut line = line.to_owned();
            if HEADING_MARKER.as_ref().map_or(true, |re| re.is_match(&line)) {
                line = line.replace("##", r"\#\#");
                escaped = true;
            }
            if HEADER_MARKER.as_ref().map_or(true, |re| re.is_match(&line)) {
                line = line.replace("<!--", r"<!\--");
                escaped = true;
            }
            line
        })
        .collect();
    (lines.join("\n"), escaped)
}

/// Drop a leading `# <key>` title line (the exporter writes one; the store writes its own): when the first line
/// after any leading `\n`s strips to `# <key>`, the rest of the lines; otherwise `body` unchanged.
pub fn strip_leading_title<'a>(body: &'a str, key: &Key) -> std::borrow::Cow<'a, str> {
    let lines = pytext::splitlines(body.trim_start_matches('\n'));
    match lines.split_first() {
        Some((first, rest)) if pytext::strip(first) == format!("# {key}") => std::borrow::Cow::Owned(rest.join("\n")),
        _ => std::borrow::Cow::Borrowed(body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn see_also_blocks_are_dropped_and_links_counted() {
        let body = "Body text.\n\n## See Also\n- [alpha](alpha.md)\n- [beta](../x/beta.md)\nloose\n\n## Notes\nKept.";
        assert_eq!(strip_see_also(body), ("Body text.\n\n## Notes\nKept.".to_owned(), 2));
        let (t, n) = strip_see_also("a\n  ## See Also  \n - [x](y)\n- [](z) tail\n");
        assert_eq!((t.as_str(), n), ("a", 2));
    }

    #[test]
    fn markers_are_escaped_like_the_reference() {
        let (t, e) = escape_structural_markers("x ## 2020-01-01T00:00:00Z y\nplain\n<!-- id: 1 | scope -->\n<!--\tid:");
        assert!(e);
        assert_eq!(
            t,
            "x \\#\\# 2020-01-01T00:00:00Z y\nplain\n<!\\-- id: 1 | scope -->\n<!\\--\tid:"
        );
        // `###` loses only its first pair, as Python's str.replace does.
        assert_eq!(
            escape_structural_markers("### 2020-01-01T00:00:00Z").0,
            "\\#\\## 2020-01-01T00:00:00Z"
        );
        // Unicode digits count, like Python's \d.
        assert!(escape_structural_markers("## ٢٠٢٠-01-01T00:00:00Z").1);
        assert_eq!(
            escape_structural_markers("## Notes\n<!-- note -->"),
            ("## Notes\n<!-- note -->".to_owned(), false)
        );
    }

    #[test]
    fn leading_title_is_dropped_once() {
        let k = Key::parse_strict("alpha").expect("key");
        assert_eq!(strip_leading_title("\n\n# alpha\n\n# alpha\nx", &k), "\n# alpha\nx");
        assert_eq!(strip_leading_title("# other\nx", &k), "# other\nx");
        assert_eq!(strip_leading_title("  # alpha  \nx", &k), "x");
    }

    #[test]
    fn clamp_rule() {
        let t = |s: &str| cao_core::time::parse_ts(s).expect("ts");
        let now = t("2026-12-01T10:00:00Z");
        assert_eq!(clamp(None, None, now), (now, None));
        assert_eq!(
            clamp(Some(t("2025-01-01T00:00:00Z")), None, now),
            (t("2025-01-01T00:00:00Z"), None)
        );
        assert_eq!(
            clamp(Some(t("2030-01-01T00:00:00Z")), None, now),
            (now, Some(t("2030-01-01T00:00:00Z")))
        );
        let latest = Some(t("2026-06-01T00:00:00Z"));
        assert_eq!(
            clamp(Some(t("2026-01-01T00:00:00Z")), latest, now),
            (now, Some(t("2026-01-01T00:00:00Z")))
        );
        assert_eq!(
            clamp(Some(t("2026-06-01T00:00:00Z")), latest, now),
            (t("2026-06-01T00:00:00Z"), None)
        );
        assert_eq!(clamp(Some(now), latest, now), (now, None));
    }

    #[test]
    fn policies_parse() {
        assert_eq!("merge".parse::<ConflictPolicy>(), Ok(ConflictPolicy::Merge));
        assert!(same_entry_text(
            "_Originally recorded: 2020-01-01T00:00:00Z_\nImported alpha.",
            "_Originally recorded: 2020-01-01T00:00:00Z_\nImported alpha.\n"
        ));
        assert!(same_entry_text(
            "Imported alpha.",
            "_Originally recorded: 2020-01-01T00:00:00Z_\nImported alpha."
        ));
        assert!(!same_entry_text("Existing alpha.", "Imported alpha."));
        assert!(!same_entry_text(
            "_Originally recorded: x_\nA",
            "_Originally recorded: x_\nB"
        ));
        assert!("Merge".parse::<ConflictPolicy>().is_err());
        assert!(check_import_scope(Scope::Agent).is_err() && check_import_scope(Scope::Session).is_err());
        assert!(check_import_scope(Scope::Federated).is_ok());
    }
}
