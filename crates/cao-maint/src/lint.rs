//! `cao memory lint`: read-only detectors over the memories a caller sees (spec 000 "Linting", "CLI Commands";
//! spec/reference-facts.md "Lint"). The report is `cao.memory.lint/1` (docs/schemas/cao.memory.lint-1.json).
//!
//! What is linted: the scope groups of the caller in precedence order (its session, its project and the project's
//! cwd-hash aliases, global, its agent, federated), or only `--scope`'s. A group is one `(scope, scope_id)`; its
//! container is [`cao_core::Container::of`]. Every finding names its container, scope and scope id, so heal never
//! applies it to a same-key memory elsewhere.
//!
//! Detectors, caps and severities (the reference's):
//!
//! | issue | kind | severity | cap |
//! |---|---|---|---|
//! | `orphan_page` | `file_without_row`, `unparsable_file`, `row_without_file`, `missing_from_index_md`, `index_md_without_file` | warning | 40 per scope |
//! | `stale_claim` | `path` | error | 200 per run (all kinds) |
//! | `stale_claim` | `symbol`, `related_key` | warning | (same cap) |
//! | `poison_frequency` | `access_count` (group of >= 20: count > 5 x p95, > 50, content < 200 chars) | error | 50 |
//! | `graph_density` | `related_keys` (a key named by the `related_keys` of > 5 memories of its group) | warning | 50 |
//! | `contradiction` | `model_verdict` (see `lint_contradiction`) | warning | 200 pairs |
//!
//! First of all the index database must pass SQLite's `PRAGMA quick_check`: a damaged one gives a single
//! `index_integrity` error naming `cao memory repair` (which rebuilds it from the wiki files), and nothing else runs.
//!
//! Rows without a memory finding say what a pass did not do: `skipped` (info: a poison group under 20 memories,
//! checks that need a repository root, the contradiction pass without a model), `truncated` (info: a cap cut the
//! findings; the count left out is in the description) and `incomplete` (warning: the code-symbol search or the
//! model ran out of time or answered badly). A pass is never silently empty.
//!
//! Orphans: a topic file without an index row (after the pickup, only a file that cannot be parsed; the description
//! says why it cannot), a topic file that cannot be parsed while its row still holds the memory's last good text
//! (`unparsable_file`), an index row without a topic file, a live memory (file and row)
//! not listed in its container's `index.md`, and an `index.md` line naming neither. A container whose `index.md`
//! has a pending refresh (a store marked it dirty and no flush ran yet) is not compared with its `index.md`.
//!
//! Read-only detectors: like every read, lint first brings changes made to the wiki outside the tool into the index
//! (`Store::prepare_read_now`: a topic file added by hand, or written ahead of its row by an interrupted import,
//! is indexed; the row of a file removed by hand goes), so only files that cannot be parsed can remain without a
//! row. After that step lint opens no write transaction and writes no file (project aliases are resolved without
//! being recorded, no access is counted, `index.md` is not refreshed).

use crate::code_search;
use crate::lint_claims;
use crate::lint_contradiction;
use crate::lint_report::{Corpus, Group, one_line};
pub use crate::lint_report::{
    DESCRIPTION_MAX_CHARS, FindingKind, IssueType, LINT_SCHEMA, LintCounts, LintFinding, LintReport, LintRequest,
    Severity,
};
use cao_core::{Key, Scope, Settings, TerminalContext};
use cao_model::{Model, ModelError};
use cao_ops::types::Progress;
use cao_store::MemoryError;
use cao_store::MemoryRow;
use cao_store::Store;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

/// Most `orphan_page` findings per scope.
pub const ORPHAN_CAP_PER_SCOPE: usize = 40;
/// Most `stale_claim` findings per run.
pub const STALE_CLAIM_CAP: usize = 200;
/// Most `poison_frequency` findings per run.
pub const POISON_CAP: usize = 50;
/// Smallest scope group checked for poisoned access counts.
pub const POISON_MIN_GROUP: usize = 20;
/// A poisoned count is more than this many times the group's 95th percentile ...
pub const POISON_P95_FACTOR: i64 = 5;
/// ... and more than this ...
pub const POISON_MIN_COUNT: i64 = 50;
/// ... on a memory of fewer than this many characters.
pub const POISON_MAX_CONTENT_CHARS: usize = 200;
/// Most `graph_density` findings per run.
pub const DENSITY_CAP: usize = 50;
/// A key named by the `related_keys` of more than this many memories of its group is dense.
pub const DENSITY_MAX_REFERRERS: usize = 5;
/// Most distinct code symbols searched per run.
pub const MAX_SYMBOLS: usize = 2_000;
/// Time the code-symbol search of one run may take.
pub const SYMBOL_SEARCH_BUDGET: Duration = Duration::from_secs(10);

/// Lint with the model configured by `settings` (a configuration error is reported by the contradiction pass).
///
/// Errors: as [`lint`].
pub fn lint_configured(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    req: &LintRequest,
    progress: &dyn Progress,
) -> Result<LintReport, MemoryError> {
    let model = cao_model::from_settings(settings);
    let model_ref = match &model {
        Ok(m) => Ok(&**m),
        Err(e) => Err(e),
    };
    lint(store, settings, ctx, req, model_ref, progress)
}

/// Run every detector over the caller's groups (see the module docs). Memory must be enabled (the caller checks).
///
/// Errors: [`MemoryError::Invalid`] for a malformed explicit project id; index and scan errors. Model failures are
/// findings, never errors.
pub fn lint(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    req: &LintRequest,
    model: Result<&dyn Model, &ModelError>,
    progress: &dyn Progress,
) -> Result<LintReport, MemoryError> {
    if let Some(problem) = store.snapshot().quick_check()? {
        return Ok(damaged_index_report(store, req, &problem));
    }
    // As every read: files changed, added or removed outside the tool are brought into the index first, so a
    // file the index has not picked up yet is indexed, not judged an orphan.
    store.read_now()?;
    let corpus = Corpus::load(store, settings, ctx, req.scope)?;
    lint_corpus(store, &corpus, ctx, req, model, progress)
}

/// The report of a run on a damaged index database: one `index_integrity` error naming the remedy; no other
/// detector runs (they all read through the damaged index).
fn damaged_index_report(store: &Store, req: &LintRequest, problem: &str) -> LintReport {
    let finding = LintFinding::new(
        IssueType::IndexIntegrity,
        FindingKind::QuickCheck,
        Severity::Error,
        format!(
            "the index database {} fails its integrity check ({problem}); run `cao memory repair` to rebuild it \
             from the wiki files (no other check ran)",
            store.home().db_path().display()
        ),
    );
    LintReport {
        schema: LINT_SCHEMA,
        scope: req.scope,
        repo_root: req.repo_root.as_ref().map(|p| p.display().to_string()),
        model: "none".to_owned(),
        memories: 0,
        counts: LintCounts {
            error: 1,
            ..LintCounts::default()
        },
        findings: vec![finding],
    }
}

/// [`lint`] over a loaded corpus (heal plans from the same rows).
///
/// Errors: index and scan errors.
pub fn lint_corpus(
    store: &Store,
    corpus: &Corpus,
    ctx: &TerminalContext,
    req: &LintRequest,
    model: Result<&dyn Model, &ModelError>,
    progress: &dyn Progress,
) -> Result<LintReport, MemoryError> {
    let repo_root = req
        .repo_root
        .clone()
        .or_else(|| ctx.cwd.as_deref().and_then(lint_claims::repo_root_of));
    let mut findings = Vec::new();
    progress.start("orphan pages", corpus.groups.len() as u64);
    let orphan_findings = orphans(store, corpus, progress);
    progress.finish();
    findings.extend(orphan_findings?);
    findings.extend(stale_claims(
        corpus,
        repo_root.as_deref(),
        store.home().root(),
        progress,
    ));
    findings.extend(poison(corpus));
    findings.extend(density(corpus));
    let model_name = match model {
        Ok(m) if m.info().provider != cao_model::ModelProvider::None => m.info().to_string(),
        _ => "none".to_owned(),
    };
    findings.extend(lint_contradiction::contradictions(corpus, model, progress));
    findings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    let mut counts = LintCounts::default();
    for f in &findings {
        match f.severity {
            Severity::Error => counts.error += 1,
            Severity::Warning => counts.warning += 1,
            Severity::Info => counts.info += 1,
        }
    }
    Ok(LintReport {
        schema: LINT_SCHEMA,
        scope: req.scope,
        repo_root: repo_root.map(|p| p.display().to_string()),
        model: model_name,
        memories: corpus.memories(),
        counts,
        findings,
    })
}

/// `findings` sorted and cut to `cap`, plus one `truncated` row saying how many were left out (`what` names them).
fn capped(mut findings: Vec<LintFinding>, cap: usize, what: &str, group: Option<&Group>) -> Vec<LintFinding> {
    findings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    if findings.len() <= cap {
        return findings;
    }
    let issue_type = findings[0].issue_type;
    let left_out = findings.len() - cap;
    findings.truncate(cap);
    let mut row = LintFinding::new(
        issue_type,
        FindingKind::Truncated,
        Severity::Info,
        format!("{left_out} more {what} not listed (at most {cap} are reported)"),
    );
    if let Some(g) = group {
        row.scope = Some(g.scope);
    }
    findings.push(row);
    findings
}

/// `orphan_page` findings of every group, at most [`ORPHAN_CAP_PER_SCOPE`] per scope.
///
/// A backend whose content is not in files has no orphan pages: none are reported.
fn orphans(store: &Store, corpus: &Corpus, progress: &dyn Progress) -> Result<Vec<LintFinding>, MemoryError> {
    let Some(content) = store.files() else {
        return Ok(Vec::new());
    };
    let scan = content.scan()?;
    let dirty: HashSet<String> = content.overviews_pending()?.into_iter().collect();
    let unparsable = |path: &Path| content.unparsable(path).map(|reason| one_line(&reason, 100));
    let mut files: HashMap<Group, BTreeSet<String>> = HashMap::new();
    let mut scanned: HashMap<(Group, &str), &cao_store::ScannedFile> = HashMap::new();
    for t in &scan.topics {
        let g = Group {
            scope: t.scope,
            scope_id: t.scope_id.clone(),
        };
        files.entry(g.clone()).or_default().insert(t.key.to_string());
        scanned.insert((g, t.key.as_str()), t);
    }
    let mut listed: HashMap<String, Option<BTreeSet<String>>> = HashMap::new();
    let mut per_scope: BTreeMap<Scope, Vec<LintFinding>> = BTreeMap::new();
    for (g, rows) in &corpus.groups {
        progress.advance(1);
        let container = g.container();
        let keys: BTreeSet<String> = rows.iter().map(|r| r.key.to_string()).collect();
        let empty = BTreeSet::new();
        let on_disk = files.get(g).unwrap_or(&empty);
        let out = per_scope.entry(g.scope).or_default();
        for key in on_disk.difference(&keys) {
            let path = scanned.get(&(g.clone(), key.as_str())).map(|t| t.path.as_path());
            let description = match path.and_then(&unparsable) {
                Some(reason) => format!(
                    "topic file wiki/{} cannot be parsed: {reason}; it has no index row",
                    g.rel_path(key)
                ),
                None => format!("topic file wiki/{} has no index row", g.rel_path(key)),
            };
            out.push(
                LintFinding::new(
                    IssueType::OrphanPage,
                    FindingKind::FileWithoutRow,
                    Severity::Warning,
                    description,
                )
                .in_group(g)
                .key(key),
            );
        }
        // A file that no longer agrees with its row (another stamp or path than the row recorded) and cannot be
        // parsed: the walk left the row, which still holds the memory's last good text. Files agreeing with their
        // rows were parsed when written and are not read.
        for row in rows {
            let Some(t) = scanned.get(&(g.clone(), row.key.as_str())) else {
                continue;
            };
            if t.stamp.is_some() && row.file_stamp == t.stamp && Path::new(&row.file_path) == t.path {
                continue;
            }
            if let Some(reason) = unparsable(&t.path) {
                out.push(
                    LintFinding::new(
                        IssueType::OrphanPage,
                        FindingKind::UnparsableFile,
                        Severity::Warning,
                        format!(
                            "topic file wiki/{} cannot be parsed: {reason}; the index row still holds the memory's \
                             last good text",
                            g.rel_path(row.key.as_str())
                        ),
                    )
                    .in_group(g)
                    .key(row.key.as_str()),
                );
            }
        }
        for key in keys.difference(on_disk) {
            out.push(
                LintFinding::new(
                    IssueType::OrphanPage,
                    FindingKind::RowWithoutFile,
                    Severity::Warning,
                    format!("index row has no topic file (wiki/{})", g.rel_path(key)),
                )
                .in_group(g)
                .key(key),
            );
        }
        // index.md: only for containers without a pending refresh.
        if dirty.contains(container.as_str()) || container.as_str().is_empty() {
            continue;
        }
        let links = listed
            .entry(container.as_str().to_owned())
            .or_insert_with(|| read_index_links(content, container.as_str()));
        let Some(links) = links else { continue };
        for key in keys.intersection(on_disk) {
            if !links.contains(&g.rel_path(key)) {
                out.push(
                    LintFinding::new(
                        IssueType::OrphanPage,
                        FindingKind::MissingFromIndexMd,
                        Severity::Warning,
                        format!("not listed in {container}/wiki/index.md"),
                    )
                    .in_group(g)
                    .key(key),
                );
            }
        }
        for link in links.iter() {
            let Some(key) = key_of_link(g, link) else { continue };
            if !keys.contains(&key) && !on_disk.contains(&key) {
                out.push(
                    LintFinding::new(
                        IssueType::OrphanPage,
                        FindingKind::IndexMdWithoutFile,
                        Severity::Warning,
                        format!("{container}/wiki/index.md lists {link}, which has no topic file and no row"),
                    )
                    .in_group(g)
                    .key(&key),
                );
            }
        }
    }
    let mut out = Vec::new();
    for (scope, findings) in per_scope {
        let g = Group { scope, scope_id: None };
        out.extend(capped(
            findings,
            ORPHAN_CAP_PER_SCOPE,
            "orphan pages of this scope",
            Some(&g),
        ));
    }
    Ok(out)
}

/// The link targets of a container's `index.md` (`- [key](target) ...` lines); `Some(empty)` when the file is
/// missing, `None` when it cannot be read (then it is not compared).
fn read_index_links(content: &dyn cao_store::ContentFiles, container: &str) -> Option<BTreeSet<String>> {
    let path = content.overview_path(container).ok()?;
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(BTreeSet::new()),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "lint: cannot read index.md; not compared");
            return None;
        }
    };
    Some(
        text.lines()
            .filter_map(|l| l.strip_prefix("- ["))
            .filter_map(|l| l.split_once("](").map(|(_, rest)| rest))
            .filter_map(|rest| rest.split_once(')').map(|(target, _)| target.to_owned()))
            .collect(),
    )
}

/// The key of an `index.md` link target when it is a topic of group `g`.
fn key_of_link(g: &Group, link: &str) -> Option<String> {
    let stem = link.strip_suffix(".md")?;
    let prefix = match (g.scope, &g.scope_id) {
        (Scope::Session | Scope::Agent, Some(id)) => format!("{}/{id}/", g.scope),
        _ => format!("{}/", g.scope),
    };
    let key = stem.strip_prefix(&prefix)?;
    Key::parse_strict(key).ok().map(|k| k.to_string())
}

/// `stale_claim` findings (paths, code symbols, related keys), at most [`STALE_CLAIM_CAP`].
fn stale_claims(
    corpus: &Corpus,
    repo_root: Option<&Path>,
    cao_home: &Path,
    progress: &dyn Progress,
) -> Vec<LintFinding> {
    let mut out = Vec::new();
    let mut symbol_users: BTreeMap<String, Vec<(&Group, &MemoryRow)>> = BTreeMap::new();
    let mut skipped_relative = 0usize;
    progress.start("stale claims", corpus.memories() as u64);
    for (g, rows) in &corpus.groups {
        let keys: HashSet<&str> = rows.iter().map(|r| r.key.as_str()).collect();
        for row in rows {
            progress.advance(1);
            for token in lint_claims::path_tokens(&row.content) {
                let exists = match repo_root {
                    Some(root) => lint_claims::path_exists(root, &token),
                    None if lint_claims::is_absolute(&token) => lint_claims::path_exists(Path::new("/"), &token),
                    None => {
                        skipped_relative += 1;
                        continue;
                    }
                };
                if !exists {
                    let where_ = if lint_claims::is_absolute(&token) {
                        "on this machine"
                    } else {
                        "under the repository root"
                    };
                    out.push(
                        LintFinding::new(
                            IssueType::StaleClaim,
                            FindingKind::Path,
                            Severity::Error,
                            format!("path {token} does not exist {where_}"),
                        )
                        .in_group(g)
                        .key(row.key.as_str())
                        .claim(&token),
                    );
                }
            }
            if repo_root.is_some() {
                for symbol in lint_claims::code_symbols(&row.content) {
                    symbol_users.entry(symbol).or_default().push((g, row));
                }
            }
            for related in cao_lifecycle::parse_related_keys(row.related_keys.as_deref().unwrap_or("")) {
                if !keys.contains(related.as_str()) {
                    out.push(
                        LintFinding::new(
                            IssueType::StaleClaim,
                            FindingKind::RelatedKey,
                            Severity::Warning,
                            format!("related key {related} names no memory of {}", g.label()),
                        )
                        .in_group(g)
                        .key(row.key.as_str())
                        .related(related.as_str()),
                    );
                }
            }
        }
    }
    progress.finish();
    let mut notes = Vec::new();
    if let Some(root) = repo_root {
        let mut symbols: BTreeSet<String> = symbol_users.keys().cloned().collect();
        if symbols.len() > MAX_SYMBOLS {
            let left_out = symbols.len() - MAX_SYMBOLS;
            symbols = symbols.into_iter().take(MAX_SYMBOLS).collect();
            notes.push(LintFinding::new(
                IssueType::StaleClaim,
                FindingKind::Truncated,
                Severity::Info,
                format!("{left_out} code symbols not searched (at most {MAX_SYMBOLS} per run)"),
            ));
        }
        progress.start("code symbols", 1);
        let search = code_search::find_symbols(root, cao_home, &symbols, Instant::now() + SYMBOL_SEARCH_BUDGET);
        progress.advance(1);
        progress.finish();
        if search.complete {
            for symbol in symbols.iter().filter(|s| !search.found.contains(*s)) {
                for (g, row) in symbol_users.get(symbol).map(Vec::as_slice).unwrap_or_default() {
                    out.push(
                        LintFinding::new(
                            IssueType::StaleClaim,
                            FindingKind::Symbol,
                            Severity::Warning,
                            format!("code symbol {symbol} is not found in the repository"),
                        )
                        .in_group(g)
                        .key(row.key.as_str())
                        .claim(symbol),
                    );
                }
            }
        } else {
            notes.push(LintFinding::new(
                IssueType::StaleClaim,
                FindingKind::Incomplete,
                Severity::Warning,
                format!(
                    "code-symbol search stopped after {} s ({} files searched); {} symbols not judged",
                    SYMBOL_SEARCH_BUDGET.as_secs(),
                    search.files,
                    symbols.len() - search.found.len()
                ),
            ));
        }
    } else {
        notes.push(LintFinding::new(
            IssueType::StaleClaim,
            FindingKind::Skipped,
            Severity::Info,
            format!(
                "no repository root (the working directory is not inside a git repository; --repo-root names one): code symbols and {skipped_relative} relative paths not checked"
            ),
        ));
    }
    let mut findings = capped(out, STALE_CLAIM_CAP, "stale claims", None);
    findings.extend(notes);
    findings
}

/// The nearest-rank 95th percentile of `sorted` (ascending, non-empty).
fn p95(sorted: &[i64]) -> i64 {
    let rank = (sorted.len() * 95).div_ceil(100).max(1);
    sorted[rank.min(sorted.len()) - 1]
}

/// `poison_frequency` findings (and a `skipped` row per group under [`POISON_MIN_GROUP`]), at most [`POISON_CAP`].
fn poison(corpus: &Corpus) -> Vec<LintFinding> {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for (g, rows) in &corpus.groups {
        if rows.is_empty() {
            continue;
        }
        if rows.len() < POISON_MIN_GROUP {
            notes.push(
                LintFinding::new(
                    IssueType::PoisonFrequency,
                    FindingKind::Skipped,
                    Severity::Info,
                    format!(
                        "skipped: {} has {} memories (access counts are judged in groups of {POISON_MIN_GROUP} or more)",
                        g.label(),
                        rows.len()
                    ),
                )
                .in_group(g),
            );
            continue;
        }
        let mut counts: Vec<i64> = rows.iter().map(|r| r.access_count.max(0)).collect();
        counts.sort_unstable();
        let p = p95(&counts);
        for r in rows {
            let chars = r.content.chars().count();
            if r.access_count > POISON_P95_FACTOR.saturating_mul(p)
                && r.access_count > POISON_MIN_COUNT
                && chars < POISON_MAX_CONTENT_CHARS
            {
                out.push(
                    LintFinding::new(
                        IssueType::PoisonFrequency,
                        FindingKind::AccessCount,
                        Severity::Error,
                        format!(
                            "access_count {} is over {POISON_P95_FACTOR} x the group's p95 ({p}) and over \
                             {POISON_MIN_COUNT}, on {chars} characters of content",
                            r.access_count
                        ),
                    )
                    .in_group(g)
                    .key(r.key.as_str()),
                );
            }
        }
    }
    let mut findings = capped(out, POISON_CAP, "poisoned access counts", None);
    findings.extend(notes);
    findings
}

/// `graph_density` findings, at most [`DENSITY_CAP`].
fn density(corpus: &Corpus) -> Vec<LintFinding> {
    let mut out = Vec::new();
    for (g, rows) in &corpus.groups {
        let mut referrers: BTreeMap<String, usize> = BTreeMap::new();
        for r in rows {
            for k in cao_lifecycle::parse_related_keys(r.related_keys.as_deref().unwrap_or("")) {
                if k != r.key {
                    *referrers.entry(k.to_string()).or_default() += 1;
                }
            }
        }
        for (key, n) in referrers.into_iter().filter(|(_, n)| *n > DENSITY_MAX_REFERRERS) {
            out.push(
                LintFinding::new(
                    IssueType::GraphDensity,
                    FindingKind::RelatedKeys,
                    Severity::Warning,
                    format!("named by the related_keys of {n} memories (more than {DENSITY_MAX_REFERRERS})"),
                )
                .in_group(g)
                .key(&key),
            );
        }
    }
    capped(out, DENSITY_CAP, "dense keys", None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p95_is_the_nearest_rank() {
        let v: Vec<i64> = (1..=20).collect();
        assert_eq!(p95(&v), 19);
        assert_eq!(p95(&[7]), 7);
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(p95(&v), 95);
    }

    #[test]
    fn index_links_map_back_to_keys_of_their_group_only() {
        let project = Group {
            scope: Scope::Project,
            scope_id: Some("p".into()),
        };
        let session = Group {
            scope: Scope::Session,
            scope_id: Some("s1".into()),
        };
        assert_eq!(key_of_link(&project, "project/k-1.md").as_deref(), Some("k-1"));
        assert_eq!(key_of_link(&project, "global/k-1.md"), None);
        assert_eq!(key_of_link(&session, "session/s1/k.md").as_deref(), Some("k"));
        assert_eq!(key_of_link(&session, "session/s2/k.md"), None);
        assert_eq!(key_of_link(&project, "project/Bad Key.md"), None);
        assert_eq!(project.rel_path("k"), "project/k.md");
        assert_eq!(session.rel_path("k"), "session/s1/k.md");
    }
}
