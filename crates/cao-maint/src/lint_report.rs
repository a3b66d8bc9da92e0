//! The shapes of lint: findings, the `cao.memory.lint/1` report, the request, progress, and the corpus a run looks
//! at (its scope groups and their rows). Shared by the detectors (`lint`, `lint_contradiction`) and heal; see
//! `lint` for what each finding means.

use cao_core::{Container, Scope, Settings, TerminalContext};
use cao_store::MemoryError;
use cao_store::Store;
use cao_store::visibility;
use cao_store::{ListFilter, MemoryRow, Visibility};
use serde::Serialize;
use std::path::PathBuf;

/// The `schema` value of a lint report.
pub const LINT_SCHEMA: &str = "cao.memory.lint/1";

/// Longest finding description, in characters.
pub const DESCRIPTION_MAX_CHARS: usize = 200;

/// What kind of problem a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueType {
    /// The index database fails SQLite's integrity check (`cao memory repair` rebuilds it from the wiki files).
    IndexIntegrity,
    /// A topic file, index row and `index.md` line that do not agree.
    OrphanPage,
    /// A path, code symbol or related key named by a memory that does not exist.
    StaleClaim,
    /// An access count far above its group's (a memory recalled suspiciously often).
    PoisonFrequency,
    /// A key named by the related keys of many memories.
    GraphDensity,
    /// Two memories the model judges contradictory.
    Contradiction,
}

impl IssueType {
    /// The wire name (`orphan_page`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            IssueType::IndexIntegrity => "index_integrity",
            IssueType::OrphanPage => "orphan_page",
            IssueType::StaleClaim => "stale_claim",
            IssueType::PoisonFrequency => "poison_frequency",
            IssueType::GraphDensity => "graph_density",
            IssueType::Contradiction => "contradiction",
        }
    }
}

/// How bad a finding is; lint exits 1 when any finding is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Information about the run (a skipped or cut pass).
    Info,
    /// Worth a look.
    Warning,
    /// Wrong: fix it (`cao memory heal`).
    Error,
}

impl Severity {
    /// The wire name (`info`, `warning`, `error`).
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// The precise problem of a finding (which of its issue type's checks it failed), or a status row of a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// `orphan_page`: a topic file without an index row.
    FileWithoutRow,
    /// `orphan_page`: a topic file that cannot be parsed, whose index row still holds the memory's last good text.
    UnparsableFile,
    /// `orphan_page`: an index row without a topic file.
    RowWithoutFile,
    /// `orphan_page`: a live memory missing from its container's `index.md`.
    MissingFromIndexMd,
    /// `orphan_page`: an `index.md` line naming no file and no row.
    IndexMdWithoutFile,
    /// `stale_claim`: a path that does not exist.
    Path,
    /// `stale_claim`: a code symbol the repository does not contain.
    Symbol,
    /// `stale_claim`: a `related_keys` entry naming no memory of the group.
    RelatedKey,
    /// `poison_frequency`: the access count.
    AccessCount,
    /// `graph_density`: the referrers of a key.
    RelatedKeys,
    /// `contradiction`: the model's verdict on a pair.
    ModelVerdict,
    /// `index_integrity`: what SQLite's `PRAGMA quick_check` reported (error).
    QuickCheck,
    /// A pass or group that was not checked (info).
    Skipped,
    /// Findings a cap left out (info).
    Truncated,
    /// A pass that could not finish (warning).
    Incomplete,
}

/// One lint finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LintFinding {
    /// The issue type.
    pub issue_type: IssueType,
    /// The precise problem, or `skipped` / `truncated` / `incomplete` for a status row.
    pub kind: FindingKind,
    /// info, warning or error.
    pub severity: Severity,
    /// The wiki container of the memory or group (`global`, `federated`, a project id); `None` for a run-wide row.
    pub container: Option<String>,
    /// The scope of the memory or group.
    pub scope: Option<Scope>,
    /// The scope id of the memory or group (`None` for global and federated).
    pub scope_id: Option<String>,
    /// The memory the finding is about (for `graph_density`: the dense key).
    pub key: Option<String>,
    /// The other memory: the contradicting one, or the missing related key.
    pub related_key: Option<String>,
    /// The stale path or code symbol.
    pub claim: Option<String>,
    /// One line, at most [`DESCRIPTION_MAX_CHARS`] characters, control characters escaped.
    pub description: String,
}

impl LintFinding {
    /// A finding of `issue_type` and `kind` at `severity` with its description; no group, key or claim yet.
    pub fn new(issue_type: IssueType, kind: FindingKind, severity: Severity, description: impl AsRef<str>) -> Self {
        LintFinding {
            issue_type,
            kind,
            severity,
            container: None,
            scope: None,
            scope_id: None,
            key: None,
            related_key: None,
            claim: None,
            description: one_line(description.as_ref(), DESCRIPTION_MAX_CHARS),
        }
    }

    /// The finding placed in group `g` (its container, scope and scope id).
    pub fn in_group(mut self, g: &Group) -> Self {
        self.container = Some(g.container().into_string());
        self.scope = Some(g.scope);
        self.scope_id = g.scope_id.clone();
        self
    }

    /// The finding about memory `key`.
    pub fn key(mut self, key: &str) -> Self {
        self.key = Some(key.to_owned());
        self
    }

    /// The finding naming a second memory, `key`.
    pub fn related(mut self, key: &str) -> Self {
        self.related_key = Some(key.to_owned());
        self
    }

    /// The finding quoting the claim it is about.
    pub fn claim(mut self, claim: &str) -> Self {
        self.claim = Some(claim.to_owned());
        self
    }

    /// The order of findings in a report: issue type, container, scope, scope id, key, related key, claim, kind.
    pub fn sort_key(&self) -> impl Ord + '_ {
        (
            self.issue_type,
            self.container.as_deref(),
            self.scope,
            self.scope_id.as_deref(),
            self.key.as_deref(),
            self.related_key.as_deref(),
            self.claim.as_deref(),
            self.kind,
        )
    }
}

/// Findings per severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LintCounts {
    /// Error findings.
    pub error: usize,
    /// Warning findings.
    pub warning: usize,
    /// Info rows.
    pub info: usize,
}

/// What lint found (`cao.memory.lint/1`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LintReport {
    /// Always [`LINT_SCHEMA`].
    pub schema: &'static str,
    /// The `--scope` filter, if any.
    pub scope: Option<Scope>,
    /// The repository root paths and code symbols were checked against (`None`: not checked).
    pub repo_root: Option<String>,
    /// The model of the contradiction pass (`provider:name`), `none` without one.
    pub model: String,
    /// Memories (index rows) linted.
    pub memories: usize,
    /// Findings per severity.
    pub counts: LintCounts,
    /// Every finding, ordered by issue type, container, scope, scope id, key.
    pub findings: Vec<LintFinding>,
}

impl LintReport {
    /// Whether any finding is an error (then `cao memory lint` exits 1).
    pub fn has_errors(&self) -> bool {
        self.counts.error > 0
    }
}

/// Arguments of a lint run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LintRequest {
    /// Only this scope (default: every scope the caller sees).
    pub scope: Option<Scope>,
    /// The repository root for path and code-symbol claims; `None` = the nearest ancestor of the caller's cwd
    /// holding `.git`, else the cwd; no cwd = those checks are skipped (absolute paths are still checked).
    pub repo_root: Option<PathBuf>,
    /// The model to judge with instead of the configured one (`memory.model.*`); `None` = the configured one.
    pub model: Option<cao_model::SharedModel>,
}

/// One `(scope, scope_id)` the run looks at.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Group {
    /// The scope.
    pub scope: Scope,
    /// The scope id (`None` for global and federated).
    pub scope_id: Option<String>,
}

impl Group {
    /// The container the group's files live in.
    pub fn container(&self) -> Container {
        Container::of(self.scope, self.scope_id.as_deref())
    }

    /// The `index.md` link of `key` in this group (the reference's rule, as `cao_wiki::IndexRow::rel_path`).
    pub fn rel_path(&self, key: &str) -> String {
        match (self.scope, &self.scope_id) {
            (Scope::Session | Scope::Agent, Some(id)) => format!("{}/{id}/{key}.md", self.scope),
            _ => format!("{}/{key}.md", self.scope),
        }
    }

    /// The group as reports name it (`scope` or `scope/scope_id`).
    pub fn label(&self) -> String {
        match &self.scope_id {
            Some(id) => format!("{}/{id}", self.scope),
            None => self.scope.to_string(),
        }
    }
}

/// The memories of one run: each group with its rows (key order).
pub struct Corpus {
    /// Each group with its rows.
    pub groups: Vec<(Group, Vec<MemoryRow>)>,
}

impl Corpus {
    /// The groups `ctx` sees (only `scope`'s when given), in precedence order, with their rows. Reads only.
    ///
    /// Errors: [`MemoryError::Invalid`] for a malformed explicit project id; index errors.
    pub fn load(
        store: &Store,
        settings: &Settings,
        ctx: &TerminalContext,
        scope: Option<Scope>,
    ) -> Result<Corpus, MemoryError> {
        let mut groups = Vec::new();
        for g in visibility::groups_read_only(store, ctx, settings, scope)? {
            let ids: Vec<Option<String>> = match g.ids {
                Some(ids) => ids.into_iter().map(Some).collect(),
                None => vec![None],
            };
            for id in ids {
                let group = Group {
                    scope: g.scope,
                    scope_id: id,
                };
                let mut rows = store.snapshot().list(&ListFilter {
                    visibility: Visibility::none().allow(group.scope, group.scope_id.as_deref()),
                    scope: Some(group.scope),
                    memory_type: None,
                    limit: None,
                })?;
                rows.sort_by(|a, b| a.key.cmp(&b.key));
                groups.push((group, rows));
            }
        }
        Ok(Corpus { groups })
    }

    /// How many memories the corpus holds.
    pub fn memories(&self) -> usize {
        self.groups.iter().map(|(_, rows)| rows.len()).sum()
    }
}

/// `s` on one line (unsafe characters escaped as `\n`, `\u{1b}`, `\u{202e}`, ...: [`cao_core::display::escape_line`]),
/// cut to `max` characters (ending in `…`).
pub fn one_line(s: &str, max: usize) -> String {
    let escaped = cao_core::display::escape_line(s);
    if escaped.chars().count() <= max {
        return escaped.into_owned();
    }
    let mut out: String = escaped.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_are_one_bounded_line() {
        assert_eq!(one_line("a\nb\u{1b}[2J", 100), "a\\nb\\u{1b}[2J");
        let long = one_line(&"x".repeat(500), DESCRIPTION_MAX_CHARS);
        assert_eq!(long.chars().count(), DESCRIPTION_MAX_CHARS);
        assert!(long.ends_with('…'));
    }
}
