//! The values passed to and returned by [`crate::Model::complete`].

use crate::error::ModelError;
use cao_core::settings::ModelProvider;
use std::time::{Duration, Instant};

/// The largest prompt accepted, all messages together: 4 MiB.
pub const MAX_PROMPT_BYTES: usize = 4 << 20;

/// The smallest read limit of an answer ([`Limits::read_limit`]): 1 MiB.
const READ_LIMIT_MIN: usize = 1 << 20;

/// The largest read limit of an answer ([`Limits::read_limit`]): 64 MiB.
const READ_LIMIT_MAX: usize = 64 << 20;

/// Who speaks a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Instructions to the model.
    System,
    /// The request (what a person or the memory system asks).
    User,
    /// An earlier answer of the model (for few-shot examples).
    Assistant,
}

impl Role {
    /// The OpenAI wire name: `system`, `user`, `assistant`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// The text.
    pub content: String,
}

/// What to ask: one or more chat messages, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    messages: Vec<Message>,
}

impl Prompt {
    /// A prompt of one user message.
    pub fn user(text: impl Into<String>) -> Prompt {
        Prompt {
            messages: vec![Message {
                role: Role::User,
                content: text.into(),
            }],
        }
    }

    /// A system message followed by a user message.
    pub fn with_system(system: impl Into<String>, user: impl Into<String>) -> Prompt {
        Prompt {
            messages: vec![
                Message {
                    role: Role::System,
                    content: system.into(),
                },
                Message {
                    role: Role::User,
                    content: user.into(),
                },
            ],
        }
    }

    /// A prompt of the given messages (checked when it is sent: at least one, at most [`MAX_PROMPT_BYTES`]).
    pub fn from_messages(messages: Vec<Message>) -> Prompt {
        Prompt { messages }
    }

    /// The messages, in order.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The prompt as one text, for a program reading stdin: the messages' contents in order, separated by a
    /// blank line. A single user message is sent exactly as written.
    pub fn to_text(&self) -> String {
        self.messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// The same prompt with every message passed through the secret gate's redaction.
    pub(crate) fn redacted(&self) -> Prompt {
        Prompt {
            messages: self
                .messages
                .iter()
                .map(|m| Message {
                    role: m.role,
                    content: cao_core::secret::redact(&m.content),
                })
                .collect(),
        }
    }
}

/// How much a call may produce and until when it may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most tokens the model may generate (sent to endpoints that take it, as `max_tokens`). At least 1.
    pub max_output_tokens: u32,
    /// The most bytes of answer text returned; a longer answer is cut at a UTF-8 boundary and marked
    /// [`Completion::truncated`]. At least 1.
    pub max_output_bytes: usize,
    /// The call returns by then (retries and waits included); past it the call fails with
    /// [`ModelError::Timeout`].
    pub deadline: Instant,
}

impl Limits {
    /// Limits with a deadline `timeout` from now.
    pub fn new(max_output_tokens: u32, max_output_bytes: usize, timeout: Duration) -> Limits {
        let now = Instant::now();
        Limits {
            max_output_tokens,
            max_output_bytes,
            deadline: now
                .checked_add(timeout)
                .unwrap_or(now + Duration::from_secs(86_400 * 365)),
        }
    }

    /// Time left until the deadline (zero once it has passed).
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// How many bytes of a raw answer (an HTTP body, a program's stdout) are read at most before the call fails
    /// with [`ModelError::TooLarge`]: 8 x [`Limits::max_output_bytes`], at least 1 MiB and at most 64 MiB. The
    /// slack covers JSON escaping and terminal noise that cleaning removes.
    pub fn read_limit(&self) -> usize {
        self.max_output_bytes
            .saturating_mul(8)
            .clamp(READ_LIMIT_MIN, READ_LIMIT_MAX)
    }

    /// Check a request before anything is sent.
    ///
    /// Errors: [`ModelError::InvalidRequest`] for no messages, a prompt over [`MAX_PROMPT_BYTES`], or a zero
    /// token or byte limit.
    pub(crate) fn check(&self, prompt: &Prompt) -> Result<(), ModelError> {
        let size: usize = prompt.messages().iter().map(|m| m.content.len()).sum();
        let problem = if prompt.messages().is_empty() {
            Some("the prompt has no message".to_owned())
        } else if size > MAX_PROMPT_BYTES {
            Some(format!(
                "the prompt is {size} bytes; at most {MAX_PROMPT_BYTES} are sent"
            ))
        } else if self.max_output_tokens == 0 || self.max_output_bytes == 0 {
            Some("max_output_tokens and max_output_bytes must be at least 1".to_owned())
        } else {
            None
        };
        problem.map_or(Ok(()), |p| Err(ModelError::InvalidRequest(p)))
    }
}

/// Which model wrote an answer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelInfo {
    /// The provider.
    pub provider: ModelProvider,
    /// The model's name: for `openai` the name the endpoint reports in its answer (cleaned, at most 256 bytes),
    /// else the configured `memory.model.name`; for `command` the configured name, else the program's file name;
    /// `none` for [`crate::NoModel`].
    pub name: String,
}

impl std::fmt::Display for ModelInfo {
    /// `<provider>:<name>`, e.g. `openai:qwen2.5:7b`, `command:claude`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.provider, self.name)
    }
}

/// Token counts an endpoint reported for one call (spend accounting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Tokens of the prompt, when reported.
    pub prompt_tokens: Option<u64>,
    /// Tokens generated, when reported.
    pub completion_tokens: Option<u64>,
}

/// One answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The answer: cleaned (no ANSI sequences or control characters except newline and tab), trimmed, non-empty,
    /// at most [`Limits::max_output_bytes`] bytes. Untrusted: callers validate it for their use.
    pub text: String,
    /// The model that wrote it.
    pub model: ModelInfo,
    /// True when the answer was cut: longer than [`Limits::max_output_bytes`], or the endpoint stopped at the
    /// token limit (`finish_reason` `length`).
    pub truncated: bool,
    /// Token counts, when the endpoint reported them (`openai` only).
    pub usage: Option<Usage>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_text_and_redaction() {
        let p = Prompt::with_system("Summarise.", "line one\nline two");
        assert_eq!(p.to_text(), "Summarise.\n\nline one\nline two");
        assert_eq!(Prompt::user("exact\n").to_text(), "exact\n");
        let key = "AKIAIOSFODNN7EXAMPLE";
        let r = Prompt::user(format!("the key is {key}")).redacted();
        assert!(!r.to_text().contains(key), "{}", r.to_text());
        assert!(r.to_text().contains("[REDACTED:"), "{}", r.to_text());
        assert_eq!(r.messages()[0].role, Role::User);
    }

    #[test]
    fn limits_check_and_read_limit() {
        let l = Limits::new(10, 100, Duration::from_secs(5));
        assert!(l.remaining() > Duration::from_secs(4));
        assert_eq!(l.read_limit(), 1 << 20);
        assert_eq!(Limits::new(1, 1 << 20, Duration::ZERO).read_limit(), 8 << 20);
        assert_eq!(Limits::new(1, usize::MAX, Duration::ZERO).read_limit(), 64 << 20);
        assert_eq!(Limits::new(1, 1, Duration::ZERO).remaining(), Duration::ZERO);
        assert!(Limits::new(1, 1, Duration::MAX).remaining() > Duration::from_secs(86_400));
        assert!(l.check(&Prompt::user("x")).is_ok());
        for (limits, prompt) in [
            (l, Prompt::from_messages(vec![])),
            (l, Prompt::user("x".repeat(MAX_PROMPT_BYTES + 1))),
            (Limits::new(0, 100, Duration::from_secs(1)), Prompt::user("x")),
            (Limits::new(10, 0, Duration::from_secs(1)), Prompt::user("x")),
        ] {
            let err = limits.check(&prompt).expect_err("invalid");
            assert!(matches!(err, ModelError::InvalidRequest(_)), "{err:?}");
            assert!(!err.is_passing());
        }
    }

    #[test]
    fn model_info_displays_provider_and_name() {
        let i = ModelInfo {
            provider: ModelProvider::OpenAi,
            name: "qwen2.5:7b".into(),
        };
        assert_eq!(i.to_string(), "openai:qwen2.5:7b");
    }
}
