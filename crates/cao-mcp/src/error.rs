//! Why a tool call failed, and the JSON payload an agent receives for it.

use cao_memory::MemoryError;
use serde_json::{Value, json};

/// A failed tool call. Every variant is reported to the agent as a *successful* MCP result whose JSON is
/// `{"success": false, "error": <one line>, "error_kind": <code>}` (see [`ToolError::payload`]), never as a
/// protocol error: agents read the payload and can correct their arguments.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not match the tool's input schema (wrong type, missing required field).
    #[error("invalid arguments for {tool}: {reason}")]
    Arguments {
        /// The tool name.
        tool: &'static str,
        /// The deserialiser's message, naming the offending field or value.
        reason: String,
    },
    /// The service refused or failed the call.
    #[error(transparent)]
    Memory(#[from] MemoryError),
    /// The blocking task running the service call panicked or was cancelled; nothing is known about its effect.
    #[error("internal error while running {tool}: {reason}; run `cao memory repair` if a memory looks incomplete")]
    Internal {
        /// The tool name.
        tool: &'static str,
        /// What happened to the task.
        reason: String,
    },
    /// The remote memory owner (`CAO_MEMORY_API_URL`) could not be reached, timed out, or answered with a status
    /// that is not a refusal of the call (401, 5xx, a body that is not the API's error JSON).
    #[error(
        "memory owner {url} is unavailable: {reason}; check that it runs and CAO_MEMORY_API_URL / CAO_MEMORY_API_TOKEN"
    )]
    RemoteUnavailable {
        /// The owner's base URL.
        url: String,
        /// What failed (connect error, timeout, status).
        reason: String,
    },
    /// The remote memory owner refused the call; its stable code and message are relayed unchanged.
    #[error("{message}")]
    Remote {
        /// The owner's stable error code (`invalid_argument`, `scope_not_allowed`, ...).
        code: String,
        /// The owner's one-line message.
        message: String,
    },
}

impl ToolError {
    /// Stable snake_case code: the service's [`MemoryError::kind`], `invalid_argument` for malformed arguments,
    /// `internal_error` for a failed task.
    pub fn kind(&self) -> &'static str {
        match self {
            ToolError::Arguments { .. } => "invalid_argument",
            ToolError::Memory(e) => e.kind(),
            ToolError::Internal { .. } => "internal_error",
            ToolError::RemoteUnavailable { .. } => "remote_unavailable",
            ToolError::Remote { .. } => "remote_error",
        }
    }

    /// The payload the agent receives. A [`MemoryError::Disabled`] (memory switched off between the check and the
    /// call, or on the remote owner) is reported exactly like the up-front disabled check ([`disabled_payload`]); a
    /// refusal by the remote owner carries the owner's code as `error_kind`.
    pub fn payload(&self, tool: &str) -> Value {
        match self {
            ToolError::Memory(MemoryError::Disabled) => disabled_payload(tool),
            ToolError::Remote { code, .. } if code == MemoryError::Disabled.kind() => disabled_payload(tool),
            ToolError::Remote { code, message } => json!({"success": false, "error": message, "error_kind": code}),
            _ => json!({"success": false, "error": self.to_string(), "error_kind": self.kind()}),
        }
    }
}

/// The payload of any tool while memory is disabled (`memory.enabled` false / `CAO_MEMORY_ENABLED=false`):
/// `{"success": false, "disabled": true, "error": <message>, "error_kind": "memory_disabled"}`, plus
/// `"memories": []` for `memory_recall` (reference notes g).
pub fn disabled_payload(tool: &str) -> Value {
    let mut v = json!({
        "success": false,
        "disabled": true,
        "error": MemoryError::Disabled.to_string(),
        "error_kind": MemoryError::Disabled.kind(),
    });
    if tool == crate::RECALL {
        v["memories"] = json!([]);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_payload_carries_message_and_kind() {
        let e = ToolError::from(MemoryError::Invalid("invalid sort_by \"x\"".into()));
        let p = e.payload(crate::RECALL);
        assert_eq!(p["success"], false);
        assert_eq!(p["error_kind"], "invalid_argument");
        assert_eq!(p["error"], "invalid sort_by \"x\"");
        assert!(p.get("disabled").is_none());
    }

    #[test]
    fn disabled_payload_has_memories_only_for_recall() {
        let r = disabled_payload(crate::RECALL);
        assert_eq!(r["disabled"], true);
        assert_eq!(r["memories"], json!([]));
        let s = disabled_payload(crate::STORE);
        assert_eq!(s["disabled"], true);
        assert!(s.get("memories").is_none());
        assert!(s["error"].as_str().is_some_and(|m| m.starts_with("memory is disabled")));
        assert_eq!(
            ToolError::from(MemoryError::Disabled).payload(crate::FORGET),
            disabled_payload(crate::FORGET)
        );
    }
}
