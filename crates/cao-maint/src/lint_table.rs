//! Text renderings of the lint report and the heal plan for people (`cao memory lint`, `cao memory heal`): pure
//! functions, unit-tested byte for byte and golden-tested through the CLI.
//!
//! Lint: a header line, a table (`SEVERITY ISSUE KIND CONTAINER SCOPE KEY DESCRIPTION`, columns padded, never
//! cut, a long cell pushing the rest right), and a footer with the counts. Heal: a header line, one block per
//! action (`[status] action scope key: detail`, a `reason:` line when skipped or failed), the findings left
//! without an action of their own, and a footer. Every value from a memory (keys, claims, descriptions) has its control characters
//! escaped, so stored text cannot break a row or reach the terminal as an escape sequence.

use crate::heal::{ActionStatus, HealReport};
use crate::lint_report::{LintReport, one_line};
use std::fmt::Write as _;

/// Width of each lint column but the last.
const WIDTHS: [usize; 6] = [8, 16, 22, 12, 20, 28];

fn scope_label(scope: Option<cao_core::Scope>, scope_id: Option<&str>) -> String {
    match (scope, scope_id) {
        (Some(s), Some(id)) => one_line(&format!("{s}/{id}"), 80),
        (Some(s), None) => s.to_string(),
        (None, _) => "-".to_owned(),
    }
}

fn push_row(out: &mut String, cells: [&str; 7]) {
    let mut line = String::new();
    for (cell, width) in cells.iter().zip(WIDTHS) {
        let _ = write!(line, "{cell:<width$} ");
    }
    line.push_str(cells[6]);
    out.push_str(line.trim_end());
    out.push('\n');
}

/// The lint report as a table (see the module docs). Ends with a newline.
pub fn render_lint_table(report: &LintReport) -> String {
    let mut out = String::new();
    let scope = report
        .scope
        .map_or_else(|| "every visible scope".to_owned(), |s| format!("scope {s}"));
    let root = report
        .repo_root
        .as_deref()
        .map_or_else(|| "none".to_owned(), |r| one_line(r, 200));
    let _ = writeln!(
        out,
        "Lint of {} memories ({scope}; repository root: {root}; model: {})",
        report.memories,
        one_line(&report.model, 80)
    );
    if report.findings.is_empty() {
        out.push_str("No findings.\n");
    } else {
        out.push('\n');
        push_row(
            &mut out,
            ["SEVERITY", "ISSUE", "KIND", "CONTAINER", "SCOPE", "KEY", "DESCRIPTION"],
        );
        for f in &report.findings {
            let kind = serde_json::to_value(f.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let key = match (&f.key, &f.related_key) {
                (Some(k), _) => one_line(k, 60),
                (None, _) => "-".to_owned(),
            };
            push_row(
                &mut out,
                [
                    f.severity.as_str(),
                    f.issue_type.as_str(),
                    &kind,
                    &f.container
                        .as_deref()
                        .map_or_else(|| "-".to_owned(), |c| one_line(c, 80)),
                    &scope_label(f.scope, f.scope_id.as_deref()),
                    &key,
                    &one_line(&f.description, 200),
                ],
            );
        }
    }
    let _ = writeln!(
        out,
        "\n{} errors, {} warnings, {} info",
        report.counts.error, report.counts.warning, report.counts.info
    );
    out
}

/// The heal plan or result as text (see the module docs). Ends with a newline.
pub fn render_heal_text(report: &HealReport) -> String {
    let mut out = String::new();
    let mode = if report.apply {
        "applied"
    } else {
        "dry run; --apply to carry it out"
    };
    let _ = writeln!(
        out,
        "Heal plan ({mode}): {} actions for {} findings",
        report.actions.len(),
        report.findings
    );
    for a in &report.actions {
        let status = match a.status {
            ActionStatus::Planned => "planned",
            ActionStatus::Applied => "applied",
            ActionStatus::Skipped => "skipped",
            ActionStatus::Failed => "FAILED",
        };
        let target = match &a.key {
            Some(k) => format!(
                "{} {}",
                scope_label(Some(a.scope), a.scope_id.as_deref()),
                one_line(k, 60)
            ),
            None => format!("container {}", one_line(&a.container, 80)),
        };
        let _ = writeln!(
            out,
            "  [{status}] {} {target}: {}",
            a.action.as_str(),
            one_line(&a.detail, 300)
        );
        if let Some(r) = &a.reason {
            let _ = writeln!(out, "      reason: {}", one_line(r, 300));
        }
    }
    if !report.without_action.is_empty() {
        out.push_str("Findings without an action of their own:\n");
        for u in &report.without_action {
            let _ = writeln!(
                out,
                "  {} {} {}: {}",
                u.issue_type.as_str(),
                scope_label(u.scope, u.scope_id.as_deref()),
                u.key.as_deref().map_or_else(|| "-".to_owned(), |k| one_line(k, 60)),
                one_line(&u.reason, 300)
            );
        }
    }
    if report.over_limit > 0 {
        let _ = writeln!(
            out,
            "{} more actions are left for the next run (at most {} per run)",
            report.over_limit,
            crate::heal::MAX_HEAL_ACTIONS
        );
    }
    if report.dropped > 0 {
        let _ = writeln!(out, "{} findings of other containers were dropped", report.dropped);
    }
    let c = report.counts;
    let _ = writeln!(
        out,
        "{} planned, {} applied, {} skipped, {} failed",
        c.planned, c.applied, c.skipped, c.failed
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint_report::{FindingKind, IssueType, LINT_SCHEMA, LintCounts, LintFinding, Severity};
    use cao_core::Scope;

    #[test]
    fn hostile_values_stay_on_their_row() {
        let report = LintReport {
            schema: LINT_SCHEMA,
            scope: None,
            repo_root: Some("/r".into()),
            model: "none".into(),
            memories: 1,
            counts: LintCounts {
                error: 1,
                warning: 0,
                info: 0,
            },
            findings: vec![LintFinding {
                issue_type: IssueType::StaleClaim,
                kind: FindingKind::Path,
                severity: Severity::Error,
                container: Some("p".into()),
                scope: Some(Scope::Project),
                scope_id: Some("p".into()),
                key: Some("k".into()),
                related_key: None,
                claim: Some("a\nb".into()),
                description: "path a\nb\u{1b}[31m does not exist".into(),
            }],
        };
        let t = render_lint_table(&report);
        assert_eq!(t.lines().count(), 6, "{t}");
        assert!(!t.contains('\u{1b}'), "{t}");
        assert!(t.contains("error    stale_claim      path"), "{t}");
        assert!(t.ends_with("1 errors, 0 warnings, 0 info\n"), "{t}");
    }
}
