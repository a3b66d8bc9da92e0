//! The acceptance rules of a compaction answer (spec/reference-facts.md "Compiler"): pure functions, no I/O.
//!
//! A model's answer is untrusted input. [`validate`] accepts it only when every rule holds, checked in this order
//! (the first failure is the [`Refusal`]):
//! 1. it was not cut at the output limit ([`Refusal::Truncated`]);
//! 2. it is not empty or blank ([`Refusal::Empty`]);
//! 3. it has no leading YAML frontmatter (a first line `---`) ([`Refusal::Frontmatter`]);
//! 4. its first line is the `# <key>` header ([`Refusal::HeaderMissing`]);
//! 5. its second line is the topic's `<!-- id: ... -->` line unchanged, and no other line starts an id comment
//!    ([`Refusal::IdLine`]);
//! 6. it has an even number of code fences (lines starting with ```` ``` ```` or `~~~`) ([`Refusal::UnbalancedFences`]);
//! 7. outside code fences, no dangerous HTML: an opening or closing tag of [`DANGEROUS_TAGS`] or a `javascript:`
//!    URL ([`Refusal::DangerousHtml`]);
//! 8. outside code fences, no markdown link (`](`, an autolink `<http…>`/`<mailto:…>`, a reference definition
//!    `[x]: …`) except `- [key](path)` bullets under a `## See Also` heading, where `key` is a valid memory key
//!    and `path` a relative path without scheme, spaces or parentheses ([`Refusal::Link`]);
//! 9. no credential shape: the secret gate of `memory_store` ([`cao_core::secret::scan`]) finds nothing
//!    ([`Refusal::Secret`], naming only the pattern);
//! 10. at most `4 x max(existing, 1024)` characters ([`Refusal::TooLong`]) and at least
//!     `max(existing / 4, newest entry)` characters ([`Refusal::TooShort`]), lengths in Unicode scalar values as
//!     the reference's `len`;
//! 11. the article body (what follows the two header lines, blank lines at both ends trimmed) is not empty and
//!     at most [`cao_store::MAX_CONTENT_BYTES`] bytes, the store's own limit ([`Refusal::BodyTooLarge`],
//!     [`Refusal::Empty`]).
//!
//! A refusal's message never quotes the answer: it names the rule, a line number or a fixed token.

use cao_core::Key;
use std::fmt;

/// HTML tags refused outside code fences (opening or closing, any case).
pub const DANGEROUS_TAGS: &[&str] = &[
    "script", "iframe", "object", "embed", "style", "link", "meta", "base", "form", "input", "button", "frame",
    "frameset", "svg", "math", "img",
];

/// Why an answer was refused (see the module docs for the rules, in checking order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The answer reached the output limit and was cut.
    Truncated,
    /// The answer (or its body) is empty or blank.
    Empty,
    /// The answer starts with a YAML frontmatter block.
    Frontmatter,
    /// The first line is not `# <key>`.
    HeaderMissing,
    /// The id line is missing, changed, or repeated (the detail says which).
    IdLine(&'static str),
    /// An odd number of code fences.
    UnbalancedFences,
    /// A dangerous HTML tag (its name) or `javascript:` URL outside code fences, on this 1-based line.
    DangerousHtml {
        /// The tag name, or `javascript:`.
        token: &'static str,
        /// 1-based line number.
        line: usize,
    },
    /// A markdown link outside the See Also bullets, on this 1-based line.
    Link {
        /// 1-based line number.
        line: usize,
    },
    /// A credential shape (the secret gate's pattern name).
    Secret(&'static str),
    /// Longer than allowed (characters).
    TooLong {
        /// The answer's length.
        chars: usize,
        /// The most allowed.
        max: usize,
    },
    /// Shorter than allowed (characters).
    TooShort {
        /// The answer's length.
        chars: usize,
        /// The least allowed.
        min: usize,
    },
    /// The article body exceeds the store's content limit (bytes).
    BodyTooLarge {
        /// The body's size.
        bytes: usize,
    },
}

impl Refusal {
    /// The rule's stable name (the JSON report's `refusal`).
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::Truncated => "truncated",
            Refusal::Empty => "empty",
            Refusal::Frontmatter => "frontmatter",
            Refusal::HeaderMissing => "header_missing",
            Refusal::IdLine(_) => "id_line",
            Refusal::UnbalancedFences => "unbalanced_fences",
            Refusal::DangerousHtml { .. } => "dangerous_html",
            Refusal::Link { .. } => "link",
            Refusal::Secret(_) => "secret",
            Refusal::TooLong { .. } => "too_long",
            Refusal::TooShort { .. } => "too_short",
            Refusal::BodyTooLarge { .. } => "body_too_large",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Truncated => write!(f, "the answer was cut at the output limit"),
            Refusal::Empty => write!(f, "the answer is empty"),
            Refusal::Frontmatter => write!(f, "the answer starts with YAML frontmatter"),
            Refusal::HeaderMissing => write!(f, "the first line is not the `# <key>` header"),
            Refusal::IdLine(why) => write!(f, "the id line {why}"),
            Refusal::UnbalancedFences => write!(f, "the answer has an odd number of code fences"),
            Refusal::DangerousHtml { token, line } => {
                write!(f, "dangerous HTML ({token}) outside code fences on line {line}")
            }
            Refusal::Link { line } => write!(f, "a markdown link outside the See Also bullets on line {line}"),
            Refusal::Secret(pattern) => write!(f, "the answer contains a credential ({pattern})"),
            Refusal::TooLong { chars, max } => write!(f, "the answer is {chars} characters long (at most {max})"),
            Refusal::TooShort { chars, min } => {
                write!(f, "the answer is {chars} characters long (at least {min})")
            }
            Refusal::BodyTooLarge { bytes } => write!(
                f,
                "the article is {bytes} bytes (a memory holds at most {})",
                cao_store::MAX_CONTENT_BYTES
            ),
        }
    }
}

/// What an answer is checked against.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    /// The topic's key (the header must be `# <key>`).
    pub key: &'a str,
    /// The topic's id line, exactly as in the article sent (`<!-- id: ... -->`).
    pub id_line: &'a str,
    /// Length of the article sent, in characters.
    pub existing_chars: usize,
    /// Length of the newest entry sent, in characters.
    pub newest_entry_chars: usize,
}

/// Most characters an answer may have: `4 x max(existing, 1024)`.
pub fn max_chars(existing_chars: usize) -> usize {
    4 * existing_chars.max(1024)
}

/// Least characters an answer must have: `max(existing / 4, newest entry)`.
pub fn min_chars(existing_chars: usize, newest_entry_chars: usize) -> usize {
    (existing_chars / 4).max(newest_entry_chars)
}

/// Whether `line` opens or closes a code fence.
fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

/// Lines of `text` without their `\r\n` / `\n`.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(|l| l.strip_suffix('\r').unwrap_or(l))
}

/// Check `answer` against every rule (module docs) and return the article body: the lines after the header and
/// id line, blank lines at both ends removed.
///
/// Errors: the first rule that fails, as a [`Refusal`].
pub fn validate(answer: &str, truncated: bool, expected: &Expected<'_>) -> Result<String, Refusal> {
    if truncated {
        return Err(Refusal::Truncated);
    }
    if answer.trim().is_empty() {
        return Err(Refusal::Empty);
    }
    let all: Vec<&str> = lines(answer).collect();
    if all.first().is_some_and(|l| l.trim_end() == "---") {
        return Err(Refusal::Frontmatter);
    }
    if all.first().map(|l| l.trim_end()) != Some(format!("# {}", expected.key).as_str()) {
        return Err(Refusal::HeaderMissing);
    }
    match all.get(1).map(|l| l.trim_end()) {
        Some(l) if l == expected.id_line.trim_end() => {}
        Some(l) if l.trim_start().starts_with("<!-- id:") => return Err(Refusal::IdLine("was changed")),
        _ => return Err(Refusal::IdLine("is missing (it must follow the header)")),
    }
    if all.iter().skip(2).any(|l| l.trim_start().starts_with("<!-- id:")) {
        return Err(Refusal::IdLine("appears more than once"));
    }
    if all.iter().filter(|l| is_fence(l)).count() % 2 == 1 {
        return Err(Refusal::UnbalancedFences);
    }
    check_outside_fences(&all)?;
    if let Some(pattern) = cao_core::secret::scan(answer) {
        return Err(Refusal::Secret(pattern));
    }
    let chars = answer.chars().count();
    let max = max_chars(expected.existing_chars);
    if chars > max {
        return Err(Refusal::TooLong { chars, max });
    }
    let min = min_chars(expected.existing_chars, expected.newest_entry_chars);
    if chars < min {
        return Err(Refusal::TooShort { chars, min });
    }
    let body = body_of(&all);
    if body.trim().is_empty() {
        return Err(Refusal::Empty);
    }
    if body.len() > cao_store::MAX_CONTENT_BYTES {
        return Err(Refusal::BodyTooLarge { bytes: body.len() });
    }
    Ok(body)
}

/// The body: lines after the first two, blank lines at both ends removed, joined with `\n`.
fn body_of(all: &[&str]) -> String {
    let rest = all.get(2..).unwrap_or_default();
    let start = rest.iter().position(|l| !l.trim().is_empty()).unwrap_or(rest.len());
    let end = rest.iter().rposition(|l| !l.trim().is_empty()).map_or(start, |e| e + 1);
    rest[start..end].join("\n")
}

/// Rules 7 and 8 over the lines outside code fences.
fn check_outside_fences(all: &[&str]) -> Result<(), Refusal> {
    let mut in_fence = false;
    let mut in_see_also = false;
    for (i, line) in all.iter().enumerate() {
        let n = i + 1;
        if is_fence(line) {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let t = line.trim();
        if t.starts_with('#') {
            in_see_also = t.trim_start_matches('#').trim().eq_ignore_ascii_case("see also") && t.starts_with("## ");
        }
        if let Some(token) = dangerous_html(line) {
            return Err(Refusal::DangerousHtml { token, line: n });
        }
        if has_link(line) && !(in_see_also && is_see_also_bullet(t)) {
            return Err(Refusal::Link { line: n });
        }
    }
    Ok(())
}

/// The first dangerous tag (or `javascript:`) in `line`, any case.
fn dangerous_html(line: &str) -> Option<&'static str> {
    let lower = line.to_ascii_lowercase();
    if lower.contains("javascript:") {
        return Some("javascript:");
    }
    let bytes = lower.as_bytes();
    for (pos, _) in lower.match_indices('<') {
        let mut at = pos + 1;
        if bytes.get(at) == Some(&b'/') {
            at += 1;
        }
        let rest = &lower[at..];
        for tag in DANGEROUS_TAGS {
            if let Some(after) = rest.strip_prefix(tag)
                && after
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_ascii_alphanumeric() && c != '-')
            {
                return Some(tag);
            }
        }
    }
    None
}

/// Whether `line` carries a markdown link of any form.
fn has_link(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    if line.contains("](") || lower.contains("<http://") || lower.contains("<https://") || lower.contains("<mailto:") {
        return true;
    }
    // A reference definition: `[label]: target` at the start of the line.
    let t = line.trim_start();
    t.starts_with('[') && t.find("]:").is_some_and(|p| p > 1 && !t[1..p].contains(']'))
}

/// Whether `t` (trimmed) is exactly `- [key](path)` with a valid key and a relative path (no scheme, spaces or
/// parentheses).
fn is_see_also_bullet(t: &str) -> bool {
    let Some(inner) = t.strip_prefix("- [").and_then(|s| s.strip_suffix(')')) else {
        return false;
    };
    let Some((key, path)) = inner.split_once("](") else {
        return false;
    };
    Key::parse_strict(key).is_ok()
        && !path.is_empty()
        && !path.contains(['(', ')', ':', ' ', '\t', '<', '>', '[', ']'])
        && !path.starts_with("//")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ID: &str = "<!-- id: 1234 | scope: project | type: project | tags: a -->";

    fn exp(existing: usize, newest: usize) -> Expected<'static> {
        Expected {
            key: "kafka-billing",
            id_line: ID,
            existing_chars: existing,
            newest_entry_chars: newest,
        }
    }

    fn article(body: &str) -> String {
        format!("# kafka-billing\n{ID}\n\n{body}\n")
    }

    #[test]
    fn a_good_answer_gives_its_body() {
        let body = "Billing reads the `billing` topic.\n\n```sh\nkcat -C -t billing\n```\n\n## See Also\n- [kafka-ops](project/kafka-ops.md)";
        assert_eq!(validate(&article(body), false, &exp(100, 10)), Ok(body.to_owned()));
    }

    #[test]
    fn each_rule_refuses_with_its_reason() {
        let e = exp(100, 10);
        let cases: Vec<(String, &str)> = vec![
            (article("fine text"), "truncated"),
            ("  \n\n".to_owned(), "empty"),
            (format!("---\ntitle: x\n---\n{}", article("x")), "frontmatter"),
            (format!("# other\n{ID}\n\nbody"), "header_missing"),
            (format!("\n# kafka-billing\n{ID}\n\nbody"), "header_missing"),
            ("# kafka-billing\n\nbody only".to_owned(), "id_line"),
            (
                format!("# kafka-billing\n{}\n\nbody", ID.replace("1234", "9999")),
                "id_line",
            ),
            (article(&format!("body\n{ID}")), "id_line"),
            (article("```\ncode"), "unbalanced_fences"),
            (article("run <script>alert(1)</script>"), "dangerous_html"),
            (article("see <IFRAME src=x>"), "dangerous_html"),
            (article("go to javascript:alert(1)"), "dangerous_html"),
            (article("see [docs](https://evil.example)"), "link"),
            (article("![pixel](https://evil.example/p.png)"), "link"),
            (article("<https://evil.example>"), "link"),
            (article("[ref]: https://evil.example"), "link"),
            (article("- [kafka-ops](project/kafka-ops.md)"), "link"),
            (article("## See Also\n- [x](https://evil.example)"), "link"),
            (article("## See Also\n- [Bad Key](p.md)"), "link"),
            (article("## See Also\n- [ok](p.md)\n## Next\n- [ok](p.md)"), "link"),
            (article("key AKIAABCDEFGHIJKLMNOP here"), "secret"),
        ];
        for (i, (answer, code)) in cases.iter().enumerate() {
            let got = validate(answer, i == 0, &e).expect_err(answer);
            assert_eq!(got.code(), *code, "case {i}: {answer:?} gave {got}");
        }
    }

    #[test]
    fn html_and_links_inside_fences_are_code() {
        let body = "```html\n<script>x</script> [a](https://b)\n```\nplain";
        assert!(validate(&article(body), false, &exp(60, 5)).is_ok());
        assert!(validate(&article("a <scripted> word, a <linked-list>"), false, &exp(60, 5)).is_ok());
    }

    #[test]
    fn size_bounds_follow_the_reference() {
        assert_eq!(max_chars(10), 4096);
        assert_eq!(max_chars(2000), 8000);
        assert_eq!(min_chars(2000, 100), 500);
        assert_eq!(min_chars(100, 300), 300);
        let long = article(&"x".repeat(5000));
        assert!(matches!(
            validate(&long, false, &exp(1000, 10)),
            Err(Refusal::TooLong { max: 4096, .. })
        ));
        let short = article("tiny");
        assert!(matches!(
            validate(&short, false, &exp(2000, 10)),
            Err(Refusal::TooShort { min: 500, .. })
        ));
        assert!(
            matches!(
                validate(&short, false, &exp(100, 200)),
                Err(Refusal::TooShort { min: 200, .. })
            ),
            "at least as long as the newest entry"
        );
    }

    #[test]
    fn a_body_over_the_store_limit_is_refused() {
        let big = article(&"y".repeat(cao_store::MAX_CONTENT_BYTES + 1));
        assert!(matches!(
            validate(&big, false, &exp(40_000, 10)),
            Err(Refusal::BodyTooLarge { .. })
        ));
        assert!(matches!(
            validate(&format!("# kafka-billing\n{ID}\n\n  \n"), false, &exp(0, 0)),
            Err(Refusal::Empty)
        ));
    }

    #[test]
    fn messages_never_quote_the_answer() {
        let answer = article("see [docs](https://evil.example/secret-path)");
        let msg = validate(&answer, false, &exp(60, 5)).expect_err("link").to_string();
        assert!(!msg.contains("evil"), "{msg}");
    }

    proptest! {
        #[test]
        fn never_panics_and_accepted_answers_keep_the_invariants(s in "(\\PC|\n){0,400}") {
            let e = exp(50, 0);
            if let Ok(body) = validate(&s, false, &e) {
                let first = s.lines().next().unwrap_or_default().trim_end();
                prop_assert_eq!(first, "# kafka-billing");
                prop_assert_eq!(s.lines().filter(|l| l.trim_start().starts_with("<!-- id:")).count(), 1);
                prop_assert_eq!(s.lines().filter(|l| is_fence(l)).count() % 2, 0);
                prop_assert!(cao_core::secret::scan(&s).is_none());
                prop_assert!(!body.trim().is_empty());
            }
        }

        #[test]
        fn any_body_without_markup_is_accepted_back(body in "[a-zA-Z0-9 .,;]{1,200}") {
            prop_assume!(!body.trim().is_empty() && cao_core::secret::scan(&body).is_none());
            let answer = article(&body);
            prop_assert_eq!(validate(&answer, false, &exp(0, 0)), Ok(body));
        }

        #[test]
        fn an_inserted_link_is_always_refused(body in "[a-z ]{0,100}", url in "[a-z]{1,10}") {
            let answer = article(&format!("{body} [x](https://{url}.example)"));
            prop_assert_eq!(validate(&answer, false, &exp(0, 0)).map_err(|r| r.code()), Err("link"));
        }
    }
}
