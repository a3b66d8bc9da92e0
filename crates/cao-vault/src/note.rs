//! What a vault note is, from its text (spec/vault-facts.md section 2 "Frontmatter", "The `cao` block";
//! conformance `vault_parse_note.json`).
//!
//! - [`normalize_text`]: the note's bytes as the scanner reads them: strict UTF-8, one leading BOM removed, CRLF
//!   and lone CR turned into LF; a NUL character is refused.
//! - [`split_frontmatter`]: the fenced frontmatter region (opening `---\n` or `---\r\n` at the very start after an
//!   optional BOM, closing line exactly `---` in the same newline style or at the end of the text), bounded by the
//!   vault's `max_frontmatter_bytes` before any YAML is parsed.
//! - [`parse_note`]: the region, the YAML mapping (bounded loader, [`crate::yaml`]) and the validated `cao` block,
//!   or the one finding that quarantines the note.
//! - [`NoteFields`]: what reconcile and links read from an accepted frontmatter: tags, aliases, created, the
//!   Excalidraw marker, the authored key, type, managed flag and `cao.links`.

use crate::finding::{Finding, FindingCode};
use crate::identity::KEY_INVALID_MESSAGE;
use crate::links::{EdgeOrigin, EdgeStatus, EdgeType};
use crate::yaml::{self, Yaml, YamlError};
use cao_core::MemoryType;
use cao_core::key::is_valid_key;
use chrono::NaiveDateTime;

/// At most this many `cao.links` entries.
pub const MAX_CAO_LINKS: usize = 64;

/// At most this many characters in a `cao.links[].to` and in a link target.
pub const MAX_LINK_TARGET_CHARS: usize = 256;

/// Why a note's bytes are not a note's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    /// Not valid UTF-8: `note_not_utf8`.
    #[error("note bytes are not valid UTF-8")]
    NotUtf8,
    /// A NUL character: `note_contains_nul`.
    #[error("note contains NUL byte")]
    ContainsNul,
}

impl TextError {
    /// The finding this refusal is reported as.
    pub fn finding(self) -> Finding {
        match self {
            TextError::NotUtf8 => Finding::new(FindingCode::NoteNotUtf8, self.to_string()),
            TextError::ContainsNul => Finding::new(FindingCode::NoteContainsNul, self.to_string()),
        }
    }
}

/// The normalised text of a note: strict UTF-8, one leading U+FEFF removed, `\r\n` and lone `\r` turned into `\n`.
///
/// Errors: [`TextError::NotUtf8`], then [`TextError::ContainsNul`].
pub fn normalize_text(bytes: &[u8]) -> Result<String, TextError> {
    let text = std::str::from_utf8(bytes).map_err(|_| TextError::NotUtf8)?;
    if text.contains('\0') {
        return Err(TextError::ContainsNul);
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    Ok(if text.contains('\r') {
        text.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        text.to_owned()
    })
}

/// The fenced frontmatter region of a text, as byte offsets into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// Start of the opening fence (after a leading BOM, if any).
    pub start: usize,
    /// End of the closing fence line (after its newline, when it has one).
    pub end: usize,
    /// The raw YAML: from after the opening fence to before the newline that precedes the closing fence.
    pub raw: (usize, usize),
    /// The newline style of the fences (`"\n"` or `"\r\n"`).
    pub crlf: bool,
}

impl Region {
    /// The raw YAML text of this region in `text`.
    pub fn raw<'a>(&self, text: &'a str) -> &'a str {
        &text[self.raw.0..self.raw.1]
    }

    /// The body: everything after the closing fence line.
    pub fn body<'a>(&self, text: &'a str) -> &'a str {
        &text[self.end..]
    }
}

/// How a text's frontmatter splits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// No frontmatter: the body starts at this byte offset (after a leading BOM).
    None(usize),
    /// A fenced region.
    Fenced(Region),
}

/// Split `text` into frontmatter and body (module docs).
///
/// Errors: `frontmatter_malformed` "unterminated frontmatter" (an opening fence without a closing one), then
/// `frontmatter_too_large` "frontmatter byte cap" (the raw YAML is over `max_frontmatter_bytes` UTF-8 bytes).
pub fn split_frontmatter(text: &str, max_frontmatter_bytes: usize) -> Result<Split, Finding> {
    let p = if text.starts_with('\u{feff}') {
        '\u{feff}'.len_utf8()
    } else {
        0
    };
    let rest = &text[p..];
    let nl = if rest.starts_with("---\n") {
        "\n"
    } else if rest.starts_with("---\r\n") {
        "\r\n"
    } else {
        return Ok(Split::None(p));
    };
    let q = p + 3 + nl.len();
    // Candidate closing fences start at q and after every newline (in the fences' style) from q on.
    let mut line = q;
    loop {
        let tail = &text[line..];
        if let Some(after) = tail.strip_prefix("---")
            && (after.is_empty() || after.starts_with(nl))
        {
            let raw_end = if line > q { line - nl.len() } else { q };
            let raw = (q, raw_end.max(q));
            if raw.1 - raw.0 > max_frontmatter_bytes {
                return Err(Finding::new(FindingCode::FrontmatterTooLarge, "frontmatter byte cap"));
            }
            let end = line + 3 + if after.is_empty() { 0 } else { nl.len() };
            return Ok(Split::Fenced(Region {
                start: p,
                end,
                raw,
                crlf: nl == "\r\n",
            }));
        }
        match tail.find(nl) {
            Some(i) => line += i + nl.len(),
            None => {
                return Err(Finding::new(
                    FindingCode::FrontmatterMalformed,
                    "unterminated frontmatter",
                ));
            }
        }
    }
}

/// One validated `cao.links` entry (defaults not yet applied: `None` = not written).
#[derive(Debug, Clone, PartialEq)]
pub struct CaoLink {
    /// `to` as written (trimmed when resolved).
    pub to: String,
    /// `type`.
    pub edge_type: Option<EdgeType>,
    /// `status`.
    pub status: Option<EdgeStatus>,
    /// `origin`.
    pub origin: Option<EdgeOrigin>,
    /// `confidence`, in `[0, 1]`.
    pub confidence: Option<f64>,
}

/// The validated `cao` block (`None` fields were not written or were null).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CaoBlock {
    /// `cao.key`, valid.
    pub key: Option<String>,
    /// `cao.type`.
    pub memory_type: Option<MemoryType>,
    /// `cao.managed`.
    pub managed: Option<bool>,
    /// `cao.links` (absent and null are both empty).
    pub links: Vec<CaoLink>,
}

/// An accepted note's frontmatter.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Frontmatter {
    /// The loaded mapping (`None` for no frontmatter or an empty / comment-only one).
    pub data: Option<Yaml>,
    /// The validated `cao` block.
    pub cao: CaoBlock,
}

/// The result of [`parse_note`].
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedNote {
    /// How the text split; `None` when the split itself failed (unterminated, over the cap).
    pub split: Option<Split>,
    /// The frontmatter, or the one finding that quarantines the note (its frontmatter and `cao` then count as
    /// empty).
    pub outcome: Result<Frontmatter, Finding>,
}

impl ParsedNote {
    /// The region, when the text has a fenced frontmatter.
    pub fn region(&self) -> Option<Region> {
        match self.split {
            Some(Split::Fenced(r)) => Some(r),
            _ => None,
        }
    }

    /// The body of `text` (everything after the frontmatter, or after a BOM; the whole text when the split
    /// failed).
    pub fn body<'a>(&self, text: &'a str) -> &'a str {
        match self.split {
            Some(Split::Fenced(r)) => r.body(text),
            Some(Split::None(p)) => &text[p..],
            None => text,
        }
    }
}

fn invalid(detail: &str) -> Finding {
    Finding::new(FindingCode::InvalidCaoBlock, detail)
}

/// Parse a note's text: split, load the YAML (anchors refused first), require a mapping, validate the `cao` block
/// (spec/vault-facts.md section 2). The scanner passes normalised text; CRLF fences are also understood.
pub fn parse_note(text: &str, max_frontmatter_bytes: usize) -> ParsedNote {
    let split = match split_frontmatter(text, max_frontmatter_bytes) {
        Ok(s) => s,
        Err(f) => {
            return ParsedNote {
                split: None,
                outcome: Err(f),
            };
        }
    };
    let outcome = match split {
        Split::None(_) => Ok(Frontmatter::default()),
        Split::Fenced(region) => parse_frontmatter(region.raw(text)),
    };
    ParsedNote {
        split: Some(split),
        outcome,
    }
}

fn parse_frontmatter(raw: &str) -> Result<Frontmatter, Finding> {
    let data = match yaml::load(raw) {
        Ok(d) => d,
        Err(YamlError::Unsafe) => return Err(Finding::new(FindingCode::FrontmatterUnsafe, "YAML anchor or alias")),
        Err(YamlError::Malformed) => return Err(Finding::new(FindingCode::FrontmatterMalformed, "invalid YAML")),
    };
    let Some(data) = data.filter(|d| *d != Yaml::Null) else {
        return Ok(Frontmatter::default());
    };
    if !matches!(data, Yaml::Map(_)) {
        return Err(invalid("frontmatter must be an object"));
    }
    let cao = match data.get("cao") {
        None | Some(Yaml::Null) => CaoBlock::default(),
        Some(block) => validate_cao(block)?,
    };
    Ok(Frontmatter { data: Some(data), cao })
}

fn validate_cao(block: &Yaml) -> Result<CaoBlock, Finding> {
    let Yaml::Map(pairs) = block else {
        return Err(invalid("cao must be an object"));
    };
    if pairs
        .iter()
        .any(|(k, _)| !matches!(k.as_str(), Some("key" | "type" | "managed" | "links")))
    {
        return Err(invalid("cao contains unknown member"));
    }
    let mut out = CaoBlock::default();
    match block.get("key") {
        None | Some(Yaml::Null) => {}
        Some(Yaml::Str(k)) if is_valid_key(k) => out.key = Some(k.clone()),
        Some(_) => return Err(Finding::new(FindingCode::KeyInvalid, KEY_INVALID_MESSAGE)),
    }
    match block.get("type") {
        None | Some(Yaml::Null) => {}
        Some(Yaml::Str(t)) => match t.as_str() {
            "user" => out.memory_type = Some(MemoryType::User),
            "feedback" => out.memory_type = Some(MemoryType::Feedback),
            "project" => out.memory_type = Some(MemoryType::Project),
            "reference" => out.memory_type = Some(MemoryType::Reference),
            _ => return Err(invalid("cao.type is invalid")),
        },
        Some(_) => return Err(invalid("cao.type is invalid")),
    }
    match block.get("managed") {
        None | Some(Yaml::Null) => {}
        Some(Yaml::Bool(b)) => out.managed = Some(*b),
        Some(_) => return Err(invalid("cao.managed must be a boolean")),
    }
    match block.get("links") {
        None | Some(Yaml::Null) => {}
        Some(Yaml::Seq(items)) if items.len() <= MAX_CAO_LINKS => {
            if items.iter().any(|i| !matches!(i, Yaml::Map(_))) {
                return Err(invalid("cao.links must contain only objects"));
            }
            for item in items {
                out.links.push(validate_link(item)?);
            }
        }
        Some(_) => return Err(invalid("cao.links must be a list of at most 64 objects")),
    }
    Ok(out)
}

fn validate_link(item: &Yaml) -> Result<CaoLink, Finding> {
    let Yaml::Map(pairs) = item else {
        return Err(invalid("cao.links must contain only objects"));
    };
    if pairs
        .iter()
        .any(|(k, _)| !matches!(k.as_str(), Some("to" | "type" | "status" | "origin" | "confidence")))
    {
        return Err(invalid("cao.links[] contains unknown member"));
    }
    let to = match item.get("to") {
        Some(Yaml::Str(s)) if !s.trim().is_empty() => s.clone(),
        _ => return Err(invalid("cao.links[].to must be a non-empty string")),
    };
    if to.chars().count() > MAX_LINK_TARGET_CHARS || to.chars().any(|c| c < ' ' || c == '\u{7f}') {
        return Err(invalid(
            "cao.links[].to contains unsupported characters or exceeds 256 characters",
        ));
    }
    let word = |name: &str| -> Result<Option<&str>, Finding> {
        match item.get(name) {
            None | Some(Yaml::Null) => Ok(None),
            Some(Yaml::Str(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(invalid(&format!("cao.links[].{name} is invalid"))),
        }
    };
    let edge_type = match word("type")? {
        None => None,
        Some(s) => Some(EdgeType::parse(s).ok_or_else(|| invalid("cao.links[].type is invalid"))?),
    };
    let status = match word("status")? {
        None => None,
        Some(s) => Some(EdgeStatus::parse(s).ok_or_else(|| invalid("cao.links[].status is invalid"))?),
    };
    let origin = match word("origin")? {
        None => None,
        Some(s) => Some(EdgeOrigin::parse(s).ok_or_else(|| invalid("cao.links[].origin is invalid"))?),
    };
    #[allow(clippy::cast_precision_loss, reason = "a confidence is a small number")]
    let confidence = match item.get("confidence") {
        None | Some(Yaml::Null) => None,
        Some(Yaml::Int(i)) if (0..=1).contains(i) => Some(*i as f64),
        Some(Yaml::Float(f)) if (0.0..=1.0).contains(f) => Some(*f),
        Some(_) => return Err(invalid("cao.links[].confidence must be between 0 and 1")),
    };
    Ok(CaoLink {
        to,
        edge_type,
        status,
        origin,
        confidence,
    })
}

/// What reconcile and link resolution read from an accepted note (spec/vault-facts.md section 2 "Frontmatter").
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NoteFields {
    /// `tags`: a string verbatim; a list of strings sorted and joined with `,`; anything else empty.
    pub tags: String,
    /// `aliases`: a string, or the strings of a list (link resolution only).
    pub aliases: Vec<String>,
    /// `created` when YAML yields a timestamp: its wall-clock part (any UTC offset dropped).
    pub created: Option<NaiveDateTime>,
    /// A top-level `excalidraw-plugin` key.
    pub excalidraw: bool,
    /// The validated `cao` block.
    pub cao: CaoBlock,
}

impl NoteFields {
    /// The fields of an accepted frontmatter.
    pub fn of(fm: &Frontmatter) -> NoteFields {
        let data = fm.data.as_ref();
        let get = |k: &str| data.and_then(|d| d.get(k));
        let tags = match get("tags") {
            Some(Yaml::Str(s)) => s.clone(),
            Some(Yaml::Seq(items)) => {
                let strings: Option<Vec<&str>> = items.iter().map(Yaml::as_str).collect();
                match strings {
                    Some(mut s) => {
                        s.sort_unstable();
                        s.join(",")
                    }
                    None => String::new(),
                }
            }
            _ => String::new(),
        };
        let aliases = match get("aliases") {
            Some(Yaml::Str(s)) => vec![s.clone()],
            Some(Yaml::Seq(items)) => items.iter().filter_map(Yaml::as_str).map(str::to_owned).collect(),
            _ => Vec::new(),
        };
        let created = match get("created") {
            Some(Yaml::DateTime { naive, .. }) => Some(*naive),
            _ => None,
        };
        NoteFields {
            tags,
            aliases,
            created,
            excalidraw: get("excalidraw-plugin").is_some(),
            cao: fm.cao.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation() {
        assert_eq!(normalize_text(b"\xef\xbb\xbfa\r\nb\rc"), Ok("a\nb\nc".into()));
        assert_eq!(normalize_text(b"ca\x84"), Err(TextError::NotUtf8));
        assert_eq!(normalize_text(b"a\0b"), Err(TextError::ContainsNul));
    }

    #[test]
    fn fences() {
        let t = "---\ntitle: x\n---";
        let Ok(Split::Fenced(r)) = split_frontmatter(t, 100) else {
            panic!()
        };
        assert_eq!((r.raw(t), r.body(t), r.end), ("title: x", "", 16));
        let t = "---\n---\nBody\n";
        let Ok(Split::Fenced(r)) = split_frontmatter(t, 100) else {
            panic!()
        };
        assert_eq!((r.raw(t), r.body(t), r.end), ("", "Body\n", 8));
        assert!(split_frontmatter("---\ntitle: x\r\n---\r\nBody\n", 100).is_err());
        assert_eq!(split_frontmatter("---", 100), Ok(Split::None(0)));
        let t = "---\nk: 12345678\n---\nbody";
        assert_eq!(
            split_frontmatter(t, 10).map_err(|f| f.code),
            Err(FindingCode::FrontmatterTooLarge)
        );
        assert!(matches!(
            split_frontmatter("---\nk: 1234567\n---\nbody", 10),
            Ok(Split::Fenced(_))
        ));
    }
}
