//! Conformance of the pure rules: `vault_findings.json` (severities), `vault_identity.json` (derived keys, uids,
//! authored keys, collision keys), `vault_boundary.json` (path normalisation, containment, exclusion),
//! `vault_parse_note.json` (frontmatter split, YAML 1.1 values, the `cao` block, findings),
//! `vault_extract_links.json` and `vault_resolve_link.json`. Every case runs and is compared exactly.

use crate::support::{Failures, yaml_json};
use cao_testkit::conformance_cases;
use cao_vault::identity::{authored_key, collision_cao_key, derive_cao_key, note_uid};
use cao_vault::links::{Candidate, Candidates, Resolution, extract_links, resolve_link};
use cao_vault::note::{Split, parse_note};
use cao_vault::path::{Excludes, normalize_relpath, relpath_within_folder};
use cao_vault::{FindingCode, SecretGate};
use serde_json::{Value, json};

#[test]
fn findings_severities() {
    let cases = conformance_cases("vault_findings.json");
    let mut f = Failures::default();
    for c in &cases {
        let name = c["name"].as_str().unwrap_or_default();
        let code = FindingCode::parse(c["input"]["code"].as_str().expect("code")).expect("known code");
        let gate = match c["input"]["secret_gate"].as_str() {
            Some("warn") => SecretGate::Warn,
            _ => SecretGate::Reject,
        };
        f.check(
            "vault_findings",
            name,
            "severity",
            &json!(code.severity(gate).as_str()),
            &c["expected"]["severity"],
        );
    }
    f.finish(cases.len());
}

#[test]
fn identity() {
    let cases = conformance_cases("vault_identity.json");
    let mut f = Failures::default();
    for c in &cases {
        let name = c["name"].as_str().unwrap_or_default();
        let i = &c["input"];
        let got = match i["fn"].as_str() {
            Some("derive_cao_key") => {
                let (key, nfc) = derive_cao_key(i["mapping_relative_path"].as_str().expect("path"));
                json!({"key": key, "nfc_path": nfc})
            }
            Some("derive_note_uid") => json!({"note_uid": note_uid(
                i["vault_id"].as_str().expect("vault"),
                i["scope"].as_str().expect("scope"),
                i["scope_id"].as_str(),
                i["key"].as_str().expect("key"),
            )}),
            Some("cao_key") => match authored_key(i["authored_key"].as_str()) {
                Ok(k) => json!({"key": k}),
                Err(msg) => json!({"error": "ValueError", "message": msg}),
            },
            Some("collision_cao_key") => {
                let parts: Vec<&str> = i["digest_parts"]
                    .as_array()
                    .expect("parts")
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                let reserved: Vec<&str> = i["reserved_keys"]
                    .as_array()
                    .expect("reserved")
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                match collision_cao_key(i["canonical_key"].as_str().expect("key"), &parts, &|k| {
                    reserved.contains(&k)
                }) {
                    Ok(k) => json!({"key": k}),
                    Err(_) => json!({"error": "ValueError"}),
                }
            }
            other => panic!("unknown fn {other:?}"),
        };
        f.check("vault_identity", name, "result", &got, &c["expected"]);
    }
    f.finish(cases.len());
}

#[test]
fn boundary() {
    let cases = conformance_cases("vault_boundary.json");
    let mut f = Failures::default();
    for c in &cases {
        let name = c["name"].as_str().unwrap_or_default();
        let i = &c["input"];
        let rel = i["relpath"].as_str().expect("relpath");
        let got = match i["fn"].as_str() {
            Some("normalize_relpath") => match normalize_relpath(rel) {
                Ok(p) => json!({"normalized": p, "supported": true}),
                Err(e) => json!({"error": "ValueError", "message": e.to_string(), "supported": false}),
            },
            Some("relpath_within_folder") => match relpath_within_folder(rel, i["folder"].as_str().expect("folder")) {
                Ok(w) => json!({"within": w}),
                Err(e) => json!({"error": "ValueError", "message": e.to_string()}),
            },
            Some("is_excluded_relpath") => {
                let ex: Vec<&str> = i["exclude"]
                    .as_array()
                    .expect("exclude")
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                json!({"excluded": Excludes::new(&ex).is_excluded(rel)})
            }
            other => panic!("unknown fn {other:?}"),
        };
        f.check("vault_boundary", name, "result", &got, &c["expected"]);
    }
    f.finish(cases.len());
}

#[test]
fn parse_note_cases() {
    let cases = conformance_cases("vault_parse_note.json");
    let mut f = Failures::default();
    for c in &cases {
        let name = c["name"].as_str().unwrap_or_default();
        let text = c["input"]["text"].as_str().expect("text");
        let max = usize::try_from(c["input"]["max_frontmatter_bytes"].as_u64().expect("max")).expect("max");
        let parsed = parse_note(text, max);
        let chars = |byte: usize| text[..byte].chars().count();
        let region = match parsed.split {
            Some(Split::Fenced(r)) => json!({
                "raw": r.raw(text), "body": r.body(text), "start": chars(r.start), "end": chars(r.end)
            }),
            Some(Split::None(p)) => json!({"raw": "", "body": &text[p..], "start": chars(p), "end": chars(p)}),
            _ => json!({"raw": "", "body": text, "start": 0, "end": 0}),
        };
        let (fm, cao, code, detail) = match &parsed.outcome {
            Ok(fm) => {
                let data = fm.data.as_ref().map_or(json!({}), yaml_json);
                let cao = fm
                    .data
                    .as_ref()
                    .and_then(|d| d.get("cao"))
                    .filter(|v| !matches!(v, cao_vault::yaml::Yaml::Null))
                    .map_or(json!({}), yaml_json);
                (data, cao, Value::Null, Value::Null)
            }
            Err(finding) => (
                json!({}),
                json!({}),
                json!(finding.code.as_str()),
                json!(finding.detail),
            ),
        };
        let got =
            json!({"frontmatter": fm, "cao": cao, "region": region, "finding_code": code, "finding_detail": detail});
        f.check("vault_parse_note", name, "result", &got, &c["expected"]);
    }
    f.finish(cases.len());
}

fn link_json(l: &cao_vault::links::RawLink) -> Value {
    json!({"embed": l.embed, "target": l.target, "relative_path": l.relative_path})
}

#[test]
fn extract_links_cases() {
    let cases = conformance_cases("vault_extract_links.json");
    let mut f = Failures::default();
    for c in &cases {
        let name = c["name"].as_str().unwrap_or_default();
        let i = &c["input"];
        let text = match i["text_generator"].as_str() {
            None => i["text"].as_str().expect("text").to_owned(),
            Some("limit-1000") => (0..1000).map(|n| format!("[[n{n}]]")).collect::<Vec<_>>().join(" "),
            Some("limit-1001") => (0..=1000).map(|n| format!("[[n{n}]]")).collect::<Vec<_>>().join(" "),
            Some("limit-mixed-1001") => {
                let mut t = (0..999).map(|n| format!("[[n{n}]]")).collect::<Vec<_>>().join(" ");
                t.push_str(" [a](a.md) [b](b.md)");
                t
            }
            Some(other) => panic!("unknown generator {other}"),
        };
        let (links, findings) = extract_links(&text);
        let codes: Vec<&str> = findings.iter().map(|x| x.code.as_str()).collect();
        let e = &c["expected"];
        let mut got = json!({"count": links.len(), "findings": codes});
        if e.get("links").is_some() {
            got["links"] = links.iter().map(link_json).collect();
        } else {
            got["first"] = links.first().map_or(Value::Null, link_json);
            got["last"] = links.last().map_or(Value::Null, link_json);
        }
        f.check("vault_extract_links", name, "result", &got, e);
    }
    f.finish(cases.len());
}

/// The candidate sets of `vault_resolve_link.json`, from the file's `note` (`CANDIDATE_SETS={...}`).
fn candidate_sets() -> serde_json::Map<String, Value> {
    let path = cao_testkit::conformance_dir().join("vault_resolve_link.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json");
    let note = doc["note"].as_str().expect("note");
    let start = note.find("CANDIDATE_SETS=").expect("candidate sets") + "CANDIDATE_SETS=".len();
    let sets: Value = serde_json::Deserializer::from_str(&note[start..])
        .into_iter::<Value>()
        .next()
        .expect("a value")
        .expect("json");
    sets.as_object().expect("object").clone()
}

#[test]
fn resolve_link_cases() {
    let cases = conformance_cases("vault_resolve_link.json");
    let sets = candidate_sets();
    let mut f = Failures::default();
    for c in &cases {
        let name = c["name"].as_str().unwrap_or_default();
        let i = &c["input"];
        let set = &sets[i["candidates"].as_str().expect("set")];
        let candidates = Candidates::new(
            set.as_array()
                .expect("list")
                .iter()
                .map(|n| Candidate {
                    key: n["key"].as_str().expect("key").to_owned(),
                    relpath: n["relpath"].as_str().expect("relpath").to_owned(),
                    aliases: n["aliases"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect(),
                    excluded: n["excluded"].as_bool().unwrap_or(false),
                })
                .collect(),
        );
        let (r, findings) = resolve_link(
            i["raw_target"].as_str().expect("target"),
            i["embed"].as_bool().unwrap_or(false),
            i["relative_path"].as_bool().unwrap_or(false),
            i["source_relpath"].as_str(),
            &candidates,
        );
        let (key, attrs) = match &r {
            Resolution::Resolved { key, attributes } => (
                json!(key),
                attributes.as_ref().map_or(Value::Null, |a| Value::Object(a.to_json())),
            ),
            _ => (Value::Null, Value::Null),
        };
        let code = findings.first().map_or(Value::Null, |x| json!(x.code.as_str()));
        let got = json!({"outcome": r.outcome(), "target_key": key, "finding_code": code, "attributes": attrs});
        f.check("vault_resolve_link", name, "result", &got, &c["expected"]);
    }
    f.finish(cases.len());
}
