//! The JSON error body of every API route: `{"error": "<stable snake_case code>", "message": "<one line>"}`.

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use cao_lifecycle::LifecycleError;
use cao_memory::MemoryError;
use cao_protocol::{ErrorCode, ToolError};
use serde::Serialize;
use utoipa::ToSchema;

/// The body of every error response.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorBody {
    /// Stable snake_case code: an [`ErrorCode`] (`invalid_argument`, `memory_disabled`, `not_found`,
    /// `secret_detected`, `scope_not_allowed`, `private_scope`, `invalid_bundle`, `index_error`, `missing_memory`, `refused`, `invalid_key`,
    /// `bad_request`, `internal_error`, `remote_unavailable`, ...), or a remote owner's code relayed as it is.
    pub error: String,
    /// One actionable line naming the offending value.
    pub message: String,
}

/// An error response: status plus [`ErrorBody`]. The status of a code is [`ErrorCode::http_status`].
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
    /// An error with an explicit status and code (codes outside [`ErrorCode`], such as a relayed owner's).
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        Self {
            status,
            code: code.to_owned(),
            message: message.into(),
        }
    }

    /// An error carrying `code`, with that code's status ([`ErrorCode::http_status`]).
    pub fn from_code(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(code.http_status(), code.as_str(), message)
    }

    /// 422 `invalid_argument`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::from_code(ErrorCode::InvalidArgument, message)
    }

    /// 422 `invalid_key` for a key outside `^[a-z0-9-]{1,60}$`.
    pub fn invalid_key(message: impl Into<String>) -> Self {
        Self::from_code(ErrorCode::InvalidKey, message)
    }

    /// 404 `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::from_code(ErrorCode::NotFound, message)
    }

    /// 404 `memory_disabled` (every memory route while `memory.enabled` is false).
    pub fn disabled() -> Self {
        MemoryError::Disabled.into()
    }

    /// 500 `internal_error`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::from_code(ErrorCode::InternalError, message)
    }
}

impl From<MemoryError> for ApiError {
    fn from(e: MemoryError) -> Self {
        if !e.is_client_error() {
            tracing::warn!(kind = e.kind(), error = %e, "memory API call failed");
        }
        Self::from_code(e.code(), e.to_string())
    }
}

impl From<ToolError> for ApiError {
    /// A memory backend's failure, as the tool's payload would report it: the owner's relayed code (with its
    /// status), 502 `remote_unavailable` when the remote owner cannot be used, else the failure's own code.
    fn from(e: ToolError) -> Self {
        match &e {
            ToolError::RemoteUnavailable { .. } => tracing::warn!(error = %e, "memory owner unavailable"),
            e if !e.is_client_error() => tracing::warn!(kind = e.error_kind(), error = %e, "memory API call failed"),
            _ => {}
        }
        Self::new(e.http_status(), e.error_kind(), e.to_string())
    }
}

impl From<LifecycleError> for ApiError {
    fn from(e: LifecycleError) -> Self {
        let code = match &e {
            LifecycleError::Invalid(_) => ErrorCode::InvalidArgument,
            LifecycleError::NotFound { .. } => ErrorCode::NotFound,
            LifecycleError::MissingMemory { .. } => ErrorCode::MissingMemory,
            LifecycleError::Refused { .. } => ErrorCode::Refused,
            LifecycleError::Secret { .. } => ErrorCode::SecretDetected,
            LifecycleError::Store(cao_store::StoreError::Unavailable(_)) => ErrorCode::StoreUnavailable,
            LifecycleError::Store(s) => {
                tracing::warn!(error = %e, "relationship API call failed");
                match cao_core::fs::fault::classify_chain(s) {
                    Some(cao_core::fs::fault::StorageFault::Full) => ErrorCode::StorageFull,
                    Some(cao_core::fs::fault::StorageFault::ReadOnly) => ErrorCode::StorageReadOnly,
                    None => ErrorCode::IndexError,
                }
            }
        };
        Self::from_code(code, e.to_string())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(e: QueryRejection) -> Self {
        Self::from_code(ErrorCode::BadRequest, e.body_text())
    }
}

impl From<JsonRejection> for ApiError {
    fn from(e: JsonRejection) -> Self {
        let code = match &e {
            JsonRejection::JsonDataError(_) => ErrorCode::InvalidArgument,
            _ => ErrorCode::BadRequest,
        };
        Self::from_code(code, e.body_text())
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
