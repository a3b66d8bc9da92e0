//! Properties of the block edit over arbitrary profile text (without block markers): applying the same lessons
//! twice changes nothing the second time; adding lessons then removing them all restores the original bytes; the
//! bytes outside the block never change.

use cao_learn::learned::{BEGIN_MARKER, END_MARKER, read_lessons};
use cao_learn::{MAX_LESSONS, apply_deltas};
use proptest::prelude::*;

/// Profile text: lines of markdown-ish words and punctuation, with LF, CRLF, lone CR, blank lines and sometimes no
/// final line end; occasionally a fake `<!-- lesson: x -->` line outside any block.
fn profile() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        4 => "[ -~]{0,40}",
        1 => Just(String::new()),
        1 => Just("---".to_owned()),
        1 => Just("<!-- lesson: stray -->".to_owned()),
        1 => "[ -~é€\u{1F600}\t]{0,20}",
    ];
    let eol = prop_oneof![3 => Just("\n"), 2 => Just("\r\n"), 1 => Just("\r"), 1 => Just("")];
    prop::collection::vec((line, eol), 0..12)
        .prop_map(|parts| parts.into_iter().map(|(l, e)| format!("{l}{e}")).collect::<String>())
}

fn lessons() -> impl Strategy<Value = Vec<(String, String)>> {
    prop::collection::vec(
        ("[a-z0-9][a-z0-9-]{0,20}", "[A-Za-z0-9 .,:;'()-]{1,80}[A-Za-z.]"),
        1..14,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn promote_is_idempotent(original in profile(), add in lessons()) {
        prop_assume!(!original.contains(BEGIN_MARKER) && !original.contains(END_MARKER));
        let first = apply_deltas(&original, &add, &[]).expect("valid deltas");
        let once = first.content.clone().expect("new lessons change the block");
        let second = apply_deltas(&once, &add, &[]).expect("valid deltas");
        prop_assert_eq!(second.content, None, "the second run proposes nothing");
        prop_assert!(second.report.added.is_empty() && second.report.updated.is_empty());
        prop_assert_eq!(read_lessons(&once).len(), first.report.added.len().min(MAX_LESSONS));
    }

    #[test]
    fn apply_then_remove_restores_the_original_bytes(original in profile(), add in lessons()) {
        prop_assume!(!original.contains(BEGIN_MARKER) && !original.contains(END_MARKER));
        let with = apply_deltas(&original, &add, &[]).expect("valid deltas").content.expect("changed");
        prop_assert!(with.starts_with(original.trim_end_matches(['\r', '\n'])), "{:?}", with);
        let keys: Vec<String> = read_lessons(&with).into_iter().map(|(k, _)| k).collect();
        let removed = apply_deltas(&with, &[], &keys).expect("valid deltas");
        prop_assert_eq!(removed.content.as_deref(), Some(original.as_str()));
    }

    #[test]
    fn only_the_block_changes(original in profile(), add in lessons(), update in lessons()) {
        prop_assume!(!original.contains(BEGIN_MARKER) && !original.contains(END_MARKER));
        let with = apply_deltas(&original, &add, &[]).expect("valid").content.expect("changed");
        let begin = with.find(BEGIN_MARKER).expect("block");
        let end = with.find(END_MARKER).expect("block") + END_MARKER.len();
        let (before, after) = (&with[..begin], &with[end..]);
        let again = apply_deltas(&with, &update, &[]).expect("valid");
        if let Some(new) = again.content {
            prop_assert!(new.starts_with(before) && new.ends_with(after), "{:?} -> {:?}", with, new);
        }
    }
}
