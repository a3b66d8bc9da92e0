//! What the self-learning loop holds, per agent (the operator UI's learning pages; spec 004): which agents have
//! a profile, outcomes or lessons, and each agent's lessons with the promotion gate's verdict. Reads only; no
//! access is counted (an access count is what makes a lesson eligible, so looking must not change it).
//!
//! - [`agents`]: the profiles of the agent directories and the built-ins (`crate::profile::list`, as
//!   `cao agents list`), plus every agent that has outcomes or agent-scope memories without a profile; per agent
//!   its outcome and success counts (one grouped query) and its lesson count (the overview's grouped count).
//! - [`lessons`]: an agent's agent-scope memories, most recalled first (the order promotion offers them in), each
//!   judged by `promote::judge` with the minimum access count, the rule `cao memory promote` applies.
//!
//! Both answer [`MemoryError::LearningDisabled`] while `memory.learning_enabled` is off.

use crate::gate::Ineligible;
use crate::profile::{self, ProfileSource};
use crate::promote;
use cao_core::key::sanitize_scope_id;
use cao_core::{Scope, Settings};
use cao_ops::types::{Memory, row_to_memory};
use cao_store::MemoryError;
use cao_store::Store;
use cao_store::Visibility;
use std::collections::BTreeMap;

/// Where an agent's profile comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentProfileSource {
    /// A built-in profile (never a promotion target until copied into an agent directory).
    Builtin,
    /// A file of an agent directory.
    File(String),
    /// A file that cannot be used, and why.
    Invalid(String),
    /// No profile: the agent only has outcomes or lessons.
    Missing,
}

/// One agent of the learning overview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSummary {
    /// The agent profile name (the scope id of its lessons).
    pub name: String,
    /// Its profile.
    pub profile: AgentProfileSource,
    /// Outcomes recorded for it.
    pub outcomes: u64,
    /// Of those, the successful ones.
    pub successes: u64,
    /// Memories of scope `agent` with its name as scope id (its lessons).
    pub lessons: u64,
}

/// One lesson of an agent with the promotion gate's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct LessonView {
    /// The memory (content untrusted).
    pub memory: Memory,
    /// `Ok(lesson text)` when the gate would promote it, else the first reason it would not.
    pub verdict: Result<String, Ineligible>,
}

/// Every agent with a profile, outcomes or lessons, by name (see the module documentation).
///
/// Errors: [`MemoryError::LearningDisabled`]; [`MemoryError::Io`] when an agent directory cannot be listed;
/// index errors.
pub fn agents(store: &Store, settings: &Settings) -> Result<Vec<AgentSummary>, MemoryError> {
    if !settings.learning_enabled() {
        return Err(MemoryError::LearningDisabled);
    }
    let mut out: BTreeMap<String, AgentSummary> = BTreeMap::new();
    let blank = |name: &str, profile| AgentSummary {
        name: name.to_owned(),
        profile,
        outcomes: 0,
        successes: 0,
        lessons: 0,
    };
    for listed in profile::list(&settings.agent_dirs(store.home()))? {
        let source = match &listed.profile {
            Ok(p) => match &p.source {
                ProfileSource::Builtin => AgentProfileSource::Builtin,
                ProfileSource::File(path) => AgentProfileSource::File(path.display().to_string()),
            },
            Err(e) => AgentProfileSource::Invalid(e.clone()),
        };
        out.insert(listed.name.clone(), blank(&listed.name, source));
    }
    for (agent, n, ok) in store.snapshot().outcome_counts()? {
        let Some(agent) = agent.filter(|a| !a.trim().is_empty()) else {
            continue;
        };
        let entry = out
            .entry(agent.clone())
            .or_insert_with(|| blank(&agent, AgentProfileSource::Missing));
        entry.outcomes += n;
        entry.successes += ok;
    }
    for (scope, scope_id, n) in store.snapshot().scope_counts()? {
        let (Scope::Agent, Some(agent)) = (scope, scope_id) else {
            continue;
        };
        let entry = out
            .entry(agent.clone())
            .or_insert_with(|| blank(&agent, AgentProfileSource::Missing));
        entry.lessons += n;
    }
    Ok(out.into_values().collect())
}

/// `limit` lessons of `agent` from `offset`, most recalled first (then newest), each with the gate's verdict at
/// `min_recalls`, and whether more follow. Counts no access.
///
/// Errors: [`MemoryError::LearningDisabled`]; [`MemoryError::Invalid`] for an invalid agent name; index errors.
pub fn lessons(
    store: &Store,
    settings: &Settings,
    agent: &str,
    min_recalls: u32,
    offset: usize,
    limit: usize,
) -> Result<(Vec<LessonView>, bool), MemoryError> {
    if !settings.learning_enabled() {
        return Err(MemoryError::LearningDisabled);
    }
    profile::validate_name(agent)?;
    store.read()?;
    let scope_id = sanitize_scope_id(agent);
    let offset = offset.min(promote::MAX_CANDIDATES);
    let mut rows = store.snapshot().usage_pool(
        &Visibility::none().allow(Scope::Agent, Some(&scope_id)),
        None,
        offset + limit + 1,
    )?;
    rows.drain(..offset.min(rows.len()));
    let more = rows.len() > limit;
    rows.truncate(limit);
    Ok((
        rows.iter()
            .map(|row| LessonView {
                memory: row_to_memory(row),
                verdict: promote::judge(row, min_recalls),
            })
            .collect(),
        more,
    ))
}
