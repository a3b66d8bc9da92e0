//! The writing calls: store (upsert), forget, delete and clear (spec 000 "memory_store", "memory_forget").
//!
//! Each call validates every argument before any I/O, resolves the target scope id, goes through the store's write
//! protocol ([`Store::write`], [`Store::remove`]) and appends one audit line. A store is [`prepare`] (every rule
//! that needs no I/O) then [`commit`]; an import runs each bundle topic through the same two steps
//! ([`commit_batch`] for many at once). Every committed store then runs the related-memory pass
//! ([`crate::related`]). Removing a memory also purges every
//! relationship edge into or out of it ([`remove`]), audited as the acting caller.

use crate::types::{Call, ForgetArgs, ForgetResult, MAX_TAGS_BYTES, StoreArgs, StoreResult};
use cao_core::key::normalize_tags;
use cao_core::scope::scope_write_allowed;
use cao_core::{Key, MemoryRef, MemoryType, Scope, Settings, TerminalContext};
use cao_store::JournalWriter;
use cao_store::MemoryError;
use cao_store::audit::{self, AuditEvent, actor_of};
use cao_store::visibility;
use cao_store::{NewEntry, Presence, Recoverable, Store};
use chrono::{DateTime, Utc};

/// Store (upsert) a memory; see `MemoryService::store` for the rules. Memory must be enabled (the caller checks).
/// [`prepare`], then the target scope id, then [`commit`].
///
/// Errors: [`MemoryError::Invalid`], [`MemoryError::Secret`], [`MemoryError::Unauthorized`],
/// [`MemoryError::Corrupt`], [`MemoryError::PartialWrite`], I/O and index errors.
///
/// In a long-running process that compacts in the background (`queue` enabled), a topic that qualifies
/// ([`crate::auto_compact::wanted`]) is queued for the worker after the write.
pub fn store(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    call: Call<StoreArgs>,
    queue: &crate::auto_compact::Queue,
) -> Result<StoreResult, MemoryError> {
    let prepared = prepare(&call.args, call.options.caller_scope)?;
    let scope_id = visibility::target_scope_id(store, ctx, prepared.scope, settings)?;
    // A vault-bound scope: the entry goes to the vault's managed folder (spec/vault-facts.md section 6).
    if let Some(v) = crate::vault::store(
        store,
        settings,
        ctx,
        prepared.scope,
        scope_id.as_deref(),
        &prepared.key,
        prepared.memory_type,
        &prepared.tags,
        &prepared.content,
    )? {
        audit::record(
            store,
            AuditEvent::Store,
            actor_of(ctx),
            prepared.scope,
            v.scope_id.as_deref(),
            prepared.key.as_str(),
            v.action,
        );
        return Ok(StoreResult {
            success: true,
            key: prepared.key.as_str().to_owned(),
            scope: prepared.scope,
            scope_id: v.scope_id,
            file_path: v.file_path,
            action: v.action,
            journal_entry: None,
            possible_duplicates: Vec::new(),
            duplicate_advice: None,
            source_kind: Some("vault".to_owned()),
            source_path: Some(v.relpath),
        });
    }
    commit_queued(store, settings, ctx, &prepared, scope_id, None, Some(queue))
}

/// A `memory_store` call that passed every rule that needs no I/O ([`prepare`]).
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The target scope.
    pub scope: Scope,
    /// The type label.
    pub memory_type: MemoryType,
    /// The normalised tags.
    pub tags: String,
    /// The sanitised (or derived) key.
    pub key: Key,
    /// The content, as given.
    pub content: String,
}

/// Every rule of `memory_store` that needs no I/O, in order: content (non-empty, at most
/// [`cao_store::MAX_CONTENT_BYTES`], no NUL), tags (normalised, at most [`MAX_TAGS_BYTES`], writable in the header),
/// the key (service sanitising rule, or derived from content), the write authorisation of `caller` (`None`: the
/// operator, `global`), and for federated the secret gate over content, tags and the given key. An import runs each
/// planned topic through this same function. The scope and type names were checked where the arguments were parsed
/// (`cao_protocol::ToolCall::parse`, the CLI); here they are already [`Scope`] and [`MemoryType`].
///
/// Errors: [`MemoryError::Invalid`], [`MemoryError::Secret`], [`MemoryError::Unauthorized`].
pub fn prepare(req: &StoreArgs, caller: Option<Scope>) -> Result<Prepared, MemoryError> {
    let scope = req.scope.unwrap_or(Scope::Project);
    let memory_type = req.memory_type.unwrap_or(MemoryType::Project);
    validate_content(&req.content)?;
    let tags = normalize_tags(req.tags.as_deref().unwrap_or(""));
    if tags.len() > MAX_TAGS_BYTES {
        return Err(MemoryError::Invalid(format!(
            "tags are {} bytes; the maximum is {MAX_TAGS_BYTES}",
            tags.len()
        )));
    }
    cao_store::validate_tags(&tags).map_err(|e| MemoryError::Invalid(e.to_string()))?;
    let key = match req.key.as_deref() {
        Some(k) => Key::sanitize(k)?,
        None => Key::from_content(&req.content).ok_or_else(|| {
            MemoryError::Invalid(
                "cannot derive a key from content (its first six words have no [a-z0-9]); pass `key`".into(),
            )
        })?,
    };
    let caller = caller.unwrap_or(Scope::Global).as_str();
    if !scope_write_allowed(caller, scope.as_str()) {
        return Err(MemoryError::Unauthorized {
            caller: caller.to_owned(),
            target: scope.to_string(),
        });
    }
    if scope == Scope::Federated
        && let Some(pattern) = [req.content.as_str(), tags.as_str(), req.key.as_deref().unwrap_or("")]
            .into_iter()
            .find_map(cao_core::secret::scan)
    {
        return Err(MemoryError::Secret { pattern });
    }
    Ok(Prepared {
        scope,
        memory_type,
        tags,
        key,
        content: req.content.clone(),
    })
}

/// Write a prepared store into `scope_id` (resolved by the caller) through [`Store::put_then`], with the entry at
/// `at` (`None` = now) and the related-memory pass in the same index transaction ([`crate::related::refresh_in`],
/// best effort: it never fails the store), and append the audit line. When the write created a new key, the receipt names
/// possible duplicates under `memory.decisions.duplicates = advise` ([`crate::decisions::duplicates`]; never
/// blocks or changes the write).
///
/// Errors: [`MemoryError::Corrupt`], [`MemoryError::PartialWrite`], I/O and index errors.
pub fn commit(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    p: &Prepared,
    scope_id: Option<String>,
    at: Option<DateTime<Utc>>,
) -> Result<StoreResult, MemoryError> {
    commit_queued(store, settings, ctx, p, scope_id, at, None)
}

/// [`commit`], then queue the topic for automatic compaction in `queue` when it qualifies.
fn commit_queued(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    p: &Prepared,
    scope_id: Option<String>,
    at: Option<DateTime<Utc>>,
    queue: Option<&crate::auto_compact::Queue>,
) -> Result<StoreResult, MemoryError> {
    let mut entry = new_entry(ctx, p, scope_id, at);
    entry.model_dir = settings.embedding_model_dir();
    // The related-memory pass runs in the write's own index transaction (one commit per store).
    let (written, related) = store.put_then(entry, |f, row| crate::related::refresh_in(f, store, row))?;
    crate::related::log_failure(&written.row, related);
    if let Some(q) = queue
        && q.enabled()
        && crate::auto_compact::wanted(settings, &written.row)
    {
        q.push(&written.row.memory_ref());
    }
    let duplicates = if written.created {
        crate::decisions::duplicates(store, settings, &written.row)
    } else {
        Vec::new()
    };
    let mut result = stored(store, ctx, written);
    if !duplicates.is_empty() {
        result.duplicate_advice = Some(crate::decisions::DUPLICATE_ADVICE.to_owned());
        result.possible_duplicates = duplicates;
    }
    Ok(result)
}

/// [`commit`] of many prepared stores into one `scope_id` through [`Store::put_batch`] (one index transaction),
/// each with its entry time, then the related-memory pass of the written rows ([`crate::related::refresh_many`]:
/// two more transactions for the batch); results in order, each failing alone as the batch allows.
pub fn commit_batch(
    store: &Store,
    ctx: &TerminalContext,
    items: &[(&Prepared, Option<DateTime<Utc>>)],
    scope_id: Option<&str>,
) -> Vec<Result<StoreResult, MemoryError>> {
    let entries = items
        .iter()
        .map(|(p, at)| new_entry(ctx, p, scope_id.map(str::to_owned), *at))
        .collect();
    let results = store.put_batch(entries);
    // Every row of the batch is committed before the related pass, so imported topics can relate to each other.
    let rows: Vec<&cao_store::MemoryRow> = results.iter().flatten().map(|w| &w.row).collect();
    crate::related::refresh_many(store, &rows);
    results
        .into_iter()
        .map(|r| r.map(|written| stored(store, ctx, written)))
        .collect()
}

fn new_entry<'a>(
    ctx: &TerminalContext,
    p: &'a Prepared,
    scope_id: Option<String>,
    at: Option<DateTime<Utc>>,
) -> NewEntry<'a> {
    NewEntry {
        memory: MemoryRef::new(p.scope, scope_id, p.key.clone()),
        memory_type: p.memory_type,
        tags: p.tags.clone(),
        content: &p.content,
        provider: ctx.provider.clone(),
        terminal_id: ctx.terminal_id.clone(),
        session: ctx.session_name.clone(),
        at,
        model_dir: None,
    }
}

/// The audit line and the result of a committed store.
fn stored(store: &Store, ctx: &TerminalContext, written: cao_store::Written) -> StoreResult {
    let action = if written.created { "created" } else { "updated" };
    let row = written.row;
    audit::record(
        store,
        AuditEvent::Store,
        actor_of(ctx),
        row.scope,
        row.scope_id.as_deref(),
        row.key.as_str(),
        action,
    );
    StoreResult {
        success: true,
        key: row.key.as_str().to_owned(),
        scope: row.scope,
        scope_id: row.scope_id,
        file_path: row.file_path,
        action,
        journal_entry: written.journal_entry,
        possible_duplicates: Vec::new(),
        duplicate_advice: None,
        source_kind: None,
        source_path: None,
    }
}

/// Forget a memory by key (agent tool); see `MemoryService::forget`. Memory must be enabled.
///
/// Errors: [`MemoryError::Invalid`], I/O and index errors.
pub fn forget(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    req: ForgetArgs,
) -> Result<ForgetResult, MemoryError> {
    let scope = req.scope.unwrap_or(Scope::Project);
    let key = Key::sanitize(&req.key)?;
    removed_by(store, settings, ctx, AuditEvent::Forget, scope, &key)
}

/// Delete one memory (operator); see `MemoryService::delete`. Memory must be enabled.
///
/// Errors: [`MemoryError::Invalid`], I/O and index errors.
pub fn delete(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    key: &Key,
    scope: Option<Scope>,
) -> Result<ForgetResult, MemoryError> {
    removed_by(
        store,
        settings,
        ctx,
        AuditEvent::Delete,
        scope.unwrap_or(Scope::Project),
        key,
    )
}

/// Remove `key` of `scope` for `ctx` (its own scope id) and audit it as `event`.
fn removed_by(
    store: &Store,
    settings: &Settings,
    ctx: &TerminalContext,
    event: AuditEvent,
    scope: Scope,
    key: &Key,
) -> Result<ForgetResult, MemoryError> {
    let scope_id = visibility::target_scope_id(store, ctx, scope, settings)?;
    // A vault-bound scope: the note is de-indexed (its file kept), then a native memory of the key, if any, removed
    // (spec/vault-facts.md section 5 "Forget").
    let vault = crate::vault::forget(store, settings, scope, scope_id.as_deref(), key.as_str())?;
    let memory = MemoryRef::new(scope, scope_id, key.clone());
    match vault {
        None => removed_as(store, ctx, event, &memory),
        Some(crate::vault::VaultForget::Absent) => Ok(ForgetResult {
            success: true,
            deleted: false,
            key: key.to_string(),
            scope,
            action: "absent",
            path: String::new(),
            journal_entry: None,
        }),
        Some(crate::vault::VaultForget::Deindexed { relpath }) => {
            let native = removed_as(store, ctx, event, &memory)?;
            Ok(ForgetResult {
                deleted: true,
                action: if native.deleted {
                    "deleted_and_deindexed"
                } else {
                    "deindexed"
                },
                path: relpath,
                ..native
            })
        }
    }
}

/// Remove the memory `memory` names (its exact identity, whoever's scope id it has) and audit it as `event`.
fn removed_as(
    store: &Store,
    ctx: &TerminalContext,
    event: AuditEvent,
    memory: &MemoryRef,
) -> Result<ForgetResult, MemoryError> {
    let result = remove(store, actor_of(ctx), &writer_of(ctx), memory)?;
    audit::record(
        store,
        event,
        actor_of(ctx),
        memory.scope,
        memory.scope_id(),
        &result.key,
        result.action,
    );
    Ok(result)
}

/// Delete the memory with the exact identity `memory` (operator: the memory inspector deletes the memory of the
/// entry it shows, which may belong to another session or agent than the caller's); audited as a delete by `ctx`.
/// A missing memory is `action: "absent"`, as for [`delete`].
///
/// Errors: I/O and index errors.
pub fn delete_memory(store: &Store, ctx: &TerminalContext, memory: &MemoryRef) -> Result<ForgetResult, MemoryError> {
    removed_as(store, ctx, AuditEvent::Delete, memory)
}

/// Delete every memory of `scope` visible to the caller; see `MemoryService::clear`. Returns how many were
/// deleted. Memory must be enabled.
///
/// Errors: visibility, I/O and index errors (memories removed before the failure stay removed).
pub fn clear(store: &Store, settings: &Settings, ctx: &TerminalContext, scope: Scope) -> Result<usize, MemoryError> {
    let rows = visibility::visible_rows(store, ctx, settings, Some(scope), None, false, usize::MAX)?;
    let mut n = 0;
    for row in rows {
        let result = remove(store, actor_of(ctx), &writer_of(ctx), &row.memory_ref())?;
        audit::record(
            store,
            AuditEvent::Clear,
            actor_of(ctx),
            row.scope,
            row.scope_id.as_deref(),
            &result.key,
            result.action,
        );
        if result.deleted {
            n += 1;
        }
    }
    Ok(n)
}

/// Remove one memory (topic file, index row; a delete entry in its journal written by `writer`) through
/// [`Store::remove`], then every edge into or out of it, each
/// purged edge audited with `actor`. Edges are purged whether or not the file existed, as the reference does: a
/// later memory with the same key must not inherit them.
///
/// Errors: I/O and index errors.
pub fn remove(
    store: &Store,
    actor: &str,
    writer: &JournalWriter,
    memory: &MemoryRef,
) -> Result<ForgetResult, MemoryError> {
    let removed = store.remove(memory, writer)?;
    crate::audit_relationships::relationships(store, actor)
        .purge_memory(memory.scope, memory.scope_id(), &memory.key)
        .map_err(crate::audit_relationships::lifecycle_error)?;
    Ok(ForgetResult {
        success: true,
        deleted: removed.existed,
        key: memory.key.as_str().to_owned(),
        scope: memory.scope,
        action: if removed.existed { "deleted" } else { "absent" },
        path: removed.path.to_string_lossy().into_owned(),
        journal_entry: removed.journal_entry,
    })
}

/// The journal writer of a call made as `ctx`: its terminal and session, and this process.
pub fn writer_of(ctx: &TerminalContext) -> JournalWriter {
    cao_store::journal_writer(ctx.terminal_id.clone(), ctx.session_name.clone())
}

/// Remove one memory, or the half of it `want` names, keeping its text ([`Store::remove_recoverable`]); when it
/// was removed, purge every edge into or out of it (audited with `actor`), as [`remove`] does.
///
/// Errors: I/O, index and relationship errors.
pub fn remove_recoverable(
    store: &Store,
    actor: &str,
    memory: &MemoryRef,
    want: Presence,
    max_text: usize,
) -> Result<Recoverable, MemoryError> {
    let outcome = store.remove_recoverable(memory, want, max_text)?;
    if matches!(outcome, Recoverable::Removed { .. }) {
        crate::audit_relationships::relationships(store, actor)
            .purge_memory(memory.scope, memory.scope_id(), &memory.key)
            .map_err(crate::audit_relationships::lifecycle_error)?;
    }
    Ok(outcome)
}

fn validate_content(content: &str) -> Result<(), MemoryError> {
    if content.trim().is_empty() {
        return Err(MemoryError::Invalid("content must not be empty".into()));
    }
    if content.len() > cao_store::MAX_CONTENT_BYTES {
        return Err(MemoryError::Invalid(format!(
            "content is {} bytes; the maximum is {} (store a summary, or split it into several memories)",
            content.len(),
            cao_store::MAX_CONTENT_BYTES
        )));
    }
    if content.contains('\0') {
        return Err(MemoryError::Invalid("content must not contain NUL bytes".into()));
    }
    Ok(())
}
