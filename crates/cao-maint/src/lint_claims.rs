//! The claims a memory's text makes about a repository, as lint's stale-claim detector reads them, and the one edit
//! heal makes for a stale claim (spec/reference-facts.md "Lint" `stale_claim`, "Heal" stale claim). Pure functions
//! over text, except [`repo_root_of`] and [`path_exists`], which look at the file system.
//!
//! - **Paths**: whitespace-separated tokens (trimmed of surrounding quotes, brackets, backticks and trailing
//!   punctuation) of the form `./x`, `/x` or `dir/x` whose last segment ends in `.<ext>` (a letter, then up to 9
//!   letters or digits). URLs, `~` paths, tokens with `..` segments or shell/glob characters are not claims.
//! - **Code symbols**: `[A-Za-z_][A-Za-z0-9_]{2,63}` runs inside inline code spans (`` `x` ``, ``` ``x`` ```) or
//!   fenced code blocks (```` ``` ```` or `~~~`).
//! - **Paragraphs**: maximal runs of non-blank lines; a fenced block belongs whole to the paragraph it is in (its
//!   blank lines do not split it), so removing a paragraph never leaves an unbalanced fence.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// Longest path token considered (bytes).
const MAX_PATH_TOKEN_BYTES: usize = 512;

/// A path claim: an optional `./` or `/`, segments of `[A-Za-z0-9_.@+-]`, a last segment ending in `.<ext>`.
static PATH_TOKEN: LazyLock<regex::Regex> = LazyLock::new(|| {
    // A constant pattern; it compiles (covered by the unit tests).
    #[allow(clippy::expect_used, reason = "constant pattern")]
    regex::Regex::new(r"^(?:\./|/)?(?:[A-Za-z0-9_.@+-]+/)*[A-Za-z0-9_@+-][A-Za-z0-9_.@+-]*\.[A-Za-z][A-Za-z0-9]{0,9}$")
        .expect("valid path pattern")
});

/// The distinct path claims of `text`, in order of first appearance.
pub fn path_tokens(text: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for raw in text.split_whitespace() {
        let token = raw
            .trim_start_matches(['(', '[', '{', '<', '"', '\'', '`', '*', '_'])
            .trim_end_matches([
                ')', ']', '}', '>', '"', '\'', '`', ',', '.', ';', ':', '!', '?', '*', '_',
            ]);
        if token.len() > MAX_PATH_TOKEN_BYTES || token.contains("://") || token.contains("//") {
            continue;
        }
        let shaped = token.starts_with("./") || token.starts_with('/') || token.contains('/');
        if !shaped || !PATH_TOKEN.is_match(token) {
            continue;
        }
        if token.split('/').any(|seg| seg == "..") {
            continue;
        }
        if seen.insert(token) {
            out.push(token.to_owned());
        }
    }
    out
}

/// Whether a path claim exists: an absolute token as it is, any other below `root` (a `./` prefix dropped).
/// A dangling symbolic link exists (it is there; where it points is another matter).
pub fn path_exists(root: &Path, token: &str) -> bool {
    let path = if token.starts_with('/') {
        PathBuf::from(token)
    } else {
        root.join(token.trim_start_matches("./"))
    };
    std::fs::symlink_metadata(path).is_ok()
}

/// Whether a path claim is absolute (checked without a repository root).
pub fn is_absolute(token: &str) -> bool {
    token.starts_with('/')
}

/// The repository root of `cwd`: the nearest ancestor (itself included) holding `.git`; `None` outside a git
/// repository.
///
/// The reference falls back to the cwd itself. We do not: run from an unrelated directory (say `/tmp` with
/// `CAO_PROJECT_ID` naming the project), that fallback judged every relative path of the project's memories
/// missing and heal stripped correct paragraphs. Without a repository, relative paths and code symbols are left
/// unchecked and the report says so; `--repo-root` names a root explicitly (docs/conformance.md).
pub fn repo_root_of(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())
        .map(Path::to_path_buf)
}

/// The opening fence of a line (```` ``` ```` or `~~~`, up to three spaces of indent): its character and length.
fn fence_of(line: &str) -> Option<(char, usize)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let c = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = rest.chars().take_while(|x| *x == c).count();
    (n >= 3).then_some((c, n))
}

/// Whether `line` closes a fence opened with `(c, n)`.
fn closes(line: &str, (c, n): (char, usize)) -> bool {
    fence_of(line).is_some_and(|(c2, n2)| c2 == c && n2 >= n && line.trim().chars().all(|x| x == c))
}

/// The distinct code symbols of `text` (inline code spans and fenced blocks), in order of first appearance.
pub fn code_symbols(text: &str) -> Vec<String> {
    let mut code = String::new();
    let mut fence: Option<(char, usize)> = None;
    for line in text.lines() {
        match fence {
            Some(f) => {
                if closes(line, f) {
                    fence = None;
                } else {
                    code.push_str(line);
                    code.push('\n');
                }
            }
            None => {
                if let Some(f) = fence_of(line) {
                    fence = Some(f);
                } else {
                    for span in inline_code(line) {
                        code.push_str(span);
                        code.push('\n');
                    }
                }
            }
        }
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for run in code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        let first_ok = run.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
        if first_ok && (3..=64).contains(&run.len()) && seen.insert(run) {
            out.push(run.to_owned());
        }
    }
    out
}

/// The inline code spans of one line: a run of n backticks up to the next run of exactly n.
fn inline_code(line: &str) -> Vec<&str> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let n = b[i..].iter().take_while(|x| **x == b'`').count();
        let start = i + n;
        let mut j = start;
        let mut close = None;
        while j < b.len() {
            if b[j] == b'`' {
                let m = b[j..].iter().take_while(|x| **x == b'`').count();
                if m == n {
                    close = Some(j);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                out.push(&line[start..end]);
                i = end + n;
            }
            None => i = start,
        }
    }
    out
}

/// The paragraphs of `text` as inclusive line ranges `(first, last)` (see the module docs).
fn paragraphs(lines: &[&str]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut fence: Option<(char, usize)> = None;
    for (i, line) in lines.iter().enumerate() {
        if let Some(f) = fence {
            if closes(line, f) {
                fence = None;
            }
            continue;
        }
        if line.trim().is_empty() {
            if let Some(s) = start.take() {
                out.push((s, i - 1));
            }
            continue;
        }
        if start.is_none() {
            start = Some(i);
        }
        fence = fence_of(line);
    }
    if let Some(s) = start {
        out.push((s, lines.len().saturating_sub(1)));
    }
    out
}

/// `text` without the first paragraph that contains `token`: `Some((new_text, removed_paragraph))`, or `None` when
/// no paragraph contains it. The blank lines after the removed paragraph go with it (before it, when it was the
/// last one), so the text keeps one blank line between the paragraphs left. `new_text` may be empty (the caller
/// decides what an empty result means).
pub fn strip_paragraph(text: &str, token: &str) -> Option<(String, String)> {
    let lines: Vec<&str> = text.split('\n').collect();
    let (first, last) = paragraphs(&lines)
        .into_iter()
        .find(|(a, b)| lines[*a..=*b].iter().any(|l| l.contains(token)))?;
    let removed = lines[first..=last].join("\n");
    let mut to = last + 1;
    while to < lines.len() && lines[to].trim().is_empty() {
        to += 1;
    }
    let mut from = first;
    if to == lines.len() {
        while from > 0 && lines[from - 1].trim().is_empty() {
            from -= 1;
        }
    }
    let kept: Vec<&str> = lines[..from].iter().chain(&lines[to..]).copied().collect();
    Some((kept.join("\n"), removed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_claims_have_the_three_shapes_and_an_extension() {
        let text = "See ./docs/setup.md, /etc/hosts.conf and src/lib.rs; also `crates/x/Cargo.toml`.\n\
                    Not: https://x.io/a.html, ~/notes.txt, ../up.rs, 9/10.5, main.rs, a/b, *.rs/x.c$, src//x.rs \
                    (src/lib.rs again) [tests/it/main.rs]";
        assert_eq!(
            path_tokens(text),
            [
                "./docs/setup.md",
                "/etc/hosts.conf",
                "src/lib.rs",
                "crates/x/Cargo.toml",
                "tests/it/main.rs"
            ]
        );
        assert!(path_tokens("").is_empty());
    }

    #[test]
    fn paths_exist_under_the_root_or_absolutely() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(d.path().join("src")).expect("mkdir");
        std::fs::write(d.path().join("src/lib.rs"), "").expect("write");
        assert!(path_exists(d.path(), "src/lib.rs"));
        assert!(path_exists(d.path(), "./src/lib.rs"));
        assert!(!path_exists(d.path(), "src/gone.rs"));
        let abs = d.path().join("src/lib.rs").display().to_string();
        assert!(path_exists(Path::new("/nonexistent"), &abs));
        assert!(is_absolute(&abs) && !is_absolute("src/lib.rs"));
        std::fs::create_dir_all(d.path().join("repo/.git")).expect("mkdir");
        std::fs::create_dir_all(d.path().join("repo/a/b")).expect("mkdir");
        assert_eq!(repo_root_of(&d.path().join("repo/a/b")), Some(d.path().join("repo")));
        assert_eq!(
            repo_root_of(d.path()),
            None,
            "no .git above: no root (the reference used the cwd)"
        );
    }

    #[test]
    fn symbols_come_from_inline_code_and_fences_only() {
        let text = "Call `parse_header()` then ``render_index`` here; plain_word is prose.\n\
                    ```rust\nfn make_row(x: u8) {}\n\n  let ab = 1;\n```\n~~~\ninside_tilde\n~~~\nafter_fence text `x`";
        assert_eq!(
            code_symbols(text),
            ["parse_header", "render_index", "make_row", "let", "inside_tilde"]
        );
        assert!(code_symbols("`unclosed span").is_empty());
        let long = format!("`{}`", "a".repeat(65));
        assert!(code_symbols(&long).is_empty(), "longer than 64");
    }

    #[test]
    fn strip_removes_the_first_naming_paragraph_and_its_blank_lines() {
        let text = "Intro line.\n\nThe build lives in src/old.rs\nand more.\n\nLast paragraph src/old.rs too.";
        let (kept, removed) = strip_paragraph(text, "src/old.rs").expect("found");
        assert_eq!(removed, "The build lives in src/old.rs\nand more.");
        assert_eq!(kept, "Intro line.\n\nLast paragraph src/old.rs too.");
        let (kept, removed) = strip_paragraph(&kept, "src/old.rs").expect("found");
        assert_eq!(
            (kept.as_str(), removed.as_str()),
            ("Intro line.", "Last paragraph src/old.rs too.")
        );
        let (kept, _) = strip_paragraph("only src/x.rs", "src/x.rs").expect("found");
        assert_eq!(kept, "", "the caller decides about an empty result");
        assert_eq!(strip_paragraph("nothing here", "src/x.rs"), None);
    }

    #[test]
    fn a_fence_is_one_paragraph_with_its_blank_lines() {
        let text = "Before.\n\n```\nold_fn();\n\nmore();\n```\n\nAfter.";
        let (kept, removed) = strip_paragraph(text, "old_fn").expect("found");
        assert_eq!(removed, "```\nold_fn();\n\nmore();\n```");
        assert_eq!(kept, "Before.\n\nAfter.");
        let (kept, removed) = strip_paragraph(text, "more").expect("found");
        assert_eq!(
            removed, "```\nold_fn();\n\nmore();\n```",
            "the whole fence, not half of it"
        );
        assert_eq!(kept.matches("```").count() % 2, 0);
    }
}
