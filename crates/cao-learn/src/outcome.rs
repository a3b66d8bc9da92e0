//! Outcome validation (spec 004 "Phase 1 — outcome capture"; spec/reference-facts.md "Outcomes, lessons,
//! promotion"; cases in `conformance/reference/outcomes.json`).
//!
//! Rules, applied before anything is stored:
//! - `session_name`: required; trimmed (Python `strip()`); empty after trimming is an error.
//! - `task_label`: required; trimmed; empty is an error; cut to [`MAX_TASK_LABEL_CHARS`] characters.
//! - `workflow_name`, `agent_profile`: trimmed; empty becomes absent.
//! - `success`: a boolean (the integers 0 and 1 are read as false and true, as the reference's `bool(...)` does for
//!   them; any other value is an error).
//! - `score`: absent/null, or an integer 0..=100; booleans, fractions and strings are errors.
//! - `friction_notes`: trimmed (absent = `""`), cut to [`MAX_FRICTION_NOTES_CHARS`] characters.
//! - Beyond the reference: `task_label` and `friction_notes` pass the secret gate's redaction
//!   (`[REDACTED:<pattern>]`), because outcomes are read back by a model (the retrospector) and must hold
//!   conclusions, never credentials (docs/conformance.md).
//!
//! A listing's `limit` is clamped to 1..=[`MAX_LIST_LIMIT`] (default [`DEFAULT_LIST_LIMIT`]).

use crate::error::LearnError;
use cao_core::text::trim_reference_whitespace;
use serde_json::Value;

/// Longest stored task label, in characters (spec 004: "≤200 chars").
pub const MAX_TASK_LABEL_CHARS: usize = 200;
/// Longest stored friction notes, in characters (spec 004: "≤1000 chars").
pub const MAX_FRICTION_NOTES_CHARS: usize = 1000;
/// Highest score (spec 004: "optional 0–100 quality metric").
pub const MAX_SCORE: i64 = 100;
/// Rows a listing returns when no limit is given.
pub const DEFAULT_LIST_LIMIT: usize = 50;
/// Most rows a listing returns (larger limits are clamped).
pub const MAX_LIST_LIMIT: usize = 200;

/// An outcome as a caller reports it, before validation. `success` and `score` are kept as JSON so that a value
/// of the wrong type is reported by this module, with the reference's rule, rather than by a deserialiser.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutcomeDraft {
    /// The session the work belonged to (required).
    pub session_name: Option<String>,
    /// A short label of the unit of work (required).
    pub task_label: Option<String>,
    /// Whether it succeeded (required): a boolean, or 0 / 1.
    pub success: Option<Value>,
    /// Optional 0..=100 integer.
    pub score: Option<Value>,
    /// 1-3 sentences on what was hard or wrong.
    pub friction_notes: Option<String>,
    /// A grouping label.
    pub workflow_name: Option<String>,
    /// The agent profile that did the work.
    pub agent_profile: Option<String>,
    /// The terminal reporting it.
    pub source_terminal_id: Option<String>,
}

/// A validated outcome: every field as it is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidOutcome {
    /// Trimmed, non-empty.
    pub session_name: String,
    /// Trimmed, or absent.
    pub workflow_name: Option<String>,
    /// Trimmed, non-empty, at most [`MAX_TASK_LABEL_CHARS`] characters, secrets redacted.
    pub task_label: String,
    /// Trimmed, or absent.
    pub agent_profile: Option<String>,
    /// Trimmed, or absent.
    pub source_terminal_id: Option<String>,
    /// Whether it succeeded.
    pub success: bool,
    /// 0..=100, or absent.
    pub score: Option<i64>,
    /// Trimmed, at most [`MAX_FRICTION_NOTES_CHARS`] characters, secrets redacted; `""` when none.
    pub friction_notes: String,
}

/// Validate `draft` (rules in the module documentation). No I/O.
///
/// Errors: [`LearnError::Outcome`] naming the first offending field (the reference raises `ValueError`).
pub fn validate(draft: &OutcomeDraft) -> Result<ValidOutcome, LearnError> {
    let bad = |m: String| Err(LearnError::Outcome(m));
    let session_name = match trimmed(draft.session_name.as_deref()) {
        Some(s) => s,
        None => return bad("session_name is required and must not be blank".into()),
    };
    let task_label = match trimmed(draft.task_label.as_deref()) {
        Some(s) => cut(&cao_core::secret::redact(&s), MAX_TASK_LABEL_CHARS),
        None => return bad("task_label is required and must not be blank".into()),
    };
    let success = match &draft.success {
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) if n.as_i64() == Some(0) => false,
        Some(Value::Number(n)) if n.as_i64() == Some(1) => true,
        None | Some(Value::Null) => return bad("success is required: true or false".into()),
        Some(other) => return bad(format!("success must be true or false, got {}", brief(other))),
    };
    let score = match &draft.score {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_i64() {
            Some(s) if (0..=MAX_SCORE).contains(&s) => Some(s),
            _ => return bad(format!("score must be an integer from 0 to {MAX_SCORE}, got {n}")),
        },
        Some(other) => {
            return bad(format!(
                "score must be an integer from 0 to {MAX_SCORE} or null, got {}",
                brief(other)
            ));
        }
    };
    let friction_notes = trimmed(draft.friction_notes.as_deref())
        .map(|s| cut(&cao_core::secret::redact(&s), MAX_FRICTION_NOTES_CHARS))
        .unwrap_or_default();
    Ok(ValidOutcome {
        session_name,
        workflow_name: trimmed(draft.workflow_name.as_deref()),
        task_label,
        agent_profile: trimmed(draft.agent_profile.as_deref()),
        source_terminal_id: trimmed(draft.source_terminal_id.as_deref()),
        success,
        score,
        friction_notes,
    })
}

/// A listing's `limit` clamped to 1..=[`MAX_LIST_LIMIT`]; `None` is [`DEFAULT_LIST_LIMIT`] (the reference clamps
/// rather than refuses).
pub fn clamp_limit(limit: Option<i64>) -> usize {
    match limit {
        None => DEFAULT_LIST_LIMIT,
        Some(n) => usize::try_from(n.clamp(1, MAX_LIST_LIMIT as i64)).unwrap_or(DEFAULT_LIST_LIMIT),
    }
}

/// `v` trimmed (Python `strip()`), `None` when absent or empty.
pub fn trimmed(v: Option<&str>) -> Option<String> {
    v.map(trim_reference_whitespace)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// The first `n` characters of `s`.
fn cut(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// A JSON value for a message: compact, at most 40 characters.
fn brief(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 {
        format!("{}...", s.chars().take(37).collect::<String>())
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn draft(session: &str, label: &str, success: Value) -> OutcomeDraft {
        OutcomeDraft {
            session_name: Some(session.into()),
            task_label: Some(label.into()),
            success: Some(success),
            ..Default::default()
        }
    }

    #[test]
    fn fields_are_trimmed_cut_and_blank_optional_fields_dropped() {
        let mut d = draft(" s2 ", "  padded label  ", json!(1));
        d.workflow_name = Some("  ".into());
        d.agent_profile = Some(" transformer ".into());
        d.friction_notes = Some(format!("  {}  ", "n".repeat(1500)));
        let v = validate(&d).expect("valid");
        assert_eq!(
            (v.session_name.as_str(), v.task_label.as_str(), v.success),
            ("s2", "padded label", true)
        );
        assert_eq!(
            (v.workflow_name, v.agent_profile.as_deref()),
            (None, Some("transformer"))
        );
        assert_eq!(v.friction_notes.chars().count(), MAX_FRICTION_NOTES_CHARS);
        let long = validate(&draft("s", &"é".repeat(300), json!(false))).expect("valid");
        assert_eq!(
            long.task_label.chars().count(),
            MAX_TASK_LABEL_CHARS,
            "characters, not bytes"
        );
    }

    #[test]
    fn scores_are_integers_in_range_only() {
        for ok in [json!(0), json!(100), json!(null)] {
            let mut d = draft("s", "t", json!(true));
            d.score = Some(ok.clone());
            assert!(validate(&d).is_ok(), "{ok}");
        }
        for bad in [
            json!(101),
            json!(-1),
            json!(true),
            json!(50.5),
            json!("50"),
            json!(50.0),
            json!([1]),
        ] {
            let mut d = draft("s", "t", json!(true));
            d.score = Some(bad.clone());
            let e = validate(&d).expect_err("refused");
            assert!(e.to_string().contains("score"), "{bad}: {e}");
        }
    }

    #[test]
    fn required_fields_and_success_types() {
        for (d, field) in [
            (draft("", "t", json!(true)), "session_name"),
            (draft("   ", "t", json!(true)), "session_name"),
            (draft("s", "\t\n", json!(true)), "task_label"),
            (draft("s", "t", json!("yes")), "success"),
            (draft("s", "t", json!(2)), "success"),
            (draft("s", "t", json!(null)), "success"),
        ] {
            let e = validate(&d).expect_err(field);
            assert!(e.to_string().contains(field), "{e}");
        }
        assert!(!validate(&draft("s", "t", json!(0))).expect("0 is false").success);
    }

    #[test]
    fn secrets_never_reach_a_stored_outcome() {
        let mut d = draft("s", "deploy with AKIAIOSFODNN7EXAMPLE", json!(false));
        d.friction_notes = Some("the token ghp_0123456789abcdefghijABCDEFGHIJ012345 expired".into());
        let v = validate(&d).expect("valid");
        assert!(v.task_label.contains("[REDACTED:aws_access_key]"), "{}", v.task_label);
        assert!(!v.friction_notes.contains("ghp_0123"), "{}", v.friction_notes);
    }

    #[test]
    fn limits_are_clamped() {
        assert_eq!(clamp_limit(None), 50);
        assert_eq!(clamp_limit(Some(0)), 1);
        assert_eq!(clamp_limit(Some(-5)), 1);
        assert_eq!(clamp_limit(Some(500)), 200);
        assert_eq!(clamp_limit(Some(7)), 7);
    }
}
