//! The built-in agent profiles and skill text that ship inside the program (spec 004 "The retrospector agent",
//! "The cao-learning skill"): the `retrospector` (distils outcomes into 0-3 lessons per retrospection, declares the
//! `store_lesson` capability), the `memory_manager` curator, and the `cao-learning` skill. Their sources are the
//! markdown files under `crates/cao-learn/assets/`. Built-in profiles are never promotion targets; `cao agents
//! install <name>` copies one into an agent directory, where it becomes an ordinary profile.

/// One built-in text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Builtin {
    /// Its name (`retrospector`, `memory_manager`, `cao-learning`).
    pub name: &'static str,
    /// Its markdown text (profiles start with YAML frontmatter).
    pub text: &'static str,
}

/// The `retrospector` profile.
pub const RETROSPECTOR: Builtin = Builtin {
    name: "retrospector",
    text: include_str!("../assets/agents/retrospector.md"),
};

/// The `memory_manager` profile.
pub const MEMORY_MANAGER: Builtin = Builtin {
    name: "memory_manager",
    text: include_str!("../assets/agents/memory_manager.md"),
};

/// Every built-in profile, by name.
pub const ALL: [Builtin; 2] = [MEMORY_MANAGER, RETROSPECTOR];

/// The `cao-learning` skill (`skills/cao-learning/SKILL.md`): the habits of supervisors (report outcomes, hand
/// off to the retrospector) and workers (apply injected lessons, store new ones with `Applies when:` triggers).
pub const CAO_LEARNING_SKILL: Builtin = Builtin {
    name: "cao-learning",
    text: include_str!("../assets/skills/cao-learning/SKILL.md"),
};

/// Every built-in skill, by name.
pub const SKILLS: [Builtin; 1] = [CAO_LEARNING_SKILL];

/// The built-in profile `name`, if there is one.
pub fn get(name: &str) -> Option<&'static Builtin> {
    ALL.iter().find(|b| b.name == name)
}

/// Whether `name` names a built-in profile.
pub fn is_builtin(name: &str) -> bool {
    get(name).is_some()
}

/// The built-in skill `name`, if there is one.
pub fn skill(name: &str) -> Option<&'static Builtin> {
    SKILLS.iter().find(|b| b.name == name)
}
