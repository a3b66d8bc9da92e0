//! The digest of a reviewed plan (a heal plan, a promotion plan): lowercase hex SHA-256 of the plan's canonical
//! serialisation (compact JSON of a fixed set of fields in a fixed order; see `HealReport::plan_digest` and
//! `PromotionReport::plan_digest`). An operator who reviewed a plan passes its digest back with the apply; the
//! apply plans again and carries the plan out only when the digests are equal, so what is applied is exactly what
//! was reviewed ([`crate::MemoryError::PlanChanged`] otherwise, nothing applied).

use serde::Serialize;

/// Length of a digest in hex characters.
pub const PLAN_DIGEST_LEN: usize = 64;

/// Lowercase hex SHA-256 of `value`'s compact JSON. The plan types are plain data (strings, numbers, unit enums),
/// whose serialisation does not fail; were it to, the digest would be that of no bytes.
pub fn sha256_hex(value: &impl Serialize) -> String {
    cao_embed::sha256_hex(&serde_json::to_vec(value).unwrap_or_default())
}

/// Whether `reviewed` names the plan whose digest is `current` (surrounding whitespace and hex case ignored).
pub fn matches(reviewed: &str, current: &str) -> bool {
    reviewed.trim().eq_ignore_ascii_case(current)
}

/// `reviewed` as an error message shows it: trimmed, without control characters, at most 80 characters.
pub fn shown(reviewed: &str) -> String {
    reviewed.trim().chars().filter(|c| !c.is_control()).take(80).collect()
}
