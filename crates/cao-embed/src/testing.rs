//! A tiny random-weight BERT for tests: a complete model directory with a small WordPiece
//! vocabulary, written without any network access. Its vectors carry no meaning; identical texts get identical
//! vectors and different texts almost surely different ones.

use candle_core::{DType, Device};
use candle_nn::{VarBuilder, VarMap};
use candle_transformers::models::bert::BertModel;
use serde_json::json;
use std::path::Path;

/// Words of the tiny vocabulary (after the five special tokens; ids 5..).
pub const TINY_WORDS: &[&str] = &[
    "the", "a", "cat", "dog", "sat", "on", "mat", "rug", "was", "sitting", "stock", "prices", "fell", "rose", "we",
    "use", "pytest", "for", "tests", "deploy", "friday", "database", "is", "postgres", "sqlite", "memory", "recall",
    "hello", "world", "apple", "banana", "##s", "##ing", "##ed", ".", ",", "!", "?",
];

/// Hidden size (and output dimension) of the tiny model.
pub const TINY_DIM: usize = 32;

/// The `config.json` of the tiny model.
pub fn tiny_config() -> serde_json::Value {
    json!({
        "architectures": ["BertModel"],
        "attention_probs_dropout_prob": 0.1,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": TINY_DIM,
        "initializer_range": 0.02,
        "intermediate_size": 64,
        "layer_norm_eps": 1e-12,
        "max_position_embeddings": 64,
        "model_type": "bert",
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "type_vocab_size": 2,
        "vocab_size": 5 + TINY_WORDS.len()
    })
}

/// The `tokenizer.json` of the tiny model: BERT normaliser and pre-tokeniser, WordPiece over [`TINY_WORDS`],
/// `[CLS] ... [SEP]`.
pub fn tiny_tokenizer() -> serde_json::Value {
    let mut vocab = serde_json::Map::new();
    for (i, t) in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"].iter().enumerate() {
        vocab.insert((*t).to_owned(), json!(i));
    }
    for (i, w) in TINY_WORDS.iter().enumerate() {
        vocab.insert((*w).to_owned(), json!(5 + i));
    }
    let special = |id: u32, content: &str| {
        json!({"id": id, "special": true, "content": content, "single_word": false, "lstrip": false,
               "rstrip": false, "normalized": false})
    };
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [special(0, "[PAD]"), special(1, "[UNK]"), special(2, "[CLS]"), special(3, "[SEP]"),
                          special(4, "[MASK]")],
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                       "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}
            }
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab}
    })
}

/// Write a complete tiny model directory into `dir` (created if needed): `config.json`, `tokenizer.json`, and
/// `model.safetensors` with random weights of the right shapes.
///
/// Errors: a message when a file cannot be written or candle cannot build the weights.
pub fn write_tiny_model(dir: &Path) -> Result<(), String> {
    cao_core::fs::create_private_dir_all(dir).map_err(|e| e.to_string())?;
    let config = tiny_config();
    let text = |v: &serde_json::Value| serde_json::to_vec_pretty(v).map_err(|e| e.to_string());
    cao_core::fs::atomic_write(&dir.join(crate::CONFIG_FILE), &text(&config)?).map_err(|e| e.to_string())?;
    cao_core::fs::atomic_write(&dir.join(crate::TOKENIZER_FILE), &text(&tiny_tokenizer())?)
        .map_err(|e| e.to_string())?;
    let parsed: candle_transformers::models::bert::Config =
        serde_json::from_value(config).map_err(|e| e.to_string())?;
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
    BertModel::load(vb, &parsed).map_err(|e| e.to_string())?;
    varmap.save(dir.join(crate::WEIGHTS_FILE)).map_err(|e| e.to_string())
}
