//! `cao memory relationships list | inspect | promote | reject`: the operator's review surface over the typed edges
//! between memories (spec 000 "Typed relationships"), through `cao_lifecycle::RelationshipService`.
//!
//! Rules: `list` shows active edges unless `--status` asks for another state (the reference's default), of every
//! scope unless `--scope` narrows it; `--scope project` means the current project (CAO_PROJECT_ID / cwd) unless
//! `--scope-id` names another. Output is content-free (keys, vocabulary, times). An id that cannot be an edge id is a
//! usage error (exit 2); an unknown id or a refused promote is a failure (exit 1).

use crate::cli::{ListFormat, ScopeArg};
use crate::error::CliError;
use crate::output::{json, one_line};
use cao_core::{Key, Scope, Settings, TerminalContext};
use cao_lifecycle::{LifecycleError, RelStatus, Relationship, RelationshipFilter};
use cao_memory::MemoryService;
use clap::{Args, Subcommand, ValueEnum};
use std::fmt::Write as _;

/// Longest accepted relationship id (ids are uuid4 strings, 36 characters).
pub(crate) const MAX_ID_LEN: usize = 128;

/// `cao memory relationships ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum RelationshipsCommand {
    /// List relationships (active ones unless --status says otherwise; --status proposal is the review queue).
    List(RelListArgs),
    /// Show one relationship in full: endpoints, provenance, status and times.
    Inspect(InspectArgs),
    /// Promote a relationship to active (refuses rejected or deleted ones: re-create them instead).
    Promote(IdArgs),
    /// Reject a relationship (durable: a producer recompute never brings it back).
    Reject(IdArgs),
}

/// Arguments of `cao memory relationships list`.
#[derive(Debug, Args)]
pub(crate) struct RelListArgs {
    /// Only this scope (default: every scope).
    #[arg(long, value_enum, value_name = "SCOPE")]
    pub scope: Option<ScopeArg>,
    /// Only this scope id (project id, session or agent name; default: the current one when known).
    #[arg(long, value_name = "ID", requires = "scope")]
    pub scope_id: Option<String>,
    /// Only edges leaving this memory key.
    #[arg(long, value_name = "KEY")]
    pub source_key: Option<String>,
    /// Only edges in this status (default: active).
    #[arg(long, value_enum, value_name = "STATUS")]
    pub status: Option<StatusArg>,
    /// Only stale edges (computed before their source memory was last edited).
    #[arg(long)]
    pub stale: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
}

/// Arguments of `cao memory relationships inspect`.
#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    /// The relationship id (as listed).
    pub id: String,
    /// Output format (`table` = one `field: value` line per field).
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
}

/// Arguments of `promote` and `reject`.
#[derive(Debug, Args)]
pub(crate) struct IdArgs {
    /// The relationship id (as listed).
    pub id: String,
}

/// A relationship status as spelled on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatusArg {
    /// Suggested, awaiting review.
    Proposal,
    /// In force.
    Active,
    /// Refused by an operator.
    Rejected,
    /// Retired by a lifecycle migration.
    Superseded,
    /// Soft-deleted.
    Deleted,
}

impl From<StatusArg> for RelStatus {
    fn from(s: StatusArg) -> Self {
        match s {
            StatusArg::Proposal => RelStatus::Proposal,
            StatusArg::Active => RelStatus::Active,
            StatusArg::Rejected => RelStatus::Rejected,
            StatusArg::Superseded => RelStatus::Superseded,
            StatusArg::Deleted => RelStatus::Deleted,
        }
    }
}

/// A validated relationships command.
#[derive(Debug)]
pub(crate) enum RelPlan {
    /// `list`.
    List {
        scope: Option<Scope>,
        scope_id: Option<String>,
        source_key: Option<Key>,
        status: RelStatus,
        stale: bool,
        format: ListFormat,
    },
    /// `inspect`.
    Inspect { id: String, format: ListFormat },
    /// `promote`.
    Promote { id: String },
    /// `reject`.
    Reject { id: String },
}

impl RelPlan {
    /// Validate a command without I/O. Errors: [`CliError::Usage`] for a bad id or key.
    pub(crate) fn new(cmd: RelationshipsCommand) -> Result<RelPlan, CliError> {
        Ok(match cmd {
            RelationshipsCommand::List(a) => RelPlan::List {
                scope: a.scope.map(Scope::from),
                scope_id: a.scope_id,
                source_key: a
                    .source_key
                    .as_deref()
                    .map(|k| Key::parse_strict(k).map_err(|e| CliError::Usage(e.to_string())))
                    .transpose()?,
                status: a.status.map_or(RelStatus::Active, RelStatus::from),
                stale: a.stale,
                format: a.format,
            },
            RelationshipsCommand::Inspect(a) => RelPlan::Inspect {
                id: parse_id(&a.id)?,
                format: a.format,
            },
            RelationshipsCommand::Promote(a) => RelPlan::Promote { id: parse_id(&a.id)? },
            RelationshipsCommand::Reject(a) => RelPlan::Reject { id: parse_id(&a.id)? },
        })
    }

    /// Run against the store; returns the text to print. Errors: [`CliError::Failure`] naming the id or cause.
    pub(crate) fn execute(&self, svc: &MemoryService, ctx: &TerminalContext) -> Result<String, CliError> {
        let rel = svc.relationships(cao_memory::audit::actor_of(ctx));
        match self {
            RelPlan::List {
                scope,
                scope_id,
                source_key,
                status,
                stale,
                format,
            } => {
                let filter = RelationshipFilter {
                    scope: *scope,
                    scope_id: match (scope, scope_id) {
                        (_, Some(id)) => Some(id.clone()),
                        (Some(s), None) => current_scope_id(*s, ctx, &svc.settings())?,
                        (None, None) => None,
                    },
                    source_key: source_key.clone(),
                    target_key: None,
                    status: Some(*status),
                    stale: *stale,
                };
                let edges = rel.list(&filter)?;
                match format {
                    ListFormat::Table => Ok(list_table(&edges)),
                    ListFormat::Json => json(&edges).map_err(CliError::failure),
                }
            }
            RelPlan::Inspect { id, format } => {
                let edge = rel
                    .get(id)?
                    .ok_or_else(|| CliError::failure(format!("relationship not found: {id}")))?;
                match format {
                    ListFormat::Table => Ok(inspect_text(&edge)),
                    ListFormat::Json => json(&edge).map_err(CliError::failure),
                }
            }
            RelPlan::Promote { id } => Ok(status_line(&rel.promote(id)?)),
            RelPlan::Reject { id } => Ok(status_line(&rel.reject(id)?)),
        }
    }
}

/// The stored scope id `--scope` means without `--scope-id`: `""` for global and federated, the current project,
/// the current session or agent when known (else every one).
fn current_scope_id(scope: Scope, ctx: &TerminalContext, settings: &Settings) -> Result<Option<String>, CliError> {
    Ok(match scope {
        Scope::Global | Scope::Federated => Some(String::new()),
        Scope::Project => Some(
            ctx.project(settings)
                .map_err(|e| CliError::failure(e.to_string()))?
                .project_id,
        ),
        Scope::Session => ctx.session_id(),
        Scope::Agent => ctx.agent_id(),
    })
}

impl From<LifecycleError> for CliError {
    fn from(e: LifecycleError) -> Self {
        CliError::failure(e.to_string())
    }
}

/// An id as typed: 1 to [`MAX_ID_LEN`] of `[A-Za-z0-9_.:-]` (uuid4 strings and the reference's ids).
fn parse_id(raw: &str) -> Result<String, CliError> {
    let ok = !raw.is_empty()
        && raw.len() <= MAX_ID_LEN
        && raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'));
    if ok {
        Ok(raw.to_owned())
    } else {
        let shown: String = raw.chars().take(60).collect();
        Err(CliError::Usage(format!(
            "invalid relationship id {}: ids are uuids such as 0b6c1b9e-2f47-4d0e-9a51-3c1f0e8d7a42",
            one_line(&format!("{shown:?}"))
        )))
    }
}

/// `global`, `federated`, or `<scope>/<scope id>`.
fn scope_label(e: &Relationship) -> String {
    match &e.scope_id {
        Some(id) => format!("{}/{}", e.scope, one_line(id)),
        None => e.scope.to_string(),
    }
}

/// The table header (the reference's columns, with SCOPE after ID because the listing spans scopes).
pub(crate) fn list_header() -> String {
    format!(
        "{:<36}  {:<20}  {:<13}  {:<18}  {:<9}  STALE  SOURCE -> TARGET",
        "ID", "SCOPE", "TYPE", "ORIGIN", "STATUS"
    )
}

/// `list --format table`: header and one row per edge (columns padded, never truncated), or
/// `No relationships found.`.
pub(crate) fn list_table(edges: &[Relationship]) -> String {
    if edges.is_empty() {
        return "No relationships found.\n".to_owned();
    }
    let mut out = list_header();
    out.push('\n');
    for e in edges {
        let _ = writeln!(
            out,
            "{:<36}  {:<20}  {:<13}  {:<18}  {:<9}  {:<5}  {} -> {}",
            one_line(&e.id),
            scope_label(e),
            e.rel_type.as_str(),
            e.origin.as_str(),
            e.status.as_str(),
            if e.stale { "yes" } else { "no" },
            e.source_key,
            e.target_key
        );
    }
    out
}

/// `inspect --format table`: one `field: value` line per field, in the JSON field order; absent values are
/// `(none)`, times are UTC `%Y-%m-%d %H:%M:%S%.6f`.
pub(crate) fn inspect_text(e: &Relationship) -> String {
    let none = || "(none)".to_owned();
    let ts = |t: Option<chrono::DateTime<chrono::Utc>>| {
        t.map_or_else(none, |t| t.format("%Y-%m-%d %H:%M:%S%.6f").to_string())
    };
    let fields: [(&str, String); 15] = [
        ("id", one_line(&e.id)),
        ("scope", e.scope.to_string()),
        ("scope_id", e.scope_id.as_deref().map_or_else(none, one_line)),
        ("source_key", e.source_key.clone()),
        ("target_key", e.target_key.clone()),
        ("type", e.rel_type.to_string()),
        ("origin", e.origin.to_string()),
        ("status", e.status.to_string()),
        ("confidence", e.confidence.map_or_else(none, |c| c.to_string())),
        ("rank", e.rank.map_or_else(none, |r| r.to_string())),
        (
            "attributes",
            e.attributes.as_ref().map_or_else(none, |a| one_line(&a.to_string())),
        ),
        ("source_updated_at", ts(e.source_updated_at)),
        ("created_at", ts(e.created_at)),
        ("updated_at", ts(e.updated_at)),
        ("stale", if e.stale { "yes" } else { "no" }.to_owned()),
    ];
    let mut out = String::new();
    for (k, v) in fields {
        let _ = writeln!(out, "{k:<18}: {v}");
    }
    out
}

/// `promote` / `reject` output: `<id>: status -> <status>` (the reference's line).
pub(crate) fn status_line(e: &Relationship) -> String {
    format!("{}: status -> {}\n", one_line(&e.id), e.status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_checked_before_any_io() {
        assert_eq!(
            parse_id("0b6c1b9e-2f47-4d0e-9a51-3c1f0e8d7a42").ok().as_deref(),
            Some("0b6c1b9e-2f47-4d0e-9a51-3c1f0e8d7a42")
        );
        for bad in ["", "a b", "a\nb", "../x", &"x".repeat(MAX_ID_LEN + 1), "\u{1b}[31m"] {
            let e = parse_id(bad).expect_err("rejected");
            let CliError::Usage(m) = &e else {
                panic!("not a usage error: {e:?}")
            };
            assert!(!m.contains('\n') && !m.contains('\u{1b}') && m.len() < 300, "{m:?}");
        }
    }

    #[test]
    fn statuses_map_to_their_wire_names() {
        for s in StatusArg::value_variants() {
            let name = s.to_possible_value().map(|p| p.get_name().to_owned());
            assert_eq!(name.as_deref(), Some(RelStatus::from(*s).as_str()));
        }
        assert_eq!(StatusArg::value_variants().len(), RelStatus::ALL.len());
    }

    #[test]
    fn header_matches_the_reference_columns() {
        assert!(list_header().starts_with(&format!("{:<36}  SCOPE", "ID")));
        assert!(list_header().ends_with("STATUS     STALE  SOURCE -> TARGET"));
        assert_eq!(list_table(&[]), "No relationships found.\n");
    }
}
