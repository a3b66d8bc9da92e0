//! The learning pages (only while `memory.learning_enabled` is on; otherwise they answer 404 and are not in the
//! navigation): `/ui/learning` (every agent with a profile, outcomes or lessons), `/ui/learning/{agent}` (its
//! outcomes, newest first, and its lessons, most recalled first, with access-count bars and the promotion gate's
//! verdict), `/ui/learning/{agent}/promote` (the promotion plan as a diff of the profile) and the apply form
//! (`POST`, `cao:admin`, the CSRF token, a ticked confirmation and the digest of the plan shown). Every rule is `cao-memory`'s: the verdict is
//! `MemoryService::agent_lessons` (the gate `cao memory promote` applies), the plan and the write are
//! `MemoryService::promote`. Outcome and lesson text is untrusted and only interpolated by maud.

use super::layout::{bar, csrf_field, page, pager, short};
use super::pages::{diff, done_message, memory_href, query_string};
use super::{Ctx, PAGE_SIZE, UiForm, UiQuery, UiResult, UiState};
use crate::api::{ApiError, with_service};
use crate::auth::ApiScope;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use cao_core::Scope;
use cao_memory::{AgentProfileSource, ListOutcomesArgs, MemoryError, PromoteRequest, PromotionReport};
use maud::{Markup, html};
use serde::Deserialize;

/// Outcomes an agent's page shows (the newest).
const OUTCOMES_SHOWN: i64 = 50;
/// Characters of friction notes a row shows.
const NOTES_CHARS: usize = 240;

/// The access count the gate asks for: `given` (as `cao memory promote --min-recalls`), else the default (spec
/// 004 "The promotion gate").
fn min_recalls(given: Option<u32>) -> u32 {
    given.unwrap_or(cao_learn::gate::DEFAULT_MIN_RECALLS)
}

/// `?min_recalls=` of a link, when not the default.
fn recalls_param(n: u32) -> String {
    if n == cao_learn::gate::DEFAULT_MIN_RECALLS {
        String::new()
    } else {
        n.to_string()
    }
}

/// 404 unless learning is on: the pages of a feature that is off do not exist.
fn require_learning(ctx: &Ctx) -> Result<(), ApiError> {
    if ctx.learning {
        Ok(())
    } else {
        Err(ApiError::from(MemoryError::LearningDisabled))
    }
}

/// An agent name from the path, checked by the profile-name rule (`cao_learn::profile::validate_name`).
fn agent_name(raw: &str) -> Result<String, ApiError> {
    cao_learn::profile::validate_name(raw).map_err(|e| ApiError::invalid(e.to_string()))?;
    Ok(raw.to_owned())
}

fn agent_href(agent: &str) -> String {
    format!("/ui/learning/{agent}")
}

/// `GET /ui/learning`: every agent with a profile, outcomes or lessons.
pub(crate) async fn overview(State(state): State<UiState>, ctx: Ctx) -> UiResult {
    require_learning(&ctx)?;
    let agents = with_service(&state.api, |svc| Ok(svc.learning_agents()?)).await?;
    let body = html! {
        h1 { "Learning" }
        p.lead { "Outcomes agents reported, the lessons stored in each agent's scope, and which of them the promotion gate would copy into the agent's profile (recalled at least " (min_recalls(None)) " times by default)." }
        @if agents.is_empty() {
            p.empty { "No agent has a profile, outcomes or lessons yet." }
        } @else {
            div.scroll {
                table.agents {
                    thead { tr { th { "agent" } th { "profile" } th { "outcomes" } th { "succeeded" } th { "lessons" } } }
                    tbody {
                        @for a in &agents {
                            tr data-agent=(a.name) {
                                td { a href=(agent_href(&a.name)) { (a.name) } }
                                td { (profile_label(&a.profile)) }
                                td.num { (a.outcomes) }
                                td.num { (a.successes) }
                                td.num { (a.lessons) }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(page(&ctx, StatusCode::OK, "Learning", Some("/ui/learning"), body))
}

fn profile_label(p: &AgentProfileSource) -> Markup {
    html! {
        @match p {
            AgentProfileSource::Builtin => span.tag { "built-in" },
            AgentProfileSource::File(path) => code { (path) },
            AgentProfileSource::Invalid(why) => span.warn { "unusable: " (why) },
            AgentProfileSource::Missing => span.small { "no profile" },
        }
    }
}

/// Query of an agent's page.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct AgentQuery {
    page: Option<usize>,
    min_recalls: Option<u32>,
}

/// `GET /ui/learning/{agent}`: its newest outcomes and its lessons (paged), with access-count bars and verdicts
/// (`?min_recalls=` as `cao memory promote --min-recalls`, default 3).
pub(crate) async fn agent(
    State(state): State<UiState>,
    ctx: Ctx,
    Path(raw): Path<String>,
    UiQuery(q): UiQuery<AgentQuery>,
) -> UiResult {
    require_learning(&ctx)?;
    let agent = agent_name(&raw)?;
    let page_no = q.page.unwrap_or(0).min(cao_memory::MAX_CANDIDATES / PAGE_SIZE);
    let min = min_recalls(q.min_recalls);
    let (outcomes, (lessons, more)) = {
        let agent = agent.clone();
        with_service(&state.api, move |svc| {
            let outcomes = svc.list_outcomes(&ListOutcomesArgs {
                agent_profile: Some(agent.clone()),
                limit: Some(OUTCOMES_SHOWN),
                ..ListOutcomesArgs::default()
            })?;
            let lessons = svc.agent_lessons(&agent, min, page_no * PAGE_SIZE, PAGE_SIZE)?;
            Ok((outcomes, lessons))
        })
        .await?
    };
    let most = lessons
        .iter()
        .map(|l| u64::try_from(l.memory.access_count).unwrap_or(0))
        .max()
        .unwrap_or(0);
    let threshold = u64::from(min);
    let plan_href = format!(
        "{}/promote?{}",
        agent_href(&agent),
        query_string(&[("min_recalls", &recalls_param(min))])
    );
    let body = html! {
        p.crumbs { a href="/ui/learning" { "Learning" } }
        h1 { (agent) }
        p { a href=(plan_href.trim_end_matches('?')) data-action="promotion-plan" { "The promotion plan for " (agent) "'s profile →" } }
        h2 { "Lessons" }
        p.small { "Memories of scope agent/" (agent) ", most recalled first. A lesson is promoted once recalled at least "
            (threshold) " times and when it passes the gate's other rules (type feedback or project, a lesson key, at most 400 characters, no secrets)." }
        @if lessons.is_empty() {
            p.empty { "No lessons here." }
        } @else {
            div.scroll {
                table.lessons {
                    thead { tr { th { "lesson" } th { "type" } th { "recalled" } th { "promotion" } th { "content" } } }
                    tbody {
                        @for l in &lessons {
                            @let n = u64::try_from(l.memory.access_count).unwrap_or(0);
                            tr data-lesson=(l.memory.key) data-eligible=(if l.verdict.is_ok() { "yes" } else { "no" }) {
                                td { a.key href=(memory_href(Scope::Agent, Some(&agent), &l.memory.key)) { (l.memory.key) } }
                                td { (l.memory.memory_type.as_str()) }
                                td.nowrap {
                                    (bar(n, most, Some(threshold), &format!("recalled {n} times; promotion needs {threshold}")))
                                    " " span.small { (n) }
                                }
                                td {
                                    @match &l.verdict {
                                        Ok(_) => span.eligible { "eligible" },
                                        Err(why) => span.ineligible { (why.to_string()) },
                                    }
                                }
                                td.preview { (short(&l.memory.content, 200)) }
                            }
                        }
                    }
                }
            }
            (pager(page_no, more, |p| format!("{}?{}", agent_href(&agent), query_string(&[("page", &p.to_string()), ("min_recalls", &recalls_param(min))]))))
        }
        h2 { "Outcomes" }
        p.small { "The newest " (OUTCOMES_SHOWN) " outcomes reported for " (agent) " (" code { "cao memory outcomes list --agent-profile" } " lists more)." }
        @if outcomes.is_empty() {
            p.empty { "No outcomes reported." }
        } @else {
            div.scroll {
                table.outcomes {
                    thead { tr { th { "when" } th { "task" } th { "result" } th { "score" } th { "session" } th { "friction" } } }
                    tbody {
                        @for o in &outcomes {
                            tr data-outcome=(o.id) {
                                td.nowrap { (o.created_at.as_deref().unwrap_or("—")) }
                                td { (o.task_label) @if let Some(w) = &o.workflow_name { " " span.tag { (w) } } }
                                td { @if o.success { span.eligible { "succeeded" } } @else { span.warn { "failed" } } }
                                td.num { (o.score.map(|s| s.to_string()).unwrap_or_else(|| "—".into())) }
                                td { (o.session_name) }
                                td.preview { (short(&o.friction_notes, NOTES_CHARS)) }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(page(&ctx, StatusCode::OK, &agent, Some("/ui/learning"), body))
}

/// Query of the plan page.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct PlanQuery {
    done: Option<String>,
    min_recalls: Option<u32>,
}

/// `GET /ui/learning/{agent}/promote`: the promotion plan (a dry run of `cao memory promote`) as a diff of the
/// profile, with the apply form when it changes something. A profile that cannot be a target (none, built-in,
/// unreadable) is said on the page.
pub(crate) async fn plan(
    State(state): State<UiState>,
    ctx: Ctx,
    Path(raw): Path<String>,
    UiQuery(q): UiQuery<PlanQuery>,
) -> UiResult {
    require_learning(&ctx)?;
    let agent = agent_name(&raw)?;
    let min = min_recalls(q.min_recalls);
    let (plan, can_apply) = dry_run(&state, agent.clone(), min).await?;
    Ok(plan_page(
        &ctx,
        StatusCode::OK,
        &agent,
        min,
        q.done.as_deref(),
        &plan,
        can_apply,
        false,
    ))
}

/// The promotion plan of `agent` with `min` (a dry run), or why the agent's profile cannot be a target (said in
/// words for a web page), and whether `memory.instruction_promotion_enabled` is on.
async fn dry_run(
    state: &UiState,
    agent: String,
    min: u32,
) -> Result<(Result<PromotionReport, String>, bool), ApiError> {
    with_service(&state.api, move |svc| {
        let settings = svc.settings();
        let can_apply = settings.instruction_promotion_enabled();
        let plan = match svc.promote(&PromoteRequest {
            agent: agent.clone(),
            min_recalls: Some(min),
            ..PromoteRequest::default()
        }) {
            Ok(r) => Ok(r),
            Err(MemoryError::ProfileNotFound(_)) => {
                let dirs = settings
                    .agent_dirs(svc.home())
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ");
                Err(format!(
                    "{agent} has no profile file: there is no {agent}.md in the agent directories ({dirs}; the \
                     agents.dirs setting). Promotion only edits an existing profile and never creates one: put \
                     {agent}.md in one of those directories, or add the directory that holds it to agents.dirs, then \
                     reload this page."
                ))
            }
            Err(e @ (MemoryError::ProfileRefused(_) | MemoryError::InvalidProfile(_) | MemoryError::Invalid(_))) => {
                Err(e.to_string())
            }
            Err(e) => return Err(e.into()),
        };
        Ok((plan, can_apply))
    })
    .await
}

/// The promotion plan page: the plan, and when it changes something the apply form carrying the plan's digest
/// ([`PromotionReport::plan_digest`]), so the apply writes exactly this plan or nothing. `changed` says above the
/// plan that the plan reviewed before is not the one shown (the apply was refused).
#[allow(clippy::too_many_arguments, reason = "one page, its parts named")]
fn plan_page(
    ctx: &Ctx,
    status: StatusCode,
    agent: &str,
    min: u32,
    done: Option<&str>,
    plan: &Result<PromotionReport, String>,
    can_apply: bool,
    changed: bool,
) -> axum::response::Response {
    let body = html! {
        p.crumbs { a href="/ui/learning" { "Learning" } " / " a href=(agent_href(agent)) { (agent) } }
        h1 { "Promotion plan for " (agent) }
        @if let Some(done) = done { p.done data-done=(done) { (done_message(done)) } }
        @if changed {
            p.warn data-plan="changed" { "The plan changed since you reviewed it; nothing was written. Review the diff below again and apply it if it is right." }
        }
        @match plan {
            Err(why) => p.warn data-plan="unavailable" { (why) },
            Ok(r) => {
                (report(r))
                @if r.has_changes() {
                    form.confirm method="post" action=(format!("{}/promote", agent_href(agent))) data-action="promote-apply" {
                        (csrf_field(ctx))
                        input type="hidden" name="min_recalls" value=(min);
                        input type="hidden" name="plan_digest" value=(r.plan_digest());
                        label.check { input type="checkbox" name="confirm" value="yes" required;
                            span { "I have read this diff: write its " (r.changes.len()) " change(s) into " code { (r.real_path) } } }
                        button.danger type="submit" { "Apply the promotion" }
                        @if !ctx.allows(ApiScope::Admin) { span.hint { " needs the cao:admin scope" } }
                        @if !can_apply { span.hint { " needs memory.instruction_promotion_enabled" } }
                    }
                }
            }
        }
    };
    page(ctx, status, "Promotion plan", Some("/ui/learning"), body)
}

/// A promotion report: its changes, what stays, what the gate refused, and the profile diff.
fn report(r: &PromotionReport) -> Markup {
    html! {
        p.small data-plan="summary" { "profile " code { (r.profile_path) } " · " (r.changes.len()) " change(s) · "
            (r.unchanged.len()) " unchanged · " (r.skipped.len()) " skipped · " (r.ineligible.len()) " not eligible · min recalls " (r.min_recalls) }
        @if r.changes.is_empty() {
            p.empty data-plan="nothing" { "Nothing to promote: the profile's Learned Patterns block already holds every eligible lesson." }
        } @else {
            div.scroll {
                table.plan {
                    thead { tr { th { "action" } th { "lesson" } th { "recalled" } th { "text" } th { "written by" } } }
                    tbody {
                        @for c in &r.changes {
                            tr data-change=(c.action) data-key=(c.key) {
                                td { (c.action) }
                                td { (c.key) }
                                td.num { (c.access_count.map(|n| n.to_string()).unwrap_or_else(|| "—".into())) }
                                td { (c.text.as_deref().or(c.previous.as_deref()).unwrap_or("")) }
                                td.small data-written-by=(c.written_by.as_ref().and_then(|w| w.terminal_id.as_deref()).unwrap_or("")) {
                                    (c.written_by.as_ref().map(cao_memory::LessonWriter::describe).unwrap_or_default())
                                }
                            }
                        }
                    }
                }
            }
            h2 { "The profile, before and after" }
            (diff(&r.profile_before, &r.profile_after))
        }
        @if !r.skipped.is_empty() {
            details { summary { (r.skipped.len()) " skipped" }
                ul { @for s in &r.skipped { li { (s.key) ": " (s.reason) } } } }
        }
        @if !r.ineligible.is_empty() {
            details { summary { (r.ineligible.len()) " lesson(s) the gate refused" }
                ul { @for i in &r.ineligible { li { (i.key) ": " (i.message) } } } }
        }
    }
}

/// The form of a promotion apply.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct PromoteForm {
    confirm: Option<String>,
    min_recalls: Option<u32>,
    /// The digest of the plan the form was shown with.
    plan_digest: Option<String>,
}

/// `POST /ui/learning/{agent}/promote`: write the reviewed promotion (`confirm=yes` and the plan's `plan_digest`
/// required; 422 otherwise, nothing written). Promotion plans again under its lock and writes only when the new
/// plan has the reviewed digest, so what is written is exactly the diff that was reviewed; the page shows what was
/// written. When the plan changed (a lesson stored, recalled or edited since), nothing is written and the new plan
/// is shown for review (409). Needs `memory.instruction_promotion_enabled` (403 `promotion_disabled` otherwise,
/// nothing written).
pub(crate) async fn apply(
    State(state): State<UiState>,
    ctx: Ctx,
    Path(raw): Path<String>,
    UiForm(form): UiForm<PromoteForm>,
) -> UiResult {
    require_learning(&ctx)?;
    let agent = agent_name(&raw)?;
    if form.confirm.as_deref() != Some("yes") {
        return Err(ApiError::invalid("promotion not confirmed: tick the confirmation to write the plan").into());
    }
    let Some(digest) = form.plan_digest.clone().filter(|d| !d.trim().is_empty()) else {
        return Err(ApiError::invalid(
            "the form does not name the plan it confirms: open the promotion plan, review it and apply it from there",
        )
        .into());
    };
    let min = min_recalls(form.min_recalls);
    let outcome = {
        let agent = agent.clone();
        with_service(&state.api, move |svc| {
            match svc.promote(&PromoteRequest {
                agent,
                apply: true,
                min_recalls: Some(min),
                plan_digest: Some(digest),
                ..PromoteRequest::default()
            }) {
                Ok(r) => Ok(Some(r)),
                Err(MemoryError::PlanChanged { .. }) => Ok(None),
                Err(e) => Err(e.into()),
            }
        })
        .await?
    };
    let Some(r) = outcome else {
        // Nothing was written: show the plan as it is now, for review.
        let (plan, can_apply) = dry_run(&state, agent.clone(), min).await?;
        return Ok(plan_page(
            &ctx,
            StatusCode::CONFLICT,
            &agent,
            min,
            None,
            &plan,
            can_apply,
            true,
        ));
    };
    let body = html! {
        p.crumbs { a href="/ui/learning" { "Learning" } " / " a href=(agent_href(&agent)) { (agent) } }
        h1 { "Promotion applied" }
        @if r.written {
            p.done data-done="promoted-lessons" { "Wrote " (r.changes.len()) " change(s) into " code { (r.real_path) } "." }
        } @else {
            p.done data-done="unchanged" { "Nothing to write: the profile already holds the plan." }
        }
        (report(&r))
        p { a href=(format!("{}/promote", agent_href(&agent))) { "Plan again" } }
        p { a href=(agent_href(&agent)) { "Back to " (agent) "'s lessons" } }
    };
    Ok(page(
        &ctx,
        StatusCode::OK,
        "Promotion applied",
        Some("/ui/learning"),
        body,
    ))
}
