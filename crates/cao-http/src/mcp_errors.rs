//! JSON-RPC error bodies for `/mcp` requests rmcp refuses before they reach a handler.
//!
//! rmcp's streamable HTTP service answers a body it cannot read with `415` and a line of plain text, whatever was
//! wrong with it. A JSON-RPC client reads JSON: this layer, around the rmcp service only, answers
//! - a `POST` whose body is not a JSON text (or not UTF-8): `400` with JSON-RPC 2.0's parse error,
//!   `{"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error: ..."}}`, without calling
//!   rmcp;
//! - any other refusal of rmcp that is not already JSON (JSON that is not a JSON-RPC message, a wrong
//!   `Content-Type` or `Accept`, a method `/mcp` does not serve): the same shape with `-32600` (invalid request)
//!   and rmcp's text as the message, keeping rmcp's status except that an unreadable message is `400` rather
//!   than `415`.
//!
//! The MCP specification (streamable HTTP transport) allows exactly this: an HTTP error status whose body is a
//! JSON-RPC error response without an id. Successful answers pass through unchanged.

use crate::MAX_BODY_BYTES;
use axum::body::{Body, to_bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// JSON-RPC 2.0's parse error code.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC 2.0's invalid request code.
const INVALID_REQUEST: i64 = -32600;
/// At most this much of rmcp's refusal text is read into the message.
const MAX_REFUSAL_TEXT: usize = 4096;

/// The middleware (for `axum::middleware::from_fn`) described in the module docs.
pub(crate) async fn json_rpc_errors(request: Request, next: Next) -> Response {
    let request = if request.method() == Method::POST {
        let (parts, body) = request.into_parts();
        // The edge layer has already refused a body over the limit.
        let bytes = match to_bytes(body, MAX_BODY_BYTES).await {
            Ok(bytes) => bytes,
            Err(e) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    INVALID_REQUEST,
                    &format!("cannot read the body: {e}"),
                );
            }
        };
        if let Some(why) = not_json(&bytes) {
            return error(StatusCode::BAD_REQUEST, PARSE_ERROR, &format!("Parse error: {why}"));
        }
        Request::from_parts(parts, Body::from(bytes))
    } else {
        request
    };
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) || is_json(&response) {
        return response;
    }
    let text = match to_bytes(response.into_body(), MAX_REFUSAL_TEXT).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
        Err(_) => String::new(),
    };
    let text = if text.is_empty() {
        status.canonical_reason().unwrap_or("refused").to_owned()
    } else {
        text
    };
    // rmcp says 415 for a JSON body it cannot read as a JSON-RPC message: that is a bad request, not a media type.
    let status = if status == StatusCode::UNSUPPORTED_MEDIA_TYPE && text.starts_with("fail to deserialize") {
        StatusCode::BAD_REQUEST
    } else {
        status
    };
    error(status, INVALID_REQUEST, &format!("Invalid request: {text}"))
}

/// Why `body` is not a JSON text (RFC 8259: UTF-8, one value), or `None` when it is one.
fn not_json(body: &[u8]) -> Option<String> {
    let text = match std::str::from_utf8(body) {
        Ok(text) => text,
        Err(e) => return Some(format!("the body is not UTF-8: {e}")),
    };
    serde_json::from_str::<serde::de::IgnoredAny>(text)
        .err()
        .map(|e| e.to_string())
}

/// Whether `response` already carries JSON.
fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

/// A JSON-RPC 2.0 error response with a `null` id.
fn error(status: StatusCode, code: i64, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    let mut response = (status, body.to_string()).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_json_texts_pass() {
        assert_eq!(not_json(br#"{"jsonrpc":"2.0"}"#), None);
        assert_eq!(not_json(b"[1]"), None);
        for bad in [&b""[..], b"{", b"not json", b"{} {}", b"\"\xff\""] {
            assert!(not_json(bad).is_some(), "{bad:?}");
        }
    }
}
