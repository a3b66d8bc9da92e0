//! The deterministic summary used when no model is configured (and by every caller whose text already fits):
//! a pure function of its input, no model call, no I/O.
//!
//! Rule (spec 001 "The summary tree": an entry or a pair of lines short enough to fit in 512 bytes is kept word
//! for word, with no model call):
//! - [`extract_entry`]: the text itself when it fits the byte budget ([`Extract::verbatim`]); otherwise its start,
//!   cut at a UTF-8 character boundary, trailing whitespace removed, followed by [`CUT_MARK`].
//! - [`extract_pair`]: the two lines joined by the caller's separator when the whole fits; otherwise the start of
//!   each half, each cut the same way, joined by the separator. The budget left after the separator is shared
//!   evenly; a half shorter than its share is kept whole and its unused bytes go to the other half.
//!
//! Invariants: the result is never longer than the budget (in bytes); a verbatim result equals the input exactly
//! (newlines included: the view turns them into spaces when it renders a line); a cut result begins with the
//! start of the entry, or of the left line, and the right half begins with the start of the right line.

/// The byte budget of one summary line (spec 001 "The summary tree": each entry is compressed into a line of at
/// most 512 bytes, and so is each merged pair).
pub const SUMMARY_LINE_MAX_BYTES: usize = 512;

/// Marks where text was cut: U+2026 HORIZONTAL ELLIPSIS (3 bytes), left out when the budget cannot hold it.
pub const CUT_MARK: &str = "\u{2026}";

/// A deterministic summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extract {
    /// The summary text, at most the budget in bytes.
    pub text: String,
    /// True when the text is the input word for word (nothing was cut).
    pub verbatim: bool,
}

/// The summary of one entry's text within `budget` bytes (usually [`SUMMARY_LINE_MAX_BYTES`]): the text itself
/// when `text.len() <= budget`, else its start cut at a character boundary followed by [`CUT_MARK`].
pub fn extract_entry(text: &str, budget: usize) -> Extract {
    if text.len() <= budget {
        return Extract {
            text: text.to_owned(),
            verbatim: true,
        };
    }
    Extract {
        text: cut(text, budget),
        verbatim: false,
    }
}

/// The summary of two adjacent lines within `budget` bytes: `left + separator + right` when that fits, else the
/// start of each line (see the module docs for how the budget is shared) joined by `separator`. When the
/// separator alone does not fit, the joined text is cut as one entry.
pub fn extract_pair(left: &str, right: &str, separator: &str, budget: usize) -> Extract {
    let whole = left.len() + separator.len() + right.len();
    if whole <= budget {
        return Extract {
            text: format!("{left}{separator}{right}"),
            verbatim: true,
        };
    }
    if separator.len() >= budget {
        return extract_entry(&format!("{left}{separator}{right}"), budget);
    }
    let (l, r) = pair_parts(left, right, budget - separator.len());
    Extract {
        text: format!("{l}{separator}{r}"),
        verbatim: false,
    }
}

/// The two halves of a cut pair sharing `avail` bytes (module docs).
fn pair_parts(left: &str, right: &str, avail: usize) -> (String, String) {
    let half = avail / 2;
    let left_budget = if left.len() <= half {
        left.len()
    } else if right.len() <= avail - half {
        avail - right.len()
    } else {
        half
    };
    let right_budget = avail - left_budget;
    (
        extract_entry(left, left_budget).text,
        extract_entry(right, right_budget).text,
    )
}

/// The start of `text` within `budget` bytes, ending in [`CUT_MARK`] when there is room for it (caller ensures
/// `text.len() > budget`).
fn cut(text: &str, budget: usize) -> String {
    if budget < CUT_MARK.len() + 1 {
        return text[..text.floor_char_boundary(budget)].to_owned();
    }
    let keep = text[..text.floor_char_boundary(budget - CUT_MARK.len())].trim_end();
    format!("{keep}{CUT_MARK}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn entries_that_fit_are_kept_word_for_word() {
        let t = "# deploy\nUse blue/green; the old pool drains in 5 min.";
        assert_eq!(
            extract_entry(t, SUMMARY_LINE_MAX_BYTES),
            Extract {
                text: t.into(),
                verbatim: true
            }
        );
        let exact = "x".repeat(512);
        assert!(extract_entry(&exact, 512).verbatim);
    }

    #[test]
    fn long_entries_keep_their_start() {
        let t = format!("{} tail", "word ".repeat(200));
        let e = extract_entry(&t, 512);
        assert!(!e.verbatim);
        assert!(e.text.len() <= 512, "{}", e.text.len());
        assert!(e.text.ends_with(CUT_MARK));
        assert!(t.starts_with(e.text.trim_end_matches(CUT_MARK)));
        // 509 bytes before the mark: 101 x "word " and one more "word".
        assert_eq!(e.text, format!("{}{CUT_MARK}", "word ".repeat(102).trim_end()));
        // Multi-byte characters are never split.
        let e = extract_entry(&"é".repeat(300), 10);
        assert_eq!(e.text, format!("ééé{CUT_MARK}"));
        // A budget too small for the mark keeps what fits.
        assert_eq!(extract_entry("abcdef", 3).text, "abc");
        assert_eq!(extract_entry("abcdef", 0).text, "");
    }

    #[test]
    fn pairs_join_when_they_fit_and_keep_both_starts_otherwise() {
        let p = extract_pair("left line", "right line", " | ", 512);
        assert_eq!(
            p,
            Extract {
                text: "left line | right line".into(),
                verbatim: true
            }
        );
        let left = format!("L-start {}", "l".repeat(600));
        let right = format!("R-start {}", "r".repeat(600));
        let p = extract_pair(&left, &right, " | ", 512);
        assert!(!p.verbatim);
        assert_eq!(p.text.len(), 512, "{}", p.text);
        let (l, r) = p.text.split_once(" | ").expect("separator kept");
        assert!(l.starts_with("L-start") && r.starts_with("R-start"), "{}", p.text);
        assert_eq!(l.len(), 254);
        assert_eq!(r.len(), 255);
        // A short half is kept whole and lends its unused bytes to the other.
        let p = extract_pair("short", &right, " | ", 100);
        let (l, r) = p.text.split_once(" | ").expect("separator kept");
        assert_eq!(l, "short");
        assert_eq!(r.len(), 100 - 3 - 5);
        let p = extract_pair(&left, "short", " | ", 100);
        let (l, r) = p.text.split_once(" | ").expect("separator kept");
        assert_eq!((l.len(), r), (100 - 3 - 5, "short"));
        // A separator that does not fit: the joined text is cut as one entry.
        let p = extract_pair("abc", "def", "-----", 4);
        assert_eq!(p.text, format!("a{CUT_MARK}"));
        assert!(!p.verbatim);
    }

    proptest! {
        #[test]
        fn never_over_budget_and_always_a_prefix(left in "\\PC{0,300}", right in "\\PC{0,300}",
                                                  sep in "[ |\\n]{0,3}", budget in 0usize..700) {
            let e = extract_entry(&left, budget);
            prop_assert!(e.text.len() <= budget);
            prop_assert_eq!(e.verbatim, left.len() <= budget);
            prop_assert!(left.starts_with(e.text.trim_end_matches(CUT_MARK)));
            let p = extract_pair(&left, &right, &sep, budget);
            prop_assert!(p.text.len() <= budget);
            let whole = format!("{left}{sep}{right}");
            if p.verbatim {
                prop_assert_eq!(&p.text, &whole);
            } else if sep.len() < budget {
                let (l, r) = pair_parts(&left, &right, budget - sep.len());
                prop_assert_eq!(&p.text, &format!("{l}{sep}{r}"));
                prop_assert!(left.starts_with(l.trim_end_matches(CUT_MARK)), "{:?} {:?}", left, l);
                prop_assert!(right.starts_with(r.trim_end_matches(CUT_MARK)), "{:?} {:?}", right, r);
            }
            prop_assert_eq!(p.clone(), extract_pair(&left, &right, &sep, budget), "deterministic");
        }
    }
}
