//! Conformance of migration planning (`vault_migrate.json`) with the store's part replayed in a small model: the
//! cases' native memories (their entries, type, tags, pinned times, relationships, recall accesses) are rebuilt as
//! native topic files, each `migrate` step plans every memory of the scope ([`plan_item`], [`skip_reason`]), an
//! applied step writes the notes through the writer ([`render_managed`], [`publish`]) and records receipts. The
//! reports' `planned`, `migrated`, `dry_run`, `lossy_fields` and `skipped_vault_authoritative` and the written notes'
//! bytes are compared exactly; dumps, recall and status after a migration are the store's and listed.

use crate::support::{Failures, VaultDir};
use cao_testkit::conformance_cases;
use cao_vault::links::{EdgeOrigin, EdgeStatus, EdgeType};
use cao_vault::migrate::{NativeEdge, NativeMemory, ReceiptState, plan_item, skip_reason};
use cao_vault::writer::{Expected, WriteLimits, publish, read_managed, render_managed};
use chrono::NaiveDateTime;
use serde_json::{Value, json};
use std::collections::BTreeMap;

struct Native {
    memory_type: String,
    tags: String,
    sections: Vec<(String, String)>,
    accessed: bool,
}

#[test]
fn migrate_cases() {
    let cases = conformance_cases("vault_migrate.json");
    let mut f = Failures::default();
    let mut checked = 0;
    let mut store_side = Vec::new();
    for c in &cases {
        let name = c["name"].as_str().unwrap_or_default();
        let dir = VaultDir::new();
        dir.build(&c["input"]);
        let mut settings = dir.settings(&c["input"]["vault"]);
        let mut natives: BTreeMap<String, Native> = BTreeMap::new();
        let mut edges: BTreeMap<String, Vec<NativeEdge>> = BTreeMap::new();
        let mut receipts: BTreeMap<String, ReceiptState> = BTreeMap::new();
        let pinned = NaiveDateTime::parse_from_str("2024-02-01 00:00:00", "%Y-%m-%d %H:%M:%S").expect("time");
        for (i, step) in c["input"]["steps"].as_array().expect("steps").iter().enumerate() {
            let want = &c["expected"][i]["result"];
            let label = format!("step {i} ({})", step["op"].as_str().unwrap_or_default());
            let op = step["op"].as_str().unwrap_or_default();
            if ["store", "relate", "recall", "pin_native_times"].contains(&op) {
                store_side.push(format!(
                    "vault_migrate [{name}] {label}: builds the model; its payload is the store's"
                ));
            }
            match op {
                "store" => {
                    let n = natives
                        .entry(step["key"].as_str().expect("key").to_owned())
                        .or_insert(Native {
                            memory_type: String::new(),
                            tags: String::new(),
                            sections: Vec::new(),
                            accessed: false,
                        });
                    n.memory_type = step["memory_type"].as_str().unwrap_or("project").to_owned();
                    n.tags = cao_core::key::normalize_tags(step["tags"].as_str().unwrap_or(""));
                    n.sections.push((
                        step["occurred_at"].as_str().expect("time").to_owned(),
                        step["content"].as_str().expect("content").to_owned(),
                    ));
                }
                "relate" => {
                    let e = edges
                        .entry(step["source_key"].as_str().expect("source").to_owned())
                        .or_default();
                    for t in step["targets"].as_array().expect("targets") {
                        e.push(NativeEdge {
                            target_key: t.as_str().expect("target").to_owned(),
                            edge_type: EdgeType::RelatesTo,
                            status: EdgeStatus::Active,
                            origin: EdgeOrigin::Human,
                            authored_origin: None,
                            confidence: None,
                        });
                    }
                }
                "recall" if receipts.is_empty() => {
                    for row in want.as_array().into_iter().flatten() {
                        if let Some(n) = natives.get_mut(row["key"].as_str().unwrap_or_default()) {
                            n.accessed = true;
                        }
                    }
                }
                "pin_native_times" => {}
                "settings" => settings = dir.settings(&step["vault"]),
                "migrate" => {
                    let vault = &settings.vaults[0];
                    let apply = step["apply"].as_bool().unwrap_or(false);
                    let (mut migrated, mut lossy, mut skipped) = (0, json!({}), json!({}));
                    for (key, n) in &natives {
                        let text = format!(
                            "# {key}\n<!-- id: {key} -->\n\n{}",
                            n.sections
                                .iter()
                                .map(|(ts, body)| format!("## {ts}\n{body}\n"))
                                .collect::<Vec<_>>()
                                .join("\n")
                        );
                        let native = NativeMemory {
                            key: key.clone(),
                            memory_type: n.memory_type.clone(),
                            tags: n.tags.clone(),
                            created_at: pinned,
                            file_bytes: text.into_bytes(),
                            access_count: u64::from(n.accessed),
                            last_accessed_at: n.accessed,
                            last_compiled_at: false,
                            source_provider: false,
                            source_terminal_id: false,
                            related_keys: false,
                        };
                        let item = plan_item(
                            &vault.id,
                            "global",
                            None,
                            &native,
                            edges.get(key).map_or(&[][..], Vec::as_slice),
                            vault.max_note_bytes,
                            vault.max_frontmatter_bytes,
                        );
                        let target = read_managed(vault, key).expect("read").map(|t| {
                            cao_vault::hash::sha256_hex(
                                cao_vault::note::normalize_text(t.as_bytes()).expect("text").as_bytes(),
                            )
                        });
                        if let Some(reason) = skip_reason(receipts.get(key), &item.native_sha256, target.as_deref()) {
                            skipped[key] = json!(reason);
                            continue;
                        }
                        if !item.lossy.is_empty() {
                            lossy[key] = json!(item.lossy);
                        }
                        if apply {
                            let path = vault.root.join(&vault.managed_folder).join(format!("{key}.md"));
                            let r = render_managed(None, &item.request, WriteLimits::of(vault), &path).expect("render");
                            publish(vault, key, &r.text, &Expected::New).expect("publish");
                            receipts.insert(
                                key.clone(),
                                ReceiptState {
                                    status: "active".into(),
                                    native_sha256: item.native_sha256.clone(),
                                    published_sha256: r.content_sha256.clone(),
                                },
                            );
                            migrated += 1;
                        }
                    }
                    let got = json!({"planned": natives.len(), "migrated": migrated, "deleted_source": 0, "failed": 0,
                                     "dry_run": !apply, "errors": {}, "lossy_fields": lossy,
                                     "skipped_vault_authoritative": skipped});
                    f.check("vault_migrate", name, &label, &got, want);
                    checked += 1;
                }
                "exists" => {
                    let got = json!(dir.root.join(step["path"].as_str().expect("path")).exists());
                    f.check("vault_migrate", name, &label, &got, want);
                    checked += 1;
                }
                "read" => {
                    let got = std::fs::read_to_string(dir.root.join(step["path"].as_str().expect("path")))
                        .map_or(Value::Null, Value::String);
                    f.check("vault_migrate", name, &label, &got, want);
                    checked += 1;
                }
                "recall" => {}
                _ => store_side.push(format!("vault_migrate [{name}] {label}")),
            }
        }
    }
    eprintln!("vault_migrate: {checked} steps checked; the store's (not replayed): {store_side:#?}");
    f.finish(checked);
}
