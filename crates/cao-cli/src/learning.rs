//! The self-learning commands of `cao memory` (spec 004): `outcomes list` (the operator view of recorded
//! outcomes) and `promote` (reinforced lessons into an agent profile's Learned Patterns block).
//!
//! `cao memory promote <agent> [--apply] [--min-recalls N] [--profile-path P] [--remove KEY]... [--format
//! text|json]`: a dry run by default, which prints the plan as a diff per lesson key (add `+`, update `~` with the
//! old and new text, remove `-`), the lessons left unchanged, skipped (10-lesson cap) and not eligible (with the
//! gate's reason), and a reminder that promoted lessons become standing instructions. `--apply` writes the plan
//! and needs `memory.instruction_promotion_enabled` (otherwise exit 1 naming the setting, before the profile is read). Lesson
//! text is untrusted: control characters are shown escaped. `--format json` prints the `cao.memory.promote/1`
//! report (docs/schemas/cao.memory.promote-1.json).
//!
//! `cao memory outcomes list [--session S] [--agent A] [--workflow W] [--limit N] [--format table|json]`: newest
//! first, every session unless filtered, limit clamped to 1..200 (default 50). With learning off nothing is recorded;
//! the list is empty and a note on stderr names `memory.learning_enabled`. `--format json` prints
//! `cao.memory.outcomes/1` (docs/schemas/cao.memory.outcomes-1.json).

use crate::cli::{ListFormat, TextFormat};
use crate::error::CliError;
use crate::output::{self, one_line};
use cao_memory::{ListOutcomesArgs, MemoryService, Outcome, PromoteRequest, PromotionReport};
use clap::{Args, Subcommand};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The schema name of `cao memory outcomes list --format json`.
pub(crate) const OUTCOMES_SCHEMA: &str = "cao.memory.outcomes/1";

/// `cao memory outcomes ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum OutcomesCommand {
    /// List recorded workflow outcomes, newest first (every session unless filtered).
    List(OutcomesListArgs),
}

/// Arguments of `cao memory outcomes list`.
#[derive(Debug, Clone, Args)]
pub(crate) struct OutcomesListArgs {
    /// Only this session.
    #[arg(long, value_name = "SESSION")]
    pub session: Option<String>,
    /// Only this agent profile.
    #[arg(long, value_name = "PROFILE")]
    pub agent: Option<String>,
    /// Only this workflow.
    #[arg(long, value_name = "WORKFLOW")]
    pub workflow: Option<String>,
    /// Most outcomes, 1-200 [default: 50].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i64).range(1..=200))]
    pub limit: Option<i64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
}

/// Arguments of `cao memory promote`.
#[derive(Debug, Clone, Args)]
pub(crate) struct PromoteArgs {
    /// The agent profile whose lessons to promote (`<agent dir>/<AGENT>.md`).
    pub agent: String,
    /// Write the plan into the profile (needs memory.instruction_promotion_enabled); without it, a dry run.
    #[arg(long)]
    pub apply: bool,
    /// Minimum recall count of an eligible lesson [default: 3].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32))]
    pub min_recalls: Option<u32>,
    /// The profile file to edit instead of the one found in the agent directories (it must exist).
    #[arg(long, value_name = "P")]
    pub profile_path: Option<PathBuf>,
    /// With --apply: write only the plan a dry run printed as `plan digest: <HEX>`; when the plan made now differs
    /// (a lesson was stored or changed meanwhile), nothing is written and the command fails (exit 1).
    #[arg(long, value_name = "HEX", requires = "apply", value_parser = crate::lint::parse_plan_digest)]
    pub plan_digest: Option<String>,
    /// Remove this lesson from the block (repeatable); removal is always explicit.
    #[arg(long, value_name = "KEY")]
    pub remove: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TextFormat::Text)]
    pub format: TextFormat,
}

/// `cao memory outcomes list`: the rows as a table or `cao.memory.outcomes/1` JSON.
///
/// Errors: the service's.
pub(crate) fn run_outcomes(svc: &MemoryService, cmd: &OutcomesCommand) -> Result<String, CliError> {
    let OutcomesCommand::List(a) = cmd;
    if !svc.settings().learning_enabled() {
        tracing::warn!("learning is disabled (memory.learning_enabled is false): no outcomes are being recorded");
    }
    let rows = svc.list_outcomes(&ListOutcomesArgs {
        session_name: a.session.clone(),
        agent_profile: a.agent.clone(),
        workflow_name: a.workflow.clone(),
        limit: a.limit,
    })?;
    match a.format {
        ListFormat::Json => {
            #[derive(Serialize)]
            struct Doc<'a> {
                schema: &'static str,
                outcomes: &'a [Outcome],
            }
            output::json(&Doc {
                schema: OUTCOMES_SCHEMA,
                outcomes: &rows,
            })
            .map_err(CliError::failure)
        }
        ListFormat::Table => Ok(outcomes_table(&rows)),
    }
}

/// The outcomes table: `CREATED SESSION AGENT RESULT SCORE TASK` (times `%Y-%m-%d %H:%M` UTC), or `No outcomes
/// found.`; every field on one line with control characters escaped.
pub(crate) fn outcomes_table(rows: &[Outcome]) -> String {
    if rows.is_empty() {
        return "No outcomes found.\n".to_owned();
    }
    let header = format!(
        "{:<16} {:<20} {:<16} {:<6} {:<5} {}",
        "CREATED", "SESSION", "AGENT", "RESULT", "SCORE", "TASK"
    );
    let mut out = format!("{header}\n{}\n", "-".repeat(header.len()));
    for o in rows {
        let created = o
            .created_at
            .as_deref()
            .map(|t| t.replacen('T', " ", 1).chars().take(16).collect::<String>())
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{:<16} {:<20} {:<16} {:<6} {:<5} {}",
            created,
            one_line(&o.session_name),
            one_line(o.agent_profile.as_deref().unwrap_or("-")),
            if o.success { "pass" } else { "fail" },
            o.score.map_or_else(|| "-".to_owned(), |s| s.to_string()),
            one_line(&o.task_label)
        );
        if !o.friction_notes.is_empty() {
            let _ = writeln!(out, "{:<16} friction: {}", "", one_line(&o.friction_notes));
        }
    }
    out
}

/// The service request of a `cao memory promote` command line.
pub(crate) fn promote_request(a: &PromoteArgs) -> PromoteRequest {
    PromoteRequest {
        agent: a.agent.clone(),
        apply: a.apply,
        min_recalls: a.min_recalls,
        profile_path: a.profile_path.clone(),
        remove: a.remove.clone(),
        plan_digest: a.plan_digest.clone(),
    }
}

/// `cao memory promote`: plan (and with `--apply` write), rendered as text or JSON.
///
/// Errors: the service's (flag off names `memory.instruction_promotion_enabled`; a built-in target; a missing
/// profile).
pub(crate) fn run_promote(svc: &MemoryService, a: &PromoteArgs) -> Result<String, CliError> {
    let report = svc.promote(&promote_request(a))?;
    let digest = report.plan_digest();
    match a.format {
        TextFormat::Json => crate::lint::json_with_digest(&report, &digest).map_err(CliError::failure),
        TextFormat::Text if a.apply || report.changes.is_empty() => Ok(promote_text(&report)),
        TextFormat::Text => {
            let mut command = format!("cao memory promote {}", output::one_line(&a.agent));
            if let Some(n) = a.min_recalls {
                command.push_str(&format!(" --min-recalls {n}"));
            }
            if let Some(p) = &a.profile_path {
                command.push_str(&format!(
                    " --profile-path {}",
                    output::one_line(&p.display().to_string())
                ));
            }
            for key in &a.remove {
                command.push_str(&format!(" --remove {}", output::one_line(key)));
            }
            Ok(format!(
                "{}{}",
                promote_text(&report),
                crate::lint::digest_lines(&digest, &command)
            ))
        }
    }
}

/// The provenance line of a planned add or update: `    written by terminal T (agent profile P, session S)`.
fn written_by(out: &mut String, c: &cao_memory::PlannedChange) {
    if let Some(w) = &c.written_by {
        let _ = writeln!(out, "    {}", one_line(&w.describe()));
    }
}

/// The text rendering of a promotion report (see the module documentation).
pub(crate) fn promote_text(r: &PromotionReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Promotion {} for {} -> {} (min recalls {})",
        if r.written { "applied" } else { "plan" },
        one_line(&r.agent),
        one_line(&r.profile_path),
        r.min_recalls
    );
    let recalled = |n: Option<i64>| n.map(|n| format!(" (recalled {n} times)")).unwrap_or_default();
    for c in &r.changes {
        let key = one_line(&c.key);
        match c.action {
            "add" => {
                let _ = writeln!(out, "+ add     {key}{}", recalled(c.access_count));
                let _ = writeln!(out, "+   - {}", one_line(c.text.as_deref().unwrap_or("")));
                written_by(&mut out, c);
            }
            "update" => {
                let _ = writeln!(out, "~ update  {key}{}", recalled(c.access_count));
                let _ = writeln!(out, "-   - {}", one_line(c.previous.as_deref().unwrap_or("")));
                let _ = writeln!(out, "+   - {}", one_line(c.text.as_deref().unwrap_or("")));
                written_by(&mut out, c);
            }
            _ => {
                let _ = writeln!(out, "- remove  {key}");
                let _ = writeln!(out, "-   - {}", one_line(c.previous.as_deref().unwrap_or("")));
            }
        }
    }
    if !r.unchanged.is_empty() {
        let keys: Vec<String> = r.unchanged.iter().map(|k| one_line(k)).collect();
        let _ = writeln!(out, "= unchanged: {}", keys.join(", "));
    }
    for s in &r.skipped {
        let why = match s.reason {
            "cap" => "the block holds 10 lessons; nothing is evicted (remove one with --remove first)",
            _ => "not in the block",
        };
        let _ = writeln!(out, "! skipped {}: {why}", one_line(&s.key));
    }
    for i in &r.ineligible {
        let _ = writeln!(out, "  not eligible {}: {}", one_line(&i.key), one_line(&i.message));
    }
    if r.changes.is_empty() {
        out.push_str("Nothing to change: the profile is up to date.\n");
    } else if r.written {
        let _ = writeln!(out, "Wrote {} ({} change(s)).", one_line(&r.real_path), r.changes.len());
    } else {
        out.push_str(
            "Dry run: nothing was written. Promoted lessons become standing instructions for every session of this \
             agent: review them like a change to its system prompt, then run again with --apply (needs \
             memory.instruction_promotion_enabled).\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cao_memory::{PlannedChange, SkippedChange};

    #[test]
    fn the_plan_is_a_diff_with_escaped_untrusted_text() {
        let r = PromotionReport {
            schema: cao_memory::PROMOTE_SCHEMA,
            agent: "worker".into(),
            profile_path: "/a/worker.md".into(),
            real_path: "/a/worker.md".into(),
            min_recalls: 3,
            apply: false,
            written: false,
            changes: vec![
                PlannedChange {
                    key: "new".into(),
                    action: "add",
                    text: Some("Do x.\u{1b}[2J Applies when: y.".into()),
                    previous: None,
                    access_count: Some(4),
                    written_by: Some(cao_memory::LessonWriter {
                        terminal_id: Some("t-retro".into()),
                        agent_profile: Some("retrospector".into()),
                        session: None,
                    }),
                },
                PlannedChange {
                    key: "old".into(),
                    action: "update",
                    text: Some("B.".into()),
                    previous: Some("A.".into()),
                    access_count: Some(3),
                    written_by: None,
                },
            ],
            unchanged: vec!["same".into()],
            skipped: vec![SkippedChange {
                key: "extra".into(),
                reason: "cap",
            }],
            ineligible: vec![],
            profile_before: String::new(),
            profile_after: String::new(),
        };
        let text = promote_text(&r);
        assert_eq!(
            text.lines().take(7).collect::<Vec<_>>(),
            [
                "Promotion plan for worker -> /a/worker.md (min recalls 3)",
                "+ add     new (recalled 4 times)",
                "+   - Do x.\\u{1b}[2J Applies when: y.",
                "    written by terminal t-retro (agent profile retrospector)",
                "~ update  old (recalled 3 times)",
                "-   - A.",
                "+   - B.",
            ]
        );
        assert!(text.contains("= unchanged: same\n! skipped extra: the block holds 10 lessons"));
        assert!(text.contains("Dry run: nothing was written"));
        assert!(!text.contains('\u{1b}'));
    }
}
