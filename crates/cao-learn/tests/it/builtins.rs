//! The built-in profiles and skill: their frontmatter parses, the retrospector (and only it) declares
//! `store_lesson`, and the texts say what spec 004 requires of them.

use cao_learn::builtin;
use cao_learn::profile::{builtin_profile, parse_meta};
use cao_learn::{STORE_LESSON_CAPABILITY, learned};
use std::path::Path;

#[test]
fn builtin_profiles_parse_and_only_the_retrospector_may_write_lessons_for_others() {
    for b in &builtin::ALL {
        let meta = parse_meta(b.text, Path::new(b.name)).expect("frontmatter parses");
        assert_eq!(meta.name.as_deref(), Some(b.name));
        assert!(meta.description.as_deref().is_some_and(|d| d.len() > 20), "{}", b.name);
        let p = builtin_profile(b);
        assert!(p.is_builtin());
        assert_eq!(
            p.has_capability(STORE_LESSON_CAPABILITY),
            b.name == "retrospector",
            "{}",
            b.name
        );
        assert!(!learned::has_block_marker(b.text), "{} holds no block marker", b.name);
    }
    assert!(builtin::get("worker").is_none());
}

#[test]
fn the_retrospector_follows_the_lesson_contract() {
    let t = builtin::RETROSPECTOR.text;
    for needle in [
        "list_outcomes",
        "memory_recall",
        "store_lesson",
        "target_agent_profile",
        "0 to 3 lessons",
        "Applies when:",
        "400 characters",
        "Never",
        "secret",
    ] {
        assert!(t.contains(needle), "retrospector mentions {needle}");
    }
}

#[test]
fn the_skill_carries_the_supervisor_and_worker_habits() {
    let s = builtin::skill("cao-learning").expect("skill").text;
    assert!(parse_meta(s, Path::new("SKILL.md")).is_ok());
    for needle in [
        "report_outcome",
        "disabled: true",
        "Retrospect on session",
        "## Memory",
        "Applies when:",
    ] {
        assert!(s.contains(needle), "skill mentions {needle}");
    }
}
