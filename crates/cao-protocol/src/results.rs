//! Each tool's success payload: one type per tool (spec/reference-facts.md "MCP payloads"), serialised by the
//! service as the MCP result and the internal route's answer, and described by the same type in the OpenAPI
//! document. A failure is never one of these: it is a [`crate::ToolError`] and its payload.
//!
//! Field names and presence are the wire's: a field marked "absent when ..." is left out of the JSON, not sent as
//! `null`; every other `Option` is sent as `null` when empty. Memory text in any field is untrusted data.

use cao_core::{MemoryType, Scope};
use serde::{Deserialize, Serialize};

/// A field that is one of a few fixed words (`created` / `updated`, `deleted` / `absent`, an entry's kind and
/// status), as the service writes it. An alias rather than `&'static str` in the structs so that deserialising reads
/// the word (checked against its set) instead of borrowing from the input.
pub type FixedWord = &'static str;

/// `memory_store` (and `store_lesson`) result: `{success, key, scope, scope_id, file_path, action, journal_entry}`,
/// plus `possible_duplicates` and `duplicate_advice` when the decision engine names some, and `source_kind` /
/// `source_path` when the write went to an Obsidian vault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct StoreResult {
    /// Always true (failures are errors).
    pub success: bool,
    /// The final key.
    pub key: String,
    /// The scope written.
    pub scope: Scope,
    /// The resolved scope id (`null` for global and federated).
    pub scope_id: Option<String>,
    /// Absolute path of the topic file.
    pub file_path: String,
    /// `created` for a new key, `updated` when an entry was appended.
    #[serde(deserialize_with = "de::store_action")]
    #[cfg_attr(feature = "schemars", schemars(with = "String", extend("enum" = ["created", "updated"])))]
    #[cfg_attr(feature = "utoipa", schema(value_type = String))]
    pub action: FixedWord,
    /// The id of the entry this write appended to its container's journal (spec 001: "A receipt from either names
    /// the number of the entry it appended"); `memory_zoom(id, 1)` reads it whole.
    pub journal_entry: Option<u64>,
    /// With `memory.decisions.duplicates = advise`, after a write that created a new key: existing memories of the
    /// same scope the decision engine finds may cover the same topic (at most 3); absent otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub possible_duplicates: Vec<PossibleDuplicate>,
    /// The suggestion that goes with [`StoreResult::possible_duplicates`]: rewrite one of them instead; absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_advice: Option<String>,
    /// `"vault"` when the write went to the managed folder of an Obsidian vault (a vault-bound scope; `file_path`
    /// is then the note's absolute path); absent for native memories (spec/vault-facts.md section 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_kind: Option<String>,
    /// The vault-relative path of the note written (`<managed_folder>/<key>.md`); absent for native memories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_path: Option<String>,
}

/// A memory a receipt names as possibly covering the same topic as the one just created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct PossibleDuplicate {
    /// Its key (same scope and scope id as the new memory).
    pub key: String,
    /// Its first line. Untrusted memory text.
    pub first_line: String,
}

/// A transient lifecycle label of a recalled or listed memory (spec 000 "Supersedes lifecycle (opt-in)").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum LifecycleStatus {
    /// The memory is the target of an active same-scope `supersedes` edge.
    Superseded,
}

impl LifecycleStatus {
    /// The wire spelling (`superseded`).
    pub fn as_str(self) -> &'static str {
        match self {
            LifecycleStatus::Superseded => "superseded",
        }
    }
}

/// One recalled memory: `{key, content, memory_type, scope, tags, file_path, updated_at}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct RecalledMemory {
    /// The key.
    pub key: String,
    /// Current content. Untrusted memory text.
    pub content: String,
    /// The type label.
    pub memory_type: MemoryType,
    /// The scope.
    pub scope: Scope,
    /// Tags csv.
    pub tags: String,
    /// Absolute path of the topic file.
    pub file_path: String,
    /// `YYYY-MM-DDTHH:MM:SSZ`.
    pub updated_at: String,
    /// Transient `"superseded"` label, present only when set (lifecycle enabled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle_status: Option<LifecycleStatus>,
    /// `"vault"` for a note of an Obsidian vault; absent for native memories (spec/vault-facts.md section 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_kind: Option<String>,
    /// The vault-relative path of a vault note; absent for native memories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_path: Option<String>,
    /// When a vault note was last indexed (the last applied reconcile that wrote its row), `YYYY-MM-DDTHH:MM:SSZ`;
    /// absent for native memories (spec/vault-facts.md section 5 "A recalled vault memory": `indexed_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexed_at: Option<String>,
    /// Whether a vault note's file is still the one indexed: `fresh` when its size and modification time (ns) equal
    /// the indexed ones, else `stale` (the note changed or vanished on disk since; `content` is the indexed text).
    /// Absent for native memories (spec/vault-facts.md section 5: `index_freshness`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_freshness: Option<IndexFreshness>,
}

/// Whether a vault note changed on disk since it was indexed (spec/vault-facts.md section 5: `index_freshness`
/// is `fresh` iff the file's size and mtime_ns equal the indexed ones, else `stale`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum IndexFreshness {
    /// The file's size and modification time are the indexed ones.
    Fresh,
    /// The file changed (or vanished) since it was indexed.
    Stale,
}

impl IndexFreshness {
    /// The wire spelling (`fresh` / `stale`).
    pub fn as_str(self) -> &'static str {
        match self {
            IndexFreshness::Fresh => "fresh",
            IndexFreshness::Stale => "stale",
        }
    }
}

/// `memory_recall` result: `{success, memories}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct RecallResult {
    /// Always true (failures are errors).
    pub success: bool,
    /// Ranked primaries, then related extras.
    pub memories: Vec<RecalledMemory>,
}

/// `memory_forget` result: `{success, deleted, key, scope, action, path, journal_entry}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct ForgetResult {
    /// Always true (failures are errors).
    pub success: bool,
    /// Whether a memory was removed.
    pub deleted: bool,
    /// The key as sanitised.
    pub key: String,
    /// The scope.
    pub scope: Scope,
    /// `deleted`, or `absent` (the reference's word for "nothing to forget"); in a vault-bound scope `deindexed`
    /// or `deleted_and_deindexed` (spec/vault-facts.md section 5 "Forget").
    #[serde(deserialize_with = "de::forget_action")]
    #[cfg_attr(
        feature = "schemars",
        schemars(with = "String", extend("enum" = ["deleted", "absent", "deindexed", "deleted_and_deindexed"]))
    )]
    #[cfg_attr(feature = "utoipa", schema(value_type = String))]
    pub action: FixedWord,
    /// Absolute path of the (former) topic file.
    pub path: String,
    /// The id of the delete entry appended to the container's journal; `null` when there was nothing to delete.
    pub journal_entry: Option<u64>,
}

/// `memory_view` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct ViewResult {
    /// Always true (failures are errors).
    pub success: bool,
    /// The container whose journal this is.
    pub container: String,
    /// The rendered view, `<memory>` ... `</memory>`, at most 32 KiB. Untrusted memory text inside.
    pub view: String,
    /// N, the number of entries in the journal.
    pub entries: u64,
    /// Lines shown.
    pub lines: usize,
    /// Oldest entries left out until their summaries are written (0 normally).
    pub left_out: u64,
    /// Bytes of `view`.
    pub bytes: usize,
}

/// Who wrote an entry, as zoom shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct EntryWriter {
    /// The writing terminal, when known.
    pub terminal_id: Option<String>,
    /// The writing session, when known.
    pub session: Option<String>,
}

/// One entry whole (zoom with n = 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct ZoomedEntry {
    /// `id+1`.
    pub address: String,
    /// `note` or `delete`.
    #[serde(deserialize_with = "de::entry_kind")]
    #[cfg_attr(feature = "schemars", schemars(with = "String", extend("enum" = ["note", "delete"])))]
    #[cfg_attr(feature = "utoipa", schema(value_type = String))]
    pub kind: FixedWord,
    /// The memory's name in the container (its key, or `<scope>/<scope_id>/<key>`).
    pub name: String,
    /// The memory's key.
    pub key: String,
    /// The memory's scope.
    pub scope: Scope,
    /// Its scope id.
    pub scope_id: Option<String>,
    /// The memory's full text at this version (`""` for a delete or after a purge). Untrusted.
    pub text: String,
    /// `current`, `rewritten`, `deleted` or `purged`.
    #[serde(deserialize_with = "de::entry_status")]
    #[cfg_attr(
        feature = "schemars",
        schemars(with = "String", extend("enum" = ["current", "rewritten", "deleted", "purged"]))
    )]
    #[cfg_attr(feature = "utoipa", schema(value_type = String))]
    pub status: FixedWord,
    /// The entry that replaced this version, if any.
    pub replaced_by: Option<u64>,
    /// When it was written, `YYYY-MM-DDTHH:MM:SSZ`.
    pub written_at: String,
    /// Who wrote it.
    pub writer: EntryWriter,
}

/// One of the two lines a zoomed line was made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct ZoomedLine {
    /// Its address `id+n`.
    pub address: String,
    /// What a reader sees: the line, or `(not summarized yet) ...`. Untrusted.
    pub text: String,
    /// Whether the line is written.
    pub summarized: bool,
    /// Who wrote it (`verbatim`, `extractive` or the model), when written.
    pub writer: Option<String>,
}

/// `memory_zoom` result: `entry` for n = 1, `lines` (two, older first) for n > 1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct ZoomResult {
    /// Always true.
    pub success: bool,
    /// The container.
    pub container: String,
    /// The zoomed address.
    pub address: String,
    /// The entry, for n = 1; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<ZoomedEntry>,
    /// The two child lines, for n > 1; absent otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<ZoomedLine>,
}

/// One `memory_search` hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct SearchHit {
    /// The memory's key.
    pub key: String,
    /// Its scope.
    pub scope: Scope,
    /// Its scope id.
    pub scope_id: Option<String>,
    /// Its first line (heading). Untrusted.
    pub first_line: String,
    /// The first line of its text holding a query word, or its first line when only the key matched (cut to 300
    /// bytes). Untrusted.
    pub matching_line: String,
    /// The score: 3 per query word in the key, 1 per query word in the body.
    pub score: u32,
    /// The decision engine's relevance score (0..1), present only when `memory.decisions.search` is `enforce` and
    /// the engine judged the matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relevance: Option<f64>,
    /// Its last write, `YYYY-MM-DDTHH:MM:SSZ`.
    pub updated_at: String,
}

/// `memory_search` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct SearchResult {
    /// Always true.
    pub success: bool,
    /// Best first: score, then the newer memory; at most 10. With `memory.decisions.search = enforce` and a
    /// judging engine: the matches it scored at or above `memory.decisions.relevance_floor`, most relevant first.
    pub hits: Vec<SearchHit>,
    /// Present when the decision engine left word matches out: says so and names them (`memory_read` still opens
    /// any of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// The word matches the decision engine left out (`key`, or `<scope>/<key>` outside the project), in word
    /// order; absent when none were.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
}

/// `memory_read` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct ReadResult {
    /// Always true.
    pub success: bool,
    /// The key.
    pub key: String,
    /// Its scope.
    pub scope: Scope,
    /// Its scope id.
    pub scope_id: Option<String>,
    /// The current text. Untrusted.
    pub content: String,
    /// Its type label.
    pub memory_type: MemoryType,
    /// Tags csv.
    pub tags: String,
    /// Its last write, `YYYY-MM-DDTHH:MM:SSZ`.
    pub updated_at: String,
    /// The newest journal entry of the memory (its current version), when the journal has one.
    pub journal_entry: Option<u64>,
}

/// One memory recall advice names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct AdvisedMemory {
    /// The key.
    pub key: String,
    /// Its scope.
    pub scope: Scope,
    /// Its scope id.
    pub scope_id: Option<String>,
    /// Its first line. Untrusted memory text.
    pub first_line: String,
    /// The engine's score, 0..1.
    pub score: f64,
}

/// `memory_advise` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct AdviseResult {
    /// Always true (failures are errors; an engine failure is an empty result).
    pub success: bool,
    /// The memories named, most relevant first, at most 3; empty when nothing new is relevant, the feature is off
    /// or the engine failed.
    pub memories: Vec<AdvisedMemory>,
    /// The `# Memory advice` reminder naming them, when there are any; absent otherwise. Untrusted memory text
    /// inside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reminder: Option<String>,
}

/// One stored outcome (spec 004 "Phase 1 — outcome capture"), as the tools and the `/outcomes` routes return it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct Outcome {
    /// Its id (uuid4).
    pub id: String,
    /// The session it belongs to.
    pub session_name: String,
    /// Its workflow label, if any.
    pub workflow_name: Option<String>,
    /// What was attempted (at most 200 characters).
    pub task_label: String,
    /// The agent profile that did the work, if known.
    pub agent_profile: Option<String>,
    /// The terminal that reported it, if known.
    pub source_terminal_id: Option<String>,
    /// Whether it succeeded.
    pub success: bool,
    /// The 0..100 quality metric, if any.
    #[cfg_attr(feature = "schemars", schemars(range(min = 0, max = 100)))]
    #[cfg_attr(feature = "utoipa", schema(minimum = 0, maximum = 100))]
    pub score: Option<i64>,
    /// What was hard or wrong (at most 1000 characters; `""` when nothing).
    pub friction_notes: String,
    /// When it was recorded, `YYYY-MM-DDTHH:MM:SSZ` (`null` when a stored value cannot be read).
    pub created_at: Option<String>,
}

/// `report_outcome` result: `{success: true, outcome: {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct ReportOutcomeResult {
    /// Always true (failures are errors).
    pub success: bool,
    /// The stored outcome.
    pub outcome: Outcome,
}

/// `list_outcomes` result: `{success: true, outcomes: [...]}`, plus `disabled: true` (and no outcomes) while
/// learning is off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct OutcomeList {
    /// Always true (failures are errors).
    pub success: bool,
    /// Newest first.
    pub outcomes: Vec<Outcome>,
    /// Present (true) only when learning is off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
}

/// Readers of the result fields that are one of a few fixed words (kept as [`FixedWord`]s by the service).
mod de {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer};

    /// The word of `allowed` the input spells; anything else is an error naming the words.
    fn one_of<'de, D: Deserializer<'de>>(d: D, allowed: &[&'static str]) -> Result<&'static str, D::Error> {
        let s = String::deserialize(d)?;
        allowed
            .iter()
            .copied()
            .find(|a| *a == s)
            .ok_or_else(|| D::Error::custom(format!("unexpected {s:?}: expected one of {}", allowed.join(", "))))
    }

    /// `action` of a store receipt.
    pub(super) fn store_action<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
        one_of(d, &["created", "updated"])
    }

    /// `action` of a forget receipt.
    pub(super) fn forget_action<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
        one_of(d, &["deleted", "absent", "deindexed", "deleted_and_deindexed"])
    }

    /// `kind` of a journal entry.
    pub(super) fn entry_kind<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
        one_of(d, &["note", "delete"])
    }

    /// `status` of a journal entry.
    pub(super) fn entry_status<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
        one_of(d, &["current", "rewritten", "deleted", "purged"])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn receipts_read_back_their_fixed_words_and_refuse_others() {
        let stored = json!({"success": true, "key": "k", "scope": "global", "scope_id": null, "file_path": "/f",
                            "action": "created", "journal_entry": 3});
        let r: StoreResult = serde_json::from_value(stored.clone()).expect("a receipt");
        assert_eq!(
            (r.action, r.journal_entry, r.possible_duplicates.len()),
            ("created", Some(3), 0)
        );
        assert_eq!(
            serde_json::to_value(&r).expect("json"),
            stored,
            "absent extras stay absent"
        );
        let mut odd = stored;
        odd["action"] = json!("made");
        let e = serde_json::from_value::<StoreResult>(odd).expect_err("not a store action");
        assert!(e.to_string().contains("expected one of created, updated"), "{e}");
        let f: ForgetResult = serde_json::from_value(json!({"success": true, "deleted": false, "key": "k",
            "scope": "project", "action": "absent", "path": "/p", "journal_entry": null}))
        .expect("a forget receipt");
        assert_eq!((f.action, f.scope), ("absent", Scope::Project));
    }
}
