//! Surgical edits of a TOML config file's text (Codex's `config.toml`): one `[a.b]` table is appended or removed by
//! splicing bytes, so comments, key order, line endings and every other table stay byte for byte as they were.
//! `toml_edit` parses (the judge of validity, with the error's line and column) and gives the byte span of every
//! header, key and value; it is not used to re-render, because it writes every line break as `\n`.
//!
//! Invariants:
//! - A table is appended at the end of the file, after one blank line (none in an empty file); a file without a
//!   final line break keeps that shape (the table then ends without one). Removing a table deletes its header, its
//!   key/value lines and exactly the separator appending adds, so `set` then `remove` gives back the same bytes.
//! - A table that exists with other values is replaced: removed where it is, appended at the end. Its sub-tables
//!   (`[a.b.c]`, the user's additions) stay on replacement and go with it on removal.
//! - Only a table with its own `[a.b]` header is edited; one written inline (`b = { ... }`) or with dotted keys is
//!   refused, as is a file that is not valid TOML.

use super::json_text::Node;
use serde_json::Value;
use std::ops::Range;
use toml_edit::{Document, Item, Table};

/// A parsed file: the document with spans, or why it is not TOML.
fn parse(text: &str) -> Result<Document<&str>, String> {
    Document::parse(text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        let line = text[..at].matches('\n').count() + 1;
        let column = text[..at].rfind('\n').map_or(at, |i| at - i - 1) + 1;
        format!(
            "is not valid TOML (line {line}, column {column}: {})",
            e.message().trim()
        )
    })
}

/// Check that `text` is TOML.
///
/// Errors: the parse error with its line and column.
pub(crate) fn validate(text: &str) -> Result<(), String> {
    parse(text).map(|_| ())
}

/// An item as a JSON value (to compare meanings).
fn item_json(item: &Item) -> Value {
    match item {
        Item::None => Value::Null,
        Item::Value(v) => value_json(v),
        Item::Table(t) => table_json(t, true),
        Item::ArrayOfTables(a) => Value::Array(a.iter().map(|t| table_json(t, true)).collect()),
    }
}

fn table_json(t: &Table, with_sub_tables: bool) -> Value {
    Value::Object(
        t.iter()
            .filter(|(_, v)| with_sub_tables || !v.is_table())
            .map(|(k, v)| (k.to_owned(), item_json(v)))
            .collect(),
    )
}

fn value_json(v: &toml_edit::Value) -> Value {
    use toml_edit::Value as V;
    match v {
        V::String(s) => Value::String(s.value().clone()),
        V::Integer(i) => Value::from(*i.value()),
        V::Float(f) => serde_json::Number::from_f64(*f.value()).map_or(Value::Null, Value::Number),
        V::Boolean(b) => Value::Bool(*b.value()),
        V::Datetime(d) => Value::String(d.value().to_string()),
        V::Array(a) => Value::Array(a.iter().map(value_json).collect()),
        V::InlineTable(t) => Value::Object(t.iter().map(|(k, v)| (k.to_owned(), value_json(v))).collect()),
    }
}

/// The whole document as a JSON value.
pub(crate) fn document_json(text: &str) -> Result<Value, String> {
    Ok(table_json(parse(text)?.as_table(), true))
}

/// The table at `path` (`None` when absent) and a description of a form this module does not edit.
fn table_at<'d>(doc: &'d Document<&str>, path: &[&str]) -> Result<Option<&'d Table>, String> {
    let mut cur = doc.as_table();
    for (d, key) in path.iter().enumerate() {
        let shown = path[..=d].join(".");
        match cur.get(key) {
            None => return Ok(None),
            Some(Item::Table(t)) => cur = t,
            Some(Item::Value(toml_edit::Value::InlineTable(_))) => {
                return Err(format!(
                    "`{shown}` is an inline table; setup edits only a `[{}]` table",
                    path.join(".")
                ));
            }
            Some(_) => return Err(format!("`{shown}` is not a table")),
        }
    }
    if cur.is_dotted() || (cur.is_implicit() && !cur.iter().all(|(_, v)| v.is_table())) {
        return Err(format!(
            "`{}` is written with dotted keys; setup edits only a `[{}]` table",
            path.join("."),
            path.join(".")
        ));
    }
    Ok(Some(cur))
}

/// The key/values of the table at `path`, without its sub-tables; `None` when there is no such table (or only its
/// sub-tables are written).
///
/// Errors: not TOML, or a form setup does not edit.
pub(crate) fn table_values(text: &str, path: &[&str]) -> Result<Option<Value>, String> {
    let doc = parse(text)?;
    Ok(table_at(&doc, path)?
        .filter(|t| !t.is_implicit())
        .map(|t| table_json(t, false)))
}

/// `node` as a TOML value (strings, arrays, inline tables).
fn toml_value(node: &Node) -> toml_edit::Value {
    match node {
        Node::Str(s) => toml_edit::Value::from(s.as_str()),
        Node::Arr(items) => toml_edit::Value::Array(items.iter().map(toml_value).collect()),
        Node::Obj(members) => {
            let mut t = toml_edit::InlineTable::new();
            for (k, v) in members {
                t.insert(k, toml_value(v));
            }
            toml_edit::Value::InlineTable(t)
        }
    }
}

fn key(k: &str) -> String {
    toml_edit::Key::new(k).display_repr().into_owned()
}

/// The file's line break: `\r\n` when its first line break is one.
fn newline(text: &str) -> &'static str {
    match text.find('\n') {
        Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// `text` with the table `path` = `members` appended (see the module invariants).
fn append(text: &str, path: &[&str], members: &[(String, Node)]) -> String {
    let nl = newline(text);
    let header = path.iter().map(|k| key(k)).collect::<Vec<_>>().join(".");
    let mut lines = vec![format!("[{header}]")];
    for (k, v) in members {
        lines.push(format!("{} = {}", key(k), toml_value(v).decorated("", "")));
    }
    let table = lines.join(nl);
    if text.is_empty() {
        format!("{table}{nl}")
    } else if text.ends_with('\n') {
        format!("{text}{nl}{table}{nl}")
    } else {
        format!("{text}{nl}{nl}{table}")
    }
}

/// The start of the line holding `pos`.
fn line_start(text: &str, pos: usize) -> usize {
    text[..pos].rfind('\n').map_or(0, |i| i + 1)
}

/// The end of the line holding `pos`, after its line break.
fn line_end(text: &str, pos: usize) -> usize {
    text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1)
}

/// The byte ranges of the explicit table `path` and (with `sub_tables`) of its explicit sub-tables: each from its
/// header line to the end of its last key/value line, widened by the separator [`append`] puts before a table.
fn regions(text: &str, doc: &Document<&str>, path: &[&str], sub_tables: bool) -> Vec<Range<usize>> {
    // Every header's line start, to know where a table's lines stop.
    let mut headers = Vec::new();
    collect_headers(doc.as_table(), &mut headers);
    headers.sort_unstable();
    let mut out = Vec::new();
    let Ok(Some(table)) = table_at(doc, path) else {
        return out;
    };
    let mut tables = vec![table];
    if sub_tables {
        collect_tables(table, &mut tables);
    }
    for t in tables {
        let Some(span) = t.span().filter(|_| !t.is_implicit()) else {
            continue;
        };
        let start = line_start(text, span.start);
        let next = headers.iter().copied().find(|&h| h > start).unwrap_or(text.len());
        // The table's lines end with its last key/value (comments before the next header are the next table's).
        let mut end = line_end(text, span.end);
        for (k, v) in t.iter() {
            if v.is_table() {
                continue;
            }
            if let Some(s) = v.span().or_else(|| t.key(k).and_then(toml_edit::Key::span)) {
                end = end.max(line_end(text, s.end));
            }
        }
        let end = end.min(next.max(line_end(text, span.end)));
        out.push(widen(text, start..end));
    }
    out.sort_by_key(|r| r.start);
    out
}

/// `r` widened by the separator around it: the blank line before it, or both line breaks when the table ends the
/// file without a final line break (the inverse of [`append`]); at the top of the file, where nothing but blank
/// lines precedes it, those and the blank line after it.
fn widen(text: &str, r: Range<usize>) -> Range<usize> {
    let nl = newline(text);
    let before = &text[..r.start];
    let at_end_unterminated = r.end == text.len() && !text.ends_with('\n');
    let double = format!("{nl}{nl}");
    if at_end_unterminated && before.ends_with(&double) {
        (r.start - double.len())..r.end
    } else if before.ends_with(&double) || (at_end_unterminated && before.ends_with(nl)) {
        (r.start - nl.len())..r.end
    } else if before.chars().all(|c| c == '\n' || c == '\r') {
        let end = if text[r.end..].starts_with(nl) {
            r.end + nl.len()
        } else {
            r.end
        };
        0..end
    } else {
        r
    }
}

fn collect_headers(t: &Table, out: &mut Vec<usize>) {
    for (_, v) in t.iter() {
        match v {
            Item::Table(st) => {
                if let Some(s) = st.span().filter(|_| !st.is_implicit() && !st.is_dotted()) {
                    out.push(s.start);
                }
                collect_headers(st, out);
            }
            Item::ArrayOfTables(a) => {
                for st in a.iter() {
                    if let Some(s) = st.span() {
                        out.push(s.start);
                    }
                    collect_headers(st, out);
                }
            }
            _ => {}
        }
    }
}

fn collect_tables<'d>(t: &'d Table, out: &mut Vec<&'d Table>) {
    for (_, v) in t.iter() {
        if let Item::Table(st) = v {
            out.push(st);
            collect_tables(st, out);
        }
    }
}

/// `text` without `regions` (sorted, not overlapping).
fn cut(text: &str, regions: &[Range<usize>]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for r in regions {
        if r.start < at {
            continue;
        }
        out.push_str(&text[at..r.start]);
        at = r.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Make the table at `path` hold exactly `members` (its sub-tables kept). The new text (`text` `None`: no file), or
/// `None` when it already does.
///
/// Errors: not TOML, a form setup does not edit, or an edit that would not give the intended document.
pub(crate) fn set(text: Option<&str>, path: &[&str], members: &[(String, Node)]) -> Result<Option<String>, String> {
    let text = text.unwrap_or("");
    let want = Node::Obj(members.to_vec()).to_value();
    let doc = parse(text)?;
    let before = table_at(&doc, path)?
        .filter(|t| !t.is_implicit())
        .map(|t| table_json(t, false));
    if before.as_ref() == Some(&want) {
        return Ok(None);
    }
    let kept = cut(text, &regions(text, &doc, path, false));
    let out = append(&kept, path, members);
    if table_values(&out, path)?.as_ref() != Some(&want) {
        return Err(format!(
            "adding `[{}]` would not give the intended table",
            path.join(".")
        ));
    }
    Ok(Some(out))
}

/// Remove the table at `path` and its sub-tables. `None` when there is none.
///
/// Errors: not TOML, or a form setup does not edit.
pub(crate) fn remove(text: &str, path: &[&str]) -> Result<Option<String>, String> {
    let doc = parse(text)?;
    if table_at(&doc, path)?.is_none() {
        return Ok(None);
    }
    let out = cut(text, &regions(text, &doc, path, true));
    validate(&out)?;
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members() -> Vec<(String, Node)> {
        vec![
            ("command".to_owned(), Node::str("cao-mcp-server")),
            ("env_vars".to_owned(), Node::Arr(vec![Node::str("CAO_HOME")])),
            (
                "env".to_owned(),
                Node::obj([("CAO_MEMORY_INJECTION_MODE", Node::str("view"))]),
            ),
        ]
    }

    const PATH: [&str; 2] = ["mcp_servers", "cao-memory"];

    #[test]
    fn a_table_added_then_removed_leaves_the_same_bytes() {
        for original in [
            "",
            "\n",
            "model = \"o3\"",
            "model = \"o3\"\n",
            "# top\r\nmodel = \"o3\" # why\r\n\r\n[mcp_servers.other]\r\ncommand = \"x\"\r\n",
            "[mcp_servers]\n\n[profiles.fast]\nmodel = \"o4\"\n# trailing comment\n",
            "z = 1\na = 2\n[mcp_servers.b]\nurl = \"u\"\n\n\n",
        ] {
            let added = set(Some(original), &PATH, &members()).expect("set").expect("changed");
            assert_eq!(
                table_values(&added, &PATH).expect("read"),
                Some(Node::Obj(members()).to_value()),
                "{added}"
            );
            assert_eq!(set(Some(&added), &PATH, &members()).expect("set"), None, "idempotent");
            let removed = remove(&added, &PATH).expect("remove").expect("was there");
            assert_eq!(removed, original, "{added:?}");
        }
    }

    #[test]
    fn appended_text_uses_the_file_line_breaks() {
        let out = set(Some("a = 1\r\n"), &PATH, &members())
            .expect("set")
            .expect("changed");
        assert_eq!(
            out,
            "a = 1\r\n\r\n[mcp_servers.cao-memory]\r\ncommand = \"cao-mcp-server\"\r\nenv_vars = [\"CAO_HOME\"]\r\n\
             env = { CAO_MEMORY_INJECTION_MODE = \"view\" }\r\n"
        );
    }

    #[test]
    fn a_changed_table_is_replaced_and_its_sub_tables_kept_until_removal() {
        let text = "[mcp_servers.cao-memory]\ncommand = \"old\" # mine\n\n\
                    [mcp_servers.cao-memory.tools.memory_forget]\napproval_mode = \"approve\"\n\n[other]\nx = 1\n";
        let out = set(Some(text), &PATH, &members()).expect("set").expect("changed");
        let doc = document_json(&out).expect("toml");
        assert_eq!(doc["mcp_servers"]["cao-memory"]["command"], "cao-mcp-server");
        assert_eq!(
            doc["mcp_servers"]["cao-memory"]["tools"]["memory_forget"]["approval_mode"],
            "approve"
        );
        assert_eq!(doc["other"]["x"], 1);
        assert!(!out.contains("old"), "{out}");
        let removed = remove(&out, &PATH).expect("remove").expect("there");
        assert_eq!(removed, "[other]\nx = 1\n");
    }

    #[test]
    fn refusals_name_the_problem() {
        let e = set(Some("a = \n"), &PATH, &members()).expect_err("bad");
        assert!(e.starts_with("is not valid TOML (line 1, column "), "{e}");
        let e = set(
            Some("mcp_servers = { cao-memory = { command = \"x\" } }\n"),
            &PATH,
            &members(),
        )
        .expect_err("inline");
        assert!(e.contains("inline table"), "{e}");
        let e = set(Some("[mcp_servers]\ncao-memory.command = \"x\"\n"), &PATH, &members()).expect_err("dotted");
        assert!(e.contains("dotted keys"), "{e}");
        let e = set(Some("mcp_servers = 3\n"), &PATH, &members()).expect_err("value");
        assert!(e.contains("not a table"), "{e}");
        assert_eq!(remove("a = 1\n", &PATH).expect("nothing"), None);
    }
}
