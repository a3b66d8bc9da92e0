//! The secret gate: an ordered list of named credential patterns (spec/reference-facts.md "Secret gate").

/// Pattern names in match order.
pub const PATTERN_NAMES: [&str; 12] = [
    "aws_access_key",
    "aws_secret_access_key",
    "pem_private_key",
    "anthropic_api_key",
    "openai_api_key",
    "github_fine_grained_pat",
    "github_pat",
    "gitlab_pat",
    "slack_token",
    "jwt",
    "bearer_token",
    "secret_assignment",
];

/// The name of the first pattern (in [`PATTERN_NAMES`] order) that matches `text` with invisible characters
/// removed, or `None`.
pub fn scan(text: &str) -> Option<&'static str> {
    let _ = text;
    todo!("implemented by the secret gate change")
}

/// `text` with every match of every pattern replaced by `[REDACTED:<name>]`.
pub fn redact(text: &str) -> String {
    let _ = text;
    todo!("implemented by the secret gate change")
}
