//! Links between notes (spec/vault-facts.md section 4; conformance `vault_extract_links.json`,
//! `vault_resolve_link.json`): extraction from a note's body, resolution of one target against the notes of the
//! same scope, and the typed edges of origin `vault` one note projects (body wikilinks and Markdown links as
//! `relates_to`, `cao.links` with their type, status, origin and confidence).
//!
//! Everything here is pure: the caller supplies the candidate notes ([`Candidates`]) and stores the edges.

use crate::finding::{Finding, FindingCode};
use crate::note::{CaoLink, MAX_LINK_TARGET_CHARS};
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

/// At most this many links are read from one body; more gives `link_limit_exceeded`.
pub const MAX_BODY_LINKS: usize = 1000;

/// At most this many edges per source note and edge type; more gives `edge_limit_exceeded`.
pub const MAX_EDGES_PER_TYPE: usize = 64;

macro_rules! wire_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $wire:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $wire)] $variant,)*
        }

        impl $name {
            /// The wire string.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire,)*
                }
            }

            /// The value named by an exact wire string.
            pub fn parse(s: &str) -> Option<Self> {
                match s {
                    $($wire => Some($name::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

wire_enum!(
    /// A relationship type a note may author (`cao.links[].type`).
    EdgeType {
        /// `relates_to` (the default, and the type of every body link).
        RelatesTo = "relates_to",
        /// `contradiction`.
        Contradiction = "contradiction",
        /// `supersedes`.
        Supersedes = "supersedes",
    }
);

wire_enum!(
    /// A relationship status (`cao.links[].status`; default `active`).
    EdgeStatus {
        /// `active`.
        Active = "active",
        /// `proposal`.
        Proposal = "proposal",
        /// `rejected`.
        Rejected = "rejected",
        /// `superseded`.
        Superseded = "superseded",
        /// `deleted`.
        Deleted = "deleted",
    }
);

wire_enum!(
    /// A relationship origin (`cao.links[].origin`, kept as the edge's `authored_origin`; default `human`).
    EdgeOrigin {
        /// `compiler`.
        Compiler = "compiler",
        /// `wiki_lint`.
        WikiLint = "wiki_lint",
        /// `human`.
        Human = "human",
        /// `legacy_related_keys`.
        LegacyRelatedKeys = "legacy_related_keys",
        /// `external_import`.
        ExternalImport = "external_import",
        /// `vault`.
        Vault = "vault",
    }
);

/// One link found in a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawLink {
    /// `![[...]]` (an embed).
    pub embed: bool,
    /// The target as written: the inside of `[[...]]` (display text and fragment included) or a Markdown link's
    /// destination.
    pub target: String,
    /// A Markdown link (resolved relative to the source note's folder).
    pub relative_path: bool,
}

static FENCED: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"(?s)```.*?```").ok());
static INLINE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"`[^`\n]*`").ok());
static WIKI: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"(!?)\[\[([^\]\n]+)\]\]").ok());
static MD: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"\[[^\]\n]{0,256}\]\(([^\s()\\]{1,256})\)").ok());

/// The links of a body in position order (spec/vault-facts.md section 4 "Extraction"): fenced code (```` ``` ````
/// to ```` ``` ````, across lines) and then single-backtick inline spans are removed; wikilinks `[[target]]` /
/// `![[target]]` (no `]` or newline inside); Markdown links `[text](dest)` not preceded by `!` or `\` whose
/// destination is a relative `.md` path. At most [`MAX_BODY_LINKS`]; more adds a `link_limit_exceeded` warning.
pub fn extract_links(body: &str) -> (Vec<RawLink>, Vec<Finding>) {
    let (Some(fenced), Some(inline), Some(wiki), Some(md)) =
        (FENCED.as_ref(), INLINE.as_ref(), WIKI.as_ref(), MD.as_ref())
    else {
        return (Vec::new(), Vec::new());
    };
    let stripped = fenced.replace_all(body, "");
    let stripped = inline.replace_all(&stripped, "");
    let text: &str = &stripped;
    let mut found: Vec<(usize, RawLink)> = Vec::new();
    for c in wiki.captures_iter(text) {
        let (Some(all), Some(bang), Some(target)) = (c.get(0), c.get(1), c.get(2)) else {
            continue;
        };
        found.push((
            all.start(),
            RawLink {
                embed: !bang.as_str().is_empty(),
                target: target.as_str().to_owned(),
                relative_path: false,
            },
        ));
    }
    for c in md.captures_iter(text) {
        let (Some(all), Some(dest)) = (c.get(0), c.get(1)) else {
            continue;
        };
        if matches!(text[..all.start()].chars().next_back(), Some('!' | '\\')) {
            continue;
        }
        if markdown_destination_supported(dest.as_str()) {
            found.push((
                all.start(),
                RawLink {
                    embed: false,
                    target: dest.as_str().to_owned(),
                    relative_path: true,
                },
            ));
        }
    }
    found.sort_by_key(|(pos, _)| *pos);
    let mut findings = Vec::new();
    if found.len() > MAX_BODY_LINKS {
        found.truncate(MAX_BODY_LINKS);
        findings.push(Finding::bare(FindingCode::LinkLimitExceeded));
    }
    (found.into_iter().map(|(_, l)| l).collect(), findings)
}

/// A Markdown destination counts when the part before `#` ends in `.md` (any case), has no `?`, does not start with
/// `/`, has no `:` in its first segment and no empty segment.
fn markdown_destination_supported(dest: &str) -> bool {
    let path = dest.split('#').next().unwrap_or("");
    path.to_lowercase().ends_with(".md")
        && !path.contains('?')
        && !path.starts_with('/')
        && !path.split('/').next().unwrap_or("").contains(':')
        && !path.split('/').any(str::is_empty)
}

/// A note a link may point at: a scanned note of the same scope and scope id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Its key (authored, derived or collision).
    pub key: String,
    /// Its vault-relative path.
    pub relpath: String,
    /// Its frontmatter `aliases`.
    pub aliases: Vec<String>,
    /// Not indexed (quarantined, skipped, unsupported, excluded): a link to it is `link_excluded`.
    pub excluded: bool,
}

/// The candidates of one scope, indexed by every name a link can use.
#[derive(Debug, Clone, Default)]
pub struct Candidates {
    notes: Vec<Candidate>,
    by_path: HashMap<String, Vec<usize>>,
    by_name: HashMap<String, Vec<usize>>,
    by_alias: HashMap<String, Vec<usize>>,
    by_key: HashMap<String, Vec<usize>>,
}

impl Candidates {
    /// Index `notes`.
    pub fn new(notes: Vec<Candidate>) -> Candidates {
        let mut c = Candidates {
            notes,
            ..Candidates::default()
        };
        for (i, n) in c.notes.iter().enumerate() {
            c.by_path.entry(n.relpath.clone()).or_default().push(i);
            if let Some(stem) = n.relpath.strip_suffix(".md") {
                c.by_path.entry(stem.to_owned()).or_default().push(i);
            }
            let base = n.relpath.rsplit('/').next().unwrap_or(&n.relpath);
            let base = base.strip_suffix(".md").unwrap_or(base);
            c.by_name.entry(base.to_owned()).or_default().push(i);
            for a in &n.aliases {
                c.by_alias.entry(a.clone()).or_default().push(i);
            }
            c.by_key.entry(n.key.clone()).or_default().push(i);
        }
        c
    }

    /// The candidates, in the order given.
    pub fn notes(&self) -> &[Candidate] {
        &self.notes
    }

    /// Candidates a wikilink name matches: vault-relative path with or without `.md`, basename without `.md`, or
    /// an alias (exact, case-sensitive). Returns the matches and whether an alias was involved.
    fn wikilink_matches(&self, name: &str) -> (Vec<usize>, bool) {
        let mut out: Vec<usize> = Vec::new();
        let mut add = |v: Option<&Vec<usize>>| {
            for i in v.into_iter().flatten() {
                if !out.contains(i) {
                    out.push(*i);
                }
            }
        };
        add(self.by_path.get(name));
        add(self.by_name.get(name));
        add(self.by_alias.get(name));
        (out, self.by_alias.contains_key(name))
    }
}

/// How one link target resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    /// One indexed note: its key and the link's attributes (`fragment`, `embed`).
    Resolved {
        /// The target's key.
        key: String,
        /// `fragment` (a heading, possibly empty) and/or `embed`, `None` when neither.
        attributes: Option<LinkAttributes>,
    },
    /// No note matches.
    Dangling,
    /// Only notes that are not indexed match.
    Excluded,
    /// Several notes match (or indexed and non-indexed ones).
    Ambiguous,
    /// The link is not resolved at all (block reference, attachment, invalid target).
    Unsupported,
}

impl Resolution {
    /// The wire name (`resolved`, `dangling`, `excluded`, `ambiguous`, `unsupported`).
    pub fn outcome(&self) -> &'static str {
        match self {
            Resolution::Resolved { .. } => "resolved",
            Resolution::Dangling => "dangling",
            Resolution::Excluded => "excluded",
            Resolution::Ambiguous => "ambiguous",
            Resolution::Unsupported => "unsupported",
        }
    }
}

/// The attributes a resolved body link carries onto its edge.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LinkAttributes {
    /// The heading after `#` (kept, not resolved).
    pub fragment: Option<String>,
    /// An embed (`![[...]]`; the body is not inlined).
    pub embed: bool,
}

impl LinkAttributes {
    /// The JSON object stored on the edge (`{"fragment": ..., "embed": true}`, members only when set).
    pub fn to_json(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        if let Some(f) = &self.fragment {
            m.insert("fragment".into(), f.clone().into());
        }
        if self.embed {
            m.insert("embed".into(), true.into());
        }
        m
    }
}

/// Resolve one link target against `candidates` (spec/vault-facts.md section 4 "Resolution"). `source_relpath` is
/// the linking note's vault-relative path (needed for Markdown links). Returns the resolution and its findings.
pub fn resolve_link(
    raw_target: &str,
    embed: bool,
    relative_path: bool,
    source_relpath: Option<&str>,
    candidates: &Candidates,
) -> (Resolution, Vec<Finding>) {
    let invalid = || {
        (
            Resolution::Unsupported,
            vec![Finding::bare(FindingCode::LinkTargetInvalid)],
        )
    };
    if raw_target.chars().count() > MAX_LINK_TARGET_CHARS || raw_target.chars().any(|c| c < ' ' || c == '\u{7f}') {
        return invalid();
    }
    let target = if relative_path {
        raw_target
    } else {
        raw_target.split('|').next().unwrap_or("")
    };
    let (name, fragment) = match target.split_once('#') {
        Some((n, f)) => (n, Some(f)),
        None => (target, None),
    };
    if fragment.is_some_and(|f| f.starts_with('^')) {
        return (
            Resolution::Unsupported,
            vec![Finding::bare(FindingCode::BlockReferenceUnsupported)],
        );
    }
    let (matches, alias) = if relative_path {
        let Some(source) = source_relpath.filter(|s| s.ends_with(".md")) else {
            return invalid();
        };
        let mut parts: Vec<&str> = source.split('/').collect();
        parts.pop();
        for seg in name.split('/') {
            match seg {
                "." => {}
                ".." => {
                    if parts.pop().is_none() {
                        return invalid();
                    }
                }
                s => parts.push(s),
            }
        }
        let joined = parts.join("/");
        let found: Vec<usize> = candidates
            .by_path
            .get(&joined)
            .into_iter()
            .flatten()
            .copied()
            .filter(|i| candidates.notes[*i].relpath == joined)
            .collect();
        (found, false)
    } else {
        candidates.wikilink_matches(name)
    };
    let resolution = outcome_of(&matches, alias, candidates, name, embed);
    finish(resolution, fragment, embed, candidates)
}

fn outcome_of(
    matches: &[usize],
    alias: bool,
    candidates: &Candidates,
    name: &str,
    embed: bool,
) -> Result<usize, Finding> {
    match matches {
        [] => {
            let base = name.rsplit('/').next().unwrap_or(name);
            let attachment = embed
                && base
                    .rsplit_once('.')
                    .is_some_and(|(_, ext)| !ext.eq_ignore_ascii_case("md"));
            Err(Finding::bare(if attachment {
                FindingCode::AttachmentIgnored
            } else {
                FindingCode::LinkDangling
            }))
        }
        [one] if !candidates.notes[*one].excluded => Ok(*one),
        many if many.iter().all(|i| candidates.notes[*i].excluded) => Err(Finding::bare(FindingCode::LinkExcluded)),
        _ => Err(Finding::bare(if alias {
            FindingCode::AliasAmbiguous
        } else {
            FindingCode::LinkAmbiguous
        })),
    }
}

fn finish(
    outcome: Result<usize, Finding>,
    fragment: Option<&str>,
    embed: bool,
    candidates: &Candidates,
) -> (Resolution, Vec<Finding>) {
    match outcome {
        Ok(i) => {
            let mut findings = Vec::new();
            let mut attrs = LinkAttributes::default();
            if let Some(f) = fragment {
                attrs.fragment = Some(f.to_owned());
                findings.push(Finding::bare(FindingCode::HeadingFragmentIgnored));
            }
            if embed {
                attrs.embed = true;
                findings.push(Finding::bare(FindingCode::EmbedNotInlined));
            }
            let attributes = (attrs != LinkAttributes::default()).then_some(attrs);
            (
                Resolution::Resolved {
                    key: candidates.notes[i].key.clone(),
                    attributes,
                },
                findings,
            )
        }
        Err(f) => {
            let r = match f.code {
                FindingCode::LinkDangling => Resolution::Dangling,
                FindingCode::LinkExcluded => Resolution::Excluded,
                FindingCode::AliasAmbiguous | FindingCode::LinkAmbiguous => Resolution::Ambiguous,
                _ => Resolution::Unsupported,
            };
            (r, vec![f])
        }
    }
}

/// Resolve a `cao.links[].to` (trimmed): the `[[...]]` form like a wikilink, otherwise an exact candidate key.
pub fn resolve_cao_link(to: &str, candidates: &Candidates) -> (Resolution, Vec<Finding>) {
    let to = to.trim();
    if let Some(inner) = to.strip_prefix("[[").and_then(|t| t.strip_suffix("]]")) {
        return resolve_link(inner, false, false, None, candidates);
    }
    let matches: Vec<usize> = candidates.by_key.get(to).cloned().unwrap_or_default();
    let outcome = outcome_of(&matches, false, candidates, to, false);
    finish(outcome, None, false, candidates)
}

/// An edge of origin `vault` a note projects.
#[derive(Debug, Clone, PartialEq)]
pub struct NoteEdge {
    /// The target note's key (same scope as the source).
    pub target_key: String,
    /// The relationship type.
    pub edge_type: EdgeType,
    /// The status (as authored; `active` for body links).
    pub status: EdgeStatus,
    /// The confidence (as authored; `None` for body links).
    pub confidence: Option<f64>,
    /// The edge's attributes: `attested_by` and `authored_origin` for `cao.links` edges (with the body link's
    /// `fragment` / `embed` merged in), `fragment` / `embed` for body-only edges, `None` when empty.
    pub attributes: Option<serde_json::Map<String, serde_json::Value>>,
}

/// What a `cao.links` entry authors about its edge: status, confidence, origin (defaults applied).
type Authored = (EdgeStatus, Option<f64>, EdgeOrigin);

/// The edges one indexed note projects and the findings of its links (spec/vault-facts.md section 4 "Body edges",
/// "`cao.links`", "Edge attributes", "Per source and type at most 64 edges"). Self links are dropped.
pub fn note_edges(
    source_key: &str,
    source_relpath: &str,
    body_links: &[RawLink],
    cao_links: &[CaoLink],
    candidates: &Candidates,
) -> (Vec<NoteEdge>, Vec<Finding>) {
    let mut findings = Vec::new();
    // Body: each resolved target once, with its first occurrence's attributes.
    let mut body: Vec<(String, Option<LinkAttributes>)> = Vec::new();
    for link in body_links {
        let (r, f) = resolve_link(
            &link.target,
            link.embed,
            link.relative_path,
            Some(source_relpath),
            candidates,
        );
        findings.extend(f);
        if let Resolution::Resolved { key, attributes } = r
            && !body.iter().any(|(k, _)| *k == key)
        {
            body.push((key, attributes));
        }
    }
    // Frontmatter: resolved entries grouped by (type, target); differing duplicates conflict.
    let mut authored: BTreeMap<(EdgeType, String), Vec<Authored>> = BTreeMap::new();
    for link in cao_links {
        let (r, f) = resolve_cao_link(&link.to, candidates);
        findings.extend(f);
        if let Resolution::Resolved { key, .. } = r {
            let entry = (
                link.status.unwrap_or(EdgeStatus::Active),
                link.confidence,
                link.origin.unwrap_or(EdgeOrigin::Human),
            );
            authored
                .entry((link.edge_type.unwrap_or(EdgeType::RelatesTo), key))
                .or_default()
                .push(entry);
        }
    }
    let mut conflicted: Vec<(EdgeType, String)> = Vec::new();
    let mut front: Vec<(EdgeType, String, Authored)> = Vec::new();
    for ((t, key), entries) in authored {
        let first = entries[0];
        if entries.iter().any(|e| *e != first) {
            findings.push(Finding::new(
                FindingCode::CaoLinkConflict,
                format!("type={};target={key}", t.as_str()),
            ));
            conflicted.push((t, key));
        } else {
            front.push((t, key, first));
        }
    }
    let mut per_type: BTreeMap<EdgeType, (Vec<NoteEdge>, Vec<NoteEdge>)> = BTreeMap::new();
    let mut used_body: Vec<String> = Vec::new();
    for (t, key, (status, confidence, origin)) in front {
        if key == source_key {
            continue;
        }
        let body_attrs = (t == EdgeType::RelatesTo)
            .then(|| body.iter().find(|(k, _)| *k == key))
            .flatten();
        let mut attrs = serde_json::Map::new();
        let attested: Vec<serde_json::Value> = if body_attrs.is_some() {
            vec!["body".into(), "frontmatter".into()]
        } else {
            vec!["frontmatter".into()]
        };
        attrs.insert("attested_by".into(), attested.into());
        attrs.insert("authored_origin".into(), origin.as_str().into());
        if let Some((k, a)) = body_attrs {
            used_body.push(k.clone());
            if let Some(a) = a {
                attrs.extend(a.to_json());
            }
        }
        per_type.entry(t).or_default().0.push(NoteEdge {
            target_key: key,
            edge_type: t,
            status,
            confidence,
            attributes: Some(attrs),
        });
    }
    for (key, attrs) in body {
        if key == source_key || used_body.contains(&key) || conflicted.contains(&(EdgeType::RelatesTo, key.clone())) {
            continue;
        }
        per_type.entry(EdgeType::RelatesTo).or_default().1.push(NoteEdge {
            target_key: key,
            edge_type: EdgeType::RelatesTo,
            status: EdgeStatus::Active,
            confidence: None,
            attributes: attrs.map(|a| a.to_json()).filter(|m| !m.is_empty()),
        });
    }
    let mut edges = Vec::new();
    for (t, (mut front, mut body_only)) in per_type {
        front.sort_by(|a, b| a.target_key.cmp(&b.target_key));
        body_only.sort_by(|a, b| a.target_key.cmp(&b.target_key));
        let total = front.len() + body_only.len();
        let mut all: Vec<NoteEdge> = front.into_iter().chain(body_only).collect();
        if total > MAX_EDGES_PER_TYPE {
            all.truncate(MAX_EDGES_PER_TYPE);
            findings.push(Finding::new(
                FindingCode::EdgeLimitExceeded,
                format!("type={};total={total};kept={MAX_EDGES_PER_TYPE}", t.as_str()),
            ));
        }
        edges.extend(all);
    }
    (edges, findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_destinations() {
        for ok in ["a.md", "../up.md", "Other.MD", "my%20note.md", "a.md#x"] {
            assert!(markdown_destination_supported(ok), "{ok}");
        }
        for bad in [
            "mailto:a.md",
            "a.md?x=1",
            "image.png",
            "#section.md",
            "/abs.md",
            "a//b.md",
        ] {
            assert!(!markdown_destination_supported(bad), "{bad}");
        }
    }
}
