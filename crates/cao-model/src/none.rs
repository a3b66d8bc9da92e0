//! The `none` provider: no model at all.

use crate::error::ModelError;
use crate::types::{Completion, Limits, ModelInfo, Prompt};
use cao_core::settings::ModelProvider;

/// The `none` provider (the default): offline and deterministic. [`crate::Model::complete`] always returns
/// [`ModelError::NoModel`], so callers take their non-model path (for summaries: [`crate::extractive`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoModel {
    info: ModelInfo,
}

impl NoModel {
    /// The `none` model; its [`ModelInfo`] is provider `none`, name `none`.
    pub fn new() -> NoModel {
        NoModel {
            info: ModelInfo {
                provider: ModelProvider::None,
                name: "none".to_owned(),
            },
        }
    }
}

impl Default for NoModel {
    fn default() -> Self {
        NoModel::new()
    }
}

impl crate::Model for NoModel {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Always [`ModelError::NoModel`], whatever the prompt and limits.
    fn complete(&self, _prompt: &Prompt, _limits: &Limits) -> Result<Completion, ModelError> {
        Err(ModelError::NoModel)
    }
}
