//! The module graph of this crate, read from its sources: no cycles, so the operations form a DAG (the crates above
//! and below are kept in place by `cargo xtask tidy`).
//!
//! An edge `a -> b` is any path `crate::b` (or `crate::{.., b, ..}`, or a root re-export `crate::Name` of an item
//! of `b`) in the code of `src/a.rs`, comments excluded.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `src/<name>.rs` -> its code with comments removed (line comments and doc comments; this crate has no block
/// comments).
fn sources() -> BTreeMap<String, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("read src/") {
        let path = entry.expect("dir entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("rs") {
            continue;
        }
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("utf-8 name")
            .to_owned();
        let text = std::fs::read_to_string(&path).expect("read source");
        let code: String = text
            .lines()
            .map(|l| match l.find("//") {
                // `//` inside a string literal (a URL) would cut too much; no code line here has one.
                Some(i) => &l[..i],
                None => l,
            })
            .collect::<Vec<_>>()
            .join("\n");
        out.insert(name, code);
    }
    out
}

/// The first path segment of every `crate::` path in `code`, expanding one level of `crate::{a, b::c}`.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.trim()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let mut part = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.insert(ident(&part));
                        part.clear();
                        continue;
                    }
                    _ => {}
                }
                part.push(c);
            }
            out.insert(ident(&part));
        } else {
            out.insert(ident(rest));
        }
    }
    out.remove("");
    out
}

/// Root re-exports of `lib.rs`: `pub use m::{A, B}` / `pub use m::A` -> `A -> m`; `pub use m::*` -> every `pub` item
/// name of `m`.
fn reexports(srcs: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let lib = &srcs["lib"];
    let mut out = BTreeMap::new();
    for stmt in lib.split(';') {
        let Some(rest) = stmt.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, names)) = rest.split_once("::") else {
            continue;
        };
        if !srcs.contains_key(module) {
            continue;
        }
        let names = names.trim().trim_start_matches('{').trim_end_matches('}');
        if names.trim() == "*" {
            for line in srcs[module].lines() {
                let words: Vec<&str> = line.split_whitespace().collect();
                if let [first, kind, name, ..] = words.as_slice()
                    && *first == "pub"
                    && ["struct", "enum", "fn", "const", "type", "trait"].contains(kind)
                {
                    let name: String = name.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    out.insert(name, module.to_owned());
                }
            }
            continue;
        }
        for name in names.split(',') {
            let name = name.trim();
            if !name.is_empty() {
                out.insert(name.to_owned(), module.to_owned());
            }
        }
    }
    out
}

/// `module -> modules it uses`, facade and root excluded as sources.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let srcs = sources();
    let roots = reexports(&srcs);
    let mut g = BTreeMap::new();
    for (name, code) in &srcs {
        if name == "lib" || name == "module_graph" {
            continue;
        }
        let deps: BTreeSet<String> = crate_paths(code)
            .into_iter()
            .filter_map(|p| {
                if srcs.contains_key(&p) {
                    Some(p)
                } else {
                    roots.get(&p).cloned()
                }
            })
            .filter(|d| d != name)
            .collect();
        g.insert(name.clone(), deps);
    }
    g
}

/// A cycle of `g` as a path `a -> b -> .. -> a`, if there is one.
fn find_cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(n) {
            Some(2) => return None,
            Some(1) => {
                let start = stack.iter().position(|s| s == n).unwrap_or(0);
                let mut cycle = stack[start..].to_vec();
                cycle.push(n.to_owned());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(n.to_owned(), 1);
        stack.push(n.to_owned());
        for d in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(d, g, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(n.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in g.keys() {
        if let Some(c) = visit(n, g, &mut state, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}

#[test]
fn the_parser_sees_grouped_paths_and_root_reexports() {
    let paths = crate_paths("use crate::{audit::{self, X}, store::Store};\nlet x = crate::MAX;");
    assert_eq!(paths, BTreeSet::from(["audit".into(), "store".into(), "MAX".into()]));
    let mut g = BTreeMap::new();
    g.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
    g.insert("b".to_owned(), BTreeSet::from(["a".to_owned()]));
    assert_eq!(find_cycle(&g), Some(vec!["a".into(), "b".into(), "a".into()]));
}

#[test]
fn no_module_cycle() {
    let g = graph();
    assert!(
        g.contains_key("write") && g.contains_key("recall"),
        "sources found: {g:?}"
    );
    assert_eq!(find_cycle(&g), None, "module graph: {g:#?}");
}
