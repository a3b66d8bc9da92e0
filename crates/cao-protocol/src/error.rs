//! [`ToolError`]: a failed tool call, and the JSON payload an agent receives for it.

use crate::code::ErrorCode;
use crate::tool::Tool;
use http::StatusCode;
use serde_json::{Value, json};

/// Why a tool call failed. Every variant is reported to the agent as a *successful* MCP result whose JSON is
/// `{"success": false, "error": <one line>, "error_kind": <code>}` (see [`ToolError::payload`]), never as a
/// protocol error: agents read the payload and can correct their arguments.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not match the tool's input schema (wrong type, missing required field).
    #[error("invalid arguments for {tool}: {reason}")]
    Arguments {
        /// The tool.
        tool: Tool,
        /// The deserialiser's message, naming the offending field or value.
        reason: String,
    },
    /// The memory service refused or failed the call (`MemoryError` converts into this, keeping its code and
    /// message).
    #[error("{message}")]
    Service {
        /// The service error's stable code.
        code: ErrorCode,
        /// Its one-line message.
        message: String,
    },
    /// The blocking task running the service call panicked or was cancelled; nothing is known about its effect.
    #[error("internal error while running {tool}: {reason}; run `cao memory repair` if a memory looks incomplete")]
    Internal {
        /// What was running: a tool name, or `context` for a context block.
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
    /// The remote memory owner refused the call; its code and message are relayed unchanged.
    #[error("{message}")]
    Remote {
        /// The owner's code (`invalid_argument`, `scope_not_allowed`, ...), as the owner spelled it: a newer owner
        /// may send a code this version does not know ([`ErrorCode::parse`] gives `None` for it).
        code: String,
        /// The owner's one-line message.
        message: String,
    },
}

impl ToolError {
    /// This failure's own code: the service's code, `invalid_argument` for malformed arguments, `internal_error`
    /// for a failed task, `remote_unavailable`, or `remote_error` for any refusal by the owner (whose own code
    /// [`ToolError::error_kind`] relays).
    pub fn code(&self) -> ErrorCode {
        match self {
            ToolError::Arguments { .. } => ErrorCode::InvalidArgument,
            ToolError::Service { code, .. } => *code,
            ToolError::Internal { .. } => ErrorCode::InternalError,
            ToolError::RemoteUnavailable { .. } => ErrorCode::RemoteUnavailable,
            ToolError::Remote { .. } => ErrorCode::RemoteError,
        }
    }

    /// [`ToolError::code`] as its snake_case string.
    pub fn kind(&self) -> &'static str {
        self.code().as_str()
    }

    /// The code a client sees (`error_kind` of the payload, `error` of a REST answer): the owner's code for a
    /// relayed refusal, else [`ToolError::kind`].
    pub fn error_kind(&self) -> &str {
        match self {
            ToolError::Remote { code, .. } => code,
            other => other.kind(),
        }
    }

    /// The HTTP status of a REST answer carrying this failure: that of [`ToolError::error_kind`] (500 for a code
    /// this version does not know).
    pub fn http_status(&self) -> StatusCode {
        match self {
            ToolError::Remote { code, .. } => {
                ErrorCode::parse(code).map_or(StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::http_status)
            }
            other => other.code().http_status(),
        }
    }

    /// Whether this failure is the caller's fault (an argument to correct, a refusal) rather than the system's.
    pub fn is_client_error(&self) -> bool {
        match self {
            ToolError::Arguments { .. } | ToolError::Remote { .. } => true,
            other => other.code().is_client_error(),
        }
    }

    /// Whether memory is switched off where the call was to run (here, or on the remote owner).
    pub fn is_disabled(&self) -> bool {
        self.error_kind() == ErrorCode::MemoryDisabled.as_str()
    }

    /// The payload the agent receives for this failure of `tool`. Memory switched off (here or on the owner) is
    /// `{"success": false, "disabled": true, "error", "error_kind": "memory_disabled"}` plus the tool's empty list
    /// (`"memories": []` for `memory_recall`, reference notes g); anything else is
    /// `{"success": false, "error", "error_kind"}` with [`ToolError::error_kind`].
    pub fn payload(&self, tool: Tool) -> Value {
        if self.is_disabled() {
            let mut v = json!({
                "success": false,
                "disabled": true,
                "error": self.to_string(),
                "error_kind": ErrorCode::MemoryDisabled.as_str(),
            });
            if let Some(list) = tool.spec().empty_list {
                v[list] = json!([]);
            }
            return v;
        }
        json!({"success": false, "error": self.to_string(), "error_kind": self.error_kind()})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relayed_refusals_keep_the_owners_code_and_status() {
        let e = ToolError::Remote {
            code: "secret_detected".into(),
            message: "content looks like a secret".into(),
        };
        assert_eq!(e.kind(), "remote_error");
        assert_eq!(e.error_kind(), "secret_detected");
        assert_eq!(e.http_status(), StatusCode::UNPROCESSABLE_ENTITY);
        let p = e.payload(Tool::Store);
        assert_eq!(
            p,
            json!({"success": false, "error": "content looks like a secret", "error_kind": "secret_detected"})
        );
        let unknown = ToolError::Remote {
            code: "quota_exceeded".into(),
            message: "m".into(),
        };
        assert_eq!(unknown.error_kind(), "quota_exceeded");
        assert_eq!(unknown.http_status(), StatusCode::INTERNAL_SERVER_ERROR);
    }

    #[test]
    fn disabled_here_or_on_the_owner_is_the_disabled_payload() {
        for e in [
            ToolError::Service {
                code: ErrorCode::MemoryDisabled,
                message: "memory is disabled".into(),
            },
            ToolError::Remote {
                code: "memory_disabled".into(),
                message: "memory is disabled".into(),
            },
        ] {
            let r = e.payload(Tool::Recall);
            assert_eq!(r["disabled"], true);
            assert_eq!(r["success"], false);
            assert_eq!(r["error_kind"], "memory_disabled");
            assert_eq!(r["error"], "memory is disabled");
            assert_eq!(r["memories"], json!([]));
            for t in [Tool::Store, Tool::Forget] {
                let p = e.payload(t);
                assert_eq!(p["disabled"], true);
                assert!(p.get("memories").is_none(), "{p}");
            }
        }
    }

    #[test]
    fn own_failures_carry_their_code_and_message() {
        let e = ToolError::Arguments {
            tool: Tool::Recall,
            reason: "limit must be an integer".into(),
        };
        assert_eq!(
            e.to_string(),
            "invalid arguments for memory_recall: limit must be an integer"
        );
        let p = e.payload(Tool::Recall);
        assert_eq!(p["error_kind"], "invalid_argument");
        assert!(p.get("disabled").is_none());
        let e = ToolError::RemoteUnavailable {
            url: "http://127.0.0.1:9".into(),
            reason: "cannot connect".into(),
        };
        assert_eq!(e.http_status(), StatusCode::BAD_GATEWAY);
        assert!(!e.is_client_error());
        assert_eq!(e.payload(Tool::Forget)["error_kind"], "remote_unavailable");
    }
}
