//! The JSON error body of every API route: `{"error": "<stable snake_case code>", "message": "<one line>"}`.

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use cao_lifecycle::LifecycleError;
use cao_memory::MemoryError;
use serde::Serialize;
use utoipa::ToSchema;

/// The body of every error response.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorBody {
    /// Stable snake_case code: a `MemoryError::kind` (`invalid_argument`, `memory_disabled`, `not_found`,
    /// `secret_detected`, `scope_not_allowed`, `private_scope`, `index_error`, ...), a relationship code (`missing_memory`,
    /// `refused`), `invalid_key`, `bad_request` or `internal_error`.
    pub error: String,
    /// One actionable line naming the offending value.
    pub message: String,
}

/// An error response: status plus [`ErrorBody`].
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Stable code.
    pub code: String,
    /// Message.
    pub message: String,
}

impl ApiError {
    /// An error with an explicit status and code.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        Self {
            status,
            code: code.to_owned(),
            message: message.into(),
        }
    }

    /// 422 `invalid_argument`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_argument", message)
    }

    /// 422 `invalid_key` for a key outside `^[a-z0-9-]{1,60}$`.
    pub fn invalid_key(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_key", message)
    }

    /// 404 `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 404 `memory_disabled` (every memory route while `memory.enabled` is false).
    pub fn disabled() -> Self {
        let e = MemoryError::Disabled;
        Self::new(StatusCode::NOT_FOUND, e.kind(), e.to_string())
    }

    /// 500 `internal_error`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", message)
    }

    /// The status of a stable error code (shared by service errors and MCP tool payloads' `error_kind`).
    pub fn status_of(code: &str) -> StatusCode {
        match code {
            "invalid_argument" | "invalid_key" | "secret_detected" | "missing_memory" | "invalid_bundle" => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            "memory_disabled" | "not_found" => StatusCode::NOT_FOUND,
            "scope_not_allowed" | "private_scope" => StatusCode::FORBIDDEN,
            "refused" => StatusCode::CONFLICT,
            "bad_request" => StatusCode::BAD_REQUEST,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// An error from a stable code and message, with [`ApiError::status_of`] the code.
    pub fn from_code(code: &str, message: impl Into<String>) -> Self {
        Self::new(Self::status_of(code), code, message)
    }
}

impl From<MemoryError> for ApiError {
    fn from(e: MemoryError) -> Self {
        if !e.is_client_error() {
            tracing::warn!(kind = e.kind(), error = %e, "memory API call failed");
        }
        Self::from_code(e.kind(), e.to_string())
    }
}

impl From<cao_mcp::ToolError> for ApiError {
    /// A memory backend's failure: the owner's relayed code, 502 `remote_unavailable` when the remote owner cannot
    /// be used, else the code of the failure.
    fn from(e: cao_mcp::ToolError) -> Self {
        match e {
            cao_mcp::ToolError::Memory(m) => m.into(),
            cao_mcp::ToolError::Remote { code, message } => Self::from_code(&code, message),
            e @ cao_mcp::ToolError::RemoteUnavailable { .. } => {
                tracing::warn!(error = %e, "memory owner unavailable");
                Self::new(StatusCode::BAD_GATEWAY, e.kind(), e.to_string())
            }
            e => Self::new(StatusCode::INTERNAL_SERVER_ERROR, e.kind(), e.to_string()),
        }
    }
}

impl From<LifecycleError> for ApiError {
    fn from(e: LifecycleError) -> Self {
        let code = match &e {
            LifecycleError::Invalid(_) => "invalid_argument",
            LifecycleError::Index(_) => {
                tracing::warn!(error = %e, "relationship API call failed");
                "index_error"
            }
            other => other.kind(),
        };
        Self::from_code(code, e.to_string())
    }
}

impl From<cao_index::IndexError> for ApiError {
    fn from(e: cao_index::IndexError) -> Self {
        MemoryError::from(e).into()
    }
}

impl From<QueryRejection> for ApiError {
    fn from(e: QueryRejection) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", e.body_text())
    }
}

impl From<JsonRejection> for ApiError {
    fn from(e: JsonRejection) -> Self {
        let status = match &e {
            JsonRejection::JsonDataError(_) => StatusCode::UNPROCESSABLE_ENTITY,
            _ => StatusCode::BAD_REQUEST,
        };
        let code = if status == StatusCode::BAD_REQUEST {
            "bad_request"
        } else {
            "invalid_argument"
        };
        Self::new(status, code, e.body_text())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(ErrorBody {
                error: self.code,
                message: self.message,
            }),
        )
            .into_response()
    }
}

/// Result of an API handler.
pub type ApiResult<T> = Result<T, ApiError>;
