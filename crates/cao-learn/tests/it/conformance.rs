//! `conformance/reference/learned_patterns.json`: every case through [`apply_deltas`] (the bytes and the four
//! reported lists) and through the promotion writer ([`profile_file::apply`]) on a real file, whose bytes must be
//! the case's result (and untouched when nothing changes, or on an error).

use cao_learn::{LearnError, apply_deltas, profile_file};
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use std::fmt;

/// A JSON object read in document order (the order of `add` decides block order and the cap).
#[derive(Debug, Default)]
struct Ordered(Vec<(String, String)>);

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, String>()? {
                    out.push((k, v));
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V)
    }
}

#[derive(Debug, Deserialize)]
struct Case {
    profile: String,
    #[serde(default)]
    add: Ordered,
    #[serde(default)]
    remove: Vec<String>,
    #[serde(default)]
    then_remove: Option<Vec<String>>,
    result: Option<String>,
    error: Option<String>,
    added: Option<Vec<String>>,
    updated: Option<Vec<String>>,
    removed: Option<Vec<String>>,
    skipped: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct File {
    cases: Vec<Case>,
}

fn cases() -> Vec<Case> {
    let path = cao_testkit::conformance_dir().join("learned_patterns.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file: File = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(file.cases.len() >= 13, "{} cases", file.cases.len());
    file.cases
}

#[test]
fn every_case_through_the_editor() {
    for (i, case) in cases().into_iter().enumerate() {
        let outcome = apply_deltas(&case.profile, &case.add.0, &case.remove);
        if let Some(class) = &case.error {
            assert_eq!(class, "LearnedPatternsError", "case {i}");
            assert!(matches!(outcome, Err(LearnError::Lesson(_))), "case {i}: {outcome:?}");
            continue;
        }
        let edited = outcome.unwrap_or_else(|e| panic!("case {i}: {e}"));
        let mut bytes = edited.content.clone().unwrap_or_else(|| case.profile.clone());
        if let Some(then) = &case.then_remove {
            bytes = apply_deltas(&bytes, &[], then)
                .unwrap_or_else(|e| panic!("case {i}: {e}"))
                .content
                .unwrap_or(bytes);
        } else {
            let r = &edited.report;
            assert_eq!(Some(&r.added), case.added.as_ref(), "case {i} added");
            assert_eq!(Some(&r.updated), case.updated.as_ref(), "case {i} updated");
            assert_eq!(Some(&r.removed), case.removed.as_ref(), "case {i} removed");
            assert_eq!(Some(&r.skipped), case.skipped.as_ref(), "case {i} skipped");
            assert_eq!(
                edited.content.is_none(),
                bytes == case.profile && !r.changes(),
                "case {i}"
            );
        }
        assert_eq!(Some(&bytes), case.result.as_ref(), "case {i}");
    }
}

#[test]
fn every_case_through_the_promotion_writer() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (i, case) in cases().into_iter().enumerate() {
        let path = dir.path().join(format!("profile-{i}.md"));
        std::fs::write(&path, &case.profile).expect("write");
        let before = std::fs::metadata(&path).expect("stat").modified().expect("mtime");
        let outcome = profile_file::apply(&path, &case.add.0, &case.remove);
        if case.error.is_some() {
            assert!(outcome.is_err(), "case {i}");
            assert_eq!(
                std::fs::read_to_string(&path).expect("read"),
                case.profile,
                "case {i}: untouched"
            );
            continue;
        }
        let (_, edited) = outcome.unwrap_or_else(|e| panic!("case {i}: {e}"));
        if edited.content.is_none() {
            let after = std::fs::metadata(&path).expect("stat").modified().expect("mtime");
            assert_eq!(before, after, "case {i}: an unchanged block is not rewritten");
        }
        if let Some(then) = &case.then_remove {
            profile_file::apply(&path, &[], then).unwrap_or_else(|e| panic!("case {i}: {e}"));
        }
        assert_eq!(
            Some(std::fs::read_to_string(&path).expect("read")),
            case.result,
            "case {i}"
        );
    }
}
