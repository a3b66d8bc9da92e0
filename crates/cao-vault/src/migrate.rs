//! Planning the migration of native memories into the managed folder (spec/vault-facts.md section 7;
//! conformance `vault_migrate.json`), as pure functions: what note each native memory becomes, what is lost, and
//! when an earlier receipt makes the vault authoritative. The store reads the natives and edges, writes the notes
//! ([`crate::writer`]), records receipts and supersedes the copied edges.

use crate::hash::{sha256_hex, sha256_nul_joined};
use crate::links::{EdgeOrigin, EdgeStatus, EdgeType};
use crate::note::MAX_CAO_LINKS;
use crate::writer::{BodyEdit, WriteRequest};
use crate::yaml::Yaml;
use chrono::NaiveDateTime;
use regex::Regex;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// A native memory to migrate.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeMemory {
    /// Key.
    pub key: String,
    /// Memory type (`user`, `feedback`, `project`, `reference`).
    pub memory_type: String,
    /// Tags, comma-separated (normalised).
    pub tags: String,
    /// `created_at` of its metadata row (UTC).
    pub created_at: NaiveDateTime,
    /// The topic file's bytes.
    pub file_bytes: Vec<u8>,
    /// Access count.
    pub access_count: u64,
    /// Whether these are set on the row (each is lost in the move).
    pub last_accessed_at: bool,
    /// See `last_accessed_at`.
    pub last_compiled_at: bool,
    /// See `last_accessed_at`.
    pub source_provider: bool,
    /// See `last_accessed_at`.
    pub source_terminal_id: bool,
    /// See `last_accessed_at`.
    pub related_keys: bool,
}

/// A typed relationship of the memory (any status).
#[derive(Debug, Clone, PartialEq)]
pub struct NativeEdge {
    /// Target key.
    pub target_key: String,
    /// Type.
    pub edge_type: EdgeType,
    /// Status.
    pub status: EdgeStatus,
    /// Stored origin.
    pub origin: EdgeOrigin,
    /// The `authored_origin` attribute, when present.
    pub authored_origin: Option<String>,
    /// Confidence.
    pub confidence: Option<f64>,
}

/// The plan for one memory.
#[derive(Debug, Clone, PartialEq)]
pub struct MigrationItem {
    /// The key.
    pub key: String,
    /// `sha256(vault_id NUL scope NUL scope_id NUL key)`.
    pub receipt_id: String,
    /// `sha256` of the native file's bytes (the snapshot a receipt records).
    pub native_sha256: String,
    /// The managed note to write (replace mode, expected absent).
    pub request: WriteRequest,
    /// What does not survive the move: field -> count (`append_only_section_history`, `cao.links`,
    /// `access_count`, `last_accessed_at`, ...).
    pub lossy: BTreeMap<String, u64>,
}

static SECTION: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?m)^## \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z[ \t]*$").ok());

/// The receipt id of a memory: `sha256(vault_id NUL scope NUL scope_id-or-empty NUL key)`.
pub fn receipt_id(vault_id: &str, scope: &str, scope_id: Option<&str>, key: &str) -> String {
    sha256_nul_joined(&[vault_id, scope, scope_id.unwrap_or(""), key])
}

/// The body a native topic file moves with: its `## <ts>` sections (the header before the first is dropped; a
/// file without sections is taken whole), whole sections kept while their UTF-8 total fits `budget` bytes.
/// Returns the body and whether sections were dropped.
pub fn migrated_body(native_text: &str, budget: usize) -> (String, bool) {
    let starts: Vec<usize> = SECTION
        .as_ref()
        .map_or_else(Vec::new, |re| re.find_iter(native_text).map(|m| m.start()).collect());
    if starts.is_empty() {
        return (native_text.to_owned(), false);
    }
    let mut body = String::new();
    for (i, start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(native_text.len());
        let section = &native_text[*start..end];
        if body.len() + section.len() > budget {
            return (body, true);
        }
        body.push_str(section);
    }
    (body, false)
}

/// Plan the note of one native memory (spec/vault-facts.md section 7): body within `max_note_bytes -
/// max_frontmatter_bytes`, the edges as `cao.links` (first 64), seeds `tags` (a list when more than one tag) and
/// `created`, `cao` type and links, the lossy fields.
pub fn plan_item(
    vault_id: &str,
    scope: &str,
    scope_id: Option<&str>,
    native: &NativeMemory,
    edges: &[NativeEdge],
    max_note_bytes: u64,
    max_frontmatter_bytes: u32,
) -> MigrationItem {
    let text = String::from_utf8_lossy(&native.file_bytes);
    let budget = usize::try_from(max_note_bytes.saturating_sub(u64::from(max_frontmatter_bytes))).unwrap_or(0);
    let (body, dropped) = migrated_body(&text, budget);
    let mut lossy = BTreeMap::new();
    if dropped {
        lossy.insert("append_only_section_history".to_owned(), 1);
    }
    let links: Vec<Yaml> = edges
        .iter()
        .take(MAX_CAO_LINKS)
        .map(|e| {
            let origin = e
                .authored_origin
                .as_deref()
                .and_then(EdgeOrigin::parse)
                .unwrap_or(e.origin);
            let mut m = vec![
                (Yaml::Str("to".into()), Yaml::Str(e.target_key.clone())),
                (Yaml::Str("type".into()), Yaml::Str(e.edge_type.as_str().into())),
                (Yaml::Str("status".into()), Yaml::Str(e.status.as_str().into())),
                (Yaml::Str("origin".into()), Yaml::Str(origin.as_str().into())),
            ];
            if let Some(c) = e.confidence {
                m.push((Yaml::Str("confidence".into()), Yaml::Float(c)));
            }
            Yaml::Map(m)
        })
        .collect();
    if edges.len() > MAX_CAO_LINKS {
        lossy.insert("cao.links".to_owned(), (edges.len() - MAX_CAO_LINKS) as u64);
    }
    for (name, set) in [
        ("access_count", native.access_count > 0),
        ("last_accessed_at", native.last_accessed_at),
        ("last_compiled_at", native.last_compiled_at),
        ("source_provider", native.source_provider),
        ("source_terminal_id", native.source_terminal_id),
        ("related_keys", native.related_keys),
    ] {
        if set {
            lossy.insert(name.to_owned(), 1);
        }
    }
    let tags: Vec<&str> = native.tags.split(',').filter(|t| !t.is_empty()).collect();
    let tags = match tags.as_slice() {
        [] => Yaml::Str(String::new()),
        [one] => Yaml::Str((*one).to_owned()),
        many => Yaml::Seq(many.iter().map(|t| Yaml::Str((*t).to_owned())).collect()),
    };
    MigrationItem {
        key: native.key.clone(),
        receipt_id: receipt_id(vault_id, scope, scope_id, &native.key),
        native_sha256: sha256_hex(&native.file_bytes),
        request: WriteRequest {
            key: native.key.clone(),
            cao: vec![
                ("type".into(), Yaml::Str(native.memory_type.clone())),
                ("links".into(), Yaml::Seq(links)),
            ],
            seeds: vec![
                ("tags".into(), tags),
                (
                    "created".into(),
                    Yaml::DateTime {
                        naive: native.created_at,
                        offset_secs: None,
                    },
                ),
            ],
            body: BodyEdit::Replace(body),
        },
        lossy,
    }
}

/// An earlier migration receipt of a memory, as far as the skip decision needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptState {
    /// `active`, `rolled_back`, ...
    pub status: String,
    /// The native file's hash it recorded.
    pub native_sha256: String,
    /// The managed note's hash it published.
    pub published_sha256: String,
}

/// Why a memory with a receipt is skipped (the vault is authoritative): `receipt_not_active`,
/// `native_source_drift`, `target_content_drift` or `already_migrated`; `None` without a receipt.
pub fn skip_reason(
    receipt: Option<&ReceiptState>,
    native_sha256: &str,
    target_sha256: Option<&str>,
) -> Option<&'static str> {
    let r = receipt?;
    Some(if r.status != "active" {
        "receipt_not_active"
    } else if r.native_sha256 != native_sha256 {
        "native_source_drift"
    } else if target_sha256 != Some(r.published_sha256.as_str()) {
        "target_content_drift"
    } else {
        "already_migrated"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_keep_whole_sections_within_budget() {
        let native = "# big\n<!-- id: x -->\n\n## 2024-02-01T00:00:00Z\naaaa\n\n## 2024-02-02T00:00:00Z\nbbbb\n";
        assert_eq!(
            migrated_body(native, 1000),
            (
                "## 2024-02-01T00:00:00Z\naaaa\n\n## 2024-02-02T00:00:00Z\nbbbb\n".into(),
                false
            )
        );
        assert_eq!(
            migrated_body(native, 35),
            ("## 2024-02-01T00:00:00Z\naaaa\n\n".into(), true)
        );
        assert_eq!(migrated_body("no sections\n", 3), ("no sections\n".into(), false));
        let r = ReceiptState {
            status: "active".into(),
            native_sha256: "n".into(),
            published_sha256: "p".into(),
        };
        assert_eq!(skip_reason(Some(&r), "n", Some("p")), Some("already_migrated"));
        assert_eq!(skip_reason(Some(&r), "x", Some("p")), Some("native_source_drift"));
        assert_eq!(skip_reason(None, "n", None), None);
    }
}
