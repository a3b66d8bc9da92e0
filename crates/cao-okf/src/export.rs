//! Export rendering: the bytes of every file of a bundle, from the topics the pipeline gathered (spec 000
//! "cao memory export", "Read-only mirror"; spec/reference-facts.md "OKF bundles"; conformance
//! `okf_export.json`).
//!
//! # Per topic
//! 1. The latest entry's text, stripped (Python `strip()`), and with `include_history` the earlier entries
//!    ([`history_text`]) pass the [`secret_gate`]: by default a hit skips the topic and records the pattern
//!    names; with `redact` every match becomes `[REDACTED:<name>]` and the topic is counted as redacted.
//! 2. The description is the first sentence of the (gated) latest text ([`derive_description`]).
//! 3. `## See Also` links are rewritten to bundle paths, or to plain text when their target is not in the
//!    bundle ([`normalize_see_also`]); the text's line boundaries become `\n`.
//! 4. The topic file ([`render_topic_file`]): frontmatter in fixed order `type`, `title`, `description` (JSON
//!    quoted, ASCII; omitted when empty), `tags` (a flow list of JSON-quoted strings; omitted when none),
//!    `timestamp` (latest entry), `created` (first entry); then `# <key>` and the text. LF endings, one final
//!    newline. Its path is `<key>.md`, or `<scope_id>/<key>.md` for session and agent topics.
//! 5. With `include_history` and earlier entries: `history/<topic path>` holding them verbatim as `## <ts>`
//!    sections (the same text the reference's file holds; nothing reads it back).
//!
//! Then `index.md` ([`render_index`]) and `manifest.md` ([`render_manifest`]). Rendering is a pure function of
//! its input, so the same memories give the same bytes; the pipeline writes a file only when its bytes differ,
//! counts `exported` / `unchanged` over topic files, and prunes with [`crate::path::prune_candidates`].
//!
//! Topic text is written as stored, unescaped: a content line that looks like an entry heading is escaped by the
//! importer (`\#\#`), so such a memory does not survive an export/import round trip byte for byte.

use crate::error::OkfError;
use crate::path::{INDEX_FILE, MANIFEST_FILE, history_rel_path, is_nested_scope, topic_rel_path};
use crate::pytext;
use cao_core::key::sanitize_scope_id;
use cao_core::time::format_ts;
use cao_core::{Key, MemoryType, Scope};
use chrono::{DateTime, Utc};
use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

/// Longest description, in characters (Python string slicing).
pub const MAX_DESCRIPTION_CHARS: usize = 200;

/// Check that `scope` may be exported: session and agent only with `include_private` (the HTTP export passes
/// `false` always).
///
/// Errors: [`OkfError::PrivateScope`].
pub fn check_export_scope(scope: Scope, include_private: bool) -> Result<(), OkfError> {
    if is_nested_scope(scope) && !include_private {
        return Err(OkfError::PrivateScope(scope));
    }
    Ok(())
}

/// The parameters of one export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportOptions {
    /// The exported scope.
    pub scope: Scope,
    /// The scope id named in the manifest (the project id, or the one session/agent exported); `None` or empty
    /// omits the line.
    pub scope_id: Option<String>,
    /// Also write `history/` files with every earlier entry (and gate them).
    pub include_history: bool,
    /// Redact secret matches instead of skipping the topic.
    pub redact: bool,
}

/// One earlier entry of a topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportEntry {
    /// Its heading time.
    pub timestamp: DateTime<Utc>,
    /// Its content as stored.
    pub content: String,
}

/// One memory to export, as the store holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportTopic {
    /// The key.
    pub key: Key,
    /// The session/agent scope id (used as the path directory for those scopes; ignored otherwise).
    pub scope_id: Option<String>,
    /// The memory type.
    pub memory_type: MemoryType,
    /// The tags csv as stored (empty parts are dropped).
    pub tags: String,
    /// The first entry's time.
    pub created_at: DateTime<Utc>,
    /// The latest entry's time.
    pub updated_at: DateTime<Utc>,
    /// The latest entry's content as stored.
    pub content: String,
    /// The earlier entries, oldest first (read only with `include_history`; may be left empty otherwise).
    pub history: Vec<ExportEntry>,
}

/// The export report, with the reference's field names (`ExportReport` of its archive backend). Rendering
/// fills `skipped_secret`, `redacted`, `links_dropped` and `skip_reasons`; the pipeline fills `exported`,
/// `unchanged` and `pruned` as it writes.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct ExportReport {
    /// Topic files written (new or changed).
    pub exported: usize,
    /// Topics skipped because a secret pattern matched.
    pub skipped_secret: usize,
    /// Topics exported with redactions.
    pub redacted: usize,
    /// Files deleted by `--prune`.
    pub pruned: usize,
    /// Topic files whose bytes were already in place.
    pub unchanged: usize,
    /// See Also links turned into plain text because their target is not in the bundle.
    pub links_dropped: usize,
    /// Skipped key -> the names of the patterns that matched (latest text first, then history).
    pub skip_reasons: BTreeMap<String, Vec<String>>,
}

/// A rendered bundle: every file's text by bundle path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedBundle {
    /// Bundle path -> file text (topics, history files, `index.md`, `manifest.md`).
    pub files: BTreeMap<String, String>,
    /// The paths of the topic files (what `exported` / `unchanged` count), sorted.
    pub topic_paths: Vec<String>,
    /// The rendering part of the report.
    pub report: ExportReport,
}

impl RenderedBundle {
    /// The paths `--prune` keeps besides `index.md` and `manifest.md`: the topic and history files written.
    pub fn kept_paths(&self) -> BTreeSet<String> {
        self.files
            .keys()
            .filter(|p| *p != INDEX_FILE && *p != MANIFEST_FILE)
            .cloned()
            .collect()
    }
}

/// The outcome of the secret gate for one topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateDecision {
    /// Export with these texts.
    Export {
        /// The latest text (redacted if needed).
        latest: String,
        /// The history text (redacted if needed; empty when none).
        history: String,
        /// Whether anything was redacted.
        redacted: bool,
    },
    /// Skip the topic: the names of the matching patterns (latest first, then history if different).
    Skip(Vec<&'static str>),
}

/// The export secret gate (spec/reference-facts.md "Secret gate"). Without `redact`: [`cao_core::secret::scan`]
/// of `latest`, then of `history` (when not empty); any hit skips. With `redact`: both texts go through
/// [`cao_core::secret::redact`]; the topic counts as redacted when either text changed (a change happens exactly
/// when a pattern matched, since a marker never equals what it replaces).
pub fn secret_gate(latest: &str, history: &str, redact: bool) -> GateDecision {
    if redact {
        let new_latest = cao_core::secret::redact(latest);
        let new_history = if history.is_empty() {
            String::new()
        } else {
            cao_core::secret::redact(history)
        };
        let redacted = new_latest != latest || new_history != history;
        return GateDecision::Export {
            latest: new_latest,
            history: new_history,
            redacted,
        };
    }
    let mut fired: Vec<&'static str> = cao_core::secret::scan(latest).into_iter().collect();
    if !history.is_empty()
        && let Some(hit) = cao_core::secret::scan(history)
        && !fired.contains(&hit)
    {
        fired.push(hit);
    }
    if fired.is_empty() {
        GateDecision::Export {
            latest: latest.to_owned(),
            history: history.to_owned(),
            redacted: false,
        }
    } else {
        GateDecision::Skip(fired)
    }
}

/// The history file text of a topic's earlier entries: each as `## <ts>\n<content>` (trailing newlines of the
/// content removed, as the topic file loses them), joined by a blank line, with one final newline; `""` when
/// there are none. Content is verbatim.
pub fn history_text(entries: &[ExportEntry]) -> String {
    if entries.is_empty() {
        return String::new();
    }
    let sections: Vec<String> = entries
        .iter()
        .map(|e| format!("## {}\n{}", format_ts(e.timestamp), e.content.trim_end_matches('\n')))
        .collect();
    let joined = sections.join("\n\n");
    format!("{}\n", joined.trim_end_matches('\n'))
}

/// The description of a topic: on the first line (Python `splitlines`) that is not blank, not a heading (`#`)
/// and not a link item (`- [`) once stripped, the shortest prefix ending in `.`, `!` or `?` that is followed
/// by whitespace or the line end (at least one character before the mark), else the whole stripped line; cut to
/// [`MAX_DESCRIPTION_CHARS`] characters (not trimmed again). `""` when no line qualifies.
pub fn derive_description(body: &str) -> String {
    for line in pytext::splitlines(body) {
        let stripped = pytext::strip(line);
        if stripped.is_empty() || stripped.starts_with('#') || stripped.starts_with("- [") {
            continue;
        }
        let chars: Vec<(usize, char)> = stripped.char_indices().collect();
        let sentence_end = chars.iter().enumerate().skip(1).find_map(|(n, &(i, c))| {
            let followed_ok = chars
                .get(n + 1)
                .is_none_or(|&(_, next)| cao_core::text::is_reference_whitespace(next));
            (matches!(c, '.' | '!' | '?') && followed_ok).then_some(i + c.len_utf8())
        });
        let sentence = &stripped[..sentence_end.unwrap_or(stripped.len())];
        return sentence.chars().take(MAX_DESCRIPTION_CHARS).collect();
    }
    String::new()
}

/// A See Also link line as the store renders it (`- [key](target)`, whole stripped line).
static SEE_ALSO_LINK: LazyLock<Result<Regex, regex::Error>> =
    LazyLock::new(|| Regex::new(r"^- \[([^\]]+)\]\(([^)]+)\)$"));

/// Rewrite the links of `## See Also` blocks (from a line stripping to `## See Also` to the next line starting
/// `## `): a `- [key](...)` line becomes `- [key](<bundle path>)` when `(own scope id, key)` is exported (a
/// `targets` entry), else `- key` and `links_dropped` grows. Other lines are kept; lines are re-joined with `\n`.
pub fn normalize_see_also(
    body: &str,
    own_scope_id: Option<&str>,
    targets: &BTreeMap<(Option<String>, String), String>,
    links_dropped: &mut usize,
) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut in_block = false;
    for line in pytext::splitlines(body) {
        let stripped = pytext::strip(line);
        if stripped == "## See Also" {
            in_block = true;
            out.push(line.to_owned());
            continue;
        }
        if in_block && stripped.starts_with("## ") {
            in_block = false;
        }
        if in_block && let Some(c) = SEE_ALSO_LINK.as_ref().ok().and_then(|re| re.captures(stripped)) {
            let target = c.get(1).map_or("", |m| m.as_str());
            match targets.get(&(own_scope_id.map(str::to_owned), target.to_owned())) {
                Some(rel) => out.push(format!("- [{target}]({rel})")),
                None => {
                    out.push(format!("- {target}"));
                    *links_dropped += 1;
                }
            }
            continue;
        }
        out.push(line.to_owned());
    }
    out.join("\n")
}

/// The fields of one topic file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicFile<'a> {
    /// `title` and the `# <key>` heading.
    pub key: &'a Key,
    /// `type`.
    pub memory_type: MemoryType,
    /// `description` (omitted when empty).
    pub description: &'a str,
    /// `tags` (omitted when empty).
    pub tags: &'a [&'a str],
    /// `timestamp`.
    pub updated_at: DateTime<Utc>,
    /// `created`.
    pub created_at: DateTime<Utc>,
    /// The text after the heading (omitted when empty).
    pub body: &'a str,
}

/// Render a topic file (format in the module docs): the lines joined with `\n`, trailing whitespace removed
/// (Python `rstrip()`), one final `\n`.
pub fn render_topic_file(t: &TopicFile<'_>) -> String {
    let mut lines = vec![
        "---".to_owned(),
        format!("type: {}", t.memory_type),
        format!("title: {}", t.key),
    ];
    if !t.description.is_empty() {
        lines.push(format!("description: {}", pytext::json_quote_ascii(t.description)));
    }
    if !t.tags.is_empty() {
        let quoted: Vec<String> = t.tags.iter().map(|tag| pytext::json_quote_ascii(tag)).collect();
        lines.push(format!("tags: [{}]", quoted.join(", ")));
    }
    lines.push(format!("timestamp: {}", format_ts(t.updated_at)));
    lines.push(format!("created: {}", format_ts(t.created_at)));
    lines.extend(["---".to_owned(), String::new(), format!("# {}", t.key)]);
    if !t.body.is_empty() {
        lines.extend([String::new(), t.body.to_owned()]);
    }
    format!("{}\n", pytext::rstrip(&lines.join("\n")))
}

/// One `index.md` line's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexLine<'a> {
    /// The topic's bundle path.
    pub rel_path: &'a str,
    /// Its key.
    pub key: &'a Key,
    /// Its description (may be empty).
    pub description: &'a str,
}

/// Render `index.md`: `# Index`, a blank line, then `* [key](path)` plus ` - description` when there is one,
/// sorted by path; trailing whitespace of the whole text removed, one final `\n` (`# Index\n` when empty).
pub fn render_index(lines: &[IndexLine<'_>]) -> String {
    let mut sorted: Vec<&IndexLine<'_>> = lines.iter().collect();
    sorted.sort_by(|a, b| a.rel_path.cmp(b.rel_path));
    let mut out = vec!["# Index".to_owned(), String::new()];
    for l in sorted {
        let mut line = format!("* [{}]({})", l.key, l.rel_path);
        if !l.description.is_empty() {
            line.push_str(" - ");
            line.push_str(l.description);
        }
        out.push(line);
    }
    format!("{}\n", pytext::rstrip(&out.join("\n")))
}

/// Render `manifest.md`: provenance only, nothing that varies between runs (format `okf`, the scope, and the
/// scope id when there is one).
pub fn render_manifest(scope: Scope, scope_id: Option<&str>) -> String {
    let mut lines = vec![
        "# CAO Memory Export".to_owned(),
        String::new(),
        "Generated by CAO \u{2014} edits here are not synced back.".to_owned(),
        String::new(),
        "- format: okf".to_owned(),
        format!("- scope: {scope}"),
    ];
    if let Some(id) = scope_id.filter(|id| !id.is_empty()) {
        lines.push(format!("- scope_id: {id}"));
    }
    format!("{}\n", pytext::rstrip(&lines.join("\n")))
}

/// A topic that passed the gate.
struct Gated<'a> {
    topic: &'a ExportTopic,
    nested_id: Option<&'a str>,
    rel_path: String,
    latest: String,
    history: String,
    description: String,
}

/// Render a whole bundle (rules in the module docs). The order of `topics` does not matter.
///
/// Errors: [`OkfError::UnsafeScopeId`] when a session/agent topic's scope id is not a safe path segment;
/// [`OkfError::DuplicateTopic`] when two topics map to one path.
pub fn render_bundle(opts: &ExportOptions, topics: &[ExportTopic]) -> Result<RenderedBundle, OkfError> {
    let mut report = ExportReport::default();
    let mut gated: Vec<Gated<'_>> = Vec::with_capacity(topics.len());
    let mut seen = BTreeSet::new();
    for topic in topics {
        let nested_id = if is_nested_scope(opts.scope) {
            topic.scope_id.as_deref()
        } else {
            None
        };
        if let Some(id) = nested_id
            && sanitize_scope_id(id) != id
        {
            return Err(OkfError::UnsafeScopeId(id.to_owned()));
        }
        let rel_path = topic_rel_path(&topic.key, nested_id);
        if !seen.insert(rel_path.clone()) {
            return Err(OkfError::DuplicateTopic(rel_path));
        }
        let latest = pytext::strip(&topic.content);
        let history = if opts.include_history {
            history_text(&topic.history)
        } else {
            String::new()
        };
        match secret_gate(latest, &history, opts.redact) {
            GateDecision::Skip(names) => {
                report.skipped_secret += 1;
                report
                    .skip_reasons
                    .insert(topic.key.to_string(), names.into_iter().map(str::to_owned).collect());
            }
            GateDecision::Export {
                latest,
                history,
                redacted,
            } => {
                report.redacted += usize::from(redacted);
                let description = derive_description(&latest);
                gated.push(Gated {
                    topic,
                    nested_id,
                    rel_path,
                    latest,
                    history,
                    description,
                });
            }
        }
    }

    let targets: BTreeMap<(Option<String>, String), String> = gated
        .iter()
        .map(|g| {
            (
                (g.nested_id.map(str::to_owned), g.topic.key.to_string()),
                g.rel_path.clone(),
            )
        })
        .collect();
    let mut files = BTreeMap::new();
    let mut topic_paths = Vec::with_capacity(gated.len());
    for g in &gated {
        let body = normalize_see_also(&g.latest, g.nested_id, &targets, &mut report.links_dropped);
        let tags: Vec<&str> = g.topic.tags.split(',').filter(|t| !t.is_empty()).collect();
        let text = render_topic_file(&TopicFile {
            key: &g.topic.key,
            memory_type: g.topic.memory_type,
            description: &g.description,
            tags: &tags,
            updated_at: g.topic.updated_at,
            created_at: g.topic.created_at,
            body: &body,
        });
        files.insert(g.rel_path.clone(), text);
        topic_paths.push(g.rel_path.clone());
        if !g.history.is_empty() {
            files.insert(history_rel_path(&g.rel_path), g.history.clone());
        }
    }
    let index_lines: Vec<IndexLine<'_>> = gated
        .iter()
        .map(|g| IndexLine {
            rel_path: &g.rel_path,
            key: &g.topic.key,
            description: &g.description,
        })
        .collect();
    files.insert(INDEX_FILE.to_owned(), render_index(&index_lines));
    files.insert(
        MANIFEST_FILE.to_owned(),
        render_manifest(opts.scope, opts.scope_id.as_deref()),
    );
    topic_paths.sort();
    Ok(RenderedBundle {
        files,
        topic_paths,
        report,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_follow_the_reference() {
        assert_eq!(
            derive_description("Prefer concise answers. Lead with the verdict."),
            "Prefer concise answers."
        );
        assert_eq!(
            derive_description("# A heading line\n- [link](x.md)\nReal first sentence? Then more."),
            "Real first sentence?"
        );
        assert_eq!(
            derive_description("just words without a stop"),
            "just words without a stop"
        );
        assert_eq!(derive_description("Ends here!"), "Ends here!");
        assert_eq!(derive_description("v1.2 is out. Yes"), "v1.2 is out.");
        assert_eq!(derive_description(". x. y"), ". x.");
        assert_eq!(derive_description("\n  \n# only\n- [a](b)"), "");
        assert_eq!(derive_description("é".repeat(300).as_str()).chars().count(), 200);
        assert_eq!(derive_description("a.\u{1C}b"), "a.");
    }

    #[test]
    fn history_matches_the_topic_file_sections() {
        let t = |s: &str| cao_core::time::parse_ts(s).expect("ts");
        let entries = [
            ExportEntry {
                timestamp: t("2026-01-01T00:00:00Z"),
                content: "one\n\n".into(),
            },
            ExportEntry {
                timestamp: t("2026-01-02T00:00:00Z"),
                content: "  two  ".into(),
            },
        ];
        assert_eq!(
            history_text(&entries),
            "## 2026-01-01T00:00:00Z\none\n\n## 2026-01-02T00:00:00Z\n  two  \n"
        );
        assert_eq!(history_text(&[]), "");
    }

    #[test]
    fn see_also_links_point_into_the_bundle_or_become_text() {
        let targets = BTreeMap::from([((Some("s".to_owned()), "b".to_owned()), "s/b.md".to_owned())]);
        let mut dropped = 0;
        let body = "x\n## See Also\n- [b](../s/b.md)\n- [gone](../s/gone.md)\ntext\n## Next\n- [b](b.md)";
        assert_eq!(
            normalize_see_also(body, Some("s"), &targets, &mut dropped),
            "x\n## See Also\n- [b](s/b.md)\n- gone\ntext\n## Next\n- [b](b.md)"
        );
        assert_eq!(dropped, 1);
    }

    #[test]
    fn private_scopes_need_the_flag() {
        assert_eq!(
            check_export_scope(Scope::Session, false),
            Err(OkfError::PrivateScope(Scope::Session))
        );
        assert!(check_export_scope(Scope::Agent, true).is_ok());
        assert!(check_export_scope(Scope::Federated, false).is_ok());
    }
}
