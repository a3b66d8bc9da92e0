//! `cao config get | set | unset | list`: read and edit the known settings of `settings.json` (the registry is
//! `cao_core::settings::KEYS`).
//!
//! - `get` and `list` show each setting's effective value and its source: `env` (its `CAO_*` variable), `file`
//!   (`<home>/settings.json`) or `default`. A file or env value that is ignored or questionable is reported as a
//!   `warning:` line on stderr; stdout carries only the result.
//! - `set` validates the value for the key's type before any I/O (booleans are `true` / `false`; the project id
//!   must match `^[a-zA-Z0-9._-]{1,128}$`; the `memory.model.*` keys as `cao_core::settings::SettingKind` says),
//!   then rewrites the file atomically with mode 0600, keeping every other key. `unset` removes a key from the file so its default applies again (an empty value is not a way to unset).
//! - Unknown keys and invalid values are usage errors (exit 2) naming the known keys or the expected type; an
//!   unreadable or unparsable `settings.json` is never overwritten (exit 1, naming the file).
//! - These commands work whether or not memory is enabled (`cao config set memory.enabled true` must always work).

use crate::error::CliError;
use crate::output::emit;
use crate::output::one_line;
use cao_core::settings::{self, EffectiveValue, SettingKey, SettingSource};
use cao_core::{CaoHome, CoreError, Settings};
use clap::{Args, Subcommand, ValueEnum};
use serde_json::Value;
use std::io::Write;

/// `cao config ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Print a setting's effective value and where it comes from (env, file or default).
    Get(GetArgs),
    /// Store a setting in settings.json (validated; every other key is kept).
    Set(SetArgs),
    /// Remove a setting from settings.json so its default applies again.
    Unset(UnsetArgs),
    /// List every known setting: effective value, source, default and environment variable.
    List(ListArgs),
}

/// Arguments of `cao config get`.
#[derive(Debug, Args)]
pub(crate) struct GetArgs {
    /// The setting, e.g. memory.lifecycle.enabled (`cao config list` shows every key).
    pub key: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = GetFormat::Text)]
    pub format: GetFormat,
}

/// Arguments of `cao config set`.
#[derive(Debug, Args)]
pub(crate) struct SetArgs {
    /// The setting, e.g. memory.lifecycle.enabled (`cao config list` shows every key).
    pub key: String,
    /// The new value: `true` or `false` for switches; a project id for memory.project_id; for
    /// memory.model.command a JSON list (`'["claude","-p"]'`) or words (`"claude -p"`), never run by a shell.
    #[arg(allow_hyphen_values = true)]
    pub value: String,
}

/// Arguments of `cao config unset`.
#[derive(Debug, Args)]
pub(crate) struct UnsetArgs {
    /// The setting to remove from settings.json.
    pub key: String,
}

/// Arguments of `cao config list`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = ConfigListFormat::Table)]
    pub format: ConfigListFormat,
}

/// Output format of `config get`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum GetFormat {
    /// One line: `<key> = <value> (source: ...)`.
    Text,
    /// A pretty-printed JSON object (key, value, source, type, default, env, warning).
    Json,
}

/// Output format of `config list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ConfigListFormat {
    /// Aligned columns KEY, VALUE, SOURCE, DEFAULT, ENV.
    Table,
    /// A pretty-printed JSON array of the objects `config get --format json` prints.
    Json,
}

/// One setting as `get --format json` / `list --format json` print it.
#[derive(Debug, serde::Serialize)]
struct Row {
    key: &'static str,
    value: Option<Value>,
    source: SettingSource,
    #[serde(rename = "type")]
    kind: &'static str,
    default: Option<Value>,
    env: &'static str,
    warning: Option<String>,
}

impl Row {
    fn new(e: EffectiveValue) -> Row {
        Row {
            key: e.key.name,
            value: e.value,
            source: e.source,
            kind: e.key.kind.as_str(),
            default: e.key.default.value(),
            env: e.key.env,
            warning: e.warning,
        }
    }
}

/// Run one config subcommand; results go to `out`, warnings to `warn`.
///
/// Errors: usage errors (exit 2) for unknown keys and invalid values; failures (exit 1) when settings.json cannot
/// be updated or the output cannot be written.
pub(crate) fn run(cmd: ConfigCommand, out: &mut dyn Write, warn: &mut dyn Write) -> Result<(), CliError> {
    let home = CaoHome::from_env();
    match cmd {
        ConfigCommand::Get(a) => {
            let key = settings::lookup(&a.key).map_err(core_error)?;
            let row = Row::new(Settings::load(&home).effective(key));
            warnings(warn, row.warning.iter());
            let text = match a.format {
                GetFormat::Text => get_text(&row, &home),
                GetFormat::Json => crate::output::json(&row).map_err(CliError::failure)?,
            };
            emit(out, &text)
        }
        ConfigCommand::List(a) => {
            let loaded = Settings::load(&home);
            let rows: Vec<Row> = settings::KEYS.iter().map(|k| Row::new(loaded.effective(k))).collect();
            let mut seen: Vec<&String> = Vec::new();
            for w in rows.iter().filter_map(|r| r.warning.as_ref()) {
                if !seen.contains(&w) {
                    seen.push(w);
                }
            }
            warnings(warn, seen.into_iter());
            let text = match a.format {
                ConfigListFormat::Table => list_table(&rows),
                ConfigListFormat::Json => crate::output::json(&rows).map_err(CliError::failure)?,
            };
            emit(out, &text)
        }
        ConfigCommand::Set(a) => {
            let outcome = settings::set(&home, &a.key, &a.value).map_err(|e| match e {
                CoreError::InvalidSettingValue { .. } if a.value.is_empty() => {
                    CliError::Usage(format!("{e}; to remove the setting run `cao config unset {}`", a.key))
                }
                other => core_error(other),
            })?;
            env_override_note(warn, outcome.key);
            emit(
                out,
                &format!(
                    "{} = {} (written to {})\n",
                    outcome.key.name,
                    show_value(Some(&outcome.value)),
                    outcome.path.display()
                ),
            )
        }
        ConfigCommand::Unset(a) => {
            let key = settings::lookup(&a.key).map_err(core_error)?;
            let removed = settings::unset(&home, key.name).map_err(core_error)?;
            env_override_note(warn, key);
            let path = home.settings_path();
            let text = match removed {
                Some(v) => format!(
                    "{} = {} removed from {}; the default applies: {}\n",
                    key.name,
                    show_value(Some(&v)),
                    path.display(),
                    show_value(key.default.value().as_ref())
                ),
                None => format!("{} was not set in {}; nothing changed\n", key.name, path.display()),
            };
            emit(out, &text)
        }
    }
}

/// Map a settings error to its exit code: bad input is a usage error, a file problem a failure.
fn core_error(e: CoreError) -> CliError {
    match e {
        CoreError::UnknownSetting { .. } | CoreError::InvalidSettingValue { .. } => CliError::Usage(e.to_string()),
        CoreError::SettingsUnusable { .. } => CliError::failure_with_hint(
            e.to_string(),
            "fix or move the file aside by hand, then retry; `cao config list` shows the values in effect",
        ),
        other => CliError::failure(other.to_string()),
    }
}

/// `<key> = <value> (source: default | file, <path> | env, <VAR>)`.
fn get_text(row: &Row, home: &CaoHome) -> String {
    let source = match row.source {
        SettingSource::Default => "default".to_owned(),
        SettingSource::File => format!("file, {}", home.settings_path().display()),
        SettingSource::Env => format!("env, {}", row.env),
    };
    format!("{} = {} (source: {source})\n", row.key, show_value(row.value.as_ref()))
}

/// The `list --format table` output: a header, a dash line, one row per known key; columns padded, never cut.
fn list_table(rows: &[Row]) -> String {
    let cells: Vec<[String; 5]> = rows
        .iter()
        .map(|r| {
            [
                r.key.to_owned(),
                show_value(r.value.as_ref()),
                r.source.as_str().to_owned(),
                show_value(r.default.as_ref()),
                r.env.to_owned(),
            ]
        })
        .collect();
    let header = ["KEY", "VALUE", "SOURCE", "DEFAULT", "ENV"].map(str::to_owned);
    let mut widths = [0usize; 5];
    for row in std::iter::once(&header).chain(&cells) {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |row: &[String; 5]| {
        let mut s = String::new();
        for (i, (c, w)) in row.iter().zip(widths).enumerate() {
            if i + 1 == row.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  "));
            }
        }
        s.push('\n');
        s
    };
    let mut out = line(&header);
    out.push_str(&"-".repeat(out.trim_end().chars().count()));
    out.push('\n');
    for row in &cells {
        out.push_str(&line(row));
    }
    out
}

/// A value for text output: booleans bare, strings quoted as JSON, unset as `(unset)`; one line.
fn show_value(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "(unset)".to_owned(),
        Some(v) => one_line(&v.to_string()),
    }
}

/// After a write: when the key's environment variable is set it wins over the file, so say so.
fn env_override_note(warn: &mut dyn Write, key: &'static SettingKey) {
    let eff = Settings::default().effective(key);
    if eff.source == SettingSource::Env {
        let note = format!(
            "{} is set in the environment and overrides settings.json (effective value: {})",
            key.env,
            show_value(eff.value.as_ref())
        );
        warnings(warn, std::iter::once(&note));
    }
}

/// Print each warning as one `warning: ...` line. Losing a warning to a closed stderr is not worth failing for.
fn warnings<'a>(warn: &mut dyn Write, lines: impl Iterator<Item = &'a String>) {
    for w in lines {
        let _ = writeln!(warn, "warning: {}", one_line(w));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use cao_core::settings::SettingDefault;
    use clap::Parser;

    fn default_text(k: &SettingKey) -> String {
        match k.default {
            SettingDefault::Bool(b) => b.to_string(),
            SettingDefault::Text(t) => format!("{t:?}"),
            SettingDefault::Int(n) => n.to_string(),
            SettingDefault::Thousandths(n) => (f64::from(n) / 1000.0).to_string(),
            SettingDefault::Unset => "(unset)".to_owned(),
        }
    }

    #[test]
    fn grammar() {
        let cli = Cli::try_parse_from(["cao", "config", "set", "memory.project_id", "-x"]).expect("parses");
        assert!(matches!(cli.command, Command::Config(ConfigCommand::Set(SetArgs { ref value, .. })) if value == "-x"));
        for argv in [
            &["cao", "config"][..],
            &["cao", "config", "get"],
            &["cao", "config", "set", "memory.enabled"],
            &["cao", "config", "get", "memory.enabled", "--format", "table"],
            &["cao", "config", "list", "--format", "text"],
        ] {
            let err = Cli::try_parse_from(argv).expect_err("must be rejected");
            assert_eq!(err.exit_code(), 2, "{argv:?}");
        }
    }

    #[test]
    fn table_columns_line_up() {
        let rows: Vec<Row> = settings::KEYS
            .iter()
            .map(|k| {
                Row::new(EffectiveValue {
                    key: k,
                    value: k.default.value(),
                    source: SettingSource::Default,
                    warning: None,
                })
            })
            .collect();
        let t = list_table(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), settings::KEYS.len() + 2);
        let col = lines[0].find("VALUE").expect("VALUE column");
        for (line, k) in lines[2..].iter().zip(settings::KEYS) {
            assert!(line.starts_with(k.name), "{line}");
            assert_eq!(&line[col..col + default_text(k).len()], default_text(k), "{line}");
            assert!(line.ends_with(k.env), "{line}");
        }
    }

    #[test]
    fn values_print_on_one_line() {
        assert_eq!(show_value(Some(&Value::String("a\nb".into()))), "\"a\\nb\"");
        assert_eq!(show_value(Some(&Value::Bool(true))), "true");
        assert_eq!(show_value(None), "(unset)");
    }
}
