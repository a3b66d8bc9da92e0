//! The body a recalled vault note shows (spec/vault-facts.md section 5 "Reading a row"; conformance
//! `vault_recall.json` case `body-truncation`).
//!
//! From the note's current text: the frontmatter is dropped; one leading `# ` heading line (after leading blank
//! lines) is removed, the lines after it re-joined without the leading blank ones (so a final newline is lost;
//! `## ` headings are kept); a body longer than `max_recall_body_chars` keeps its first `max - 32` characters and
//! ends with [`TRUNCATION_MARKER`].

use crate::note::{Split, normalize_text, split_frontmatter};

/// Appended to a truncated recall body.
pub const TRUNCATION_MARKER: &str = "\n\n[Content truncated for recall]";

/// The most bytes read of a note for recall: `65536 + 15 + 4 * max_recall_body_chars` (a longer file is cut at
/// this byte count before decoding).
pub fn recall_read_limit(max_recall_body_chars: u32) -> usize {
    65_536 + 15 + 4 * max_recall_body_chars as usize
}

/// A recall body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecallBody {
    /// The text shown.
    pub content: String,
    /// Whether [`TRUNCATION_MARKER`] was appended.
    pub truncated: bool,
}

impl RecallBody {
    /// The recall payload's `token_estimate`: characters / 4.
    pub fn token_estimate(&self) -> usize {
        self.content.chars().count() / 4
    }
}

/// The recall body of a note's bytes (module docs). Bytes cut inside a UTF-8 sequence by the read limit lose the
/// partial character. `None` when the bytes are not a note's text (invalid UTF-8 before the cut, a NUL).
pub fn recall_body(bytes: &[u8], max_recall_body_chars: u32, max_frontmatter_bytes: usize) -> Option<RecallBody> {
    let bytes = match std::str::from_utf8(bytes) {
        Ok(_) => bytes,
        Err(e) if e.error_len().is_none() => &bytes[..e.valid_up_to()],
        Err(_) => return None,
    };
    let text = normalize_text(bytes).ok()?;
    let body = match split_frontmatter(&text, max_frontmatter_bytes) {
        Ok(Split::Fenced(r)) => r.body(&text),
        Ok(Split::None(p)) => &text[p..],
        Err(_) => text.as_str(),
    };
    let body = strip_title(body);
    let max = max_recall_body_chars as usize;
    if body.chars().count() > max {
        let mut content: String = body.chars().take(max.saturating_sub(32)).collect();
        content.push_str(TRUNCATION_MARKER);
        return Some(RecallBody {
            content,
            truncated: true,
        });
    }
    Some(RecallBody {
        content: body.into_owned(),
        truncated: false,
    })
}

fn strip_title(body: &str) -> std::borrow::Cow<'_, str> {
    // Python `splitlines`: a final newline ends the last line rather than starting an empty one.
    let mut lines: Vec<&str> = body.split('\n').collect();
    if body.ends_with('\n') {
        lines.pop();
    }
    let first = lines.iter().position(|l| !l.trim().is_empty());
    match first {
        Some(i) if lines[i].starts_with("# ") => {
            let rest: Vec<&str> = lines[i + 1..]
                .iter()
                .copied()
                .skip_while(|l| l.trim().is_empty())
                .collect();
            // `splitlines` + `join`: a final newline does not survive.
            std::borrow::Cow::Owned(rest.join("\n"))
        }
        _ => std::borrow::Cow::Borrowed(body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn title_and_truncation() {
        let long = format!("---\ntitle: t\n---\n# Heading One\n\n{}\n", "word ".repeat(40));
        let b = recall_body(long.as_bytes(), 60, 16_384).expect("text");
        assert_eq!(
            b.content,
            "word word word word word wor\n\n[Content truncated for recall]"
        );
        assert!(b.truncated);
        assert_eq!(b.token_estimate(), 15);
        let b = recall_body(b"## Not stripped\nshort\n", 60, 16_384).expect("text");
        assert_eq!(b.content, "## Not stripped\nshort\n");
        let b = recall_body(b"# T\n\n## Layers\n\nSee.\n", 4096, 16_384).expect("text");
        assert_eq!(b.content, "## Layers\n\nSee.");
    }
}
