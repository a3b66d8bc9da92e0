//! Reconcile planning: the projection of a scanned vault into memory state, as a pure function
//! (spec/vault-facts.md section 3; conformance `vault_reconcile.json`, `vault_lifecycle.json`).
//!
//! [`plan_reconcile`] takes the scan, the vault state the store holds now ([`IndexedVault`]: `vault_note` rows,
//! exclusions, aliases) and the run's start time, and returns the complete desired state ([`ReconcilePlan`]):
//! every `vault_note` row with what changed, the rows to delete, the vault metadata rows, the edges of origin
//! `vault`, the folded findings, aliases and exclusions, and the report the reference prints. The store applies a
//! plan in one transaction (under the vault projection lock) by replacing its vault rows with the plan's; a dry
//! run reports it without writing.
//!
//! Rules, in order:
//! 1. Identity: the authored `cao.key`, else the derived key of the mapping-relative path; the uid from
//!    `(vault, scope, scope_id, key)`.
//! 2. Renames (not on rebuild): a new path without an authored key whose content hash equals exactly one vanished
//!    row of its scope, claimed by no other new path, keeps that row's key, uid and key source (an alias records
//!    the former path); several sources or claimants give `rename_ambiguous` on each new path; one unmatched new
//!    path and one unmatched vanished row in a scope give `rename_with_edit_unresolved` (new identity). A moved
//!    note with an authored key simply keeps its uid.
//! 3. Collisions: every row sharing a uid with another is quarantined with `key_collision` and a collision key.
//! 4. Exclusions (forgotten notes): matched by key, else by last known path, else by content hash (the exclusion
//!    then moves to the new key); the row becomes `excluded` with `deindexed_retained`.
//! 5. Indexed rows get metadata rows and project their links ([`crate::links::note_edges`]) against the rows of
//!    their own scope; edges are the complete desired set, so an unchanged vault plans the same edges every run
//!    (the reference's alternating deletion is not reproduced).
//! 6. Findings are folded per (path, code, severity): `count=<n>; code=<code>; detail=<distinct details>`.

use crate::config::VaultConfig;
use crate::finding::{Finding, FindingCode, Severity};
use crate::hash::sha256_nul_joined;
use crate::identity::{KeySource, collision_cao_key, collision_uid, derive_cao_key, metadata_row_id, note_uid};
use crate::links::{Candidate, Candidates, EdgeStatus, EdgeType, note_edges};
use crate::scan::{NoteStatus, ScanReport, ScannedNote};
use cao_core::{MemoryType, Scope};
use chrono::{DateTime, NaiveDateTime, Utc};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};

/// The stored vault rows the planner reads and plans (one definition, in `cao-core`, shared with the store).
pub use cao_core::vault::{Exclusion, IndexedNote, NoteAlias};

/// The vault state the store holds, as plain data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexedVault {
    /// `vault_note` rows of this vault.
    pub notes: Vec<IndexedNote>,
    /// `vault_exclusion` rows.
    pub exclusions: Vec<Exclusion>,
    /// `vault_note_alias` rows.
    pub aliases: Vec<NoteAlias>,
}

/// What a reconcile does to one note row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoteChange {
    /// A new row.
    Added,
    /// The same row as before (every field equal).
    Unchanged,
    /// The row at this path changed (content, status, identity, ...).
    Updated,
    /// The row of a vanished path moved here (same uid).
    Renamed {
        /// The former path.
        from: String,
    },
}

/// A planned `vault_note` row.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedNote {
    /// The row.
    pub row: IndexedNote,
    /// What changed.
    pub change: NoteChange,
    /// Aliases of the note (link resolution only).
    pub aliases: Vec<String>,
}

/// A `memory_metadata` row of `source_kind = vault` (an indexed note).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MetadataRow {
    /// `sha256("memory" NUL note_uid)`.
    pub id: String,
    /// The note uid it projects.
    pub note_uid: String,
    /// Key.
    pub key: String,
    /// Scope.
    pub scope: Scope,
    /// Scope id (`None` for global, as in the metadata table).
    pub scope_id: Option<String>,
    /// `cao.type`, default `reference`.
    pub memory_type: MemoryType,
    /// The vault-relative path.
    pub file_path: String,
    /// Tags (see [`crate::note::NoteFields::tags`]).
    pub tags: String,
    /// Whitespace-separated words of the whole normalised text.
    pub token_estimate: u64,
    /// Frontmatter `created` (wall clock) or the file mtime, UTC.
    pub created_at: NaiveDateTime,
    /// The file mtime, UTC.
    pub updated_at: NaiveDateTime,
}

/// A planned edge of origin `vault`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedEdge {
    /// Scope of both ends.
    pub scope: Scope,
    /// Scope id of both ends.
    pub scope_id: Option<String>,
    /// Source key.
    pub source_key: String,
    /// Target key.
    pub target_key: String,
    /// Type.
    pub edge_type: EdgeType,
    /// Status.
    pub status: EdgeStatus,
    /// Confidence.
    pub confidence: Option<f64>,
    /// The source note's mtime, UTC.
    pub source_updated_at: NaiveDateTime,
    /// Attributes (JSON object), `None` when empty.
    pub attributes: Option<serde_json::Map<String, serde_json::Value>>,
}

/// A folded `vault_finding` row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FindingRow {
    /// `sha256("finding" NUL run_id NUL code NUL path NUL severity)`.
    pub id: String,
    /// Vault-relative path.
    pub relpath: String,
    /// Code.
    pub code: FindingCode,
    /// Severity.
    pub severity: Severity,
    /// How many findings were folded.
    pub count: usize,
    /// `count=<n>; code=<code>; detail=<distinct details sorted, comma-joined>`.
    pub detail: String,
    /// The run.
    pub run_id: String,
}

/// The reconcile report (the reference's fields and order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReconcileReport {
    /// Vault id.
    pub vault_id: String,
    /// `sha256(vault_id NUL run_started_at.isoformat())`.
    pub run_id: String,
    /// Rows indexed.
    pub indexed: usize,
    /// Rows quarantined.
    pub quarantined: usize,
    /// Rows skipped or unsupported.
    pub skipped: usize,
    /// Folded finding rows.
    pub findings: usize,
    /// Rows deleted (0 in a dry run).
    pub deleted: usize,
    /// A rebuild.
    pub rebuilt: bool,
}

/// The complete desired vault state after a reconcile.
#[derive(Debug, Clone, PartialEq)]
pub struct ReconcilePlan {
    /// The report.
    pub report: ReconcileReport,
    /// When the run started (every row's `last_reconciled_at`).
    pub run_started_at: DateTime<Utc>,
    /// Every `vault_note` row, sorted by path.
    pub notes: Vec<PlannedNote>,
    /// Rows of the current state to delete (their paths vanished and no rename kept them).
    pub removed: Vec<IndexedNote>,
    /// Every vault metadata row, sorted by scope, scope id and key.
    pub metadata: Vec<MetadataRow>,
    /// Every vault edge, sorted by scope, scope id, source, type and target.
    pub edges: Vec<PlannedEdge>,
    /// Every finding row of the run, sorted by path and code.
    pub findings: Vec<FindingRow>,
    /// Every alias row.
    pub aliases: Vec<NoteAlias>,
    /// Every exclusion row (moved ones updated).
    pub exclusions: Vec<Exclusion>,
}

impl ReconcilePlan {
    /// The state the store holds after applying this plan (what the next reconcile starts from).
    pub fn applied(&self) -> IndexedVault {
        IndexedVault {
            notes: self.notes.iter().map(|n| n.row.clone()).collect(),
            exclusions: self.exclusions.clone(),
            aliases: self.aliases.clone(),
        }
    }
}

/// How a reconcile runs.
#[derive(Debug, Clone, Copy)]
pub struct ReconcileOptions {
    /// When the run started (UTC).
    pub run_started_at: DateTime<Utc>,
    /// The plan will be applied (`deleted` is reported; 0 in a dry run).
    pub apply: bool,
    /// Rebuild: the current notes, aliases, metadata and edges are dropped first (exclusions survive).
    pub rebuild: bool,
}

/// `run_id` of a run: `sha256(vault_id NUL isoformat(run_started_at))` (`+00:00` offset, microseconds only when
/// non-zero).
pub fn run_id(vault_id: &str, at: DateTime<Utc>) -> String {
    sha256_nul_joined(&[vault_id, &python_isoformat(at)])
}

fn python_isoformat(at: DateTime<Utc>) -> String {
    let micros = at.timestamp_subsec_micros();
    if micros == 0 {
        at.format("%Y-%m-%dT%H:%M:%S+00:00").to_string()
    } else {
        format!("{}.{micros:06}+00:00", at.format("%Y-%m-%dT%H:%M:%S"))
    }
}

/// A nanosecond Unix time as a naive UTC time (microsecond precision).
pub fn utc_from_ns(ns: i64) -> NaiveDateTime {
    let secs = ns.div_euclid(1_000_000_000);
    let micros = u32::try_from(ns.rem_euclid(1_000_000_000) / 1000).unwrap_or(0);
    DateTime::<Utc>::from_timestamp(secs, micros * 1000).map_or(NaiveDateTime::MIN, |t| t.naive_utc())
}

/// Working state of one row during planning.
struct Work<'s> {
    scanned: &'s ScannedNote,
    key: String,
    uid: String,
    key_source: KeySource,
    reason: Option<String>,
    status: NoteStatus,
    findings: Vec<Finding>,
    renamed_from: Option<String>,
}

type ScopeKey = (Scope, Option<String>);

/// Plan a reconcile (module docs).
pub fn plan_reconcile(
    vault: &VaultConfig,
    scan: &ScanReport,
    current: &IndexedVault,
    options: ReconcileOptions,
) -> ReconcilePlan {
    let run = run_id(&vault.id, options.run_started_at);
    let empty = IndexedVault {
        exclusions: current.exclusions.clone(),
        ..IndexedVault::default()
    };
    let current = if options.rebuild { &empty } else { current };
    let cur_by_path: HashMap<&str, &IndexedNote> = current.notes.iter().map(|n| (n.relpath.as_str(), n)).collect();

    // 1. Identity.
    let mut work: Vec<Work<'_>> = scan
        .notes
        .iter()
        .map(|s| {
            let folder = &vault.mappings[s.mapping].folder;
            let mrel = s
                .relpath
                .strip_prefix(folder.as_str())
                .map_or(s.relpath.as_str(), |r| r.strip_prefix('/').unwrap_or(r));
            let authored = s.content.as_ref().and_then(|c| c.fields.cao.key.clone());
            let (key, key_source) = match authored {
                Some(k) => (k, KeySource::Authored),
                None => (derive_cao_key(mrel).0, KeySource::Derived),
            };
            let uid = note_uid(&vault.id, s.scope.as_str(), s.scope_id.as_deref(), &key);
            Work {
                scanned: s,
                key,
                uid,
                key_source,
                reason: None,
                status: s.status,
                findings: s.findings.clone(),
                renamed_from: None,
            }
        })
        .collect();

    // 2. Renames.
    let present: HashSet<&str> = scan.notes.iter().map(|n| n.relpath.as_str()).collect();
    let vanished: Vec<&IndexedNote> = current
        .notes
        .iter()
        .filter(|n| !present.contains(n.relpath.as_str()))
        .collect();
    let mut kept: HashSet<usize> = HashSet::new();
    let mut new_aliases: Vec<NoteAlias> = Vec::new();
    let is_new = |w: &Work<'_>| !cur_by_path.contains_key(w.scanned.relpath.as_str());
    // Moves that keep their uid (authored keys).
    for w in work
        .iter_mut()
        .filter(|w| !cur_by_path.contains_key(w.scanned.relpath.as_str()))
    {
        if let Some((vi, v)) = vanished.iter().enumerate().find(|(_, v)| v.note_uid == w.uid) {
            kept.insert(vi);
            w.renamed_from = Some(v.relpath.clone());
        }
    }
    let same_scope = |w: &Work<'_>, v: &IndexedNote| w.scanned.scope == v.scope && w.scanned.scope_id == v.scope_id;
    let mut hash_candidates: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut claims: HashMap<usize, Vec<usize>> = HashMap::new();
    for (wi, w) in work.iter().enumerate() {
        if !is_new(w) || w.key_source != KeySource::Derived || w.renamed_from.is_some() {
            continue;
        }
        let Some(hash) = &w.scanned.content_sha256 else {
            continue;
        };
        let cands: Vec<usize> = vanished
            .iter()
            .enumerate()
            .filter(|(vi, v)| !kept.contains(vi) && same_scope(w, v) && v.content_sha256.as_ref() == Some(hash))
            .map(|(vi, _)| vi)
            .collect();
        for vi in &cands {
            claims.entry(*vi).or_default().push(wi);
        }
        hash_candidates.push((wi, cands));
    }
    let mut unmatched_new: BTreeMap<ScopeKey, Vec<usize>> = BTreeMap::new();
    for (wi, cands) in &hash_candidates {
        match cands.as_slice() {
            [vi] if claims.get(vi).map_or(0, Vec::len) == 1 => {
                let v = vanished[*vi];
                kept.insert(*vi);
                let w = &mut work[*wi];
                w.key = v.key.clone();
                w.uid = v.note_uid.clone();
                w.key_source = v.key_source;
                w.reason = v.key_source_reason.clone();
                w.renamed_from = Some(v.relpath.clone());
                new_aliases.push(NoteAlias {
                    former_relpath: v.relpath.clone(),
                    key: v.key.clone(),
                    scope: v.scope,
                    scope_id: v.scope_id.clone(),
                    content_sha256: v.content_sha256.clone(),
                });
            }
            [] => unmatched_new
                .entry((work[*wi].scanned.scope, work[*wi].scanned.scope_id.clone()))
                .or_default()
                .push(*wi),
            _ => work[*wi].findings.push(Finding::bare(FindingCode::RenameAmbiguous)),
        }
    }
    for ((scope, scope_id), news) in &unmatched_new {
        let gone: Vec<usize> = vanished
            .iter()
            .enumerate()
            .filter(|(vi, v)| {
                !kept.contains(vi) && !claims.contains_key(vi) && v.scope == *scope && v.scope_id == *scope_id
            })
            .map(|(vi, _)| vi)
            .collect();
        if let ([wi], [_]) = (news.as_slice(), gone.as_slice()) {
            work[*wi]
                .findings
                .push(Finding::bare(FindingCode::RenameWithEditUnresolved));
        }
    }
    let removed: Vec<IndexedNote> = vanished
        .iter()
        .enumerate()
        .filter(|(vi, _)| !kept.contains(vi))
        .map(|(_, v)| (*v).clone())
        .collect();

    // 3. Collisions.
    let mut by_uid: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, w) in work.iter().enumerate() {
        by_uid.entry(w.uid.clone()).or_default().push(i);
    }
    let mut reserved: HashSet<String> = work.iter().map(|w| w.key.clone()).collect();
    let mut colliding: Vec<usize> = by_uid.values().filter(|v| v.len() > 1).flatten().copied().collect();
    colliding.sort_by(|a, b| work[*a].scanned.relpath.cmp(&work[*b].scanned.relpath));
    for i in colliding {
        let w = &mut work[i];
        let relpath = w.scanned.relpath.clone();
        let key = collision_cao_key(&w.key, &[relpath.as_str()], &|k| reserved.contains(k))
            .unwrap_or_else(|_| format!("collision-{}", &w.uid[..16]));
        reserved.insert(key.clone());
        w.uid = collision_uid(&w.uid, &relpath);
        w.key = key;
        w.key_source = KeySource::Collision;
        w.reason = Some("identity-collision".into());
        w.status = NoteStatus::Quarantined;
        w.renamed_from = None;
        w.findings.push(Finding::new(
            FindingCode::KeyCollision,
            "duplicate authored or derived cao.key",
        ));
    }

    // 4. Exclusions.
    let mut exclusions = current.exclusions.clone();
    for w in &mut work {
        let s = w.scanned;
        let in_scope = |e: &Exclusion| e.scope == s.scope && e.scope_id == s.scope_id;
        let found = exclusions
            .iter()
            .position(|e| in_scope(e) && e.key == w.key)
            .map(|i| (i, false))
            .or_else(|| {
                exclusions
                    .iter()
                    .position(|e| in_scope(e) && e.last_known_relpath == s.relpath)
                    .or_else(|| {
                        exclusions.iter().position(|e| {
                            in_scope(e) && e.content_sha256.is_some() && e.content_sha256 == s.content_sha256
                        })
                    })
                    .map(|i| (i, true))
            });
        if let Some((i, moved)) = found {
            if moved {
                let e = &mut exclusions[i];
                e.key = w.key.clone();
                e.last_known_relpath = s.relpath.clone();
                e.content_sha256 = s.content_sha256.clone();
                e.key_source = w.key_source;
                e.key_source_reason = w.reason.clone();
            }
            w.status = NoteStatus::Excluded;
            w.findings.push(Finding::bare(FindingCode::DeindexedRetained));
        }
    }

    // 5. Links and edges, per scope.
    let mut scopes: BTreeMap<ScopeKey, Vec<usize>> = BTreeMap::new();
    for (i, w) in work.iter().enumerate() {
        scopes
            .entry((w.scanned.scope, w.scanned.scope_id.clone()))
            .or_default()
            .push(i);
    }
    let mut edges: Vec<PlannedEdge> = Vec::new();
    for ((scope, scope_id), members) in &scopes {
        let candidates = Candidates::new(
            members
                .iter()
                .map(|i| {
                    let w = &work[*i];
                    Candidate {
                        key: w.key.clone(),
                        relpath: w.scanned.relpath.clone(),
                        aliases: w
                            .scanned
                            .content
                            .as_ref()
                            .map(|c| c.fields.aliases.clone())
                            .unwrap_or_default(),
                        excluded: w.status != NoteStatus::Indexed,
                    }
                })
                .collect(),
        );
        for i in members {
            let w = &work[*i];
            if w.status != NoteStatus::Indexed {
                continue;
            }
            let Some(content) = &w.scanned.content else { continue };
            let (note_edges, link_findings) = note_edges(
                &w.key,
                &w.scanned.relpath,
                &content.links,
                &content.fields.cao.links,
                &candidates,
            );
            let updated = utc_from_ns(w.scanned.mtime_ns.unwrap_or(0));
            edges.extend(note_edges.into_iter().map(|e| PlannedEdge {
                scope: *scope,
                scope_id: scope_id.clone(),
                source_key: w.key.clone(),
                target_key: e.target_key,
                edge_type: e.edge_type,
                status: e.status,
                confidence: e.confidence,
                source_updated_at: updated,
                attributes: e.attributes,
            }));
            let extra: Vec<Finding> = content.link_findings.iter().cloned().chain(link_findings).collect();
            work[*i].findings.extend(extra);
        }
    }
    edges.sort_by(|a, b| {
        (a.scope, &a.scope_id, &a.source_key, a.edge_type, &a.target_key).cmp(&(
            b.scope,
            &b.scope_id,
            &b.source_key,
            b.edge_type,
            &b.target_key,
        ))
    });

    // 6. Rows, metadata, findings.
    let mut notes = Vec::with_capacity(work.len());
    let mut metadata = Vec::new();
    let mut findings = Vec::new();
    for w in &work {
        let s = w.scanned;
        let row = IndexedNote {
            relpath: s.relpath.clone(),
            scope: s.scope,
            scope_id: s.scope_id.clone(),
            key: w.key.clone(),
            note_uid: w.uid.clone(),
            status: w.status,
            managed: s.content.as_ref().and_then(|c| c.fields.cao.managed).unwrap_or(false),
            key_source: w.key_source,
            key_source_reason: w.reason.clone(),
            content_sha256: s.content_sha256.clone(),
            frontmatter_sha256: s.frontmatter_sha256.clone(),
            size_bytes: s.size_bytes,
            mtime_ns: s.mtime_ns,
        };
        let change = match (&w.renamed_from, cur_by_path.get(s.relpath.as_str())) {
            (Some(from), _) => NoteChange::Renamed { from: from.clone() },
            (None, None) => NoteChange::Added,
            (None, Some(old)) if **old == row => NoteChange::Unchanged,
            (None, Some(_)) => NoteChange::Updated,
        };
        if w.status == NoteStatus::Indexed
            && let Some(content) = &s.content
        {
            let mtime = utc_from_ns(s.mtime_ns.unwrap_or(0));
            metadata.push(MetadataRow {
                id: metadata_row_id(&w.uid),
                note_uid: w.uid.clone(),
                key: w.key.clone(),
                scope: s.scope,
                scope_id: s.scope_id.clone(),
                memory_type: content.fields.cao.memory_type.unwrap_or(MemoryType::Reference),
                file_path: s.relpath.clone(),
                tags: content.fields.tags.clone(),
                token_estimate: content.words,
                created_at: content.fields.created.unwrap_or(mtime),
                updated_at: mtime,
            });
        }
        findings.extend(fold_findings(&s.relpath, &w.findings, &run));
        notes.push(PlannedNote {
            row,
            change,
            aliases: s.content.as_ref().map(|c| c.fields.aliases.clone()).unwrap_or_default(),
        });
    }
    notes.sort_by(|a, b| a.row.relpath.cmp(&b.row.relpath));
    metadata.sort_by(|a, b| (a.scope, &a.scope_id, &a.key).cmp(&(b.scope, &b.scope_id, &b.key)));
    findings.sort_by(|a, b| (&a.relpath, a.code).cmp(&(&b.relpath, b.code)));
    let mut aliases = current.aliases.clone();
    aliases.extend(new_aliases);
    let count = |s: &[NoteStatus]| notes.iter().filter(|n| s.contains(&n.row.status)).count();
    let report = ReconcileReport {
        vault_id: vault.id.clone(),
        run_id: run,
        indexed: count(&[NoteStatus::Indexed]),
        quarantined: count(&[NoteStatus::Quarantined]),
        skipped: count(&[NoteStatus::Skipped, NoteStatus::Unsupported]),
        findings: findings.len(),
        deleted: if options.apply { removed.len() } else { 0 },
        rebuilt: options.rebuild,
    };
    ReconcilePlan {
        report,
        run_started_at: options.run_started_at,
        notes,
        removed,
        metadata,
        edges,
        findings,
        aliases,
        exclusions,
    }
}

/// Fold one path's findings into one row per (code, severity).
fn fold_findings(relpath: &str, list: &[Finding], run: &str) -> Vec<FindingRow> {
    let mut groups: BTreeMap<(FindingCode, Severity), Vec<&str>> = BTreeMap::new();
    for f in list {
        groups.entry((f.code, f.severity)).or_default().push(&f.detail);
    }
    groups
        .into_iter()
        .map(|((code, severity), details)| {
            let count = details.len();
            let mut distinct: Vec<&str> = details;
            distinct.sort_unstable();
            distinct.dedup();
            FindingRow {
                id: sha256_nul_joined(&["finding", run, code.as_str(), relpath, severity.as_str()]),
                relpath: relpath.to_owned(),
                code,
                severity,
                count,
                detail: format!("count={count}; code={}; detail={}", code.as_str(), distinct.join(",")),
                run_id: run.to_owned(),
            }
        })
        .collect()
}

/// What forgetting a key of a vault-bound scope does to the vault state (spec/vault-facts.md section 5 "Forget").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForgetPlan {
    /// No note of the scope has that key: nothing changes (action `absent`, source `vault`).
    Absent,
    /// The note is de-indexed: the exclusion is upserted, the row becomes `excluded`, its metadata row and vault
    /// edges are deleted; the file is kept.
    Deindex {
        /// The note's uid.
        note_uid: String,
        /// Its vault-relative path (the result's `path`).
        relpath: String,
        /// The exclusion to upsert (keyed by scope, scope id, key).
        exclusion: Exclusion,
    },
}

/// Plan the forget of `key` in `(scope, scope_id)` against the current vault state (any status matches; repeating
/// a forget de-indexes again).
pub fn plan_forget(current: &IndexedVault, scope: Scope, scope_id: Option<&str>, key: &str) -> ForgetPlan {
    let Some(note) = current
        .notes
        .iter()
        .find(|n| n.scope == scope && n.scope_id.as_deref() == scope_id && n.key == key)
    else {
        return ForgetPlan::Absent;
    };
    ForgetPlan::Deindex {
        note_uid: note.note_uid.clone(),
        relpath: note.relpath.clone(),
        exclusion: Exclusion {
            scope,
            scope_id: scope_id.map(str::to_owned),
            key: key.to_owned(),
            last_known_relpath: note.relpath.clone(),
            content_sha256: note.content_sha256.clone(),
            key_source: note.key_source,
            key_source_reason: note.key_source_reason.clone(),
        },
    }
}

impl IndexedVault {
    /// Apply a [`ForgetPlan`] to this state (the exclusion upserted, the row marked `excluded`).
    pub fn apply_forget(&mut self, plan: &ForgetPlan) {
        let ForgetPlan::Deindex {
            note_uid, exclusion, ..
        } = plan
        else {
            return;
        };
        if let Some(n) = self.notes.iter_mut().find(|n| n.note_uid == *note_uid) {
            n.status = NoteStatus::Excluded;
        }
        match self
            .exclusions
            .iter_mut()
            .find(|e| e.scope == exclusion.scope && e.scope_id == exclusion.scope_id && e.key == exclusion.key)
        {
            Some(e) => *e = exclusion.clone(),
            None => self.exclusions.push(exclusion.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_and_times() {
        let at = DateTime::parse_from_rfc3339("2025-01-01T00:00:00Z")
            .expect("time")
            .with_timezone(&Utc);
        assert_eq!(
            run_id("demo", at),
            "ed099385070c571f77afcbeed026fe516bfac0a0b08adb6121897e8cdefec787"
        );
        assert_eq!(
            utc_from_ns(1_704_067_200_000_000_000).to_string(),
            "2024-01-01 00:00:00"
        );
    }
}
