//! `cao-embed`: sentence embeddings from a local BERT-family model, run on the CPU in f32 with candle (layer 1;
//! depends on no other workspace crate).
//!
//! A model directory holds `config.json` (the BERT configuration), `tokenizer.json` (a Hugging Face tokenizer) and
//! `model.safetensors` (the weights), optionally `1_Pooling/config.json` and `sentence_bert_config.json` (the
//! sentence-transformers pooling mode and maximum sequence length). [`Embedder::load`] reads them and
//! [`Embedder::embed`] turns texts into unit-length vectors the way sentence-transformers does: tokenise (truncated
//! to the model's maximum sequence length), run the encoder, pool the last hidden state (mean over the attention
//! mask for all-MiniLM-L6-v2, the `[CLS]` token for bge-small-en-v1.5), L2-normalise. The cosine similarity of two
//! texts is then the dot product of their vectors ([`dot`]). The linear layers' weights are kept transposed (see
//! `encoder_tensors`) and candle's matrix products use `gemm`'s AVX-512 kernels where the CPU has them; a caller
//! that has other work meanwhile embeds one text on the embedder's own thread ([`Embedder::spawn_one`]).
//!
//! Invariants:
//! - A model's files are untrusted input: each is read within a size bound ([`MAX_CONFIG_BYTES`],
//!   [`MAX_TOKENIZER_BYTES`], [`MAX_WEIGHTS_BYTES`]), the configuration is checked for sizes the encoder can run,
//!   the weights are checked for shape by candle, and every failure is an [`EmbedError`], never a panic.
//! - Known models ([`KNOWN_MODELS`]) are recognised by the SHA-256 of `model.safetensors`; a directory claiming a
//!   known model's name through its configuration but holding other weights is not a known model. An unknown
//!   directory loads with a warning (its vectors are labelled with its hash, [`Embedder::model_id`]).
//! - Every vector [`Embedder::embed`] returns has [`Embedder::dim`] finite components and unit L2 norm (a text the
//!   encoder maps to the zero vector stays zero).
//!
//! docs/decisions/0011-dense-recall.md records why candle and these pooling rules.

pub mod install;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, mpsc};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

/// Largest accepted `config.json` (and pooling / sentence configuration) in bytes.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// Largest accepted `tokenizer.json` in bytes.
pub const MAX_TOKENIZER_BYTES: u64 = 64 << 20;
/// Largest accepted `model.safetensors` in bytes (1 GiB: the small sentence encoders this crate is for weigh
/// 90-130 MB).
pub const MAX_WEIGHTS_BYTES: u64 = 1 << 30;
/// Most texts one [`Embedder::embed`] call runs through the encoder at once (longer inputs are split into batches).
pub const MAX_BATCH: usize = 32;
/// Longest token sequence ever run (a configuration may ask for less).
pub const MAX_SEQUENCE_TOKENS: usize = 512;

/// The file names of a model directory.
pub const CONFIG_FILE: &str = "config.json";
/// The tokenizer file of a model directory.
pub const TOKENIZER_FILE: &str = "tokenizer.json";
/// The weights file of a model directory.
pub const WEIGHTS_FILE: &str = "model.safetensors";
/// Files a model directory must hold.
pub const REQUIRED_FILES: [&str; 3] = [CONFIG_FILE, TOKENIZER_FILE, WEIGHTS_FILE];

/// How the encoder's last hidden state becomes one vector per text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// Mean of the token vectors under the attention mask (sentence-transformers `pooling_mode_mean_tokens`).
    Mean,
    /// The first token's vector (`[CLS]`; `pooling_mode_cls_token`).
    Cls,
}

/// A model whose weights this crate recognises by hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownModel {
    /// Short name used on the command line (`cao models install minilm`).
    pub short: &'static str,
    /// The model's name, also the model id stored with its vectors.
    pub name: &'static str,
    /// The Hugging Face hub repository the files come from.
    pub hub_repo: &'static str,
    /// Lower-case hex SHA-256 of `model.safetensors`.
    pub sha256: &'static str,
    /// Size of `model.safetensors` in bytes.
    pub weights_bytes: u64,
    /// Pooling the model was trained with.
    pub pooling: Pooling,
    /// Maximum sequence length (tokens) sentence-transformers runs it with.
    pub max_tokens: usize,
    /// Output dimension.
    pub dim: usize,
}

/// all-MiniLM-L6-v2 (sentence-transformers; mean pooling, 256 tokens, 384 dimensions): the default model.
pub const MINILM_L6_V2: KnownModel = KnownModel {
    short: "minilm",
    name: "all-MiniLM-L6-v2",
    hub_repo: "sentence-transformers/all-MiniLM-L6-v2",
    sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    weights_bytes: 90_868_376,
    pooling: Pooling::Mean,
    max_tokens: 256,
    dim: 384,
};

/// The models recognised by hash. bge-small-en-v1.5 (CLS pooling) loads as an unknown model: its
/// `1_Pooling/config.json` selects CLS pooling (docs/decisions/0011-dense-recall.md).
pub const KNOWN_MODELS: &[KnownModel] = &[MINILM_L6_V2];

/// The known model with short name or name `name` (case-insensitive).
pub fn known_model(name: &str) -> Option<&'static KnownModel> {
    KNOWN_MODELS
        .iter()
        .find(|m| m.short.eq_ignore_ascii_case(name) || m.name.eq_ignore_ascii_case(name))
}

/// Why a model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// A required file of the model directory is missing.
    #[error(
        "model directory {dir}: {file} is missing (a model directory holds config.json, tokenizer.json and model.safetensors)"
    )]
    MissingFile {
        /// The model directory.
        dir: PathBuf,
        /// The missing file's name.
        file: &'static str,
    },
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file is larger than its bound.
    #[error("{path} is larger than {max} bytes")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The bound in bytes.
        max: u64,
    },
    /// `config.json` (or a pooling / sentence configuration) is not a usable configuration.
    #[error("bad model configuration {path}: {reason}")]
    BadConfig {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// `tokenizer.json` is not a usable tokenizer.
    #[error("bad tokenizer {path}: {reason}")]
    BadTokenizer {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The weights do not fit the configuration or are not valid safetensors.
    #[error("bad model weights {path}: {reason}")]
    BadWeights {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The weights' hash differs from the one pinned for the model the caller asked for.
    #[error("{path}: SHA-256 {actual} is not the pinned {expected} of {model}")]
    HashMismatch {
        /// The weights file.
        path: PathBuf,
        /// The model expected.
        model: &'static str,
        /// The pinned hash.
        expected: &'static str,
        /// The file's hash.
        actual: String,
    },
    /// Tokenising or running the encoder failed.
    #[error("embedding failed: {0}")]
    Inference(String),
}

/// Read `path` whole, refusing files over `max` bytes.
///
/// Errors: [`EmbedError::Io`], [`EmbedError::TooLarge`].
pub fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, EmbedError> {
    let io = |source| EmbedError::Io {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    if len > max {
        return Err(EmbedError::TooLarge {
            path: path.to_owned(),
            max,
        });
    }
    let mut buf = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(max + 1).read_to_end(&mut buf).map_err(io)?;
    if buf.len() as u64 > max {
        return Err(EmbedError::TooLarge {
            path: path.to_owned(),
            max,
        });
    }
    Ok(buf)
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The known model whose pinned hash is `sha256`, if any.
pub fn known_by_hash(sha256: &str) -> Option<&'static KnownModel> {
    KNOWN_MODELS.iter().find(|m| m.sha256 == sha256)
}

/// What a model directory holds, without the encoder: see [`inspect_dir`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    /// The model id its vectors are stored under: a known model's name, otherwise `sha256:` and the first 16 hex
    /// digits of the weights' hash.
    pub model_id: String,
    /// The known model, when the weights' hash is pinned.
    pub known: Option<&'static KnownModel>,
    /// Lower-case hex SHA-256 of `model.safetensors`.
    pub sha256: String,
    /// Output dimension (`hidden_size`).
    pub dim: usize,
}

/// Check that `dir` is a model directory (the three files exist, the configuration is valid) and hash its weights,
/// without building the encoder.
///
/// Errors: [`EmbedError::MissingFile`], [`EmbedError::Io`], [`EmbedError::TooLarge`], [`EmbedError::BadConfig`].
pub fn inspect_dir(dir: &Path) -> Result<ModelInfo, EmbedError> {
    let (config, _) = read_config(dir)?;
    let weights = read_bounded(&required(dir, WEIGHTS_FILE)?, MAX_WEIGHTS_BYTES)?;
    let sha256 = sha256_hex(&weights);
    Ok(info_of(&sha256, &config))
}

fn info_of(sha256: &str, config: &Config) -> ModelInfo {
    let known = known_by_hash(sha256);
    ModelInfo {
        model_id: model_id_of(known, sha256),
        known,
        sha256: sha256.to_owned(),
        dim: config.hidden_size,
    }
}

fn model_id_of(known: Option<&KnownModel>, sha256: &str) -> String {
    match known {
        Some(k) => k.name.to_owned(),
        None => format!("sha256:{}", &sha256[..16.min(sha256.len())]),
    }
}

fn required(dir: &Path, file: &'static str) -> Result<PathBuf, EmbedError> {
    let path = dir.join(file);
    if path.is_file() {
        Ok(path)
    } else {
        Err(EmbedError::MissingFile {
            dir: dir.to_owned(),
            file,
        })
    }
}

/// Bounds on the configuration: a sentence encoder of this crate's size, never a value that makes the encoder
/// divide by zero or allocate without bound.
fn check_config(config: &Config) -> Result<(), String> {
    let bounded = |name: &str, v: usize, max: usize| {
        if (1..=max).contains(&v) {
            Ok(())
        } else {
            Err(format!("{name} must be from 1 to {max}; got {v}"))
        }
    };
    bounded("vocab_size", config.vocab_size, 1_000_000)?;
    bounded("hidden_size", config.hidden_size, 4096)?;
    bounded("num_hidden_layers", config.num_hidden_layers, 48)?;
    bounded("num_attention_heads", config.num_attention_heads, 64)?;
    bounded("intermediate_size", config.intermediate_size, 16_384)?;
    bounded("max_position_embeddings", config.max_position_embeddings, 8192)?;
    bounded("type_vocab_size", config.type_vocab_size, 16)?;
    if !config.hidden_size.is_multiple_of(config.num_attention_heads) {
        return Err(format!(
            "hidden_size {} is not a multiple of num_attention_heads {}",
            config.hidden_size, config.num_attention_heads
        ));
    }
    if config.pad_token_id >= config.vocab_size {
        return Err(format!(
            "pad_token_id {} is outside the vocabulary",
            config.pad_token_id
        ));
    }
    if !(config.layer_norm_eps.is_finite() && config.layer_norm_eps > 0.0) {
        return Err("layer_norm_eps must be a positive number".into());
    }
    Ok(())
}

fn bad_config(path: &Path, reason: impl ToString) -> EmbedError {
    EmbedError::BadConfig {
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}

fn read_config(dir: &Path) -> Result<(Config, PathBuf), EmbedError> {
    let path = required(dir, CONFIG_FILE)?;
    let bytes = read_bounded(&path, MAX_CONFIG_BYTES)?;
    let config: Config = serde_json::from_slice(&bytes).map_err(|e| bad_config(&path, e))?;
    check_config(&config).map_err(|e| bad_config(&path, e))?;
    Ok((config, path))
}

/// The optional sentence-transformers files: pooling mode (`1_Pooling/config.json`) and maximum sequence length
/// (`sentence_bert_config.json`). Absent files give `None`; present ones must parse.
fn sentence_config(dir: &Path) -> Result<(Option<Pooling>, Option<usize>), EmbedError> {
    #[derive(serde::Deserialize)]
    struct PoolingConfig {
        #[serde(default)]
        pooling_mode_cls_token: bool,
        #[serde(default)]
        pooling_mode_mean_tokens: bool,
    }
    #[derive(serde::Deserialize)]
    struct SentenceConfig {
        max_seq_length: Option<usize>,
    }
    let pooling_path = dir.join("1_Pooling").join("config.json");
    let pooling = if pooling_path.is_file() {
        let bytes = read_bounded(&pooling_path, MAX_CONFIG_BYTES)?;
        let p: PoolingConfig = serde_json::from_slice(&bytes).map_err(|e| bad_config(&pooling_path, e))?;
        match (p.pooling_mode_cls_token, p.pooling_mode_mean_tokens) {
            (true, false) => Some(Pooling::Cls),
            (false, true) => Some(Pooling::Mean),
            _ => {
                return Err(bad_config(
                    &pooling_path,
                    "exactly one of pooling_mode_cls_token and pooling_mode_mean_tokens must be true",
                ));
            }
        }
    } else {
        None
    };
    let sentence_path = dir.join("sentence_bert_config.json");
    let max = if sentence_path.is_file() {
        let bytes = read_bounded(&sentence_path, MAX_CONFIG_BYTES)?;
        let s: SentenceConfig = serde_json::from_slice(&bytes).map_err(|e| bad_config(&sentence_path, e))?;
        s.max_seq_length
    } else {
        None
    };
    Ok((pooling, max))
}

/// A loaded sentence encoder. `Send + Sync`; [`Embedder::embed`] takes `&self`.
pub struct Embedder {
    model: BertModel,
    tokenizer: Tokenizer,
    pooling: Pooling,
    dim: usize,
    info: ModelInfo,
    /// The thread of [`Embedder::spawn_one`], started on its first call (`None` inside: it could not be started).
    worker: OnceLock<Option<rayon::ThreadPool>>,
    /// The thread of [`Embedder::embed_in_background`], started on its first call (`None` inside: it could not be
    /// started).
    background: OnceLock<Option<rayon::ThreadPool>>,
}

/// A text being embedded on the embedder's own thread ([`Embedder::spawn_one`]); [`PendingEmbedding::wait`] gives
/// its vector.
#[derive(Debug)]
pub struct PendingEmbedding {
    result: OnceLock<Embedded>,
    receiver: Mutex<Option<mpsc::Receiver<Embedded>>>,
}

/// What the embedding thread answers.
type Embedded = Result<Vec<f32>, EmbedError>;

impl PendingEmbedding {
    /// A pending embedding that is already done: `vector` (a cached query vector, for instance).
    pub fn ready(vector: Vec<f32>) -> PendingEmbedding {
        let pending = PendingEmbedding {
            result: OnceLock::new(),
            receiver: Mutex::new(None),
        };
        let _ = pending.result.set(Ok(vector));
        pending
    }

    /// The vector (as [`Embedder::embed_one`] returns it), waiting for it on the first call.
    ///
    /// Errors: [`Embedder::embed_one`]'s, and [`EmbedError::Inference`] when the thread stopped without an answer.
    pub fn wait(&self) -> Result<&[f32], &EmbedError> {
        self.result
            .get_or_init(|| {
                let receiver = self.receiver.lock().unwrap_or_else(PoisonError::into_inner).take();
                receiver.and_then(|r| r.recv().ok()).unwrap_or_else(|| {
                    Err(EmbedError::Inference(
                        "the embedding thread stopped without an answer".into(),
                    ))
                })
            })
            .as_deref()
    }

    /// The vector, owned (waiting for it as [`PendingEmbedding::wait`] does).
    ///
    /// Errors: as [`PendingEmbedding::wait`].
    pub fn into_vector(self) -> Result<Vec<f32>, EmbedError> {
        let _ = self.wait();
        self.result.into_inner().unwrap_or_else(|| {
            Err(EmbedError::Inference(
                "the embedding thread stopped without an answer".into(),
            ))
        })
    }
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("model_id", &self.info.model_id)
            .field("pooling", &self.pooling)
            .field("dim", &self.dim)
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// Load the model directory `dir` (see the crate documentation for its files). A known model (by the weights'
    /// hash) uses its pinned pooling and sequence length; any other directory loads with a warning, pooling from
    /// `1_Pooling/config.json` (mean when absent) and its sequence length from `sentence_bert_config.json` (else the
    /// configuration's positions), at most [`MAX_SEQUENCE_TOKENS`].
    ///
    /// Errors: [`EmbedError::MissingFile`], [`EmbedError::Io`], [`EmbedError::TooLarge`], [`EmbedError::BadConfig`],
    /// [`EmbedError::BadTokenizer`] (unparsable, or token ids outside the model's vocabulary),
    /// [`EmbedError::BadWeights`] (not safetensors, or a tensor missing or of the wrong shape).
    pub fn load(dir: &Path) -> Result<Embedder, EmbedError> {
        Self::load_inner(dir, None)
    }

    /// [`Embedder::load`], requiring the weights to be `expected`'s (by hash).
    ///
    /// Errors: [`EmbedError::HashMismatch`] when they are not, and those of [`Embedder::load`].
    pub fn load_expecting(dir: &Path, expected: &'static KnownModel) -> Result<Embedder, EmbedError> {
        Self::load_inner(dir, Some(expected))
    }

    fn load_inner(dir: &Path, expected: Option<&'static KnownModel>) -> Result<Embedder, EmbedError> {
        let (config, config_path) = read_config(dir)?;
        let weights_path = required(dir, WEIGHTS_FILE)?;
        let tokenizer_path = required(dir, TOKENIZER_FILE)?;
        let weights = read_bounded(&weights_path, MAX_WEIGHTS_BYTES)?;
        let sha256 = sha256_hex(&weights);
        let info = info_of(&sha256, &config);
        if let Some(exp) = expected
            && exp.sha256 != sha256
        {
            return Err(EmbedError::HashMismatch {
                path: weights_path,
                model: exp.name,
                expected: exp.sha256,
                actual: sha256,
            });
        }
        let (file_pooling, file_max) = sentence_config(dir)?;
        let (pooling, max_tokens) = match info.known {
            Some(k) => {
                if k.dim != config.hidden_size {
                    return Err(bad_config(
                        &config_path,
                        format!(
                            "{} has {} dimensions; hidden_size is {}",
                            k.name, k.dim, config.hidden_size
                        ),
                    ));
                }
                (k.pooling, k.max_tokens)
            }
            None => {
                tracing::warn!(
                    dir = %dir.display(),
                    sha256 = %sha256,
                    "loading an unknown embedding model (its weights match no pinned hash)"
                );
                (
                    file_pooling.unwrap_or(Pooling::Mean),
                    file_max.unwrap_or(config.max_position_embeddings),
                )
            }
        };
        let max_tokens = max_tokens.clamp(2, MAX_SEQUENCE_TOKENS.min(config.max_position_embeddings));
        let tokenizer = load_tokenizer(&tokenizer_path, &config, max_tokens)?;
        let bad_weights = |reason: String| EmbedError::BadWeights {
            path: weights_path.clone(),
            reason,
        };
        let device = Device::Cpu;
        let model = guarded(|| {
            let tensors = encoder_tensors(weights, &device).map_err(|e| bad_weights(e.to_string()))?;
            let vb = VarBuilder::from_tensors(tensors, DType::F32, &device);
            BertModel::load(vb, &config).map_err(|e| bad_weights(e.to_string()))
        })
        .map_err(|e| match e {
            Guarded::Inner(e) => e,
            Guarded::Panic(p) => bad_weights(p),
        })?;
        Ok(Embedder {
            model,
            tokenizer,
            pooling,
            dim: config.hidden_size,
            info,
            worker: OnceLock::new(),
            background: OnceLock::new(),
        })
    }

    /// The id stored with this model's vectors (see [`ModelInfo::model_id`]).
    pub fn model_id(&self) -> &str {
        &self.info.model_id
    }

    /// What was loaded: id, known model, weights hash, dimension.
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Output dimension: the length of every vector [`Embedder::embed`] returns.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The pooling in use.
    pub fn pooling(&self) -> Pooling {
        self.pooling
    }

    /// One unit-length vector of [`Embedder::dim`] f32 per text, in order (texts are truncated to the model's
    /// maximum sequence length; an empty text embeds its special tokens). Texts run in batches of similar length
    /// ([`length_batches`]: every text of a batch is padded to its longest, and on the CPU the padding costs as much
    /// as real tokens), each of at most [`MAX_BATCH`].
    ///
    /// Errors: [`EmbedError::Inference`] when tokenising or the encoder fails.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for batch in length_batches(texts) {
            let members: Vec<&str> = batch.iter().map(|&i| texts[i]).collect();
            let vectors = guarded(|| self.embed_batch(&members)).map_err(|e| match e {
                Guarded::Inner(e) => e,
                Guarded::Panic(p) => EmbedError::Inference(p),
            })?;
            if vectors.len() != batch.len() {
                return Err(EmbedError::Inference(format!(
                    "the encoder returned {} vectors for {} texts",
                    vectors.len(),
                    batch.len()
                )));
            }
            for (i, v) in batch.into_iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// The vector of one text (see [`Embedder::embed`]).
    ///
    /// Errors: as [`Embedder::embed`].
    pub fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut v = self.embed(&[text])?;
        v.pop()
            .ok_or_else(|| EmbedError::Inference("the encoder returned no vector".into()))
    }

    /// Start embedding `text` (as [`Embedder::embed_one`]) on this embedder's own thread and return at once: the
    /// caller does other work meanwhile and takes the vector with [`PendingEmbedding::wait`]. The thread runs one
    /// text at a time, and the encoder's matrix products run on it alone (a pool of one thread), so it keeps one
    /// core busy while the caller uses the other. When the thread cannot be started, `text` is embedded before this
    /// returns.
    pub fn spawn_one(self: &Arc<Self>, text: &str) -> PendingEmbedding {
        let (sender, receiver) = mpsc::channel();
        let pending = PendingEmbedding {
            result: OnceLock::new(),
            receiver: Mutex::new(Some(receiver)),
        };
        let Some(worker) = self.worker() else {
            let _ = pending.result.set(self.embed_one(text));
            return pending;
        };
        let me = Arc::clone(self);
        let text = text.to_owned();
        worker.spawn(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| me.embed_one(&text)))
                .unwrap_or_else(|_| Err(EmbedError::Inference("the model library panicked".into())));
            // The caller may have given up waiting; nothing to do then.
            let _ = sender.send(result);
        });
        pending
    }

    /// [`Embedder::embed`] run on a second single-thread pool of this embedder, separate from
    /// [`Embedder::spawn_one`]'s, waiting for it: background work (the vectors of memories written a moment ago)
    /// keeps at most one core busy and never queues in front of a query being embedded. When that thread cannot be
    /// started, the texts are embedded on the caller's thread.
    ///
    /// Errors: as [`Embedder::embed`]; [`EmbedError::Inference`] when the model library panicked.
    pub fn embed_in_background(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let pool = self
            .background
            .get_or_init(|| single_thread_pool("cao-embed-bg"))
            .as_ref();
        match pool {
            Some(pool) => pool.install(|| {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.embed(texts)))
                    .unwrap_or_else(|_| Err(EmbedError::Inference("the model library panicked".into())))
            }),
            None => self.embed(texts),
        }
    }

    /// The single-thread pool of [`Embedder::spawn_one`], started on first use.
    fn worker(&self) -> Option<&rayon::ThreadPool> {
        self.worker.get_or_init(|| single_thread_pool("cao-embed")).as_ref()
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let inference = |e: &dyn std::fmt::Display| EmbedError::Inference(e.to_string());
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| inference(&e))?;
        let len = encodings.iter().map(|e| e.get_ids().len()).max().unwrap_or(0);
        if len == 0 {
            return Err(EmbedError::Inference("the tokenizer produced no tokens".into()));
        }
        let mut ids = Vec::with_capacity(texts.len() * len);
        let mut mask = Vec::with_capacity(texts.len() * len);
        for e in &encodings {
            let (i, m) = (e.get_ids(), e.get_attention_mask());
            ids.extend(i.iter().copied().chain(std::iter::repeat(0)).take(len));
            mask.extend(m.iter().copied().chain(std::iter::repeat(0)).take(len));
        }
        let shape = (texts.len(), len);
        let device = &self.model.device;
        let ids = Tensor::from_vec(ids, shape, device).map_err(|e| inference(&e))?;
        let mask = Tensor::from_vec(mask, shape, device).map_err(|e| inference(&e))?;
        let types = ids.zeros_like().map_err(|e| inference(&e))?;
        let hidden = self
            .model
            .forward(&ids, &types, Some(&mask))
            .map_err(|e| inference(&e))?;
        let pooled = match self.pooling {
            Pooling::Cls => hidden.narrow(1, 0, 1).and_then(|t| t.squeeze(1)),
            Pooling::Mean => mean_pool(&hidden, &mask),
        }
        .map_err(|e| inference(&e))?;
        let rows: Vec<Vec<f32>> = pooled.to_vec2().map_err(|e| inference(&e))?;
        rows.into_iter()
            .map(|mut v| {
                if v.len() != self.dim {
                    return Err(EmbedError::Inference(format!(
                        "the encoder returned {} dimensions; expected {}",
                        v.len(),
                        self.dim
                    )));
                }
                normalize(&mut v);
                Ok(v)
            })
            .collect()
    }
}

/// A rayon pool of one thread named `name` (the encoder's matrix products inside it run on that thread alone);
/// `None` with a warning when the thread cannot be started.
fn single_thread_pool(name: &'static str) -> Option<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .thread_name(move |_| name.into())
        .panic_handler(|_| {})
        .build()
        .map_err(|e| tracing::warn!("embedding in the caller's thread: cannot start a thread: {e}"))
        .ok()
}

/// The tensors of a safetensors file (`weights`, consumed), in f32, with every matrix of a linear layer (rank 2,
/// outside `embeddings.`) stored transposed: the same `(out, in)` tensor, laid out as a contiguous `(in, out)`
/// matrix. A linear layer computes `x·Wᵀ`; with `Wᵀ` contiguous the matrix product (`gemm`) reads the weights as
/// they lie, where the file's layout made it copy every weight matrix, element by element, on every call (most of
/// the encoder's time for a short text). The values, and so the vectors, are the same up to the order of the
/// product's additions.
///
/// Errors: candle's, for a file that is not safetensors or a tensor that cannot be converted.
fn encoder_tensors(
    weights: Vec<u8>,
    device: &Device,
) -> candle_core::Result<std::collections::HashMap<String, Tensor>> {
    let mut tensors = candle_core::safetensors::load_buffer(&weights, device)?;
    drop(weights);
    for (name, t) in tensors.iter_mut() {
        let f32s = t.to_dtype(DType::F32)?;
        *t = if f32s.rank() == 2 && !name.contains("embeddings.") {
            f32s.t()?.contiguous()?.t()?
        } else {
            f32s
        };
    }
    Ok(tensors)
}

/// The positions of `texts` grouped into encoder batches: ordered by byte length (ties by position), a batch closes
/// at [`MAX_BATCH`] texts or before a text longer than 1.25 times its first text plus 32 bytes, so little of a batch
/// is padding. Every position appears exactly once.
pub fn length_batches(texts: &[&str]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| (texts[i].len(), i));
    let mut batches: Vec<Vec<usize>> = Vec::new();
    let mut first_len = 0usize;
    for i in order {
        let len = texts[i].len();
        match batches.last_mut() {
            Some(b) if b.len() < MAX_BATCH && len <= first_len + first_len / 4 + 32 => b.push(i),
            _ => {
                first_len = len;
                batches.push(vec![i]);
            }
        }
    }
    batches
}

/// Mean of `hidden` (batch, tokens, dim) over the tokens whose `mask` (batch, tokens; 1 = real token) is set.
fn mean_pool(hidden: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
    let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
    let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
    let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?;
    summed.broadcast_div(&counts)
}

/// Scale `v` to unit L2 norm in place; a zero or non-finite vector becomes the zero vector.
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm.is_finite() && norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    } else {
        v.iter_mut().for_each(|x| *x = 0.0);
    }
}

/// Dot product of two equally long vectors (the cosine similarity of unit vectors); over the shorter length when
/// they differ.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Parse `tokenizer.json`, set padding to the batch's longest text and truncation to `max_tokens`, and check that
/// every token id fits the model's vocabulary.
fn load_tokenizer(path: &Path, config: &Config, max_tokens: usize) -> Result<Tokenizer, EmbedError> {
    let bad = |reason: String| EmbedError::BadTokenizer {
        path: path.to_owned(),
        reason,
    };
    let bytes = read_bounded(path, MAX_TOKENIZER_BYTES)?;
    let mut tokenizer =
        guarded(|| Tokenizer::from_bytes(&bytes).map_err(|e| bad(e.to_string()))).map_err(|e| match e {
            Guarded::Inner(e) => e,
            Guarded::Panic(p) => bad(p),
        })?;
    let vocab = tokenizer.get_vocab_size(true);
    let max_id = tokenizer.get_vocab(true).values().copied().max().unwrap_or(0) as usize;
    if vocab == 0 || max_id >= config.vocab_size {
        return Err(bad(format!(
            "token ids reach {max_id}; the model's vocabulary has {} entries",
            config.vocab_size
        )));
    }
    tokenizer.with_padding(Some(PaddingParams {
        strategy: PaddingStrategy::BatchLongest,
        pad_id: u32::try_from(config.pad_token_id).unwrap_or(0),
        ..PaddingParams::default()
    }));
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: max_tokens,
            ..TruncationParams::default()
        }))
        .map_err(|e| bad(e.to_string()))?;
    Ok(tokenizer)
}

enum Guarded<E> {
    Inner(E),
    Panic(String),
}

/// Run `f`, turning a panic inside the model libraries (malformed weights or tokenizer data they do not check)
/// into an error message.
fn guarded<T, E>(f: impl FnOnce() -> Result<T, E>) -> Result<T, Guarded<E>> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(Guarded::Inner),
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "the model library panicked".into());
            Err(Guarded::Panic(format!("the model library failed: {msg}")))
        }
    }
}

pub mod testing;
