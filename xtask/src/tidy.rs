//! `cargo xtask tidy`: structural rules of the workspace, checked from `cargo metadata` and the crate roots.
//!
//! The layer of every workspace crate is `[workspace.metadata.layers]` in the root `Cargo.toml` (a number for a
//! library, `"bin"` for a binary crate, `"dev"` for test and tooling crates); `[workspace.metadata.tidy]` names the
//! external crates reserved to edge crates and to binaries. Rules:
//! - every workspace crate has a layer, and every layer entry names a workspace crate;
//! - a normal or build dependency on a workspace crate points down: a library only on libraries of a lower layer
//!   (crates on one layer never depend on each other), a binary only on libraries; dev crates (test kit, bench,
//!   xtask) are only ever dev-dependencies of the others;
//! - `edge-only` crates (tokio, axum, ...) are normal dependencies only of libraries at `edge-layer` or above,
//!   binaries and dev crates; `bin-only` crates (anyhow) only of binaries and dev crates (any crate may use them as
//!   dev-dependencies);
//! - `store-private` crates (the SQLite index and the wiki files) are normal dependencies only of the `store` crate
//!   (and of dev crates): every other crate reaches them through the store interface;
//! - every library and binary root (`lib.rs`, `main.rs`, `src/bin/*.rs`) opens with a `//!` block;
//! - the crate map of ARCHITECTURE.md and the table of crates/README.md give each crate the layer of the table.

use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Where a crate sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Layer {
    /// A library on this layer (0 = bottom).
    Lib(u64),
    /// A binary crate: above every library.
    Bin,
    /// A test or tooling crate: used by the others only as a dev-dependency.
    Dev,
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Layer::Lib(n) => write!(f, "{n}"),
            Layer::Bin => f.write_str("bin"),
            Layer::Dev => f.write_str("dev"),
        }
    }
}

impl Layer {
    fn parse(v: &Value) -> Option<Layer> {
        match v {
            Value::Number(n) => n.as_u64().map(Layer::Lib),
            Value::String(s) if s == "bin" => Some(Layer::Bin),
            Value::String(s) if s == "dev" => Some(Layer::Dev),
            _ => None,
        }
    }
}

/// The documents whose crate lists must agree with the layer table.
pub(crate) struct Docs<'a> {
    /// ARCHITECTURE.md.
    pub(crate) architecture: &'a str,
    /// crates/README.md.
    pub(crate) crates_readme: &'a str,
}

/// Runs the check for the workspace at `root`; prints what it checked and fails listing every violation.
pub(crate) fn run(root: &Path) -> Result<()> {
    let meta = crate::cargo_metadata(root)?;
    let read = |name: &str| {
        std::fs::read_to_string(root.join(name)).with_context(|| format!("cannot read {}", root.join(name).display()))
    };
    let architecture = read("ARCHITECTURE.md")?;
    let crates_readme = read("crates/README.md")?;
    let docs = Docs {
        architecture: &architecture,
        crates_readme: &crates_readme,
    };
    let violations = check(&meta, &docs, &|p: &Path| std::fs::read_to_string(p))?;
    let crates = meta["packages"].as_array().map_or(0, Vec::len);
    if violations.is_empty() {
        println!(
            "tidy: {crates} crates: layering, anyhow/edge dependencies, `//!` crate docs and the crate maps agree"
        );
        return Ok(());
    }
    for v in &violations {
        println!("tidy: {v}");
    }
    bail!("{} tidy violation(s) listed above", violations.len())
}

/// One workspace crate as the rules see it.
struct Crate<'a> {
    name: &'a str,
    layer: Layer,
    /// `(name, kind)`: kind `None` normal, `Some("dev")`, `Some("build")`.
    deps: Vec<(&'a str, Option<&'a str>)>,
    roots: Vec<PathBuf>,
}

fn str_list<'a>(v: &'a Value, what: &str) -> Result<Vec<&'a str>> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(a) => a
            .iter()
            .map(|x| x.as_str().with_context(|| format!("{what}: {x} is not a string")))
            .collect(),
        _ => bail!("{what} must be an array of crate names"),
    }
}

/// All violations of the rules in `meta` (`cargo metadata --format-version 1 --no-deps` output, whose `metadata` is
/// `[workspace.metadata]`), `docs`, and the crate roots as `read` returns them.
///
/// Errors: `meta` lacks the layer table or has malformed entries (these are not violations but a broken setup).
pub(crate) fn check(meta: &Value, docs: &Docs<'_>, read: &dyn Fn(&Path) -> io::Result<String>) -> Result<Vec<String>> {
    let table = meta["metadata"]["layers"]
        .as_object()
        .context("the root Cargo.toml has no [workspace.metadata.layers] table")?;
    let tidy = &meta["metadata"]["tidy"];
    let edge_only = str_list(&tidy["edge-only"], "workspace.metadata.tidy.edge-only")?;
    let bin_only = str_list(&tidy["bin-only"], "workspace.metadata.tidy.bin-only")?;
    let store_private = match &tidy["store-private"] {
        Value::Null => Vec::new(),
        v => str_list(v, "workspace.metadata.tidy.store-private")?,
    };
    let store = match &tidy["store"] {
        Value::Null if store_private.is_empty() => "",
        v => v
            .as_str()
            .context("workspace.metadata.tidy.store must name the store crate")?,
    };
    let edge_layer = match &tidy["edge-layer"] {
        Value::Null => u64::MAX,
        v => v
            .as_u64()
            .context("workspace.metadata.tidy.edge-layer must be a layer number")?,
    };
    let mut layers = BTreeMap::new();
    for (name, v) in table {
        let layer = Layer::parse(v).with_context(|| {
            format!("[workspace.metadata.layers] {name} = {v}: expected a layer number, \"bin\" or \"dev\"")
        })?;
        layers.insert(name.as_str(), layer);
    }

    let mut violations = Vec::new();
    let mut crates = Vec::new();
    for p in meta["packages"]
        .as_array()
        .context("`cargo metadata` has no packages")?
    {
        let name = p["name"].as_str().context("a package without a name")?;
        let Some(&layer) = layers.get(name) else {
            violations.push(format!(
                "{name} has no layer: add it to [workspace.metadata.layers] in Cargo.toml, ARCHITECTURE.md and \
                 crates/README.md"
            ));
            continue;
        };
        let deps = p["dependencies"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|d| Some((d["name"].as_str()?, d["kind"].as_str())))
                    .collect()
            })
            .unwrap_or_default();
        let roots = p["targets"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|t| {
                        t["kind"]
                            .as_array()
                            .is_some_and(|k| k.iter().any(|k| k == "lib" || k == "bin"))
                    })
                    .filter_map(|t| t["src_path"].as_str().map(PathBuf::from))
                    .collect()
            })
            .unwrap_or_default();
        crates.push(Crate {
            name,
            layer,
            deps,
            roots,
        });
    }
    for name in layers.keys() {
        if !crates.iter().any(|c| c.name == *name) {
            violations.push(format!(
                "[workspace.metadata.layers] names {name}, which is not a workspace crate"
            ));
        }
    }

    for c in &crates {
        for &(dep, kind) in &c.deps {
            if kind == Some("dev") {
                continue;
            }
            let how = if kind == Some("build") {
                "build-depends"
            } else {
                "depends"
            };
            if store_private.contains(&dep) && c.name != store && c.layer != Layer::Dev {
                violations.push(format!(
                    "{} (layer {}) {how} on {dep}: only {store} may (every other crate reaches the index and the \
                     wiki files through the store interface)",
                    c.name, c.layer
                ));
            }
            if let Some(&dl) = layers.get(dep) {
                if let Some(why) = layering_violation(c.layer, dl) {
                    violations.push(format!(
                        "{} (layer {}) {how} on {dep} (layer {dl}): {why}",
                        c.name, c.layer
                    ));
                }
            } else if bin_only.contains(&dep) && matches!(c.layer, Layer::Lib(_)) {
                violations.push(format!(
                    "{} (layer {}) {how} on {dep}: only binaries, xtask and bench use it (libraries use thiserror; \
                     tests may take it as a dev-dependency)",
                    c.name, c.layer
                ));
            } else if edge_only.contains(&dep) && matches!(c.layer, Layer::Lib(l) if l < edge_layer) {
                violations.push(format!(
                    "{} (layer {}) {how} on {dep}: only edge crates (layer {edge_layer} and up, binaries) may",
                    c.name, c.layer
                ));
            }
        }
        for root in &c.roots {
            match read(root) {
                Ok(text) if text.trim_start().starts_with("//!") => {}
                Ok(_) => violations.push(format!(
                    "{}: {} does not open with a `//!` block (purpose and invariants of the crate)",
                    c.name,
                    root.display()
                )),
                Err(e) => violations.push(format!("{}: cannot read {}: {e}", c.name, root.display())),
            }
        }
    }

    let in_arch = architecture_layers(docs.architecture);
    let in_readme = readme_layers(docs.crates_readme);
    for c in &crates {
        for (doc, listed) in [
            ("ARCHITECTURE.md crate map", &in_arch),
            ("crates/README.md", &in_readme),
        ] {
            match listed.get(c.name) {
                Some(l) if *l == c.layer => {}
                Some(l) => violations.push(format!(
                    "{doc} puts {} on layer {l}; Cargo.toml [workspace.metadata.layers] says {}",
                    c.name, c.layer
                )),
                None => violations.push(format!("{doc} does not list {} (layer {})", c.name, c.layer)),
            }
        }
    }
    Ok(violations)
}

/// Why a normal dependency of a crate on layer `from` on a workspace crate on layer `to` is not allowed.
fn layering_violation(from: Layer, to: Layer) -> Option<&'static str> {
    match (from, to) {
        (Layer::Dev, Layer::Lib(_) | Layer::Dev) => None,
        (_, Layer::Dev) => Some("dev crates are only dev-dependencies"),
        (_, Layer::Bin) => Some("nothing depends on a binary crate"),
        (Layer::Lib(a), Layer::Lib(b)) if b == a => Some("crates on one layer never depend on each other"),
        (Layer::Lib(a), Layer::Lib(b)) if b > a => Some("dependencies point down the layers"),
        (Layer::Lib(_) | Layer::Bin, Layer::Lib(_)) => None,
    }
}

/// `crate -> layer` as the fenced crate map under `## Crate map` in ARCHITECTURE.md lists them: a line starting
/// `layer N`, `bins` or `dev` opens a group; the first word of that line's rest and of each following indented
/// line names a crate (on a `bins` line, the first word of each comma-separated entry).
fn architecture_layers(text: &str) -> BTreeMap<String, Layer> {
    let mut out = BTreeMap::new();
    let Some(start) = text.find("## Crate map") else {
        return out;
    };
    let mut lines = text[start..].lines().skip_while(|l| !l.starts_with("```")).skip(1);
    let mut group = None;
    for line in lines.by_ref() {
        if line.starts_with("```") {
            break;
        }
        let mut words = line.split_whitespace();
        let rest: &str = match words.next() {
            Some("layer") => {
                group = words.next().and_then(|n| n.parse().ok()).map(Layer::Lib);
                line.trim_start()
                    .trim_start_matches("layer")
                    .trim_start()
                    .trim_start_matches(|c: char| c.is_ascii_digit())
            }
            Some("bins") => {
                group = Some(Layer::Bin);
                line.trim_start().trim_start_matches("bins")
            }
            Some("dev") => {
                group = Some(Layer::Dev);
                line.trim_start().trim_start_matches("dev")
            }
            Some(_) if line.starts_with(' ') => line,
            _ => continue,
        };
        let Some(layer) = group else { continue };
        let entries: Vec<&str> = if layer == Layer::Bin {
            rest.split(',').collect()
        } else {
            vec![rest]
        };
        for e in entries {
            if let Some(name) = e.split_whitespace().next().filter(|w| is_crate_name(w)) {
                out.insert(name.to_owned(), layer);
            }
        }
    }
    out
}

/// `crate -> layer` from the crates/README.md table rows `` | `name` | layer | what | ``.
fn readme_layers(text: &str) -> BTreeMap<String, Layer> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 {
            continue;
        }
        let name = cells[1].trim_matches('`');
        let layer = match cells[2] {
            "bin" => Layer::Bin,
            "dev" => Layer::Dev,
            n => match n.parse() {
                Ok(n) => Layer::Lib(n),
                Err(_) => continue,
            },
        };
        if is_crate_name(name) {
            out.insert(name.to_owned(), layer);
        }
    }
    out
}

fn is_crate_name(w: &str) -> bool {
    !w.is_empty()
        && w.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && w.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `(dependency, kind)` pairs: kind `None` normal, `Some("dev")`, `Some("build")`.
    type Deps<'a> = &'a [(&'a str, Option<&'a str>)];

    fn package(name: &str, deps: Deps<'_>, root: &str) -> Value {
        json!({
            "name": name,
            "dependencies": deps.iter().map(|(n, k)| json!({"name": n, "kind": k})).collect::<Vec<_>>(),
            "targets": [{"kind": [if root.ends_with("main.rs") { "bin" } else { "lib" }], "src_path": root},
                        {"kind": ["test"], "src_path": format!("/ws/{name}/tests/it/main.rs")}],
        })
    }

    /// A small workspace shaped like ours: core (0), wiki and index (1), memory (3), http (5), a binary, a kit.
    fn workspace(extra: &[(&str, Deps<'_>)]) -> Value {
        let mut packages = vec![
            package(
                "core",
                &[("thiserror", None), ("testkit", Some("dev"))],
                "/ws/core/src/lib.rs",
            ),
            package("wiki", &[("core", None)], "/ws/wiki/src/lib.rs"),
            package(
                "index",
                &[("core", None), ("anyhow", Some("dev"))],
                "/ws/index/src/lib.rs",
            ),
            package("memory", &[("wiki", None), ("index", None)], "/ws/memory/src/lib.rs"),
            package("http", &[("memory", None), ("tokio", None)], "/ws/http/src/lib.rs"),
            package(
                "cli",
                &[("http", None), ("anyhow", None), ("clap", None)],
                "/ws/cli/src/main.rs",
            ),
            package(
                "testkit",
                &[("memory", None), ("anyhow", None)],
                "/ws/testkit/src/lib.rs",
            ),
        ];
        for (name, deps) in extra {
            if let Some(p) = packages.iter_mut().find(|p| p["name"] == *name) {
                let mut list = p["dependencies"].as_array().cloned().unwrap_or_default();
                list.extend(deps.iter().map(|(n, k)| json!({"name": n, "kind": k})));
                p["dependencies"] = Value::Array(list);
            }
        }
        json!({
            "packages": packages,
            "metadata": {
                "layers": {"core": 0, "wiki": 1, "index": 1, "memory": 3, "http": 5, "cli": "bin", "testkit": "dev"},
                "tidy": {"edge-only": ["tokio", "axum", "clap"], "edge-layer": 4, "bin-only": ["anyhow"],
                         "store-private": ["index", "wiki"], "store": "memory"},
            },
        })
    }

    const ARCH: &str = "# A\n\n## Crate map\n\ntext\n\n```\nlayer 0  core   types, a wiki word\nlayer 1  wiki   \
        files\n         index  SQLite, see core\nlayer 3  memory the service\nlayer 5  http   router, a memory \
        client\nbins     cli (cao)\ndev      testkit helpers\n```\n";
    const README: &str = "| crate | layer | what |\n|---|---|---|\n| `core` | 0 | x |\n| `wiki` | 1 | x |\n\
        | `index` | 1 | x |\n| `memory` | 3 | x |\n| `http` | 5 | x |\n| `cli` | bin | x |\n| `testkit` | dev | x |\n";

    fn docs() -> Docs<'static> {
        Docs {
            architecture: ARCH,
            crates_readme: README,
        }
    }

    fn documented(_: &Path) -> io::Result<String> {
        Ok("//! A crate.\n\nfn f() {}\n".to_owned())
    }

    fn violations(meta: &Value) -> Vec<String> {
        check(meta, &docs(), &documented).expect("well-formed metadata")
    }

    #[test]
    fn a_well_layered_workspace_passes() {
        assert_eq!(violations(&workspace(&[])), Vec::<String>::new());
    }

    #[test]
    fn an_upward_dependency_fails() {
        let v = violations(&workspace(&[("wiki", &[("memory", None)])]));
        assert_eq!(
            v,
            ["wiki (layer 1) depends on memory (layer 3): dependencies point down the layers"]
        );
    }

    #[test]
    fn only_the_store_depends_on_the_index_and_the_wiki() {
        let v = violations(&workspace(&[("http", &[("index", None)]), ("cli", &[("wiki", None)])]));
        assert_eq!(
            v,
            [
                "http (layer 5) depends on index: only memory may (every other crate reaches the index and the wiki \
                 files through the store interface)",
                "cli (layer bin) depends on wiki: only memory may (every other crate reaches the index and the wiki \
                 files through the store interface)",
            ]
        );
        // Dev crates and dev-dependencies may reach below the interface (tests seed and inspect rows).
        assert!(
            violations(&workspace(&[
                ("http", &[("index", Some("dev"))]),
                ("testkit", &[("index", None)])
            ]))
            .is_empty()
        );
    }

    #[test]
    fn a_dependency_within_one_layer_fails() {
        let v = violations(&workspace(&[("index", &[("wiki", Some("build"))])]));
        assert_eq!(
            v,
            [
                "index (layer 1) build-depends on wiki: only memory may (every other crate reaches the index and the \
                 wiki files through the store interface)",
                "index (layer 1) build-depends on wiki (layer 1): crates on one layer never depend on each other"
            ]
        );
    }

    #[test]
    fn dev_crates_only_as_dev_dependencies_and_nothing_on_binaries() {
        let v = violations(&workspace(&[("memory", &[("testkit", None), ("cli", None)])]));
        assert_eq!(
            v,
            [
                "memory (layer 3) depends on testkit (layer dev): dev crates are only dev-dependencies",
                "memory (layer 3) depends on cli (layer bin): nothing depends on a binary crate",
            ]
        );
        // As dev-dependencies both are fine.
        assert!(
            violations(&workspace(&[(
                "memory",
                &[("testkit", Some("dev")), ("cli", Some("dev"))]
            )]))
            .is_empty()
        );
    }

    #[test]
    fn anyhow_and_edge_crates_stay_out_of_low_libraries() {
        let v = violations(&workspace(&[("wiki", &[("anyhow", None), ("tokio", None)])]));
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(
            v[0].starts_with("wiki (layer 1) depends on anyhow: only binaries"),
            "{v:?}"
        );
        assert!(
            v[1].starts_with("wiki (layer 1) depends on tokio: only edge crates"),
            "{v:?}"
        );
        // Not even in an edge library: anyhow is for binaries and dev crates.
        let v = violations(&workspace(&[("http", &[("anyhow", None)])]));
        assert_eq!(v.len(), 1, "{v:?}");
    }

    #[test]
    fn every_crate_needs_a_layer_and_a_crate_doc() {
        let mut meta = workspace(&[]);
        meta["packages"]
            .as_array_mut()
            .expect("packages")
            .push(package("stray", &[], "/ws/stray/src/lib.rs"));
        let no_doc = |p: &Path| {
            Ok(if p.starts_with("/ws/wiki") {
                "// not a crate doc\n".to_owned()
            } else {
                "\n//! doc\n".to_owned()
            })
        };
        let v = check(&meta, &docs(), &no_doc).expect("checks");
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].starts_with("stray has no layer"), "{v:?}");
        assert_eq!(
            v[1],
            "wiki: /ws/wiki/src/lib.rs does not open with a `//!` block (purpose and invariants of the crate)"
        );
    }

    #[test]
    fn the_documents_must_agree_with_the_table() {
        let arch = ARCH.replace("layer 3  memory", "layer 2  memory");
        let readme = README.replace("| `http` | 5 | x |\n", "");
        let v = check(
            &workspace(&[]),
            &Docs {
                architecture: &arch,
                crates_readme: &readme,
            },
            &documented,
        )
        .expect("checks");
        assert_eq!(
            v,
            [
                "ARCHITECTURE.md crate map puts memory on layer 2; Cargo.toml [workspace.metadata.layers] says 3",
                "crates/README.md does not list http (layer 5)",
            ]
        );
    }

    #[test]
    fn a_missing_layer_table_is_an_error_not_a_pass() {
        let mut meta = workspace(&[]);
        meta["metadata"] = json!({});
        assert!(check(&meta, &docs(), &documented).is_err());
    }

    #[test]
    fn the_real_crate_maps_parse() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let arch = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
        let readme = std::fs::read_to_string(root.join("crates/README.md")).expect("crates/README.md");
        let a = architecture_layers(&arch);
        let r = readme_layers(&readme);
        assert_eq!(a.get("cao-core"), Some(&Layer::Lib(0)));
        assert_eq!(a.get("cao-server"), Some(&Layer::Bin));
        assert_eq!(a.get("xtask"), Some(&Layer::Dev));
        assert_eq!(r.get("cao-core"), Some(&Layer::Lib(0)));
        assert_eq!(r.get("cao-testkit"), Some(&Layer::Dev));
    }
}
