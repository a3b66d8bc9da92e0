//! `cao memory vault status|scan|reconcile|rebuild|migrate` (spec/vault-facts.md sections 7 and 8; conformance
//! `vault_cli.json`, `vault_migrate.json`):
//! the operator surface of the Obsidian vault. Scan, status and a reconcile without `--apply` write nothing;
//! `reconcile --apply` and `rebuild --apply` write the projection in one transaction. Text output is the
//! reference's; `--format json` prints `cao.memory.vault-status/1`, `cao.memory.vault-scan/1` or
//! `cao.memory.vault-reconcile/1` or `cao.memory.vault-migrate/1` (docs/schemas). `migrate` is a dry run unless
//! `--apply`.

use crate::error::CliError;
use crate::output::{self, emit};
use cao_core::CaoHome;
use cao_memory::MemoryService;
use cao_memory::vault::{Reconciled, VaultStatus};
use clap::{Args, Subcommand, ValueEnum};
use std::io::Write;

/// Schema of `cao memory vault status --format json`.
pub(crate) const STATUS_SCHEMA: &str = "cao.memory.vault-status/1";
/// Schema of `cao memory vault scan --format json`.
pub(crate) const SCAN_SCHEMA: &str = "cao.memory.vault-scan/1";
/// Schema of `cao memory vault reconcile|rebuild --format json`.
pub(crate) const RECONCILE_SCHEMA: &str = "cao.memory.vault-reconcile/1";

/// The process-local counters a fresh CLI process cannot know (the reference prints them as unavailable).
const PROCESS_LOCAL: [&str; 5] = [
    "process_local_unmapped_project_writes",
    "process_local_unmapped_project_identities",
    "process_local_non_writable_write_refusals",
    "process_local_secret_gate_write_refusals",
    "process_local_boundary_write_refusals",
];

/// `cao memory vault ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum VaultCommand {
    /// Show the vault's durable status: note statuses, finding codes, recall counters, migration receipts, inert
    /// mappings and warnings.
    Status(FormatArgs),
    /// Scan the vault read-only and list each note's status (always a dry run).
    Scan(ScanArgs),
    /// Project the vault into memory: a dry run by default; --apply writes it.
    Reconcile(ReconcileArgs),
    /// Drop the vault's derived state and derive it again (exclusions and migration receipts survive); needs
    /// --apply.
    Rebuild(ReconcileArgs),
    /// Move the native memories of a vault-bound scope into the managed folder: a dry run by default; --apply
    /// writes the notes and one receipt per note (roll one back with `cao memory repair --receipt <id>`).
    Migrate(MigrateArgs),
}

/// A scope a vault mapping can bind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MappedScopeArg {
    /// Cross-project facts.
    Global,
    /// Facts of one project.
    Project,
    /// Notes of one agent profile.
    Agent,
}

/// Arguments of `cao memory vault migrate`.
#[derive(Debug, Args)]
pub(crate) struct MigrateArgs {
    /// The scope to migrate (must be bound to the writable mapping).
    #[arg(long, value_enum)]
    scope: MappedScopeArg,
    /// The project id or agent profile (default: the current project or agent); not with global.
    #[arg(long)]
    scope_id: Option<String>,
    /// Write the notes and receipts (without it: a dry run that reports what would be written).
    #[arg(long)]
    apply: bool,
    /// Remove each migrated native memory afterwards; needs --apply and --confirm-delete-source.
    #[arg(long)]
    delete_source: bool,
    /// Confirms --delete-source.
    #[arg(long)]
    confirm_delete_source: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: VaultFormat,
}

/// Output format of the vault commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum VaultFormat {
    /// `key: value` lines (the reference's).
    Table,
    /// One JSON object.
    Json,
}

/// `--format`.
#[derive(Debug, Args)]
pub(crate) struct FormatArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: VaultFormat,
}

/// Arguments of `cao memory vault scan`.
#[derive(Debug, Args)]
pub(crate) struct ScanArgs {
    /// Accepted for the reference's command line; the scan never writes.
    #[arg(long)]
    dry_run: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: VaultFormat,
}

/// Arguments of `cao memory vault reconcile|rebuild`.
#[derive(Debug, Args)]
pub(crate) struct ReconcileArgs {
    /// Write the result (without it: a dry run that reports what would be written).
    #[arg(long)]
    apply: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: VaultFormat,
}

/// Run one vault subcommand.
///
/// Errors: `--apply` missing on rebuild (exit 1, before anything is read); the vault is disabled, not configured or
/// its configuration unavailable; the store refuses (exit 1).
pub(crate) fn run(cmd: VaultCommand, out: &mut dyn Write) -> Result<(), CliError> {
    if let VaultCommand::Rebuild(a) = &cmd
        && !a.apply
    {
        return Err(CliError::failure(
            "--apply is required because vault rebuild deletes and re-derives derived state",
        ));
    }
    if let VaultCommand::Migrate(a) = &cmd {
        if a.delete_source && !(a.apply && a.confirm_delete_source) {
            return Err(CliError::failure(
                "--delete-source requires --apply and --confirm-delete-source",
            ));
        }
        if a.scope == MappedScopeArg::Global && a.scope_id.is_some() {
            return Err(CliError::failure("--scope-id is not allowed with --scope global"));
        }
    }
    let svc = MemoryService::open(CaoHome::from_env())?;
    match cmd {
        VaultCommand::Status(a) => {
            let s = cao_memory::vault::status(svc.storage())?;
            match a.format {
                VaultFormat::Table => emit(out, &status_text(&s)),
                VaultFormat::Json => emit(out, &json(STATUS_SCHEMA, &s)?),
            }
        }
        VaultCommand::Scan(a) => {
            let _ = a.dry_run;
            let report = cao_memory::vault::scan(svc.storage())?;
            match a.format {
                VaultFormat::Table => {
                    let mut text = format!(
                        "Scanned {} note(s); {} bytes (limit {}).\n",
                        report.notes.len(),
                        report.total_bytes_scanned,
                        report.max_total_bytes
                    );
                    for n in &report.notes {
                        text.push_str(&format!("{}: {}\n", n.status.as_str(), output::one_line(&n.relpath)));
                    }
                    emit(out, &text)
                }
                VaultFormat::Json => {
                    let notes: Vec<serde_json::Value> = report
                        .notes
                        .iter()
                        .map(|n| {
                            serde_json::json!({
                                "path": n.relpath,
                                "status": n.status.as_str(),
                                "scope": n.scope.as_str(),
                                "scope_id": n.scope_id,
                                "findings": n.findings.iter().map(|f| serde_json::json!({
                                    "code": f.code.as_str(),
                                    "severity": f.severity.as_str(),
                                    "detail": f.detail,
                                })).collect::<Vec<_>>(),
                            })
                        })
                        .collect();
                    let v = serde_json::json!({
                        "notes": notes,
                        "total_bytes_scanned": report.total_bytes_scanned,
                        "max_total_bytes": report.max_total_bytes,
                    });
                    emit(out, &json(SCAN_SCHEMA, &v)?)
                }
            }
        }
        VaultCommand::Reconcile(a) => reconcile(&svc, a, false, out),
        VaultCommand::Rebuild(a) => reconcile(&svc, a, true, out),
        VaultCommand::Migrate(a) => migrate(&svc, a, out),
    }
}

/// Schema of `cao memory vault migrate --format json`.
pub(crate) const MIGRATE_SCHEMA: &str = "cao.memory.vault-migrate/1";

fn migrate(svc: &MemoryService, a: MigrateArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let scope = match a.scope {
        MappedScopeArg::Global => cao_core::Scope::Global,
        MappedScopeArg::Project => cao_core::Scope::Project,
        MappedScopeArg::Agent => cao_core::Scope::Agent,
    };
    let settings = svc.storage().settings();
    let ctx = cao_core::TerminalContext::from_env();
    let scope_id = match a.scope_id {
        Some(id) => Some(id),
        None => cao_memory::visibility::target_scope_id(svc.storage(), &ctx, scope, &settings)?,
    };
    let r = cao_memory::vault_migrate::migrate(
        svc.storage(),
        &settings,
        &ctx,
        scope,
        scope_id.as_deref(),
        a.apply,
        a.delete_source,
    )?;
    match a.format {
        VaultFormat::Table => emit(out, &migrate_text(&r)),
        VaultFormat::Json => emit(out, &json(MIGRATE_SCHEMA, &r)?),
    }
}

/// The migration report as `key: value` lines, then one line per lossy field, skipped key, error and receipt.
pub(crate) fn migrate_text(r: &cao_memory::vault_migrate::MigrateReport) -> String {
    let mut text = format!(
        "planned: {}\nmigrated: {}\ndeleted_source: {}\nfailed: {}\ndry_run: {}\n",
        r.planned,
        r.migrated,
        r.deleted_source,
        r.failed,
        py_bool(r.dry_run)
    );
    for (key, fields) in &r.lossy_fields {
        text.push_str(&format!("lossy: {}: {}\n", output::one_line(key), counts(fields)));
    }
    for (key, reason) in &r.skipped_vault_authoritative {
        text.push_str(&format!("skipped: {}: {reason}\n", output::one_line(key)));
    }
    for (key, error) in &r.errors {
        text.push_str(&format!(
            "error: {}: {}\n",
            output::one_line(key),
            output::one_line(error)
        ));
    }
    for id in &r.receipts {
        text.push_str(&format!("receipt: {id}\n"));
    }
    text
}

fn reconcile(svc: &MemoryService, a: ReconcileArgs, rebuild: bool, out: &mut dyn Write) -> Result<(), CliError> {
    let r = cao_memory::vault::reconcile(svc.storage(), a.apply, rebuild)?;
    if !a.apply {
        // stdout is the reference's report, byte for byte; the reminder that nothing was written goes to stderr.
        let _ = writeln!(
            std::io::stderr().lock(),
            "dry run: nothing was written (add --apply to write the projection)"
        );
    }
    match a.format {
        VaultFormat::Table => emit(out, &reconcile_text(&r)),
        VaultFormat::Json => emit(out, &json(RECONCILE_SCHEMA, &r)?),
    }
}

/// `value` as a JSON object with `schema` first.
fn json(schema: &str, value: &impl serde::Serialize) -> Result<String, CliError> {
    let v = serde_json::to_value(value).map_err(|e| CliError::failure(e.to_string()))?;
    let mut obj = serde_json::Map::new();
    obj.insert("schema".to_owned(), serde_json::Value::String(schema.to_owned()));
    if let serde_json::Value::Object(m) = v {
        obj.extend(m);
    }
    output::json(&serde_json::Value::Object(obj)).map_err(CliError::failure)
}

/// Python's spelling of a boolean (the reference prints `rebuilt: False`).
fn py_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// The reconcile report as the reference prints it.
pub(crate) fn reconcile_text(r: &Reconciled) -> String {
    let p = &r.report;
    format!(
        "vault_id: {}\nrun_id: {}\nindexed: {}\nquarantined: {}\nskipped: {}\nfindings: {}\ndeleted: {}\nrebuilt: {}\n",
        p.vault_id,
        p.run_id,
        p.indexed,
        p.quarantined,
        p.skipped,
        p.findings,
        p.deleted,
        py_bool(p.rebuilt)
    )
}

fn counts<V: std::fmt::Display>(m: &std::collections::BTreeMap<String, V>) -> String {
    if m.is_empty() {
        return "-".to_owned();
    }
    m.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
}

/// The status as the reference prints it.
pub(crate) fn status_text(s: &VaultStatus) -> String {
    let mut t = format!(
        "vault_id: {}\nstatus_counts: {}\nfinding_counts: {}\nrecall_counters: {}\nmigration_receipts: active={}, inconsistent={}\n",
        s.vault_id,
        counts(&s.status_counts),
        counts(&s.finding_counts),
        counts(&s.recall_counters),
        s.receipts_active,
        s.receipts_inconsistent
    );
    for m in &s.inert_mappings {
        t.push_str(&format!("mapping: {}\n", output::one_line(m)));
    }
    for w in &s.warnings {
        t.push_str(&format!("warning: {}\n", output::one_line(w)));
    }
    for name in PROCESS_LOCAL {
        t.push_str(&format!(
            "{name}: unavailable in a fresh CLI process (not durable status)\n"
        ));
    }
    t
}
