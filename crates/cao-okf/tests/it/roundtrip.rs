//! Properties of the format: a rendered bundle imports back to the same key, type, tags, body and entry time;
//! planning never panics on arbitrary bytes or paths.

use cao_core::key::normalize_tags;
use cao_core::time::truncate_secs;
use cao_core::{Key, MemoryType, Scope};
use cao_okf::export::{ExportOptions, ExportTopic, render_bundle};
use cao_okf::import::{
    BundleEntry, ConflictPolicy, EntryKind, FileOutcome, ImportOptions, WriteAction, plan_file, plan_import,
};
use cao_okf::pytext;
use chrono::{DateTime, TimeZone, Utc};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::LazyLock;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 1, 10, 0, 0)
        .single()
        .expect("valid time")
}

fn options(scope: Scope, conflict: ConflictPolicy) -> ImportOptions {
    ImportOptions {
        target_scope: scope,
        target_scope_id: None,
        conflict,
        dry_run: true,
        now: now(),
    }
}

fn key() -> impl Strategy<Value = Key> {
    "[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,5}"
        .prop_filter("at most 60", |k| k.len() <= 60)
        .prop_map(|k| Key::parse_strict(&k).expect("valid key"))
}

fn memory_type() -> impl Strategy<Value = MemoryType> {
    prop::sample::select(MemoryType::ALL.to_vec())
}

/// One tag that normalises to itself: no comma, not blank, no whitespace at either end; any other character,
/// including quotes, colons, `#`, backslashes, control characters, non-ASCII and astral characters.
fn tag() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9_-]{1,10}",
        any::<String>(),
        "[\"':#\\\\\\[\\]{}&*!|>%@` a-zA-Zé😀\u{1}\u{7f}]{1,10}",
    ]
    .prop_map(|t| pytext::strip(&t.replace(',', "")).to_owned())
    .prop_filter("not blank", |t| !t.is_empty())
}

/// A line of text that the importer keeps as it is: not a See Also heading, no structural marker.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 .,!?:;'\"()\\[\\]#*_`>|-]{0,40}",
        any::<String>(),
        Just("---".to_owned()),
        Just("# heading".to_owned()),
        Just("- [link](x.md)".to_owned()),
        Just("  indented  ".to_owned()),
    ]
}

fn content() -> impl Strategy<Value = String> {
    prop::collection::vec(line(), 1..6).prop_map(|lines| lines.join("\n"))
}

/// Whether the importer's body pipeline would change `text` beyond line-boundary normalisation.
fn has_structure(text: &str, key: &Key) -> bool {
    static HEADING: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"## \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z").expect("regex"));
    static HEADER: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"<!--[\s\x1C-\x1F]*id:").expect("regex"));
    let (heading, header) = (&*HEADING, &*HEADER);
    let lines = pytext::splitlines(text);
    lines
        .iter()
        .any(|l| heading.is_match(l) || header.is_match(l) || pytext::strip(l) == "## See Also")
        || lines.first().is_some_and(|l| pytext::strip(l) == format!("# {key}"))
}

fn timestamp() -> impl Strategy<Value = DateTime<Utc>> {
    (0i64..1_790_000_000).prop_map(|s| Utc.timestamp_opt(s, 0).single().expect("in range"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Export then import (new keys, any target scope): the same key, type, tags, body (its line boundaries as
    /// `\n`, stripped) and entry time; nothing clamped, nothing rejected.
    #[test]
    fn rendered_bundle_imports_back(
        topics in prop::collection::btree_map(key(), (memory_type(), prop::collection::vec(tag(), 0..4), content(), timestamp()), 1..5),
        scope in prop::sample::select(vec![Scope::Global, Scope::Project]),
    ) {
        let topics: Vec<ExportTopic> = topics
            .into_iter()
            .map(|(key, (memory_type, tags, content, updated))| ExportTopic {
                key,
                scope_id: None,
                memory_type,
                tags: normalize_tags(&tags.join(",")),
                created_at: updated - chrono::Duration::days(1),
                updated_at: updated,
                content,
                history: Vec::new(),
            })
            .collect();
        let expected: Vec<_> = topics
            .iter()
            .filter(|t| !pytext::strip(&t.content).is_empty() && !has_structure(&pytext::normalize_lines(pytext::strip(&t.content)), &t.key))
            .collect();
        prop_assume!(expected.len() == topics.len());
        prop_assume!(topics.iter().all(|t| cao_core::secret::scan(&t.content).is_none()));

        let opts = ExportOptions { scope, scope_id: Some("p-1".into()), include_history: false, redact: false };
        let bundle = render_bundle(&opts, &topics).expect("renders");
        let entries = bundle.files.iter().map(|(p, t)| BundleEntry { path: p.as_bytes(), kind: EntryKind::File(t.as_bytes()) });
        let plan = plan_import(&options(scope, ConflictPolicy::Skip), entries, &BTreeMap::new()).expect("plans");
        prop_assert_eq!(plan.report.rejected, 0, "{:?}", plan.report.errors);
        prop_assert_eq!(plan.report.imported, topics.len());
        prop_assert_eq!(plan.report.timestamps_clamped, 0);
        let writes: BTreeMap<&Key, _> = plan.writes().map(|w| (&w.key, w)).collect();
        for t in &topics {
            let w = writes.get(&t.key).expect("every topic is imported");
            prop_assert_eq!(w.action, WriteAction::Import);
            prop_assert_eq!(w.memory_type, t.memory_type);
            prop_assert_eq!(&w.tags, &t.tags);
            prop_assert_eq!(&w.content, &pytext::normalize_lines(pytext::strip(&t.content)));
            prop_assert_eq!(w.entry_time, truncate_secs(t.updated_at));
        }
    }

    /// Merging a bundle into a store that already holds newer entries clamps every timestamp and prefixes the
    /// original time; a skip policy skips every file; a replace policy replaces without clamping past times.
    #[test]
    fn conflict_policies_and_clamping(
        k in key(),
        body in "[a-z]{1,20}",
        updated in timestamp(),
    ) {
        let topic = ExportTopic {
            key: k.clone(), scope_id: None, memory_type: MemoryType::Project, tags: String::new(),
            created_at: updated, updated_at: updated, content: body.clone(), history: Vec::new(),
        };
        let opts = ExportOptions { scope: Scope::Global, scope_id: None, include_history: false, redact: false };
        let bundle = render_bundle(&opts, &[topic]).expect("renders");
        let rel = format!("{k}.md");
        let file = bundle.files[&rel].as_bytes();
        let entry = BundleEntry { path: rel.as_bytes(), kind: EntryKind::File(file) };
        let newer = BTreeMap::from([(k.clone(), updated + chrono::Duration::seconds(1))]);

        let merged = plan_file(&options(Scope::Global, ConflictPolicy::Merge), entry, &newer);
        let FileOutcome::Write(w) = merged.outcome else { panic!("merge writes: {:?}", merged.outcome) };
        prop_assert_eq!(w.action, WriteAction::Merge);
        prop_assert_eq!(w.clamped_from, Some(updated));
        prop_assert_eq!(w.entry_time, now());
        prop_assert_eq!(w.content, format!("_Originally recorded: {}_\n{body}", cao_core::time::format_ts(updated)));

        let skipped = plan_file(&options(Scope::Global, ConflictPolicy::Skip), entry, &newer);
        prop_assert_eq!(skipped.outcome, FileOutcome::SkippedConflict(k.clone()));

        let replaced = plan_file(&options(Scope::Global, ConflictPolicy::Replace), entry, &newer);
        let FileOutcome::Write(w) = replaced.outcome else { panic!("replace writes") };
        prop_assert_eq!(w.action, WriteAction::Replace);
        prop_assert_eq!(w.clamped_from, None);
        prop_assert_eq!(w.entry_time, updated);
    }

    /// Arbitrary bytes at an arbitrary path: a plan, never a panic.
    #[test]
    fn planning_never_panics_on_arbitrary_bytes(
        path in prop::collection::vec(any::<u8>(), 0..40),
        bytes in prop::collection::vec(any::<u8>(), 0..400),
        scope in prop::sample::select(vec![Scope::Global, Scope::Federated]),
    ) {
        let _ = plan_file(&options(scope, ConflictPolicy::Merge), BundleEntry { path: &path, kind: EntryKind::File(&bytes) }, &BTreeMap::new());
        let _ = plan_file(&options(scope, ConflictPolicy::Merge), BundleEntry { path: b"ok.md", kind: EntryKind::File(&bytes) }, &BTreeMap::new());
    }

    /// Frontmatter-shaped text with random YAML inside: a plan, never a panic.
    #[test]
    fn planning_never_panics_on_yaml_soup(
        parts in prop::collection::vec(prop::sample::select(vec![
            "type: project\n", "type: ", "tags: ", "timestamp: ", "[", "]", "{", "}", "&a ", "*a ", "<<: ", "- ", ": ",
            "\"", "'", "\\u", "\\ud83d", "!!str ", "!foo ", "? ", "|\n", ">-\n", "  ", "\n", "---\n", "...\n", "#", "%YAML 1.1\n",
            "2025-01-02T03:04:05Z", "0000-00-00 00:00:00", "\u{feff}", "\t", "~", "null", "yes", ",",
        ]), 0..60),
        body in any::<String>(),
    ) {
        let text = format!("---\n{}\n---\n{body}", parts.concat());
        for conflict in [ConflictPolicy::Skip, ConflictPolicy::Merge] {
            let plan = plan_file(&options(Scope::Federated, conflict), BundleEntry { path: b"k.md", kind: EntryKind::File(text.as_bytes()) }, &BTreeMap::from([(Key::parse_strict("k").expect("key"), now())]));
            if let FileOutcome::Rejected(reason) = &plan.outcome {
                prop_assert!(!reason.to_string().contains(body.as_str()) || body.len() < 8, "a reason quotes the body");
            }
        }
    }
}
