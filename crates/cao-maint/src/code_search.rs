//! In-process fixed-string search of a repository for many code symbols at once, for lint's stale-claim detector
//! (spec/reference-facts.md "Lint": a code symbol that a fixed-string search of the repository does not find is a
//! stale claim).
//!
//! The reference runs one `rg -F` process per symbol with a 3 s timeout each. Here one walk of the repository does
//! the work with ripgrep's own libraries: `ignore` lists the files (honouring `.gitignore`, `.ignore` and git's
//! exclude files, skipping hidden files and files over [`MAX_FILE_BYTES`]), `grep-searcher` with a `grep-regex`
//! literal matcher finds the lines holding any symbol still unfound, and an Aho-Corasick automaton (overlapping
//! matches) says which symbols each such line holds. The matcher is rebuilt for the symbols left whenever the set
//! shrank, so a symbol found once is never searched again; the walk stops as soon as every symbol is found.
//!
//! Invariants: the search is case-sensitive and not word-bounded (as `rg -F`); binary files (a NUL byte) are
//! skipped; symbolic links are not followed; unreadable files are skipped; the search ends by `deadline` (checked
//! between files and every `DEADLINE_CHECK_LINES` (256) matching lines) and then says it is incomplete, so a symbol it
//! did not reach is never reported as missing.

use aho_corasick::{AhoCorasick, MatchKind};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

/// Files larger than this (bytes) are not searched: generated bundles and data files, not source.
pub const MAX_FILE_BYTES: u64 = 8 << 20;

/// How many matching lines a file may produce between two deadline checks.
const DEADLINE_CHECK_LINES: usize = 256;

/// What one search found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SymbolSearch {
    /// The symbols found at least once.
    pub found: BTreeSet<String>,
    /// True when the search looked at every file it should (or found every symbol); false when the deadline
    /// ended it first.
    pub complete: bool,
    /// Files searched.
    pub files: usize,
}

/// Search the files under `root` (except those under `exclude`: the cao home, whose memories name the very symbols
/// being checked) for each of `symbols` (fixed strings, case-sensitive), stopping at `deadline`.
///
/// Never fails: a root that cannot be walked or a file that cannot be read is skipped (a missing root finds
/// nothing and is complete).
pub fn find_symbols(root: &Path, exclude: &Path, symbols: &BTreeSet<String>, deadline: Instant) -> SymbolSearch {
    let mut out = SymbolSearch {
        complete: true,
        ..SymbolSearch::default()
    };
    let mut remaining: Vec<String> = symbols.iter().filter(|s| !s.is_empty()).cloned().collect();
    if remaining.is_empty() {
        return out;
    }
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(false)
        .build();
    let mut compiled = Compiled::new(&remaining);
    let exclude = exclude.to_path_buf();
    let walker = ignore::WalkBuilder::new(root)
        .filter_entry(move |e| !e.path().starts_with(&exclude))
        .follow_links(false)
        .require_git(false)
        .max_filesize(Some(MAX_FILE_BYTES))
        .build();
    for entry in walker {
        if Instant::now() >= deadline {
            out.complete = false;
            break;
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Some(c) = compiled.as_ref() else {
            out.complete = false;
            break;
        };
        let mut sink = Attribute {
            automaton: &c.automaton,
            hits: vec![false; remaining.len()],
            lines: 0,
            deadline,
            timed_out: false,
        };
        // An unreadable file is skipped; what was attributed before the error still counts.
        let _ = searcher.search_path(&c.matcher, entry.path(), &mut sink);
        out.files += 1;
        let timed_out = sink.timed_out;
        let hits = sink.hits;
        if hits.iter().any(|h| *h) {
            let mut left = Vec::with_capacity(remaining.len());
            for (symbol, hit) in remaining.into_iter().zip(hits) {
                if hit {
                    out.found.insert(symbol);
                } else {
                    left.push(symbol);
                }
            }
            remaining = left;
            if remaining.is_empty() {
                return out;
            }
            compiled = Compiled::new(&remaining);
        }
        if timed_out {
            out.complete = false;
            break;
        }
    }
    out
}

/// The matcher (which lines) and the automaton (which symbols) for one set of symbols.
struct Compiled {
    matcher: RegexMatcher,
    automaton: AhoCorasick,
}

impl Compiled {
    /// `None` only if the literal set cannot be compiled (it is bounded by the caller, so this does not happen in
    /// practice); the search then stops with what it has.
    fn new(symbols: &[String]) -> Option<Compiled> {
        let matcher = RegexMatcherBuilder::new()
            .fixed_strings(true)
            .build_literals(symbols)
            .ok()?;
        let automaton = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .build(symbols)
            .ok()?;
        Some(Compiled { matcher, automaton })
    }
}

/// A sink that marks every symbol occurring in each matching line.
struct Attribute<'a> {
    automaton: &'a AhoCorasick,
    hits: Vec<bool>,
    lines: usize,
    deadline: Instant,
    timed_out: bool,
}

impl Sink for Attribute<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        for m in self.automaton.find_overlapping_iter(mat.bytes()) {
            if let Some(hit) = self.hits.get_mut(m.pattern().as_usize()) {
                *hit = true;
            }
        }
        self.lines += 1;
        if self.lines.is_multiple_of(DEADLINE_CHECK_LINES) && Instant::now() >= self.deadline {
            self.timed_out = true;
            return Ok(false);
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn finds_overlapping_symbols_and_honours_gitignore() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(d.path().join("src")).expect("mkdir");
        std::fs::create_dir_all(d.path().join("target")).expect("mkdir");
        std::fs::write(d.path().join(".gitignore"), "target/\n").expect("write");
        std::fs::write(d.path().join("src/lib.rs"), "fn foobar_baz() {}\nstruct Widget;\n").expect("write");
        std::fs::write(d.path().join("target/gen.rs"), "fn only_in_ignored() {}\n").expect("write");
        std::fs::write(d.path().join("src/blob.bin"), b"binary_symbol\x00\x01").expect("write");
        let deadline = Instant::now() + Duration::from_secs(30);
        std::fs::create_dir_all(d.path().join("home/memory")).expect("mkdir");
        std::fs::write(d.path().join("home/memory/k.md"), "only_in_home\n").expect("write");
        let r = find_symbols(
            d.path(),
            &d.path().join("home"),
            &set(&[
                "only_in_home",
                "foobar",
                "foobar_baz",
                "bar_b",
                "Widget",
                "widget",
                "only_in_ignored",
                "binary_symbol",
            ]),
            deadline,
        );
        assert!(r.complete);
        assert_eq!(r.found, set(&["bar_b", "foobar", "foobar_baz", "Widget"]));
    }

    #[test]
    fn a_passed_deadline_is_incomplete_and_finds_nothing() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::write(d.path().join("a.rs"), "present\n").expect("write");
        let none = Path::new("/nonexistent-exclude");
        let r = find_symbols(d.path(), none, &set(&["present"]), Instant::now());
        assert!(!r.complete);
        assert!(r.found.is_empty());
        let r = find_symbols(d.path(), none, &set(&[]), Instant::now());
        assert!(r.complete, "nothing to look for");
        let r = find_symbols(
            &d.path().join("missing"),
            none,
            &set(&["x"]),
            Instant::now() + Duration::from_secs(5),
        );
        assert!(r.complete && r.found.is_empty(), "a missing root finds nothing");
    }
}
