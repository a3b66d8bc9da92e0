//! Agent profiles: markdown files with YAML frontmatter (`name`, `description`, `capabilities`, ...) looked up in
//! the configured agent directories (`agents.dirs`, default `$CAO_HOME/agent-store`), plus the built-in profiles
//! that ship inside the program ([`crate::builtin`]). Spec 004 "The retrospector agent"; spec/reference-facts.md
//! "Outcomes, lessons, promotion".
//!
//! Rules:
//! - A profile name matches `^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$` ([`validate_name`]); its file is `<dir>/<name>.md`
//!   (a symlink is followed), so a name can never reach outside its directory.
//! - Lookup ([`find`]): each agent directory in order, then the built-ins. A copy of a built-in in an agent
//!   directory therefore wins over the built-in (and is an ordinary, promotable profile).
//! - Frontmatter: the text starts with a `---` line and the YAML runs to the next `---` line; it is parsed under
//!   budgets (at most [`MAX_FRONTMATTER_BYTES`], nesting 16, 10,000 nodes, no unknown tags). `capabilities` is a
//!   list of strings or one comma-separated string; other keys are ignored. A file without frontmatter has no
//!   capabilities. Files larger than [`MAX_PROFILE_BYTES`] or not UTF-8 are refused.
//! - Capabilities are read from the profile's own file only (the caller's terminal names the profile; tool
//!   arguments never do), so an agent gains `store_lesson` only when its operator's profile declares it.

use crate::builtin::{self, Builtin};
use crate::error::LearnError;
use serde::Deserialize;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Largest profile file read, in bytes (1 MiB).
pub const MAX_PROFILE_BYTES: u64 = 1024 * 1024;
/// Largest frontmatter parsed, in bytes (64 KiB).
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;
/// The capability that lets a profile's agents store lessons into another agent's scope (spec 004).
pub const STORE_LESSON_CAPABILITY: &str = "store_lesson";

/// Where a profile comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProfileSource {
    /// Shipped inside the program ([`crate::builtin`]); never a promotion target.
    Builtin,
    /// A file in an agent directory (or given explicitly); the path as found, symlinks not resolved.
    File(PathBuf),
}

/// One agent profile: its identity, frontmatter fields and text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentProfile {
    /// The profile name (the file stem, or the built-in's name).
    pub name: String,
    /// The frontmatter `description`, if any.
    pub description: Option<String>,
    /// The frontmatter `capabilities`, trimmed, blanks dropped.
    pub capabilities: Vec<String>,
    /// Where it comes from.
    pub source: ProfileSource,
    /// The whole text.
    pub text: String,
}

impl AgentProfile {
    /// Whether the frontmatter declares `capability` (exact match).
    pub fn has_capability(&self, capability: &str) -> bool {
        self.capabilities.iter().any(|c| c == capability)
    }

    /// Whether this is a built-in profile.
    pub fn is_builtin(&self) -> bool {
        self.source == ProfileSource::Builtin
    }
}

/// The frontmatter fields of a profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProfileMeta {
    /// `name`.
    pub name: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// `capabilities`.
    pub capabilities: Vec<String>,
}

/// Check a profile name: `^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`.
///
/// Errors: [`LearnError::ProfileName`].
pub fn validate_name(name: &str) -> Result<(), LearnError> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(LearnError::ProfileName(name.chars().take(80).collect()))
    }
}

#[derive(Deserialize, Default)]
struct RawMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    capabilities: Option<Capabilities>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Capabilities {
    List(Vec<String>),
    Csv(String),
}

/// The YAML of `text`'s frontmatter, or `None` when it has none (no `---` first line, or no closing `---` line).
pub fn frontmatter(text: &str) -> Option<&str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next()?;
    if first.trim_end() != "---" {
        return None;
    }
    let start = first.len();
    let mut pos = start;
    for line in lines {
        if line.trim_end() == "---" {
            return Some(&text[start..pos]);
        }
        pos += line.len();
    }
    None
}

/// Parse a profile's frontmatter fields (rules in the module documentation). `path` names the file in errors.
///
/// Errors: [`LearnError::Profile`] when the frontmatter is too large, over a parser budget, not valid YAML or has
/// fields of the wrong type (reported by line and column, never with the text).
pub fn parse_meta(text: &str, path: &Path) -> Result<ProfileMeta, LearnError> {
    let Some(yaml) = frontmatter(text) else {
        return Ok(ProfileMeta::default());
    };
    let fail = |reason: String| LearnError::Profile {
        path: path.to_owned(),
        reason,
    };
    if yaml.len() > MAX_FRONTMATTER_BYTES {
        return Err(fail(format!(
            "frontmatter is {} bytes; the maximum is {MAX_FRONTMATTER_BYTES}",
            yaml.len()
        )));
    }
    if yaml.trim().is_empty() {
        return Ok(ProfileMeta::default());
    }
    let raw: RawMeta = serde_saphyr::from_str_with_options(yaml, options()).map_err(|e| {
        let at = e
            .location()
            .map(|l| format!(" (line {}, column {})", l.line(), l.column()))
            .unwrap_or_default();
        fail(format!(
            "frontmatter is not valid YAML with name/description/capabilities fields{at}"
        ))
    })?;
    let capabilities = match raw.capabilities {
        None => Vec::new(),
        Some(Capabilities::List(items)) => items,
        Some(Capabilities::Csv(s)) => s.split(',').map(str::to_owned).collect(),
    };
    Ok(ProfileMeta {
        name: raw.name.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty()),
        description: raw.description.map(|d| d.trim().to_owned()).filter(|d| !d.is_empty()),
        capabilities: capabilities
            .into_iter()
            .map(|c| c.trim().to_owned())
            .filter(|c| !c.is_empty())
            .collect(),
    })
}

fn options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_reader_input_bytes = Some(MAX_FRONTMATTER_BYTES);
    budget.flow_nesting_limit = 16;
    budget.max_depth = 16;
    budget.max_events = 50_000;
    budget.max_nodes = 10_000;
    budget.max_aliases = 100;
    budget.max_anchors = 100;
    budget.max_documents = 1;
    budget.max_total_scalar_bytes = 4 * MAX_FRONTMATTER_BYTES;
    let mut o = serde_saphyr::Options::default();
    o.budget = Some(budget);
    o.reject_unsupported_tags = true;
    o
}

/// Read a profile file (at most [`MAX_PROFILE_BYTES`], UTF-8), following a symlink.
///
/// Errors: [`LearnError::Io`] when it cannot be opened or read (the message names the path);
/// [`LearnError::Profile`] when it is not a regular file, too large or not UTF-8.
pub fn read_text(path: &Path) -> Result<String, LearnError> {
    let file =
        std::fs::File::open(path).map_err(LearnError::io(format!("reading agent profile {}", path.display())))?;
    let meta = file
        .metadata()
        .map_err(LearnError::io(format!("reading agent profile {}", path.display())))?;
    let fail = |reason: &str| LearnError::Profile {
        path: path.to_owned(),
        reason: reason.to_owned(),
    };
    if !meta.is_file() {
        return Err(fail("not a regular file"));
    }
    if meta.len() > MAX_PROFILE_BYTES {
        return Err(fail("larger than 1 MiB"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_PROFILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(LearnError::io(format!("reading agent profile {}", path.display())))?;
    if bytes.len() as u64 > MAX_PROFILE_BYTES {
        return Err(fail("larger than 1 MiB"));
    }
    String::from_utf8(bytes).map_err(|_| fail("not UTF-8 text"))
}

/// Load the profile file at `path` as profile `name`.
///
/// Errors: as [`read_text`] and [`parse_meta`].
pub fn load_file(name: &str, path: &Path) -> Result<AgentProfile, LearnError> {
    let text = read_text(path)?;
    let meta = parse_meta(&text, path)?;
    Ok(AgentProfile {
        name: name.to_owned(),
        description: meta.description,
        capabilities: meta.capabilities,
        source: ProfileSource::File(path.to_owned()),
        text,
    })
}

/// The built-in profile `b` as an [`AgentProfile`].
pub fn builtin_profile(b: &Builtin) -> AgentProfile {
    let meta = parse_meta(b.text, Path::new(b.name)).unwrap_or_default();
    AgentProfile {
        name: b.name.to_owned(),
        description: meta.description,
        capabilities: meta.capabilities,
        source: ProfileSource::Builtin,
        text: b.text.to_owned(),
    }
}

/// The file of profile `name` in the first of `dirs` that has one (`<dir>/<name>.md`, existing after following
/// symlinks), if any. No content is read.
///
/// Errors: [`LearnError::ProfileName`].
pub fn find_file(name: &str, dirs: &[PathBuf]) -> Result<Option<PathBuf>, LearnError> {
    validate_name(name)?;
    Ok(dirs.iter().map(|d| d.join(format!("{name}.md"))).find(|p| p.exists()))
}

/// Profile `name`: the first agent directory holding `<name>.md`, else the built-in of that name; `None` when
/// neither exists.
///
/// Errors: [`LearnError::ProfileName`]; the errors of [`load_file`] for the file found.
pub fn find(name: &str, dirs: &[PathBuf]) -> Result<Option<AgentProfile>, LearnError> {
    if let Some(path) = find_file(name, dirs)? {
        return load_file(name, &path).map(Some);
    }
    Ok(builtin::get(name).map(builtin_profile))
}

/// One row of [`list`]: a profile, or a file in an agent directory that cannot be read as one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedProfile {
    /// The profile name.
    pub name: String,
    /// The profile, or why its file cannot be used.
    pub profile: Result<AgentProfile, String>,
}

/// Every profile visible through `dirs` and the built-ins, sorted by name: for each name the file of the first
/// directory holding it (a later directory's file of the same name, and a built-in of that name, are shadowed).
/// Files whose stem is not a valid profile name are ignored; a missing directory contributes nothing.
///
/// Errors: [`LearnError::Io`] when an existing directory cannot be listed.
pub fn list(dirs: &[PathBuf]) -> Result<Vec<ListedProfile>, LearnError> {
    let mut out: Vec<ListedProfile> = Vec::new();
    for dir in dirs {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(LearnError::Io {
                    context: format!("listing agent directory {}", dir.display()),
                    source: e,
                });
            }
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let stem = name.strip_suffix(".md")?;
                (validate_name(stem).is_ok() && e.path().is_file()).then(|| stem.to_owned())
            })
            .collect();
        names.sort();
        for name in names {
            if out.iter().any(|p| p.name == name) {
                continue;
            }
            let path = dir.join(format!("{name}.md"));
            out.push(ListedProfile {
                profile: load_file(&name, &path).map_err(|e| e.to_string()),
                name,
            });
        }
    }
    for b in &builtin::ALL {
        if !out.iter().any(|p| p.name == b.name) {
            out.push(ListedProfile {
                name: b.name.to_owned(),
                profile: Ok(builtin_profile(b)),
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "test setup writes fixture files directly")]
mod tests {
    use super::*;

    #[test]
    fn names_cannot_leave_their_directory() {
        for ok in ["worker", "memory_manager", "a-1", "A9"] {
            assert!(validate_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "../x", "a/b", "-a", "_a", "a.md", "a b", &"x".repeat(65)] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn frontmatter_fields_and_capability_spellings() {
        let p = Path::new("p.md");
        let m = parse_meta(
            "---\nname: w\ndescription: \" Does work \"\ncapabilities: [store_lesson, ' x ']\nmodel: y\n---\n# W\n",
            p,
        )
        .expect("valid");
        assert_eq!(m.name.as_deref(), Some("w"));
        assert_eq!(m.description.as_deref(), Some("Does work"));
        assert_eq!(m.capabilities, ["store_lesson", "x"]);
        let csv = parse_meta("---\r\ncapabilities: a, b,,\r\n---\r\n", p).expect("csv");
        assert_eq!(csv.capabilities, ["a", "b"]);
        assert_eq!(
            parse_meta("# no frontmatter\n", p).expect("none"),
            ProfileMeta::default()
        );
        assert_eq!(
            parse_meta("---\nname: x\n", p).expect("unclosed"),
            ProfileMeta::default()
        );
        let e = parse_meta("---\ncapabilities: {a: [\n---\n", p).expect_err("invalid");
        assert!(e.to_string().contains("p.md"), "{e}");
        assert!(parse_meta("---\ncapabilities: 7\n---\n", p).is_err(), "wrong type");
    }

    #[test]
    fn lookup_prefers_agent_directories_then_builtins() {
        let d1 = tempfile::tempdir().expect("tempdir");
        let d2 = tempfile::tempdir().expect("tempdir");
        let dirs = vec![d1.path().to_owned(), d2.path().to_owned(), d1.path().join("missing")];
        std::fs::write(d2.path().join("worker.md"), "---\nname: worker\n---\n# two\n").expect("write");
        std::fs::write(d1.path().join("worker.md"), "---\nname: worker\n---\n# one\n").expect("write");
        std::fs::write(d2.path().join("retrospector.md"), "# copy\n").expect("write");
        std::fs::write(d2.path().join("not a name.md"), "x").expect("write");
        let w = find("worker", &dirs).expect("ok").expect("found");
        assert_eq!(w.source, ProfileSource::File(d1.path().join("worker.md")));
        assert!(w.text.contains("# one"));
        let r = find("retrospector", &dirs).expect("ok").expect("found");
        assert!(!r.is_builtin(), "a copy in an agent directory wins");
        let m = find("memory_manager", &dirs).expect("ok").expect("builtin");
        assert!(m.is_builtin());
        assert!(find("nobody", &dirs).expect("ok").is_none());
        assert!(find("../etc/passwd", &dirs).is_err());
        let names: Vec<_> = list(&dirs).expect("list").into_iter().map(|p| p.name).collect();
        assert_eq!(names, ["memory_manager", "retrospector", "worker"]);
    }
}
