//! The interface is defined without its implementations: read from this crate's sources, no module outside
//! `embedded/` names a handle of the SQLite index or the wiki files (the index itself, its transactions, the wiki
//! layout and its locks, SQLite), no module outside a backend (`embedded/`, `postgres/`) names a connection pool or
//! a database client, and the crate root gives none of them out. The record types the SQLite layer defines (rows,
//! filters, journal rows) are the interface's vocabulary and may be named anywhere.

use std::collections::BTreeMap;
use std::path::Path;

/// Names only a backend (`embedded/`, `postgres/`) may use: connection pools and database clients.
const BACKEND_ONLY: [&str; 3] = ["r2d2", "postgres::Client", "postgres::Config"];

/// Names that are the embedded backend's implementation, never the interface's nor another backend's.
const IMPLEMENTATION: [&str; 11] = [
    "cao_index::Index",
    "cao_index::JournalTx",
    "cao_index::FollowUp",
    "Index::open",
    "cao_wiki::WikiLayout",
    "cao_wiki::TopicLock",
    "cao_wiki::LockedTopic",
    "cao_wiki::read_topic_file",
    "cao_wiki::TopicWrite",
    "rusqlite",
    "cao_index::integrity",
];

/// Every `.rs` file under `src/` (relative path -> code without line comments).
fn sources() -> BTreeMap<String, String> {
    fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).expect("read src/") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                walk(&path, base, out);
            } else if path.extension().and_then(|e| e.to_str()) == Some("rs") {
                let rel = path
                    .strip_prefix(base)
                    .expect("under src/")
                    .to_string_lossy()
                    .into_owned();
                let text = std::fs::read_to_string(&path).expect("read source");
                let code: Vec<&str> = text.lines().map(|l| l.find("//").map_or(l, |i| &l[..i])).collect();
                out.insert(rel, code.join("\n"));
            }
        }
    }
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    walk(&base, &base, &mut out);
    out
}

/// Whether `code` names `name` as a whole path (not as the prefix of a longer identifier).
fn names(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + name.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[test]
fn only_the_embedded_backend_names_the_index_and_the_wiki_handles() {
    let srcs = sources();
    assert!(
        srcs.contains_key("tables.rs") && srcs.contains_key("embedded/mod.rs"),
        "{:?}",
        srcs.keys()
    );
    for (file, code) in &srcs {
        if file.starts_with("embedded/") || file == "module_rules.rs" {
            continue;
        }
        if !file.starts_with("postgres/") {
            for name in BACKEND_ONLY {
                assert!(!names(code, name), "{file} names {name}, which belongs to a backend");
            }
        }
        // `index_recovery.rs` checks and moves a damaged database file aside before any backend opens it: it may name
        // the index's integrity check, nothing else of it.
        for name in IMPLEMENTATION {
            if file == "index_recovery.rs" && name == "cao_index::integrity" {
                continue;
            }
            // Another backend may use the wiki layout's path rule, to give its memories the locators the embedded
            // backend's files have.
            if file.starts_with("postgres/") && name == "cao_wiki::WikiLayout" {
                continue;
            }
            assert!(
                !names(code, name),
                "{file} names {name}, which belongs to the embedded backend"
            );
        }
    }
}

#[test]
fn the_rule_sees_whole_paths_only() {
    assert!(names("use cao_index::Index;", "cao_index::Index"));
    assert!(names("let x = cao_index::Index::open(p);", "cao_index::Index"));
    assert!(!names("Index(#[from] cao_index::IndexError),", "cao_index::Index"));
    assert!(!names("use my_rusqlite_shim;", "rusqlite"));
}

#[test]
fn the_embedded_backend_is_private() {
    let lib = &sources()["lib.rs"];
    assert!(
        lib.contains("mod embedded;") && !lib.contains("pub mod embedded"),
        "embedded/ must stay private"
    );
    for line in lib.lines().filter(|l| l.contains("pub use embedded::")) {
        for forbidden in ["Embedded", "Index"] {
            assert!(!line.contains(forbidden), "lib.rs gives out {forbidden}: {line}");
        }
    }
}
