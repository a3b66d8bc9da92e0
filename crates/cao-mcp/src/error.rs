//! Tool failures: [`ToolError`] (defined with the protocol in `cao-protocol`, so the remote client shares it) and
//! the payload of a call made while memory is disabled.

use cao_memory::MemoryError;
use cao_protocol::Tool;
use serde_json::Value;

pub(crate) use cao_protocol::ToolError;

/// The payload of `tool` while memory is disabled (`memory.enabled` false / `CAO_MEMORY_ENABLED=false`):
/// `{"success": false, "disabled": true, "error": <message>, "error_kind": "memory_disabled"}`, plus
/// `"memories": []` for `memory_recall` (reference notes g).
pub fn disabled_payload(tool: Tool) -> Value {
    ToolError::from(MemoryError::Disabled).payload(tool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn error_payload_carries_message_and_kind() {
        let e = ToolError::from(MemoryError::Invalid("invalid sort_by \"x\"".into()));
        let p = e.payload(Tool::Recall);
        assert_eq!(p["success"], false);
        assert_eq!(p["error_kind"], "invalid_argument");
        assert_eq!(p["error"], "invalid sort_by \"x\"");
        assert!(p.get("disabled").is_none());
    }

    #[test]
    fn disabled_payload_has_memories_only_for_recall() {
        let r = disabled_payload(Tool::Recall);
        assert_eq!(r["disabled"], true);
        assert_eq!(r["memories"], json!([]));
        let s = disabled_payload(Tool::Store);
        assert_eq!(s["disabled"], true);
        assert!(s.get("memories").is_none());
        assert!(s["error"].as_str().is_some_and(|m| m.starts_with("memory is disabled")));
        assert_eq!(
            ToolError::from(MemoryError::Disabled).payload(Tool::Forget),
            disabled_payload(Tool::Forget)
        );
    }

    #[test]
    fn service_errors_keep_their_code_and_message() {
        for e in [
            MemoryError::Invalid("bad".into()),
            MemoryError::Disabled,
            MemoryError::ExplainDisabled,
        ] {
            let (kind, message, client) = (e.kind(), e.to_string(), e.is_client_error());
            let t = ToolError::from(e);
            assert_eq!((t.kind(), t.to_string(), t.is_client_error()), (kind, message, client));
        }
    }
}
