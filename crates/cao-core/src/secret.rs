//! The secret gate: an ordered list of named credential patterns (spec/reference-facts.md "Secret gate";
//! conformance `secret_gate.json`).
//!
//! Two operations:
//! - [`scan`] names the first pattern, in [`PATTERN_NAMES`] order, that matches the text once every
//!   [invisible character](is_invisible) is removed, or that same text after Unicode NFKC normalisation, or returns
//!   `None`. It is used to refuse federated writes and
//!   imports; the caller reports the pattern name, never the matched bytes.
//! - [`redact`] replaces every match of every pattern with `[REDACTED:<name>]` (the export `--redact` path).
//!
//! Invariants and decisions:
//! - **Order is part of the contract.** Vendor-specific shapes come before the generic assignment patterns, so the
//!   name returned by [`scan`] is the most specific one that applies.
//! - **Invisible characters.** The invisible set is the whole Unicode `Cf` (format) category as published by the
//!   `unicode-properties` crate (zero-width space/joiners, word joiner, BOM, bidi marks and isolates, soft hyphen,
//!   invisible operators, tag characters, ...) plus three groups of marks that render as nothing: the combining
//!   grapheme joiner U+034F and the variation selectors U+FE00..=U+FE0F and U+E0100..=U+E01EF. Other combining
//!   marks (accents) are visible and are kept. A credential split by one of these characters
//!   (`AK\u{200B}IA...`) is still a credential. The cost is a rare false positive when two innocent runs kept apart
//!   only by an invisible character read as one token once joined; the gate errs towards refusing.
//! - **Redaction and invisible characters.** The patterns are first run over a copy with every invisible character
//!   removed; every match span is mapped back to the original text and the invisible characters *inside* such a
//!   span (between its first and last visible character) are dropped, so the token is redacted whole. Invisible
//!   characters outside every span are kept, so a U+200D joining an emoji sequence elsewhere survives. Then each
//!   pattern, in order, replaces its matches in the result of the previous one (a cascade: a later pattern may
//!   match text around an earlier marker, e.g. `password: [REDACTED:github_pat]` becomes
//!   `[REDACTED:secret_assignment]`). This is the reference's algorithm.
//! - **Redaction is one pass, not a fixpoint.** Replacing a match with a marker can join text that a pattern then
//!   matches, so `scan(&redact(t))` is not always `None`: in `aws password=hunter22 <40 mixed-case chars>` only the
//!   password is redacted, and the marker's word `secret` then supplies the context that
//!   `aws_secret_access_key` needs. Conversely, because the replacement pass sees the invisible characters that
//!   lie outside every span, `redact` can replace text that [`scan`] judges clean (`token: ` followed by 13
//!   letters and 3 zero-width spaces). Both are the reference's behaviour (recorded in
//!   `tests/data/secret_gate_extra.json`). Callers that need a clean result must [`scan`] the redacted text again.
//!   What does hold: text without invisible characters is returned unchanged exactly when [`scan`] finds nothing.
//! - **Fail closed, never panic.** A pattern that cannot be evaluated (it failed to compile, or the
//!   backtracking matcher exceeded its step budget on a pathological input) counts as a hit of that pattern:
//!   [`scan`] returns its name and [`redact`] replaces the rest of the text, from where the undecided attempt
//!   started, with that pattern's marker. The event is logged at `warn` with the pattern name only. The matcher
//!   (`fancy-regex`, needed for the lookarounds of `aws_secret_access_key`) has a budget of 1,000,000 backtracking
//!   steps per attempt; the lookaround pattern is tried anchored at each place where its context word starts, so
//!   the budget is per candidate and a long text of near-misses stays decidable. In practice only a candidate
//!   followed by about a million whitespace characters (`secret_access_key` then 1 MB of spaces) exhausts it and
//!   reads as a hit where the reference, which has no budget, finds nothing.
//! - **Compatibility forms (NFKC).** A credential spelled with compatibility characters (fullwidth `ＡＫＩＡ...`,
//!   `ｐａｓｓｗｏｒｄ:`, a fullwidth low line in `ghp＿...`) is a credential: each pattern is also run over the
//!   *compatibility view* of the text, in which every visible character is replaced by its own NFKC form (one
//!   character at a time, so every character of the view comes from exactly one character of the text) and the
//!   invisible characters are removed. [`scan`] reports a pattern that matches either the text or its view. The
//!   reference judges the text as written only; this is a documented divergence (docs/conformance.md). [`redact`]
//!   first runs the reference's algorithm; when the result still contains a character that NFKC changes, the
//!   patterns run again, in order, over the result's compatibility view, and each match is replaced in the result
//!   from the first to the last original character it came from. Text without such characters is redacted exactly
//!   as the reference does.
//! - **PEM headers.** Every `-----BEGIN <words> PRIVATE KEY-----` header (RSA, EC, OPENSSH, DSA, ENCRYPTED, SSH2
//!   ENCRYPTED, none) and `-----BEGIN PGP PRIVATE KEY BLOCK-----` is `pem_private_key`; the reference lists only
//!   RSA, EC, OPENSSH and the bare form (a documented divergence).
//! - **Matching semantics follow the reference's Python `re`.** `\s` there also matches U+001C..=U+001F and
//!   case-insensitive `i` also matches U+0130 and U+0131; the patterns below spell these out so both
//!   implementations judge the same text the same way.

use fancy_regex::{Regex, RegexInput};
use std::borrow::Cow;
use std::sync::LazyLock;
use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// Pattern names in match order (index `i` names `PATTERNS[i]`).
pub const PATTERN_NAMES: [&str; 12] = [
    "aws_access_key",
    "aws_secret_access_key",
    "pem_private_key",
    "anthropic_api_key",
    "openai_api_key",
    "github_fine_grained_pat",
    "github_pat",
    "gitlab_pat",
    "slack_token",
    "jwt",
    "bearer_token",
    "secret_assignment",
];

/// Whitespace as the reference's regex engine sees it: Unicode `White_Space` plus U+001C..=U+001F (to be used
/// inside a character class).
macro_rules! ws {
    () => {
        r"\s\x1C-\x1F"
    };
}

/// The pattern sources, in the order of [`PATTERN_NAMES`]. `fancy-regex` syntax (lookaround is needed by
/// `aws_secret_access_key`).
const PATTERN_SOURCES: [&str; 12] = [
    // aws_access_key: long-lived (AKIA) and temporary/STS (ASIA) access key ids.
    r"(?:AKIA|ASIA)[0-9A-Z]{16}",
    // aws_secret_access_key: 40 base64 characters after an `aws ... secret|access` context or a
    // `secret_access_key` key, mixing upper and lower case (so a 40-hex git SHA or a 40-digit id does not fire),
    // and not part of a longer run.
    concat!(
        r"(?i)(?:aws.{0,20}(?:secret|access).{0,20}['",
        "\"",
        r"=:",
        ws!(),
        r"]|secret_?access_?key['",
        "\"",
        r"]?[",
        ws!(),
        r"]*[:=][",
        ws!(),
        r"]*['",
        "\"",
        r"]?)",
        r"(?-i:(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[A-Z])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+]))"
    ),
    // pem_private_key: every PEM private key header, whatever words name the algorithm or wrapping (RSA, EC,
    // OPENSSH, DSA, ENCRYPTED, SSH2 ENCRYPTED, none), and OpenPGP's armoured private key block.
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
    // anthropic_api_key
    r"sk-ant-[A-Za-z0-9_-]{20,}",
    // openai_api_key: project / service-account / admin prefixes, and the legacy form with the `T3BlbkFJ` marker.
    r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}",
    // github_fine_grained_pat: fixed 22 + 59 segment shape.
    r"github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}",
    // github_pat: classic (ghp_), OAuth (gho_), user-to-server (ghu_), server-to-server (ghs_), refresh (ghr_).
    r"gh[posur]_[A-Za-z0-9]{36,}",
    // gitlab_pat
    r"glpat-[A-Za-z0-9_-]{20,}",
    // slack_token: bot/user/refresh/session (`xox?-`) and app-level (`xapp-`) tokens; a numeric segment follows
    // the prefix, which keeps documentation paths such as `/xoxb-example-token` out.
    r"(?:xox[abeprs]|xapp)-[0-9]+-[A-Za-z0-9-]{10,}",
    // jwt: three dotted base64url parts, header and payload both starting with `eyJ` (a JSON object).
    r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
    // bearer_token: `bearer` / `api_key` / `token` then `:`, `=` or whitespace, then a long value (so the HTTP
    // header `Authorization: Bearer <token>` is caught). `[iı\u{130}]` is the reference's case-insensitive `i`.
    concat!(
        r"(?i)(?:bearer|ap[i\x{131}\x{130}][_-]?key|token)[",
        ws!(),
        r":=]+[^",
        ws!(),
        r"]{16,}"
    ),
    // secret_assignment: generic `password` / `passwd` / `secret` / `pwd` assignments.
    concat!(
        r"(?i)(?:password|passwd|secret|pwd)[",
        ws!(),
        r"]*[:=][",
        ws!(),
        r"]*[^",
        ws!(),
        r"]{6,}"
    ),
];

/// Where a match of a backtracking pattern can start, one per entry of [`PATTERN_SOURCES`] (`None`: not needed).
///
/// The backtracking matcher counts its steps over a whole search, so an unanchored search over a long text full
/// of near-misses (`aws secret aws secret ...`) could exhaust the step budget and read as a hit. Running it
/// anchored at each candidate start instead bounds the budget per candidate. Every match of the pattern starts
/// where its start finder (plain, linear-time `regex`) matches, so the results are the same.
const START_SOURCES: [Option<&str>; 12] = [
    None,
    Some(r"(?i)aws|secret_?access_?key"),
    None,
    None,
    None,
    None,
    None,
    None,
    None,
    None,
    None,
    None,
];

/// One compiled pattern.
struct Pattern {
    /// Its name (an entry of [`PATTERN_NAMES`]).
    name: &'static str,
    /// The matcher; an error (which the unit tests rule out) is judged as a hit wherever it is used (fail closed).
    regex: Result<Regex, fancy_regex::Error>,
    /// Candidate match starts (see [`START_SOURCES`]); `None` searches unanchored.
    starts: Option<regex::Regex>,
}

/// A search that could not be completed: everything from byte offset `from` on is undecided.
struct Undecided {
    /// Where the failed attempt started (matches before it were already ruled out).
    from: usize,
    /// Why (the compile or matcher error), for the log.
    reason: String,
}

impl Pattern {
    /// The leftmost match starting at or after byte offset `pos` of `text`, as a byte span.
    ///
    /// Errors: the pattern did not compile, or the matcher ran out of backtracking steps.
    fn find_at(&self, text: &str, pos: usize) -> Result<Option<(usize, usize)>, Undecided> {
        let re = self.regex.as_ref().map_err(|e| Undecided {
            from: pos,
            reason: e.to_string(),
        })?;
        let Some(starts) = &self.starts else {
            return re
                .find_from_pos(text, pos)
                .map(|m| m.map(|m| (m.start(), m.end())))
                .map_err(|e| Undecided {
                    from: pos,
                    reason: e.to_string(),
                });
        };
        let mut from = pos;
        while let Some(candidate) = starts.find_at(text, from) {
            let at = candidate.start();
            let input = RegexInput::new(text).from_pos(at).anchored(true);
            match re.find_input(input) {
                Ok(Some(m)) => return Ok(Some((m.start(), m.end()))),
                Ok(None) => {}
                Err(e) => {
                    return Err(Undecided {
                        from: at,
                        reason: e.to_string(),
                    });
                }
            }
            match text[at..].chars().next() {
                Some(c) => from = at + c.len_utf8(),
                None => break,
            }
        }
        Ok(None)
    }
}

/// The compiled patterns, in [`PATTERN_NAMES`] order, built once.
static PATTERNS: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    PATTERN_NAMES
        .iter()
        .zip(PATTERN_SOURCES)
        .zip(START_SOURCES)
        .map(|((&name, src), starts)| Pattern {
            name,
            regex: Regex::new(src),
            starts: starts.and_then(|s| regex::Regex::new(s).ok()),
        })
        .collect()
});

/// Whether `c` is invisible for the gate: general category `Cf` (format), the combining grapheme joiner U+034F,
/// or a variation selector (U+FE00..=U+FE0F, U+E0100..=U+E01EF). See the module docs for why.
pub fn is_invisible(c: char) -> bool {
    c.general_category() == GeneralCategory::Format
        || c == '\u{034F}'
        || ('\u{FE00}'..='\u{FE0F}').contains(&c)
        || ('\u{E0100}'..='\u{E01EF}').contains(&c)
}

/// The name of the first pattern (in [`PATTERN_NAMES`] order) that matches `text` with every
/// [invisible character](is_invisible) removed, or `None` when no pattern matches.
///
/// Never panics: a pattern that cannot be evaluated on `text` counts as a hit of that pattern (fail closed).
/// Only the returned name is safe to show; never echo the matched bytes.
pub fn scan(text: &str) -> Option<&'static str> {
    if text.is_empty() {
        return None;
    }
    let stripped: Cow<'_, str> = if text.chars().any(is_invisible) {
        Cow::Owned(text.chars().filter(|&c| !is_invisible(c)).collect())
    } else {
        Cow::Borrowed(text)
    };
    let view = CompatibilityView::of(&stripped);
    let hits = |p: &Pattern, text: &str| {
        p.find_at(text, 0).map(|m| m.is_some()).unwrap_or_else(|undecided| {
            tracing::warn!(pattern = p.name, reason = %undecided.reason, "secret pattern could not be evaluated; treated as a hit");
            true
        })
    };
    PATTERNS.iter().find_map(|p| {
        let hit = hits(p, &stripped) || view.as_ref().is_some_and(|v| hits(p, &v.text));
        hit.then_some(p.name)
    })
}

/// Whether NFKC changes `c` on its own (a compatibility character such as `Ａ`, `ﬁ`, `K`, `ſ`).
fn nfkc_changes(c: char) -> bool {
    !matches!(
        unicode_normalization::is_nfkc_quick(std::iter::once(c)),
        unicode_normalization::IsNormalized::Yes
    ) && !std::iter::once(c).nfkc().eq(std::iter::once(c))
}

/// The compatibility view of a text (see the module docs): each visible character replaced by its own NFKC form,
/// invisible characters removed, and for each character of the view the byte range of the text's character it
/// comes from.
struct CompatibilityView {
    /// The view.
    text: String,
    /// `(offset in the view, start and end of the source character in the text)`, one per view character, in order.
    map: Vec<(usize, usize, usize)>,
}

impl CompatibilityView {
    /// The view of `text`, or `None` when no visible character of `text` changes under NFKC (the view would differ
    /// from the text only by its invisible characters, which the plain pass already removes).
    fn of(text: &str) -> Option<CompatibilityView> {
        if !text.chars().any(|c| !is_invisible(c) && nfkc_changes(c)) {
            return None;
        }
        let mut view = CompatibilityView {
            text: String::with_capacity(text.len()),
            map: Vec::with_capacity(text.len()),
        };
        for (i, c) in text.char_indices() {
            if is_invisible(c) {
                continue;
            }
            let end = i + c.len_utf8();
            for n in std::iter::once(c).nfkc().filter(|&n| !is_invisible(n)) {
                view.map.push((view.text.len(), i, end));
                view.text.push(n);
            }
        }
        Some(view)
    }

    /// The text's byte range covering the view's byte range `start..end` (whole source characters).
    fn source_range(&self, start: usize, end: usize) -> (usize, usize) {
        let at = |k: usize| match self.map.binary_search_by_key(&k, |&(v, _, _)| v) {
            Ok(idx) => idx,
            Err(idx) => idx.saturating_sub(1),
        };
        let first = self.map.get(at(start)).map_or(0, |&(_, s, _)| s);
        let last = if end > start { at(end - 1) } else { at(start) };
        let last_end = self.map.get(last).map_or(first, |&(_, _, e)| e);
        (first, last_end.max(first))
    }
}

/// The compatibility pass of [`redact`]: each pattern in order over the compatibility view of the current text, its
/// matches replaced in the text (whole source characters) by its marker. `None` when no visible character of
/// `text` changes under NFKC.
fn redact_compatibility_forms(text: &str) -> Option<String> {
    CompatibilityView::of(text)?;
    let mut current = text.to_owned();
    for p in PATTERNS.iter() {
        let Some(view) = CompatibilityView::of(&current) else {
            break;
        };
        let (spans, failed_at) = match_spans(p, &view.text);
        if spans.is_empty() && failed_at.is_none() {
            continue;
        }
        let marker = format!("[REDACTED:{}]", p.name);
        let mut ranges: Vec<(usize, usize)> = spans.iter().map(|&(s, e)| view.source_range(s, e)).collect();
        if let Some(from) = failed_at {
            ranges.push((view.source_range(from, from).0, current.len()));
        }
        let mut out = String::with_capacity(current.len());
        let mut last = 0;
        for (start, end) in ranges {
            if end <= last {
                continue;
            }
            out.push_str(&current[last..start.max(last)]);
            out.push_str(&marker);
            last = end;
        }
        out.push_str(&current[last..]);
        current = out;
    }
    Some(current)
}

/// `text` with every match of every pattern replaced by `[REDACTED:<name>]`.
///
/// Invisible characters inside a match are removed with it; invisible characters elsewhere are kept. A credential
/// in compatibility forms is replaced whole by the compatibility pass (see the module docs). Patterns run
/// in [`PATTERN_NAMES`] order, each over the output of the previous one (see the module docs, including why
/// `scan(&redact(t))` can still be `Some`). Never panics: where a pattern cannot be evaluated, the text from the
/// start of the undecided attempt to the end is replaced by that pattern's marker (fail closed).
pub fn redact(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    let mut current = if text.chars().any(is_invisible) {
        strip_invisible_inside_matches(text)
    } else {
        text.to_owned()
    };
    for p in PATTERNS.iter() {
        if let Some(replaced) = replace_matches(p, &current) {
            current = replaced;
        }
    }
    redact_compatibility_forms(&current).unwrap_or(current)
}

/// Every non-overlapping match of `p` in `text` as byte spans, leftmost first (as Python's `finditer` yields
/// them). The second value is the byte offset from which a search could not be completed, if one could not:
/// everything from there on must be treated as matched.
fn match_spans(p: &Pattern, text: &str) -> (Vec<(usize, usize)>, Option<usize>) {
    let mut spans = Vec::new();
    let mut pos = 0;
    while pos <= text.len() {
        match p.find_at(text, pos) {
            Ok(Some((start, end))) => {
                spans.push((start, end));
                pos = if end > start {
                    end
                } else {
                    // An empty match (none of the patterns can produce one): step over one character.
                    match text[end..].chars().next() {
                        Some(c) => end + c.len_utf8(),
                        None => break,
                    }
                };
            }
            Ok(None) => break,
            Err(undecided) => {
                tracing::warn!(pattern = p.name, reason = %undecided.reason, "secret pattern could not be evaluated; redacting the rest");
                return (spans, Some(undecided.from));
            }
        }
    }
    (spans, None)
}

/// `text` with the matches of one pattern replaced by its marker, or `None` when nothing matched.
fn replace_matches(p: &Pattern, text: &str) -> Option<String> {
    let (spans, failed_at) = match_spans(p, text);
    if spans.is_empty() && failed_at.is_none() {
        return None;
    }
    let marker = format!("[REDACTED:{}]", p.name);
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (start, end) in spans {
        out.push_str(&text[last..start]);
        out.push_str(&marker);
        last = end;
    }
    match failed_at {
        Some(from) => {
            out.push_str(&text[last..from.max(last)]);
            out.push_str(&marker);
        }
        None => out.push_str(&text[last..]),
    }
    Some(out)
}

/// Drop the invisible characters that sit inside a credential, and only those: the patterns run over a copy with
/// every invisible character removed, each match span is mapped back to `text` (from the original position of its
/// first visible character to the end of its last one) and the invisible characters within are removed.
fn strip_invisible_inside_matches(text: &str) -> String {
    // One `(offset in stripped, offset in text)` pair per visible character, in order.
    let mut stripped = String::with_capacity(text.len());
    let mut map: Vec<(usize, usize)> = Vec::new();
    for (i, c) in text.char_indices() {
        if !is_invisible(c) {
            map.push((stripped.len(), i));
            stripped.push(c);
        }
    }
    // The offset in `text` of the first visible character at or after `stripped` offset `k`.
    let orig_at = |k: usize| match map.binary_search_by_key(&k, |&(s, _)| s) {
        Ok(idx) | Err(idx) => map.get(idx).map_or(text.len(), |&(_, o)| o),
    };
    // Ranges of `text` (byte offsets, end exclusive) whose invisible characters are dropped.
    let mut drop: Vec<(usize, usize)> = Vec::new();
    for p in PATTERNS.iter() {
        let (spans, failed_at) = match_spans(p, &stripped);
        for (start, end) in spans {
            if end <= start {
                continue;
            }
            let Some((last_start, last_char)) = stripped[..end].char_indices().next_back() else {
                continue;
            };
            drop.push((orig_at(start), orig_at(last_start) + last_char.len_utf8()));
        }
        if let Some(from) = failed_at {
            // Everything from the undecided attempt on will be redacted: the invisible characters there go with it.
            drop.push((orig_at(from), text.len()));
        }
    }
    if drop.is_empty() {
        return text.to_owned();
    }
    drop.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut ranges = drop.iter().peekable();
    for (i, c) in text.char_indices() {
        // Ranges are sorted by start: after skipping those that end at or before `i`, `i` is inside some range
        // exactly when it is inside the first remaining one or that one starts later (then none contains it).
        while ranges.peek().is_some_and(|&&(_, hi)| hi <= i) {
            ranges.next();
        }
        let inside = ranges.peek().is_some_and(|&&(lo, _)| lo <= i);
        if !(inside && is_invisible(c)) {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_pattern_compiles() {
        assert_eq!(PATTERNS.len(), PATTERN_NAMES.len());
        for (p, src) in PATTERNS.iter().zip(START_SOURCES) {
            assert!(
                p.regex.is_ok(),
                "pattern {} does not compile: {:?}",
                p.name,
                p.regex.as_ref().err()
            );
            assert_eq!(
                p.starts.is_some(),
                src.is_some(),
                "start finder of {} does not compile",
                p.name
            );
        }
    }

    /// The invisible set covers the reference's frozen Unicode 16 `Cf` floor (a sample of its ranges, including
    /// the characters newer than the reference interpreter's own tables) and its extra marks, and nothing visible.
    #[test]
    fn invisible_set_covers_the_reference_floor() {
        for c in [
            '\u{00AD}',
            '\u{0600}',
            '\u{061C}',
            '\u{0890}',
            '\u{0891}',
            '\u{180E}',
            '\u{200B}',
            '\u{200F}',
            '\u{202E}',
            '\u{2060}',
            '\u{2066}',
            '\u{206F}',
            '\u{FEFF}',
            '\u{FFFB}',
            '\u{110BD}',
            '\u{13430}',
            '\u{1343F}',
            '\u{1BCA3}',
            '\u{1D17A}',
            '\u{E0001}',
            '\u{E007F}',
            '\u{034F}',
            '\u{FE00}',
            '\u{FE0F}',
            '\u{E0100}',
            '\u{E01EF}',
        ] {
            assert!(is_invisible(c), "U+{:04X} must be invisible", u32::from(c));
        }
        for c in ['a', ' ', '\u{0301}', '\u{00A0}', '\u{1F469}', '\u{E0000}', '\u{FE10}'] {
            assert!(!is_invisible(c), "U+{:04X} must be visible", u32::from(c));
        }
    }

    /// An attempt that exhausts the matcher's budget is a hit (fail closed), and redaction replaces the text from
    /// the undecided candidate on while keeping what precedes it.
    #[test]
    fn exhausted_budget_fails_closed() {
        let text = format!("keep this secret_access_key{}x", " ".repeat(1_100_000));
        assert_eq!(scan(&text), Some("aws_secret_access_key"));
        assert_eq!(redact(&text), "keep this [REDACTED:aws_secret_access_key]");
    }

    /// A long text full of near-misses stays decidable: the budget is per candidate, not per search (one
    /// unanchored search over these 132 KB would use up the whole budget at about 106 KB).
    #[test]
    fn near_misses_do_not_exhaust_the_budget() {
        let text = "aws secret ".repeat(12_000);
        assert_eq!(scan(&text), None);
        assert_eq!(redact(&text), text);
    }

    /// Redaction keeps invisible characters outside every match.
    #[test]
    fn invisible_characters_outside_matches_survive() {
        let text = "\u{1F469}\u{200D}\u{1F4BB} AK\u{200B}IAABCDEFGHIJKLMNOP\u{200B}";
        assert_eq!(
            redact(text),
            "\u{1F469}\u{200D}\u{1F4BB} [REDACTED:aws_access_key]\u{200B}"
        );
    }

    /// Benign prose: no pattern fires on these words in any order.
    const WORDS: [&str; 10] = [
        "the", "build", "uses", "cargo", "and", "runs", "fast", "notes", "for", "review",
    ];

    fn prose() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(&WORDS[..]), 0..6).prop_map(|w| w.join(" "))
    }

    /// Strings matching the regex `pattern` (a test-only generator; the pattern is a constant of this module).
    fn re(pattern: &str) -> BoxedStrategy<String> {
        proptest::string::string_regex(pattern)
            .expect("generator pattern is valid")
            .boxed()
    }

    /// `(pattern name, a string that the pattern matches whole)` for every pattern.
    fn secret() -> impl Strategy<Value = (&'static str, String)> {
        let up = "[A-Z0-9]";
        let alnum = "[A-Za-z0-9]";
        let dashy = "[A-Za-z0-9_-]";
        prop_oneof![
            re(&format!("(AKIA|ASIA){up}{{16}}")).prop_map(|s| ("aws_access_key", s)),
            re("[A-Za-z0-9/+]{38}").prop_map(|s| ("aws_secret_access_key", format!("aws_secret_access_key = aB{s}"))),
            re("(RSA |EC |OPENSSH |DSA |ENCRYPTED |SSH2 ENCRYPTED |)")
                .prop_map(|t| ("pem_private_key", format!("-----BEGIN {t}PRIVATE KEY-----"))),
            re(&format!("sk-ant-{dashy}{{20,40}}")).prop_map(|s| ("anthropic_api_key", s)),
            re(&format!("sk-(proj|svcacct|admin)-{dashy}{{20,40}}")).prop_map(|s| ("openai_api_key", s)),
            re(&format!("github_pat_{alnum}{{22}}_{alnum}{{59}}")).prop_map(|s| ("github_fine_grained_pat", s)),
            re(&format!("gh[posur]_{alnum}{{36,50}}")).prop_map(|s| ("github_pat", s)),
            re(&format!("glpat-{dashy}{{20,30}}")).prop_map(|s| ("gitlab_pat", s)),
            re("(xox[abeprs]|xapp)-[0-9]{1,12}-[A-Za-z0-9-]{10,30}").prop_map(|s| ("slack_token", s)),
            re(&format!("eyJ{dashy}{{10,30}}\\.eyJ{dashy}{{10,30}}\\.{dashy}{{10,30}}")).prop_map(|s| ("jwt", s)),
            re("(Bearer|bearer|api_key|API-KEY|token)(: | |=)[a-z0-9]{16,30}").prop_map(|s| ("bearer_token", s)),
            re("(password|passwd|pwd|PASSWORD)(: | = |=)[a-z0-9]{6,20}").prop_map(|s| ("secret_assignment", s)),
        ]
    }

    /// Text that often comes close to the patterns: fragments of them, invisible characters, markers.
    fn near_miss_soup() -> impl Strategy<Value = String> {
        let fragments = prop::sample::select(vec![
            "AKIA",
            "aws",
            "secret",
            "access",
            "_key",
            "=",
            ": ",
            " ",
            "\n",
            "aB",
            "0123456789",
            "xoxb-",
            "eyJ",
            ".",
            "ghp_",
            "sk-ant-",
            "sk-proj-",
            "glpat-",
            "token",
            "Bearer ",
            "password",
            "-----BEGIN ",
            "PRIVATE KEY-----",
            "\u{200B}",
            "\u{00AD}",
            "\u{FE0F}",
            "\u{E0041}",
            "[REDACTED:jwt]",
            "abcdefghijklmnop",
            "/+",
            "\u{1C}",
            "é",
        ]);
        prop::collection::vec(fragments, 0..40).prop_map(|f| f.concat())
    }

    proptest! {
        #[test]
        fn scan_and_redact_never_panic(text in prop_oneof![any::<String>(), near_miss_soup()]) {
            let _ = scan(&text);
            let _ = redact(&text);
        }

        /// Without invisible characters, `redact` changes the text exactly when `scan` finds something.
        #[test]
        fn redact_changes_exactly_what_scan_flags(text in prop_oneof![any::<String>(), near_miss_soup()]) {
            prop_assume!(!text.chars().any(is_invisible));
            prop_assert_eq!(scan(&text).is_none(), redact(&text) == text);
        }

        /// A known secret in benign prose is named by its own pattern, replaced whole by its marker with the prose
        /// around it untouched, and the result is clean.
        #[test]
        fn secret_in_prose_is_found_and_removed((name, s) in secret(), before in prose(), after in prose()) {
            let text = format!("{before} {s} {after}");
            prop_assert_eq!(scan(&text), Some(name));
            let redacted = redact(&text);
            prop_assert_eq!(&redacted, &format!("{before} [REDACTED:{name}] {after}"));
            prop_assert_eq!(scan(&redacted), None);
        }

        /// A known secret written in fullwidth compatibility characters is the same secret: named by its pattern and
        /// replaced whole, with the prose around it untouched.
        #[test]
        fn fullwidth_secret_in_prose_is_found_and_removed((name, s) in secret(), before in prose(), after in prose()) {
            let wide: String = s
                .chars()
                .map(|c| if ('!'..='~').contains(&c) { char::from_u32(u32::from(c) + 0xFEE0).unwrap_or(c) } else { c })
                .collect();
            let text = format!("{before} {wide} {after}");
            prop_assert_eq!(scan(&text), Some(name));
            let redacted = redact(&text);
            prop_assert_eq!(&redacted, &format!("{before} [REDACTED:{name}] {after}"));
            prop_assert_eq!(scan(&redacted), None);
        }

        /// An invisible character anywhere inside a known secret neither hides it from `scan` nor survives
        /// redaction: the result equals that of the unsplit secret.
        #[test]
        fn invisible_character_inside_a_secret_still_hits(
            (name, s) in secret(),
            cut in any::<prop::sample::Index>(),
            invisible in prop::sample::select(vec!['\u{200B}', '\u{00AD}', '\u{2066}', '\u{FEFF}', '\u{E0041}', '\u{FE0F}', '\u{034F}']),
        ) {
            let inner: Vec<usize> = s.char_indices().map(|(i, _)| i).filter(|&i| i > 0).collect();
            let at = inner[cut.index(inner.len())];
            let split = format!("note {}{invisible}{} end", &s[..at], &s[at..]);
            prop_assert_eq!(scan(&split), Some(name));
            prop_assert_eq!(redact(&split), format!("note [REDACTED:{name}] end"));
        }
    }
}
